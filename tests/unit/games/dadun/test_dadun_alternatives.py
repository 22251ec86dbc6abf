"""Rule alternatives of rules/dadun.md (§3.4, §4, §5, §6, §8, §9) as room options.

Every alternative the rules name is an accepted value; the ones added here are tested in
full: 霸奖 candidates (b) ``player_points`` and (d) ``alone_clean`` (§8.2), and 原炸 "played
at its full dealt size without splitting" ``fry_rule = played_intact`` (§8.3).
"""

from __future__ import annotations

import json

import pytest

from games.dadun import game
from games.dadun.cards import parse_cards
from games.dadun.combos import classify
from games.dadun.options import DEFAULT_OPTIONS, normalize_options
from games.dadun.scoring import (
    FRY_LARGE,
    FRY_NONE,
    FRY_SMALL,
    DealOutcome,
    played_fry_state,
    settle,
)
from games.engine import Action, BadInput
from tests.unit.games.dadun.helpers import NO, YES, make_deal

# Each "Config x = a | b", "Alternative" and [D] config mention of the rules, by key.
ALTERNATIVES = [
    ("jiefeng", ["partner_if_known", "partner_always", "next_player"]),  # §3.4
    ("both_copies", ["reject", "play_alone_dark"]),  # §4
    ("alone_askers", ["all", "banker_only"]),  # §5
    ("alone_leads", [True, False]),  # §5, §9
    ("alone_open_hands", [True, False]),  # §5
    ("leftover_points_to", ["opponents", "first_place_team"]),  # §6.1
    ("last_gives_catch_to_first", [False, True]),  # §6.1
    ("bomb_payers", ["all_others", "opponents"]),  # §6.2, §8.4
    ("bully_rule", ["all_points", "player_points", "alone_clean", "off"]),  # §6.3, §8.2
    ("tie_goes_to_first_place", [True, False]),  # §6.3, §8.1
    ("pure510k_suit_order", [False, True]),  # §3.2, §8.6
    ("fry_rule", ["dealt_hand", "played_intact", "off"]),  # §6.5, §8.3
]


@pytest.mark.parametrize(("key", "values"), ALTERNATIVES)
def test_every_alternative_of_the_rules_is_an_accepted_room_option(key, values):
    assert DEFAULT_OPTIONS[key] == values[0]
    for value in values:
        assert normalize_options({key: value})[key] == value
        assert game.new_hand({key: value}, 7, 0).deal.options[key] == value


@pytest.mark.parametrize(
    "options",
    [{"bully_rule": "top_bomb"}, {"bully_points": 0}, {"bully_points": "150"},
     {"bully_points": True}, {"fry_rule": "played"}, {"fry_rule": None}],
)
def test_bad_values_of_the_new_alternatives_are_rejected(options):
    with pytest.raises(BadInput, match=next(iter(options))):
        normalize_options(options)


# -- 霸奖 (§6.3, §8.2) as a pure function --------------------------------------------------------

PLAIN = tuple(parse_cards("3s 4s 6h 8c Jd Qd Ah"))


def outcome(**changes) -> DealOutcome:
    """Team {0, 2} against {1, 3}; out order 0 then 3 then 2 (no 双围)."""
    base = dict(
        banker=0, alone_seat=None, friend_seat=2, teams=(0, 1, 0, 1),
        over_order=(1, 0, 3, 2), catch=(150, 10, 20, 20), leftover=(0, 0, 0, 0),
        dealt=(PLAIN,) * 4, bomb_payments=(), bomb_odds=(0, 0, 0, 0),
    )
    base.update(changes)
    return DealOutcome(**base)


def bully_flags(settlement) -> list[bool]:
    return [p["is_bully"] for p in settlement.details["players"]]


def test_player_points_one_winner_catching_n_alone():
    rule = {"bully_rule": "player_points"}
    o = outcome()  # seat 0 caught 150: team {0, 2} wins with 170 of 200
    s = settle(o, normalize_options(rule))
    assert list(s.deltas) == [2, -2, 2, -2] and bully_flags(s) == [True, False, True, False]
    assert s.details["multiplier"] == 2
    # under the default (all 200 points) the same deal is no 霸奖
    assert list(settle(o, normalize_options({})).deltas) == [1, -1, 1, -1]
    # the threshold is the room's: 151 is not reached; two members together do not count
    assert bully_flags(settle(o, normalize_options({**rule, "bully_points": 151}))) == [False] * 4
    split = outcome(catch=(100, 10, 70, 20))
    assert list(settle(split, normalize_options(rule)).deltas) == [1, -1, 1, -1]
    # a loser catching N alone is no 霸奖 for anyone (here the other team wins by 双围)
    loser = outcome(over_order=(0, 1, 0, 2), catch=(160, 10, 10, 20))
    s = settle(loser, normalize_options(rule))
    assert list(s.deltas) == [-2, 2, -2, 2] and not any(bully_flags(s))
    # it stacks with 双围 and uses bully_mult
    double = outcome(over_order=(1, 0, 2, 0))
    s = settle(double, normalize_options({**rule, "bully_mult": 3}))
    assert list(s.deltas) == [6, -6, 6, -6] and s.details["multiplier"] == 6


def alone(catch, first=2) -> DealOutcome:
    over = [0, 0, 0, 0]
    over[first] = 1
    return outcome(alone_seat=2, friend_seat=None, teams=(1, 1, 0, 1), over_order=tuple(over),
                   catch=catch)


def test_alone_clean_alone_win_with_opponents_on_zero():
    rule = normalize_options({"bully_rule": "alone_clean", "base": 2})
    s = settle(alone((0, 0, 35, 0)), rule)  # A = 2, bully x2: 8 from each opponent
    assert list(s.deltas) == [-8, -8, 24, -8]
    assert bully_flags(s) == [False, False, True, False] and s.details["multiplier"] == 4
    caught = settle(alone((0, 5, 30, 0)), rule)
    assert list(caught.deltas) == [-4, -4, 12, -4] and not any(bully_flags(caught))
    lost = settle(alone((0, 0, 0, 0), first=1), rule)
    assert list(lost.deltas) == [4, 4, -12, 4] and not any(bully_flags(lost))
    # the default rule knows no alone 霸奖; alone_clean knows no team 霸奖
    assert list(settle(alone((0, 0, 35, 0)), normalize_options({"base": 2})).deltas) == [
        -4, -4, 12, -4]
    all_points = outcome(catch=(150, 0, 50, 0))
    assert not any(bully_flags(settle(all_points, rule)))
    assert all(bully_flags(settle(all_points, normalize_options({"base": 2})))[s]
               for s in (0, 2))


# -- 原炸 played whole (§8.3) ---------------------------------------------------------------------


def dealt_with(text: str) -> list[int]:
    return parse_cards(text) + list(PLAIN)


@pytest.mark.parametrize(
    ("dealt", "play", "state"),
    [
        ("7s 7s 7h 7h 7c 7c 7d 7d", "7s 7s 7h 7h 7c 7c 7d 7d", FRY_LARGE),
        ("7s 7s 7h 7h 7c 7c 7d", "7s 7s 7h 7h 7c 7c 7d", FRY_SMALL),
        ("7s 7s 7h 7h 7c 7c 7d 7d", "7s 7s 7h 7h 7c 7c 7d", FRY_NONE),  # split from 8
        ("7s 7s 7h 7h 7c 7c", "7s 7s 7h 7h 7c 7c", FRY_NONE),  # a 6-bomb is no 原炸
        ("SJ SJ BJ BJ", "SJ SJ BJ BJ", FRY_LARGE),
        ("SJ BJ BJ", "SJ BJ BJ", FRY_SMALL),
        ("SJ SJ BJ BJ", "SJ BJ BJ", FRY_NONE),  # three of four jokers
        ("7s 7s 7h 7h 7c 7c 7d 7d", "7s 7h 7c 7d", FRY_NONE),
    ],
)
def test_played_fry_state(dealt, play, state):
    cards = parse_cards(play)
    combo = classify(cards, 27)
    assert played_fry_state(dealt_with(dealt), combo.cls, cards) == state


def start(options, hands):
    """Banker 0 (friend card Ah, other copy at seat 2), seat 1 dealt all eight 7s; then the
    hands are cut down to ``hands`` (the dealt hands stay as dealt)."""
    s = game.new_hand_from_deal(options, make_deal({0: "Ah", 2: "Ah",
                                                    1: "7s 7s 7h 7h 7c 7c 7d 7d"}), 0)
    s.deal_events()
    while s.phase() == "alone":
        s.apply(s.to_act()[0], NO)
    s.apply(0, Action("choose_friend_card", tiles=("Ah",)))
    for seat, cards in hands.items():
        s.deal.hands[seat] = sorted(parse_cards(cards))
    return s


def act(s, seat, kind, cards=""):
    return s.apply(seat, Action(kind, tuple(cards.split()), ref=s.deal.token))


def bomb_and_finish(options, bomb: str):
    """Seat 0 leads 3s and is out; seat 1 bombs with some of its eight 7s; seats 2, 3 pass;
    seat 1 leads 4s and seat 2 goes out with 6h: team {0, 2} is out and the deal ends."""
    s = start(options, {0: "3s", 1: "7s 7s 7h 7h 7c 7c 7d 7d 4s 9d", 2: "6h", 3: "5s 9c"})
    act(s, 0, "play", "3s")
    act(s, 1, "play", bomb)
    act(s, 2, "pass")
    act(s, 3, "pass")
    act(s, 1, "play", "4s")
    events = act(s, 2, "play", "6h")
    assert s.is_over()
    over = next(e for e in events if e.kind == "hand_over").data
    fry = [e.data for e in events if e.kind == "payment" and e.data["reason"] == "fry"]
    return s, over, fry


def test_fry_played_intact_through_the_engine():
    eight = "7s 7s 7h 7h 7c 7c 7d 7d"
    s, over, fry = bomb_and_finish({"fry_rule": "played_intact"}, eight)
    assert fry == [{"reason": "fry", "payer": p, "payee": 1, "amount": 4} for p in (0, 2, 3)]
    assert [p["fry_state"] for p in over["players"]] == [0, 2, 0, 0]
    assert s.deal.fry_played == [0, 2, 0, 0]
    # split: a 7-bomb out of the eight dealt is no 原炸 played whole...
    _, over, fry = bomb_and_finish({"fry_rule": "played_intact"}, "7s 7s 7h 7h 7c 7c 7d")
    assert fry == [] and [p["fry_state"] for p in over["players"]] == [0, 0, 0, 0]
    # ...but the dealt hand held eight: a large 原炸 under the default rule
    _, over, fry = bomb_and_finish({}, "7s 7s 7h 7h 7c 7c 7d")
    assert [p["fry_state"] for p in over["players"]] == [0, 2, 0, 0] and len(fry) == 3
    _, over, fry = bomb_and_finish({"fry_rule": "off"}, eight)
    assert fry == [] and [p["fry_state"] for p in over["players"]] == [0, 0, 0, 0]


def test_alone_clean_through_the_engine():
    s = game.new_hand_from_deal({"bully_rule": "alone_clean", "base": 2},
                                make_deal({0: "Ah", 2: "Ah"}), 0)
    s.deal_events()
    s.apply(0, NO)
    s.apply(1, YES)
    s.deal.hands[1] = parse_cards("3s")
    events = act(s, 1, "play", "3s")
    over = next(e for e in events if e.kind == "hand_over").data
    assert over["deltas"] == [-8, 24, -8, -8] and over["multiplier"] == 4
    assert [p["is_bully"] for p in over["players"]] == [False, True, False, False]


def test_a_deal_serialized_before_fry_played_existed_still_loads():
    s = start({}, {})
    data = json.loads(s.serialize())
    assert data["fry_played"] == [0, 0, 0, 0]
    del data["fry_played"]
    restored = game.deserialize(json.dumps(data))
    assert restored.serialize() == s.serialize()
    data["something_else"] = 1
    with pytest.raises(BadInput):
        game.deserialize(json.dumps(data))
