"""Every legal play of a hand, built from its rank counts (never from subsets of cards).

A play is generated as a tuple of ranks (``(0, 0, 0, 5)``: three 3s and an 8) with its
:class:`~games.doudizhu.combos.Combo`; :func:`pick_cards` turns it into card codes of the hand
(the lowest suits of each rank: suits never matter). Leading, a hand may play every
combination it holds; following, only the same kind and length with a higher key, any bomb
that beats the top, and the rocket.

The generators follow the wing rules of :mod:`.combos` exactly; the unit tests check that
every generated play classifies to the combination it was generated as.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import combinations

from games.doudizhu.cards import NUM_RANKS, RANK_2, RANK_A, RANK_BJ, RANK_SJ, rank_of
from games.doudizhu.combos import CHAIN_MAX, CHAIN_MIN, Combo

Play = tuple[tuple[int, ...], Combo]
# Kinds a leader may play; a follower plays the top's kind (and bombs, the rocket).
LEAD_KINDS = ("single", "pair", "triple", "triple_one", "triple_two", "straight",
              "pair_straight", "airplane", "airplane_singles", "airplane_pairs",
              "four_two_singles", "four_two_pairs", "bomb", "rocket")


def legal_plays(counts: Sequence[int], top: Combo | None) -> list[Play]:
    """Every play (ranks, combo) of a hand with these rank counts: all of them when leading
    (``top`` None), else those that beat ``top``. Distinct rank multisets, no duplicates."""
    if top is None:
        out: list[Play] = []
        for kind in LEAD_KINDS:
            for length in _lengths(kind, sum(counts)):
                out += _generate(kind, counts, length, -1)
        return out
    if top.kind == "rocket":
        return []
    out = []
    if top.kind != "bomb":
        out += _generate(top.kind, counts, top.length, top.key)
    out += _generate("bomb", counts, 1, top.key if top.kind == "bomb" else -1)
    return out + _generate("rocket", counts, 1, -1)


def has_beating_play(counts: Sequence[int], top: Combo) -> bool:
    """Whether any play of the hand beats ``top`` (cheap when a bomb or the rocket is held)."""
    if top.kind != "rocket" and counts[RANK_SJ] and counts[RANK_BJ]:
        return True
    return bool(legal_plays(counts, top))


def _lengths(kind: str, hand_size: int) -> range:
    if kind not in CHAIN_MAX:
        return range(1, 2)
    per = {"straight": 1, "pair_straight": 2, "airplane": 3, "airplane_singles": 4,
           "airplane_pairs": 5}[kind]
    low = CHAIN_MIN.get(kind, 2)
    return range(low, min(CHAIN_MAX[kind], hand_size // per) + 1)


def _generate(kind: str, h: Sequence[int], length: int, above: int) -> list[Play]:
    """Plays of one kind and length with a key above ``above`` (-1: any)."""
    out: list[Play] = []
    if kind == "rocket":
        if h[RANK_SJ] and h[RANK_BJ]:
            out.append(((RANK_SJ, RANK_BJ), Combo("rocket", 1, RANK_SJ, 2)))
        return out
    if kind in ("single", "pair", "triple", "bomb"):
        n = ("single", "pair", "triple", "bomb").index(kind) + 1
        last = NUM_RANKS if n == 1 else RANK_2 + 1
        return [((r,) * n, Combo(kind, 1, r, n)) for r in range(above + 1, last)
                if h[r] >= n and (kind != "bomb" or h[r] == 4)]
    if kind in ("straight", "pair_straight", "airplane"):
        n = {"straight": 1, "pair_straight": 2, "airplane": 3}[kind]
        for start in range(above + 1, RANK_A - length + 2):
            if all(h[r] >= n for r in range(start, start + length)):
                ranks = tuple(r for r in range(start, start + length) for _ in range(n))
                out.append((ranks, Combo(kind, length, start, n * length)))
        return out
    if kind in ("triple_one", "triple_two", "four_two_singles", "four_two_pairs"):
        n = 3 if kind.startswith("triple") else 4
        for body in range(above + 1, RANK_2 + 1):
            if h[body] >= n:
                out += _with_kickers(kind, h, body, 1, n)
        return out
    for start in range(above + 1, RANK_A - length + 2):  # airplanes with wings
        if all(h[r] >= 3 for r in range(start, start + length)):
            out += _with_kickers(kind, h, start, length, 3)
    return out


def _with_kickers(kind: str, h: Sequence[int], start: int, length: int, n: int) -> list[Play]:
    body = tuple(r for r in range(start, start + length) for _ in range(n))
    inside = range(start, start + length)
    wanted = length * (2 if kind == "four_two_singles" else 1)
    if kind in ("triple_two", "four_two_pairs", "airplane_pairs"):
        pairs = [r for r in range(RANK_2 + 1) if r not in inside and h[r] >= 2]
        wanted = 2 if kind == "four_two_pairs" else length
        kicks: Iterator[tuple[int, ...]] = (
            tuple(r for r in chosen for _ in range(2)) for chosen in combinations(pairs, wanted))
    else:
        caps = [0 if r in inside else min(h[r], 3) for r in range(NUM_RANKS)]
        if kind == "airplane_singles":
            for r in (start - 1, start + length):
                if 0 <= r < RANK_2:
                    caps[r] = min(caps[r], 2)
        kicks = (k for k in _multisets(caps, wanted, 0)
                 if not (RANK_SJ in k and RANK_BJ in k))
    size = len(body) + wanted * (2 if kind.endswith("pairs") or kind == "triple_two" else 1)
    combo = Combo(kind, length, start, size)
    return [(tuple(sorted(body + kick)), combo) for kick in kicks]


def _multisets(caps: list[int], k: int, rank: int) -> Iterator[tuple[int, ...]]:
    """Every multiset of ``k`` ranks from ``rank`` on, rank r at most ``caps[r]`` times."""
    if k == 0:
        yield ()
        return
    for r in range(rank, NUM_RANKS):
        for take in range(1, min(caps[r], k) + 1):
            for tail in _multisets(caps, k - take, r + 1):
                yield (r,) * take + tail


def pick_cards(hand: Sequence[int], ranks: Sequence[int]) -> list[int]:
    """Codes of ``hand`` for a play given as ranks: the lowest codes of each rank."""
    by_rank: dict[int, list[int]] = {}
    for code in sorted(hand):
        by_rank.setdefault(rank_of(code), []).append(code)
    out: list[int] = []
    taken: dict[int, int] = {}
    for r in ranks:
        i = taken.get(r, 0)
        out.append(by_rank[r][i])
        taken[r] = i + 1
    return sorted(out)
