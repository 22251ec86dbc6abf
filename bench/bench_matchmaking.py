"""Matchmaking: simulated players with a hidden skill queue through the real matcher and are rated by records' real rating code.

A population of players (20,000 by default) with a hidden true skill (normal, sd 1) asks
for XueZhan tables as a Poisson stream at several rates; a party of two or three now and
then. Every ``--tick`` simulated seconds the matcher (services/lobby/matching.py:
tolerance 3 / 6 / 12 / any rating points after 0 / 5 / 10 / 20 s, its default, then after
0 / 10 / 20 / 40 s, issue 23's example; no robots, strangers at most 3 tables a day, the
project's geo alert distance) makes its pass; each table plays one hand whose placement is
drawn from the hidden skills plus luck, and
records' rating code (services/records/rating.py: the same placement from the hand's points
and the same Plackett-Luce update) rates it. Players are busy for a hand, then idle again;
the stream draws the next ticket's players from the idle ones. Some tickets are cancelled
(patience runs out). The population has households (two players on one IP and one flat),
internet cafes (many players on one IP) and neighbours (within tens of meters), so the hard
constraints bind; every table is checked against them from scratch.

Measured per rate: time to a table (p50, p99, simulated seconds), rating spread per table
(mu points), the tables' spread of hidden skill against random tables, rank correlation
(Spearman) of ratings to hidden skill after K hands, constraint violations (must be 0),
cancelled tickets matched (must be 0), and the matcher's own cost: CPU seconds inside
enqueue, cancel and run, and tickets matched per CPU second. The simulation is seeded: the
same command gives the same tables; only the CPU figures move between runs.
"""

from __future__ import annotations

import argparse
import asyncio
import heapq
import json
import math
import random
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from bench.common import REPORTS, machine, write_report
from services.common.config import load_config
from services.lobby.matching import Match, MatchConfig, Matcher, Player, Ticket, violations
from services.records.db import make_engine, migrate
from services.records.rating import Rater, placement
from services.records.settlement import parse_settlement
from services.records.store import SettlementWriter

REPORT = "matchmaking.md"
GAME = "xuezhan"
SEATS = 4
HAND_SECONDS = 180.0           # a player at a table is busy this long (simulated)
LUCK = 2.0                     # sd of a hand's luck, in units of the skill's sd
CANCEL_SHARE = 0.03            # tickets whose player gives up...
PATIENCE_MEAN = 60.0           # ...after this long on average (exponential)
PARTY_2, PARTY_3 = 0.06, 0.02  # share of tickets that are parties of two, of three
K_CHECKPOINTS = (1, 2, 5, 10, 20)
SLOW_STEPS = "0:3,10:6,20:12,40:inf"   # issue 23's example: a slower widening
DELTAS = (6, 1, -2, -5)        # points by place (what the placement is read from)


@dataclass
class Population:
    skill: list[float]
    ip: list[str]
    lat: list[float]
    lng: list[float]


def population(n: int, rng: random.Random) -> Population:
    """Players in 20 cities within 5 km of the centre; 3% in two-player households (one IP,
    one point), 2% in internet cafes of 20 (one IP), 2% next door to someone (20-60 m)."""
    skill = [rng.gauss(0.0, 1.0) for _ in range(n)]
    cities = [(rng.uniform(22.0, 40.0), rng.uniform(100.0, 120.0)) for _ in range(20)]
    lat, lng, ip = [0.0] * n, [0.0] * n, [""] * n
    for i in range(n):
        c_lat, c_lng = cities[i % len(cities)]
        r, a = 5000.0 * math.sqrt(rng.random()), rng.uniform(0, 2 * math.pi)
        lat[i] = c_lat + r * math.cos(a) / 111_320.0
        lng[i] = c_lng + r * math.sin(a) / (111_320.0 * math.cos(math.radians(c_lat)))
        ip[i] = f"10.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255}"
    order = list(range(n))
    rng.shuffle(order)
    households = int(n * 0.03) // 2
    for k in range(households):
        a, b = order[2 * k], order[2 * k + 1]
        ip[b], lat[b], lng[b] = ip[a], lat[a] + 0.00005, lng[a]
    start = 2 * households
    cafes = order[start:start + int(n * 0.02)]
    for k, i in enumerate(cafes):
        ip[i] = f"172.16.0.{k // 20}"
    start += len(cafes)
    for k in range(int(n * 0.02) // 2):
        a, b = order[start + 2 * k], order[start + 2 * k + 1]
        lat[b], lng[b] = lat[a] + rng.uniform(20.0, 60.0) / 111_320.0, lng[a]
    return Population(skill, ip, lat, lng)


def spearman(xs: Sequence[float], ys: Sequence[float]) -> float:
    def ranks(v: Sequence[float]) -> list[float]:
        order = sorted(range(len(v)), key=v.__getitem__)
        out = [0.0] * len(v)
        i = 0
        while i < len(order):
            j = i
            while j + 1 < len(order) and v[order[j + 1]] == v[order[i]]:
                j += 1
            for k in range(i, j + 1):
                out[order[k]] = (i + j) / 2
            i = j + 1
        return out

    rx, ry = ranks(xs), ranks(ys)
    mx, my = statistics.fmean(rx), statistics.fmean(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True))
    sx = math.sqrt(sum((a - mx) ** 2 for a in rx))
    sy = math.sqrt(sum((b - my) ** 2 for b in ry))
    return cov / (sx * sy) if sx and sy else float("nan")


def pct(values: Sequence[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


@dataclass
class Result:
    rate_per_min: float
    steps: str = "default"                 # the tolerance schedule's label
    tickets: int = 0
    skipped: int = 0                       # arrivals with no idle player to draw
    cancelled: int = 0
    cancelled_matched: int = 0
    waits: list[float] = field(default_factory=list)
    spreads: list[float] = field(default_factory=list)
    skill_spreads: list[float] = field(default_factory=list)
    random_skill_spreads: list[float] = field(default_factory=list)
    violations: int = 0
    tables: int = 0
    matched_tickets: int = 0
    matcher_cpu: float = 0.0
    passes: int = 0
    waiting_at_end: int = 0
    encounters: int = 0                    # meetings the matcher remembers at the end
    forgotten: int = 0                     # meetings it forgot early (its limit)
    simulated_seconds: float = 0.0
    correlation: dict[int, tuple[int, float]] = field(default_factory=dict)
    final_correlation: tuple[int, float] = (0, float("nan"))


def simulate(rate_per_min: float, players: int, tickets: int, tick: float, seed: int,
             config: MatchConfig) -> Result:
    rng = random.Random(seed)
    pop = population(players, rng)
    rater = Rater()
    rating = [rater.initial] * players
    hands = [0] * players
    at_k: dict[int, dict[int, float]] = {k: {} for k in K_CHECKPOINTS}
    idle = list(range(players))
    busy: list[tuple[float, tuple[int, ...]]] = []
    give_up: list[tuple[float, str]] = []
    cancelled: set[str] = set()
    members: dict[str, tuple[int, ...]] = {}
    met: dict[tuple[int, int], list[float]] = defaultdict(list)
    matcher = Matcher(config)
    result = Result(rate_per_min, _steps_label(config))
    rate = rate_per_min / 60.0
    now, next_tick, seq = 0.0, tick, 0

    def timed(fn, *args):  # type: ignore[no-untyped-def]
        start = time.process_time()
        out = fn(*args)
        result.matcher_cpu += time.process_time() - start
        return out

    def play(match: Match) -> None:
        seated = [i for t in match.tickets for i in members.pop(t.ticket_id)]
        result.tables += 1
        result.matched_tickets += len(match.tickets)
        result.spreads.append(match.spread)
        skills = [pop.skill[i] for i in seated]
        result.skill_spreads.append(max(skills) - min(skills))
        sample = rng.sample(range(players), SEATS)
        result.random_skill_spreads.append(max(pop.skill[i] for i in sample)
                                           - min(pop.skill[i] for i in sample))
        for t in match.tickets:
            result.waits.append(match.formed_at - t.enqueued_at)
            if t.ticket_id in cancelled:
                result.cancelled_matched += 1
        window = match.formed_at - config.encounter_window
        result.violations += len(violations(match, config, _recent(met, match, window)))
        groups = [[p.user_id - 1 for p in t.players] for t in match.tickets]
        for g_i, g in enumerate(groups):
            for h in groups[g_i + 1:]:
                for a in g:
                    for b in h:
                        met[(min(a, b) + 1, max(a, b) + 1)].append(match.formed_at)
        perf = sorted(seated, key=lambda i: -(pop.skill[i] + rng.gauss(0.0, LUCK)))
        deltas = [DELTAS[perf.index(i)] for i in seated]
        uids = [i + 1 for i in seated]
        hand = placement(GAME, uids, deltas, {})
        assert hand is not None
        new = rater.update({u: rating[u - 1] for u in uids}, hand)
        for u, r in new.items():
            i = u - 1
            rating[i] = r
            hands[i] += 1
            if hands[i] in at_k:
                at_k[hands[i]][i] = r.mu
        heapq.heappush(busy, (match.formed_at + HAND_SECONDS, tuple(seated)))

    def run_tick(at: float) -> None:
        while busy and busy[0][0] <= at:
            idle.extend(heapq.heappop(busy)[1])
        while give_up and give_up[0][0] <= at:
            _, tid = heapq.heappop(give_up)
            if timed(matcher.cancel, tid):
                cancelled.add(tid)
                idle.extend(members.pop(tid))
                result.cancelled += 1
        result.passes += 1
        for match in timed(matcher.run, at):
            play(match)

    while result.tickets + result.skipped < tickets:
        now += rng.expovariate(rate)
        while next_tick <= now:
            run_tick(next_tick)
            next_tick += tick
        size = 3 if rng.random() < PARTY_3 else 2 if rng.random() < PARTY_2 else 1
        if len(idle) < size:
            result.skipped += 1
            continue
        chosen = []
        for _ in range(size):
            k = rng.randrange(len(idle))
            idle[k], idle[-1] = idle[-1], idle[k]
            chosen.append(idle.pop())
        seq += 1
        tid = f"t{seq}"
        ticket = Ticket(tid, tuple(Player(i + 1, rating[i].mu, rating[i].sigma, pop.ip[i],
                                          pop.lat[i], pop.lng[i]) for i in chosen),
                        GAME, "std", 1, now, ranked=True)
        timed(matcher.enqueue, ticket)
        members[tid] = tuple(chosen)
        result.tickets += 1
        if rng.random() < CANCEL_SHARE:
            heapq.heappush(give_up, (now + rng.expovariate(1.0 / PATIENCE_MEAN), tid))
    end = next_tick + 120.0
    while next_tick <= end:
        run_tick(next_tick)
        next_tick += tick
    result.waiting_at_end = matcher.waiting()
    result.encounters, result.forgotten = len(matcher.encounters), matcher.encounters.forgotten
    result.simulated_seconds = next_tick
    for k, mus in at_k.items():
        if len(mus) >= 30:
            result.correlation[k] = (len(mus), spearman(list(mus.values()),
                                                        [pop.skill[i] for i in mus]))
    played = [i for i in range(players) if hands[i]]
    result.final_correlation = (len(played), spearman([rating[i].mu for i in played],
                                                      [pop.skill[i] for i in played]))
    return result


def burst(players: int, seed: int, config: MatchConfig) -> tuple[int, int, float, int]:
    """Every player of the population queues at once (ratings drawn around 25 with sd 4);
    passes every second until one makes no table. (tickets, matched, matcher CPU s,
    passes)."""
    rng = random.Random(seed)
    pop = population(players, rng)
    matcher = Matcher(config)
    tickets = [Ticket(f"b{i}", (Player(i + 1, rng.gauss(25.0, 4.0), 3.0, pop.ip[i], pop.lat[i],
                                       pop.lng[i]),), GAME, "std", 1, 0.0, ranked=True)
               for i in range(players)]
    start = time.process_time()
    for t in tickets:
        matcher.enqueue(t)
    matched, passes, now = 0, 0, 0.0
    while True:
        passes += 1
        made = matcher.run(now)
        matched += sum(len(m.tickets) for m in made)
        if not made and now > config.tolerance_steps[-1][0]:
            break
        now += 1.0
    return players, matched, time.process_time() - start, passes


class _NoRatings:
    """A rating book that rates nobody: the settlement write as it was before ratings."""

    async def apply(self, conn: object, s: object) -> int:
        return 0


def _hand(room_id: int, i: int) -> bytes:
    seats = [1 + i % 50, 60 + i % 37, 200 + i % 41, 300 + i % 43]
    return json.dumps({
        "room_id": room_id, "hand_no": 1, "final": False, "game": GAME, "base_score": 1,
        "seats": seats, "nicknames": [f"p{u}" for u in seats], "deltas": [6, 1, -2, -5],
        "payments": [{"reason": "hu", "payer": 3, "payee": 0, "amount": 5, "ref": ""},
                     {"reason": "hu", "payer": 2, "payee": 0, "amount": 1, "ref": ""},
                     {"reason": "hu", "payer": 2, "payee": 1, "amount": 1, "ref": ""}],
        "details": {}, "seed": "01" * 32, "dealer": 0, "next_dealer": 0,
        "settled_at": "2026-12-04T00:00:00Z",
        "events": []}).encode()


async def _write_cost(rate: bool, hands: int, directory: Path, round_no: int,
                      ) -> tuple[float, float]:
    """Per hand: wall and CPU milliseconds of SettlementWriter.write on a fresh SQLite file
    (WAL, synchronous=FULL: one fsync per hand), with or without ratings."""
    engine = make_engine(f"sqlite+aiosqlite:///{directory / f'w{int(rate)}-{round_no}.db'}")
    await migrate(engine)
    writer = SettlementWriter(engine) if rate else SettlementWriter(
        engine, ratings=_NoRatings())  # type: ignore[arg-type]
    batch = [parse_settlement(_hand(800_000 + i, i)) for i in range(hands)]
    wall, cpu = time.perf_counter(), time.process_time()
    for s in batch:
        assert await writer.write(s)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    await engine.dispose()
    return 1000 * wall / hands, 1000 * cpu / hands


def write_cost(hands: int, rounds: int) -> dict[bool, tuple[float, float]]:
    """The best round of each, the two interleaved (a busy machine slows both alike)."""
    best: dict[bool, tuple[float, float]] = {}

    async def measure() -> None:
        with tempfile.TemporaryDirectory() as tmp:
            for k in range(rounds):
                for rate in (False, True):
                    got = await _write_cost(rate, hands, Path(tmp), k)
                    best[rate] = min(best.get(rate, got), got, key=lambda x: x[1])

    asyncio.run(measure())
    return best


def _recent(met: dict[tuple[int, int], list[float]], match: Match, window: float,
            ) -> dict[tuple[int, int], int]:
    """Earlier meetings within the window of the pairs at this table (smaller id first)."""
    uids = match.user_ids
    out = {}
    for a_i, a in enumerate(uids):
        for b in uids[a_i + 1:]:
            pair = (min(a, b), max(a, b))
            times = met.get(pair)
            if times:
                out[pair] = sum(1 for at in times if at > window)
    return out


def _steps_label(config: MatchConfig) -> str:
    return ",".join(f"{t:g}:{w:g}" for t, w in config.tolerance_steps)


def _describe(steps: tuple[tuple[float, float], ...]) -> str:
    return ", ".join(f"{w:g} after {t:g} s" for t, w in steps)


def parse_steps(text: str) -> tuple[tuple[float, float], ...]:
    """"0:3,10:6,20:12,40:inf" -> ((0, 3), (10, 6), (20, 12), (40, inf))."""
    return tuple((float(t), float(w)) for t, w in (part.split(":") for part in text.split(",")))


def report_lines(results: Sequence[Result], args: argparse.Namespace, cmd: str,
                 config: MatchConfig,
                 schedules: Sequence[tuple[str, tuple[tuple[float, float], ...]]],
                 ) -> list[str]:
    total_matched = sum(r.matched_tickets for r in results)
    total_cpu = sum(r.matcher_cpu for r in results)
    lines = [
        "# Matchmaking", "",
        f"`{cmd}` on {machine()}; seed {args.seed}. {args.players:,} players, "
        f"{args.tickets:,} arrivals per rate, a matcher pass every {args.tick:g} s of "
        "simulated time; tolerance steps "
        + " and ".join(f"`{label}` ({_describe(steps)})" for label, steps in schedules)
        + " (rating points of mu allowed after so long a wait); robots off; strangers at most "
        f"{config.stranger_tables_per_day} tables per day; geo alert "
        f"{config.geo_alert_meters:g} m (config `lobby.geo_alert_meters`). Hands take "
        f"{HAND_SECONDS:g} s; {CANCEL_SHARE:.0%} of tickets give up after "
        f"{PATIENCE_MEAN:g} s on average; {PARTY_2:.0%} parties of two, {PARTY_3:.0%} of "
        "three. Simulated times are exact for the seed; CPU figures move between runs (two "
        "cores shared with other work).", "",
        "## Time to a table, spread, constraints", "",
        "| tolerance | tickets/min | tickets (no idle player) | tables | wait p50 (s) | wait p99 (s) | wait max (s) "
        "| mu spread p50 / p90 | skill spread: tables / random | violations "
        "| cancelled (matched) | left waiting |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        lines.append(
            f"| {r.steps} | {r.rate_per_min:,.0f} | {r.tickets:,} ({r.skipped:,}) | {r.tables:,} | "
            f"{pct(r.waits, 0.5):.0f} | {pct(r.waits, 0.99):.0f} | {max(r.waits, default=0):.0f} | "
            f"{pct(r.spreads, 0.5):.2f} / {pct(r.spreads, 0.9):.2f} | "
            f"{statistics.fmean(r.skill_spreads):.2f} / "
            f"{statistics.fmean(r.random_skill_spreads):.2f} | {r.violations} | "
            f"{r.cancelled} ({r.cancelled_matched}) | {r.waiting_at_end} |")
    for r in results:
        if r.rate_per_min == 200:
            p50, p99 = pct(r.waits, 0.5), pct(r.waits, 0.99)
            verdict = "met" if p50 <= 3 and p99 <= 15 else "**missed**"
            lines.append("")
            lines.append(f"Target at 200 tickets/min (issue 23: p50 <= 3 s, p99 <= 15 s) with "
                         f"`{r.steps}`: p50 {p50:.0f} s, p99 {p99:.0f} s: {verdict}.")
    lines += ["", "No idle player: arrivals dropped because every player was queued or "
              "playing (the stream draws from idle players only). "
              "Wait: from the ticket to the pass that seated it (passes every "
              f"{args.tick:g} s, so 0 means the next pass). Spread: highest minus lowest "
              "ticket mu at the table. Skill spread: the same for the hidden skill (sd 1), "
              "beside four players drawn at random. Violations: strangers within the alert "
              "distance, on one IP, or meeting once too often, checked from scratch by "
              "`matching.violations` (must be 0). Left waiting: tickets still queued 120 s "
              "after the last arrival.", "",
              "## Ratings against the hidden skill", "",
              "Spearman rank correlation of mu to the hidden skill, over the players who "
              "reached K hands, at their K-th hand; and over every player who played, at the "
              "end.", "",
              "| tolerance | tickets/min | " + " | ".join(f"K={k}" for k in K_CHECKPOINTS)
              + " | at the end |",
              "|---|---:|" + "---:|" * (len(K_CHECKPOINTS) + 1)]
    for r in results:
        cells = [f"{r.correlation[k][1]:.2f} ({r.correlation[k][0]:,})"
                 if k in r.correlation else "-" for k in K_CHECKPOINTS]
        n, rho = r.final_correlation
        lines.append(f"| {r.steps} | {r.rate_per_min:,.0f} | " + " | ".join(cells)
                     + f" | {rho:.2f} ({n:,}) |")
    lines += ["", "(players in brackets). A hand's luck has twice the spread of skill "
              f"(sd {LUCK:g}), as in mahjong, so few hands say little.", "",
              "## The matcher's cost", "",
              "CPU seconds inside `Matcher.enqueue`, `cancel` and `run` (process time, one "
              "thread), all passes included; the simulation and the rating updates are not "
              "counted.", "",
              "| tolerance | tickets/min | passes | matcher CPU (s) | tickets matched per CPU "
              "second | simulated hours | meetings remembered (forgotten early) |",
              "|---|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        per = r.matched_tickets / r.matcher_cpu if r.matcher_cpu else float("nan")
        lines.append(f"| {r.steps} | {r.rate_per_min:,.0f} | {r.passes:,} | {r.matcher_cpu:.2f} | "
                     f"{per:,.0f} | {r.simulated_seconds / 3600:.1f} | {r.encounters:,} "
                     f"({r.forgotten:,}) |")
    lines += ["", "Meetings remembered: pairs of strangers seated together within the last "
              "24 h, what the anti-collusion rule needs (about 180 bytes each; the matcher "
              "keeps at most 2,000,000 and counts any it forgets early)."]
    lines += ["", f"All rates: {total_matched:,} tickets matched in {total_cpu:.2f} CPU s, "
              f"**{total_matched / total_cpu:,.0f} tickets per second on one core** (target "
              "10,000).", ""]
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="2,000 players, 10,000 arrivals per rate, rates 200,500")
    parser.add_argument("--players", type=int, default=None)
    parser.add_argument("--tickets", type=int, default=None, help="arrivals per rate")
    parser.add_argument("--rates", default=None,
                        help="tickets per minute (default 200,1000,3000)")
    parser.add_argument("--tick", type=float, default=1.0, help="seconds between passes")
    parser.add_argument("--steps", default=None,
                        help="tolerance schedules separated by ';', each 'after:width,...' "
                        f"(default: the matcher's, then {SLOW_STEPS})")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--out", type=Path, default=REPORTS)
    args = parser.parse_args(argv)
    args.players = args.players or (2_000 if args.quick else 20_000)
    args.tickets = args.tickets or (10_000 if args.quick else 200_000)
    args.rates = args.rates or ("200,500" if args.quick else "200,1000,3000")
    rates = [float(r) for r in args.rates.split(",")]
    given = list(sys.argv[1:] if argv is None else argv)
    cmd = " ".join(["python -m bench.bench_matchmaking", *given])
    alert = float(load_config("dev").lobby.geo_alert_meters)
    base = MatchConfig(geo_alert_meters=alert)
    texts = args.steps.split(";") if args.steps else [_steps_label(base), SLOW_STEPS]
    schedules = [(text, parse_steps(text)) for text in texts]
    results = []
    for text, steps in schedules:
        config = replace(base, tolerance_steps=steps)
        for rate in rates:
            started = time.perf_counter()
            results.append(simulate(rate, args.players, args.tickets, args.tick, args.seed,
                                    config))
            print(f"{text} at {rate:g}/min: {time.perf_counter() - started:.1f} s",
                  flush=True)
    lines = report_lines(results, args, cmd, base, schedules)
    queued, matched, cpu, passes = burst(args.players, args.seed, base)
    lines += ["## A burst", "",
              f"All {queued:,} players queue at the same instant (one pool, ratings around 25 "
              f"with sd 4, the matcher's default schedule), passes every second until none "
              f"makes a table: {matched:,} matched in {passes} passes, {cpu:.2f} CPU s "
              f"(enqueue included): **{matched / cpu:,.0f} tickets per second** with the "
              "whole population waiting in one pool.", ""]
    hands = 100 if args.quick else 500
    cost = write_cost(hands, 3)
    (plain_wall, plain_cpu), (rated_wall, rated_cpu) = cost[False], cost[True]
    lines += ["## What rating a hand costs records", "",
              f"`SettlementWriter.write` of {hands} hand settlements on a fresh SQLite file (WAL, "
              "one fsync per hand, this machine's disk), best of 3 interleaved rounds, per "
              "hand:", "",
              "| write | wall (ms) | CPU (ms) |", "|---|---:|---:|",
              f"| without ratings | {plain_wall:.2f} | {plain_cpu:.2f} |",
              f"| with ratings (all-time and season, history) | {rated_wall:.2f} | "
              f"{rated_cpu:.2f} |", "",
              f"Ratings add {rated_cpu - plain_cpu:.2f} ms of CPU per hand (five statements "
              "more in the hand's transaction: the season, the rows, their lock, one "
              "executemany update, the history).", ""]
    write_report(args.out / REPORT, lines)


if __name__ == "__main__":
    main()
