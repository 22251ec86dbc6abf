"""Timeout and entrust (托管) choices, the engine's ``default_action``: pure functions."""

from __future__ import annotations

from collections.abc import Sequence

from games.doudizhu.cards import RANK_BJ, RANK_SJ, rank_counts, rank_of


def lead_card(hand: Sequence[int]) -> int:
    """The lowest card that breaks no bomb (four of a rank) and not the rocket; else the
    lowest card."""
    counts = rank_counts(hand)
    rocket = counts[RANK_SJ] and counts[RANK_BJ]
    free = [c for c in hand if counts[rank_of(c)] < 4
            and not (rocket and rank_of(c) in (RANK_SJ, RANK_BJ))]
    return min(free) if free else min(hand)
