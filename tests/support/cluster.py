"""The chaos harness: a multi-replica Paiju stack as real processes on loopback, robots that
play through it, the faults that hit it mid-hand, and the checks made afterwards.

One implementation for the compact suite (tests/cluster/, run by ``make test``) and the
full-length benchmark (bench/bench_chaos.py, ``make chaos``): both build a
:class:`ChaosPlan`, run it with :func:`run_chaos` and read the :class:`ChaosResult`.

The stack: a three-node nats-server JetStream cluster (services.common.natsd
.EmbeddedNatsCluster), two records on a fresh PostgreSQL database, two arbiters, three
tables (distinct instances, a short lease) and two lobbies, wired by environment variables
as an operator would wire them: every service gets every NATS URL, ``PAIJU_NATS__REPLICAS=3``,
the tables and lobbies dial records through one gRPC multi-address target
(``ipv4:127.0.0.1:p1,127.0.0.1:p2``), and the tables ask the arbiters over NATS (their queue
group).

Robots (clients.robot) play rooms of every game back to back in lanes, the four seats of a
room spread over both lobbies, until the fault schedule is over; then every room plays to its
end. Each fault is one of:

- ``nats-leader``: SIGKILL the nats-server leading the room-log stream of the most rooms in
  play, start it again; the rooms it pauses are those of the streams it led
  (bus.room_log_stream);
- ``table-kill``: SIGKILL the table owning the most rooms in play (owner from the ``rooms``
  bucket), start it again once its rooms moved;
- ``table-freeze``: SIGSTOP that table for ``freeze_seconds``, then SIGCONT (its rooms move
  meanwhile; continued, it must not write to them);
- ``lobby-kill``: SIGKILL the lobby with the most seated robots, start it again;
- ``arbiter-kill`` / ``records-kill``: SIGKILL one replica, start it again;
- ``rolling-tables`` / ``rolling-lobbies``: SIGTERM each replica in turn, start it again,
  wait for SERVING, next.

Recovery is measured by observers in this process subscribed to ``room.*.events`` on every
NATS node (public and private frames, which carry ``room:hand:index`` uids): per fault and
affected room, the time from the fault to the room's next event, and on the player side to
the next prompt a robot of that room received.
"""

from __future__ import annotations

import asyncio
import atexit
import bisect
import contextlib
import inspect
import json
import logging
import os
import signal
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc
import nats
from nats.js.errors import NoKeysError

from clients.robot.robot import Robot, RobotStats, room_of
from paiju import frames
from paiju.contracts.directory import RoomEntry
from paiju.v1 import client_pb2, records_pb2_grpc, table_pb2
from services.common import bus
from services.common.natsd import EmbeddedNatsCluster, stream_leader
from tests.support.procs import ServiceProc, make_service
from tests.support.waiting import eventually

log = logging.getLogger("paiju.chaos")

SECRET = "cluster-chaos-secret"
PG_ADMIN_URL = os.environ.get("PAIJU_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
GAMES = ("xuezhan", "changsha", "dadun")
# every stream and KV bucket of the deployment (a bucket ``b`` is the stream ``KV_b``)
STREAMS = (*bus.ROOM_LOG_STREAMS, "SETTLE", "KV_tables", "KV_rooms", "KV_seats",
           "KV_room_ids")
FAULT_KINDS = ("nats-leader", "table-kill", "table-freeze", "lobby-kill", "arbiter-kill",
               "records-kill", "postgres-restart", "rolling-tables", "rolling-lobbies",
               "rolling-arbiters", "rolling-records", "rolling-nats")
# refused actions a robot may get when its prompt went stale (the decision moved on, e.g.
# entrust played while it was away): game ranges 969x / 979x / 989x
STALE_PREFIXES = ("969", "979", "989")
# "a moment, please": a backend did not answer / the room is moving between tables
TRANSIENT_CODES = ("1050", "1051")
ALL_HANDS_PLAYED = 2          # NoticeDismiss.Reason: the room's normal end
PER_ADDRESS_LIMITS = ("LOGINS_PER_IP_PER_MINUTE", "CREATES_PER_IP_PER_MINUTE",
                      "MAX_CONNECTIONS_PER_IP")
RECONNECT_STORM = 10          # more reconnects than this in one room: a client in a loop
EPSILON = 0.1                 # events delivered within this after a fault were sent before it
NOTICEABLE = 1.0              # a room silent longer than this, a player notices
ROBOTS_TAKE_ADDRESS_LISTS = any(
    word in str(inspect.signature(Robot.__init__).parameters["address"].annotation)
    for word in ("list", "Sequence"))


def now() -> float:
    return time.monotonic()


async def until(check: Any, what: str, seconds: float = 30.0) -> Any:
    """A cluster's wait (:func:`eventually`): every 0.2 s, a check that raises tried again
    (an election, a node catching up)."""
    return await eventually(check, what, seconds, every=0.2, retry=True)


def longest_gap(times: list[float], start: float, end: float) -> float | None:
    """The longest silence in sorted ``times`` from ``start`` until the first time after
    ``end`` (None: nothing after ``start`` at all)."""
    gap = gap_at(times, start, end)
    return None if gap is None else gap[0]


def gap_at(times: list[float], start: float, end: float) -> tuple[float, float] | None:
    """:func:`longest_gap` and when it began."""
    i = bisect.bisect_right(times, start)
    if i == len(times):
        return None
    prev, best, began = start, 0.0, start
    for t in times[i:]:
        if t - prev > best:
            best, began = t - prev, prev
        prev = t
        if t > end:
            break
    return best, began


# ---------------------------------------------------------------------------- PostgreSQL

class PostgresUnavailable(RuntimeError):
    """No PostgreSQL server answered at PAIJU_TEST_POSTGRES (the tests skip, the bench stops)."""


@dataclass(frozen=True)
class Database:
    name: str
    admin_url: str = PG_ADMIN_URL
    # the run's own server (tests/support/pgctl.py), which the postgres-restart fault stops
    # and starts again; None: a shared server, never restarted (the fault reports an error)
    server: Any = field(default=None, compare=False)

    @property
    def dsn(self) -> str:
        """asyncpg's URL of this database."""
        return f"{self.admin_url.rsplit('/', 1)[0]}/{self.name}"

    @property
    def url(self) -> str:
        """SQLAlchemy's URL of this database (``DATABASE_URL`` of records)."""
        return self.dsn.replace("postgresql://", "postgresql+asyncpg://", 1)


async def _admin(sql: str, admin_url: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(admin_url, timeout=3)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


async def create_database(admin_url: str = PG_ADMIN_URL, server: Any = None) -> Database:
    """A fresh, empty database for one run (on ``server``, a PrivatePostgres, when given);
    PostgresUnavailable when none can be made."""
    if server is not None:
        admin_url = server.url("postgres", driver="postgresql")
    db = Database(f"paiju_chaos_{uuid.uuid4().hex[:12]}", admin_url, server)
    try:
        await _admin(f'CREATE DATABASE "{db.name}"', admin_url)
    except Exception as exc:  # refused, timed out, no such role, asyncpg missing...
        raise PostgresUnavailable(f"PostgreSQL not reachable at {admin_url}: {exc!r}") from None
    return db


async def drop_database(db: Database) -> None:
    with contextlib.suppress(Exception):
        await _admin(f'DROP DATABASE IF EXISTS "{db.name}" WITH (FORCE)', db.admin_url)


# ---------------------------------------------------------------------------- the stack

@dataclass(frozen=True)
class StackSpec:
    records: int = 2
    arbiters: int = 2
    tables: int = 3
    lobbies: int = 2
    nats_nodes: int = 3
    replicas: int = 3
    lease_ttl_seconds: int = 3
    drain_seconds: float = 10.0      # a table's SIGTERM drain bound (table.drain_seconds)
    extra_env: tuple[tuple[str, str], ...] = ()
    # NATS routes dialled through ports a proxy can front (tests/support/partition.py)
    fronted_routes: bool = False
    # table i and lobby i first dial node i (mod the nodes) alone and learn the others from
    # the cluster, so that every node serves a table (a partition run cuts a node with one)
    home_nodes: bool = False


def multi_target(procs: list[ServiceProc]) -> str:
    """One gRPC dial string for several replicas: ``ipv4:127.0.0.1:p1,127.0.0.1:p2``."""
    return "ipv4:" + ",".join(p.address for p in procs)


class ClusterStack:
    """Every process of the stack, by label (``records-1``, ``arbiter-2``, ``table-a``,
    ``lobby-1`` ...). :meth:`stop` kills whatever is still running, always."""

    def __init__(self, tmp: Path, db: Database, spec: StackSpec | None = None) -> None:
        self.tmp = tmp
        self.db = db
        self.spec = spec or StackSpec()
        self.nats = EmbeddedNatsCluster(self.spec.nats_nodes, base_dir=str(tmp / "nats"),
                                        fronted_routes=self.spec.fronted_routes)
        self.procs: dict[str, ServiceProc] = {}
        self.started_in = 0.0
        self.start_failures: list[str] = []     # processes that failed a first start
        # whatever happens to this process short of SIGKILL, no child outlives it
        atexit.register(self.kill_all)

    def kill_all(self) -> None:
        """SIGKILL every process of the stack that still runs (NATS included); sync."""
        for proc in self.procs.values():
            if proc.proc is not None and proc.proc.poll() is None:
                proc.proc.kill()
        for node in self.nats.nodes:
            if node.proc is not None and node.proc.poll() is None:
                node.proc.kill()

    # -- labels ----------------------------------------------------------------------------
    def of(self, kind: str) -> list[str]:
        return [label for label in self.procs if label.startswith(kind + "-")]

    @property
    def lobby_addresses(self) -> list[str]:
        return [self.procs[label].address for label in self.of("lobby")]

    @property
    def records_target(self) -> str:
        return multi_target([self.procs[label] for label in self.of("records")])

    def table_label(self, instance: str) -> str | None:
        """The label of the table whose instance name is ``instance`` (they are equal)."""
        return instance if instance in self.procs else None

    # -- start / stop ----------------------------------------------------------------------
    def _env(self) -> dict[str, str]:
        s = self.spec
        return {"PAIJU_NATS__REPLICAS": str(s.replicas), "DATABASE_URL": self.db.url,
                "PAIJU_LOBBY__TOKEN_SECRET": SECRET,
                "PAIJU_TABLE__LEASE_TTL_SECONDS": str(s.lease_ttl_seconds),
                "PAIJU_TABLE__DRAIN_SECONDS": str(s.drain_seconds),
                "PAIJU_LOBBY__WS_PORT": "-1", "PAIJU_LOBBY__CONSOLE_PORT": "-1",
                # every robot comes from 127.0.0.1, where players would each have their own
                # address: the per-address limits are off (the per-user ones stay)
                **{f"PAIJU_LOBBY__{key}": "0" for key in PER_ADDRESS_LIMITS},   # 0: off
                **dict(s.extra_env)}

    def _make(self, label: str, name: str, home: int | None = None, **env: str) -> ServiceProc:
        urls = self.nats.urls
        if home is not None and self.spec.home_nodes:
            urls = self.nats.url_list[home % len(self.nats.nodes)]
        proc = make_service(name, urls, self.tmp, **self._env(), **env)
        proc.log_path = self.tmp / f"{label}.log"
        self.procs[label] = proc
        return proc

    async def start(self, timeout: float = 60.0) -> ClusterStack:
        started = now()
        await asyncio.to_thread(self.nats.start, timeout)
        s = self.spec
        # the first records migrates the fresh database alone; the others start together
        records = [self._make(f"records-{i + 1}", "records") for i in range(s.records)]
        await self._start_all(records[:1], timeout)
        arbiters = [self._make(f"arbiter-{i + 1}", "arbiter") for i in range(s.arbiters)]
        await self._start_all(records[1:] + arbiters, timeout)
        dial = {"PAIJU_RECORDS__ADDRESS": self.records_target}
        tables = [self._make(f"table-{chr(ord('a') + i)}", "table", home=i,
                             PAIJU_TABLE__INSTANCE=f"table-{chr(ord('a') + i)}", **dial)
                  for i in range(s.tables)]
        lobbies = [self._make(f"lobby-{i + 1}", "lobby", home=i, **dial)
                   for i in range(s.lobbies)]
        # tables before lobbies: the first to create the ``tables`` bucket sets its TTL (the
        # table: its lease; the lobby: a fixed 10 s), and the lease is what the run measures;
        # one table first, creating the streams and buckets, then the others together
        await self._start_all(tables[:1], timeout)
        await self._start_all(tables[1:], timeout)
        await self._start_all(lobbies, timeout)
        self.started_in = now() - started
        return self

    async def _start_all(self, procs: list[ServiceProc], timeout: float) -> None:
        """Start together; one that exits during its start is started once more (as its pod
        would be restarted), the failure kept in ``start_failures``."""
        async def one(proc: ServiceProc) -> None:
            try:
                await asyncio.to_thread(proc.start, timeout)
            except RuntimeError as exc:
                label = next(k for k, v in self.procs.items() if v is proc)
                lines = [ln for ln in str(exc).splitlines() if ln.strip()]
                self.start_failures.append(f"{label}: {lines[0]} ... {lines[-1][:300]}")
                await asyncio.to_thread(proc.start, timeout)
        await asyncio.gather(*(one(p) for p in procs))

    async def stop(self) -> None:
        """Stop everything: SIGTERM with a short bound, then SIGKILL; NATS last."""
        async def one(proc: ServiceProc) -> None:
            with contextlib.suppress(Exception):
                await asyncio.to_thread(proc.stop, signal.SIGTERM, 5.0)
        await asyncio.gather(*(one(p) for p in self.procs.values()))
        self.kill_all()  # whatever survived the above
        await asyncio.to_thread(self.nats.stop)
        atexit.unregister(self.kill_all)

    # -- faults on processes ---------------------------------------------------------------
    async def kill(self, label: str) -> None:
        await asyncio.to_thread(self.procs[label].stop, signal.SIGKILL, 5.0)

    async def terminate(self, label: str, timeout: float) -> tuple[int, float]:
        """SIGTERM and wait for the exit (SIGKILL after ``timeout``): (exit code, seconds)."""
        started = now()
        code = await asyncio.to_thread(self.procs[label].stop, signal.SIGTERM, timeout)
        return code, now() - started

    async def restart(self, label: str, timeout: float = 60.0) -> float:
        """Start a stopped process again on its ports (others dial them): seconds to SERVING."""
        started = now()
        await asyncio.to_thread(self.procs[label].start, timeout, 0)
        return now() - started

    def running(self, label: str) -> bool:
        p = self.procs[label].proc
        return p is not None and p.poll() is None

    def log_lines(self, label: str, *needles: str, limit: int = 8) -> list[str]:
        """The last ``limit`` lines of a process log that contain any of ``needles``."""
        try:
            lines = self.procs[label].log_path.read_text(errors="replace").splitlines()
        except OSError:
            return []
        hits = [line for line in lines if any(n in line for n in needles)]
        return hits[-limit:]


# ---------------------------------------------------------------------------- observers

def uid_parts(event_uid: str) -> tuple[int, int, int] | None:
    """``room:hand:index`` -> its three numbers (None for anything else)."""
    try:
        room, hand, index = event_uid.split(":")
        return int(room), int(hand), int(index)
    except ValueError:
        return None


class Observer:
    """Subscribes to every room's public events and every user's inbox, one connection per
    NATS node (a killed node costs no observation), and keeps per room the arrival times of
    its events and the hands that started."""

    def __init__(self, cluster: EmbeddedNatsCluster) -> None:
        self.cluster = cluster
        self.conns: list[Any] = []
        self.times: dict[int, list[float]] = defaultdict(list)
        self.hands: set[tuple[int, int]] = set()
        self.hand_ends: dict[tuple[int, int], float] = {}   # (room, hand) -> its hand-over seen
        # room -> the newest position (index, part) seen: a message from before it is late
        # (e.g. sent from a frozen table's buffer once continued), not a sign of life
        self.newest: dict[int, tuple[int, int]] = {}
        self.messages = 0
        self.nc: Any = None       # a general connection (KV, stream info) to every node
        self.js: Any = None

    async def start(self) -> None:
        for i, url in enumerate(self.cluster.url_list):
            # pinned to its node first; after a kill it reconnects to any other
            nc = await nats.connect([url], name=f"chaos-observer-{i}", max_reconnect_attempts=-1,
                                    reconnect_time_wait=0.2, connect_timeout=2)
            await nc.subscribe("room.*.events", cb=self._on_events)
            await bus.sync(nc)
            self.conns.append(nc)
        self.nc = await nats.connect(self.cluster.url_list, name="chaos-probe",
                                     max_reconnect_attempts=-1, reconnect_time_wait=0.2,
                                     connect_timeout=2)
        self.js = self.nc.jetstream(timeout=3)

    async def close(self) -> None:
        for nc in [*self.conns, self.nc]:
            if nc is not None:
                with contextlib.suppress(Exception):
                    await nc.close()

    def _seen(self, room: int, uid: str, at: float, late: bool = False) -> None:
        self.messages += 1
        parts = uid_parts(uid) if uid else None
        if parts is not None:
            room = room or parts[0]
            if parts[1] > 0:
                self.hands.add((parts[0], parts[1]))
        if room and not late:
            times = self.times[room]
            if not times or at >= times[-1]:
                times.append(at)
            else:
                bisect.insort(times, at)

    async def _on_events(self, msg: Any) -> None:
        """One room message (table_pb2.RoomEvents): every frame in it, public or private."""
        at = now()
        try:
            room = int(msg.subject.split(".")[1])
            events = table_pb2.RoomEvents.FromString(msg.data)
        except Exception:
            return
        position = (events.index, events.part)
        late = position < self.newest.get(room, position)
        if not late:
            self.newest[room] = position
        for frame in events.frames:
            self._seen(room, frame.event_uid, at, late)
            parts = uid_parts(frame.event_uid) if frame.event_uid else None
            if parts is not None and parts[1] > 0 and frames.hand_over_data(frame) is not None:
                self.hand_ends.setdefault((room, parts[1]), at)
        for private in events.private:
            self._seen(room, private.frame.event_uid, at, late)

    def next_event(self, room: int, after: float) -> float | None:
        times = self.times.get(room, [])
        i = bisect.bisect_right(times, after)
        return times[i] if i < len(times) else None

    def last_event(self, room: int) -> float | None:
        times = self.times.get(room)
        return times[-1] if times else None

    async def room_owners(self) -> dict[int, str]:
        """room id -> owning table instance, from the ``rooms`` bucket."""
        kv = await self.js.key_value(bus.ROOMS_BUCKET)
        try:
            keys = await kv.keys()
        except NoKeysError:   # any other failure (a timeout while a node catches up) is
            return {}         # raised, and the caller asks again
        owners: dict[int, str] = {}
        for key in keys:
            with contextlib.suppress(Exception):
                entry = await kv.get(key)
                owners[int(key)] = RoomEntry.decode(entry.value or b"").owner
        return owners

    async def max_age(self, stream: str) -> float | None:
        """A stream's max age in seconds (a KV bucket's TTL); None if unknown."""
        with contextlib.suppress(Exception):
            info = await self.js.stream_info(stream)
            return float(info.config.max_age or 0)
        return None

    async def replicas(self) -> dict[str, tuple[int, int]]:
        """stream -> (configured replicas, peers in the raft group now)."""
        out: dict[str, tuple[int, int]] = {}
        for name in STREAMS:
            try:
                info = await self.js.stream_info(name)
            except Exception:
                out[name] = (0, 0)
                continue
            peers = 1 + len(info.cluster.replicas or []) if info.cluster else 1
            out[name] = (int(info.config.num_replicas or 1), peers)
        return out


# ---------------------------------------------------------------------------- robots

class TimedRobot(Robot):
    """A robot that notes when each prompt arrived (the player side of a recovery)."""

    def __init__(self, *args: Any, home: int = 0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.home = home
        self.prompt_times: list[float] = []
        self.error_times: list[tuple[float, str]] = []   # (when, refused action)
        self.ended_at: float | None = None

    async def run(self, max_hands: int = 0) -> RobotStats:
        try:
            return await super().run(max_hands)
        finally:
            self.ended_at = now()

    async def _answer(self, frame: client_pb2.ServerFrame) -> None:
        self.prompt_times.append(now())
        known = len(self.stats.errors)
        await super()._answer(frame)
        self.error_times.extend((now(), err) for err in self.stats.errors[known:])


@dataclass
class RoomRun:
    game: str
    lane: int
    first_uid: int
    hands: int
    room_id: int = 0
    robots: list[TimedRobot] = field(default_factory=list)
    results: list[RobotStats] = field(default_factory=list)
    failure_times: list[tuple[float, str]] = field(default_factory=list)  # robots that raised
    started: float = 0.0
    ended: float | None = None
    create_error: str = ""
    timed_out: bool = False

    def live_at(self, t: float) -> bool:
        return bool(self.room_id) and self.started <= t and (self.ended is None or self.ended > t)

    def hands_ahead(self) -> bool:
        """A hand is still to be dealt after the one in play (no robot here has played
        all but the last), so a fault struck now meets play after it too."""
        return self.ended is None and all(r.stats.hands < self.hands - 1 for r in self.robots)

    def prompts(self, homes: set[int] | None = None) -> list[float]:
        """When the robots (homed on ``homes``, default all) got their prompts, sorted."""
        return sorted(t for robot in self.robots if homes is None or robot.home in homes
                      for t in robot.prompt_times)

    def next_prompt(self, after: float, homes: set[int] | None = None) -> float | None:
        times = self.prompts(homes)
        i = bisect.bisect_right(times, after)
        return times[i] if i < len(times) else None


# ---------------------------------------------------------------------------- plan, result

@dataclass(frozen=True)
class ChaosPlan:
    faults: tuple[str, ...] = FAULT_KINDS
    repeat: int = 1                    # the whole fault list, this many times
    lanes_per_game: int = 1            # rooms of each game in play at once
    hands_per_room: int = 3
    # short timers: a seat whose player is away is timed out and entrusted quickly
    room_options: tuple[tuple[str, float], ...] = (("turn_seconds", 3), ("window_seconds", 1.5),
                                                   ("alone_seconds", 3))
    warmup_seconds: float = 3.0        # play before the first fault
    settle_seconds: float = 2.0        # play between one fault's recovery and the next fault
    recovery_bound: float = 60.0       # how long to wait for the affected rooms to move again
    nats_down_seconds: float = 2.0     # a killed nats node stays down this long after recovery
    freeze_seconds: float = 8.0        # a frozen table (SIGSTOP) stays so this long (4 leases)
    postgres_down_seconds: float = 1.0  # the database, between its stop and its start
    roll_at_most: int = 0              # a rolling restart stops this many replicas (0: all)
    finish_bound: float = 240.0        # after the faults, for every room to play to its end
    room_bound: float = 420.0          # one room, from creation to its end
    stack: StackSpec = field(default_factory=StackSpec)


# the compact run of ``make test`` (tests/cluster/test_chaos.py; bench_chaos --quick): one
# room of each game at a time, three hands each, every fault once, a rolling restart of one
# replica of each kind (the busiest table, the leader of the most rooms' logs)
COMPACT_PLAN = ChaosPlan(lanes_per_game=1, hands_per_room=3, warmup_seconds=3.0,
                         settle_seconds=1.5, recovery_bound=45.0, finish_bound=150.0,
                         roll_at_most=1)


@dataclass
class FaultRecord:
    kind: str
    target: str
    at: float
    rooms: list[int]                       # rooms in play at the fault
    homes: set[int] | None = None          # lobby faults: the robots homed on that lobby
    notes: list[str] = field(default_factory=list)
    error: str = ""                        # the harness could not carry the fault out
    until: float = 0.0                     # when the fault was over (restarted, recovered)
    # room -> seconds (None: the room never had an event / prompt again):
    recovery: dict[int, float | None] = field(default_factory=dict)  # fault -> next event
    pause: dict[int, float | None] = field(default_factory=dict)     # longest silence
    player: dict[int, float | None] = field(default_factory=dict)    # longest prompt gap
    # lobby faults: robots of that lobby that neither played again nor saw their room end
    players_lost: list[str] = field(default_factory=list)
    # hands that ended from the fault until the settle time after it: hand over -> its row in
    # SQL (records' write), seconds
    settle_lag: list[float] = field(default_factory=list)
    # NATS faults: stream -> seconds from the fault until a new leader of that stream was
    # seen (the broker's own election, against which the rooms' pauses are set)
    election: dict[str, float] = field(default_factory=dict)


@dataclass
class Verdict:
    rooms: int = 0
    rooms_finished: int = 0
    unfinished: list[str] = field(default_factory=list)
    hands_started: int = 0
    hands_settled: int = 0
    lost: list[str] = field(default_factory=list)
    doubled: list[str] = field(default_factory=list)
    lost_keys: set[tuple[int, int]] = field(default_factory=set)      # (room, hand)
    doubled_keys: set[tuple[int, int]] = field(default_factory=set)
    gave_up_at: list[float] = field(default_factory=list)   # when each of those robots ended
    not_zero_sum: list[str] = field(default_factory=list)
    leaks: list[str] = field(default_factory=list)
    frames_checked: int = 0
    gave_up: list[str] = field(default_factory=list)
    away_at_end: list[str] = field(default_factory=list)   # came back after the room ended
    refused: list[str] = field(default_factory=list)        # errors other than stale/transient
    stale: int = 0
    transient: Counter[str] = field(default_factory=Counter)
    create_failures: list[str] = field(default_factory=list)
    create_failed_at: list[float] = field(default_factory=list)
    reconnect_storms: list[str] = field(default_factory=list)
    replicas: dict[str, tuple[int, int]] = field(default_factory=dict)
    not_r3: list[str] = field(default_factory=list)


@dataclass
class ChaosResult:
    plan: ChaosPlan
    stack_started_in: float = 0.0
    duration: float = 0.0
    faults: list[FaultRecord] = field(default_factory=list)
    rooms: list[RoomRun] = field(default_factory=list)
    verdict: Verdict = field(default_factory=Verdict)
    logs: dict[str, list[str]] = field(default_factory=dict)   # label -> notable lines
    start_failures: list[str] = field(default_factory=list)    # first starts that failed
    tmp: Path | None = None


def election_note(streams: list[str], election: dict[str, float], since: str) -> str:
    """When each of ``streams`` had a new leader (``FaultRecord.election``), for the notes."""
    return "new leader elected " + ", ".join(
        f"{name} {election[name]:.1f} s" if name in election else f"{name} never"
        for name in streams) + f" after {since}"


def quantile(values: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values``, interpolated between the nearest ranks."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    pos = q * (len(ordered) - 1)
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


# ---------------------------------------------------------------------------- the run

class ChaosRun:
    def __init__(self, stack: ClusterStack, plan: ChaosPlan) -> None:
        self.stack = stack
        self.plan = plan
        self.observer = Observer(stack.nats)
        self.rooms: list[RoomRun] = []
        self.faults: list[FaultRecord] = []
        self.stop_lanes = asyncio.Event()
        self.lanes: list[asyncio.Task[None]] = []
        self.in_sql: dict[tuple[int, int], float] = {}    # (room, hand) -> first seen in SQL

    # -- robots ----------------------------------------------------------------------------
    def robot_address(self, home: int) -> Any:
        addresses = self.stack.lobby_addresses
        if ROBOTS_TAKE_ADDRESS_LISTS:  # their home lobby first, the others to fail over to
            return addresses[home:] + addresses[:home]
        return addresses[home]

    async def play_room(self, run: RoomRun) -> None:
        """One room: the creator makes it, three robots join it, all play to its end. A
        robot that raises is noted when it does (with the time, for the fault it follows);
        a room that cannot start (a joiner failed) is given up after a short wait; when the
        lane is cancelled (the run's bound) every robot task goes with it."""
        lobbies = len(self.stack.lobby_addresses)
        options = json.dumps(dict(self.plan.room_options))
        create = {"base_score": 1, "total_hands": run.hands, "options_json": options}
        home = run.lane % lobbies
        creator = TimedRobot(self.robot_address(home), run.first_uid, run.game, SECRET,
                             create=create, home=home)
        run.robots.append(creator)
        run.started = now()
        tasks: list[asyncio.Task[RobotStats]] = []

        def start(robot: TimedRobot) -> asyncio.Task[RobotStats]:
            task = asyncio.create_task(robot.run())

            def done(t: asyncio.Task[RobotStats]) -> None:
                if not t.cancelled() and t.exception() is not None:
                    run.failure_times.append((now(), f"robot {robot.user_id} "
                                              f"{'(seated)' if robot.seated.is_set() else '(never seated)'}: "
                                              f"{t.exception()!r}"))
            task.add_done_callback(done)
            tasks.append(task)
            return task

        try:
            try:
                run.room_id = await room_of(creator, start(creator), 30.0)
            except RuntimeError as exc:
                run.create_error = str(exc)
                return
            for seat in (1, 2, 3):
                home = (run.lane + seat) % lobbies
                robot = TimedRobot(self.robot_address(home), run.first_uid + seat, run.game,
                                   SECRET, room_id=run.room_id, home=home)
                run.robots.append(robot)
                start(robot)
            deadline = now() + self.plan.room_bound
            pending = set(tasks)
            while pending and now() < deadline:
                _, pending = await asyncio.wait(pending, timeout=deadline - now(),
                                                return_when=asyncio.FIRST_COMPLETED)
                unseated = [r for r, t in zip(run.robots, tasks, strict=True)
                            if t.done() and not r.seated.is_set()]
                if unseated and pending:   # the room cannot start without them
                    await asyncio.wait(pending, timeout=5.0)
                    run.timed_out = any(not t.done() for t in tasks)
                    break
            run.timed_out = run.timed_out or any(not t.done() for t in tasks)
        finally:
            await self._cancel(tasks, run)
            run.results = [r.stats for r in run.robots]
            run.ended = now()

    async def _cancel(self, tasks: list[asyncio.Task[RobotStats]], run: RoomRun) -> None:
        """Cancel the robots still running, again every 0.2 s (a cancellation can be
        swallowed by the code it lands in); one still running after 10 s is noted and left
        behind, never waited for."""
        pending = {t for t in tasks if not t.done()}
        deadline = now() + 10.0
        while pending and now() < deadline:
            for task in pending:
                task.cancel()
            _, pending = await asyncio.wait(pending, timeout=0.2)
        for robot, task in zip(run.robots, tasks, strict=False):
            if task in pending:
                run.failure_times.append((now(), f"robot {robot.user_id}: did not stop when "
                                          "cancelled for 10 s (its task is left behind)"))
                log.warning("robot %d did not stop when cancelled", robot.user_id)

    async def lane(self, game: str, lane: int) -> None:
        n = 0
        while not self.stop_lanes.is_set():
            run = RoomRun(game, lane, 200_000 + lane * 10_000 + n * 4, self.plan.hands_per_room)
            self.rooms.append(run)
            await self.play_room(run)
            n += 1
            if run.create_error:
                await asyncio.sleep(1.0)

    def in_flight(self, window: float = 3.0) -> list[int]:
        """Rooms in play now that had an event in the last ``window`` seconds."""
        t = now()
        out = []
        for run in self.rooms:
            last = self.observer.last_event(run.room_id) if run.room_id else None
            if run.live_at(t) and last is not None and t - last <= window:
                out.append(run.room_id)
        return out

    async def wait_in_flight(self, bound: float = 30.0) -> list[int]:
        """Wait until most lanes have a room in play (hands in flight); bounded."""
        want = max(1, len(self.lanes) * 2 // 3)
        deadline = now() + bound
        while now() < deadline:
            rooms = self.in_flight()
            if len(rooms) >= want:
                return rooms
            await asyncio.sleep(0.2)
        return self.in_flight()

    def run_of(self, room: int) -> RoomRun | None:
        return next((r for r in self.rooms if r.room_id == room), None)

    def recovered(self, rec: FaultRecord, room: int, after: float) -> bool:
        run = self.run_of(room)
        if run is None or run.ended is not None:
            # the room ended: after the fault, for good or not (the verdict says which);
            # before it (its end was on its way as the fault struck), it was not hit, and
            # the record drops it (finish below)
            return True
        if self.observer.next_event(room, after + EPSILON) is None:
            return False
        if rec.homes is not None:  # a lobby fault: the robots there must play again
            if all(r.ended_at is not None for r in run.robots if r.home in rec.homes):
                return True    # they all ended (gave up, or the room is over)
            return run.next_prompt(after + EPSILON, rec.homes) is not None
        return True

    async def wait_recovered(self, rec: FaultRecord, after: float | None = None) -> float:
        """Wait until every room ``rec`` hit had an event after ``after`` (default: the
        fault), or ended; bounded by the plan. Returns the seconds since the fault."""
        after = rec.at if after is None else after
        deadline = now() + self.plan.recovery_bound
        while now() < deadline:
            if all(self.recovered(rec, room, after) for room in rec.rooms):
                return now() - rec.at
            await asyncio.sleep(0.1)
        stuck = [room for room in rec.rooms if not self.recovered(rec, room, after)]
        rec.notes.append(f"rooms {stuck} did not move within {self.plan.recovery_bound:g} s")
        return now() - rec.at

    # -- faults ----------------------------------------------------------------------------
    async def _owners(self) -> dict[int, str]:
        for _ in range(20):
            try:
                return await self.observer.room_owners()
            except Exception:
                await asyncio.sleep(0.25)
        return {}

    async def fault_nats_leader(self) -> list[FaultRecord]:
        leaders = await self._room_log_leaders()
        in_play = await self.wait_in_flight()
        # the leader of the stream holding the most rooms in play (so that the fault hits some)
        per_stream = Counter(bus.room_log_stream(r) for r in in_play)
        busiest = max(bus.ROOM_LOG_STREAMS, key=lambda name: per_stream[name])
        leader = leaders.get(busiest)
        if not leader:
            return [FaultRecord("nats-leader", "?", now(), [],
                                error=f"no {busiest} leader found")]
        led = sorted(name for name, node in leaders.items() if node == leader)
        i = self.stack.nats.index_of(leader)
        rooms = [r for r in in_play if bus.room_log_stream(r) in led]
        settle = consumer = ""
        with contextlib.suppress(Exception):   # whether the settlements wait for an election
            settle = await stream_leader(self.observer.js, bus.SETTLE_STREAM)
        with contextlib.suppress(Exception):   # records' consumer is a Raft group of its own
            info = await self.observer.js.consumer_info(bus.SETTLE_STREAM, "records")
            consumer = info.cluster.leader if info.cluster else ""
        rec = FaultRecord("nats-leader", f"{leader} (leader of {', '.join(led)})", now(), rooms,
                          notes=[f"room-log leaders before: {leaders}",
                                 f"{len(rooms)} of {len(in_play)} rooms in play had their "
                                 f"log on a stream it led",
                                 f"{bus.SETTLE_STREAM} led by {settle or '?'}, its consumer "
                                 f"records by {consumer or '?'}"])
        await asyncio.to_thread(self.stack.nats.kill, i)
        elections = asyncio.create_task(self._elections(led, leader, rec.at))
        took = await self.wait_recovered(rec)
        rec.election = await elections
        with contextlib.suppress(Exception):
            rec.notes.append("room-log leaders after: " + str({
                name: await stream_leader(self.observer.js, name) for name in led}))
        rec.notes.append(election_note(led, rec.election, "the kill"))
        rec.notes.append(f"rooms moved again {took:.1f} s after the kill")
        await asyncio.sleep(self.plan.nats_down_seconds)
        started = now()
        try:
            await asyncio.to_thread(self.stack.nats.start_node, i)
            await self.stack.nats.wait_healthy(i, timeout=60)
            rec.notes.append(f"{leader} back and current {now() - started:.1f} s after its restart")
        except Exception as exc:
            rec.error = f"{leader} did not come back: {exc!r}"
        return [rec]

    async def _elections(self, streams: list[str], old: str, since: float,
                         within: float = 30.0, js: Any = None) -> dict[str, float]:
        """Seconds from ``since`` until each of ``streams`` is led by a node other than
        ``old`` (the broker's own leader election), asked every 0.1 s (of ``js``, by default
        the observer's); a stream still without a new leader after ``within`` seconds is
        left out."""
        js = js or self.observer.js
        out: dict[str, float] = {}

        async def ask(name: str) -> None:
            leader = None
            with contextlib.suppress(Exception):   # no leader yet, or the observer reconnecting
                leader = await asyncio.wait_for(stream_leader(js, name), 0.25)
            if leader and leader != old:
                out[name] = now() - since

        while len(out) < len(streams) and now() - since < within:
            # each stream asked at once: an unanswered question costs its 0.25 s once a round
            await asyncio.gather(*(ask(name) for name in streams if name not in out))
            await asyncio.sleep(0.1)
        return out

    async def _busiest_table(self) -> tuple[str | None, list[int], str]:
        """The table owning the most rooms in play, its rooms in play, and what was seen
        (for the error when no owner is found)."""
        rooms = await self.wait_in_flight()
        owners = await self._owners()
        per_table = Counter(owners.get(r, "") for r in rooms)
        per_table.pop("", None)
        label = next((t for t, _ in per_table.most_common() if self.stack.table_label(t)), None)
        return label, [r for r in rooms if owners.get(r) == label], f"{rooms} {owners}"

    async def fault_table_kill(self) -> list[FaultRecord]:
        label, mine, seen = await self._busiest_table()
        if label is None:
            return [FaultRecord("table-kill", "?", now(), [],
                                error=f"no owner of rooms in play found ({seen})")]
        ttl = await self.observer.max_age("KV_tables")
        rec = FaultRecord("table-kill", f"{label} (owned {len(mine)} rooms in play)", now(), mine,
                          notes=[f"tables bucket TTL {ttl:g} s" if ttl else "tables TTL unknown"])
        await self.stack.kill(label)
        took = await self.wait_recovered(rec)
        after = await self._owners()
        rec.notes.append(f"its rooms moved to {sorted({after.get(r, '?') for r in mine})} and "
                         f"played again {took:.1f} s after the kill")
        try:
            rec.notes.append(f"{label} restarted in {await self.stack.restart(label):.1f} s")
        except Exception as exc:
            rec.error = f"{label} did not restart: {exc!r}"
        return [rec]

    async def fault_table_freeze(self) -> list[FaultRecord]:
        """SIGSTOP the busiest table for ``freeze_seconds`` (several leases: a long pause, a
        stopped VM), then SIGCONT. Its rooms move to the other tables while it is frozen;
        continued, it writes and sends nothing for the rooms it lost (services/table/lease.py,
        "Fencing"), which the run's checks (each hand once, zero-sum, no leak) would see."""
        label, mine, seen = await self._busiest_table()
        proc = self.stack.procs[label].proc if label is not None else None
        if label is None or proc is None:
            return [FaultRecord("table-freeze", "?", now(), [],
                                error=f"no owner of rooms in play found ({seen})")]
        freeze = self.plan.freeze_seconds
        rec = FaultRecord("table-freeze", f"{label} (owned {len(mine)} rooms in play, "
                                          f"frozen {freeze:g} s)", now(), mine)
        os.kill(proc.pid, signal.SIGSTOP)
        try:
            took = await self.wait_recovered(rec)
            rec.notes.append(f"its rooms moved to "
                             f"{sorted({(await self._owners()).get(r, '?') for r in mine})} "
                             f"and played again {took:.1f} s after the freeze")
            await asyncio.sleep(max(0.0, freeze - (now() - rec.at)))
        finally:
            os.kill(proc.pid, signal.SIGCONT)
        rec.until = now()
        await asyncio.sleep(2.0)
        rec.notes.append(f"{label} continued after {rec.until - rec.at:.1f} s; "
                         f"{'still running' if proc.poll() is None else 'exited'} 2 s later")
        return [rec]

    def _homes_in_play(self, rooms: list[int]) -> Counter[int]:
        homes: Counter[int] = Counter()
        for room in rooms:
            run = self.run_of(room)
            if run is not None:
                homes.update(r.home for r in run.robots)
        return homes

    async def fault_lobby_kill(self) -> list[FaultRecord]:
        rooms = await self.wait_in_flight()
        homes = self._homes_in_play(rooms)
        home = homes.most_common(1)[0][0] if homes else 0
        label = self.stack.of("lobby")[home]
        affected = [r for r in rooms if any(x.home == home for x in self.run_of(r).robots)]  # type: ignore[union-attr]
        rec = FaultRecord("lobby-kill", f"{label} ({homes.get(home, 0)} seated robots)", now(),
                          affected, homes={home})
        await self.stack.kill(label)
        await asyncio.sleep(1.0)
        try:
            rec.notes.append(f"{label} restarted in {await self.stack.restart(label):.1f} s")
        except Exception as exc:
            rec.error = f"{label} did not restart: {exc!r}"
        took = await self.wait_recovered(rec)
        rec.notes.append(f"its players got a prompt again {took:.1f} s after the kill")
        return [rec]

    async def _kill_replica(self, kind: str, label: str) -> list[FaultRecord]:
        rooms = await self.wait_in_flight()
        rec = FaultRecord(kind, label, now(), rooms)
        await self.stack.kill(label)
        took = await self.wait_recovered(rec)
        rec.notes.append(f"rooms moved again {took:.1f} s after the kill")
        await asyncio.sleep(1.0)
        try:
            rec.notes.append(f"{label} restarted in {await self.stack.restart(label):.1f} s")
        except Exception as exc:
            rec.error = f"{label} did not restart: {exc!r}"
        return [rec]

    async def fault_arbiter_kill(self) -> list[FaultRecord]:
        return await self._kill_replica("arbiter-kill", self.stack.of("arbiter")[0])

    async def fault_records_kill(self) -> list[FaultRecord]:
        label = self.stack.of("records")[0]
        records = await self._kill_replica("records-kill", label)
        rec = records[0]
        caught_up = await self._settlements_caught_up(self.plan.recovery_bound)
        rec.notes.append("settlements all acknowledged again "
                         + (f"{caught_up - rec.at:.1f} s after the kill" if caught_up
                            else f"not within {self.plan.recovery_bound:g} s"))
        return records

    async def fault_postgres_restart(self) -> list[FaultRecord]:
        """The database stopped (``pg_ctl stop -m fast``: sessions cut) and started again
        after ``postgres_down_seconds``, as a restart or a failover of the primary does: play
        goes on, settlements wait in JetStream and are written when it is back."""
        rooms = await self.wait_in_flight()
        rec = FaultRecord("postgres-restart", "postgresql", now(), rooms)
        server = self.stack.db.server
        if server is None:
            rec.error = "needs the run's own PostgreSQL (a shared server is never restarted)"
            return [rec]
        await asyncio.to_thread(server.halt)
        down = now()
        await asyncio.sleep(self.plan.postgres_down_seconds)
        await asyncio.to_thread(server.resume)
        rec.until = now()
        rec.notes.append(f"PostgreSQL stopped in {down - rec.at:.1f} s, down for "
                         f"{rec.until - down:.1f} s")
        caught_up = await self._settlements_caught_up(self.plan.recovery_bound)
        rec.notes.append("settlements all acknowledged again "
                         + (f"{caught_up - rec.until:.1f} s after its start" if caught_up
                            else f"not within {self.plan.recovery_bound:g} s"))
        return [rec]

    async def _settlements_caught_up(self, bound: float) -> float | None:
        """When the records consumer had nothing pending or unacknowledged (None: not in
        ``bound`` seconds)."""
        deadline = now() + bound
        while now() < deadline:
            with contextlib.suppress(Exception):
                info = await self.observer.js.consumer_info(bus.SETTLE_STREAM, "records")
                if not info.num_pending and not info.num_ack_pending:
                    return now()
            await asyncio.sleep(0.25)
        return None

    def _rolled(self, labels: list[str]) -> list[str]:
        return labels[:self.plan.roll_at_most or None]

    async def _rolling(self, kind: str, labels: list[str]) -> list[FaultRecord]:
        """SIGTERM each replica in turn, as Kubernetes rolls a Deployment: wait for its exit
        (its drain), start it again and wait for SERVING. The rooms in play are those hit (a
        table's own, a lobby's players'; every room for the stateless arbiter and records)."""
        out = []
        drain = self.plan.stack.drain_seconds + 15.0
        for label in labels:
            rooms = await self.wait_in_flight()
            homes: set[int] | None = None
            if kind == "rolling-tables":
                deadline = now() + 8.0   # a table with a room in play, if one comes soon
                while True:
                    owners = await self._owners()
                    affected = [r for r in rooms if owners.get(r) == label]
                    if affected or now() >= deadline:
                        break
                    await asyncio.sleep(0.25)
                    rooms = self.in_flight()
            elif kind == "rolling-lobbies":
                home = self.stack.of("lobby").index(label)
                affected = [r for r in rooms
                            if any(x.home == home for x in self.run_of(r).robots)]  # type: ignore[union-attr]
                homes = {home}
            else:
                affected = rooms
            rec = FaultRecord(kind, f"{label} (SIGTERM, {len(affected)} rooms in play)", now(),
                              affected, homes=homes)
            out.append(rec)
            code, took = await self.stack.terminate(label, drain)
            exited = now()
            rec.notes.append(f"{label} exited with {code} after {took:.1f} s")
            if code not in (0, -signal.SIGTERM):
                rec.error = f"{label} exited with {code} after SIGTERM (killed after {drain:g} s?)"
            try:
                rec.notes.append(f"{label} SERVING again {await self.stack.restart(label):.1f} s "
                                 "after its start")
            except Exception as exc:
                rec.error = f"{label} did not restart: {exc!r}"
                continue
            took = await self.wait_recovered(rec, after=exited)
            rec.notes.append(f"its rooms played on; all moved {took:.1f} s after the SIGTERM")
            rec.until = now()
            await asyncio.sleep(self.plan.settle_seconds / 2)
        return out

    async def fault_rolling_tables(self) -> list[FaultRecord]:
        """Every table (or the busiest ones first, for ``roll_at_most``)."""
        owners = await self._owners()
        in_play = Counter(owners.get(r, "") for r in self.in_flight())
        labels = sorted(self.stack.of("table"), key=lambda t: -in_play[t])
        return await self._rolling("rolling-tables", self._rolled(labels))

    async def fault_rolling_lobbies(self) -> list[FaultRecord]:
        return await self._rolling("rolling-lobbies", self._rolled(self.stack.of("lobby")))

    async def fault_rolling_arbiters(self) -> list[FaultRecord]:
        return await self._rolling("rolling-arbiters", self._rolled(self.stack.of("arbiter")))

    async def fault_rolling_records(self) -> list[FaultRecord]:
        return await self._rolling("rolling-records", self._rolled(self.stack.of("records")))

    async def _room_log_leaders(self) -> dict[str, str | None]:
        leaders: dict[str, str | None] = {}
        for _ in range(40):
            with contextlib.suppress(Exception):
                leaders = {name: await stream_leader(self.observer.js, name)
                           for name in bus.ROOM_LOG_STREAMS}
            if leaders and all(leaders.values()):
                break
            await asyncio.sleep(0.25)
        return leaders

    async def fault_rolling_nats(self) -> list[FaultRecord]:
        """Each NATS node in turn stopped in lame-duck mode (SIGUSR2, as a rolling upgrade of
        the StatefulSet does: it hands its leaderships over, then closes its clients over
        ``lame_duck_duration``), started again, and current again before the next; the
        leader of the most rooms' logs first. Every room in play is hit."""
        nats = self.stack.nats
        leaders = await self._room_log_leaders()
        per_node = Counter(leaders[bus.room_log_stream(r)] for r in self.in_flight())
        order = sorted(range(len(nats.nodes)), key=lambda i: -per_node[nats.nodes[i].server_name])
        out = []
        for i in self._rolled([str(i) for i in order]):
            node = nats.nodes[int(i)]
            rooms = await self.wait_in_flight()
            leaders = await self._room_log_leaders()
            led = sorted(name for name, leader in leaders.items() if leader == node.server_name)
            rec = FaultRecord("rolling-nats", f"{node.server_name} (lame duck, leader of "
                              f"{', '.join(led) or 'no room log'})", now(), rooms)
            out.append(rec)
            took = await asyncio.to_thread(nats.lame_duck, int(i), 60.0)
            rec.notes.append(f"{node.server_name} exited {took:.1f} s after its lame-duck signal")
            started = now()
            try:
                await asyncio.to_thread(nats.start_node, int(i))
                await nats.wait_healthy(int(i), timeout=60)
            except Exception as exc:
                rec.error = f"{node.server_name} did not come back: {exc!r}"
                continue
            back = now()
            rec.notes.append(f"{node.server_name} back and current {back - started:.1f} s after "
                             "its start; room-log leaders after: "
                             + str(await self._room_log_leaders()))
            took = await self.wait_recovered(rec, after=back)
            rec.notes.append(f"its rooms played on; all moved {took:.1f} s after the signal")
            rec.until = now()
            await asyncio.sleep(self.plan.settle_seconds / 2)
        return out

    def fault_runner(self, kind: str) -> Callable[[], Awaitable[list[FaultRecord]]]:
        runner: Callable[[], Awaitable[list[FaultRecord]]] = getattr(
            self, "fault_" + kind.replace("-", "_"))
        return runner

    # -- the schedule ----------------------------------------------------------------------
    async def watch_sql(self, every: float = 0.25) -> None:
        """When each hand's settlement row appears in the database (polled every ``every``
        seconds: the lag is known to that much), for the settlement lag of each fault."""
        import asyncpg

        conn: Any = None
        while True:
            try:
                if conn is None:
                    conn = await asyncpg.connect(self.stack.db.dsn, timeout=3)
                rows = await conn.fetch("SELECT room_id, hand_no FROM hands WHERE hand_no > 0")
                at = now()
                for r in rows:
                    self.in_sql.setdefault((r["room_id"], r["hand_no"]), at)
            except asyncio.CancelledError:
                if conn is not None:
                    with contextlib.suppress(Exception):
                        await conn.close()
                raise
            except Exception:   # the database away for a moment: the lag shows it
                if conn is not None:
                    conn.terminate()
                conn = None
            await asyncio.sleep(every)

    async def run(self) -> list[FaultRecord]:
        await self.observer.start()
        sql_watch = asyncio.create_task(self.watch_sql())
        try:
            return await self._run()
        finally:
            sql_watch.cancel()
            await asyncio.gather(sql_watch, return_exceptions=True)

    async def _run(self) -> list[FaultRecord]:
        for g, game in enumerate(GAMES):
            for k in range(self.plan.lanes_per_game):
                lane = g * self.plan.lanes_per_game + k
                self.lanes.append(asyncio.create_task(self.lane(game, lane)))
        await asyncio.sleep(self.plan.warmup_seconds)
        for _ in range(self.plan.repeat):
            for kind in self.plan.faults:
                log.info("fault %s begins", kind)
                try:
                    records = await self.fault_runner(kind)()
                except Exception as exc:  # a harness failure is reported, the run goes on
                    log.exception("fault %s failed", kind)
                    records = [FaultRecord(kind, "?", now(), [], error=repr(exc))]
                for rec in records:
                    rec.until = rec.until or now()
                    log.info("fault %s %s: rooms %s, %s%s", rec.kind, rec.target, rec.rooms,
                             "; ".join(rec.notes), f"; ERROR {rec.error}" if rec.error else "")
                self.faults.extend(records)
                await asyncio.sleep(self.plan.settle_seconds)
        self.stop_lanes.set()
        _, pending = await asyncio.wait(self.lanes, timeout=self.plan.finish_bound)
        for task in pending:
            task.cancel()
        if pending:   # each lane's robots get 10 s to stop (play_room's _cancel)
            await asyncio.wait(pending, timeout=20.0)
        for rec in self.faults:
            self.measure(rec)
        return self.faults

    def measure(self, rec: FaultRecord) -> None:
        """Per room it hit: fault -> next event, the longest silence of its events from the
        fault until the fault was over (a SIGTERM's pause comes after the signal), and the
        longest wait for a prompt of its robots (those of the lobby, for a lobby fault); and
        the settlement lag of every hand that ended from the fault until the settle time
        after it."""
        end = rec.until + self.plan.settle_seconds
        rec.settle_lag = [self.in_sql[key] - at for key, at in self.observer.hand_ends.items()
                          if rec.at <= at <= end and key in self.in_sql]
        if rec.settle_lag:   # how many hands the lag figures stand on
            rec.notes.append(f"settle lag of the {len(rec.settle_lag)} hands ended from the "
                             f"fault to {end - rec.at:.1f} s after it: max "
                             f"{max(rec.settle_lag):.2f} s")
        for room in list(rec.rooms):
            run = self.run_of(room)
            nxt = self.observer.next_event(room, rec.at + EPSILON)
            if nxt is None and run is not None and run.robots and all(
                    saw_room_end(r) for r in run.robots):
                # it had just ended: the fault did not hit it (the robots of a lobby that
                # went at that moment may have missed its last frames and come back to no
                # room: that is not a room stuck)
                rec.rooms.remove(room)
                continue
            rec.recovery[room] = None if nxt is None else nxt - rec.at
            times = self.observer.times.get(room, [])
            rec.pause[room] = longest_gap(times, rec.at, rec.until)
            rec.player[room] = (longest_gap(run.prompts(rec.homes), rec.at, rec.until)
                                if run is not None else None)
            if run is None or rec.homes is None:
                continue
            for robot in run.robots:
                if robot.home not in rec.homes or saw_room_end(robot):
                    continue
                i = bisect.bisect_right(robot.prompt_times, rec.at + EPSILON)
                if i == len(robot.prompt_times):
                    rec.players_lost.append(f"room {room} user {robot.user_id}")
        long = [room for room, gap in rec.pause.items() if gap is not None and gap > NOTICEABLE]
        if long:   # which rooms to look for in the logs, and when (UTC, as the logs)
            wall = time.time() - now()
            said = []
            for room in long:
                gap, began = gap_at(self.observer.times.get(room, []), rec.at, rec.until) or (0, 0)
                run = self.run_of(room)
                end = ("" if run is None or run.ended is None
                       else f", room ended +{run.ended - rec.at:.1f} s")
                clock = datetime.fromtimestamp(began + wall, UTC).strftime("%H:%M:%S.%f")[:-3]
                said.append(f"{room} {gap:.2f} s from {clock} (+{began - rec.at:.1f} s{end})")
            rec.notes.append(f"rooms paused over {NOTICEABLE:g} s: " + "; ".join(said))


def saw_room_end(robot: TimedRobot) -> bool:
    """The robot's room is over for it: it got the room's last NoticeDismiss, or its stream
    ended and the login that took the session back had no seat left (the room ended while it
    was away, e.g. its lobby drained as the last hand settled)."""
    return robot.stats.closed_reason == ALL_HANDS_PLAYED or robot.stats.ended_away


def came_back_to_no_room(robot: TimedRobot) -> bool:
    """The robot's room ended while it was away: logged in again, it found no seat
    (RobotStats.ended_away), as a player would. Not a robot that gave up, nor one still
    waiting in its room when the run stopped it: that one never learnt that its room was
    over (a partition run once left two such robots waiting for 300 s, counted as "away at
    the end" by the time of their end alone)."""
    return robot.stats.closed_reason is None and robot.stats.ended_away


# ---------------------------------------------------------------------------- verdict

def since_fault(t: float, faults: list[FaultRecord]) -> str:
    """``t`` relative to the last fault before it, e.g. "2.1 s after table-kill table-b"."""
    before = [f for f in faults if f.at <= t]
    if not before:
        return "before any fault"
    f = before[-1]
    return f"{t - f.at:.1f} s after {f.kind} {f.target.split(' ')[0]}"


def classify_errors(verdict: Verdict, run: RoomRun, faults: list[FaultRecord]) -> None:
    for robot in run.robots:
        for at, err in robot.error_times:
            code = err.split(" ", 1)[0]
            if code.startswith(STALE_PREFIXES):
                verdict.stale += 1
            elif code in TRANSIENT_CODES:
                verdict.transient[code] += 1
            else:
                verdict.refused.append(f"room {run.room_id} user {robot.user_id}: {err} "
                                       f"({since_fault(at, faults)})")


async def sql_hands(db: Database, rooms: list[int]) -> tuple[list[dict[str, Any]], list[str]]:
    """The stored hands of ``rooms`` and the (room, hand) keys whose ledger is not zero-sum."""
    import asyncpg

    conn = await asyncpg.connect(db.dsn, timeout=5)
    try:
        rows = await conn.fetch("SELECT room_id, hand_no, is_final, seats, deltas, details "
                                "FROM hands WHERE room_id = ANY($1::bigint[])", rooms)
        bad = await conn.fetch("SELECT room_id, hand_no, SUM(delta) AS total FROM ledger "
                               "WHERE room_id = ANY($1::bigint[]) GROUP BY room_id, hand_no "
                               "HAVING SUM(delta) <> 0", rooms)
    finally:
        await conn.close()
    hands = [{"room_id": r["room_id"], "hand_no": r["hand_no"], "final": r["is_final"],
              "seats": json.loads(r["seats"]) if isinstance(r["seats"], str) else r["seats"],
              "deltas": json.loads(r["deltas"]) if isinstance(r["deltas"], str) else r["deltas"]}
             for r in rows]
    return hands, [f"room {r['room_id']} hand {r['hand_no']}: ledger sums to {r['total']}"
                   for r in bad]


async def wait_settled(db: Database, runs: list[RoomRun], bound: float) -> list[dict[str, Any]]:
    """Poll the database until every finished room has its hands and final record."""
    rooms = [r.room_id for r in runs if r.room_id]
    want = sum(r.hands + 1 for r in runs if r.room_id)
    deadline = now() + bound
    hands: list[dict[str, Any]] = []
    while now() < deadline:
        with contextlib.suppress(Exception):
            hands, _ = await sql_hands(db, rooms)
            if len(hands) >= want:
                break
        await asyncio.sleep(0.5)
    return hands


def hand_overs(run: RoomRun) -> dict[int, set[tuple[str, tuple[int, ...]]]]:
    """hand_no -> the distinct (event uid, deltas) of the hand-over frames the robots got."""
    out: dict[int, set[tuple[str, tuple[int, ...]]]] = defaultdict(set)
    for stats in run.results:
        for frame in stats.received:
            data = frames.hand_over_data(frame)
            parts = uid_parts(frame.event_uid) if frame.event_uid else None
            if data is None or parts is None:
                continue
            deltas = tuple(int(x) for x in data.get("deltas") or ())
            out[parts[1]].add((frame.event_uid, deltas))
    return out


async def check_leaks(records_target: str, hands: list[dict[str, Any]], runs: list[RoomRun],
                      verdict: Verdict) -> None:
    """No robot frame carries an event addressed to another seat (replays say who got what)."""
    from tests.system.test_robots_play import private_owner_map

    owners: dict[str, int | None] = {}
    seat_of: dict[tuple[int, int], int] = {}
    async with grpc.aio.insecure_channel(records_target) as channel:
        stub = records_pb2_grpc.RecordsStub(channel)
        for h in hands:
            if h["final"]:
                continue
            try:
                owners.update(await private_owner_map(stub, h["room_id"], h["hand_no"],
                                                      list(h["seats"])))
            except AssertionError as exc:
                verdict.leaks.append(f"room {h['room_id']} hand {h['hand_no']}: {exc}")
            except grpc.aio.AioRpcError as exc:
                verdict.leaks.append(f"room {h['room_id']} hand {h['hand_no']}: replay not "
                                     f"readable ({exc.code().name})")
            for seat, uid in enumerate(h["seats"]):
                seat_of[(h["room_id"], uid)] = seat
    for run in runs:
        for stats in run.results:
            for frame in stats.received:
                parts = uid_parts(frame.event_uid) if frame.event_uid else None
                if parts is None:
                    continue
                to = owners.get(frame.event_uid)
                own = seat_of.get((parts[0], stats.user_id))
                if to is not None and to != own:
                    verdict.leaks.append(f"user {stats.user_id} (seat {own}) got "
                                         f"{frame.event_uid} of seat {to}")
                verdict.frames_checked += 1


async def verify(stack: ClusterStack, run: ChaosRun, settle_bound: float = 90.0) -> Verdict:
    v = Verdict()
    runs = [r for r in run.rooms if r.room_id]
    v.rooms = len(runs)
    v.create_failures = [f"{r.game} lane {r.lane}: {r.create_error} "
                         f"({since_fault(r.started, run.faults)})"
                         for r in run.rooms if r.create_error]
    v.create_failed_at = [r.started for r in run.rooms if r.create_error]
    v.replicas = await run.observer.replicas()
    v.not_r3 = [f"{name}: {cfg} configured, {peers} peers" for name, (cfg, peers)
                in v.replicas.items() if cfg != stack.spec.replicas or peers != stack.spec.replicas]
    hands = await wait_settled(stack.db, runs, settle_bound)
    hands, v.not_zero_sum = await sql_hands(stack.db, [r.room_id for r in runs])
    stored = Counter((h["room_id"], h["hand_no"]) for h in hands)
    by_room: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for h in hands:
        by_room[h["room_id"]].append(h)
        if not h["final"] and sum(h["deltas"]) != 0:
            v.not_zero_sum.append(f"room {h['room_id']} hand {h['hand_no']}: deltas {h['deltas']}")
    ours = {r.room_id for r in runs}
    started = {(room, hand) for room, hand in run.observer.hands if room in ours}
    for r in runs:
        for stats in r.results:
            for frame in stats.received:
                parts = uid_parts(frame.event_uid) if frame.event_uid else None
                if parts is not None and parts[1] > 0 and parts[0] == r.room_id:
                    started.add((parts[0], parts[1]))
    v.hands_started = len(started)
    v.hands_settled = sum(1 for key in stored if key[1] > 0)
    for room, hand in sorted(started):
        if (room, hand) not in stored:
            v.lost.append(f"room {room} hand {hand}: started, never settled")
            v.lost_keys.add((room, hand))
    for key, n in stored.items():
        if n > 1:
            v.doubled.append(f"room {key[0]} hand {key[1]}: stored {n} times")
            v.doubled_keys.add(key)
    for r in runs:
        sql = {h["hand_no"]: tuple(h["deltas"]) for h in by_room.get(r.room_id, []) if not h["final"]}
        has_final = any(h["final"] for h in by_room.get(r.room_id, []))
        last = run.observer.last_event(r.room_id)
        complete = len(sql) == r.hands and has_final

        def away_at_end(robot: Any, complete: bool = complete) -> bool:
            return complete and came_back_to_no_room(robot)

        finished = bool(r.results) and bool(r.robots) and all(
            rb.stats.closed_reason == ALL_HANDS_PLAYED or away_at_end(rb) for rb in r.robots)
        for hand_no, seen in hand_overs(r).items():
            if len({d for _, d in seen}) > 1 or len({u for u, _ in seen}) > 1:
                v.doubled.append(f"room {r.room_id} hand {hand_no}: players saw {len(seen)} "
                                 f"different settlements {sorted(seen)}")
                v.doubled_keys.add((r.room_id, hand_no))
            for _, deltas in seen:
                if hand_no in sql and deltas and deltas != sql[hand_no]:
                    v.doubled.append(f"room {r.room_id} hand {hand_no}: players saw {deltas}, "
                                     f"records stored {sql[hand_no]}")
                    v.doubled_keys.add((r.room_id, hand_no))
            if hand_no > r.hands:
                v.doubled.append(f"room {r.room_id}: a hand {hand_no} beyond {r.hands}")
                v.doubled_keys.add((r.room_id, hand_no))
        if finished and complete:
            v.rooms_finished += 1
        else:
            v.unfinished.append(f"{r.game} room {r.room_id}: {len(sql)}/{r.hands} hands stored, "
                                f"final {'stored' if has_final else 'missing'}, robots ended "
                                f"{[s.closed_reason for s in r.results]}"
                                f"{' (timed out)' if r.timed_out else ''}")
        for robot in r.robots:
            stats = robot.stats
            if away_at_end(robot):
                v.away_at_end.append(f"{r.game} room {r.room_id} user {stats.user_id}")
                continue
            reconnects = int(getattr(stats, "reconnects", 0))
            if reconnects > RECONNECT_STORM:
                v.reconnect_storms.append(f"{r.game} room {r.room_id} user {stats.user_id}: "
                                          f"{reconnects} reconnects")
            if stats.hands < r.hands or stats.closed_reason != ALL_HANDS_PLAYED:
                ended = (since_fault(robot.ended_at, run.faults) if robot.ended_at
                         else "still running")
                v.gave_up_at.append(robot.ended_at or now())
                v.gave_up.append(
                    f"{r.game} room {r.room_id} user {stats.user_id}: {stats.hands}/{r.hands} "
                    f"hands, ended ({ended}) with {stats.closed_reason}; the room's last event "
                    f"{since_fault(last, run.faults) if last else 'never'}")
        v.gave_up.extend(f"{r.game} room {r.room_id} {f} ({since_fault(at, run.faults)})"
                         for at, f in r.failure_times)
        v.gave_up_at.extend(at for at, _ in r.failure_times)
        classify_errors(v, r, run.faults)
    await check_leaks(stack.records_target, hands, runs, v)
    return v


NOTABLE = ("ERROR", "Traceback", "exception", "moved to another table", "adopting room",
           "room rebuilt", "could not be rebuilt", "taken over", "failed")


async def run_chaos(tmp: Path, plan: ChaosPlan, db: Database | None = None) -> ChaosResult:
    """Start the stack, play and fault it as ``plan`` says, check everything, stop it."""
    own_db = db is None
    db = db or await create_database()
    stack = ClusterStack(tmp, db, plan.stack)
    result = ChaosResult(plan, tmp=tmp)
    started = now()
    chaos = ChaosRun(stack, plan)
    # the robots', their sessions' and the harness's own lines (paiju.robot, paiju.client,
    # paiju.chaos), next to the services' logs
    handler = logging.FileHandler(tmp / "robots.log")
    formatter = logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s")
    formatter.converter = time.gmtime   # UTC, as the services' "ts"
    handler.setFormatter(formatter)
    paiju_log = logging.getLogger("paiju")
    old_level = paiju_log.level
    paiju_log.addHandler(handler)
    paiju_log.setLevel(logging.INFO)
    try:
        await stack.start()
        result.stack_started_in = stack.started_in
        await chaos.run()
        result.verdict = await verify(stack, chaos)
    finally:
        result.duration = now() - started
        result.faults, result.rooms = chaos.faults, chaos.rooms
        result.start_failures = stack.start_failures
        for task in chaos.lanes:
            task.cancel()
        if chaos.lanes:
            await asyncio.wait(chaos.lanes, timeout=20.0)
        await chaos.observer.close()
        for label in stack.procs:
            result.logs[label] = stack.log_lines(label, *NOTABLE, limit=12)
        await stack.stop()
        if own_db:
            await drop_database(db)
        paiju_log.removeHandler(handler)
        paiju_log.setLevel(old_level)
        handler.close()
    return result


# ---------------------------------------------------------------------------- summaries

def last_fault_kind(t: float, faults: list[FaultRecord]) -> str | None:
    before = [f for f in faults if f.at <= t]
    return before[-1].kind if before else None


@dataclass
class KindFigures:
    """What one kind of fault did over a run (every time it was made)."""

    kind: str
    faults: int = 0
    rooms: int = 0
    pause: list[float] = field(default_factory=list)     # longest silence per room hit
    nxt: list[float] = field(default_factory=list)       # fault -> next event per room hit
    prompt: list[float] = field(default_factory=list)    # longest prompt gap per room hit
    stuck: int = 0                # rooms hit that never had an event again
    lost: int = 0                 # hands lost in the rooms hit
    doubled: int = 0              # hands doubled in the rooms hit
    settle_lag: list[float] = field(default_factory=list)   # hand over -> SQL, per hand
    election: list[float] = field(default_factory=list)     # NATS faults: per stream
    beyond: list[float] = field(default_factory=list)       # per room: pause - its election
    players_lost: int = 0         # lobby faults: players who never played again
    gave_up: int = 0              # robots that ended badly after this fault (before the next)
    create_failures: int = 0      # rooms not created after this fault (before the next)
    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def figures(result: ChaosResult) -> dict[str, KindFigures]:
    """Per fault kind, in the order first made."""
    out: dict[str, KindFigures] = {}
    v = result.verdict
    for f in result.faults:
        k = out.setdefault(f.kind, KindFigures(f.kind))
        k.faults += 1
        k.rooms += len(f.rooms)
        k.pause += [x for x in f.pause.values() if x is not None]
        k.nxt += [x for x in f.recovery.values() if x is not None]
        k.prompt += [x for x in f.player.values() if x is not None]
        k.settle_lag += f.settle_lag
        k.election += list(f.election.values())
        for room, pause in f.pause.items():
            stream = bus.room_log_stream(room)
            if pause is not None and stream in f.election:
                k.beyond.append(pause - f.election[stream])
        k.stuck += sum(1 for x in f.recovery.values() if x is None)
        k.lost += sum(1 for room, _ in v.lost_keys if room in f.rooms)
        k.doubled += sum(1 for room, _ in v.doubled_keys if room in f.rooms)
        k.players_lost += len(f.players_lost)
        if f.error:
            k.errors.append(f"{f.target}: {f.error}")
        k.notes += [f"{f.target}: {n}" for n in f.notes]
    for at in v.gave_up_at:
        kind = last_fault_kind(at, result.faults)
        if kind in out:
            out[kind].gave_up += 1
    for at in v.create_failed_at:
        kind = last_fault_kind(at, result.faults)
        if kind in out:
            out[kind].create_failures += 1
    return out


def describe(result: ChaosResult, full: bool = False) -> str:
    """A plain-text account of a run (the test prints it; assertion messages quote it);
    lists are cut at eight items unless ``full``."""
    v = result.verdict
    lines = [f"stack started in {result.stack_started_in:.1f} s; run {result.duration:.1f} s; "
             f"{v.rooms} rooms ({v.rooms_finished} finished), {v.hands_started} hands started, "
             f"{v.hands_settled} settled"]
    for f in result.faults:
        rec = sorted(x for x in f.recovery.values() if x is not None)
        gap = sorted(x for x in f.pause.values() if x is not None)
        ply = sorted(x for x in f.player.values() if x is not None)
        lines.append(f"  {f.kind:16s} {f.target}: rooms {len(f.rooms)}, next event "
                     f"{_span(rec)}, pause {_span(gap)}, prompt gap {_span(ply)}"
                     f"{'; ERROR ' + f.error if f.error else ''}")
        if f.players_lost:
            lines.append(f"      players who never played again: {f.players_lost}")
        lines.extend(f"      {n}" for n in f.notes)
    for name, items in (("lost", v.lost), ("doubled", v.doubled), ("not zero-sum", v.not_zero_sum),
                        ("leaks", v.leaks), ("unfinished", v.unfinished), ("gave up", v.gave_up),
                        ("refused", v.refused), ("create failures", v.create_failures),
                        ("reconnect storms", v.reconnect_storms),
                        ("not R3", v.not_r3)):
        if items:
            shown = items if full else items[:8]
            lines.append(f"  {name} ({len(items)}): " + ("\n      " if full else "; ").join(shown))
    if result.start_failures:
        lines.append("  failed a first start (started again): " + "; ".join(result.start_failures))
    lines.append(f"  stale refusals {v.stale}, transient {dict(v.transient)}, "
                 f"frames checked {v.frames_checked}, replicas {v.replicas}")
    return "\n".join(lines)


def _span(values: list[float]) -> str:
    if not values:
        return "-"
    return f"{values[0]:.2f}..{values[-1]:.2f} s (p50 {quantile(values, 0.5):.2f})"
