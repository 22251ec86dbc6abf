"""The table's lease: its entry in the ``tables`` bucket (TTL ``table.lease_ttl_seconds``),
renewed by a heartbeat that also drives the periodic duties: retrying the outboxes,
re-reading the directory, reporting stream replicas, and the adoption scan (adoption.py).

Timing (docs/architecture.md, "Ownership and fencing"): the entry is renewed every ttl / RENEWALS_PER_TTL
(0.5 s for the shipped 2 s lease) by a thread of its own with a NATS connection of its own
(``Lease._renewals``), so a table whose event loop is busy (a burst of commands or rebuilds,
a GC pass, a core shared with other processes) keeps its lease: the renewal needs the
interpreter for a moment, not a turn of the loop. The loop's heartbeat composes the entry the
thread puts and marks that the loop runs; a loop that has not run for LOOP_LATE_TTLS leases
(wedged) lets the lease go, so its rooms are adopted. So does a table whose own connection
is down or on a NATS server cut off from its cluster (``Lease.linked``): the lease follows the
connection that does the work, not the renewal thread's. A renewal missed or late for ttl -
interval (1.5 s: three in a row) is a stall (below). Each renewal is bounded
(RENEW_TIMEOUT_SHARE of the ttl), so one hung put never holds back the next. The adoption
scan runs apart from the renewals, every ttl / SCANS_PER_TTL (0.25 s), so a dead table's
rooms are claimed soon after its entry expires.

Fencing a table that stopped running (SIGSTOP, a frozen VM, a stall of the whole process):
the log's expected-sequence fence refuses its appends once another table wrote, but what it
had in flight (an append acknowledged while it was stopped, a timer, a prompt) must not reach
players either. So the lease keeps a **tenure**: ``epoch`` grows whenever the heartbeat sees
that this process (or its event loop, past LOOP_LATE_TTLS leases) did not run for
``stall_after`` seconds (long enough for its entry to have expired); every room runs under the epoch it was built or last checked in, and the core
(core.py) sends nothing for a room whose epoch is not the current one, nor while the
heartbeat itself is that late. After a stall each room is checked against its directory
entry and the tail of its log before it plays on (TableHost.reverify); a room lost meanwhile
is dropped without a word.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

from paiju.contracts.directory import TableEntry
from services.common import bus
from services.common.tasks import cancel_and_wait
from services.table import metrics as m
from services.table.host import TableHost
from services.table.leaders import LeaderWatch
from services.table.markers import sweep_forever

log = logging.getLogger("paiju.table.lease")

RESYNC_SECONDS = 30.0           # between full re-reads of the directory (in a task of its own)
RENEWALS_PER_TTL = 4            # renewals per lease: the margin is ttl - ttl / 4
SCANS_PER_TTL = 8               # adoption scans per lease
RENEW_TIMEOUT_SHARE = 0.25      # one renewal may take this share of the ttl, then it is dropped
MIN_INTERVAL = 0.1              # seconds: the shortest renewal and scan interval
LOOP_LATE_TTLS = 5              # an event loop that has not run for this many leases is
                                # wedged: its lease is no longer renewed
STOP_SECONDS = 5.0              # the renewal thread's bound to end after stop()


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
        self.loop_late = ttl * LOOP_LATE_TTLS
        # written by the renewal thread only, read by the loop: the tenure (grows after each
        # stall, see the docstring) and when the renewals last ran
        self.epoch = 0
        self.last_tick = time.monotonic()
        self.renewed_until = 0.0    # the entry lives at least until then (last renewal sent + ttl)
        # written by the loop only, read by the renewal thread: when the loop's heartbeat
        # last ran, and the entry to put
        self.loop_tick = time.monotonic()
        self.entry_data = b""
        self._halt = threading.Event()
        self._renewer: threading.Thread | None = None
        self.heartbeat: asyncio.Task[None] | None = None
        self._scanner: asyncio.Task[None] | None = None
        self._retrying: asyncio.Task[None] | None = None
        self._scanning: asyncio.Task[None] | None = None
        self._resyncing: asyncio.Task[None] | None = None
        self._verifying: asyncio.Task[None] | None = None
        self._leaders: asyncio.Task[None] | None = None
        self._markers: asyncio.Task[None] | None = None

    def entry(self) -> TableEntry:
        core = self.core
        players = sum(len(a.room.seated()) for a in core.rooms.values())
        return TableEntry(instance=core.instance, address=core.address, rooms=len(core.rooms),
                          players=players, started_at=core.started_at,
                          draining=core.rooms.draining)

    async def register(self) -> None:
        """Put the entry now, from the loop (at the start, when the table drains); the
        renewals put the same from then on."""
        self.entry_data = self.entry().encode()
        sent = time.monotonic()
        await self.core.kv_tables.put(self.core.instance, self.entry_data)
        self.renewed_until = max(self.renewed_until, sent + self.ttl)

    def holding(self) -> bool:
        """The entry is alive (renewed within the lease) and its renewal thread runs: the
        table's readiness (server.py), beside its NATS connection."""
        renewer = self._renewer
        return (renewer is not None and renewer.is_alive()
                and time.monotonic() < self.renewed_until)

    def linked(self) -> bool:
        """The table's own connection (appends, commands, events) can do its work: up, and
        on a NATS server that reaches the majority of its cluster. Read by the renewal
        thread: the lease is renewed only for a table that could use it."""
        nc = self.core.nc
        return bool(nc.is_connected) and not getattr(nc, "isolated", False)

    async def renew(self, kv_tables: Any) -> None:
        """Put the entry on the renewal thread's connection, within ``renew_timeout``;
        raises when it did not land."""
        sent = time.monotonic()
        await asyncio.wait_for(kv_tables.put(self.core.instance, self.entry_data),
                               self.renew_timeout)
        self.renewed_until = max(self.renewed_until, sent + self.ttl)

    def start(self) -> None:
        self.last_tick = self.loop_tick = time.monotonic()
        self.entry_data = self.entry().encode()
        self._halt.clear()
        self._renewer = threading.Thread(target=lambda: asyncio.run(self._renewals()),
                                         name=f"lease-{self.core.instance}", daemon=True)
        self._renewer.start()
        self.heartbeat = asyncio.create_task(self._loop())
        self._scanner = asyncio.create_task(self._scan_loop())
        if self.core.cfg.nats.replicas > 1:
            # a replicated cluster: the log streams' leaders spread over its nodes, soon
            # after they gather (leaders.py); the first look once the view of the other
            # tables is in, so that one balancer acts
            watch = LeaderWatch(self.core.nc, self.core.js, self.balancer, first_look=self.ttl)
            self._leaders = asyncio.create_task(watch.run())
        # the balancer also sweeps the directory's old delete markers (markers.py)
        self._markers = asyncio.create_task(sweep_forever(self.core.js, self.balancer))

    async def stop(self) -> None:
        self._halt.set()
        await cancel_and_wait(self.heartbeat, self._scanner, self._retrying, self._scanning,
                              self._resyncing, self._verifying, self._leaders, self._markers)
        if self._renewer is not None:
            await asyncio.to_thread(self._renewer.join, STOP_SECONDS)
            self._renewer = None

    def balancer(self) -> bool:
        """This table spreads the room log's leaders (leaders.py) and sweeps the directory's
        old delete markers (markers.py): it is not draining and has the least instance name
        of the live tables that are not."""
        core = self.core
        if core.rooms.draining:
            return False
        names = [e.instance for e in core.view.live_tables() if not e.draining]
        return core.instance == min([*names, core.instance])

    def trusted(self, ttl: float) -> bool:
        """This table's own view of the leases can be believed: it has heartbeaten without
        a break (nor a stall) for a whole lease."""
        since = self.beating_since   # read once: the renewal thread may clear it meanwhile
        return since is not None and time.monotonic() - since >= ttl

    def current(self, tenure: int | None) -> bool:
        """A room held under ``tenure`` may write and send: no stall since it was checked,
        and the heartbeat is not late enough for this process to have been stopped.
        ``last_tick`` is read before ``epoch`` (the thread writes them the other way round),
        so a fresh tick is never paired with the epoch it replaced."""
        tick = self.last_tick
        return tenure == self.epoch and time.monotonic() - tick < self.stall_after

    def _tick(self) -> bool:
        """A renewal is due (on the renewal thread): True when the last one was
        ``stall_after`` ago or more (a stall). The epoch grows before ``last_tick`` moves,
        so the loop never sees a fresh tick under the old epoch."""
        now = time.monotonic()
        stalled = now - self.last_tick >= self.stall_after
        if stalled:
            self.epoch += 1
            self.beating_since = None   # the view of the others' leases is stale as well
            log.warning("the table did not run for a lease: its rooms are checked before "
                        "they play on", extra={"epoch": self.epoch})
        self.last_tick = now
        return stalled

    async def _connect(self) -> Any:
        """The renewal thread's own connection and its handle on the ``tables`` bucket,
        within ``ttl`` (a first connect otherwise retries for ever); closed again when the
        bucket cannot be reached."""
        nc = await asyncio.wait_for(
            bus.connect(self.core.cfg.nats, f"table-{self.core.instance}-lease"),
            max(self.ttl, float(self.core.cfg.nats.connect_timeout)))
        try:
            return nc, await asyncio.wait_for(nc.jetstream().key_value(bus.TABLES_BUCKET),
                                              self.ttl)
        except BaseException:
            await _close(nc)
            raise

    async def _renewals(self) -> None:
        """The renewal thread's loop (an event loop of its own): every ``interval``, put the
        entry the loop composed, unless the loop has not run for ``loop_late`` seconds."""
        nc: Any = None
        kv_tables: Any = None
        try:
            while not self._halt.is_set():
                await asyncio.sleep(self.interval)
                if self._halt.is_set():
                    break
                if time.monotonic() - self.loop_tick >= self.loop_late:
                    continue   # the loop is wedged: the lease lapses, the rooms are adopted
                if not self.linked():
                    # cut off (its server lost the cluster) or reconnecting: the rooms cannot
                    # play here, so the lease lapses as if the table stopped, and they move
                    continue
                self._tick()
                try:
                    if kv_tables is None:
                        nc, kv_tables = await self._connect()
                        if self._halt.is_set():
                            break
                    await self.renew(kv_tables)
                    if self.beating_since is None:
                        self.beating_since = time.monotonic()
                except Exception as exc:  # NATS down: keep trying, rooms keep playing
                    self.beating_since = None
                    log.warning("heartbeat failed", extra={"error": repr(exc)})
        finally:
            if nc is not None:
                await _close(nc)

    async def _loop(self) -> None:
        """The loop's heartbeat: marks that the loop runs, composes the entry the renewals
        put, and drives the periodic duties (a check of every room after a stall first)."""
        core = self.core
        resynced = time.monotonic()
        checked = self.epoch   # the epoch the rooms were last checked for
        while True:
            await asyncio.sleep(self.interval)
            self.loop_tick = time.monotonic()
            self.entry_data = self.entry().encode()
            if self.epoch != checked and (self._verifying is None or self._verifying.done()):
                checked = self.epoch
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

    async def _scan(self) -> None:
        try:
            await self._scan_once()
        except Exception as exc:  # NATS away: the next beat scans again
            log.warning("adoption scan failed", extra={"error": repr(exc)})


async def _close(nc: Any) -> None:
    try:
        await nc.close()
    except Exception:
        log.debug("lease connection not closed", exc_info=True)
