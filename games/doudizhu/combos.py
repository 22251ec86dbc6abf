"""The combinations (牌型) of Dou Dizhu and how one beats another (docs/doudizhu.md, "Combinations").

A play is judged on its rank counts only (:mod:`.cards`). Every legal play has exactly one
reading, a :class:`Combo`:

=================== ========== ============================================================
kind                Chinese    shape (``length`` = ranks in the body)
=================== ========== ============================================================
``single``          单张       one card (a joker too)
``pair``            对子       two cards of a rank (jokers are no pair)
``triple``          三张       three of a rank
``triple_one``      三带一     a triple and one card of another rank
``triple_two``      三带二     a triple and a pair of another rank
``straight``        顺子       5..12 consecutive single ranks within 3..A
``pair_straight``   连对       3+ consecutive pairs within 3..A
``airplane``        飞机       2+ consecutive triples within 3..A, no wings
``airplane_singles`` 飞机带单  2..5 consecutive triples and as many single wings (翅膀)
``airplane_pairs``  飞机带对   2..4 consecutive triples and as many pairs of distinct ranks
``four_two_singles`` 四带二    four of a rank and two single cards (which may be a pair)
``four_two_pairs``  四带两对   four of a rank and two pairs of two other ranks
``bomb``            炸弹       four of a rank
``rocket``          王炸       both jokers
=================== ========== ============================================================

Wings and kickers (the RLCard / DouZero convention, so that each play has a single reading):
no kicker is a card of the body's ranks; single wings hold at most three cards of a rank,
at most two of a rank next to the body (a third would lengthen the airplane; 2s excepted,
they never chain), and never both jokers; pair wings are pairs of distinct ranks; the two
singles of 四带二 are never both jokers.

``key`` orders combinations of one kind and length: the lowest rank of the body (the triple,
the quad, the first rank of a chain). A play beats the top of the trick when it is the same
kind and length with a higher key; a bomb beats anything but a higher bomb and the rocket;
the rocket beats everything.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from games.doudizhu.cards import NUM_RANKS, RANK_2, RANK_A, RANK_BJ, RANK_SJ

KINDS = ("single", "pair", "triple", "triple_one", "triple_two", "straight", "pair_straight",
         "airplane", "airplane_singles", "airplane_pairs", "four_two_singles", "four_two_pairs",
         "bomb", "rocket")
BOMBS = frozenset({"bomb", "rocket"})
# Chains: the count of every body rank, the shortest chain, and the longest one a 20-card
# hand allows (straights stop at A, so 3..A is 12 ranks).
CHAIN_MIN = {"straight": 5, "pair_straight": 3, "airplane": 2}
CHAIN_MAX = {"straight": 12, "pair_straight": 10, "airplane": 6,
             "airplane_singles": 5, "airplane_pairs": 4}
CHAIN_COUNT = {1: "straight", 2: "pair_straight", 3: "airplane"}


@dataclass(frozen=True, slots=True)
class Combo:
    """The one reading of a play: ``kind`` (:data:`KINDS`), ``length`` (ranks in the body:
    1 but for chains and airplanes), ``key`` (the body's lowest rank) and ``size`` (cards)."""

    kind: str
    length: int
    key: int
    size: int

    @property
    def is_bomb(self) -> bool:
        """A bomb or the rocket: the plays that double the stake."""
        return self.kind in BOMBS


def beats(play: Combo, top: Combo) -> bool:
    """Whether ``play`` may follow ``top`` in a trick."""
    if top.kind == "rocket":
        return False
    if play.kind == "rocket":
        return True
    if play.kind == "bomb":
        return top.kind != "bomb" or play.key > top.key
    return play.kind == top.kind and play.length == top.length and play.key > top.key


def classify(counts: Sequence[int]) -> Combo | None:
    """The reading of a play given as 15 rank counts, or None when it is no combination."""
    size = sum(counts)
    used = [r for r in range(NUM_RANKS) if counts[r]]
    if not used:
        return None
    if size == 2 and counts[RANK_SJ] and counts[RANK_BJ]:
        return Combo("rocket", 1, RANK_SJ, 2)
    if len(used) == 1:
        kind = ("single", "pair", "triple", "bomb")[size - 1]
        return Combo(kind, 1, used[0], size)
    shape = sorted(counts[r] for r in used)
    if shape == [1, 3]:
        return Combo("triple_one", 1, _rank_with(counts, used, 3), size)
    if shape == [2, 3]:
        return Combo("triple_two", 1, _rank_with(counts, used, 3), size)
    return _chain(counts, used, size) or _four_two(counts, used, size) or _wings(counts, size)


def _rank_with(counts: Sequence[int], used: list[int], n: int) -> int:
    return next(r for r in used if counts[r] == n)


def _chain(counts: Sequence[int], used: list[int], size: int) -> Combo | None:
    """A straight, pair straight or wingless airplane: equal counts on consecutive ranks."""
    each = counts[used[0]]
    kind = CHAIN_COUNT.get(each)
    if kind is None or any(counts[r] != each for r in used) or used[-1] > RANK_A:
        return None
    if used[-1] - used[0] + 1 != len(used) or len(used) < CHAIN_MIN[kind]:
        return None
    return Combo(kind, len(used), used[0], size)


def _four_two(counts: Sequence[int], used: list[int], size: int) -> Combo | None:
    quads = [r for r in used if counts[r] == 4]
    if len(quads) != 1:
        return None
    rest = [r for r in used if r != quads[0]]
    if size == 6 and not (counts[RANK_SJ] and counts[RANK_BJ]):
        return Combo("four_two_singles", 1, quads[0], size)
    if size == 8 and len(rest) == 2 and all(counts[r] == 2 for r in rest):
        return Combo("four_two_pairs", 1, quads[0], size)
    return None


def _wings(counts: Sequence[int], size: int) -> Combo | None:
    """An airplane with single wings (4 cards a triple) or pair wings (5 a triple)."""
    for per, kind in ((4, "airplane_singles"), (5, "airplane_pairs")):
        length = size // per
        if size % per or not 2 <= length <= CHAIN_MAX[kind]:
            continue
        for start in range(0, RANK_A - length + 2):
            body = range(start, start + length)
            if all(counts[r] == 3 for r in body) and _wings_fit(counts, start, length, kind):
                return Combo(kind, length, start, size)
    return None


def _wings_fit(counts: Sequence[int], start: int, length: int, kind: str) -> bool:
    wings = [0 if start <= r < start + length else counts[r] for r in range(NUM_RANKS)]
    if kind == "airplane_pairs":
        return all(n in (0, 2) for n in wings) and sum(1 for n in wings if n) == length
    if wings[RANK_SJ] and wings[RANK_BJ]:
        return False
    if any(n > 3 for n in wings):
        return False
    beside = [r for r in (start - 1, start + length) if 0 <= r < RANK_2]
    return all(wings[r] <= 2 for r in beside)
