"""The live tables as heard from one long-lived watch of the ``tables`` bucket (followed by
``Directory.follow_tables``): each entry with the time it was written, and the rooms this
lobby placed on each table since. Never a key listing per request: a listing is a JetStream
consumer of its own that lingers on the server for minutes, and a loop of room creations
used to exhaust the server's consumer limit for everyone. An entry not rewritten within the
lease (``table.lease_ttl_seconds``) is not live, as the tables judge it."""

from __future__ import annotations

import asyncio
import logging
import random
import time

from paiju.contracts.directory import TableEntry
from paiju.contracts.typed import BadContract

log = logging.getLogger("paiju.lobby.directory")

TABLES_TTL = 10.0      # the tables bucket's TTL when the lobby creates it (table.lease_ttl)


class TableCache:
    """The ``tables`` bucket as heard from its watch: each entry with the time it was written
    (the time it arrived, or for the first snapshot the age the server gives it), and the
    rooms this lobby placed on each table since its entry was last rewritten."""

    def __init__(self, ttl: float = TABLES_TTL) -> None:
        self.ttl = ttl
        self._entries: dict[str, tuple[TableEntry, float]] = {}
        self._placed: dict[str, int] = {}
        self._failed: set[str] = set()      # unreachable since their entry was written
        self.synced = asyncio.Event()       # the first snapshot has been read
        self.heard = time.monotonic()       # the last time the watch said anything

    def apply(self, key: str, value: bytes | None, deleted: bool = False,
              age: float = 0.0, now: float | None = None) -> None:
        """Fold in one entry of the watch, written ``age`` seconds ago."""
        now = time.monotonic() if now is None else now
        self.heard = now
        self._placed.pop(key, None)     # a fresh entry counts the rooms placed before it
        self._failed.discard(key)
        if deleted or not value:
            self._entries.pop(key, None)
            return
        try:
            table = TableEntry.decode(value)
        except BadContract as exc:
            log.warning("unreadable tables entry", extra={"key": key, "error": str(exc)})
            return
        if not table.address:
            return
        self._entries[key] = (table, now - max(0.0, age))

    def live(self, now: float | None = None) -> list[TableEntry]:
        """Tables whose entry was written within the lease."""
        now = time.monotonic() if now is None else now
        for key in [k for k, (_, at) in self._entries.items() if now - at > 3 * self.ttl]:
            del self._entries[key]      # long gone: forget it
            self._placed.pop(key, None)
            self._failed.discard(key)
        return [table for table, at in self._entries.values() if now - at <= self.ttl]

    def load(self, table: TableEntry) -> int:
        """A table's rooms as its entry says, plus those this lobby sent it since."""
        return table.rooms + self._placed.get(table.instance, 0)

    def choose(self, now: float | None = None,
               rng: random.Random | None = None) -> TableEntry | None:
        """The table for a new room: a live one that is not draining (nor found
        unreachable), with the least load; a tie is broken at random, so lobby replicas
        do not all pick the same table."""
        taking = [t for t in self.live(now) if not t.draining and t.instance not in self._failed]
        if not taking:
            return None
        least = min(self.load(t) for t in taking)
        return (rng or random).choice([t for t in taking if self.load(t) == least])

    def placed(self, instance: str, rooms: int = 1) -> None:
        """Count a room sent to ``instance`` (before its CreateRoom, so that simultaneous
        creations spread); -1 takes back one that failed."""
        count = max(0, self._placed.get(instance, 0) + rooms)
        if count:
            self._placed[instance] = count
        else:
            self._placed.pop(instance, None)

    def failed(self, instance: str) -> None:
        """Not chosen again until its entry is written again."""
        self._failed.add(instance)

    def entries(self, now: float | None = None) -> list[tuple[str, TableEntry, float]]:
        """Every entry heard of lately: (key, value, when written, monotonic seconds)."""
        self.live(now)   # forgets the long gone
        return [(key, table, at) for key, (table, at) in sorted(self._entries.items())]
