"""Memory over a long run: ``python -m bench.bench_soak [--tables N] [--minutes M] [--step S]``.

Starts the stack as bench/bench_capacity.py does (its settings, one process of each service
and an embedded nats-server), seats ``--tables`` tables of robots of the three games in turn
(each answers a prompt after ``--think`` seconds, 0.5x..1.5x) in rooms of ``--hands`` hands:
64 by default, so that none closes during a run of the usual length and the same rooms play
hand after hand; with a few, rooms close and their four open the next, so that closed rooms'
logs are purged and their state dropped, as in a day of play. Every
``--step`` seconds for ``--minutes`` minutes writes the RSS of every server process, the
hands the table finished and the actions played meanwhile, and the load average. Flat
means: the growth of each process over the run after the warm-up (``--warm`` minutes) is
under 2 %.

``--probe gc`` runs the table with bench/memprobe: at every step its RSS, object counts and
pymalloc arenas, and at the end what a full collection and ``malloc_trim`` give back (a
census of the cyclic garbage), go to ``--probe-out``; cheap, but the end changes the
process. ``--probe trace`` adds tracemalloc and its allocation diffs at every step: it slows
the table and grows it by tracemalloc's own tables (its RSS is not the product's), and a
snapshot of a large heap stalls it long enough for its stall fencing to rebuild its rooms.
``--stall S`` stops the table process (SIGSTOP) for S seconds after each step, as a frozen VM
or an overloaded box would: past its lease's stall bound (table.lease_ttl_seconds) the
table's fencing drops its rooms and rebuilds them from their logs (services/table/lease.py),
which is what a table of a loaded machine does now and then. ``--env KEY=VALUE``
(repeatable) sets a variable of every service, e.g. ``PAIJU_GC_FREEZE_SECONDS=0``.
``--nats-probe`` opens nats-server's monitoring and profiling ports and reports, at every
step, its Go heap (with what was live at its last collection) and each stream's messages
and subjects, the trend after the warm-up, and the allocation sites whose live bytes grew
from the end of the warm-up to the end (bench/natsprobe.py). Writes bench/reports/soak.md
(``--out FILE`` elsewhere).
"""

from __future__ import annotations

import argparse
import os
import platform
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from bench.bench_capacity import Bench, add_env_option, rss_mib, stack_env
from bench.bench_system import scrape, stack_pids, value
from bench.common import REPORTS, write_report
from bench.natsprobe import Ports, Sample, sample

PROBE = Path(__file__).resolve().parent / "memprobe"
NAMES = ("lobby", "table", "arbiter", "records", "nats-server")


def table_counts(port: int) -> tuple[float, float, float]:
    """Hands the table finished, rooms it rebuilt from their logs, and closed rooms whose
    log it purged, since it started."""
    samples = scrape(port)
    return (sum(value(samples, "paiju_table_hands_total", game=g)
                for g in ("xuezhan", "changsha", "dadun")),
            value(samples, "paiju_table_rooms_rebuilt_total"),
            value(samples, "paiju_table_logs_purged_total"))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tables", type=int, default=300)
    parser.add_argument("--think", type=float, default=2.0)
    parser.add_argument("--procs", type=int, default=2, help="load-generator processes")
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--hands", type=int, default=64,
                        help="hands a room plays before it closes and its players open the next")
    parser.add_argument("--step", type=float, default=60.0, help="seconds between samples")
    parser.add_argument("--warm", type=float, default=10.0,
                        help="minutes of warm-up left out of the growth figure")
    parser.add_argument("--stall", type=float, default=0.0,
                        help="seconds the table is stopped after each step (0: never)")
    add_env_option(parser)
    parser.add_argument("--probe", choices=("gc", "trace"), default="",
                        help="bench/memprobe in the table")
    parser.add_argument("--probe-out", type=Path, default=Path("var/memprobe.txt"))
    parser.add_argument("--nats-probe", action="store_true",
                        help="nats-server's Go heap, streams and growing allocation sites")
    parser.add_argument("--out", type=Path, default=REPORTS / "soak.md")
    args = parser.parse_args(argv)
    from tests.system.conftest import SECRET, start_stack, stop_stack
    env = stack_env(args.env)
    if args.probe:
        args.probe_out.parent.mkdir(parents=True, exist_ok=True)
        args.probe_out.write_text("")
        env.update(PYTHONPATH=os.pathsep.join(filter(None, (str(PROBE),
                                                            os.environ.get("PYTHONPATH")))),
                   PAIJU_MEMPROBE="table", PAIJU_MEMPROBE_OUT=str(args.probe_out.resolve()),
                   PAIJU_MEMPROBE_TRACE="1" if args.probe == "trace" else "0")
    rows: list[tuple[float, dict[str, float], tuple[float, float, float], int, str]] = []
    ports = Ports() if args.nats_probe else None
    nats: list[tuple[float, Sample]] = []
    with tempfile.TemporaryDirectory() as tmp:
        stack = start_stack(Path(tmp), nats_args=ports.flags() if ports else (), **env)
        bench = Bench(stack.lobby_address, SECRET, args.procs, args.think, hands=args.hands)
        try:
            pids = stack_pids(stack)
            bench.grow(args.tables)
            print(f"{bench.tables} tables seated", flush=True)
            start = time.monotonic()
            bench.ask("take")
            while (elapsed := time.monotonic() - start) < 60 * args.minutes:
                time.sleep(min(args.step, 60 * args.minutes - elapsed))
                stats = bench.ask("take")
                rss = {n: rss_mib(pids[n]) for n in NAMES if n in pids}
                load = " ".join(f"{x:.2f}" for x in os.getloadavg())
                row = (time.monotonic() - start, rss, table_counts(stack.table.metrics_port),
                       sum(s.actions for s in stats), load)
                rows.append(row)
                if ports:
                    try:
                        nats.append((row[0], sample(ports)))
                    except (OSError, ValueError) as exc:   # a gap in its table, not a lost run
                        print(f"nats-server's probe failed: {exc!r}", flush=True)
                if args.probe:
                    os.kill(pids["table"], signal.SIGUSR1)
                if args.stall > 0:
                    os.kill(pids["table"], signal.SIGSTOP)
                    try:
                        time.sleep(args.stall)
                    finally:
                        os.kill(pids["table"], signal.SIGCONT)
                print(f"{row[0] / 60:5.1f} min  " + "  ".join(f"{n} {v:.0f}" for n, v in rss.items())
                      + f"  hands {row[2][0]:.0f}  rebuilt {row[2][1]:.0f}  purged {row[2][2]:.0f}"
                      + f"  actions {row[3]}"
                      + f"  load {load}", flush=True)
            if args.probe:
                os.kill(pids["table"], signal.SIGUSR2)
                time.sleep(5)
        finally:
            bench.stop()
            stop_stack(stack)
    write_report(args.out, report(rows, args, bench.tables, argv) + nats_report(nats, args.warm))
    return 0


def nats_report(nats: list[tuple[float, Sample]], warm: float) -> list[str]:
    """nats-server's memory by step (MiB) and its streams; the trend of its heap live at
    the last collection after the warm-up; the allocation sites whose live bytes grew the
    most from the end of the warm-up to the end."""
    if not nats:
        return []
    names = sorted(nats[-1][1].streams)
    mib = 2 ** 20
    lines = ["", "## nats-server", "",
             "RSS as nats-server reports it; the Go heap: *at GC*, what was live at its last "
             "collection (the heap profile's in-use bytes), *alloc* (HeapAlloc: that and the "
             "garbage made since), *in use* (HeapInuse), *held* (HeapIdle - HeapReleased: "
             "free, not given back to the OS); each stream's messages / distinct subjects.",
             "", "| minute | RSS | at GC | alloc | in use | held | GCs | " + " | ".join(names)
             + " |", "|---|" + "---|" * (6 + len(names))]
    for at, s in nats:
        m = s.memstats
        lines.append(
            f"| {at / 60:.1f} | {s.rss_mib:.0f} | {s.live_at_gc / mib:.1f} | "
            f"{m.get('HeapAlloc', 0) / mib:.1f} | {m.get('HeapInuse', 0) / mib:.1f} | "
            f"{(m.get('HeapIdle', 0) - m.get('HeapReleased', 0)) / mib:.1f} | "
            f"{m.get('NumGC', 0):.0f} | "
            + " | ".join(f"{s.streams.get(n, {}).get('messages', 0):.0f} / "
                         f"{s.streams.get(n, {}).get('subjects', 0):.0f}" for n in names) + " |")
    after = [(at, s) for at, s in nats if at >= 60 * warm]
    if len(after) >= 3:
        trend = {"RSS": slope([(at / 60, s.rss_mib) for at, s in after]),
                 "heap live at GC": slope([(at / 60, s.live_at_gc / mib) for at, s in after])}
        lines += ["", "Least-squares trend after the warm-up (MiB per minute): "
                  + ", ".join(f"{k} {v:+.2f}" for k, v in trend.items()) + "."]
        first, last = after[0][1].sites, after[-1][1].sites
        grew = sorted(((last.get(k, 0.0) - first.get(k, 0.0), k)
                       for k in first.keys() | last.keys()), reverse=True)
        lines += ["", "Live heap at the last collection by allocation site (the first frames "
                  "outside Go's runtime, callee first), from the end of the warm-up to the "
                  "end, MiB:", "", "| grew | at the end | site |", "|---|---|---|"]
        lines += [f"| {d / mib:+.2f} | {last.get(k, 0.0) / mib:.2f} | `{k}` |"
                  for d, k in grew[:12] if d > 0]
    return lines


def slope(points: list[tuple[float, float]]) -> float:
    """The least-squares slope of y over x."""
    xs, ys = zip(*points, strict=True)
    return statistics.linear_regression(xs, ys).slope


def report(rows: list[tuple[float, dict[str, float], tuple[float, float, float], int, str]],
           args: argparse.Namespace, tables: int, argv: Sequence[str] | None) -> list[str]:
    given = " ".join(sys.argv[1:] if argv is None else argv)
    lines = ["# Memory over a long run", "",
             f"Command: `python -m bench.bench_soak {given}`. Machine: "
             f"{platform.python_implementation()} {platform.python_version()}, "
             f"{os.cpu_count()} cores, shared with the load generator ({args.procs} processes).",
             "", f"{tables} tables ({4 * tables} robot players, think {args.think:g} s), "
             + f"rooms of {args.hands} hand{'s' if args.hands != 1 else ''} (when one closes, "
             "its four open the next). "
             + "RSS in MiB at the end of each step; hands: finished by the table since the "
             "start; rebuilt: rooms the table rebuilt from their logs since the start (after a "
             "stall); purged: closed rooms whose log the table purged since the start; load: "
             "the machine's 1/5/15-minute load average."
             + (f" After each step the table was stopped for {args.stall:g} s (SIGSTOP)."
                if args.stall > 0 else ""), "",
             "| minute | " + " | ".join(NAMES) + " | hands | rebuilt | purged | actions in step "
             "| load |",
             "|---|" + "---|" * (len(NAMES) + 5)]
    for at, rss, (played, rebuilt, purged), actions, load in rows:
        lines.append(f"| {at / 60:.1f} | " + " | ".join(f"{rss.get(n, 0):.0f}" for n in NAMES)
                     + f" | {played:.0f} | {rebuilt:.0f} | {purged:.0f} | {actions} | {load} |")
    after = [r for r in rows if r[0] >= 60 * args.warm]
    if len(after) >= 2:
        lines += ["", f"Growth from minute {after[0][0] / 60:.1f} to {after[-1][0] / 60:.1f} "
                  "(after the warm-up):", ""]
        for n in NAMES:
            a, b = after[0][1].get(n, 0), after[-1][1].get(n, 0)
            if a:
                lines.append(f"- {n}: {a:.0f} -> {b:.0f} MiB ({100 * (b - a) / a:+.1f} %)")
    return lines


if __name__ == "__main__":
    raise SystemExit(main())
