"""Every standard arrangement of a winning hand (for scoring: 平胡 vs 对对胡, 带幺九, ...).

Scoring must try all arrangements and keep the best one (``111222333m`` is three triplets or
three runs). Seven pairs (七对) is not an arrangement here: test it with ``is_seven_pairs``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from games.mahjong.tiles import NUM_TILES

PUNG = "pung"
CHOW = "chow"

Set = tuple[str, int]


@dataclass(frozen=True, slots=True)
class Decomposition:
    """One arrangement of concealed tiles: the pair (将) tile and the sets, each
    ``("pung", tile)`` (刻子) or ``("chow", lowest_tile)`` (顺子), sorted by tile then kind."""

    pair: int
    sets: tuple[Set, ...]


def decompositions(counts: Sequence[int]) -> list[Decomposition]:
    """Every distinct arrangement of the counts as one pair plus sets; empty if none."""
    if sum(counts) % 3 != 2:
        return []
    work = list(counts)
    out = []
    for pair in range(NUM_TILES):
        if work[pair] < 2:
            continue
        work[pair] -= 2
        for sets in _arrangements(work, 0):
            out.append(Decomposition(pair, tuple(sorted(sets, key=_set_order))))
        work[pair] += 2
    return out


def _set_order(s: Set) -> tuple[int, int]:
    return s[1], s[0] == CHOW


def _arrangements(work: list[int], start: int) -> Iterator[list[Set]]:
    """All multisets of sets that use up ``work`` exactly (restored on return).

    The lowest remaining tile must start its sets: either one triplet and the rest as runs,
    or runs only. Choosing the triplet count first makes every multiset appear once."""
    t = start
    while t < NUM_TILES and work[t] == 0:
        t += 1
    if t == NUM_TILES:
        yield []
        return
    c = work[t]
    for pungs in (1, 0) if c >= 3 else (0,):
        runs = c - 3 * pungs
        if runs and (t % 9 > 6 or work[t + 1] < runs or work[t + 2] < runs):
            continue
        work[t] -= c
        if runs:
            work[t + 1] -= runs
            work[t + 2] -= runs
        here = [(PUNG, t)] * pungs + [(CHOW, t)] * runs
        for rest in _arrangements(work, t + 1):
            yield here + rest
        work[t] += c
        if runs:
            work[t + 1] += runs
            work[t + 2] += runs
