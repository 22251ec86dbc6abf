"""Benchmark of mahjong hand scoring: ``python -m bench.bench_score_mahjong [--quick]``.

Scores seeded random winning hands with score_xuezhan and score_changsha, and lists waits of
the same hands minus one tile with xuezhan_waits. The baseline, run in the same process on
the same hands, is the core's bare win check (``is_win``; 27 of them for a waits list), so
the ratio says what full scoring costs over "is it a win at all". Writes
bench/reports/score_mahjong.md.
"""

from __future__ import annotations

from collections.abc import Callable

from bench.common import best_of, command, machine, parse_options, write_report
from games.mahjong.score_changsha import score_changsha
from games.mahjong.score_common import WinContext
from games.mahjong.score_xuezhan import score_xuezhan, xuezhan_waits
from games.mahjong.wincheck import is_win
from games.rng import Stream, derive

REPORT = "score_mahjong.md"


def winning_hand(rng: Stream) -> tuple[list[int], int]:
    """A random concealed winning hand (4 sets + pair, no melds) and one of its tiles."""
    while True:
        counts = [0] * 27
        pair = rng.below(27)
        counts[pair] += 2
        for _ in range(4):
            tile = rng.below(27)
            if rng.below(2) and tile % 9 <= 6:
                for t in (tile, tile + 1, tile + 2):
                    counts[t] += 1
            else:
                counts[tile] += 3
        if max(counts) <= 4:
            tiles = [t for t in range(27) if counts[t]]
            win = tiles[rng.below(len(tiles))]
            counts[win] -= 1
            return counts, win


def run(n_hands: int, rounds: int) -> list[tuple[str, float, float]]:
    rng = Stream(derive(2026, "bench.score_mahjong"))
    hands = [winning_hand(rng) for _ in range(n_hands)]
    fulls = []
    for concealed, win in hands:
        full = list(concealed)
        full[win] += 1
        fulls.append(full)

    def xz() -> None:
        for concealed, win in hands:
            score_xuezhan(concealed, [], WinContext(win, "discard"), {})

    def cs() -> None:
        for concealed, win in hands:
            score_changsha(concealed, [], WinContext(win, "discard"), {})

    def waits() -> None:
        for concealed, _ in hands:
            xuezhan_waits(concealed, [], None, {})

    def base_win() -> None:
        for full in fulls:
            is_win(full)

    def base_waits() -> None:
        for concealed, _ in hands:
            for tile in range(27):
                trial = list(concealed)
                trial[tile] += 1
                is_win(trial)

    def us_per_hand(fn: Callable[[], None]) -> float:
        return best_of(rounds, fn) / n_hands * 1e6

    win_us, waits_us = us_per_hand(base_win), us_per_hand(base_waits)
    return [
        ("score_xuezhan", us_per_hand(xz), win_us),
        ("score_changsha", us_per_hand(cs), win_us),
        ("xuezhan_waits", us_per_hand(waits), waits_us),
    ]


def main() -> None:
    args = parse_options(__doc__)
    n_hands, rounds = (200, 2) if args.quick else (2000, 5)
    rows = run(n_hands, rounds)
    lines = [
        "# Mahjong hand scoring",
        "",
        f"{command('bench_score_mahjong', args.quick)} on {machine()}: {n_hands} seeded "
        f"random winning hands (no melds), best of {rounds} rounds, one process.",
        "Baseline: the core's `is_win` on the same hands (x27 for a waits list).",
        "",
        "| call | µs per hand | baseline µs | ratio |",
        "|---|---:|---:|---:|",
    ]
    for name, us, base in rows:
        lines.append(f"| {name} | {us:.1f} | {base:.2f} | {us / base:.1f}x |")
    write_report(args.report(REPORT), lines)


if __name__ == "__main__":
    main()
