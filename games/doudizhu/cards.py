"""Dou Dizhu (斗地主) cards: one 54-card pack in the project's card notation, and rank counts.

A card is the int code of :mod:`games.dadun.cards` (the one card notation of the project):
``code = rank_index * 4 + suit`` with ranks ``3456789TJQKA2`` (0..12) and suits ``s h c d``
(0..3), the small joker (小王) ``SJ = 52`` and the big joker (大王) ``BJ = 53``. Dou Dizhu uses
one pack, so every code appears once. Suits never matter in play: combinations are judged on
the *rank counts* of a play, a list of 15 counts (ranks 0..12, then 13 for SJ, 14 for BJ).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from games.dadun.cards import BJ, SJ, card_name, format_cards, parse_card, rank_of
from games.engine import BadInput

__all__ = ["BJ", "SJ", "card_name", "describe", "format_cards", "full_deck", "name_list",
           "parse_names", "rank_counts", "rank_of", "rank_text", "NUM_CARDS", "NUM_RANKS",
           "RANK_CHARS"]

NUM_CARDS = 54
NUM_RANKS = 15
RANK_A, RANK_2, RANK_SJ, RANK_BJ = 11, 12, 13, 14
# One letter per rank, as RLCard writes them (B: small joker, R: big joker); for rank texts
# in tests, docs and the conformance driver ("33345", "BR").
RANK_CHARS = "3456789TJQKA2BR"


def full_deck() -> list[int]:
    """The 54 codes in code order (3s 3h 3c 3d 4s ... 2d SJ BJ); shuffle with games.fair."""
    return list(range(NUM_CARDS))


def rank_counts(codes: Iterable[int]) -> list[int]:
    """How many cards of each of the 15 ranks ``codes`` holds."""
    counts = [0] * NUM_RANKS
    for c in codes:
        counts[rank_of(c)] += 1
    return counts


def rank_text(counts: Sequence[int]) -> str:
    """Rank counts as letters, lowest rank first: ``[3, 1, 0, ...]`` -> ``"3334"``."""
    return "".join(RANK_CHARS[r] * n for r, n in enumerate(counts))


def parse_names(names: Iterable[str]) -> list[int]:
    """Codes of card names (``"Th"``, ``"SJ"``); BadInput on a bad name or a repeated card
    (a single pack holds each card once)."""
    out = []
    for name in names:
        try:
            out.append(parse_card(name))
        except (ValueError, TypeError) as exc:
            raise BadInput(f"{name!r} is not a card") from exc
    if len(set(out)) != len(out):
        raise BadInput("a card appears twice: a Dou Dizhu pack holds each card once")
    return out


def describe(codes: Iterable[int]) -> str:
    """Space-separated card names, sorted (for messages)."""
    return format_cards(codes) if codes else "(nothing)"


def name_list(codes: Iterable[int]) -> list[str]:
    """Card names in code order (for actions and events)."""
    return [card_name(c) for c in sorted(codes)]
