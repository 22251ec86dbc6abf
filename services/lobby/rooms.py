"""The room list cache, fed by the ``rooms`` KV bucket watch only (the one channel of room
metadata): it answers AskRoomList, quick start, the operator console and "who owns room N"
without a round trip, and says what each change of the bucket is to the room list
(:meth:`RoomCache.apply_kv`: created, started, updated, dismissed). Entries carry the
owner's address; their RoomInfo has only the fields of the public allow-list
(:data:`PLAYER_FIELDS`, :data:`ROOM_FIELDS`: never an IP, and a RoomInfo has no password)."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from google.protobuf import json_format

from paiju.contracts import directory as contract
from paiju.contracts.typed import BadContract
from paiju.frames import server_frame
from paiju.v1 import client_pb2, common_pb2, lobby_msgs_pb2

log = logging.getLogger("paiju.lobby.rooms")


# Statuses counted as "started" in RoomList.started_room_num.
_STARTED = frozenset({common_pb2.ROOM_PLAYING, common_pb2.ROOM_HAND_OVER,
                      common_pb2.ROOM_DISMISSING, common_pb2.ROOM_CHOOSING_ALONE})


# What a room list, a RoomChange and the operator console may show of a room and its
# players: every field but a player's IP (his own copy alone has it).
PLAYER_FIELDS = tuple(f.name for f in common_pb2.PlayerInfo.DESCRIPTOR.fields if f.name != "ip")
ROOM_FIELDS = tuple(f.name for f in common_pb2.RoomInfo.DESCRIPTOR.fields if f.name != "players")


@dataclass(frozen=True)
class RoomEntry:
    room_id: int
    address: str
    free_seats: int
    info: common_pb2.RoomInfo
    owner: str = ""           # the owning table's instance
    status: int = 0           # the entry's status (the RoomInfo's when the entry has none)
    game: str = ""            # the entry's game name as written ("" when absent)


def public_room(info: common_pb2.RoomInfo) -> common_pb2.RoomInfo:
    """A copy with the allow-listed fields only (no player's IP)."""
    out = common_pb2.RoomInfo()
    for name in ROOM_FIELDS:
        _copy_field(info, out, name)
    for player in info.players:
        public = out.players.add()
        for name in PLAYER_FIELDS:
            _copy_field(player, public, name)
    return out


def _copy_field(src: Any, dst: Any, name: str) -> None:
    value = getattr(src, name)
    if value:
        setattr(dst, name, value)


def parse_room_value(raw: bytes) -> RoomEntry | None:
    """A ``rooms`` bucket value (:class:`paiju.contracts.directory.RoomEntry`) as the cache's
    entry; None if unusable (logged)."""
    try:
        value = contract.RoomEntry.decode(raw)
    except BadContract as exc:
        log.warning("unreadable rooms entry", extra={"error": str(exc)})
        return None
    return room_entry(value)


def room_entry(value: contract.RoomEntry) -> RoomEntry | None:
    """A ``rooms`` bucket entry as the cache's entry; None if unusable (logged)."""
    try:
        info = json_format.ParseDict(value.room, common_pb2.RoomInfo(),
                                     ignore_unknown_fields=True)
    except (ValueError, TypeError, AttributeError, json_format.ParseError) as exc:
        log.warning("rooms entry with an unreadable RoomInfo",
                    extra={"room": value.room_id, "error": repr(exc)})
        return None
    if value.room_id <= 0:
        return None
    info.room_id = value.room_id
    if value.has_password:
        info.has_password = True
    if not info.game and value.game:
        info.game = _game_of(value.game)
    return RoomEntry(value.room_id, value.address, value.free_seats, public_room(info),
                     owner=value.owner or info.table_id, status=value.status,
                     game=value.game.lower())


def _game_of(game: str) -> int:
    try:
        return int(common_pb2.Game.Value(game.upper()))
    except ValueError:
        return common_pb2.GAME_UNSPECIFIED


class RoomCache:
    """Rooms by id, kept current by ``apply_kv`` (the bucket watch, the only writer)."""

    def __init__(self) -> None:
        self._rooms: dict[int, RoomEntry] = {}
        # commands on their way to a table, per room: (that table's address, a future done
        # when the room's entry names another table, see ``left``)
        self._leaving: dict[int, list[tuple[str, asyncio.Future[None]]]] = {}

    def __len__(self) -> int:
        return len(self._rooms)

    def left(self, room_id: int, address: str) -> asyncio.Future[None]:
        """A future done as soon as the watch shows the room at another table than
        ``address``: a command sent there waits no longer for that table's answer (a table
        that lost the room never applies it: its appends are fenced). Not when the entry is
        deleted: the room closed, maybe by that very command, whose answer is on its way.
        The caller lets go of it with :meth:`unwatch`."""
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._leaving.setdefault(room_id, []).append((address, fut))
        return fut

    def unwatch(self, room_id: int, fut: asyncio.Future[None]) -> None:
        waiting = self._leaving.get(room_id)
        if waiting is None:
            return
        waiting[:] = [w for w in waiting if w[1] is not fut]
        if not waiting:
            del self._leaving[room_id]

    def _moved(self, room_id: int, address: str) -> None:
        """The room's entry now names the table at ``address``."""
        for at, fut in self._leaving.get(room_id, ()):
            if at != address and not fut.done():
                fut.set_result(None)

    def get(self, room_id: int) -> RoomEntry | None:
        return self._rooms.get(room_id)

    def entries(self) -> list[RoomEntry]:
        return [e for _, e in sorted(self._rooms.items())]

    def absent(self, keys: set[str]) -> list[str]:
        """The keys of the cached rooms that are not in ``keys`` (a watch's first values)."""
        return [str(room_id) for room_id in sorted(self._rooms) if str(room_id) not in keys]

    def apply_kv(self, key: str, value: bytes | None,
                 deleted: bool) -> lobby_msgs_pb2.RoomChange | None:
        """Fold one entry of the watch in; the change it makes to the room list (None: no
        change): a new room is CREATED, one whose status became playing STARTED, one
        deleted or finished DISMISSED, any other change UPDATED."""
        reason = lobby_msgs_pb2.RoomChange
        if deleted or not value:
            old = self._rooms.pop(int(key), None) if key.isascii() and key.isdigit() else None
            return None if old is None else reason(reason=reason.DISMISSED, room=old.info)
        entry = parse_room_value(value)
        if entry is None:
            log.warning("unusable rooms entry", extra={"key": key})
            return None
        old = self._rooms.get(entry.room_id)
        if old is not None and old.address != entry.address:
            self._moved(entry.room_id, entry.address)
        if entry.status == common_pb2.ROOM_FINISHED:
            self._rooms[entry.room_id] = entry
            return None if old is not None and old.status == common_pb2.ROOM_FINISHED \
                else reason(reason=reason.DISMISSED, room=entry.info)
        self._rooms[entry.room_id] = entry
        if old is None:
            return reason(reason=reason.CREATED, room=entry.info)
        if old == entry:
            return None
        if entry.status == common_pb2.ROOM_PLAYING and old.status != common_pb2.ROOM_PLAYING:
            return reason(reason=reason.STARTED, room=entry.info)
        return reason(reason=reason.UPDATED, room=entry.info)

    def started(self) -> int:
        return sum(1 for e in self._rooms.values() if e.info.status in _STARTED)

    def room_list(self, game: int = common_pb2.GAME_UNSPECIFIED) -> lobby_msgs_pb2.RoomList:
        items = [e.info for _, e in sorted(self._rooms.items())
                 if e.info.status != common_pb2.ROOM_FINISHED
                 and (game == common_pb2.GAME_UNSPECIFIED or e.info.game == game)]
        return lobby_msgs_pb2.RoomList(items=items, started_room_num=self.started())

    def quick_pick(self, game: int, exclude: frozenset[int] = frozenset()) -> RoomEntry | None:
        """A waiting public room of ``game`` with a free seat: the fullest first, so rooms
        fill up and start; ties by lowest id."""
        candidates = [e for e in self._rooms.values()
                      if e.info.game == game and e.info.status == common_pb2.ROOM_WAITING
                      and not e.info.has_password and e.free_seats > 0 and e.address
                      and e.room_id not in exclude]
        if not candidates:
            return None
        return min(candidates, key=lambda e: (e.free_seats, e.room_id))

    def relay_frame(self, change: lobby_msgs_pb2.RoomChange) -> client_pb2.ServerFrame:
        """The RoomChange as relayed to clients: IPs cleared, this lobby's started count."""
        out = lobby_msgs_pb2.RoomChange(reason=change.reason, room=public_room(change.room),
                                        started_room_num=self.started())
        return server_frame(out)
