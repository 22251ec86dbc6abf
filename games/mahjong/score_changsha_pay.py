"""Changsha (长沙麻将) amounts between one winner and one payer: dealer bonus (算庄闲) and
birds (扎鸟), §B7 of ../shared/rules/mahjong.md. Order per pair: X -> + dealer bonus ->
bird factor. Which seats pay, and drawing the birds, belong to the hand engine."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from games.engine import BadInput
from games.mahjong.score_changsha import changsha_options

SEATS = 4


def changsha_payment(
    x: int,
    big_hu: int,
    winner: int,
    payer: int,
    dealer: int,
    birds_on_pair: int,
    options: Mapping[str, Any],
) -> int:
    """What ``payer`` owes ``winner`` for a hand worth ``x`` (X of §B7) with ``big_hu`` big
    hu items (0 for a small hu); ``birds_on_pair`` = birds on the winner + birds on the payer.
    The dealer bonus adds 1 (small hu) or k (k big hu) when the dealer is one of the two."""
    for seat in (winner, payer, dealer):
        if seat not in range(SEATS):
            raise BadInput(f"seat must be 0..{SEATS - 1}, got {seat!r}")
    if winner == payer:
        raise BadInput("a winner does not pay himself")
    if x < 1 or big_hu < 0 or birds_on_pair < 0:
        raise BadInput("x must be positive, big_hu and birds_on_pair non-negative")
    opts = changsha_options(options)
    amount = x
    if opts["dealer_bonus"] == "on" and dealer in (winner, payer):
        amount += max(1, big_hu)
    if opts["bird_mode"] == "add_double":
        return amount * (1 + birds_on_pair)
    if opts["bird_mode"] == "mul_double":
        doubled: int = amount * 2**birds_on_pair
        return doubled
    return amount + birds_on_pair


def bird_seat(rank: int, origin: int) -> int:
    """The seat a bird of tile rank 1..9 lands on, counted from ``origin`` (the winner, or the
    discarder on 通炮): 1/5/9 -> origin, 2/6 -> next seat (下家), 3/7 -> opposite, 4/8 -> previous."""
    if rank not in range(1, 10) or origin not in range(SEATS):
        raise BadInput(f"bird rank 1..9 and origin seat 0..3 needed, got {rank!r}, {origin!r}")
    return (origin + rank - 1) % SEATS
