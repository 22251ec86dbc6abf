"""The directory writer: this table's entries in the ``rooms`` and ``seats`` KV buckets.

A write is made right after the room's log append; one that fails waits (the latest value
per key) for the heartbeat's retry, one write per key at a time so an older value never
lands after a newer one (an attempt cut off by its bound may still be on its way: the one
connection keeps it ahead of the next). Every write is checked against the room's entry in
``rooms`` (compare-and-set): a late write never takes a room back from the table that adopted it,
never brings back the entry of a closed room, and never clears the seat of a user who sits
in another room now.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import nats.js.errors
from nats.js.errors import KeyNotFoundError

from paiju.contracts.directory import RoomEntry, SeatEntry
from paiju.contracts.typed import BadContract
from services.common import bus
from services.table import metrics as m
from services.table.roomlog import APPEND_TRY_SECONDS

log = logging.getLogger("paiju.table.directory")

# One attempt of a write, bounded as an append's try: the room waits for it, and an answer
# lost to a connection moving (a lame-duck server) would hold the room for the client's 5 s.
# What did not land (or may have) waits for the heartbeat's retry, which reads the entry
# first.
WRITE_TRY_SECONDS = APPEND_TRY_SECONDS


class KvWrite:
    """A directory write for one key, made on behalf of one room: ``put`` (value), ``delete``,
    or ``clear``: delete the entry only while it still names that room."""

    __slots__ = ("kind", "value", "room_id", "fresh")

    def __init__(self, kind: str, room_id: int, value: bytes = b"") -> None:
        self.kind, self.room_id, self.value = kind, room_id, value
        # made right after this table's fenced log append for the room: until a failed
        # attempt, this table is known to own the room (no need to read its entry first)
        self.fresh = True


class DirectoryWriter:
    def __init__(self, kv_rooms: Any, kv_seats: Any, instance: str, address: str) -> None:
        self.kv_rooms = kv_rooms
        self.kv_seats = kv_seats
        self.instance = instance
        self.address = address
        # writes not done yet, the latest per (bucket, key): retried by the heartbeat
        self.pending: dict[tuple[str, str], KvWrite] = {}
        self.room_revs: dict[int, int] = {}  # our last known revision of each room's entry
        self._busy: set[tuple[str, str]] = set()

    # -- what a room writes ------------------------------------------------------------
    async def put_room(self, entry: RoomEntry) -> None:
        await self.write(bus.ROOMS_BUCKET, str(entry.room_id),
                         KvWrite("put", entry.room_id, entry.encode()))

    async def put_seat(self, room_id: int, user_id: int, seat: int | None) -> None:
        if seat is None:
            await self.write(bus.SEATS_BUCKET, str(user_id), KvWrite("clear", room_id))
            return
        entry = SeatEntry(room_id=room_id, owner=self.instance, address=self.address, seat=seat)
        await self.write(bus.SEATS_BUCKET, str(user_id), KvWrite("put", room_id, entry.encode()))

    async def clear_stale_seat(self, room_id: int, user_id: int) -> None:
        """A repair, not a change of the room: clear the user's seat entry while it names
        ``room_id``, unless a write of that entry is waiting or under way (it is newer than
        what this repair saw, and must not be replaced by it)."""
        key = (bus.SEATS_BUCKET, str(user_id))
        if key in self.pending or key in self._busy:
            return
        await self.write(bus.SEATS_BUCKET, str(user_id), KvWrite("clear", room_id))

    async def delete_room(self, room_id: int) -> None:
        """A closed room leaves the directory (its last record is ours)."""
        await self.write(bus.ROOMS_BUCKET, str(room_id), KvWrite("delete", room_id))

    def holds(self, room_id: int) -> bool:
        """The room's entry in ``rooms`` still waits to be written."""
        return (bus.ROOMS_BUCKET, str(room_id)) in self.pending

    def forget(self, room_id: int) -> None:
        """The room is not ours any more: its pending writes are not ours to make."""
        for item, op in list(self.pending.items()):
            if op.room_id == room_id:
                del self.pending[item]
        self.room_revs.pop(room_id, None)

    # -- the outbox --------------------------------------------------------------------
    async def write(self, bucket: str, key: str, op: KvWrite) -> None:
        """Write an entry now if possible; else it waits for the heartbeat. Never raises:
        the room's change is already in its log."""
        self.pending[(bucket, key)] = op
        await self._flush((bucket, key))

    async def flush(self) -> None:
        for item in list(self.pending):
            await self._flush(item)

    async def _flush(self, item: tuple[str, str]) -> None:
        if item in self._busy:
            return  # the write in flight picks the newer value up when it is done
        self._busy.add(item)
        try:
            while (op := self.pending.get(item)) is not None:
                try:
                    async with asyncio.timeout(WRITE_TRY_SECONDS):
                        await self._write(item[0], item[1], op)
                except Exception as exc:
                    op.fresh = False  # a retry checks the room's owner first
                    log.warning("directory write failed, will retry",
                                extra={"bucket": item[0], "key": item[1], "error": repr(exc)})
                    return
                if self.pending.get(item) is op:
                    del self.pending[item]
        finally:
            self._busy.discard(item)
            m.PENDING.labels("directory").set(len(self.pending))

    async def _write(self, bucket: str, key: str, op: KvWrite) -> None:
        if op.kind == "delete":
            self.room_revs.pop(op.room_id, None)
            await self.kv_rooms.delete(key)
            return
        if op.fresh and op.kind == "put":  # we own the room: no read on the common path
            if bucket == bus.SEATS_BUCKET:
                await self.kv_seats.put(key, op.value)
                return
            rev = self.room_revs.get(op.room_id)
            if rev is not None:
                try:
                    self.room_revs[op.room_id] = await self.kv_rooms.update(key, op.value, last=rev)
                    return
                except nats.js.errors.KeyWrongLastSequenceError:
                    pass  # written meanwhile (an adoption?): the checked path decides
        try:
            room_entry = await self.kv_rooms.get(str(op.room_id))
        except KeyNotFoundError:  # the room has closed
            room_entry = None
        owner = entry_owner(room_entry.value) if room_entry else None
        if owner not in (None, "", self.instance):
            log.info("room belongs to another table now: directory write dropped",
                     extra={"room": op.room_id, "owner": owner, "key": key})
            return
        if bucket == bus.ROOMS_BUCKET:
            if room_entry is not None:  # compare-and-set: an adoption in between wins
                self.room_revs[op.room_id] = await self.kv_rooms.update(
                    key, op.value, last=room_entry.revision)
            return
        if op.kind == "put":
            if room_entry is not None:
                await self.kv_seats.put(key, op.value)
            return
        try:  # clear: only while the entry still names this room
            entry = await self.kv_seats.get(key)
        except KeyNotFoundError:
            return
        try:
            seated = SeatEntry.decode(entry.value or b"")
        except BadContract as exc:   # unreadable: it names no room, it is not ours to clear
            log.warning("unreadable seat entry left as it is",
                        extra={"key": key, "error": str(exc)})
            return
        if seated.room_id == op.room_id:
            await self.kv_seats.delete(key, last=entry.revision)


def entry_owner(value: bytes | None) -> str | None:
    """The owner a ``rooms`` value names; None for an unreadable one (logged), which any
    table's write replaces."""
    try:
        return RoomEntry.decode(value or b"").owner
    except BadContract as exc:
        log.warning("unreadable room entry", extra={"error": str(exc)})
        return None
