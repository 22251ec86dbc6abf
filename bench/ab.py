"""Two revisions of the whole system against each other: ``python -m bench.ab --base REV
[--head REV] [--rounds N] [--games G ...] [--rooms R] [--hands H] [--edge ws]``.

Runs ``bench.bench_system`` on both revisions in turns, in the order base, head, head, base,
base, head, ... (a drift over the session, another process waking up, falls on both alike),
each revision from a git worktree of its own with its protocol code generated, in this
checkout's virtual environment. ``--head`` left out: this checkout as it is, uncommitted
edits included (a throwaway change is measured without a commit). Per game the report gives
each side's median and range of the server CPU per player action, the transport floor
measured in the same runs and their ratio, player actions a second and the robots' CPU per
hand, then head against base. Runs of unchanged code differ by several percent: a
difference inside both sides' ranges is not one.

Writes bench/reports/ab.md (``--out DIR`` elsewhere), also when a run fails (with the runs
made so far); every run's own report and output stay in a directory it names. A tool, not
one of the benchmarks ``make bench`` runs (it needs a revision to compare with). Limits: a
base older than ``bench_system``'s ``--games`` and ``--edge`` options cannot run; this
checkout's generated protocol code is used as it is (``make protos`` after editing a
``.proto``); its defaults (16 rooms of 16 hands, the WebSocket edge, changsha) are not
``bench_system``'s own.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path

from bench.bench_system import GAMES
from bench.common import REPORTS, write_report

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Figures:
    """One game's figures from one run's system.md."""

    server_us: float        # server CPU per player action
    floor_us: float
    actions_per_s: float
    robots_ms: float        # the robots' CPU per hand


@dataclass
class Side:
    name: str
    tree: Path
    runs: dict[str, list[Figures]] = field(default_factory=dict)


def table_rows(text: str, first_header: str, header_has: str) -> Iterator[dict[str, str]]:
    """The rows of every markdown table in ``text`` whose header starts with
    ``first_header`` and names ``header_has``, as {header: cell}."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if not line.startswith(f"| {first_header} |") or header_has not in line:
            continue
        header = [c.strip() for c in line.strip("|").split("|")]
        for row in lines[i + 2:]:
            if not row.startswith("|"):
                break
            yield dict(zip(header, (c.strip() for c in row.strip("|").split("|")), strict=False))


def number(cell: str) -> float:
    return float(cell.replace(",", "").rstrip("x"))


def parse_system(text: str) -> dict[str, Figures]:
    """Per game: the figures of one system.md (its three tables are matched by header)."""
    actions = {r["game"]: number(r["player actions/s"])
               for r in table_rows(text, "game", "player actions/s")}
    robots = {r["game"]: number(r["robots (this process)"])
              for r in table_rows(text, "game", "robots (this process)")}
    out = {}
    for r in table_rows(text, "game", "floor µs"):
        game = r["game"]
        server = next(v for k, v in r.items() if k.startswith("server CPU per player action"))
        out[game] = Figures(number(server), number(r["floor µs"]), actions[game], robots[game])
    return out


@contextmanager
def worktree(rev: str, path: Path) -> Iterator[Path]:
    """A detached worktree of ``rev`` at ``path`` with its protocol code generated; removed
    after."""
    git("worktree", "add", "--detach", "--quiet", str(path), rev)
    try:
        subprocess.run(["bash", "scripts/gen_protos.sh"], cwd=path, check=True,
                       env={**os.environ, "PYTHON": sys.executable})
        yield path
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(path)],
                       check=False)


class RunFailed(RuntimeError):
    """A bench_system run that failed or whose report cannot be compared."""


def run_once(side: Side, bench_args: Sequence[str], games: Sequence[str], out: Path) -> None:
    """One bench_system run from the side's tree (its modules first on the path, for the
    bench and every service process it starts), its report and output in ``out``; its
    figures added to the side's. Interrupted, the run is given time to stop its services."""
    path = os.pathsep.join(p for p in (str(side.tree), os.environ.get("PYTHONPATH")) if p)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "output.log", "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "bench.bench_system", *bench_args,
                                 "--out", str(out)], cwd=side.tree,
                                env={**os.environ, "PYTHONPATH": path}, stdout=log,
                                stderr=subprocess.STDOUT)
        try:
            code = proc.wait()
        except KeyboardInterrupt:   # the run got the SIGINT too: it stops its stack
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
            raise
    report_path = out / "system.md"
    if code or not report_path.exists():
        raise RunFailed(f"{side.name}: bench_system exited with {code}: see {out}")
    text = report_path.read_text()
    if "Problems:" in text:
        raise RunFailed(f"{side.name}: robots failed or hands are missing: see {report_path}")
    figures = parse_system(text)
    missing = [g for g in games if g not in figures]
    if missing:
        raise RunFailed(f"{side.name}: no figures for {missing} in {report_path}")
    for game in games:
        side.runs.setdefault(game, []).append(figures[game])


def git(*args: str) -> str:
    """What a git command in this checkout prints (an error if it fails)."""
    return subprocess.run(["git", "-C", str(ROOT), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def label(rev: str) -> str:
    """``rev`` as given, with the commit it names."""
    sha = git("rev-parse", "--short", rev)
    return rev if rev.startswith(sha) else f"{rev} ({sha})"


def checkout_label() -> str:
    """This checkout: its commit, and whether it has uncommitted edits."""
    edited = git("status", "--porcelain", "--untracked-files=no")
    return f"this checkout ({git('rev-parse', '--short', 'HEAD')}" \
        f"{' with uncommitted edits' if edited else ''})"


def order(rounds: int) -> list[int]:
    """Which side (0 base, 1 head) runs when: 0 1 1 0 0 1 ..., each side ``rounds`` times."""
    pairs = [(0, 1) if i % 2 == 0 else (1, 0) for i in range(rounds)]
    return [side for pair in pairs for side in pair]


def spread(values: list[float], fmt: str = "{:,.0f}") -> str:
    med = statistics.median(values)
    return f"{fmt.format(med)} ({fmt.format(min(values))}-{fmt.format(max(values))})"


def report(sides: tuple[Side, Side], games: Sequence[str], command: str) -> list[str]:
    base, head = sides
    lines = [
        "# A/B of two revisions on the whole system", "",
        f"`{command}`: Python {sys.version.split()[0]}, {os.cpu_count()} cores; base "
        f"`{base.name}`, head `{head.name}`, `bench_system` run in turns (base first, then "
        "the order swapped every round). Medians, the range of the runs in brackets.", "",
        "| game | side | runs | server CPU per action µs | floor µs | ratio | player actions/s "
        "| robots' CPU per hand ms |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for game in games:
        for side in sides:
            runs = side.runs.get(game, [])
            if not runs:
                continue
            ratios = [r.server_us / r.floor_us for r in runs]
            lines.append(
                f"| {game} | {side.name} | {len(runs)} | {spread([r.server_us for r in runs])} "
                f"| {spread([r.floor_us for r in runs])} | {spread(ratios, '{:.2f}x')} "
                f"| {spread([r.actions_per_s for r in runs])} "
                f"| {spread([r.robots_ms for r in runs])} |")
    lines += ["", "Head against base, the ratios of the medians (CPU per action below 1: head "
              "costs less; actions a second above 1: head plays faster):", "",
              "| game | server CPU per action | player actions/s |", "|---|---:|---:|"]
    for game in games:
        a, b = base.runs.get(game), head.runs.get(game)
        if not a or not b:
            continue
        cpu = statistics.median(r.server_us for r in b) / statistics.median(r.server_us for r in a)
        rate = (statistics.median(r.actions_per_s for r in b)
                / statistics.median(r.actions_per_s for r in a))
        lines.append(f"| {game} | {cpu:.3f} | {rate:.3f} |")
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the revision to compare against")
    parser.add_argument("--head", help="the revision measured (default: this checkout as it is)")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each side")
    parser.add_argument("--games", nargs="+", choices=GAMES, default=["changsha"])
    parser.add_argument("--rooms", type=int, default=16)
    parser.add_argument("--hands", type=int, default=16)
    parser.add_argument("--edge", choices=("grpc", "ws"), default="ws")
    parser.add_argument("--out", type=Path, default=REPORTS)
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    games = list(dict.fromkeys(args.games))
    bench_args = ["--rooms", str(args.rooms), "--hands", str(args.hands), "--edge", args.edge,
                  "--games", *games]
    command = "python -m bench.ab " + " ".join(argv if argv is not None else sys.argv[1:])
    runs = Path(tempfile.mkdtemp(prefix="paiju-ab-runs-"))
    print(f"each run's report and output: {runs}", flush=True)
    try:
        with tempfile.TemporaryDirectory(prefix="paiju-ab-") as trees:
            with worktree(args.base, Path(trees) / "base") as base_tree, \
                    (worktree(args.head, Path(trees) / "head") if args.head
                     else nullcontext(ROOT)) as head_tree:   # this checkout, as it is
                sides = (Side(label(args.base), base_tree),
                         Side(label(args.head) if args.head else checkout_label(), head_tree))
                try:
                    for n, which in enumerate(order(args.rounds)):
                        side = sides[which]
                        print(f"run {n + 1}: {side.name}", flush=True)
                        run_once(side, bench_args, games,
                                 runs / f"run{n + 1}-{('base', 'head')[which]}")
                finally:
                    write_report(args.out / "ab.md", report(sides, games, command))
    finally:   # git's record of a worktree whose removal failed goes with its directory
        subprocess.run(["git", "-C", str(ROOT), "worktree", "prune"], check=False)


if __name__ == "__main__":
    try:
        main()
    except RunFailed as exc:
        sys.exit(f"bench.ab: {exc}")
