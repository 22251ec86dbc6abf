"""Shared by the Dadun engine and bot tests: fixed deals and the 打独 (go alone) answers."""

from __future__ import annotations

from collections import Counter

from games.dadun.cards import full_deck, parse_cards
from games.engine import Action

NO = Action("choose_alone", choice="no")
YES = Action("choose_alone", choice="yes")


def make_deal(fixed: dict[int, str]) -> list[list[int]]:
    """Four 27-card hands: the fixed cards, the rest of the deck dealt round-robin in code
    order (so fillers hold about two of each rank: no bombs)."""
    hands = {s: parse_cards(fixed.get(s, "")) for s in range(4)}
    rest = Counter(full_deck()) - Counter(c for h in hands.values() for c in h)
    seat = 0
    for code in sorted(rest.elements()):
        while len(hands[seat]) >= 27:
            seat = (seat + 1) % 4
        hands[seat].append(code)
        seat = (seat + 1) % 4
    return [hands[s] for s in range(4)]
