"""Dadun engine, the play loop and the end of a deal (rules §3.3-3.5, §4, §6 through play).

Positions are set up after a real alone/friend phase by replacing the hands with short
ones (``position``), so that each rule shows in a few moves.
"""

from __future__ import annotations

import pytest

from games.dadun import game
from games.dadun.cards import card_name, parse_cards
from games.dadun.legal import iter_legal_plays
from games.engine import Action, BadInput, HandOver, IllegalAction, NotYourTurn, StaleRef
from tests.unit.games.dadun.helpers import NO, YES, make_deal


def start(options=None, alone=None, fixed=None, hands=None, catch=None):
    """Banker 0, friend card Ah (other copy at seat 2) unless ``alone`` says who goes alone;
    then the hands are replaced by ``hands`` (seat -> cards)."""
    fixed = {0: "Ah", 2: "Ah"} if fixed is None else fixed
    s = game.new_hand_from_deal(options, make_deal(fixed), 0)
    s.deal_events()
    while s.phase() == "alone":
        seat = s.to_act()[0]
        s.apply(seat, YES if seat == alone else NO)
    if s.phase() == "friend":
        s.apply(0, Action("choose_friend_card", tiles=("Ah",)))
    for seat, cards in (hands or {}).items():
        s.deal.hands[seat] = sorted(parse_cards(cards))
    if catch is not None:
        s.deal.catch = list(catch)
    return s


def act(s, seat, kind, cards=""):
    return s.apply(seat, Action(kind, tuple(cards.split()), ref=s.deal.token))


def kinds(events):
    return [e.kind for e in events]


def first(events, kind):
    return next(e for e in events if e.kind == kind)


HANDS = {0: "3s 4s 5s 6s 7s 9h", 1: "8s 8h Jd", 2: "Ah 9d Qc", 3: "6h 6d Qd"}


# -- errors leave the state unchanged ------------------------------------------------------


@pytest.mark.parametrize(
    "seat, action, error, code",
    [
        (1, Action("play", ("8s",), ref="CURRENT"), NotYourTurn, "not_your_turn"),
        (0, Action("play", ("3s",), ref="t0"), StaleRef, "stale_ref"),
        (0, Action("play", ("3s",)), StaleRef, "stale_ref"),
        (0, Action("play", ("2s",), ref="CURRENT"), IllegalAction, "card_not_in_hand"),
        (0, Action("play", ("3s", "3s"), ref="CURRENT"), IllegalAction, "card_not_in_hand"),
        (0, Action("play", ("3s", "5s"), ref="CURRENT"), IllegalAction, "illegal_action"),
        (0, Action("play", ("zz",), ref="CURRENT"), BadInput, "bad_input"),
        (0, Action("play", (), ref="CURRENT"), BadInput, "bad_input"),
        (0, Action("pass", ref="CURRENT"), IllegalAction, "leader_must_play"),
        (0, Action("pass", ("3s",), ref="CURRENT"), BadInput, "bad_input"),
        (0, Action("shout", ref="CURRENT"), BadInput, "bad_input"),
        (7, Action("play", ("3s",), ref="CURRENT"), BadInput, "bad_input"),
    ],
)
def test_bad_plays_raise_typed_errors_and_change_nothing(seat, action, error, code):
    s = start(hands=HANDS)
    if action.ref == "CURRENT":
        action = Action(action.kind, action.tiles, s.deal.token, action.choice)
    before = s.serialize()
    with pytest.raises(error) as err:
        s.apply(seat, action)
    assert err.value.code == code
    assert not s.can(seat, action)
    assert s.serialize() == before


def test_a_play_must_beat_the_latest_play():
    s = start(hands=HANDS)
    act(s, 0, "play", "9h")
    with pytest.raises(IllegalAction) as err:
        act(s, 1, "play", "8s")
    assert err.value.code == "does_not_beat"
    act(s, 1, "play", "Jd")


def test_old_token_is_stale_after_the_next_prompt():
    s = start(hands=HANDS)
    old = s.deal.token
    events = act(s, 0, "play", "3s")
    new = first(events, "hint_out").data["token"]
    assert new != old and s.observation(1)["token"] == new
    with pytest.raises(StaleRef):
        s.apply(1, Action("play", ("8s",), ref=old))


def test_listed_actions_are_legal_and_unlisted_legal_plays_are_accepted():
    s = start(hands={0: "3s 4s 5s 6s 7s 8s 9h 9d Th Jh Jd", 1: "Qd"})
    listed = s.legal_actions(0)
    assert listed and all(s.can(0, a) for a in listed)
    assert not any(a.kind == "pass" for a in listed)
    names = {tuple(a.tiles) for a in listed}
    unlisted = [p for p in iter_legal_plays(s.hand_of(0), None)
                if tuple(card_name(c) for c in p) not in names]
    assert unlisted
    for play in unlisted:
        assert s.can(0, Action("play", tuple(card_name(c) for c in play), ref=s.deal.token))
    assert s.legal_actions(1) == []


# -- tricks ---------------------------------------------------------------------------------


def test_passes_do_not_lock_out_and_the_trick_winner_catches_and_leads():
    s = start(hands={0: "3s 9s 9h", 1: "4s 7s Jh", 2: "5h 8h Kc", 3: "6s 6h Qd"})
    act(s, 0, "play", "3s")
    act(s, 1, "pass")
    act(s, 2, "play", "5h")
    act(s, 3, "pass")
    act(s, 0, "pass")
    events = act(s, 1, "play", "7s")  # passed earlier in this trick, may play again
    assert first(events, "play").data["round_serial"] == 6
    act(s, 2, "play", "8h")
    act(s, 3, "play", "Qd")
    act(s, 0, "pass")
    act(s, 1, "pass")
    events = act(s, 2, "pass")
    clear = first(events, "clear_desk")
    assert clear.data == {"seat": 3, "desk_points": 5, "catch": [0, 0, 0, 5], "round": 1}
    hint = first(events, "hint_out")
    assert hint.data["seat"] == 3 and hint.data["must_play"]
    obs = s.observation(3)
    assert obs["desk"] == [] and obs["desk_points"] == 0 and obs["round_index"] == 2
    assert obs["token"] == hint.data["token"] and obs["must_play"]


def test_default_action_in_play_keeps_bombs_and_510k():
    s = start(hands={0: "4s 4h 4d 4d 5s Ts Ks 9c", 1: "Jd Jh"})
    assert s.default_action(0) == Action("play", ("9c",), ref=s.deal.token)
    act(s, 0, "play", "9c")
    assert s.default_action(1) == Action("pass", ref=s.deal.token)
    with pytest.raises(NotYourTurn):
        s.default_action(0)


def test_rest_count_is_published_only_at_five_or_fewer():
    s = start(hands={0: "3s 4s 5s 6s 7s 8s 9h", 1: "8h 9c Td Jd Qd Kd"})
    events = act(s, 0, "play", "3s")
    assert first(events, "play").data["rest_num"] is None
    events = act(s, 1, "play", "8h")
    assert first(events, "play").data["rest_num"] == 5
    counts = s.observation(2)["hand_counts"]
    assert counts[0] is None and counts[1] == 5


# -- friend card and bombs --------------------------------------------------------------------


def test_partnership_becomes_public_only_when_the_partner_plays_the_friend_card():
    s = start(hands={0: "Ah 3s 3h", 1: "4s 8c", 2: "Ah Kc Kd", 3: "6h 9d"})
    events = act(s, 0, "play", "Ah")
    assert first(events, "play").data["contains_friend_card"] is False
    assert not s.observation(1)["friend_public"]
    act(s, 1, "pass")
    act(s, 2, "pass")
    act(s, 3, "pass")
    act(s, 0, "play", "3s")
    act(s, 1, "play", "4s")
    assert s.observation(1)["teams"] is None and s.observation(1)["my_partner"] is None
    events = act(s, 2, "play", "Ah")
    play = first(events, "play")
    assert play.data["contains_friend_card"] is True
    assert play.data["friendship"] == [2, 3, 0, 1]
    revealed = first(events, "friend_revealed")
    assert revealed.data["friend_seat"] == 2 and revealed.data["banker"] == 0
    obs = s.observation(1)
    assert obs["friend_public"] and obs["teams"] == [0, 1, 0, 1] and obs["my_partner"] == 3


def test_a_bomb_is_paid_at_once_by_every_other_seat():
    s = start({"base": 3}, hands={0: "4s 4h 4c 4d 3s", 1: "5h 5h 5d 5d 8c", 2: "9d", 3: "Qd"})
    events = act(s, 0, "play", "4s 4h 4c 4d")
    play = first(events, "play")
    assert play.data["class"] == 10 and play.data["bomb_odds"] == 1
    assert play.data["bomb_score"] == [9, -3, -3, -3]
    assert [e.data for e in events if e.kind == "payment"] == [
        {"reason": "bomb", "payer": p, "payee": 0, "amount": 3} for p in (1, 2, 3)]
    events = act(s, 1, "play", "5h 5h 5d 5d")  # 四红 4-bomb, odds 2
    play = first(events, "play")
    assert play.data["class"] == 26 and play.data["bomb_odds"] == 2
    assert play.data["sum_bomb_odds"] == [1, 2, 0, 0]
    assert s.observation(2)["bomb_score"] == [9 - 6, 18 - 3, -9, -9]


def test_bomb_payers_opponents_option():
    s = start({"bomb_payers": "opponents"}, hands={0: "4s 4h 4c 4d 3s", 2: "9d"})
    events = act(s, 0, "play", "4s 4h 4c 4d")
    assert first(events, "play").data["bomb_score"] == [2, -1, 0, -1]


# -- 接风 ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "jiefeng, last_card, leader",
    [
        ("partner_if_known", "6h", 3),  # partnership still hidden -> next player
        ("partner_if_known", "Ah", 0),  # the friend card made it public -> partner
        ("partner_always", "6h", 0),
        ("next_player", "Ah", 3),
    ],
)
def test_jiefeng_when_the_trick_winner_is_out(jiefeng, last_card, leader):
    s = start({"jiefeng": jiefeng},
              hands={0: "3s Qs", 1: "4s Qh", 2: last_card, 3: "5s Qd"})
    act(s, 0, "play", "3s")
    act(s, 1, "play", "4s")
    act(s, 2, "play", last_card)
    assert s.observation(0)["over_order"] == [0, 0, 1, 0]
    act(s, 3, "pass")
    act(s, 0, "pass")
    events = act(s, 1, "pass")
    assert first(events, "clear_desk").data["seat"] == 2
    assert first(events, "hint_out").data["seat"] == leader
    assert s.to_act() == (leader,)


# -- end of the deal ---------------------------------------------------------------------------


def play_to_team_end(options=None, catch=(60, 40, 50, 45)):
    """Seat 2 out first, seat 3 second, seat 0 third: team {0, 2} is out, seat 1 holds Qh 5c."""
    s = start(options, hands={0: "3s 9s", 1: "4s Qh 5c", 2: "6h", 3: "8d"}, catch=catch)
    act(s, 0, "play", "3s")
    act(s, 1, "play", "4s")
    act(s, 2, "play", "6h")
    act(s, 3, "play", "8d")
    return s, act(s, 0, "play", "9s")


def test_team_mode_ends_when_both_members_of_a_team_are_out():
    s, events = play_to_team_end()
    assert s.is_over() and s.to_act() == () and s.phase() == "over"
    assert kinds(events)[-5:] == ["clear_desk", "show_hands", "payment", "payment", "hand_over"]
    shown = first(events, "show_hands").data["hands"]
    assert parse_cards(shown[1]["cards"]) == parse_cards("5c Qh")
    over = first(events, "hand_over").data
    assert [p["over_order"] for p in over["players"]] == [3, 0, 1, 2]
    # Team A: 60 + 50 caught + 5 left in seat 1's hand = 115 > 100.
    assert over["team_points"] == [115, 85]
    assert over["deltas"] == [1, -1, 1, -1] and over["next_banker"] == 2
    settlement = s.settlement()
    assert list(settlement.deltas) == over["deltas"]
    assert settlement.next_dealer == 2
    with pytest.raises(HandOver):
        act(s, 1, "play", "Qh")


def test_bully_through_the_engine():
    s, events = play_to_team_end(catch=(100, 0, 95, 0))
    over = first(events, "hand_over").data
    assert over["team_points"] == [200, 0]
    assert [p["is_bully"] for p in over["players"]] == [True, False, True, False]
    assert over["deltas"] == [2, -2, 2, -2]


def test_settlement_example_1_through_the_engine():
    """§7 example 1 by real play: B = 2, seat 1 plays a 5-bomb, out order 0, 3, 2 and
    seat 1 is left holding K 5 (15 points); the catch before these tricks is preset."""
    s = start({"base": 2}, catch=(70, 25, 30, 60), hands={
        0: "3s", 1: "4s 4h 4c 4d 4d 6c Kd 5c", 2: "8h Qh", 3: "Jh"})
    act(s, 0, "play", "3s")
    events = act(s, 1, "play", "4s 4h 4c 4d 4d")
    assert first(events, "play").data["bomb_score"] == [-4, 12, -4, -4]
    act(s, 2, "pass")
    act(s, 3, "pass")
    act(s, 1, "play", "6c")
    act(s, 2, "play", "8h")
    act(s, 3, "play", "Jh")
    act(s, 1, "pass")
    events = act(s, 2, "play", "Qh")
    over = first(events, "hand_over").data
    assert [p["over_order"] for p in over["players"]] == [1, 0, 3, 2]
    assert [p["catch_score"] for p in over["players"]] == [70, 25, 30, 60]
    assert over["team_points"] == [115, 85]
    assert [p["card_score"] for p in over["players"]] == [2, -2, 2, -2]
    assert [p["win_score"] for p in over["players"]] == [-2, 10, -2, -6]
    assert over["deltas"] == [-2, 10, -2, -6]


def test_settlement_example_2_double_surround_through_the_engine():
    """§7 example 2: seats 1 and 3 go out first and second; team B wins with M = 2 although
    team A holds most points."""
    s = start({"base": 2}, hands={0: "3s 9d", 1: "4s", 2: "6h 9c", 3: "7h"},
              catch=(120, 10, 60, 10))
    act(s, 0, "play", "3s")
    act(s, 1, "play", "4s")
    act(s, 2, "play", "6h")
    events = act(s, 3, "play", "7h")
    over = first(events, "hand_over").data
    assert [p["is_double"] for p in over["players"]] == [False, True, False, True]
    assert over["deltas"] == [-4, 4, -4, 4]
    assert [p["over_order"] for p in over["players"]] == [0, 1, 0, 2]


def test_settlement_example_3_alone_mode_ends_on_the_first_player_out():
    """§7 example 3: B = 2, A = 2, seat 1 alone (seat 2 in the rules text: any seat)."""
    s = start({"base": 2}, alone=1, hands={1: "3s", 0: "4s"})
    events = act(s, 1, "play", "3s")
    over = first(events, "hand_over").data
    assert s.is_over()
    assert over["is_alone"] and over["winners"] == [1]
    assert over["deltas"] == [-4, 12, -4, -4]
    lost = start({"base": 2}, alone=1, hands={1: "3s 4h", 2: "5h"})
    act(lost, 1, "play", "3s")
    events = act(lost, 2, "play", "5h")
    assert first(events, "hand_over").data["deltas"] == [4, -12, 4, 4]


def test_fry_is_paid_at_the_end():
    s = start(fixed={0: "Ah", 2: "Ah", 1: "7s 7s 7h 7h 7c 7c 7d 7d"},
              hands={0: "3s", 1: "4s 9d", 2: "6h", 3: "5s 9c"}, catch=(50, 60, 50, 35))
    act(s, 0, "play", "3s")
    act(s, 1, "play", "4s")
    events = act(s, 2, "play", "6h")
    fry = [e.data for e in events if e.kind == "payment" and e.data["reason"] == "fry"]
    assert fry == [{"reason": "fry", "payer": p, "payee": 1, "amount": 4} for p in (0, 2, 3)]
    players = first(events, "hand_over").data["players"]
    assert players[1]["fry_state"] == 2 and players[1]["bomb_score"] == 12
