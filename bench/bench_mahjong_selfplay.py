"""Benchmark of mahjong self-play: ``python -m bench.bench_mahjong_selfplay [--quick]``.

Plays seeded hands of XueZhan and Changsha to the end with the random-legal chooser, the
greedy bot (games.bots.mahjong, when present) and entrust (``default_action``), and reports
hands and actions per second. The baseline (ratio 1.00) is the random chooser on XueZhan,
run in the same process. Also reports the engine alone: replaying the recorded random
hands without choosing. Each figure is the best of several rounds. Writes
bench/reports/mahjong_selfplay.md.
"""

from __future__ import annotations

import importlib

from bench.common import command, machine, parse_options, timed, write_report
from bench.selfplay import Chooser, play, replay
from games.engine import Action
from games.mahjong import changsha, xuezhan
from games.rng import Stream

REPORT = "mahjong_selfplay.md"


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


def main() -> None:
    args = parse_options(__doc__)
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
        f"{command('bench_mahjong_selfplay', args.quick)} - {hands} seeded hands per row, "
        f"best of {rounds}; {machine()}. Baseline (ratio 1.00): random chooser on XueZhan, "
        "same process.",
        "",
        "| variant | chooser | hands/s | actions/s | ratio vs baseline |",
        "|---|---|---:|---:|---:|",
    ]
    lines += [f"| {v} | {n} | {h:.1f} | {a:.0f} | {r:.2f} |" for v, n, h, a, r in rows]
    write_report(args.report(REPORT), lines)


if __name__ == "__main__":
    main()
