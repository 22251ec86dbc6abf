"""Tile indices and notation for the 108-tile suited set (万 m, 筒 p, 条 s).

A tile is an index 0..26: 0-8 are 1m..9m, 9-17 are 1p..9p, 18-26 are 1s..9s. A hand is a list
of 27 counts (``counts[i]`` copies of tile ``i``). Notation groups ranks before their suit
letter: ``"123m55p"`` is 1m 2m 3m 5p 5p.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

SUITS = "mps"
NUM_TILES = 27
COPIES = 4


def suit_of(i: int) -> int:
    """The suit of tile ``i``: 0 = m (万), 1 = p (筒), 2 = s (条)."""
    return i // 9


def rank_of(i: int) -> int:
    """The rank of tile ``i``, 1..9."""
    return i % 9 + 1


_NAMES = tuple(f"{i % 9 + 1}{SUITS[i // 9]}" for i in range(NUM_TILES))
_INDEX = {name: i for i, name in enumerate(_NAMES)}


def tile_name(i: int) -> str:
    """``tile_name(4) == "5m"``."""
    if not 0 <= i < NUM_TILES:
        raise ValueError(f"tile index {i!r} is outside 0..26")
    return _NAMES[i]


def tile_index(name: str) -> int:
    """``tile_index("5m") == 4``."""
    i = _INDEX.get(name) if isinstance(name, str) else None
    if i is None:
        raise ValueError(f"bad tile name {name!r}: expected a rank 1-9 and a suit m, p or s")
    return i


def parse_tile_list(text: str) -> list[int]:
    """Tile indices in the order written: ``parse_tile_list("1123m") == [0, 0, 1, 2]``."""
    if not isinstance(text, str):
        raise ValueError(f"tile notation must be a string, got {type(text).__name__}")
    out: list[int] = []
    ranks: list[int] = []
    for pos, ch in enumerate(text):
        if ch in "123456789":
            ranks.append(int(ch) - 1)
        elif ch in SUITS:
            if not ranks:
                raise ValueError(f"bad tile notation {text!r}: suit {ch!r} at {pos} has no ranks")
            base = SUITS.index(ch) * 9
            out.extend(base + r for r in ranks)
            ranks = []
        else:
            raise ValueError(f"bad tile notation {text!r}: unexpected {ch!r} at {pos}")
    if ranks:
        raise ValueError(f"bad tile notation {text!r}: ranks at the end have no suit letter")
    return out


def parse_tiles(text: str) -> list[int]:
    """27 counts from notation: ``parse_tiles("123m55p")``. Raises ValueError on bad notation
    or on more than four copies of a tile."""
    counts = [0] * NUM_TILES
    for t in parse_tile_list(text):
        counts[t] += 1
        if counts[t] > COPIES:
            raise ValueError(f"bad hand {text!r}: more than {COPIES} copies of {tile_name(t)}")
    return counts


def format_counts(counts: Sequence[int]) -> str:
    """Notation for 27 counts, suits in m, p, s order: ``"123m55p"``; ``""`` for no tiles."""
    if len(counts) != NUM_TILES:
        raise ValueError(f"expected {NUM_TILES} counts, got {len(counts)}")
    parts = []
    for s, letter in enumerate(SUITS):
        ranks = "".join(str(r + 1) * counts[s * 9 + r] for r in range(9))
        if ranks:
            parts.append(ranks + letter)
    return "".join(parts)


def format_tiles(indices: Iterable[int]) -> str:
    """Notation for tile indices, sorted and grouped: ``format_tiles([9, 0]) == "1m1p"``."""
    counts = [0] * NUM_TILES
    for t in indices:
        if not 0 <= t < NUM_TILES:
            raise ValueError(f"tile index {t!r} is outside 0..26")
        counts[t] += 1
    return format_counts(counts)
