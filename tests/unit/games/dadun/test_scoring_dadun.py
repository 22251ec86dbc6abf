"""Dadun settlement as a pure function (rules/dadun.md §6, the worked examples of §7)."""

from __future__ import annotations

import pytest

from games.dadun.cards import parse_cards
from games.dadun.options import normalize_options
from games.dadun.scoring import (
    FRY_LARGE,
    FRY_NONE,
    FRY_SMALL,
    DealOutcome,
    fry_state,
    settle,
    team_points,
)
from games.engine import Payment

PLAIN_HAND = tuple(parse_cards("3s 4s 6h 8c Jd Qd Ah"))


def bombs(payee: int, amount: int, payers=(0, 1, 2, 3)) -> tuple[Payment, ...]:
    return tuple(Payment("bomb", p, payee, amount) for p in payers if p != payee)


def outcome(**changes) -> DealOutcome:
    base = dict(
        banker=0, alone_seat=None, friend_seat=2, teams=(0, 1, 0, 1),
        over_order=(1, 0, 3, 2), catch=(70, 25, 30, 60), leftover=(0, 15, 0, 0),
        dealt=(PLAIN_HAND,) * 4, bomb_payments=(), bomb_odds=(0, 0, 0, 0),
    )
    base.update(changes)
    return DealOutcome(**base)


def per_reason(settlement, reason: str) -> list[int]:
    out = [0, 0, 0, 0]
    for p in settlement.payments:
        if p.reason == reason:
            out[p.payer] -= p.amount
            out[p.payee] += p.amount
    return out


def test_example_1_team_mode_with_a_bomb():
    """§7 example 1: B = 2, seat 1 plays a 5-bomb (odds 2), out order 0, 3, 2."""
    o = outcome(bomb_payments=bombs(1, 4), bomb_odds=(0, 2, 0, 0))
    s = settle(o, normalize_options({"base": 2}))
    assert team_points(o, normalize_options({})) == (115, 85)
    assert per_reason(s, "card_result") == [2, -2, 2, -2]
    assert list(s.deltas) == [-2, 10, -2, -6]
    players = s.details["players"]
    assert [p["win_score"] for p in players] == [-2, 10, -2, -6]
    assert [p["bomb_score"] for p in players] == [-4, 12, -4, -4]
    assert [p["card_score"] for p in players] == [2, -2, 2, -2]
    assert [p["friend_seat"] for p in players] == [2, 3, 0, 1]
    assert [p["is_banker"] for p in players] == [True, False, False, False]
    assert not any(p["is_double"] or p["is_bully"] for p in players)
    assert s.details["team_points"] == [115, 85]
    assert s.next_dealer == 0


def test_example_2_double_surround_wins_whatever_the_points():
    """§7 example 2: seats 1 and 3 finish first and second; team B wins with M = 2."""
    o = outcome(over_order=(0, 1, 0, 2), catch=(120, 10, 60, 10), leftover=(0, 0, 0, 0))
    s = settle(o, normalize_options({"base": 2}))
    assert list(s.deltas) == [-4, 4, -4, 4]
    assert [p["is_double"] for p in s.details["players"]] == [False, True, False, True]
    assert s.next_dealer == 1


def test_example_3_alone_win_and_loss():
    """§7 example 3: B = 2, A = 2; seat 2 alone."""
    opts = normalize_options({"base": 2, "alone_mult": 2})
    win = outcome(alone_seat=2, friend_seat=None, teams=(1, 1, 0, 1), over_order=(0, 0, 1, 0))
    assert list(settle(win, opts).deltas) == [-4, -4, 12, -4]
    loss = outcome(alone_seat=2, friend_seat=None, teams=(1, 1, 0, 1), over_order=(1, 0, 0, 0))
    s = settle(loss, opts)
    assert list(s.deltas) == [4, 4, -12, 4]
    assert [p["is_alone"] for p in s.details["players"]] == [False, False, True, False]
    assert s.next_dealer == 0


def test_bomb_money_is_kept_even_for_the_losing_side():
    o = outcome(bomb_payments=bombs(3, 6), bomb_odds=(0, 0, 0, 3))
    s = settle(o, normalize_options({}))
    assert per_reason(s, "bomb") == [-6, -6, -6, 18]
    assert list(s.deltas) == [-6 + 1, -6 - 1, -6 + 1, 18 - 1]


@pytest.mark.parametrize(
    "catch, leftover, first, winners",
    [
        ((60, 50, 41, 49), (0, 0, 0, 0), 0, [0, 2]),  # 101 : 99, A wins
        ((50, 50, 50, 50), (0, 0, 0, 0), 1, [1, 3]),  # 100 : 100, tie to the 头游 team
        ((50, 50, 50, 50), (0, 0, 0, 0), 0, [0, 2]),
        ((40, 60, 50, 40), (0, 0, 0, 10), 0, [0, 2]),  # leftover 10 goes to team A: 100+10
    ],
)
def test_threshold_and_tie_break(catch, leftover, first, winners):
    order = (1, 0, 2, 0) if first == 0 else (2, 1, 0, 0)
    o = outcome(catch=catch, leftover=leftover, over_order=order)
    s = settle(o, normalize_options({}))
    assert s.details["winners"] == winners


def test_tie_without_first_place_rule_is_a_draw():
    o = outcome(catch=(50, 50, 50, 50), leftover=(0, 0, 0, 0))
    s = settle(o, normalize_options({"tie_goes_to_first_place": False}))
    assert s.details["winners"] == []
    assert list(s.deltas) == [0, 0, 0, 0]


def test_leftover_points_option_changes_the_receiving_team():
    # Seat 2 (team A, partner of 头游) still holds 25 points.
    o = outcome(over_order=(1, 2, 0, 3), catch=(70, 40, 0, 65), leftover=(0, 0, 25, 0))
    assert team_points(o, normalize_options({})) == (70, 130)
    first_team = normalize_options({"leftover_points_to": "first_place_team"})
    assert team_points(o, first_team) == (95, 105)


def test_last_gives_catch_to_first():
    o = outcome(over_order=(1, 0, 2, 0), catch=(40, 50, 40, 70), leftover=(0, 0, 0, 0))
    assert team_points(o, normalize_options({})) == (80, 120)
    moved = normalize_options({"last_gives_catch_to_first": True})
    assert team_points(o, moved) == (200, 0)


def test_bully_all_points_doubles_and_stacks_with_double_surround():
    all_points = outcome(over_order=(1, 0, 2, 0), catch=(150, 0, 50, 0), leftover=(0, 0, 0, 0))
    s = settle(all_points, normalize_options({}))
    # 双围 (M = 2) and 霸奖 (x2) -> 4 per winner.
    assert list(s.deltas) == [4, -4, 4, -4]
    assert [p["is_bully"] for p in s.details["players"]] == [True, False, True, False]
    off = settle(all_points, normalize_options({"bully_rule": "off"}))
    assert list(off.deltas) == [2, -2, 2, -2]
    single = outcome(over_order=(1, 2, 0, 0), catch=(150, 0, 50, 0), leftover=(0, 0, 0, 0))
    assert list(settle(single, normalize_options({})).deltas) == [2, -2, 2, -2]


@pytest.mark.parametrize(
    "cards, state",
    [
        ("SJ SJ BJ BJ", FRY_LARGE),
        ("7s 7s 7h 7h 7c 7c 7d 7d", FRY_LARGE),
        ("SJ BJ BJ", FRY_SMALL),
        ("7s 7s 7h 7h 7c 7c 7d", FRY_SMALL),
        ("7s 7s 7h 7h 7c 7c SJ BJ", FRY_NONE),
    ],
)
def test_fry_state_of_a_dealt_hand(cards, state):
    assert fry_state(parse_cards(cards) + list(PLAIN_HAND)) == state


def test_fry_payments_are_booked_in_bomb_score():
    large = tuple(parse_cards("SJ SJ BJ BJ")) + PLAIN_HAND
    small = tuple(parse_cards("9s 9s 9h 9h 9c 9c 9d")) + PLAIN_HAND
    o = outcome(dealt=(PLAIN_HAND, large, PLAIN_HAND, small))
    s = settle(o, normalize_options({"base": 3}))
    assert per_reason(s, "fry") == [-18, 30, -18, 6]
    players = s.details["players"]
    assert [p["fry_state"] for p in players] == [0, 2, 0, 1]
    assert [p["bomb_score"] for p in players] == [-18, 30, -18, 6]
    off = settle(o, normalize_options({"fry_rule": "off"}))
    assert per_reason(off, "fry") == [0, 0, 0, 0]


def test_every_settlement_is_zero_sum():
    o = outcome(bomb_payments=bombs(1, 4) + bombs(2, 12), bomb_odds=(0, 2, 6, 0),
                dealt=(tuple(parse_cards("SJ SJ BJ")) + PLAIN_HAND,) + (PLAIN_HAND,) * 3)
    s = settle(o, normalize_options({"base": 2}))
    assert sum(s.deltas) == 0
    assert sum(p["win_score"] for p in s.details["players"]) == 0
