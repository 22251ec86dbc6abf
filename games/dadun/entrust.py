"""Entrust (托管) choices, also the engine's ``default_action`` (../shared/rules/dadun.md §2):
pure functions of a hand.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from games.dadun.cards import parse_card, point_value, rank_of

JOKER_MIN = 52  # SJ = 52, BJ = 53
FIVE_TEN_KING = frozenset(rank_of(parse_card(name)) for name in ("5s", "Ts", "Ks"))


def protected_cards(hand: Sequence[int]) -> set[int]:
    """Cards whose single play would break a bomb (4+ of a rank, 2+ jokers) or a 510K."""
    ranks = Counter(rank_of(c) for c in hand if c < JOKER_MIN)
    jokers = [c for c in hand if c >= JOKER_MIN]
    keep = {c for c in hand if c < JOKER_MIN and ranks[rank_of(c)] >= 4}
    if len(jokers) >= 2:
        keep.update(jokers)
    if all(ranks[r] for r in FIVE_TEN_KING):
        keep.update(c for c in hand if c < JOKER_MIN and rank_of(c) in FIVE_TEN_KING)
    return keep


def entrust_lead(hand: Sequence[int]) -> int:
    """The lowest single that breaks no bomb and no 510K, if there is one; else the lowest."""
    keep = protected_cards(hand)
    free = [c for c in hand if c not in keep]
    return min(free) if free else min(hand)


def default_friend_card(hand: Sequence[int]) -> int:
    """The lowest card held once that is not a point card (else the lowest card held once).
    A 27-card hand always holds some card once."""
    counts = Counter(hand)
    once = sorted(c for c, n in counts.items() if n == 1)
    plain = [c for c in once if point_value([c]) == 0]
    return (plain or once)[0]
