"""The table's lease: its entry in the ``tables`` bucket (TTL ``table.lease_ttl_seconds``),
renewed by a heartbeat that also drives the periodic duties: retrying the outboxes,
re-reading the directory, reporting stream replicas, and the adoption scan (adoption.py).

Timing (docs/architecture.md, "Ownership and fencing"): the entry is renewed every ttl / RENEWALS_PER_TTL
(0.5 s for the shipped 2 s lease), so a healthy table whose loop is held up (a GC pass, a
busy core, a slow broker answer) keeps its lease through ttl - interval (1.5 s: three
renewals in a row missed or late) before another table may take its rooms. Each renewal is
bounded (RENEW_TIMEOUT_SHARE of the ttl), so one hung put never holds back the next. The
adoption scan runs apart from the renewals, every ttl / SCANS_PER_TTL (0.25 s), so a dead
table's rooms are claimed soon after its entry expires.

Fencing a table that stopped running (SIGSTOP, a frozen VM, a stall of the whole process):
the log's expected-sequence fence refuses its appends once another table wrote, but what it
had in flight (an append acknowledged while it was stopped, a timer, a prompt) must not reach
players either. So the lease keeps a **tenure**: ``epoch`` grows whenever the heartbeat sees
that this process did not run for ``stall_after`` seconds (long enough for its entry to have
expired); every room runs under the epoch it was built or last checked in, and the core
(core.py) sends nothing for a room whose epoch is not the current one, nor while the
heartbeat itself is that late. After a stall each room is checked against its directory
entry and the tail of its log before it plays on (TableHost.reverify); a room lost meanwhile
is dropped without a word.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from paiju.contracts.directory import TableEntry
from services.common import bus
from services.common.tasks import cancel_and_wait
from services.table import metrics as m
from services.table.host import TableHost
from services.table.roomlog import balance_leaders

log = logging.getLogger("paiju.table.lease")

RESYNC_SECONDS = 30.0           # between full re-reads of the directory (in a task of its own)
RENEWALS_PER_TTL = 4            # renewals per lease: the margin is ttl - ttl / 4
SCANS_PER_TTL = 8               # adoption scans per lease
RENEW_TIMEOUT_SHARE = 0.25      # one renewal may take this share of the ttl, then it is dropped
MIN_INTERVAL = 0.1              # seconds: the shortest renewal and scan interval


class Lease:
    def __init__(self, core: TableHost, scan: Callable[[], Awaitable[Any]]) -> None:
        self.core = core
        self._scan_once = scan      # the adoption scan (adoption.py)
        ttl = float(core.cfg.table.lease_ttl_seconds)
        self.ttl = ttl
        self.interval = max(MIN_INTERVAL, ttl / RENEWALS_PER_TTL)
        self.scan_interval = max(MIN_INTERVAL, ttl / SCANS_PER_TTL)
        self.renew_timeout = max(MIN_INTERVAL, ttl * RENEW_TIMEOUT_SHARE)
        # not run for this long: the entry may have expired and the rooms been adopted
        self.stall_after = max(self.interval * 2, ttl - self.interval)
        # since when this table's heartbeats have succeeded without a break: a table that
        # was itself cut off (a NATS node lost, an election) saw every lease run out,
        # others' as well as its own, and must not take their rooms for that
        self.beating_since: float | None = time.monotonic()
        self.epoch = 0              # the tenure: grows after each stall (see the docstring)
        self.last_tick = time.monotonic()   # when the heartbeat last ran
        self.renewed_until = 0.0    # the entry lives at least until then (last renewal sent + ttl)
        self.heartbeat: asyncio.Task[None] | None = None
        self._scanner: asyncio.Task[None] | None = None
        self._retrying: asyncio.Task[None] | None = None
        self._scanning: asyncio.Task[None] | None = None
        self._resyncing: asyncio.Task[None] | None = None
        self._verifying: asyncio.Task[None] | None = None

    def entry(self) -> TableEntry:
        core = self.core
        players = sum(len(a.room.seated()) for a in core.rooms.values())
        return TableEntry(instance=core.instance, address=core.address, rooms=len(core.rooms),
                          players=players, started_at=core.started_at,
                          draining=core.rooms.draining)

    async def register(self) -> None:
        await self.core.kv_tables.put(self.core.instance, self.entry().encode())

    async def renew(self) -> None:
        """Put the entry, within ``renew_timeout``; raises when it did not land."""
        sent = time.monotonic()
        await asyncio.wait_for(self.register(), self.renew_timeout)
        self.renewed_until = max(self.renewed_until, sent + self.ttl)

    def start(self) -> None:
        self.last_tick = time.monotonic()
        self.heartbeat = asyncio.create_task(self._loop())
        self._scanner = asyncio.create_task(self._scan_loop())

    async def stop(self) -> None:
        await cancel_and_wait(self.heartbeat, self._scanner, self._retrying, self._scanning,
                              self._resyncing, self._verifying)

    def trusted(self, ttl: float) -> bool:
        """This table's own view of the leases can be believed: it has heartbeaten without
        a break (nor a stall) for a whole lease."""
        return self.beating_since is not None and time.monotonic() - self.beating_since >= ttl

    def current(self, tenure: int | None) -> bool:
        """A room held under ``tenure`` may write and send: no stall since it was checked,
        and the heartbeat is not late enough for this process to have been stopped."""
        return tenure == self.epoch and time.monotonic() - self.last_tick < self.stall_after

    def _tick(self) -> bool:
        """The heartbeat runs: True when it had not run for ``stall_after`` (a stall)."""
        now = time.monotonic()
        stalled = now - self.last_tick >= self.stall_after
        self.last_tick = now
        if stalled:
            self.epoch += 1
            self.beating_since = None   # the view of the others' leases is stale as well
            log.warning("the table did not run for a lease: its rooms are checked before "
                        "they play on", extra={"epoch": self.epoch})
        return stalled

    async def _loop(self) -> None:
        core = self.core
        resynced = time.monotonic()
        while True:
            await asyncio.sleep(self.interval)
            stalled = self._tick()
            try:
                await self.renew()
                if self.beating_since is None:
                    self.beating_since = time.monotonic()
            except Exception as exc:  # NATS down: keep trying, rooms keep playing
                self.beating_since = None
                log.warning("heartbeat failed", extra={"error": repr(exc)})
            if stalled and (self._verifying is None or self._verifying.done()):
                self._verifying = asyncio.create_task(core.reverify())
            now = time.monotonic()
            m.ROOMS_STUCK.set(sum(1 for actor in list(core.rooms.values()) if actor.stuck(now)))
            if core.has_pending() and (self._retrying is None or self._retrying.done()):
                # in a task of its own: slow retries never delay the lease above
                self._retrying = asyncio.create_task(core.retry_pending())
            if now - resynced >= RESYNC_SECONDS and (
                    self._resyncing is None or self._resyncing.done()):
                resynced = now
                self._resyncing = asyncio.create_task(self._resync())

    async def _scan_loop(self) -> None:
        while True:
            await asyncio.sleep(self.scan_interval)
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
            *bus.ROOM_LOG_STREAMS, bus.SETTLE_STREAM, *(f"KV_{b}" for b in (
                bus.TABLES_BUCKET, bus.ROOMS_BUCKET, bus.SEATS_BUCKET, bus.ROOM_IDS_BUCKET)))})
        if target > 1:   # a replicated cluster: the log streams' leaders spread over its nodes
            try:
                await balance_leaders(core.nc, core.js)
            except Exception as exc:
                log.warning("room log leaders not balanced", extra={"error": repr(exc)})

    async def _scan(self) -> None:
        try:
            await self._scan_once()
        except Exception as exc:  # NATS away: the next beat scans again
            log.warning("adoption scan failed", extra={"error": repr(exc)})
