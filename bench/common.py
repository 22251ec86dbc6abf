"""What the benchmark scripts share: their options, best-of-N timing and the report.

A script reads ``parse_options(__doc__)`` (``--quick`` for a short run; ``--out DIR`` to write
the report somewhere else than bench/reports, e.g. for a trial run), times with ``best_of``,
``timed`` or ``best_of_each``, names itself in the report with ``command`` and ``machine``, and
ends with ``write_report``. Benchmarks that drive the stack from load-generator processes of
their own (bench_capacity, bench_cold) start and ask them through ``LoadProcesses``.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

REPORTS = Path(__file__).resolve().parent / "reports"
T = TypeVar("T")


@dataclass(frozen=True)
class Options:
    quick: bool
    out: Path

    def report(self, name: str) -> Path:
        """Where the report ``name`` (e.g. "lobby.md") goes."""
        return self.out / name


def parse_options(doc: str | None, argv: Sequence[str] | None = None) -> Options:
    """``--quick`` and ``--out``; the description is the first line of the script's doc."""
    parser = argparse.ArgumentParser(description=(doc or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short run")
    parser.add_argument("--out", type=Path, default=REPORTS,
                        help="directory of the report (default: bench/reports)")
    args = parser.parse_args(argv)
    return Options(args.quick, args.out)


def timed(rounds: int, fn: Callable[[], T]) -> tuple[float, T]:
    """The best wall time of ``rounds`` calls of ``fn`` (seconds) and the last call's result."""
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def best_of(rounds: int, fn: Callable[[], object]) -> float:
    """The best wall time of ``rounds`` calls of ``fn``, in seconds."""
    return timed(rounds, fn)[0]


def best_of_each(rounds: int, fns: Sequence[Callable[[], object]]) -> list[float]:
    """The best wall time of each function; the rounds interleave the functions so that a
    busy machine slows them alike."""
    best = [float("inf")] * len(fns)
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            best[i] = min(best[i], best_of(1, fn))
    return best


def command(module: str, quick: bool) -> str:
    """The command that reproduces a report, as markdown code."""
    return f"`python -m bench.{module}{' --quick' if quick else ''}`"


def machine() -> str:
    """The interpreter and the processor architecture, e.g. "CPython 3.11.9, x86_64"."""
    return (f"{platform.python_implementation()} {platform.python_version()}, "
            f"{platform.machine()}")


def write_report(path: Path, lines: Sequence[str]) -> None:
    """Write the markdown report (one line per item) and print it."""
    text = "\n".join(lines).rstrip("\n") + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    print(text, end="")


def pin(pid: int, cpus: set[int]) -> None:
    """Run every thread of process ``pid`` on ``cpus`` only (threads it starts later inherit
    the set of the thread that starts them)."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            os.sched_setaffinity(int(task.name), cpus)
        except ProcessLookupError:   # a thread that ended meanwhile
            pass


class LoadProcesses:
    """Load-generator processes (spawned), each running ``target(conn, *args)``, which
    answers every command tuple it receives on its pipe ``conn`` with one reply; a
    ``("stop",)`` ends it."""

    STOP_SECONDS = 10.0   # a process not ended this long after "stop" is killed

    def __init__(self, procs: int, target: Callable[..., None], *args: Any) -> None:
        ctx = mp.get_context("spawn")
        self.conns: list[Any] = []
        self.procs: list[Any] = []
        for _ in range(procs):
            here, there = ctx.Pipe()
            p = ctx.Process(target=target, args=(there, *args), daemon=True)
            p.start()
            self.conns.append(here)
            self.procs.append(p)

    def ask(self, *cmd: Any) -> list[Any]:
        """The same command to every process; their replies in order."""
        for c in self.conns:
            c.send(cmd)
        return [c.recv() for c in self.conns]

    def ask_each(self, cmds: Sequence[tuple[Any, ...]]) -> list[Any]:
        """A command of its own to each process; their replies in order."""
        for c, cmd in zip(self.conns, cmds, strict=True):
            c.send(cmd)
        return [c.recv() for c in self.conns]

    def stop(self) -> None:
        try:
            self.ask("stop")
        except (EOFError, OSError):
            pass
        for p in self.procs:
            p.join(timeout=self.STOP_SECONDS)
            if p.is_alive():
                p.kill()
