"""Dou Dizhu (斗地主): cards, combinations, legal plays, and the hand state machine
(:mod:`games.doudizhu.game`; rules in docs/doudizhu.md)."""

from games.doudizhu.combos import KINDS, Combo, beats, classify
from games.doudizhu.legal import legal_plays, pick_cards

__all__ = ["KINDS", "Combo", "beats", "classify", "legal_plays", "pick_cards"]
