"""Fast win check (胡牌判定) from per-suit lookup tables.

Each suit's nine counts are packed into one integer key, one byte per rank
(``key = sum(count[r] << 8 * r)``), so a whole 27-count hand is ``int.from_bytes(bytes(counts),
"little")`` and its three suit keys are byte slices of that integer. Two tables, built once at
import (a few hundredths of a second):

* ``_STANDARD``: key -> tile count, for every suit that splits into sets (triplets, runs)
  with at most one pair, four sets at most, no tile above four copies;
* ``_PAIRS``: key -> number of pairs, for every suit whose counts are all 0, 2 or 4
  (a quad counts as two pairs, 龙七对).

A hand is a standard win when every suit is in ``_STANDARD`` and the total is 3n + 2 <= 14
(then exactly one suit holds the pair); it is seven pairs (七对) when the pair counts add up
to seven.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import product

from games.mahjong.tiles import COPIES, NUM_TILES

SUIT_BITS = 72
SUIT_MASK = (1 << SUIT_BITS) - 1
# KEY_STEP[t]: what adding one tile t adds to the key of its suit.
KEY_STEP = tuple(1 << (8 * (t % 9)) for t in range(NUM_TILES))
MAX_CONCEALED = 14
MAX_SETS = 4
_MISSING = -100


def suit_key(ranks: Sequence[int]) -> int:
    """The key of one suit from its nine counts."""
    return int.from_bytes(bytes(ranks), "little")


def suit_keys(counts: Sequence[int]) -> tuple[int, int, int]:
    """The three suit keys (m, p, s) of a 27-count hand."""
    k = int.from_bytes(bytes(counts), "little")
    return k & SUIT_MASK, (k >> SUIT_BITS) & SUIT_MASK, k >> (2 * SUIT_BITS)


def _suit_sets() -> list[tuple[int, ...]]:
    """Every set a suit can hold, as nine counts: nine triplets (刻子) and seven runs (顺子)."""
    shapes = []
    for r in range(9):
        shapes.append(tuple(3 if i == r else 0 for i in range(9)))
    for r in range(7):
        shapes.append(tuple(1 if r <= i <= r + 2 else 0 for i in range(9)))
    return shapes


def _add(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    out = tuple(x + y for x, y in zip(a, b, strict=True))
    return out if max(out) <= COPIES else None


def _build_standard() -> dict[int, int]:
    sets = _suit_sets()
    layer = {(0,) * 9}
    set_only = set(layer)
    for _ in range(MAX_SETS):
        layer = {v for a in layer for s in sets if (v := _add(a, s)) is not None}
        set_only |= layer
    pairs = [tuple(2 if i == r else 0 for i in range(9)) for r in range(9)]
    with_pair = {v for a in set_only for p in pairs if (v := _add(a, p)) is not None}
    return {suit_key(v): sum(v) for v in set_only | with_pair}


def _build_pairs() -> dict[int, int]:
    out = {}
    for v in product((0, 2, 4), repeat=9):
        if sum(v) <= MAX_CONCEALED:
            out[suit_key(v)] = sum(v) // 2
    return out


_STANDARD = _build_standard()
_PAIRS = _build_pairs()


def is_win_keys(k0: int, k1: int, k2: int) -> bool:
    """``is_win`` on the three suit keys of a concealed hand."""
    std = _STANDARD
    a = std.get(k0)
    if a is not None:
        b = std.get(k1)
        if b is not None:
            c = std.get(k2)
            if c is not None:
                n = a + b + c
                if n % 3 == 2 and n <= MAX_CONCEALED:
                    return True
    pairs = _PAIRS
    return pairs.get(k0, _MISSING) + pairs.get(k1, _MISSING) + pairs.get(k2, _MISSING) == 7


def is_win(counts: Sequence[int]) -> bool:
    """True if the concealed counts form a winning shape: n sets + one pair (totals 2, 5, 8,
    11, 14; the rest of the hand is melds), or, at 14 tiles, seven pairs where a quad counts
    as two pairs. Counts must be 27 integers in 0..4."""
    k = int.from_bytes(bytes(counts), "little")
    return is_win_keys(k & SUIT_MASK, (k >> SUIT_BITS) & SUIT_MASK, k >> (2 * SUIT_BITS))


def is_seven_pairs(counts: Sequence[int]) -> bool:
    """True if the 14 concealed tiles are seven pairs (七对), a quad counting as two."""
    k0, k1, k2 = suit_keys(counts)
    pairs = _PAIRS
    return pairs.get(k0, _MISSING) + pairs.get(k1, _MISSING) + pairs.get(k2, _MISSING) == 7


def is_standard_keys(k0: int, k1: int, k2: int) -> bool:
    """The standard shape (n sets + one pair) only, without seven pairs."""
    std = _STANDARD
    a, b, c = std.get(k0), std.get(k1), std.get(k2)
    if a is None or b is None or c is None:
        return False
    n = a + b + c
    return n % 3 == 2 and n <= MAX_CONCEALED


def waits(counts: Sequence[int], held: Sequence[int] | None = None) -> list[int]:
    """Tiles t (听牌) such that counts + t wins, skipping t when ``held[t] >= 4``: ``held``
    counts the player's tiles in hand and melds (default: ``counts``), so no fifth copy."""
    held = counts if held is None else held
    keys = list(suit_keys(counts))
    out = []
    for t in range(NUM_TILES):
        if held[t] >= COPIES:
            continue
        s = t // 9
        keys[s] += KEY_STEP[t]
        if is_win_keys(keys[0], keys[1], keys[2]):
            out.append(t)
        keys[s] -= KEY_STEP[t]
    return out
