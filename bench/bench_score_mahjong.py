"""Benchmark of mahjong hand scoring: ``python -m bench.bench_score_mahjong [--quick]``.

Scores seeded random winning hands with score_xuezhan and score_changsha, and lists waits of
the same hands minus one tile with xuezhan_waits. The baseline, run in the same process on
the same hands, is the core's bare win check (``is_win``; 27 of them for a waits list), so
the ratio says what full scoring costs over "is it a win at all". Writes
bench/reports/score_mahjong.md.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

from games.mahjong.score_changsha import score_changsha
from games.mahjong.score_common import WinContext
from games.mahjong.score_xuezhan import score_xuezhan, xuezhan_waits
from games.mahjong.wincheck import is_win
from games.rng import Stream, derive

REPORT = Path(__file__).resolve().parent / "reports" / "score_mahjong.md"


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


def per_call_us(fn: Callable[[], object], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls * 1e6


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

    win_us = per_call_us(base_win, rounds) / n_hands
    waits_us = per_call_us(base_waits, rounds) / n_hands
    return [
        ("score_xuezhan", per_call_us(xz, rounds) / n_hands, win_us),
        ("score_changsha", per_call_us(cs, rounds) / n_hands, win_us),
        ("xuezhan_waits", per_call_us(waits, rounds) / n_hands, waits_us),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short run")
    args = parser.parse_args()
    n_hands, rounds = (200, 2) if args.quick else (2000, 5)
    rows = run(n_hands, rounds)
    lines = [
        "# Mahjong hand scoring",
        "",
        f"{n_hands} seeded random winning hands (no melds), {rounds} rounds, one process.",
        "Baseline: the core's `is_win` on the same hands (x27 for a waits list).",
        "",
        "| call | µs per hand | baseline µs | ratio |",
        "|---|---:|---:|---:|",
    ]
    for name, us, base in rows:
        lines.append(f"| {name} | {us:.1f} | {base:.2f} | {us / base:.1f}x |")
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
