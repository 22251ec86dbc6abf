"""Cold paths: ``python -m bench.bench_cold [--rooms N] [--players M] [--procs P] [--table-restart]``.

How long players wait when a table or a lobby dies under a full house (issue 25, item 5:
"a table restart adopts 1,000 rooms and has every player back at their prompt within 10 s;
a lobby restart takes 5,000 reconnecting players back within 10 s").

The stack is tests/system/conftest.py's (an embedded nats-server, records, arbiter, table
``table-sys`` and lobby A, as processes on loopback) plus a second lobby B (bench_capacity's
``more_processes``). Players are clients of clients/session.py run by load-generator
processes (``--procs``, asyncio, many players each), on the lobbies' WebSocket (``--edge
grpc``: their gRPC stream): each logs in on lobby A (its address list is A then B), sits in a room of four (``--game``, one hand), readies and never answers a
prompt (turn and window timers are set to 10 minutes), so every room waits at a prompt; it
sends a heartbeat every 15 s as a client does (a lobby closes a session silent for 45 s). On a
stream that ends without a kick a player reconnects by itself (``LobbySession.reconnect``:
the next address, the client's backoff) and reads on. Every frame is timestamped in the
player's process; the clocks are CLOCK_MONOTONIC, one per machine, so the bench's kill time
and the players' arrivals compare directly.

1. **Table**: ``--rooms`` rooms are made on ``table-sys`` (the only table then); a second
   table starts and stands by; ``table-sys`` gets SIGKILL and the second adopts every room
   (its lease expires, the adoption scan claims and rebuilds each room from its log). With
   ``--table-restart`` there is no second table: ``table-sys`` is started again under the
   same instance name and takes its rooms back from the directory. Per player that held a
   prompt at the kill: the time to its next prompt (the table's prompt of the rebuilt room,
   the moment the player can act again); per room: the time to its first frame at any of
   its players; the time until the adopter has rebuilt every room (its
   ``paiju_table_rooms_rebuilt_total``), and its CPU meanwhile.
2. **Lobby**: players are added (rooms of four on the table now running) up to
   ``--players`` in all, every one on lobby A; lobby A gets SIGKILL and every player comes
   back on lobby B. Per player: the time from the kill to its LoginOk on B, to its room's
   snapshot (``room_joined``) and, for those at a prompt, to the prompt again. Lobby B's and
   the load generator's CPU over the reconnect.

``--profile`` samples the adopting table (then lobby B) with py-spy for the first seconds after
each kill (bench_capacity's ``profile``). Writes bench/reports/cold.md (``--out DIR``
elsewhere); tests/service/test_bench_cold.py runs it at a tiny size.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import signal
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.bench_capacity import HEARTBEAT, add_env_option, lobby_urls, more_processes, profile
from bench.bench_system import process_cpu, scrape, stack_pids, value
from bench.common import REPORTS, LoadProcesses, write_report
from paiju.loop import run as run_on_loop
from tests.support.failover import quantile

LIMIT = 10.0                 # the bound, seconds
BOUND = 90.0                 # a player not back this long after a kill counts as lost
BATCH = 10                   # rooms a load process seats at once
SCRAPE_SECONDS = 0.5         # the adopter's metrics read this often (each read costs it CPU)
SLOW = {   # nobody's turn runs out while the players sit at their prompts
    "PAIJU_TABLE__TURN_SECONDS": "600", "PAIJU_TABLE__WINDOW_SECONDS": "600",
    "PAIJU_TABLE__ALONE_SECONDS": "600", "PAIJU_LOG__LEVEL": "WARNING",
    # as in config/prod.toml: a seat whose session ended plays one decision a second, not
    # at once (test.toml's 0 plays a room of four such seats to its end in a second)
    "PAIJU_TABLE__ENTRUST_DELAY_SECONDS": "1.0"}
OPEN = {f"PAIJU_LOBBY__{k}": "1000000" for k in (   # one IP (loopback) for every player
    "LOGINS_PER_IP_PER_MINUTE", "CREATES_PER_IP_PER_MINUTE", "MAX_CONNECTIONS_PER_IP",
    "MAX_CONNECTIONS")}


def now() -> float:
    return time.monotonic()


# ---------------------------------------------------------------------- load generator


@dataclass
class Back:
    """What one player saw after a kill (absolute CLOCK_MONOTONIC times, None: not seen)."""
    uid: int
    room: int
    prompted: bool                  # held a prompt at the kill
    frame: float | None = None      # its first frame from the lobby (beats' answers aside)
    login: float | None = None      # LoginOk of a new stream
    joined: float | None = None     # the room's snapshot
    prompt: float | None = None     # a prompt
    failed: str = ""

    def waiting(self, phase: str) -> bool:
        """Not back yet: after a table kill, a player that held a prompt until it has one
        again; after a lobby kill, any player until logged in again with its room's
        snapshot (and its prompt, if it held one). A player that gave up waits no more."""
        if phase == "table":
            return self.prompted and self.prompt is None
        return not self.failed and (self.login is None or self.joined is None
                                    or (self.prompted and self.prompt is None))


class Player:
    """A player idle at its prompt: logs in, sits, readies, reads every frame and answers
    none; reconnects by itself when its stream ends without a kick."""

    def __init__(self, addresses: list[str], uid: int, secret: str) -> None:
        from clients.session import LobbySession
        self.uid, self.secret = uid, secret
        self.session = LobbySession(addresses, keep_frames=False, on_frame=self._on_frame)
        self.room = 0
        self.prompted = False
        self.mark: float | None = None
        self.back = Back(uid, 0, False)
        self.task: asyncio.Task[None] | None = None
        self.online = False     # logged in on the current stream (it may send heartbeats)

    def _token(self) -> str:
        from clients.session import mint_token
        return mint_token(self.uid, self.secret)

    def _on_frame(self, frame: Any) -> None:
        kind = frame.WhichOneof("payload")
        if self.mark is None:
            if kind == "prompt":
                self.prompted = True
            return
        t, b = now(), self.back
        if b.frame is None and kind != "heartbeat":   # the answer to a beat is no room's
            b.frame = t
        if kind == "prompt" and b.prompt is None:
            b.prompt = t
        elif kind == "login_ok" and b.login is None:
            b.login = t
        elif kind == "room_joined" and b.joined is None:
            b.joined = t

    def set_mark(self, at: float) -> None:
        self.back = Back(self.uid, self.room, self.prompted)
        self.mark = at

    async def request(self, payload: Any, what: str) -> Any:
        """A request, asked again while the answer is "a moment"; RuntimeError if refused."""
        from clients.robot.robot import READY_TRIES, TRANSIENT
        for attempt in range(READY_TRIES):
            reply = await self.session.request(payload)
            code = reply.ret.code if reply.WhichOneof("payload") == "ret" else 0
            if code not in TRANSIENT:
                break
            await asyncio.sleep(min(2.0, 0.25 * (attempt + 1)))
        if code:
            raise RuntimeError(f"{what}: {code} {reply.ret.message}")
        return reply

    async def sit(self, game: str, room: int) -> int:
        """Log in; create a room (``room`` 0) or join ``room``; ready. The room's id."""
        from clients.robot.robot import GAMES
        from paiju.v1 import lobby_msgs_pb2 as lm
        s = self.session
        await s.open()
        await self.request(lm.Login(token=self._token(), nickname=f"cold{self.uid}",
                                    accept_batches=True), "login")
        if room:
            reply = await self.request(lm.JoinRoom(room_id=room, game=GAMES[game]), "join")
        else:
            reply = await self.request(lm.CreateRoom(game=GAMES[game], base_score=1,
                                                     total_hands=1), "create")
        self.room = reply.room_joined.room.room_id
        await self.request(lm.AskReady(is_ready=True), "ready")
        self.online = True
        self.task = asyncio.create_task(self._read())
        return self.room

    async def _read(self) -> None:
        from clients.session import SessionClosed
        s = self.session
        while True:
            frame = await s.pushes.get()
            if frame is not None:
                continue
            self.online = False
            if s.kicked:
                self.back.failed = "kicked out"
                return
            try:
                await s.reconnect(self._token, nickname=f"cold{self.uid}")
            except SessionClosed as exc:
                self.back.failed = repr(exc)[:200]
                return
            self.online = True

    async def beat(self) -> None:
        """A heartbeat, as a client sends one (a lobby closes sessions silent for
        ``offline_after_seconds``)."""
        from paiju.v1 import lobby_msgs_pb2 as lm
        if self.online and not self.session.closed.is_set():
            await self.session.send(lm.HeartBeat())


class Load:
    """One load-generator process: players, in rooms of four."""

    def __init__(self, addresses: list[str], secret: str, game: str) -> None:
        self.addresses, self.secret, self.game = addresses, secret, game
        self.players: list[Player] = []
        self.errors: list[str] = []

    async def room(self, base: int) -> None:
        players = [Player(self.addresses, base + i, self.secret) for i in range(4)]
        try:
            room = await players[0].sit(self.game, 0)
            await asyncio.gather(*(p.sit(self.game, room) for p in players[1:]))
        except Exception as exc:  # a room that could not be made is an error of the run
            self.errors.append(f"room of {base}: {exc!r}"[:200])
        self.players += players

    async def beat(self) -> None:
        """Every player's heartbeat every HEARTBEAT seconds (bench_capacity's interval)."""
        while True:
            await asyncio.sleep(HEARTBEAT)
            for p in list(self.players):
                await p.beat()

    async def rooms(self, count: int, first_uid: int) -> int:
        for start in range(0, count, BATCH):
            await asyncio.gather(*(self.room(first_uid + 4 * i)
                                   for i in range(start, min(count, start + BATCH))))
        return count

    def status(self) -> tuple[int, int, int, int]:
        """Players, players at a prompt, rooms with a player at a prompt, errors."""
        rooms = {p.room for p in self.players if p.prompted}
        return (len(self.players), sum(p.prompted for p in self.players), len(rooms),
                len(self.errors))


def load_main(conn: Any, addresses: list[str], secret: str, game: str) -> None:
    async def serve() -> None:
        load = Load(addresses, secret, game)
        beating = asyncio.create_task(load.beat())
        loop = asyncio.get_running_loop()
        while True:
            cmd, *args = await loop.run_in_executor(None, conn.recv)
            if cmd == "rooms":
                conn.send(await load.rooms(*args))
            elif cmd == "status":
                conn.send(load.status())
            elif cmd == "mark":
                for p in load.players:
                    p.set_mark(args[0])
                conn.send(0)
            elif cmd == "waiting":
                conn.send(sum(p.back.waiting(args[0]) for p in load.players))
            elif cmd == "back":
                conn.send([p.back for p in load.players])
            elif cmd == "errors":
                conn.send(load.errors[:5])
            elif cmd == "cpu":
                conn.send(time.process_time())
            elif cmd == "stop":
                beating.cancel()
                for p in load.players:
                    if p.task is not None:
                        p.task.cancel()
                await asyncio.gather(*(p.session.close() for p in load.players),
                                     return_exceptions=True)
                conn.send(0)
                return

    run_on_loop(serve())


class Generator(LoadProcesses):
    """The load processes, asked together over pipes."""

    def __init__(self, procs: int, addresses: list[str], secret: str, game: str) -> None:
        super().__init__(procs, load_main, addresses, secret, game)
        self.next_uid = 2_000_000

    def add_rooms(self, count: int) -> None:
        n = len(self.conns)
        for c, share in zip(self.conns, [count // n + (i < count % n) for i in range(n)],
                            strict=True):
            c.send(("rooms", share, self.next_uid))
            self.next_uid += 4 * share
        for c in self.conns:
            c.recv()

    def status(self) -> tuple[int, int, int, int]:
        got: list[tuple[int, int, int, int]] = self.ask("status")
        players, prompted, rooms, errors = (sum(x[i] for x in got) for i in range(4))
        return players, prompted, rooms, errors

    def at_prompt(self, rooms: int, bound: float = 120.0) -> tuple[int, int, int, int]:
        """Until every room has a player at a prompt (or ``bound`` seconds)."""
        deadline = now() + bound
        while True:
            status = self.status()
            if status[2] >= rooms or now() > deadline:
                return status
            time.sleep(0.5)

    def back(self) -> list[Back]:
        return [b for part in self.ask("back") for b in part]

    def cpu(self) -> float:
        return float(sum(self.ask("cpu")))


# ---------------------------------------------------------------------- measuring


@dataclass
class Phase:
    name: str
    players: int
    rooms: int
    killed_at: float
    backs: list[Back]
    server: str                      # the process that took over
    server_cpu: float                # its CPU seconds from the kill to ``watched``
    generator_cpu: float             # the same, of the load processes
    done: float                      # seconds from the kill to the last arrival recorded
    watched: float                   # seconds from the kill to the end of the watch
    restart: float | None = None     # seconds the killed process took to serve again
    # table: (seconds after the kill to the first room rebuilt, to the last, the taker's CPU
    # seconds between the two; sampled every SCRAPE_SECONDS)
    rebuild: tuple[float, float, float] | None = None
    rebuilt: int = 0
    hot: list[tuple[float, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    others: dict[str, float] = field(default_factory=dict)   # CPU s of records, arbiter, NATS
    resent: int | None = None        # lobby: commands the taker sent its table again


BACKENDS = ("records", "arbiter", "nats-server")


def backends_cpu(stack: Any) -> dict[str, float]:
    """CPU seconds so far of the processes that outlive the kills."""
    pids = stack_pids(stack)
    return {name: process_cpu(pids[name]) for name in BACKENDS}


def since_cpu(stack: Any, before: dict[str, float]) -> dict[str, float]:
    return {name: cpu - before[name] for name, cpu in backends_cpu(stack).items()}


def since(t: float | None, at: float) -> float | None:
    return None if t is None else t - at


def spread(values: Sequence[float | None]) -> str:
    """"p50 / p99 / max" in seconds (nearest rank), and how many never came."""
    got = [v for v in values if v is not None]
    missing = len(values) - len(got)
    if not got:
        return f"- / - / - | {missing}"
    return (f"{quantile(got, 0.5):.2f} / {quantile(got, 0.99):.2f} / {max(got):.2f} "
            f"| {missing}")


class Profiler:
    """py-spy on ``pid`` for ``seconds`` in a thread (started at a kill)."""

    def __init__(self, pid: int, seconds: float, on: bool) -> None:
        self.rows: list[tuple[float, str]] = []
        self.thread = threading.Thread(target=self._run, args=(pid, seconds), daemon=True)
        if on:
            self.thread.start()

    def _run(self, pid: int, seconds: float) -> None:
        self.rows = profile(pid, seconds)

    def join(self) -> list[tuple[float, str]]:
        if self.thread.is_alive() or self.thread.ident is not None:
            self.thread.join()
        return self.rows


def wait_back(gen: Generator, at: float, phase: str,
              tick: Any = None) -> tuple[list[Back], float, float]:
    """Poll the load processes (a count each: cheap while the servers recover) until every
    player is back for ``phase`` (or BOUND), calling ``tick()`` at each poll; the players'
    records, the last arrival recorded and the end of the watch (seconds after ``at``)."""
    while True:
        if tick is not None:
            tick()
        if sum(gen.ask("waiting", phase)) == 0 or now() - at > BOUND:
            break
        time.sleep(0.1)
    watched = now() - at
    backs = gen.back()
    missing = sorted(b.uid for b in backs if b.waiting(phase))
    if missing:   # to look them up in the logs (--keep)
        print(f"{phase} phase: {len(missing)} players not back, among them "
              f"{', '.join(map(str, missing[:20]))}", flush=True)
    last = [t for b in backs for t in (b.prompt, b.login, b.joined) if t is not None]
    return backs, (max(last) - at if last else float("nan")), watched


def table_phase(stack: Any, tmp: Path, gen: Generator, args: argparse.Namespace,
                started: list[Any]) -> Phase:
    """The table kill; a standby table it starts is added to ``started``."""
    gen.add_rooms(args.rooms)
    players, prompted, rooms_at, errors = gen.at_prompt(args.rooms)
    print(f"table phase: {players} players, {prompted} at a prompt in {rooms_at} rooms, "
          f"{errors} errors", flush=True)
    killed = stack.table
    standby = None if args.table_restart else more_processes(stack, tmp, 0, 1)[0]
    if standby is not None:
        started.append(standby)
    taker = killed if standby is None else standby
    time.sleep(1.0)   # the standby's lease is seen by the owner's watch, and settled
    gen_cpu, others = gen.cpu(), backends_cpu(stack)
    at = now()
    gen.ask("mark", at)
    killed.proc.send_signal(signal.SIGKILL)
    killed.stop(signal.SIGKILL)   # reaped
    restart = None
    if standby is None:
        killed.start(60.0, 0)
        restart = now() - at
    pid = taker.proc.pid
    cpu0 = process_cpu(pid) if standby is not None else 0.0
    spy = Profiler(pid, args.profile, bool(args.profile))
    first: tuple[float, float] | None = None   # (seconds after the kill, CPU): a room rebuilt
    all_: tuple[float, float] | None = None    # the same when every room is
    rebuilt = 0

    scraped = 0.0

    def tick(last: bool = False) -> None:
        nonlocal first, all_, rebuilt, scraped
        if all_ is not None or (now() - scraped < SCRAPE_SECONDS and not last):
            return
        scraped = now()
        try:
            rebuilt = int(value(scrape(taker.metrics_port), "paiju_table_rooms_rebuilt_total"))
        except OSError:   # a restarted table not serving its metrics yet
            return
        mark = (now() - at, process_cpu(pid))
        if first is None and rebuilt > 0:
            first = mark
        if rebuilt >= rooms_at:
            all_ = mark

    backs, last, watched = wait_back(gen, at, "table", tick)
    tick(last=True)   # every player back before the next scrape: the count at the end
    cpu = process_cpu(pid) - cpu0
    rebuild = None if first is None or all_ is None else (
        first[0], all_[0], all_[1] - first[1])
    instance = taker.env.get("PAIJU_TABLE__INSTANCE", "table")
    return Phase("table", players, rooms_at, at, backs, instance, cpu, gen.cpu() - gen_cpu,
                 last, watched, restart, rebuild, rebuilt, spy.join(), gen.ask("errors")[0],
                 since_cpu(stack, others))


def lobby_phase(stack: Any, lobby_b: Any, table: Any, gen: Generator,
                args: argparse.Namespace, rooms_before: int) -> Phase:
    """The lobby kill; ``table`` is the table running the rooms (it answers every returning
    player's snapshot, so its CPU is counted with the other servers')."""
    more = max(0, (args.players - 4 * args.rooms) // 4)
    gen.add_rooms(more)
    players, prompted, rooms_at, errors = gen.at_prompt(rooms_before + more)
    print(f"lobby phase: {players} players, {prompted} at a prompt in {rooms_at} rooms, "
          f"{errors} errors", flush=True)
    killed = stack.lobby
    taker = killed if args.lobby_restart else lobby_b
    gen_cpu, others = gen.cpu(), backends_cpu(stack)
    table_cpu = process_cpu(table.proc.pid)
    at = now()
    gen.ask("mark", at)
    killed.proc.send_signal(signal.SIGKILL)
    killed.stop(signal.SIGKILL)
    restart = None
    if args.lobby_restart:
        killed.start(60.0, 0)
        restart = now() - at
    pid = taker.proc.pid
    cpu0 = process_cpu(pid) if not args.lobby_restart else 0.0
    spy = Profiler(pid, args.profile, bool(args.profile))

    backs, last, watched = wait_back(gen, at, "lobby")
    cpu = process_cpu(pid) - cpu0
    resent = int(value(scrape(taker.metrics_port), "paiju_lobby_table_commands_resent_total"))
    return Phase("lobby", players, rooms_at, at, backs,
                 "lobby A" if args.lobby_restart else "lobby B", cpu, gen.cpu() - gen_cpu,
                 last, watched, restart, hot=spy.join(), errors=gen.ask("errors")[0],
                 others={"table": process_cpu(table.proc.pid) - table_cpu,
                         **since_cpu(stack, others)},
                 resent=resent)


# ---------------------------------------------------------------------- the report


def verdict(values: Sequence[float | None]) -> str:
    got = [v for v in values if v is not None]
    if len(got) < len(values):
        return f"**missed**: {len(values) - len(got)} never came back"
    return "met" if got and max(got) <= LIMIT else f"**missed** (max {max(got or [0]):.2f} s)"


def cpu_line(phase: Phase) -> str:
    return "the other servers' CPU meanwhile: " + ", ".join(
        f"{name} {cpu:.2f} s" for name, cpu in phase.others.items())


def report(args: argparse.Namespace, table: Phase, lobby: Phase, took: float) -> list[str]:
    cmd = (f"python -m bench.bench_cold --rooms {args.rooms} --players {args.players} "
           f"--procs {args.procs} --game {args.game}"
           + (" --table-restart" if args.table_restart else "")
           + (" --lobby-restart" if args.lobby_restart else "")
           + (" --ensure-profiles" if args.ensure_profiles else "")
           + (" --edge grpc" if args.edge == "grpc" else "")
           + (f" --profile {args.profile:g}" if args.profile else "")
           + "".join(f" --env {k}={v}" for k, v in args.env))
    tb = table.backs
    prompt_t = [since(b.prompt, table.killed_at) for b in tb if b.prompted]
    first_by_room: dict[int, float | None] = {}
    for b in tb:
        t = since(b.frame, table.killed_at)
        old = first_by_room.get(b.room)
        if b.room not in first_by_room or (t is not None and (old is None or t < old)):
            first_by_room[b.room] = t
    rb = table.rebuild
    lb = lobby.backs
    lost = [b for b in lb if b.failed]
    how_table = ("`table-sys` started again (same instance) and took its rooms back"
                 if args.table_restart else
                 "a second table (`table-bench-2`) standing by adopted them")
    how_lobby = ("lobby A started again (same port); the players retried it"
                 if args.lobby_restart else "the players reconnected to lobby B") + (
        ", which makes a profile per login (records' EnsurePlayer, `dev_profiles` of "
        "config/test.toml)" if args.ensure_profiles else
        ", which reads each profile (records' GetPlayers, concurrent logins' reads coalesced "
        "into one call; `dev_profiles = false` as in config/prod.toml; lobby A made them at "
        "the first logins)")
    lines = [
        "# Cold paths: a table and a lobby killed under a full house",
        "",
        f"`{cmd}`: {platform.python_implementation()} {platform.python_version()} on "
        f"{os.cpu_count()} cores shared by every process (servers and load generator); the run "
        f"took {took:.0f} s. Players are idle at their prompts ({args.game}, one hand a room, "
        "turn timers 10 minutes), clients of clients/session.py in "
        f"{args.procs} load processes; every time is from the SIGKILL, in seconds "
        "(p50 / p99 / max by nearest rank). Target (issue 25, item 5): everyone back within "
        f"{LIMIT:g} s.",
        "",
        "## Table killed",
        "",
        f"{table.rooms} rooms ({table.players} players) on `table-sys`; SIGKILL; {how_table}.",
        "",
        "| measure | n | p50 / p99 / max s | never |",
        "|---|---:|---|---:|",
        f"| player at a prompt: kill -> its next prompt | {len(prompt_t)} | "
        f"{spread(prompt_t)} |",
        f"| room: kill -> its first frame at any player | {len(first_by_room)} | "
        f"{spread(list(first_by_room.values()))} |",
        "",
        f"- rooms rebuilt by `{table.server}` (`paiju_table_rooms_rebuilt_total`): "
        + (f"the first {rb[0]:.2f} s after the kill, all {table.rebuilt} {rb[1]:.2f} s after "
           f"it; between the two it used {rb[2]:.2f} s of CPU "
           f"({rb[2] / max(rb[1] - rb[0], 1e-9):.2f} cores, "
           f"{1000 * rb[2] / max(table.rebuilt, 1):.1f} ms per room)"
           if rb is not None and not table.restart else
           f"all {table.rebuilt} during its start-up (before it served its metrics)"
           if table.restart and table.rebuilt >= table.rooms else
           f"{table.rebuilt}, not all within {BOUND:g} s")
        + f"; the last prompt recorded {table.done:.2f} s after the kill",
        (f"- `{table.server}` CPU from the kill to the end of the watch ({table.watched:.1f} s:"
         f" every player back, or {BOUND:g} s): {table.server_cpu:.2f} s "
         f"({table.server_cpu / max(table.watched, 1e-9):.2f} cores)"
         if not table.restart else
         f"- `{table.server}` served again {table.restart:.2f} s after the kill, having used "
         f"{table.server_cpu:.2f} s of CPU by the end of the watch (start-up included)"),
        f"- load generator CPU meanwhile: {table.generator_cpu:.2f} s; {cpu_line(table)}",
        f"- verdict (every player at a prompt back at it within {LIMIT:g} s): "
        f"{verdict(prompt_t)}",
        "",
        "## Lobby killed",
        "",
        f"{lobby.players} players, all on lobby A, in {lobby.rooms} rooms; SIGKILL of lobby A; "
        f"{how_lobby}.",
        "",
        "| measure | n | p50 / p99 / max s | never |",
        "|---|---:|---|---:|",
        f"| kill -> LoginOk | {len(lb)} | {spread([since(b.login, lobby.killed_at) for b in lb])} |",
        f"| kill -> room snapshot (`room_joined`) | {len(lb)} | "
        f"{spread([since(b.joined, lobby.killed_at) for b in lb])} |",
        f"| kill -> prompt again (players at a prompt) | {sum(b.prompted for b in lb)} | "
        f"{spread([since(b.prompt, lobby.killed_at) for b in lb if b.prompted])} |",
        "",
        f"- the last arrival recorded {lobby.done:.2f} s after the kill; players that gave "
        f"up: {len(lost)}" + (f" ({lost[0].failed})" if lost else ""),
        (f"- `{lobby.server}` CPU from the kill to the end of the watch ({lobby.watched:.1f} s:"
         f" every player back, or {BOUND:g} s): {lobby.server_cpu:.2f} s "
         f"({lobby.server_cpu / max(lobby.watched, 1e-9):.2f} cores)"
         if not lobby.restart else
         f"- `{lobby.server}` served again {lobby.restart:.2f} s after the kill, having used "
         f"{lobby.server_cpu:.2f} s of CPU by the end of the watch (start-up included)"),
        f"- load generator CPU meanwhile: {lobby.generator_cpu:.2f} s "
        f"({lobby.generator_cpu / max(lobby.watched, 1e-9):.2f} cores); {cpu_line(lobby)}",
        f"- commands `{lobby.server}` sent its table again, unanswered after the link's "
        f"resend wait (`paiju_lobby_table_commands_resent_total`): "
        f"{lobby.resent}",
        f"- verdict (every player logged in again with its room's snapshot within {LIMIT:g} s): "
        f"{verdict([since(b.joined, lobby.killed_at) for b in lb])}",
    ]
    for phase in (table, lobby):
        if phase.errors:
            lines += ["", f"Errors while seating ({phase.name} phase): "
                      + "; ".join(phase.errors)]
        if phase.hot:
            lines += ["", f"## py-spy: `{phase.server}`, first {args.profile:g} s after the "
                      f"{phase.name} kill", "", "| share of busy samples | function |",
                      "|---:|---|"]
            lines += [f"| {100 * share:.0f}% | `{fn}` |" for share, fn in phase.hot]
    return lines


KEEP_FROM = "## What the figures are made of"


def kept_sections(path: Path) -> list[str]:
    """The report's written analysis (from KEEP_FROM on), kept when the figures are measured
    anew."""
    if not path.exists():
        return []
    text = path.read_text(encoding="utf-8")
    return ["", *text[text.index(KEEP_FROM):].rstrip("\n").splitlines()] \
        if KEEP_FROM in text else []


def run(args: argparse.Namespace) -> tuple[Phase, Phase]:
    from tests.system.conftest import SECRET, start_stack, stop_stack
    with tempfile.TemporaryDirectory(prefix="paiju-cold-") as name:
        tmp = Path(tempfile.mkdtemp(prefix="paiju-cold-")) if args.keep else Path(name)
        if args.keep:
            print(f"logs in {tmp}", flush=True)
        edge = {}
        if args.edge == "ws":
            from services.common.natsd import free_port
            edge = {"PAIJU_LOBBY__WS_PORT": str(free_port())}
        stack = start_stack(tmp, **{**OPEN, **SLOW, **edge, **dict(args.env)})   # --env wins
        extra: list[Any] = []
        gen: Generator | None = None
        try:
            if not args.ensure_profiles:
                # the lobby taking the players back (B, or A restarted: both start from this
                # env) reads their profiles as production does (records' GetPlayers): A made
                # them at their first login (dev profiles, records' EnsurePlayer)
                stack.lobby.env["PAIJU_LOBBY__DEV_PROFILES"] = "false"
            extra = more_processes(stack, tmp, 0 if args.lobby_restart else 1, 0)
            addresses = [stack.lobby_address, *(f"127.0.0.1:{p.port}" for p in extra)]
            if args.edge == "ws":
                addresses = lobby_urls([stack.lobby, *extra]).split(",")
            gen = Generator(args.procs, addresses, SECRET, args.game)
            lobby_b = extra[0] if extra else None
            table = table_phase(stack, tmp, gen, args, extra)
            running = stack.table if args.table_restart else extra[-1]
            lobby = lobby_phase(stack, lobby_b, running, gen, args, table.rooms)
            return table, lobby
        finally:
            if gen is not None:
                gen.stop()
            for proc in extra:
                proc.stop()
            stop_stack(stack)


def interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # SIGTERM (a timeout): stop the stack first


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rooms", type=int, default=1000, help="rooms on the killed table")
    parser.add_argument("--players", type=int, default=5000,
                        help="players on the killed lobby (the table's and more, in rooms)")
    parser.add_argument("--procs", type=int, default=4, help="load-generator processes")
    parser.add_argument("--game", default="xuezhan")
    parser.add_argument("--table-restart", action="store_true",
                        help="restart the killed table instead of a second one adopting")
    parser.add_argument("--lobby-restart", action="store_true",
                        help="restart the killed lobby instead of a second one running")
    parser.add_argument("--ensure-profiles", action="store_true",
                        help="the lobby taking players back creates missing profiles "
                             "(config/test.toml's dev_profiles) instead of reading them")
    parser.add_argument("--edge", choices=("grpc", "ws"), default="ws",
                        help="the players' transport to the lobby: its WebSocket (what the "
                             "project's clients use by default) or its gRPC Connect stream")
    parser.add_argument("--profile", type=float, default=0.0,
                        help="py-spy the process taking over for this many seconds")
    parser.add_argument("--keep", action="store_true", help="keep the processes' logs")
    parser.add_argument("--out", type=Path, default=REPORTS)
    add_env_option(parser)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    signal.signal(signal.SIGTERM, interrupted)
    started = now()
    table, lobby = run(args)
    path = args.out / "cold.md"
    write_report(path, report(args, table, lobby, now() - started) + kept_sections(path))
    back = all(b.prompt is not None for b in table.backs if b.prompted) and all(
        b.login is not None and b.joined is not None for b in lobby.backs)
    return 0 if back else 1


if __name__ == "__main__":
    raise SystemExit(main())
