"""Capacity at human pace: ``python -m bench.bench_capacity [--quick] [--think S] [--steps N,N..]``.

Starts the stack as processes (embedded nats-server, records, arbiter, table, lobby, as the
system tests do), then load-generator processes of its own (``--procs``), each running robot
players (clients/robot) that answer every prompt after a think time (``--think`` seconds per
answer, uniform in 0.5x..1.5x; default 2 s). Tables of the three games in turn; the number of
tables ramps (``--steps``), and at each step, after a warm-up, it measures over a window:

- the action round trip a player sees (send -> the table's answer, which the lobby delivers
  after the events the action caused: docs/ordered-events.md) and action-to-last-delivery
  (send -> the last of the table's players receiving the first event the action caused);
- player actions per second; the server's CPU per action by process (from /proc: lobby,
  table, arbiter, records, nats-server; the load generator's CPU is reported apart and
  excluded), RSS per process, per connected player and per room;
- errors (refused actions other than answers the game overtook, robots that failed).

The ramp stops at the first step whose p99 action-to-last-delivery passes 100 ms or that
shows errors, or whose actions per second fall short of what the tables ask (saturation).
First, the idle cost: connected players that only send heartbeats, and the CPU they cost.
The players reach the lobby over its gRPC ``Connect`` stream, or with ``--edge ws`` over its
WebSocket (the same frames, binary; clients/ws_edge.py).
Writes bench/reports/capacity.md (`--out DIR` elsewhere).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.bench_system import Samples, process_cpu, scrape, stack_pids, value
from bench.common import REPORTS, LoadProcesses, pin, write_report
from paiju.loop import run as run_on_loop

GAMES = ("xuezhan", "changsha", "dadun")
P99_LIMIT = 0.100
HEARTBEAT = 15.0
STOP_SECONDS = 5.0    # a stopped worker waits this long for its robots to close their sessions


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def quantile(values: Sequence[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# ---------------------------------------------------------------------- load generator


class TableClock:
    """Times one table's events across its four robots (one process: one clock): the
    first new event after an action is attributed to it; its last arrival, to any of the
    robots, ends the action's delivery."""

    __slots__ = ("pending", "open")

    def __init__(self) -> None:
        self.pending: float | None = None
        self.open: dict[str, list[float]] = {}    # uid -> [action sent, last arrival]

    def sent(self, at: float) -> None:
        self.pending = at

    def arrived(self, uid: str, at: float) -> None:
        entry = self.open.get(uid)
        if entry is None:
            if self.pending is None:
                return   # not caused by a timed action (a deal, a bot's move)
            self.open[uid] = [self.pending, at]
            self.pending = None
        else:
            entry[1] = at

    def settle(self, now: float, done: list[float]) -> None:
        """Events no robot has received for a second are delivered to all who get them."""
        for uid in [u for u, (_, last) in self.open.items() if now - last > 1.0]:
            sent, last = self.open.pop(uid)
            done.append(last - sent)


@dataclass
class WorkerStats:
    actions: int = 0
    round_trips: list[float] = field(default_factory=list)
    deliveries: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    frames: int = 0
    cpu: float = 0.0
    robots: int = 0
    failed_robots: int = 0


class Worker:
    """One load-generator process: robots of many tables, timed."""

    def __init__(self, address: str, secret: str, think: float, hands: int) -> None:
        self.address, self.secret, self.think, self.hands = address, secret, think, hands
        self.stats = WorkerStats()
        self.clocks: list[TableClock] = []
        self.tasks: list[asyncio.Task[Any]] = []
        self.idle: list[Any] = []

    def _robot(self, uid: int, game: str, clock: TableClock, **kw: Any) -> Any:
        from clients.robot.robot import Robot
        from clients.session import lobby_addresses, rotated

        def on_frame(frame: Any) -> None:
            self.stats.frames += 1
            if frame.event_uid:
                clock.arrived(frame.event_uid, time.monotonic())

        def on_action(seconds: float) -> None:
            self.stats.actions += 1
            self.stats.round_trips.append(seconds)

        # robots spread over the lobbies by user id (a table's four may be on different ones)
        address = rotated(lobby_addresses(self.address), uid)
        return Robot(address, uid, game, self.secret, think=self.think, keep_frames=False,
                     on_frame=on_frame, on_send=lambda: clock.sent(time.monotonic()),
                     on_action=on_action, **kw)

    async def _run(self, robot: Any) -> bool:
        """Play ``robot`` to its end; True when its room closed (played out or dismissed)."""
        self.stats.robots += 1
        try:
            result = await robot.run()
        except Exception as exc:  # a robot that fails is an error of the step
            self.stats.failed_robots += 1
            self.stats.errors.append(repr(exc)[:200])
            return False
        self.stats.errors += result.errors   # overtaken answers are counted apart
        return result.closed_reason is not None

    async def _seat(self, base: int, game: str, clock: TableClock) -> list[asyncio.Task[bool]]:
        """A room of ``game`` made by user ``base`` and joined by the next three; their
        tasks, or none when no room was made."""
        from clients.robot.robot import room_of
        creator = self._robot(base, game, clock,
                              create={"base_score": 1, "total_hands": self.hands})
        task = asyncio.create_task(self._run(creator))
        self.tasks.append(task)
        try:
            await room_of(creator, task)  # type: ignore[arg-type]
        except RuntimeError as exc:
            self.stats.errors.append(f"no room: {exc}"[:200])
            return []
        seated = [task] + [asyncio.create_task(self._run(self._robot(
            base + i, game, clock, room_id=creator.room_id))) for i in (1, 2, 3)]
        self.tasks += seated[1:]
        return seated

    async def _again(self, base: int, game: str, clock: TableClock,
                     seated: list[asyncio.Task[bool]]) -> None:
        """When a room has played its ``hands`` and closed, the same four open the next one,
        as players do between rooms (a soak's rooms come and go, their logs purged)."""
        while seated and all(await asyncio.gather(*seated)):
            self.tasks = [t for t in self.tasks if not t.done()]
            seated = await self._seat(base, game, clock)
        if seated:   # a robot ended otherwise (its room ended while it was away): said
            self.stats.errors.append(f"table of users {base}-{base + 3} not renewed")

    async def add_tables(self, count: int, first_uid: int, first_game: int) -> int:
        made = 0
        for t in range(count):
            base = first_uid + 4 * t
            game = GAMES[(first_game + t) % len(GAMES)]
            clock = TableClock()
            self.clocks.append(clock)
            seated = await self._seat(base, game, clock)
            if seated:
                self.tasks.append(asyncio.create_task(self._again(base, game, clock, seated)))
                made += 1
        return made

    async def add_idle(self, count: int, first_uid: int) -> int:
        """Players logged in and waiting (no room): heartbeats only."""
        from clients.session import LobbySession, lobby_addresses, mint_token, rotated
        from paiju.v1 import lobby_msgs_pb2 as lm
        made = 0
        for i in range(count):
            s = LobbySession(rotated(lobby_addresses(self.address), first_uid + i),
                             keep_frames=False)
            await s.open()
            reply = await s.login(mint_token(first_uid + i, self.secret), nickname=f"idle{i}")
            if reply.WhichOneof("payload") != "login_ok":
                self.stats.errors.append(f"idle login refused: {reply}"[:200])
                continue
            self.idle.append(s)
            made += 1

        async def beat() -> None:
            while True:
                await asyncio.sleep(HEARTBEAT)
                for s in list(self.idle):
                    await s.send(lm.HeartBeat())

        self.tasks.append(asyncio.create_task(beat()))
        return made

    async def drop_idle(self) -> None:
        for s in self.idle:
            await s.close()
        self.idle.clear()

    def take(self) -> WorkerStats:
        now = time.monotonic()
        for clock in self.clocks:
            clock.settle(now, self.stats.deliveries)
        out, self.stats = self.stats, WorkerStats(robots=self.stats.robots,
                                                  failed_robots=self.stats.failed_robots)
        out.cpu = time.process_time()
        return out


def worker_main(conn: Any, address: str, secret: str, think: float, hands: int) -> None:
    async def serve() -> None:
        w = Worker(address, secret, think, hands)
        loop = asyncio.get_running_loop()
        while True:
            cmd, *args = await loop.run_in_executor(None, conn.recv)
            if cmd == "tables":
                conn.send(await w.add_tables(*args))
            elif cmd == "idle":
                conn.send(await w.add_idle(*args))
            elif cmd == "drop_idle":
                await w.drop_idle()
                conn.send(0)
            elif cmd == "take":
                conn.send(w.take())
            elif cmd == "stop":
                for task in w.tasks:
                    task.cancel()
                # the robots close their sessions as they end (an HTTP client each on the
                # WebSocket edge, reported unclosed otherwise)
                if w.tasks:
                    await asyncio.wait(w.tasks, timeout=STOP_SECONDS)
                await w.drop_idle()
                conn.send(0)
                return

    run_on_loop(serve())


# ---------------------------------------------------------------------- the run


@dataclass
class Step:
    tables: int
    players: int
    seconds: float
    actions: int
    expected: float                 # actions/s the tables ask at this think time
    round_trip_p50: float
    round_trip_p99: float
    delivery_p50: float
    delivery_p99: float
    errors: list[str]
    server_cpu: dict[str, float]    # CPU seconds per process over the window
    generator_cpu: float
    rss: dict[str, float]           # MiB per process at the end of the window
    # per part: (collections, their pause in s, pauses over 50 ms) over the window
    gc: dict[str, tuple[int, float, int]] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.actions / self.seconds if self.seconds else 0.0

    def cpu_per_action_ms(self, name: str | None = None) -> float:
        cpu = sum(self.server_cpu.values()) if name is None else self.server_cpu.get(name, 0.0)
        return 1000 * cpu / self.actions if self.actions else float("nan")

    @property
    def server_cores(self) -> float:
        return sum(self.server_cpu.values()) / self.seconds if self.seconds else 0.0

    def verdict(self) -> str:
        if self.errors:
            return "errors"
        if not self.delivery_p99 <= P99_LIMIT:
            return "p99 > 100 ms"
        if self.rate < 0.8 * self.expected:
            return "saturated"
        return "ok"


class Bench(LoadProcesses):
    def __init__(self, address: str, secret: str, procs: int, think: float, hands: int) -> None:
        super().__init__(procs, worker_main, address, secret, think, hands)
        self.tables = 0
        self.next_uid = 1_000_000

    def grow(self, tables: int) -> None:
        add = tables - self.tables
        if add <= 0:
            return
        share = [add // len(self.conns) + (1 if i < add % len(self.conns) else 0)
                 for i in range(len(self.conns))]
        cmds = []
        for n in share:
            cmds.append(("tables", n, self.next_uid, self.tables))
            self.next_uid += 4 * n + 4
        made = sum(self.ask_each(cmds))
        self.tables += made

    def idle(self, players: int) -> int:
        share = players // len(self.conns)
        cmds = []
        for _ in self.conns:
            cmds.append(("idle", share, self.next_uid))
            self.next_uid += share + 1
        return sum(self.ask_each(cmds))


# a server part -> its processes (``--lobbies`` / ``--tables`` run several of a kind)
Pids = dict[str, list[int]]


def cpu_of(pids: Pids) -> dict[str, float]:
    return {name: sum(process_cpu(p) for p in group) for name, group in pids.items()}


def gc_of(ports: dict[str, list[int]]) -> dict[str, list[Samples]]:
    out = {}
    for name, group in ports.items():
        try:
            out[name] = [scrape(p) for p in group]
        except OSError:
            out[name] = []
    return out


def gc_delta(before: dict[str, list[Samples]],
             after: dict[str, list[Samples]]) -> dict[str, tuple[int, float, int]]:
    """Collections, their summed pause and the pauses over 50 ms, per part, between
    two scrapes of paiju_gc_pause_seconds (services/common/runner.py)."""
    out = {}
    for name in after:
        count = pause = long = 0.0
        for b, a in zip(before.get(name, []), after[name], strict=False):
            for g in "012":
                n = _grew(b, a, "paiju_gc_pause_seconds_count", generation=g)
                count += n
                pause += _grew(b, a, "paiju_gc_pause_seconds_sum", generation=g)
                long += n - _grew(b, a, "paiju_gc_pause_seconds_bucket", generation=g, le="0.05")
        out[name] = (int(count), pause, int(long))
    return out


def _grew(before: Samples, after: Samples, sample: str, **labels: str) -> float:
    return value(after, sample, **labels) - value(before, sample, **labels)


def measure(bench: Bench, pids: Pids, tables: int, think: float, warm: float,
            window: float, ports: dict[str, list[int]] | None = None) -> Step:
    bench.grow(tables)
    time.sleep(warm)
    bench.ask("take")                       # forget the warm-up
    before = cpu_of(pids)
    gc_before = gc_of(ports or {})
    gen_before = sum(s.cpu for s in bench.ask("take"))
    started = time.monotonic()
    time.sleep(window)
    stats = bench.ask("take")
    seconds = time.monotonic() - started
    after = cpu_of(pids)
    gc_after = gc_of(ports or {})
    trips = [x for s in stats for x in s.round_trips]
    deliveries = [x for s in stats for x in s.deliveries]
    # a table asks one action per think time (answers of a window come together, counted
    # as one: a floor, not an exact figure)
    expected = bench.tables / think
    return Step(
        tables=bench.tables, players=4 * bench.tables, seconds=seconds,
        actions=sum(s.actions for s in stats), expected=expected,
        round_trip_p50=quantile(trips, 0.5), round_trip_p99=quantile(trips, 0.99),
        delivery_p50=quantile(deliveries, 0.5), delivery_p99=quantile(deliveries, 0.99),
        errors=[e for s in stats for e in s.errors][:5],
        server_cpu={k: after[k] - before[k] for k in pids},
        generator_cpu=sum(s.cpu for s in stats) - gen_before,
        rss={name: sum(rss_mib(p) for p in group) for name, group in pids.items()},
        gc=gc_delta(gc_before, gc_after))


def idle_while_playing(bench: Bench, pids: Pids, players: int, window: float,
                       lobby_ports: list[int]) -> tuple[float, float, int, float]:
    """With the tables of the first step playing (their rooms change the room list all the
    time): server CPU per second without idle players, then with ``players`` idle ones (they
    get the room-list pushes), and the room changes relayed per second meanwhile."""
    def relayed() -> float:
        return sum(value(scrape(p), "paiju_lobby_room_changes_total", result="relayed")
                   for p in lobby_ports)

    before = cpu_of(pids)
    time.sleep(window)
    base = sum(cpu_of(pids).values()) - sum(before.values())
    made = bench.idle(players)
    time.sleep(min(5.0, window))
    before, changes = cpu_of(pids), relayed()
    time.sleep(window)
    loaded = sum(cpu_of(pids).values()) - sum(before.values())
    rate = (relayed() - changes) / window
    bench.ask("drop_idle")
    return base / window, loaded / window, made, rate


def idle_cost(bench: Bench, pids: Pids, players: int, window: float) -> tuple[float, float, int]:
    """Server CPU per second with no one connected, then with ``players`` idle players."""
    before = cpu_of(pids)
    time.sleep(window)
    base = sum(cpu_of(pids).values()) - sum(before.values())
    made = bench.idle(players)
    time.sleep(min(5.0, window))
    before = cpu_of(pids)
    time.sleep(window)
    loaded = sum(cpu_of(pids).values()) - sum(before.values())
    bench.ask("drop_idle")
    return base / window, loaded / window, made


def profile(pid: int, seconds: float) -> list[tuple[float, str]]:
    """Where one process spends its time: py-spy (when installed) sampled for ``seconds``;
    (share, function) of the functions on the most stacks, idle waits left out."""
    import shutil
    import subprocess
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(spy).exists():
        return []
    with tempfile.NamedTemporaryFile(suffix=".txt") as out:
        subprocess.run([spy, "record", "-p", str(pid), "-d", str(int(seconds)), "-f", "raw",
                        "-o", out.name, "--nonblocking"], capture_output=True, timeout=seconds + 30,
                       check=False)
        counts: dict[str, int] = {}
        total = 0
        for line in Path(out.name).read_text().splitlines():
            stack, _, n = line.rpartition(" ")
            if not stack or not n.isdigit():
                continue
            frames = stack.split(";")
            if "select (selectors.py" in frames[-1] or "wait (threading.py" in frames[-1]:
                continue   # the event loop or a thread waiting: idle
            total += int(n)
            for name in {f.split(" (")[0] + " (" + f.split(" (")[1].split(":")[0] + ")"
                         for f in frames if " (" in f and ("services/" in f or "games/" in f
                                                           or "paiju/" in f)
                         and "runner.py" not in f and "__main__.py" not in f}:
                counts[name] = counts.get(name, 0) + int(n)
    return sorted(((n / total, name) for name, n in counts.items()), reverse=True)[:15] if total else []


def ms(x: float) -> str:
    return "n/a" if x != x else f"{1000 * x:.1f}"


OBSTACLES = ["## What stands in the way of the targets, and what would remove it", "",
              "The targets (issue: 1,500 tables per server core, server CPU per action at most "
              "1.5x the bare transport) are not met. Removed so far: one write per client for "
              "the frames queued together (`Login.accept_batches`, `ServerFrame.batch`), an "
              "interval's room-list changes in one go, the arbiter over one `Decide` stream per "
              "table, short rings of recent room messages kept serialized (rings of 256 parsed "
              "messages grew the lobby and the table by about 1 MiB/s each at 300 tables, and "
              "their garbage-collection time with them), and the table's own per-record work "
              "made 1.3-1.5x cheaper (`bench/reports/table_views.md`), and the lobby's "
              "commands to tables moved from the gRPC Session stream to core NATS request/reply, "
              "their replies leaving the table in the same write as the events they caused "
              "(server CPU per action down by about a fifth, the knee from 600-700 tables to "
              "about 800; the gRPC path is gone since), "
              "and the garbage collector's pauses cut (item 3). "
              "What is left:",
              "",
              "1. **gRPC at the client edge.** About half of the lobby's busy samples are "
              "grpc.aio's callbacks and its poller thread: every message from or to a player "
              "wakes that thread, then the event loop, through a socket and the GIL. Per action "
              "the lobby handles one client read and one batched write per player of the table, "
              "the least a stream per player allows. The WebSocket front (aiohttp on the event "
              "loop alone, `--edge ws`) costs the lobby 0.2-0.4 ms less per action "
              "(capacity_ws.md against capacity_grpc.md), and the project's clients use it by "
              "default; a gRPC edge outside Python would take the rest.",
              "2. **The NATS client's socket writes at the table** (py-spy: about a sixth of the "
              "table's busy samples in its flusher's send, but `perf` puts all kernel time at "
              "8.5 % of the table's CPU: most of those samples are the process descheduled "
              "while it holds the GIL in the send, on a loaded machine): one write per awaited "
              "append, one for what follows it. A room's records cannot be appended without "
              "waiting for the "
              "previous acknowledgement: the fence (`Nats-Expected-Last-Subject-Sequence`) needs "
              "its sequence, and JetStream's `Nats-Expected-Last-Msg-Id` checks the last message "
              "of the whole stream, not of the room's subject (one stream holds every room). A "
              "flush window across rooms (one write per millisecond instead of one per wake-up) "
              "would need a change in nats-py's flusher. perf since (`cpu_profile.md`): the "
              "kernel is 4-8 % of the table's cycles and the interpreter 77-84 %, so the "
              "syscalls themselves are not the cost; a write's Python path and nats-server's "
              "wake-up are.",
              "3. **The table's garbage collector.** Dadun's candidate generation left a "
              "reference cycle behind on every call (a recursive closure), and every full pass "
              "walked the rooms' whole long-lived heap; now the engines make no cycles "
              "(`tests/unit/games/test_no_reference_cycles.py`) and each service freezes its "
              "heap out of the passes every second, with one full collection every 5 minutes "
              "(`services/common/runner.freeze_gc`). With a 10 s period a young collection "
              "walked up to 10 s of survivors (a freeze zeroes the young count, which frees "
              "of frozen objects keep low): 3-5 pauses of 50-70 ms per window at 800 tables, "
              "the p99 outliers; every second, none comes in a window. What is left is the "
              "full pass every 5 minutes (100-200 ms at 900 tables, when it falls in a "
              "window): fewer container objects per room (engine state in flat arrays), or "
              "more table processes with smaller heaps, on more cores.",
              "4. **Prompts carry the seat's whole observation as JSON** (a protocol change for "
              "clients that read `observation_json`)."]
# the last obstacle: the load generator on the servers' cores, or the servers on CPUs of
# their own (--server-cpus)
SHARED = ("5. **The load generator shares the two cores**: its robots use about half a core "
          "at the knee (the generator column); on a box of its own the server has both.")
PINNED = ("5. **Five server processes on few CPUs**: every hop of an action (lobby, nats-server, "
          "table, nats-server, lobby) waits for the CPU to come to its process, so the p99 "
          "passes 100 ms before the servers' CPUs are busy (the server cores column at the "
          "first step over the limit).")


def report(steps: list[Step], idle: tuple[float, float, int], args: argparse.Namespace,
           procs: int, knee: Step | None,
           hot: tuple[str, float, list[tuple[float, str]]] | None = None,
           busy_idle: tuple[float, float, int, float] | None = None) -> list[str]:
    base, loaded, players = idle
    names = ["lobby", "table", "arbiter", "records", "nats-server"]
    cmd = (f"`python -m bench.bench_capacity --think {args.think:g} --procs {procs} "
           f"--steps {args.steps}"
           + (f" --lobbies {args.lobbies}" if args.lobbies != 1 else "")
           + (f" --tables {args.tables}" if args.tables != 1 else "")
           + (f" --idle {args.idle}" if args.idle != 2000 else "")
           + (f" --edge {args.edge}" if args.edge != "grpc" else "")
           + (f" --server-cpus {args.server_cpus}" if args.server_cpus else "")
           + "".join(f" --env {k}={v}" for k, v in args.env) + "`")
    where = (f"runs on CPUs of its own: the servers are pinned to {args.server_cpus} of the "
             f"{os.cpu_count()} (sched_setaffinity, as taskset), the load generator and this "
             "process to the others" if args.server_cpus else
             "runs on the same cores as the server")
    lines = [
        "# Capacity at human pace",
        "",
        f"Command: {cmd}. Machine: {platform.python_implementation()} "
        f"{platform.python_version()}, {os.cpu_count()} cores; the load generator "
        f"({procs} processes of robots) {where}.",
        "",
        f"Each robot answers a prompt after {args.think:g} s (0.5x-1.5x). A step adds tables (the "
        "three games in turn), warms up, then measures. *round trip*: a player's action to the "
        "table's answer (delivered after the events it caused); *delivery*: the action to the "
        "last of its table's players receiving the first event it caused. Server CPU is the "
        "lobby, table, arbiter, records and nats-server processes from /proc; the load "
        "generator's is apart.",
        "",
        "| tables | players | actions/s (asked) | round trip p50 / p99 ms | delivery p50 / p99 ms "
        "| server cores | server CPU/action ms | generator cores | verdict |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for s in steps:
        lines.append(
            f"| {s.tables} | {s.players} | {s.rate:.0f} ({s.expected:.0f}) | "
            f"{ms(s.round_trip_p50)} / {ms(s.round_trip_p99)} | "
            f"{ms(s.delivery_p50)} / {ms(s.delivery_p99)} | {s.server_cores:.2f} | "
            f"{s.cpu_per_action_ms():.2f} | {s.generator_cpu / s.seconds:.2f} | {s.verdict()} |")
    lines += ["", "## Server CPU per action, by process (ms), and RSS", "",
              "A step that repeats the last one's number of tables measures the same load "
              "again (`--steps 300,300,300`): what grows from one to the next grows with time.",
              "",
              "| tables | " + " | ".join(names) + " | lobby / table RSS MiB |",
              "|---|" + "---|" * (len(names) + 1)]
    for s in steps:
        lines.append(f"| {s.tables} | " + " | ".join(
            f"{s.cpu_per_action_ms(n):.2f}" for n in names)
            + f" | {s.rss.get('lobby', 0):.0f} / {s.rss.get('table', 0):.0f} |")
    lines += ["", "## Garbage collection in the window", "",
              "Collections of the lobby and table processes (`paiju_gc_pause_seconds`), their "
              "summed pause, and those over 50 ms (each stops every room or session of its "
              "process).", "",
              "| tables | lobby: collections / pause ms / over 50 ms "
              "| table: collections / pause ms / over 50 ms |", "|---|---|---|"]
    for s in steps:
        cells = []
        for n in ("lobby", "table"):
            count, pause, long = s.gc.get(n, (0, 0.0, 0))
            cells.append(f"{count} / {1000 * pause:.0f} / {long}")
        lines.append(f"| {s.tables} | " + " | ".join(cells) + " |")
    last = steps[-1] if steps else None
    if last is not None:
        total_rss = sum(last.rss.values())
        lines += ["", "## Memory at the last step", "",
                  "| process | RSS MiB |", "|---|---|"]
        lines += [f"| {n} | {last.rss.get(n, 0):.0f} |" for n in names]
        lines += [f"| all | {total_rss:.0f} |", "",
                  f"Per connected player: {1024 * total_rss / max(1, last.players):.0f} KiB of "
                  f"server RSS (all processes, {last.players} players in {last.tables} rooms)."]
    lines += ["", "## Idle players", ""]
    if not players:
        lines += ["Not measured in this run (`--idle 0`)."]
    else:
        lines += [f"Server CPU with nobody connected: {1000 * base:.1f} ms/s; with {players} "
                  f"players logged in, waiting and sending a heartbeat every {HEARTBEAT:g} s: "
                  f"{1000 * loaded:.1f} ms/s, i.e. {1e6 * (loaded - base) / players:.1f} µs "
                  "of server CPU per idle player per second."]
    if busy_idle is not None and steps and players:
        from services.common.config import LobbyConfig
        b_base, b_loaded, b_players, rate = busy_idle
        lines += ["", f"While the first step's {steps[0].tables} tables play (their rooms change "
                  f"the room list: {rate:.0f} room changes relayed per second to the idle "
                  f"players, in one message per player every "
                  f"{LobbyConfig().room_change_seconds:g} s at most): "
                  f"{1000 * b_base:.1f} ms/s without idle players, "
                  f"{1000 * b_loaded:.1f} ms/s with {b_players}, i.e. "
                  f"{1e6 * (b_loaded - b_base) / max(1, b_players):.1f} µs per idle player per "
                  "second."]
    if hot:
        name, pid_seconds, rows = hot
        lines += ["", f"## Where the time goes at the knee: {name}", "",
                  f"py-spy, {pid_seconds:g} s of the busiest server process at the last step; "
                  "the share of its busy samples with each of our functions on the stack "
                  "(the rest is the gRPC, asyncio and NATS client libraries):", "",
                  "| share | function |", "|---:|---|"]
        lines += [f"| {100 * share:.0f}% | `{fn}` |" for share, fn in rows]
    lines += ["", *OBSTACLES, PINNED if args.server_cpus else SHARED]
    if knee is not None:
        per_core = knee.tables / max(knee.server_cores, 1e-9)
        pinned = (f" ({args.server_cpus} given them: {knee.tables / args.server_cpus:.0f} "
                  "tables per CPU the servers had)" if args.server_cpus else "")
        lines += ["", "## Sizing", "",
                  f"The last step within the limits: {knee.tables} tables ({knee.players} players), "
                  f"{knee.rate:.0f} actions/s, delivery p99 {ms(knee.delivery_p99)} ms, using "
                  f"{knee.server_cores:.2f} server cores{pinned}: about {per_core:.0f} tables per "
                  f"server core used at one answer per {args.think:g} s per table, "
                  f"{knee.cpu_per_action_ms():.2f} ms of server CPU per action."]
    return lines


def setting(text: str) -> tuple[str, str]:
    """A ``--env KEY=VALUE`` option."""
    key, sep, val = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE")
    return key, val


def add_env_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--env", action="append", default=[], type=setting, metavar="KEY=VALUE",
                        help="a setting of every service (e.g. PAIJU_GC_FREEZE_SECONDS=1)")


def stack_env(settings: Sequence[tuple[str, str]] = ()) -> dict[str, str]:
    """The services' settings for a load of robots: no per-IP limits (every robot comes from
    127.0.0.1), the production room-list interval, long decision timers (a robot answers
    every prompt itself) and warnings only in the logs; then ``settings`` (``--env``)."""
    from services.common.config import LobbyConfig
    limits = {f"PAIJU_LOBBY__{k}": "1000000" for k in (
        "LOGINS_PER_IP_PER_MINUTE", "CREATES_PER_IP_PER_MINUTE", "MAX_CONNECTIONS_PER_IP",
        "MAX_CONNECTIONS")}
    return {**limits, "PAIJU_LOBBY__ROOM_CHANGE_SECONDS": str(LobbyConfig().room_change_seconds),
            "PAIJU_TABLE__TURN_SECONDS": "60", "PAIJU_TABLE__WINDOW_SECONDS": "60",
            "PAIJU_TABLE__ALONE_SECONDS": "60", "PAIJU_LOG__LEVEL": "WARNING", **dict(settings)}


def more_processes(stack: Any, tmp: Path, lobbies: int, tables: int) -> list[Any]:
    """``lobbies`` more lobby and ``tables`` more table processes beside the stack's own
    (the same settings, their own ports and instance names), started and SERVING."""
    from services.common.natsd import free_port
    from tests.support.procs import make_service
    out = []
    for name, base, count in (("table", stack.table, tables), ("lobby", stack.lobby, lobbies)):
        own = {f"PAIJU_{name.upper()}__PORT", f"PAIJU_{name.upper()}__METRICS_PORT",
               "PAIJU_TABLE__INSTANCE", "PAIJU_LOBBY__WS_PORT"}
        env = {k: v for k, v in base.env.items() if k.startswith("PAIJU_") and k not in own}
        for i in range(count):
            ws = {"PAIJU_LOBBY__WS_PORT": str(free_port())} \
                if name == "lobby" and "PAIJU_LOBBY__WS_PORT" in base.env else {}
            out.append(make_service(name, stack.nats.url, tmp, **env, **ws,
                                    PAIJU_TABLE__INSTANCE=f"table-bench-{i + 2}").start())
    return out


def lobby_urls(lobbies: list[Any]) -> str:
    """The lobbies' WebSocket URLs (``--edge ws``), comma-separated."""
    return ",".join(f"ws://127.0.0.1:{p.env['PAIJU_LOBBY__WS_PORT']}/ws" for p in lobbies)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short run (2 small steps)")
    parser.add_argument("--think", type=float, default=2.0)
    parser.add_argument("--steps", default="50,100,200,300,400,600,800,1000,1500,2000,3000")
    parser.add_argument("--procs", type=int, default=0, help="load processes (0: 1 per 500 tables, 2..6)")
    parser.add_argument("--warm", type=float, default=10.0)
    parser.add_argument("--window", type=float, default=20.0)
    parser.add_argument("--idle", type=int, default=2000, help="idle players for the idle cost")
    parser.add_argument("--lobbies", type=int, default=1, help="lobby processes")
    parser.add_argument("--tables", type=int, default=1, help="table processes")
    parser.add_argument("--edge", choices=("grpc", "ws"), default="grpc",
                        help="the players' transport to the lobby: its gRPC Connect stream or "
                             "its WebSocket")
    add_env_option(parser)
    parser.add_argument("--server-cpus", type=int, default=0,
                        help="run the server processes on this many CPUs and the load "
                             "generator on the others (0: all share every CPU)")
    parser.add_argument("--out", type=Path, default=REPORTS)
    args = parser.parse_args(argv)
    cpus = sorted(os.sched_getaffinity(0))
    if args.server_cpus and not 0 < args.server_cpus < len(cpus):
        parser.error(f"--server-cpus must leave the load generator a CPU of the {len(cpus)}")
    if args.quick:
        args.steps, args.warm, args.window, args.idle = "10,20", 5.0, 8.0, 200
    steps_wanted = [int(x) for x in args.steps.split(",")]
    procs = args.procs or max(2, min(6, steps_wanted[-1] // 500))
    from tests.system.conftest import SECRET, start_stack, stop_stack
    env = stack_env(args.env)
    if args.edge == "ws":
        from services.common.natsd import free_port
        env["PAIJU_LOBBY__WS_PORT"] = str(free_port())
    with tempfile.TemporaryDirectory() as tmp:
        stack = start_stack(Path(tmp), **env)
        extra = more_processes(stack, Path(tmp), args.lobbies - 1, args.tables - 1)
        lobbies = ",".join([stack.lobby_address,
                            *(f"127.0.0.1:{p.port}" for p in extra if p.name == "lobby")])
        if args.edge == "ws":
            lobbies = lobby_urls([stack.lobby, *(p for p in extra if p.name == "lobby")])
        bench = Bench(lobbies, SECRET, procs, args.think, hands=64)
        steps: list[Step] = []
        knee: Step | None = None
        hot: tuple[str, float, list[tuple[float, str]]] | None = None
        busy_idle: tuple[float, float, int, float] | None = None
        try:
            pids = {name: [pid] for name, pid in stack_pids(stack).items()}
            for proc in extra:
                assert proc.proc is not None
                pids[proc.name].append(proc.proc.pid)
            if args.server_cpus:
                servers, generator = cpus[:args.server_cpus], cpus[args.server_cpus:]
                for pid in (p for group in pids.values() for p in group):
                    pin(pid, set(servers))
                for pid in (os.getpid(), *(p.pid for p in bench.procs)):
                    pin(pid, set(generator))
            ports = {name: [svc.metrics_port, *(p.metrics_port for p in extra if p.name == name)]
                     for name, svc in (("lobby", stack.lobby), ("table", stack.table))}
            idle = idle_cost(bench, pids, args.idle, args.window / 2)
            for n in steps_wanted:
                step = measure(bench, pids, n, args.think, args.warm, args.window, ports)
                steps.append(step)
                if busy_idle is None and args.idle:
                    busy_idle = idle_while_playing(bench, pids, args.idle, args.window / 2,
                                                   ports["lobby"])
                print(f"{step.tables} tables: {step.rate:.0f} actions/s, delivery p99 "
                      f"{ms(step.delivery_p99)} ms, {step.server_cores:.2f} server cores, "
                      f"{step.verdict()}", flush=True)
                if step.verdict() != "ok":
                    busiest = max(("lobby", "table"), key=lambda n: step.server_cpu.get(n, 0))
                    hot = (busiest, 10.0, profile(pids[busiest][0], 10.0))
                    break
                knee = step
        finally:
            bench.stop()
            for proc in extra:
                proc.stop()
            stop_stack(stack)
    write_report(args.out / "capacity.md", report(steps, idle, args, procs, knee, hot,
                                                      busy_idle))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
