"""Dadun engine, before the first lead: options, the deal, 打独 asking, 找朋友 (rules §2, §4, §5)."""

from __future__ import annotations

import pytest

from games.dadun import game
from games.dadun.cards import card_name, full_deck, parse_cards, point_value
from games.engine import Action, BadInput, IllegalAction, NotYourTurn, State
from tests.unit.games.dadun.helpers import NO, YES, make_deal


def fresh(options=None, banker=0, fixed=None):
    fixed = {0: "Ah", 2: "Ah"} if fixed is None else fixed
    s = game.new_hand_from_deal(options, make_deal(fixed), banker)
    return s, s.deal_events()


def test_state_implements_the_engine_protocol():
    s, _ = fresh()
    assert isinstance(s, State)
    assert game.NAME == "dadun"
    assert set(game.DEFAULT_OPTIONS) >= {"base", "base_score", "jiefeng", "bomb_odds"}


def test_new_hand_deals_the_whole_deck_deterministically():
    a, b, c = game.new_hand({}, 7, 1), game.new_hand({}, 7, 1), game.new_hand({}, 8, 1)
    hands = [a.hand_of(s) for s in range(4)]
    assert all(len(h) == 27 for h in hands)
    assert sorted(x for h in hands for x in h) == full_deck()
    assert hands == [b.hand_of(s) for s in range(4)]
    assert hands != [c.hand_of(s) for s in range(4)]
    assert a.serialize() == b.serialize()


def test_deal_events_send_each_hand_only_to_its_seat():
    s, events = fresh()
    private = [e for e in events if e.kind == "hand"]
    assert [e.to for e in private] == [0, 1, 2, 3]
    for e in private:
        assert sorted(parse_cards(e.data["cards"])) == sorted(s.hand_of(e.to))
    assert all(e.to is None for e in events if e.kind != "hand")


@pytest.mark.parametrize(
    "options",
    [{"nope": 1}, {"jiefeng": "sideways"}, {"alone_mult": -1}, {"alone_leads": "yes"},
     {"base": 2, "base_score": 3}, {"bomb_odds": {"99": 1}}, {"bomb_odds": {"10": -1}},
     {"deal_cards": 26}],
)
def test_bad_options_are_rejected(options):
    with pytest.raises(BadInput):
        game.new_hand(options, 1, 0)


def test_bad_banker_is_rejected():
    with pytest.raises(BadInput):
        game.new_hand({}, 1, 4)


def test_base_and_base_score_are_synonyms():
    assert game.new_hand({"base_score": 5}, 1, 0).deal.options["base"] == 5
    assert game.new_hand({"base": 5}, 1, 0).deal.options["base_score"] == 5


# -- 打独 -------------------------------------------------------------------------------------


def test_alone_is_asked_from_the_banker_clockwise():
    s, events = fresh(banker=2)
    assert events[-1].kind == "hint_alone" and events[-1].data["seat"] == 2
    order = []
    while s.phase() == "alone":
        (seat,) = s.to_act()
        order.append(seat)
        with pytest.raises(NotYourTurn):
            s.apply((seat + 1) % 4, NO)
        out = s.apply(seat, NO)
        assert out[0].kind == "alone" and out[0].data == {"seat": seat, "is_alone": False}
    assert order == [2, 3, 0, 1]
    assert s.phase() == "friend" and s.to_act() == (2,)


def test_first_yes_wins_and_the_alone_player_leads_with_open_hands():
    s, _ = fresh(banker=1)
    s.apply(1, NO)
    events = s.apply(2, YES)
    assert s.phase() == "play" and s.to_act() == (2,)
    alone = events[0]
    assert alone.kind == "alone" and alone.data["is_alone"] is True
    assert [parse_cards(h) for h in alone.data["all_hands"]] == [s.hand_of(k) for k in range(4)]
    hint = events[-1]
    assert hint.kind == "hint_out" and hint.data["seat"] == 2 and hint.data["must_play"]
    assert not any(e.kind == "hint_alone" for e in events)
    obs = s.observation(0)
    assert obs["is_alone"] and obs["alone_seat"] == 2 and obs["teams"] == [1, 1, 0, 1]
    assert [parse_cards(h) for h in obs["all_hands"]] == [s.hand_of(k) for k in range(4)]


def test_closed_hands_and_banker_lead_options():
    s, _ = fresh({"alone_open_hands": False, "alone_leads": False}, banker=0)
    s.apply(0, NO)
    events = s.apply(1, YES)
    assert "all_hands" not in events[0].data
    assert s.to_act() == (0,)
    obs = s.observation(0)
    assert obs["all_hands"] is None
    assert card_name(s.hand_of(1)[0]) not in str(obs).replace(obs["hand"], "")


def test_banker_only_asks_only_the_banker():
    s, _ = fresh({"alone_askers": "banker_only"}, banker=3)
    events = s.apply(3, NO)
    assert not any(e.kind == "hint_alone" for e in events)
    assert s.phase() == "friend" and s.to_act() == (3,)


def test_alone_choice_must_be_yes_or_no():
    s, _ = fresh()
    before = s.serialize()
    with pytest.raises(BadInput):
        s.apply(0, Action("choose_alone", choice="maybe"))
    assert s.serialize() == before


# -- 找朋友 -----------------------------------------------------------------------------------


def to_friend_phase(s):
    while s.phase() == "alone":
        s.apply(s.to_act()[0], NO)


def test_friend_card_makes_the_other_holder_a_secret_partner():
    s, _ = fresh()
    to_friend_phase(s)
    events = s.apply(0, Action("choose_friend_card", tiles=("Ah",)))
    assert events[0].kind == "friend_card" and events[0].data == {"banker": 0, "card": "Ah"}
    assert s.phase() == "play" and s.to_act() == (0,)
    assert s.observation(2)["my_partner"] == 0
    assert [s.observation(k)["my_partner"] for k in (0, 1, 3)] == [None, None, None]
    assert all(s.observation(k)["teams"] is None for k in range(4))
    assert s.observation(1)["friend_card"] == "Ah" and not s.observation(1)["friend_public"]


def test_friend_card_held_twice_is_rejected():
    s, _ = fresh(fixed={0: "Ah Ah"})
    to_friend_phase(s)
    before = s.serialize()
    with pytest.raises(IllegalAction) as err:
        s.apply(0, Action("choose_friend_card", tiles=("Ah",)))
    assert err.value.code == "both_copies"
    assert s.serialize() == before
    assert Action("choose_friend_card", tiles=("Ah",)) not in s.legal_actions(0)
    assert all(s.can(0, a) for a in s.legal_actions(0))


def test_friend_card_held_twice_plays_alone_in_the_dark_when_allowed():
    s, _ = fresh({"both_copies": "play_alone_dark"}, fixed={0: "Ah Ah"})
    to_friend_phase(s)
    s.apply(0, Action("choose_friend_card", tiles=("Ah",)))
    assert s.observation(0)["is_alone"] is True
    assert [s.observation(k)["is_alone"] for k in (1, 2, 3)] == [False, False, False]
    assert s.observation(1)["all_hands"] is None


@pytest.mark.parametrize(
    "seat, tiles, error, code",
    [
        (1, ("Ah",), NotYourTurn, "not_your_turn"),
        (0, ("Ah", "Kd"), BadInput, "bad_input"),
        (0, ("Zz",), BadInput, "bad_input"),
        (0, (), BadInput, "bad_input"),
    ],
)
def test_friend_choice_errors(seat, tiles, error, code):
    s, _ = fresh()
    to_friend_phase(s)
    before = s.serialize()
    with pytest.raises(error) as err:
        s.apply(seat, Action("choose_friend_card", tiles=tiles))
    assert err.value.code == code
    assert s.serialize() == before


def test_friend_card_not_in_hand():
    s, _ = fresh()
    to_friend_phase(s)
    missing = next(c for c in full_deck() if c not in s.hand_of(0))
    with pytest.raises(IllegalAction) as err:
        s.apply(0, Action("choose_friend_card", tiles=(card_name(missing),)))
    assert err.value.code == "card_not_in_hand"


def test_default_actions_before_play():
    s, _ = fresh()
    assert s.default_action(0) == NO
    to_friend_phase(s)
    action = s.default_action(0)
    hand = s.hand_of(0)
    held_once = [c for c in hand if hand.count(c) == 1 and point_value([c]) == 0]
    assert action.tiles == (card_name(min(held_once)),)
    assert s.can(0, action)


def test_actions_in_the_wrong_phase_are_refused():
    s, _ = fresh()
    with pytest.raises(IllegalAction):
        s.apply(0, Action("choose_friend_card", tiles=("Ah",)))
    with pytest.raises(IllegalAction):
        s.apply(0, Action("play", tiles=("Ah",), ref="x"))
    with pytest.raises(BadInput):
        s.apply(0, Action("discard", tiles=("Ah",)))
