"""The table's lease: its entry in the ``tables`` bucket (TTL), renewed by a heartbeat that
also drives the periodic duties: retrying the outboxes, re-reading the directory, reporting
stream replicas, and the adoption scan (adoption.py)."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from services.common import bus
from services.common.tasks import cancel_and_wait
from services.table import metrics as m
from services.table.host import TableHost

log = logging.getLogger("paiju.table.lease")

RESYNC_EVERY = 15               # heartbeats between full re-reads of the directory


class Lease:
    def __init__(self, core: TableHost, scan: Callable[[], Awaitable[Any]]) -> None:
        self.core = core
        self._scan_once = scan      # the adoption scan, once per beat (adoption.py)
        # since when this table's heartbeats have succeeded without a break: a table that
        # was itself cut off (a NATS node lost, an election) saw every lease run out,
        # others' as well as its own, and must not take their rooms for that
        self.beating_since: float | None = time.monotonic()
        self.heartbeat: asyncio.Task[None] | None = None
        self._retrying: asyncio.Task[None] | None = None
        self._scanning: asyncio.Task[None] | None = None

    def entry(self) -> dict[str, Any]:
        core = self.core
        players = sum(len(a.room.seated()) for a in core.rooms.values())
        return {"instance": core.instance, "address": core.address, "rooms": len(core.rooms),
                "players": players, "started_at": core.started_at, "draining": core.draining}

    async def register(self) -> None:
        await self.core.kv_tables.put(self.core.instance, json.dumps(self.entry()).encode())

    def start(self) -> None:
        self.heartbeat = asyncio.create_task(self._loop())

    async def stop(self) -> None:
        await cancel_and_wait(self.heartbeat, self._retrying, self._scanning)

    def trusted(self, ttl: float) -> bool:
        """This table's own view of the leases can be believed: it has heartbeaten without
        a break for a whole lease."""
        return self.beating_since is not None and time.monotonic() - self.beating_since >= ttl

    async def _loop(self) -> None:
        core = self.core
        beats = 0
        interval = max(0.2, core.cfg.table.lease_ttl_seconds / 5)
        while True:
            await asyncio.sleep(interval)
            beats += 1
            try:
                await self.register()
                if self.beating_since is None:
                    self.beating_since = time.monotonic()
            except Exception as exc:  # NATS down: keep trying, rooms keep playing
                self.beating_since = None
                log.warning("heartbeat failed", extra={"error": repr(exc)})
            now = time.monotonic()
            m.ROOMS_STUCK.set(sum(1 for actor in list(core.rooms.values()) if actor.stuck(now)))
            if core.has_pending() and (self._retrying is None or self._retrying.done()):
                # in a task of its own: slow retries never delay the lease above
                self._retrying = asyncio.create_task(core.retry_pending())
            if beats % RESYNC_EVERY == 0:
                await self._resync()
            if self._scanning is None or self._scanning.done():
                self._scanning = asyncio.create_task(self._scan())

    async def _resync(self) -> None:
        core = self.core
        try:
            await core.view.resync()
        except Exception as exc:
            log.warning("directory re-read failed", extra={"error": repr(exc)})
        target = core.cfg.nats.replicas
        await bus.report_replicas(core.js, {name: target for name in (
            bus.ROOM_LOG_STREAM, bus.SETTLE_STREAM, *(f"KV_{b}" for b in (
                bus.TABLES_BUCKET, bus.ROOMS_BUCKET, bus.SEATS_BUCKET, bus.ROOM_IDS_BUCKET)))})

    async def _scan(self) -> None:
        try:
            await self._scan_once()
        except Exception as exc:  # NATS away: the next beat scans again
            log.warning("adoption scan failed", extra={"error": repr(exc)})
