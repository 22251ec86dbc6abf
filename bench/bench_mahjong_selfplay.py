"""Benchmark of mahjong self-play: ``python -m bench.bench_mahjong_selfplay [--quick]``.

Plays seeded hands of XueZhan and Changsha to the end with the random-legal chooser, the
greedy bot (games.bots.mahjong, when present) and entrust (``default_action``), and reports
hands and actions per second. The baseline (ratio 1.00) is the random chooser on XueZhan,
run in the same process. Also reports the engine alone: replaying the recorded random
hands without choosing. Each figure is the best of several rounds. Writes
bench/reports/mahjong_selfplay.md.
"""

from __future__ import annotations

import argparse
import importlib
import platform
import time
from collections.abc import Callable
from pathlib import Path

from games.engine import Action
from games.mahjong import changsha, xuezhan
from games.rng import Stream, derive

REPORT = Path(__file__).resolve().parent / "reports" / "mahjong_selfplay.md"
Chooser = Callable[[object, int, Stream], Action]


def random_chooser(state, seat: int, rng: Stream) -> Action:
    actions = state.legal_actions(seat)
    return actions[rng.below(len(actions))]


def choosers() -> dict[str, Chooser]:
    out: dict[str, Chooser] = {"random": random_chooser}
    try:
        bots = importlib.import_module("games.bots.mahjong")
    except ImportError:
        bots = None
    if bots is not None:
        out["greedy bot"] = lambda s, seat, rng: bots.greedy_policy(s, seat)
    out["entrust (default_action)"] = lambda s, seat, rng: s.default_action(seat)
    return out


def play(variant, seeds: range, chooser: Chooser) -> tuple[int, list]:
    actions, logs = 0, []
    for seed in seeds:
        state = variant.new_hand({}, seed, seed % 4)
        state.deal_events()
        rng = Stream(derive(seed, "bench"))
        log = []
        while not state.is_over():
            acting = state.to_act()
            seat = acting[rng.below(len(acting))]
            action = chooser(state, seat, rng)
            state.apply(seat, action)
            log.append((seat, action))
        state.settlement()
        actions += len(log)
        logs.append(log)
    return actions, logs


def replay(variant, seeds: range, logs: list) -> None:
    for seed, log in zip(seeds, logs, strict=True):
        state = variant.new_hand({}, seed, seed % 4)
        for seat, action in log:
            state.apply(seat, action)
        state.settlement()


def timed(rounds: int, fn: Callable[[], object]) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(rounds):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short run")
    args = parser.parse_args()
    hands, rounds = (10, 1) if args.quick else (100, 3)
    seeds = range(9000, 9000 + hands)
    rows, baseline = [], None
    for variant in (xuezhan, changsha):
        for name, chooser in choosers().items():
            secs, (actions, logs) = timed(rounds, lambda v=variant, c=chooser: play(v, seeds, c))
            rate = hands / secs
            baseline = baseline or rate
            rows.append((variant.NAME, name, rate, actions / secs, rate / baseline))
            if name == "random":
                secs, _ = timed(rounds, lambda v=variant, lg=logs: replay(v, seeds, lg))
                rows.append((variant.NAME, "replay of the random hands (engine only)",
                             hands / secs, actions / secs, hands / secs / baseline))
    lines = [
        "# Mahjong self-play",
        "",
        f"`python -m bench.bench_mahjong_selfplay{' --quick' if args.quick else ''}` - "
        f"{hands} seeded hands per row, best of {rounds}; Python {platform.python_version()}"
        f" on {platform.machine()}. Baseline (ratio 1.00): random chooser on XueZhan, same "
        "process.",
        "",
        "| variant | chooser | hands/s | actions/s | ratio vs baseline |",
        "|---|---|---:|---:|---:|",
    ]
    lines += [f"| {v} | {n} | {h:.1f} | {a:.0f} | {r:.2f} |" for v, n, h, a, r in rows]
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
