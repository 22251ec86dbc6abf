"""The directory's entries (the ``rooms``, ``seats`` and ``tables`` KV buckets) and the
table-to-table adoption messages: written by the tables (services/table/directory.py,
core.py, adoption.py, lease.py), read by the tables (dirview.py, adoption.py) and the
lobbies (services/lobby/directory.py, rooms.py, table_cache.py). docs/services.md,
"Directory", describes what each entry is for; its fields are these types' fields."""

from __future__ import annotations

from typing import Any

from paiju.contracts.typed import Contract


class RoomEntry(Contract, frozen=True, kw_only=True):
    """``rooms/<room id>``: a room, the table that owns it and what the lobbies list and
    route by. Written by the owning table at each change of the room (compare-and-set on
    its revision: an adoption in between wins), deleted when the room closes."""

    room_id: int
    owner: str                   # the owning table's instance
    address: str                 # where that table answers (gRPC)
    game: str                    # the game's registry name
    status: int                  # common.RoomStatus
    free_seats: int
    has_password: bool
    room: dict[str, Any]         # the room's RoomInfo (proto JSON, proto field names)

    def moved_to(self, owner: str, address: str) -> RoomEntry:
        """The same entry naming another owning table (an adoption, a drain's hand-over)."""
        return self.replace(owner=owner, address=address)


class SeatEntry(Contract, frozen=True, kw_only=True):
    """``seats/<user id>``: where a user sits. Written by the room's table when he takes a
    seat, deleted (only while it still names that room) when he leaves it."""

    room_id: int
    owner: str
    address: str
    seat: int


class TableEntry(Contract, frozen=True, kw_only=True):
    """``tables/<instance>``: a live table, rewritten by its lease heartbeat (the bucket's
    TTL is the lease: an entry not rewritten in time is gone)."""

    instance: str
    address: str
    rooms: int                   # the rooms it runs
    players: int                 # the players seated in them
    started_at: float            # wall-clock seconds: a drain prefers newer tables
    draining: bool               # stopping: takes no room


class AdoptRequest(Contract, frozen=True, kw_only=True):
    """``table.<instance>.adopt`` (core NATS request): a draining table handed the room to
    this one (its ``rooms`` entry names it now): rebuild it now."""

    room_id: int


class AdoptAnswer(Contract, frozen=True, kw_only=True):
    """The answer to :class:`AdoptRequest`: whether the room runs here now."""

    ok: bool
