"""Benchmark of the whole system: ``python -m bench.bench_system [--quick] [--rooms N] [--hands H]``.

Starts the stack as processes (embedded nats-server, records, arbiter, table, lobby, as
``tests.system.conftest.start_stack`` wires them), then for each game in turn runs N rooms
of four greedy robots through the lobby (``clients.robot.robot.run_tables``) for H hands
each, and reports hands and player actions per second, the table's own latencies (action,
log append, fan-out, arbiter round trip: quantiles interpolated in the Prometheus histogram
buckets scraped from the table's /metrics before and after each game), arbiter fallbacks,
timeouts, and the CPU each process spent per hand.

Baseline, in the same process: as many hands of each game self-played on the bare engine
with the same greedy policy (games.bots), no services; "system overhead" is in-process
hands/s divided by system hands/s. Writes bench/reports/system.md (`--out DIR` elsewhere).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import tempfile
import time
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from bench.common import REPORTS, write_report
from clients.robot.robot import run_tables
from games import registry
from games.rng import derive
from paiju.loop import run as run_on_loop
from services.common.natsd import free_port
from tests.system.conftest import SECRET, Stack, start_stack, stop_stack

GAMES = tuple(spec.name for spec in registry.all())
TICK = os.sysconf("SC_CLK_TCK")
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(port: int) -> Samples:
    """Every sample of a /metrics page, keyed by sample name and labels."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
        text = reply.read().decode()
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def buckets(before: Samples, after: Samples, name: str, **labels: str) -> list[tuple[float, float]]:
    """(upper bound, cumulative count) of a histogram's growth between two scrapes."""
    out = []
    for (sample, labelset), count in after.items():
        tags = dict(labelset)
        le = tags.pop("le", None)
        if sample == f"{name}_bucket" and le is not None and tags == labels:
            out.append((float(le), count - before.get((sample, labelset), 0.0)))
    return sorted(out)


def quantile(q: float, cumulative: list[tuple[float, float]]) -> float:
    """Prometheus ``histogram_quantile``: linear interpolation inside the bucket holding the
    q-th observation; NaN without observations.

    >>> quantile(0.5, [(1.0, 10.0), (2.0, 30.0), (float("inf"), 30.0)])
    1.25
    >>> quantile(0.99, [(1.0, 0.0), (float("inf"), 4.0)])
    1.0
    """
    total = cumulative[-1][1] if cumulative else 0.0
    if total <= 0:
        return float("nan")
    rank, lower, below = q * total, 0.0, 0.0
    for upper, count in cumulative:
        if count >= rank:
            if upper == float("inf"):
                return lower
            return lower + (upper - lower) * (rank - below) / (count - below)
        lower, below = upper, count
    return lower


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of a process, from /proc."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def stack_pids(stack: Stack) -> dict[str, int]:
    pids = {svc.name: svc.proc.pid for svc in (stack.lobby, stack.table, stack.arbiter,
                                                stack.records) if svc.proc is not None}
    if stack.nats.proc is not None:
        pids["nats-server"] = stack.nats.proc.pid
    return pids


@dataclass(frozen=True)
class Latency:
    """One table histogram's growth: quantiles from the buckets, the exact mean from the sum."""

    p50: float
    p95: float
    count: int
    mean: float


@dataclass
class SystemRun:
    game: str
    rooms: int
    expected: int                    # rooms x hands per room
    hands: int                       # hands the table finished (paiju_table_hands_total)
    actions: int                     # player actions (paiju_table_action_seconds count)
    seconds: float
    refused: int                     # actions the table refused (stale prompts)
    failed: list[str]                # robots that raised
    latency: dict[str, Latency] = field(default_factory=dict)
    fallbacks: int = 0
    timeouts: int = 0
    cpu: dict[str, float] = field(default_factory=dict)  # CPU seconds per process


def latencies(before: Samples, after: Samples, game: str) -> dict[str, Latency]:
    """The table's histograms over one game (seconds)."""
    out = {}
    for label, name, tags in (("action", "paiju_table_action_seconds", {"game": game}),
                              ("log append", "paiju_table_log_append_seconds", {}),
                              ("fan-out", "paiju_table_fanout_seconds", {}),
                              ("arbiter", "paiju_table_arbiter_seconds", {})):
        cumulative = buckets(before, after, name, **tags)
        count = int(cumulative[-1][1]) if cumulative else 0
        total = value(after, f"{name}_sum", **tags) - value(before, f"{name}_sum", **tags)
        out[label] = Latency(quantile(0.5, cumulative), quantile(0.95, cumulative), count,
                             total / count if count else float("nan"))
    return out


async def wait_hands(port: int, before: Samples, game: str, expected: int) -> Samples:
    """The table counts a hand when its settlement is out, just after the robots see the
    hand end: scrape until the count is there (or 5 s have passed)."""
    after = scrape(port)
    for _ in range(50):
        got = value(after, "paiju_table_hands_total", game=game) - \
            value(before, "paiju_table_hands_total", game=game)
        if got >= expected:
            break
        await asyncio.sleep(0.1)
        after = scrape(port)
    return after


def lobby_of(stack: Stack) -> str:
    """Where the robots reach the lobby: its gRPC port, or (``--edge ws``) its WebSocket."""
    ws = stack.lobby.env.get("PAIJU_LOBBY__WS_PORT")
    return f"ws://127.0.0.1:{ws}/ws" if ws else stack.lobby_address


async def play_system(stack: Stack, game: str, rooms: int, hands: int) -> SystemRun:
    port, pids = stack.table.metrics_port, stack_pids(stack)
    before = scrape(port)
    cpu0 = {name: process_cpu(pid) for name, pid in pids.items()}
    robots0 = time.process_time()
    started = time.perf_counter()
    results = await run_tables(lobby_of(stack), game, rooms, SECRET, hands=hands,
                               first_uid=100_000 + 10_000 * GAMES.index(game))
    seconds = time.perf_counter() - started
    robots = time.process_time() - robots0
    after = await wait_hands(port, before, game, rooms * hands)
    cpu = {name: process_cpu(pid) - cpu0[name] for name, pid in pids.items()}
    cpu["robots (this process)"] = robots

    def grew(name: str, **labels: str) -> int:
        return int(value(after, name, **labels) - value(before, name, **labels))

    return SystemRun(
        game, rooms, rooms * hands, grew("paiju_table_hands_total", game=game),
        grew("paiju_table_action_seconds_count", game=game), seconds,
        sum(len(r.errors) for r in results if r.rooms),
        [e for r in results if not r.rooms for e in r.errors],
        latencies(before, after, game), grew("paiju_table_arbiter_fallback_total"),
        grew("paiju_table_timeouts_total", game=game), cpu)


def play_inprocess(game: str, hands: int, rounds: int = 2) -> tuple[float, int]:
    """Seconds (best of ``rounds``) and actions for ``hands`` seeded hands on the bare
    engine with greedy bots."""
    best, actions = float("inf"), 0
    for _ in range(rounds):
        seconds, actions = self_play(game, hands)
        best = min(best, seconds)
    return best, actions


def self_play(game: str, hands: int) -> tuple[float, int]:
    spec = registry.get(game)
    actions = 0
    started = time.perf_counter()
    for seed in range(hands):
        state = spec.new_hand({"base": 1}, derive(seed, f"bench.system.{game}"),
                              seed % spec.seats)
        state.deal_events()
        while not state.is_over():
            seat = state.to_act()[0]
            state.apply(seat, spec.greedy_policy(state, seat))
            actions += 1
        state.settlement()
    return time.perf_counter() - started, actions


def run(rooms: int, hands: int, edge: str = "grpc", games: Sequence[str] = GAMES,
        ) -> tuple[list[SystemRun], dict[str, tuple[float, int]], float]:
    with tempfile.TemporaryDirectory(prefix="paiju-bench-") as tmp:
        started = time.perf_counter()
        # the services run on this process's PAIJU_EVENT_LOOP (start_stack drops PAIJU_*)
        env = {k: v for k, v in os.environ.items() if k == "PAIJU_EVENT_LOOP"}
        if edge == "ws":
            env["PAIJU_LOBBY__WS_PORT"] = str(free_port())
        stack = start_stack(Path(tmp), **env)
        startup = time.perf_counter() - started
        try:
            runs = [run_on_loop(play_system(stack, game, rooms, hands)) for game in games]
        finally:
            stop_stack(stack)
    baseline = {r.game: play_inprocess(r.game, r.hands or r.expected) for r in runs}
    return runs, baseline, startup


def ms(seconds: float) -> str:
    return "-" if seconds != seconds else f"{seconds * 1000:.2f}"


def report(runs: list[SystemRun], baseline: Mapping[str, tuple[float, int]], startup: float,
           command: str) -> list[str]:
    lines = [
        "# System throughput: robots through lobby, table, arbiter, records",
        "",
        f"`{command}`: Python {platform.python_version()} on {os.cpu_count()} cores; the "
        f"stack (nats-server, records on SQLite, arbiter, table, lobby: one process each) "
        f"took {startup:.1f} s to start. Games run one after another, each with its rooms "
        "playing concurrently; the wall time includes the robots' logins and room creation. "
        "Player actions = the table's `paiju_table_action_seconds` count (robot moves; "
        "timeouts and entrust excluded). Baseline: the same number of hands on the bare "
        "engine with the same greedy policy, in this process, one after another (best of 2).",
        "",
        "| game | rooms | hands | wall s | hands/s | player actions/s | in-process hands/s "
        "| in-process actions/s | system overhead |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in runs:
        base_s, base_actions = baseline[r.game]
        base_hands = r.hands or r.expected
        system_rate = r.hands / r.seconds
        overhead = (base_hands / base_s) / system_rate if system_rate else float("inf")
        lines.append(f"| {r.game} | {r.rooms} | {r.hands} | {r.seconds:.2f} | {system_rate:.2f} "
                     f"| {r.actions / r.seconds:.0f} | {base_hands / base_s:.1f} "
                     f"| {base_actions / base_s:.0f} | {overhead:.0f}x |")
    lines += ["", "Table latencies in ms. Quantiles are interpolated in the histogram buckets "
              "(bounds 0.5, 1, 2.5, 5, 10, 25 ms ...: anything under 0.5 ms reads as a share "
              "of 0-0.5 ms); means are exact (`_sum` / `_count`).", "",
              "| game | action p50 | action p95 | action mean | log append p50 | log append mean "
              "| fan-out p50 | fan-out mean | arbiter p50 | arbiter mean | arbiter calls "
              "| arbiter fallbacks | timeouts | refused actions |",
              "|---|" + "---:|" * 13]
    for r in runs:
        act, app = r.latency["action"], r.latency["log append"]
        fan, arb = r.latency["fan-out"], r.latency["arbiter"]
        lines.append(f"| {r.game} | {ms(act.p50)} | {ms(act.p95)} | {ms(act.mean)} "
                     f"| {ms(app.p50)} | {ms(app.mean)} | {ms(fan.p50)} | {ms(fan.mean)} "
                     f"| {ms(arb.p50)} | {ms(arb.mean)} | {arb.count} | {r.fallbacks} "
                     f"| {r.timeouts} | {r.refused} |")
    names = list(runs[0].cpu)
    lines += ["", "CPU per hand (ms, from /proc and `time.process_time`; 10 ms ticks):", "",
              "| game | " + " | ".join(names) + " | total | total per player action |",
              "|---|" + "---:|" * (len(names) + 2)]
    for r in runs:
        per = [r.cpu[n] * 1000 / max(r.hands, 1) for n in names]
        per_action = sum(r.cpu.values()) * 1000 / max(r.actions, 1)
        lines.append(f"| {r.game} | " + " | ".join(f"{c:.0f}" for c in per)
                     + f" | {sum(per):.0f} | {per_action:.1f} |")
    failed = [e for r in runs for e in r.failed]
    short = [f"{r.game}: {r.hands} of {r.expected}" for r in runs if r.hands < r.expected]
    if failed or short:
        lines += ["", f"Problems: robots failed {failed[:5]}; hands missing {short}."]
    return lines


@dataclass(frozen=True)
class Floor:
    """The bare transport of the hops one player action takes, measured in this run
    (bench_transport's primitives): the server's share in microseconds of CPU."""

    bidi: float        # (b) one bidi message round trip, both ends
    append: float      # (e) fenced JetStream append: client + nats-server
    publish: float     # (c3) NATS publish + delivery: client + nats-server
    request: float     # (c4) NATS request and reply, one in flight: both ends + nats-server

    @property
    def hops(self) -> list[tuple[str, float]]:
        return [
            ("client -> lobby and the answer back (the server's half of a round trip)",
             self.bidi / 2),
            ("lobby -> table and the reply (a NATS request on the table's command subject: "
             "both ends + nats-server)", self.request),
            ("the record's fenced append (client + nats-server)", self.append),
            ("the record's message: publish + delivery to the lobby", self.publish),
            ("delivery to four clients (the server's write: a quarter round trip each)",
             4 * self.bidi / 4),
        ]

    @property
    def total(self) -> float:
        return sum(cost for _, cost in self.hops)


def measure_floor() -> Floor:
    from bench.bench_transport import measure as transport
    ops, figures = run_on_loop(transport(scale=2, rounds=3))
    f = {k: figures[k] for k in ("b", "e", "c3", "c4")}
    return Floor(bidi=f["b"].cpu * 1e6, append=(f["e"].cpu + f["e"].server) * 1e6,
                 publish=(f["c3"].cpu + f["c3"].server) * 1e6,
                 request=(f["c4"].cpu + f["c4"].server) * 1e6)


def floor_lines(runs: list[SystemRun], floor: Floor) -> list[str]:
    lines = ["", "## The server's cost per action against its transport floor", "",
             "The floor is the bare cost of exactly the hops one action takes, from "
             "`bench_transport`'s primitives measured in this run (server side only):", "",
             "| hop | µs CPU |", "|---|---:|"]
    lines += [f"| {name} | {cost:.0f} |" for name, cost in floor.hops]
    lines += [f"| **floor** | **{floor.total:.0f}** |", "",
              "| game | server CPU per player action µs (lobby, table, arbiter, records, "
              "nats-server) | floor µs | ratio |", "|---|---:|---:|---:|"]
    grpc_floor = floor.total - floor.request + floor.bidi
    for r in runs:
        server = sum(v for k, v in r.cpu.items() if not k.startswith("robots")) * 1e6 / max(r.actions, 1)
        lines.append(f"| {r.game} | {server:.0f} | {floor.total:.0f} | "
                     f"{server / floor.total:.1f}x |")
    worst = max((sum(v for k, v in r.cpu.items() if not k.startswith("robots")) * 1e6
                 / max(r.actions, 1) for r in runs), default=0.0)
    lines += ["", "Measured alone (one in flight, both ends in one process) a NATS request costs "
              f"more than a bidi round trip ({floor.request:.0f} against {floor.bidi:.0f} µs), "
              "so the floor with the lobby's old hop, the `Table.Session` stream, would be "
              f"{grpc_floor:.0f} µs, and the worst game's ratio against it "
              f"{worst / grpc_floor:.1f}x. In the system the command's NATS messages share their "
              "wake-ups and writes with the room's events, which is why the whole stack costs "
              "less with them (bench/reports/capacity.md)."]
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 room, 2 hands per game")
    parser.add_argument("--rooms", type=int, default=8, help="rooms per game (full run)")
    parser.add_argument("--hands", type=int, default=8, help="hands per room (full run)")
    parser.add_argument("--edge", choices=("grpc", "ws"), default="grpc",
                        help="the robots' transport to the lobby: its gRPC Connect stream or "
                             "its WebSocket (the floor's client hops stay gRPC's)")
    parser.add_argument("--games", nargs="+", choices=GAMES, default=GAMES,
                        help="the games to play, in this order (default: all)")
    parser.add_argument("--out", type=Path, default=REPORTS,
                        help="directory of the report (default: bench/reports)")
    args = parser.parse_args(argv)
    rooms, hands = (1, 2) if args.quick else (args.rooms, args.hands)
    games = tuple(dict.fromkeys(args.games))
    command = "python -m bench.bench_system" + (" --quick" if args.quick else
                                                f" --rooms {rooms} --hands {hands}") \
        + (f" --edge {args.edge}" if args.edge != "grpc" else "") \
        + (f" --games {' '.join(games)}" if games != GAMES else "")
    floor = measure_floor()
    runs, baseline, startup = run(rooms, hands, args.edge, games)
    edge = [] if args.edge == "grpc" else [
        "", "The robots reached the lobby over its WebSocket (`--edge ws`); the floor's client "
        "hops are still the gRPC stream's (bench_transport has no WebSocket primitive)."]
    write_report(args.out / "system.md",
                 report(runs, baseline, startup, command) + floor_lines(runs, floor) + edge)
    if any(r.hands < r.expected for r in runs):
        raise SystemExit("some rooms did not finish their hands: see the report")


if __name__ == "__main__":
    main()
