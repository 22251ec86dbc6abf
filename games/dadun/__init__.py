"""Chongren Dadun (崇仁打盾): cards, combinations, legal plays (and the hand state machine)."""

from games.dadun.cards import BJ, RANKS, SJ, SUITS, card_name, format_cards, parse_cards
from games.dadun.combos import (
    Combo,
    InvalidCombo,
    beats,
    beats_by_suit,
    beats_rule,
    classify,
    try_classify,
)
from games.dadun.legal import has_legal_play, hint_plays, iter_legal_plays, legal_plays

__all__ = [
    "BJ", "RANKS", "SJ", "SUITS", "Combo", "InvalidCombo", "beats", "beats_by_suit", "beats_rule",
    "card_name", "classify",
    "format_cards", "has_legal_play", "hint_plays", "iter_legal_plays", "legal_plays",
    "parse_cards", "try_classify",
]
