"""Dadun (打盾) cards: integer codes, notation, wire ids and point values.

A card is an int ``code = rank_index * 4 + suit`` with ranks ``3456789TJQKA2`` (index 0..12)
and suits ``s h c d`` (0..3); the small joker (小王) is ``SJ = 52`` and the big joker (大王)
``BJ = 53``. The deck is two full packs, so every code appears twice (108 cards). Codes sort
by rank, then suit, which is the order used for display and for ``Combo.cards``.
"""

from __future__ import annotations

from collections.abc import Iterable

RANKS = "3456789TJQKA2"
SUITS = "shcd"
SJ = 52
BJ = 53
NUM_CODES = 54
COPIES = 2
RANK_SJ = 13
RANK_BJ = 14
NUM_RANKS = 15
RED_SUITS = (1, 3)  # hearts, diamonds
BLACK_SUITS = (0, 2)  # spades, clubs
RANK_5 = RANKS.index("5")
RANK_T = RANKS.index("T")
RANK_K = RANKS.index("K")
RANK_A = RANKS.index("A")
POINTS_BY_RANK = {RANK_5: 5, RANK_T: 10, RANK_K: 10}
WIRE_SJ = 83
WIRE_BJ = 84


def rank_of(code: int) -> int:
    """Rank index 0..12 for 3..2; 13 for SJ, 14 for BJ."""
    return code >> 2 if code < SJ else code - SJ + RANK_SJ


def suit_of(code: int) -> int | None:
    """Suit 0..3 (s h c d); None for a joker."""
    return code & 3 if code < SJ else None


def is_red(code: int) -> bool:
    """Hearts or diamonds (jokers are neither red nor black here)."""
    return code < SJ and (code & 3) in RED_SUITS


# every code's name, looked up by card_name (prompts and views name many cards)
NAMES = tuple([r + s for r in RANKS for s in SUITS] + ["SJ", "BJ"])


def card_name(code: int) -> str:
    """``"Th"`` for the ten of hearts, ``"SJ"``/``"BJ"`` for the jokers."""
    if type(code) is not int or not 0 <= code < NUM_CODES:
        _check_code(code)  # raises, except for an int subclass (not a bool) in range
    return NAMES[code]


def parse_card(text: str) -> int:
    """The code of one card in notation (``"Th"``, ``"SJ"``); ValueError on anything else."""
    if text == "SJ":
        return SJ
    if text == "BJ":
        return BJ
    if len(text) != 2 or text[0] not in RANKS or text[1] not in SUITS:
        raise ValueError(
            f"bad card {text!r}: expected rank {RANKS} + suit {SUITS} (e.g. 'Th'), or SJ/BJ"
        )
    return RANKS.index(text[0]) * 4 + SUITS.index(text[1])


def parse_cards(text: str) -> list[int]:
    """Codes of space-separated cards, in the given order: ``"5h Td Ks"``."""
    if not isinstance(text, str):
        raise ValueError(f"cards must be a string of space-separated cards, got {text!r}")
    return [parse_card(part) for part in text.split()]


def format_cards(codes: Iterable[int]) -> str:
    """Space-separated notation, sorted by rank then suit."""
    return " ".join(map(card_name, sorted(codes)))


def point_value(codes: Iterable[int]) -> int:
    """Catch points (分) in the cards: 5 = 5, T = 10, K = 10."""
    return sum(POINTS_BY_RANK.get(rank_of(c), 0) for c in codes)


def full_deck() -> list[int]:
    """All 108 cards, each code twice, in code order (shuffle with games.rng)."""
    return [code for code in range(NUM_CODES) for _ in range(COPIES)]


def counts_of(codes: Iterable[int]) -> list[int]:
    """54 counts, one per code (each 0..2 in a real hand)."""
    counts = [0] * NUM_CODES
    for c in codes:
        if type(c) is not int or not 0 <= c < NUM_CODES:
            _check_code(c)
        counts[c] += 1
    return counts


def to_wire_id(code: int) -> int:
    """The seed client's card id: ``(client_suit - 1) * 20 + value``.

    Client suits are 1 diamonds, 2 clubs, 3 hearts, 4 spades; values 3..13, A = 14, 2 = 15;
    jokers are 83 (SJ) and 84 (BJ).
    """
    _check_code(code)
    if code == SJ:
        return WIRE_SJ
    if code == BJ:
        return WIRE_BJ
    client_suit = 4 - (code & 3)
    return (client_suit - 1) * 20 + (code >> 2) + 3


def from_wire_id(wire: int) -> int:
    """Inverse of :func:`to_wire_id`; ValueError for an id that names no card."""
    if wire == WIRE_SJ:
        return SJ
    if wire == WIRE_BJ:
        return BJ
    if not isinstance(wire, int) or isinstance(wire, bool) or not 0 <= wire < 80:
        raise ValueError(f"bad wire card id {wire!r}")
    client_suit, value = divmod(wire, 20)
    if not 3 <= value <= 15:
        raise ValueError(f"bad wire card id {wire!r}: value {value} is not 3..15")
    return (value - 3) * 4 + (3 - client_suit)


def _check_code(code: int) -> None:
    if not isinstance(code, int) or isinstance(code, bool) or not 0 <= code < NUM_CODES:
        raise ValueError(f"bad card code {code!r}: expected an int 0..53")
