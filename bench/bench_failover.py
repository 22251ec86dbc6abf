"""Table failover: ``python -m bench.bench_failover [--runs N] [--rooms R] [--freeze S]``.

How long a table's rooms stop when the table dies or freezes, with the shipped lease
(``table.lease_ttl_seconds`` of config/test.toml, the value dev and prod ship as well), and
whether a frozen table that is continued stays silent about the rooms it lost.

One nats-server, records (SQLite), arbiter and lobby, and two tables as processes on
loopback (tests/system/conftest.py's stack); robots play R rooms of XueZhan at once with a
short think time, H hands a room (``--hands``, 8), a new room after each that ends (a room's
log, which an adopter reads whole, grows with its hands). Then N times each, alternately:

- **kill -9**: SIGKILL the table that owns most of the rooms in play; per room, the time
  from the signal to its first event from the other table (the room plays on); the killed
  table is started again before the next run;
- **SIGSTOP**: stop that table (at a moment its rooms are quiet, so nothing of theirs is
  half sent), measure the same per room (the time the frozen table loses its rooms in), keep
  it stopped ``--freeze`` seconds (20 by default), then SIGCONT it and watch ``2 x lease +
  1`` seconds: any log append of the continued process for a room it lost (seen on the room's
  log subject, refused or not, with the log's answer) and any message on the room's event
  subject at a position before its new owner's first one is counted as a fence breach, but
  for the first append of a room within a second of SIGCONT, with its retries, if the log
  stored none of them (one begun before the stop and sent after it).

At the end every hand is checked in records: none settled twice. Writes
bench/reports/failover.md (``--out DIR`` elsewhere): pause p50 / p99 / max per fault over all
rooms of all runs, and the breaches. The compact form with assertions is
tests/system/test_table_frozen_while_playing.py.

The full chaos run (``make chaos``, bench/bench_chaos.py: a three-node NATS cluster,
PostgreSQL, replicas of every service) runs a table kill among its other faults; this bench
runs only tables' faults, many times, on a stack light enough to repeat them.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import platform
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path

from bench.common import REPORTS, write_report
from tests.support.failover import FailoverBench, Trial, doubled, now, quantile


def pauses(trials: list[Trial], kind: str) -> tuple[list[float], int]:
    values = [v for t in trials if t.kind == kind for v in t.resume.values()]
    return [v for v in values if v is not None], sum(1 for v in values if v is None)


def report(trials: list[Trial], ttl: float, args: argparse.Namespace, took: float,
           settled: int, double: list[str]) -> list[str]:
    def row(kind: str, label: str) -> str:
        got, stuck = pauses(trials, kind)
        n = sum(1 for t in trials if t.kind == kind)
        if not got:
            return f"| {label} | {n} | 0 | - | - | - | {stuck} |"
        return (f"| {label} | {n} | {len(got) + stuck} | {quantile(got, 0.5):.2f} "
                f"| {quantile(got, 0.99):.2f} | {max(got):.2f} | {stuck} |")

    breaches = [b for t in trials for b in t.breaches]
    lines = [
        "# Table failover: kill -9 and SIGSTOP of a table mid-hand",
        "",
        f"`{args.command}`: Python {platform.python_version()} on {os.cpu_count()} cores, "
        f"shipped lease `table.lease_ttl_seconds` = {ttl:g} s (config/*.toml; renewed every "
        f"{ttl / 4:g} s, adoption scan every {ttl / 8:g} s). One nats-server, records, "
        f"arbiter, lobby and two tables as processes on loopback; {args.rooms} XueZhan rooms "
        f"in play at once, four robots each (think {args.think:g} s), {args.hands} hands a "
        f"room, a new room after each that ends. {args.runs} kill -9 and {args.runs} "
        f"SIGSTOP ({args.freeze:g} s) of the table owning most rooms in play, alternately; "
        f"the run took {took:.0f} s.",
        "",
        "Per room of the table hit: the time from the signal to the room's first event from "
        "the other table (events in flight excluded: 0.1 s), in seconds. For SIGSTOP this is "
        "the bound within which the frozen table loses its rooms.",
        "",
        "| fault | runs | rooms hit | p50 | p99 | max | rooms stuck |",
        "|---|---:|---:|---:|---:|---:|---:|",
        row("kill", "kill -9"),
        row("stop", f"SIGSTOP {args.freeze:g} s"),
        "",
        "After SIGCONT, watched for 2 x lease + 1 s: log appends of the continued table for "
        "the rooms it lost (refused or not; a room's first append within 1 s of SIGCONT, with "
        "its retries, not stored, excepted: one begun before the stop, named in the runs) and "
        "messages at positions before the new owner's: "
        f"**{len(breaches)}**. Hands settled: {settled}, settled twice: **{len(double)}**.",
    ]
    if breaches or double:
        lines += ["", "## Problems", ""] + [f"- {b}" for b in [*breaches, *double][:30]]
    lines += ["", "## Runs", ""]
    for t in trials:
        hit = "/".join("-" if v is None else f"{v:.2f}" for v in t.resume.values())
        lines.append(f"- {t.kind} {t.table}: {len(t.rooms)} rooms, {hit or '-'} s"
                     + "".join(f"; {n}" for n in t.notes)
                     + (f"; {len(t.breaches)} breaches" if t.breaches else ""))
    return lines


@contextlib.contextmanager
def workdir(keep: bool) -> Iterator[Path]:
    if keep:
        tmp = tempfile.mkdtemp(prefix="paiju-failover-")
        print(f"logs in {tmp}", flush=True)
        yield Path(tmp)
        return
    with tempfile.TemporaryDirectory(prefix="paiju-failover-") as name:
        yield Path(name)


async def run(args: argparse.Namespace) -> int:
    with workdir(args.keep) as tmp:
        bench = FailoverBench(tmp, args.rooms, args.think, hands=args.hands)
        started = now()
        trials: list[Trial] = []
        try:
            await bench.start()
            bench.play_on(first_uid=71_000)
            await asyncio.sleep(3.0)
            for i in range(args.runs):
                for kind in ("kill", "stop"):
                    trial = await (bench.kill() if kind == "kill" else bench.freeze(args.freeze))
                    trials.append(trial)
                    print(f"run {i + 1} {kind} {trial.table}: "
                          f"{[None if v is None else round(v, 2) for v in trial.resume.values()]}"
                          f"{' BREACHES ' + str(trial.breaches) if trial.breaches else ''}",
                          flush=True)
                    await asyncio.sleep(2.0)
            await asyncio.sleep(2.0)
            hands = await bench.hands()
        finally:
            await bench.stop()
        double = doubled(hands)
        path = args.out / "failover.md"
        write_report(path, report(trials, bench.ttl, args, now() - started,
                                  sum(1 for h in hands if not h.final), double)
                     + kept_sections(path))
        stuck = sum(pauses(trials, k)[1] for k in ("kill", "stop"))
        return 1 if stuck or double or any(t.breaches for t in trials) else 0


KEEP_FROM = "## What the figure is made of"


def kept_sections(path: Path) -> list[str]:
    """The report's written sections (from KEEP_FROM on: the analysis and the figures
    measured on earlier code), carried over when the figures above them are measured anew."""
    if not path.exists():
        return []
    text = path.read_text(encoding="utf-8")
    return ["", *text[text.index(KEEP_FROM):].rstrip("\n").splitlines()] \
        if KEEP_FROM in text else []


def interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # SIGTERM (a timeout, a CI cancel): stop the stack first


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="runs of each fault")
    parser.add_argument("--rooms", type=int, default=4, help="rooms in play")
    parser.add_argument("--freeze", type=float, default=20.0, help="seconds a SIGSTOP lasts")
    parser.add_argument("--hands", type=int, default=8,
                        help="hands per room (a new room follows each that ends)")
    parser.add_argument("--think", type=float, default=0.3, help="robots' think time")
    parser.add_argument("--keep", action="store_true", help="keep the processes' logs")
    parser.add_argument("--out", type=Path, default=REPORTS, help="directory of the report")
    args = parser.parse_args(argv)
    args.command = (f"python -m bench.bench_failover --runs {args.runs} --rooms {args.rooms} "
                    f"--hands {args.hands} --freeze {args.freeze:g}")
    signal.signal(signal.SIGTERM, interrupted)
    raise SystemExit(asyncio.run(run(args)))


if __name__ == "__main__":
    main()
