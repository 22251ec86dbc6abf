"""The directory as this table sees it: the ``rooms`` and ``tables`` buckets, kept by KV
watches (no listing per scan), re-read whole now and then in case a watch missed
something."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from nats.js.kv import KV_DEL, KV_PURGE

from paiju.contracts.directory import RoomEntry, TableEntry
from paiju.contracts.typed import BadContract
from services.common import bus

log = logging.getLogger("paiju.table.directory")

RESYNC_TIMEOUT_SECONDS = 20.0   # a re-read of the rooms bucket not done by then is given up


class DirectoryView:
    def __init__(self, kv_rooms: Any, kv_tables: Any, lease_ttl: float) -> None:
        self.kv_rooms = kv_rooms
        self.kv_tables = kv_tables
        self.lease_ttl = lease_ttl
        self.rooms: dict[int, tuple[RoomEntry, int]] = {}     # id -> (entry, revision)
        self.tables: dict[str, tuple[TableEntry, float]] = {}  # instance -> (entry, seen)
        self._watchers: list[asyncio.Task[None]] = []

    def start(self) -> None:
        self._watchers = [asyncio.create_task(self._watch(self.kv_rooms, self.on_room_entry)),
                          asyncio.create_task(self._watch(self.kv_tables, self.on_table_entry))]

    @property
    def tasks(self) -> list[asyncio.Task[None]]:
        return self._watchers

    def owner(self, room_id: int) -> str | None:
        entry = self.rooms.get(room_id)
        return None if entry is None else entry[0].owner

    def live_tables(self) -> list[TableEntry]:
        """Tables heard from within the lease (this one included)."""
        now = time.monotonic()
        return [entry for entry, seen in self.tables.values() if now - seen <= self.lease_ttl]

    async def _watch(self, kv: Any, apply: Callable[[Any], None]) -> None:
        """Follow a bucket for ever; a watch that ends or fails is stopped and opened again."""
        while True:
            try:
                async with bus.KeyWatch.opened(kv) as watch:
                    async for entry in watch:
                        if entry is not None:
                            apply(entry)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("directory watch failed, reopening", extra={"error": repr(exc)})
            await asyncio.sleep(0.5)

    def on_room_entry(self, entry: Any) -> None:
        fold_room(self.rooms, entry)

    def on_table_entry(self, entry: Any) -> None:
        if entry.operation in (KV_DEL, KV_PURGE) or not entry.value:
            self.tables.pop(entry.key, None)
            return
        try:
            self.tables[entry.key] = (TableEntry.decode(entry.value), time.monotonic())
        except BadContract as exc:
            log.warning("unreadable table entry", extra={"key": entry.key, "error": str(exc)})

    async def resync(self) -> None:
        """Read the whole ``rooms`` bucket again: every key's last value, in one watch (a
        value written meanwhile may come twice: the last counts). A failure, or a re-read
        longer than RESYNC_TIMEOUT_SECONDS, raises and leaves the view as it was."""
        rooms: dict[int, tuple[RoomEntry, int]] = {}
        async with asyncio.timeout(RESYNC_TIMEOUT_SECONDS), \
                bus.KeyWatch.opened(self.kv_rooms) as watch:
            async for entry in watch:
                if entry is None:   # the last of the keys' values
                    break
                fold_room(rooms, entry)
        self.rooms = rooms


def fold_room(rooms: dict[int, tuple[RoomEntry, int]], entry: Any) -> None:
    """One entry of a ``rooms`` watch into ``rooms``: its value and revision, or none (the
    key deleted, or not readable as a room)."""
    if not entry.key.isdigit():
        log.warning("unreadable room entry", extra={"key": entry.key, "error": "not a room id"})
        return
    room_id = int(entry.key)
    rooms.pop(room_id, None)
    if entry.operation in (KV_DEL, KV_PURGE) or not entry.value:
        return
    try:
        rooms[room_id] = (RoomEntry.decode(entry.value), int(entry.revision))
    except BadContract as exc:
        log.warning("unreadable room entry", extra={"room": room_id, "error": str(exc)})
