"""Dadun card combinations (牌型): the classifier, ``beats`` and bomb odds (rules/dadun.md §3).

``classify(cards, hand_size)`` follows the detection order of §3.1 and returns a frozen
:class:`Combo` carrying the protocol ``paiClass`` number. ``beats(a, b)`` says whether ``a``
may be played on ``b`` (§3.2). The room option ``pure510k_suit_order`` (pure 510Ks rank by
suit) is :func:`beats_by_suit`; :func:`beats_rule` picks the one of a room, and the
``suit_order`` arguments here and in :mod:`.legal` take the option's value. Classes 3, 4 and short airplanes are legal only as a last play
(the cards are the whole hand, ``hand_size == len(cards)``).

A short last-play airplane can be read with different triple counts (``333444555`` is three
triples, or two triples with three extra cards); ``classify(..., against=previous)`` picks a
reading that beats ``previous`` when there is one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from games.dadun.cards import (
    BLACK_SUITS,
    COPIES,
    NUM_CODES,
    RANK_5,
    RANK_A,
    RANK_BJ,
    RANK_K,
    RANK_SJ,
    RANK_T,
    RED_SUITS,
    SJ,
    card_name,
    format_cards,
)
from games.engine import IllegalAction

CLASS_NAMES: dict[int, str] = {
    1: "single", 2: "pair", 3: "triple", 4: "triple_one", 5: "triple_two", 6: "straight",
    7: "pair_straight", 8: "airplane", 9: "five_ten_king", 10: "bomb4", 11: "bomb5",
    12: "bomb6", 13: "bomb7", 14: "bomb8", 15: "joker_pair", 16: "bomb5_color",
    17: "bomb6_color", 18: "five_ten_king_x3", 19: "five_ten_king_x4", 20: "jokers3",
    21: "jokers4", 22: "five_ten_king_x5", 23: "five_ten_king_x6", 24: "five_ten_king_x7",
    25: "five_ten_king_x8", 26: "bomb4_color", 27: "joker_mixed_pair",
}
SINGLE, PAIR, TRIPLE, TRIPLE_ONE, TRIPLE_TWO, STRAIGHT, PAIR_STRAIGHT, AIRPLANE = range(1, 9)
FIVE_TEN_KING, JOKER_PAIR, JOKERS3, JOKERS4, JOKER_MIXED_PAIR = 9, 15, 20, 21, 27
BOMB_BY_SIZE = {4: 10, 5: 11, 6: 12, 7: 13, 8: 14}
COLOR_BOMB_BY_SIZE = {4: 26, 5: 16, 6: 17}
MULTI_510K_BY_SETS = {3: 18, 4: 19, 5: 22, 6: 23, 7: 24, 8: 25}
N_OF_A_KIND = frozenset(BOMB_BY_SIZE.values()) | frozenset(COLOR_BOMB_BY_SIZE.values())
TRIPLE_FAMILY = frozenset({TRIPLE, TRIPLE_ONE, TRIPLE_TWO})
PAIR_FAMILY = frozenset({PAIR, JOKER_PAIR, JOKER_MIXED_PAIR})

# Bomb ladder (§3.2), low -> high; a pure 510K sits one rung above a mixed one.
_LADDER = (9, 10, 26, 11, 16, 18, 12, 17, 20, 13, 19, 14, 22, 23, 24, 25, 21)
RUNG_OF_CLASS: dict[int, int] = {cls: i + 2 for i, cls in enumerate(_LADDER)}
RUNG_OF_CLASS[FIVE_TEN_KING] = 1  # mixed; pure is rung 2
PURE_510K_RUNG = 2

# Suit order between pure 510Ks when the room option ``pure510k_suit_order`` is on. rules/
# dadun.md leaves the order open; this is the common Chinese one, 黑桃 spades > 红桃 hearts >
# 梅花 clubs > 方块 diamonds. Suit codes are s h c d = 0 1 2 3, so a lower code is a higher
# suit: strength = 3 - code.
SUIT_STRENGTH = (3, 2, 1, 0)

# §6.2 default odds by paiClass; a single 510K and 大小王 (27) pay nothing.
DEFAULT_BOMB_ODDS: dict[int, int] = {
    15: 1, 10: 1, 26: 2, 11: 2, 16: 3, 18: 3, 12: 3, 17: 4, 20: 4, 13: 5, 19: 5, 14: 6,
    22: 7, 23: 8, 24: 9, 25: 10, 21: 12,
}


class InvalidCombo(IllegalAction):
    """The cards are no legal Dadun combination for this hand size."""


@dataclass(frozen=True, slots=True)
class Combo:
    """One classified play. ``key`` orders plays inside a class (a rank index, the lowest rank
    of a straight, the highest triple of an airplane; 0 where only the rung counts)."""

    cls: int
    name: str
    key: int
    size: int
    units: int
    pure: bool
    rung: int
    last_only: bool
    cards: tuple[int, ...]


def _combo(cls: int, key: int, cards: tuple[int, ...], units: int = 1, pure: bool = False,
           last_only: bool = False) -> Combo:
    rung = RUNG_OF_CLASS.get(cls, 0) + (1 if pure else 0)
    return Combo(cls, CLASS_NAMES[cls], key, len(cards), units, pure, rung, last_only, cards)


def classify(cards: Sequence[int], hand_size: int, against: Combo | None = None, *,
             suit_order: bool = False) -> Combo:
    """The combination ``cards`` form when the player holds ``hand_size`` cards.

    Raises :class:`InvalidCombo` with the reason when they form none. With ``against``, a
    reading that beats it (by :func:`beats_rule` of ``suit_order``) is preferred (only short
    last-play airplanes have several).
    """
    return _preferred(interpretations(cards, hand_size), against, suit_order)


def try_classify(cards: Sequence[int], hand_size: int, against: Combo | None = None, *,
                 suit_order: bool = False) -> Combo | None:
    """:func:`classify`, or None instead of an error (and without composing its reason)."""
    try:
        played, rc = _prepare(cards, hand_size)
    except InvalidCombo:
        return None
    found = _detect(played, rc, len(played), hand_size == len(played))
    return _preferred(found, against, suit_order) if found else None


def _preferred(readings: list[Combo], against: Combo | None, suit_order: bool) -> Combo:
    """The first reading that beats ``against``, else the canonical (first) one."""
    if against is not None:
        better = beats_rule(suit_order)
        for combo in readings:
            if better(combo, against):
                return combo
    return readings[0]


def interpretations(cards: Sequence[int], hand_size: int) -> list[Combo]:
    """Every legal reading of the cards, the canonical one first; InvalidCombo if none."""
    played, rc = _prepare(cards, hand_size)
    n = len(played)
    found = _detect(played, rc, n, hand_size == n)
    if not found:
        raise InvalidCombo(_reason(played, rc, n, hand_size == n))
    return found


def _prepare(cards: Sequence[int], hand_size: int) -> tuple[tuple[int, ...], list[int]]:
    """The sorted cards and their 15 rank counts; InvalidCombo (bad_input) for bad input."""
    played = tuple(sorted(cards))
    rc = [0] * (RANK_BJ + 1)
    for c in played:
        if type(c) is not int or not 0 <= c < NUM_CODES:
            raise InvalidCombo(f"bad card code {c!r}", code="bad_input")
        rc[c >> 2 if c < SJ else c - SJ + RANK_SJ] += 1
    for i in range(COPIES, len(played)):
        if played[i] == played[i - COPIES]:
            raise InvalidCombo(f"{card_name(played[i])} appears more than twice", code="bad_input")
    if type(hand_size) is not int or hand_size < len(played):
        raise InvalidCombo(f"hand size {hand_size!r} is smaller than the play", code="bad_input")
    if not played:
        raise InvalidCombo("an empty play is no combination")
    return played, rc


def _detect(played: tuple[int, ...], rc: list[int], n: int, last: bool) -> list[Combo]:
    top = rc.index(max(rc))
    jokers = rc[RANK_SJ] + rc[RANK_BJ]
    if n == 1:
        return [_combo(SINGLE, top, played)]
    if n == 2:
        return _two_cards(played, rc, top)
    if jokers == n and n in (3, 4):
        return [_combo(JOKERS3 if n == 3 else JOKERS4, 0, played)]
    fives = rc[RANK_5]
    if fives == rc[RANK_T] == rc[RANK_K] and 3 * fives == n:
        if n == 3:
            pure = played[0] & 3 == played[1] & 3 == played[2] & 3
            return [_combo(FIVE_TEN_KING, 0, played, pure=pure)]
        if fives >= 3:
            return [_combo(MULTI_510K_BY_SETS[fives], 0, played, units=fives)]
    if n == 5 and rc[top] == 4:
        return [_combo(TRIPLE_TWO, top, played)]
    if rc[top] == n and top < RANK_SJ and 4 <= n <= 8:
        return [_bomb(played, top)]
    if 3 <= n <= 5 and rc[top] == 3:
        if n == 5 or last:
            return [_combo((TRIPLE, TRIPLE_ONE, TRIPLE_TWO)[n - 3], top, played, last_only=n < 5)]
        return []
    if n >= 6 and rc[top] >= 3:
        return _airplanes(played, rc, n, last)
    return _sequence(played, rc, n)


def _two_cards(played: tuple[int, ...], rc: list[int], top: int) -> list[Combo]:
    if rc[top] != 2:
        return [_combo(JOKER_MIXED_PAIR, 0, played)] if played == (SJ, SJ + 1) else []
    return [_combo(JOKER_PAIR if top >= RANK_SJ else PAIR, top, played)]


def _bomb(played: tuple[int, ...], rank: int) -> Combo:
    n = len(played)
    reds = sum(1 for c in played if c & 3 in RED_SUITS)
    blacks = sum(1 for c in played if c & 3 in BLACK_SUITS)
    color = n in COLOR_BOMB_BY_SIZE and max(reds, blacks) == 2 * len(RED_SUITS)
    return _combo(COLOR_BOMB_BY_SIZE[n] if color else BOMB_BY_SIZE[n], rank, played)


def _airplanes(played: tuple[int, ...], rc: list[int], n: int, last: bool) -> list[Combo]:
    """Full airplanes (n = 5L) first, then short last-play ones by triple count, descending;
    inside each length the highest run of triples."""
    lengths = [n // 5] if n % 5 == 0 else []
    if last:
        lengths += [size for size in range(n // 3, 1, -1) if 5 * size > n]
    found = []
    for size in lengths:
        run = 0
        for rank in range(RANK_A, -1, -1):
            run = run + 1 if rc[rank] >= 3 else 0
            if run >= size:
                key = rank + size - 1
                found.append(_combo(AIRPLANE, key, played, units=size, last_only=5 * size != n))
                break
    return found


def _sequence(played: tuple[int, ...], rc: list[int], n: int) -> list[Combo]:
    """Straights (顺子) and consecutive pairs (连对) within 3..A."""
    used = [r for r in range(RANK_A + 1) if rc[r]]
    width = len(used)
    if not used or sum(rc[r] for r in used) != n or used[-1] - used[0] != width - 1:
        return []
    if width == n and n >= 5:
        return [_combo(STRAIGHT, used[0], played, units=width)]
    if 2 * width == n and width >= 2 and all(rc[r] == 2 for r in used):
        return [_combo(PAIR_STRAIGHT, used[0], played, units=width)]
    return []


def _reason(played: tuple[int, ...], rc: list[int], n: int, last: bool) -> str:
    text = format_cards(played)
    if not last and 3 <= n <= 4 and 3 in rc[:RANK_SJ]:
        return f"{text}: a triple or triple+1 is legal only as a last play"
    if not last and n >= 6 and _airplanes(played, rc, n, True):
        return f"{text}: an airplane with fewer than 2 extra cards per triple is legal only as a last play"
    if any(rc[r] for r in (RANK_A + 1, RANK_SJ, RANK_BJ)) and n >= 4:
        return f"{text} is no combination (2 and jokers never join a sequence)"
    return f"{text} is no combination"


def is_bomb_tier(combo: Combo) -> bool:
    """True for every play on the bomb ladder (510K included, joker pairs excluded)."""
    return combo.rung > 0


def bomb_odds(combo: Combo, table: Mapping[int | str, int] | None = None) -> int:
    """The odds (赔率) a play pays when made (§6.2); 0 for plays that pay nothing."""
    odds: Mapping[Any, int] = DEFAULT_BOMB_ODDS if table is None else table
    return int(odds.get(combo.cls, odds.get(str(combo.cls), 0)))


def beats(a: Combo, b: Combo) -> bool:
    """True when ``a`` may be played on ``b`` (§3.2). Ties never beat; every pure 510K ties
    with every other (the default of the room option ``pure510k_suit_order``)."""
    if a.rung or b.rung:
        if not (a.rung and b.rung) or a.rung != b.rung:
            return a.rung > b.rung
        return a.cls in N_OF_A_KIND and a.key > b.key
    if a.cls in PAIR_FAMILY and b.cls in PAIR_FAMILY:
        return pair_order(a) > pair_order(b)
    if a.cls in TRIPLE_FAMILY and b.cls in TRIPLE_FAMILY:
        return a.key > b.key
    if a.cls != b.cls:
        return False
    if a.cls == SINGLE:
        return a.key > b.key
    return a.units == b.units and a.key > b.key


def beats_by_suit(a: Combo, b: Combo) -> bool:
    """:func:`beats` under ``pure510k_suit_order = true``: a pure 510K beats a pure 510K of a
    lower suit (:data:`SUIT_STRENGTH`); mixed 510Ks still tie, nothing else changes."""
    if a.rung or b.rung:  # the bomb tier of beats, with the suit rule on the pure 510K rung
        if not (a.rung and b.rung) or a.rung != b.rung:
            return a.rung > b.rung
        if a.rung == PURE_510K_RUNG:
            return SUIT_STRENGTH[a.cards[0] & 3] > SUIT_STRENGTH[b.cards[0] & 3]
        return a.cls in N_OF_A_KIND and a.key > b.key
    return beats(a, b)


def beats_rule(suit_order: bool) -> Callable[[Combo, Combo], bool]:
    """The comparison of a room: :func:`beats_by_suit` when its ``pure510k_suit_order`` is
    on, else :func:`beats`. Hot loops pick it once instead of passing the option per call."""
    return beats_by_suit if suit_order else beats


def suit_strength(combo: Combo, suit_order: bool) -> int:
    """How a play ranks inside its rung by suit: the :data:`SUIT_STRENGTH` of a pure 510K
    when ``suit_order`` is on, else 0 (suits decide nothing)."""
    if suit_order and combo.rung == PURE_510K_RUNG:
        return SUIT_STRENGTH[combo.cards[0] & 3]
    return 0


def pair_order(combo: Combo) -> tuple[int, int]:
    """Ordinary pairs < 大小王 (27) < SJ+SJ < BJ+BJ."""
    if combo.cls == PAIR:
        return (0, combo.key)
    if combo.cls == JOKER_MIXED_PAIR:
        return (1, 0)
    return (2, combo.key)
