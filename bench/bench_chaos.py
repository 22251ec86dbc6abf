"""Chaos benchmark: ``python -m bench.bench_chaos [--quick] [--rounds N] [--lanes L] [--hands H]``.

The full-length run of the chaos suite (``make chaos``; the compact form is
tests/cluster/test_chaos.py, and both use tests/support/cluster.py): a three-node
nats-server JetStream cluster at R3, two records on a fresh PostgreSQL database, two
arbiters, three tables and two lobbies as processes on loopback; robots play every game, the
four seats of each room spread over both lobbies, L rooms of each game in play at once and
new rooms created as others end. While hands are in flight, one fault at a time: SIGKILL the
nats-server leading the room-log stream of the most rooms, a table owning rooms, a lobby with
seated players, an arbiter, a records (each started again), SIGSTOP of a table owning rooms
(SIGCONT 8 s later), then a SIGTERM rolling restart of every table, lobby, arbiter and
records, and of every NATS node in lame-duck mode; the whole list N times. Then a run of its own with every NATS route through
a proxy: the node of a table owning rooms in play is cut off from the other two while its
clients stay connected to it (tests/support/partition.py; ``--no-partition`` skips it).

Writes bench/reports/chaos.md (``--out DIR`` elsewhere): per fault kind the recovery (the
longest silence of each affected room, p50 / max; the time to its next event; the longest
wait for a prompt), hands lost / doubled (must be 0 / 0), the replicas in force for every
stream and bucket, and what a player sees. Exits 1 when a hand was lost or doubled, a
frame leaked, or a stream is not at R3 (after writing the report). Needs PostgreSQL at
PAIJU_TEST_POSTGRES (default postgres@127.0.0.1:5432/test): without it the run is skipped,
or fails with ``--require-postgres`` (``make chaos``).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import platform
import shutil
import signal
import tempfile
from pathlib import Path

from bench.common import REPORTS, write_report
from services.common.config import load_config
from tests.support.cluster import (
    COMPACT_PLAN,
    FAULT_KINDS,
    RECONNECT_STORM,
    ChaosPlan,
    ChaosResult,
    FaultRecord,
    KindFigures,
    PostgresUnavailable,
    StackSpec,
    create_database,
    describe,
    drop_database,
    figures,
    quantile,
    run_chaos,
)
from tests.support.partition import PartitionResult, run_partition
from tests.support.pgctl import PostgresUnavailable as PrivatePostgresUnavailable
from tests.support.pgctl import PrivatePostgres

CONTEXT = {
    "nats-leader": "the nats-server leading a room-log stream dies: the rooms of the streams "
                   "it led wait for a new leader, clients on that server reconnect to another",
    "table-kill": "the table running the room dies: another table takes its lease and "
                  "replays the room's log",
    "table-freeze": "the table running the room stops running (SIGSTOP: a long pause, a "
                    "stopped VM) and goes on later: another table takes its rooms meanwhile; "
                    "the continued table writes nothing for them",
    "lobby-kill": "the player's lobby dies: the client reconnects to the other lobby and "
                  "resumes from the snapshot",
    "arbiter-kill": "one arbiter dies: NATS hands the tables' requests to the other (a "
                    "window it had taken is decided in-process)",
    "records-kill": "one records dies: settlements wait in JetStream for the other",
    "postgres-restart": "the database stops and starts again (a restart, a failover): "
                        "settlements wait in JetStream until it is back",
    "rolling-tables": "each table in turn is stopped (SIGTERM: it hands its rooms over) and "
                      "started again",
    "rolling-lobbies": "each lobby in turn is stopped (SIGTERM: it tells its clients to "
                       "reconnect) and started again",
    "rolling-arbiters": "each arbiter in turn is stopped (SIGTERM) and started again",
    "rolling-records": "each records in turn is stopped (SIGTERM: settlements wait in "
                       "JetStream for the other) and started again",
    "rolling-nats": "each NATS node in turn is stopped in lame-duck mode (a rolling upgrade: "
                    "it hands its stream leaderships over, then closes its clients over 30 s) "
                    "and started again",
    "partition": "the NATS node of the room's table is cut off from the other two: the "
                 "services on it move to the majority, the table's rooms play on there",
    "partition-lobby": "the NATS node of the player's lobby is cut off: the lobby moves to the "
                       "majority and its players play on",
}


def seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def p50(values: list[float]) -> float | None:
    return quantile(values, 0.5) if values else None


def peak(values: list[float]) -> float | None:
    return max(values) if values else None


def player_sees(k: KindFigures) -> str:
    """One sentence: what a player of an affected room lives through."""
    if not k.rooms:
        return "no room was in play where it struck: nothing to see."
    longest = peak(k.pause)
    if longest is None:
        seen = "the room never moved again"
    elif longest < 1.0:
        seen = (f"nothing noticeable: play goes on (longest silence {longest:.1f} s, "
                f"p50 {p50(k.pause):.1f} s)")
    else:
        seen = (f"a pause of {p50(k.pause):.1f} s (at most {longest:.1f} s), then the game "
                "goes on")
    if k.election:
        beyond = peak(k.beyond)
        seen += (f"; the broker's own leader election took {p50(k.election):.1f} s (at most "
                 f"{peak(k.election):.1f} s), and "
                 + ("no room paused longer than its stream's" if beyond is None or beyond <= 0
                    else f"a room paused at most {beyond:.1f} s longer than its stream's"))
    problems = []
    if k.stuck:
        problems.append(f"{k.stuck} rooms never had an event again")
    if k.lost or k.doubled:
        problems.append(f"{k.lost} hands lost and {k.doubled} doubled in the rooms it hit")
    if k.players_lost:
        problems.append(f"{k.players_lost} players of that lobby never got a prompt again")
    if k.gave_up:
        problems.append(f"{k.gave_up} robots gave up or missed their room's end right after it")
    if k.create_failures:
        problems.append(f"{k.create_failures} rooms could not be created right after it")
    if k.errors:
        problems.append("the harness could not complete it: " + "; ".join(k.errors))
    return seen + (("; but " + "; ".join(problems)) if problems else "") + "."


def report(result: ChaosResult, command: str) -> list[str]:
    plan, v = result.plan, result.verdict
    spec = plan.stack
    kinds = figures(result)
    lines = [
        "# Chaos: faults mid-hand on a replicated cluster",
        "",
        f"`{command}`: Python {platform.python_version()} on {os.cpu_count()} cores. Stack: "
        f"{spec.nats_nodes} nats-servers (one JetStream cluster, streams and buckets at "
        f"R{spec.replicas}), {spec.records} records on PostgreSQL, {spec.arbiters} arbiters, "
        f"{spec.tables} tables (lease {spec.lease_ttl_seconds} s), {spec.lobbies} lobbies, "
        f"all processes on loopback; started in {result.stack_started_in:.1f} s. Robots: "
        f"{plan.lanes_per_game} rooms of each game in play at once, {plan.hands_per_room} "
        f"hands per room, seats spread over both lobbies, room timers "
        f"{dict(plan.room_options)}; new rooms are created as others end. Faults one at a "
        f"time, the list {plan.repeat} time(s); the run took {result.duration:.0f} s: "
        f"{v.rooms} rooms, {v.hands_started} hands started, {v.hands_settled} settled.",
        "",
        "Measured in the benchmark process: observers subscribed to `room.*.events` and "
        "`user.*.inbox` on every NATS node timestamp each room's events; robots timestamp "
        "their prompts. Per room in play when a fault struck: **pause** = the longest "
        "silence of its events from the fault until the fault was over (for a SIGTERM the "
        "pause comes when the process hands over, not at the signal); **next event** = "
        "fault to the room's first event after it (events already in flight excluded: "
        "0.1 s); **prompt gap** = the longest wait of its robots (those of the lobby, for "
        "a lobby fault) for a prompt; **settle lag** = a hand's end (its hand-over event) "
        "to its settlement row in PostgreSQL (polled every 0.25 s), for the hands that "
        f"ended from the fault to {plan.settle_seconds:g} s after it was over. Seconds; "
        "p50 and max over the "
        "rooms hit, p99 and max over the hands.",
        "",
        *figure_table(kinds),
    ]
    lines += ["", f"Whole run: {len(v.lost)} hands lost, {len(v.doubled)} doubled, "
              f"{len(v.not_zero_sum)} not zero-sum, {len(v.leaks)} frames carrying another "
              f"seat's hidden tiles or cards ({v.frames_checked} frames checked against the "
              f"stored replays).", "", "## What a player sees", ""]
    for k in kinds.values():
        lines.append(f"- **{k.kind}** ({CONTEXT.get(k.kind, '')}): {player_sees(k)}")
    lines += ["", "## Replicas in force", "",
              "| stream / bucket | configured | peers in its raft group |", "|---|---:|---:|"]
    for name, (configured, peers) in v.replicas.items():
        lines.append(f"| {name} | {configured} | {peers} |")
    lines += ["", "## Checks", "",
              f"- rooms finished: {v.rooms_finished} of {v.rooms}",
              f"- hands settled exactly once: {v.hands_settled} of {v.hands_started} started "
              f"({len(v.lost)} lost, {len(v.doubled)} doubled)",
              f"- ledger zero-sum per hand: {'yes' if not v.not_zero_sum else 'NO'}",
              f"- no hidden information leaked: {'yes' if not v.leaks else 'NO'} "
              f"({v.frames_checked} frames)",
              f"- robots that gave up or missed their room's end: {len(v.gave_up)}",
              f"- rooms that could not be created: {len(v.create_failures)}",
              f"- robots in a reconnect loop (over {RECONNECT_STORM} reconnects in one room): "
              f"{len(v.reconnect_storms)}",
              f"- refused actions: {v.stale} stale (the decision had moved on), "
              f"{sum(v.transient.values())} \"a moment\" ({dict(v.transient)}), "
              f"{len(v.refused)} other",
              f"- processes that failed their first start (started once more): "
              f"{'; '.join(result.start_failures) or 'none'}",
              f"- every stream and bucket at R{spec.replicas}: "
              f"{'yes' if not v.not_r3 else 'NO: ' + '; '.join(v.not_r3)}"]
    problems = [("Hands lost", v.lost), ("Hands doubled", v.doubled),
                ("Not zero-sum", v.not_zero_sum), ("Leaks", v.leaks),
                ("Rooms not finished", v.unfinished), ("Robots that gave up", v.gave_up),
                ("Other refused actions", v.refused), ("Rooms not created", v.create_failures),
                ("Reconnect loops", v.reconnect_storms),
                ("Harness errors", [e for k in kinds.values() for e in k.errors])]
    if any(items for _, items in problems):
        lines += ["", "## Problems, in detail (at most 15 each)", ""]
        for title, items in problems:
            if items:
                lines.append(f"{title} ({len(items)}):")
                lines += [f"- {item}" for item in items[:15]]
                lines.append("")
    lines += ["", "## Faults, one by one", "", *one_by_one(result.faults)]
    return lines


def figure_table(kinds: dict[str, KindFigures]) -> list[str]:
    """The per-kind table of pauses, next events, prompt gaps and hands."""
    lines = ["| fault | times | rooms hit | pause p50 | pause max | next event p50 "
             "| next event max | prompt gap p50 | prompt gap max | rooms stuck | hands lost "
             "| hands doubled | settle lag p99 | settle lag max |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for k in kinds.values():
        lag = k.settle_lag
        lines.append(f"| {k.kind} | {k.faults} | {k.rooms} | {seconds(p50(k.pause))} "
                     f"| {seconds(peak(k.pause))} | {seconds(p50(k.nxt))} "
                     f"| {seconds(peak(k.nxt))} | {seconds(p50(k.prompt))} "
                     f"| {seconds(peak(k.prompt))} | {k.stuck} | {k.lost} | {k.doubled} "
                     f"| {seconds(quantile(lag, 0.99)) if lag else '-'} "
                     f"| {seconds(peak(lag))} |")
    return lines


def one_by_one(faults: list[FaultRecord]) -> list[str]:
    lines = []
    for f in faults:
        hit = sorted(x for x in f.pause.values() if x is not None)
        lines.append(f"- {f.kind} {f.target}: {len(f.rooms)} rooms, pause "
                     f"{'/'.join(f'{x:.1f}' for x in hit) or '-'} s"
                     + (f"; ERROR {f.error}" if f.error else "")
                     + "".join(f"; {n}" for n in f.notes))
    return lines


def partition_report(result: PartitionResult) -> list[str]:
    """The partition run's section: a NATS node cut off from the other two (its routes
    through proxies the run cuts), its clients left connected to it."""
    v = result.outcome.verdict
    kinds = figures(result.outcome)
    lines = ["", "## A NATS node cut off from its cluster", "",
             "A run of its own (tests/support/partition.py): the same stack with every NATS "
             "route through a proxy; mid-hand, the node a table owning rooms in play is "
             "connected to (and a lobby, when one is) is cut off from the other two while its "
             "clients stay connected to it, then healed once every service has left it. "
             f"{v.rooms} rooms, {v.hands_settled} of {v.hands_started} hands settled.", "",
             *figure_table(kinds), ""]
    for k in kinds.values():
        lines.append(f"- **{k.kind}** ({CONTEXT.get(k.kind, '')}): {player_sees(k)}")
    lines += ["",
              f"- one writer per room log: {result.rooms_logged} logs read, "
              f"{len(result.breaches)} with a second writer"
              + (f" ({'; '.join(result.breaches[:5])})" if result.breaches else ""),
              f"- hands settled exactly once: {v.hands_settled} of {v.hands_started} "
              f"({len(v.lost)} lost, {len(v.doubled)} doubled), zero-sum: "
              f"{'yes' if not v.not_zero_sum else 'NO'}",
              f"- refused actions: {v.stale} stale, {sum(v.transient.values())} \"a moment\", "
              f"{len(v.refused)} other",
              "- the healed node's store: " + (
                  "the same as the others'" if not result.behind
                  else "behind: " + "; ".join(result.behind[:5])),
              "", *one_by_one(result.outcome.faults)]
    return lines


def failed(result: ChaosResult, replicas: int) -> list[str]:
    v = result.verdict
    out = []
    if v.lost or v.doubled:
        out.append(f"{len(v.lost)} hands lost, {len(v.doubled)} doubled")
    if v.leaks:
        out.append(f"{len(v.leaks)} leaks")
    if v.not_r3:
        out.append(f"streams not at R{replicas}: {v.not_r3}")
    return out


async def partition_run(tmp: Path, plan: ChaosPlan) -> PartitionResult:
    tmp.mkdir(parents=True, exist_ok=True)
    db = await create_database()
    try:
        return await run_partition(tmp, plan, db)
    finally:
        await drop_database(db)


def run_on_postgres(tmp: Path, plan: ChaosPlan) -> ChaosResult:
    """The run, on a PostgreSQL of its own (pg_ctl) when the plan restarts the database,
    else on a fresh database of the shared one (PAIJU_TEST_POSTGRES)."""
    if "postgres-restart" not in plan.faults:
        return asyncio.run(run_chaos(tmp, plan))
    pg = PrivatePostgres()
    try:
        pg.start()
        return asyncio.run(run_chaos(tmp, plan, asyncio.run(create_database(server=pg))))
    finally:
        pg.stop()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="the compact run of make test (1 room per game, 3 hands, once)")
    parser.add_argument("--rounds", type=int, default=2, help="times the fault list is run")
    parser.add_argument("--lanes", type=int, default=2, help="rooms of each game at once")
    parser.add_argument("--hands", type=int, default=4, help="hands per room")
    parser.add_argument("--faults", default=",".join(FAULT_KINDS),
                        help=f"comma-separated subset of {','.join(FAULT_KINDS)}")
    parser.add_argument("--keep", action="store_true", help="keep the logs directory")
    parser.add_argument("--no-partition", dest="partition", action="store_false",
                        help="skip the run with a NATS node cut off from its cluster")
    parser.add_argument("--require-postgres", action="store_true",
                        help="fail without PostgreSQL (make chaos); else skip (make bench)")
    parser.add_argument("--out", type=Path, default=REPORTS,
                        help="directory of the report (default: bench/reports)")
    args = parser.parse_args(argv)
    faults = tuple(f for f in args.faults.split(",") if f)
    unknown = set(faults) - set(FAULT_KINDS)
    if unknown:
        parser.error(f"unknown faults {sorted(unknown)}")
    if args.quick:
        plan = dataclasses.replace(COMPACT_PLAN, faults=faults)
        command = "python -m bench.bench_chaos --quick"
    else:
        plan = ChaosPlan(faults=faults, repeat=args.rounds, lanes_per_game=args.lanes,
                         hands_per_room=args.hands, warmup_seconds=5.0, settle_seconds=3.0,
                         recovery_bound=60.0, finish_bound=300.0,
                         # the lease operators run (config/prod.toml), not a shorter one
                         stack=StackSpec(lease_ttl_seconds=load_config(
                             "prod", environ={}).table.lease_ttl_seconds))
        command = (f"python -m bench.bench_chaos --rounds {args.rounds} --lanes {args.lanes} "
                   f"--hands {args.hands}")
    if args.faults != ",".join(FAULT_KINDS):
        command += f" --faults {args.faults}"
    tmp = Path(tempfile.mkdtemp(prefix="paiju-chaos-"))

    def interrupted(signum: int, frame: object) -> None:
        raise KeyboardInterrupt  # SIGTERM (a timeout, a CI cancel): stop the stack first

    signal.signal(signal.SIGTERM, interrupted)
    try:
        result = run_on_postgres(tmp, plan)
    except (PostgresUnavailable, PrivatePostgresUnavailable) as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if args.require_postgres:
            raise SystemExit(f"bench_chaos needs PostgreSQL: {exc}") from None
        print(f"bench_chaos skipped (needs PostgreSQL): {exc}")
        return
    (tmp / "summary.txt").write_text(describe(result, full=True) + "\n", encoding="utf-8")
    lines = report(result, command)
    problems = failed(result, plan.stack.replicas)
    if args.partition:
        cut = asyncio.run(partition_run(tmp / "partition", dataclasses.replace(
            plan, faults=("partition",), repeat=1,
            stack=dataclasses.replace(plan.stack, fronted_routes=True))))
        lines += partition_report(cut)
        problems += [f"partition: {p}" for p in failed(cut.outcome, plan.stack.replicas)]
        problems += [f"partition: a second writer in {b}" for b in cut.breaches]
    write_report(args.out / "chaos.md", lines)
    # the logs are what explains a harness error (a process that did not stop in time, say)
    if args.keep or problems or any(f.error for f in result.faults):
        print(f"logs kept in {tmp}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    if problems:
        raise SystemExit("chaos: " + "; ".join(problems))


if __name__ == "__main__":
    main()
