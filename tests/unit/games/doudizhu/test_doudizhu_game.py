"""The Dou Dizhu hand: the deal from the fair seed, bidding (叫地主/抢地主, redeal, void),
the play loop, multipliers (robs, bombs, rocket, spring, anti-spring, cap), settlement,
views that hide the other hands, serialization, and bad input."""

from __future__ import annotations

import json
import re

import pytest

from games import fair
from games.doudizhu import game
from games.doudizhu.cards import card_name, full_deck
from games.doudizhu.dealing import shuffled_deck, split
from games.engine import (
    Action,
    BadInput,
    HandOver,
    IllegalAction,
    NotYourTurn,
    RuleError,
    StaleRef,
)
from games.rng import Stream
from tests.unit.games.doudizhu.helpers import (
    CALL,
    NO_CALL,
    NO_ROB,
    PASS,
    ROB,
    cards,
    make_deal,
    make_landlord,
    spring_hand,
    started,
)

# The worked example's hand seed of docs/fairness.md (docs/doudizhu.md quotes this deal).
HAND_SEED = bytes.fromhex("664ef27cd340e1eb73eda2dbad5b84494e7b984192e9865f51a7eaeed08743ae")
DECK = ("Th 2d 3d 6s Jc 4h 9h 2s 5s 4d Jh 6d Ks 8h Jd 6h Ts 9c 4s Td 8s 5h 3c 7h Tc Kc 7s 7c "
        "9s 5d BJ 7d SJ Qs Kd 2c 3s Qc Ad Ac 4c Js Kh Ah 2h Qd 3h 8d As 8c Qh 6c 5c 9d")


def bids(state: game.DoudizhuState, *actions: Action) -> None:
    for action in actions:
        (seat,) = state.to_act()
        state.apply(seat, action)


# -- the deal -------------------------------------------------------------------------------


def test_the_deck_is_the_deck_stream_s_shuffle_of_the_code_order_pack() -> None:
    assert " ".join(card_name(c) for c in shuffled_deck(HAND_SEED)) == DECK
    deck = full_deck()
    fair.stream(HAND_SEED, "deck").shuffle(deck)
    assert deck == shuffled_deck(HAND_SEED)
    state = game.new_hand({}, HAND_SEED, 2)
    hands, bottom = split(deck)
    assert [state.hand_of(s) for s in range(3)] == hands
    assert sorted(state.deal.bottom) == bottom == sorted(deck[51:])
    assert hands[0] == sorted(deck[:17]) and state.to_act() == (2,)
    # an int seed is the SplitMix64 stream of the same label
    deck = full_deck()
    fair.stream(7, "deck").shuffle(deck)
    assert shuffled_deck(7) == deck
    assert game.new_hand({}, 7, 0).serialize() == game.new_hand({}, 7, 0).serialize()
    assert game.new_hand({}, 7, 0).hand_of(0) != game.new_hand({}, 8, 0).hand_of(0)


def test_a_redeal_is_the_next_shuffle_of_the_same_stream() -> None:
    shuffler = fair.stream(HAND_SEED, "deck")
    first, second = full_deck(), full_deck()
    shuffler.shuffle(first)
    shuffler.shuffle(second)
    assert shuffled_deck(HAND_SEED, 1) == second
    state = game.new_hand({}, HAND_SEED, 0)
    events = []
    for _ in range(3):
        (seat,) = state.to_act()
        events += state.apply(seat, NO_CALL)
    assert [e.kind for e in events][-6:] == ["redeal", "deal", "hand", "hand", "hand", "turn"]
    assert state.deal.deal_no == 1 and state.to_act() == (1,), "the next seat calls first"
    assert [state.hand_of(s) for s in range(3)] == split(second)[0]
    assert state.phase() == "call" and state.deal.bids == []


def test_deal_events_tell_each_seat_its_own_hand_only() -> None:
    state = game.new_hand({}, 3, 1)
    events = state.deal_events()
    assert events[0].kind == "deal" and events[0].to is None
    assert events[0].data["first_caller"] == 1
    private = [e for e in events if e.kind == "hand"]
    assert [e.to for e in private] == [0, 1, 2]
    assert all(len(e.data["cards"].split()) == 17 for e in private)
    assert events[-1].kind == "turn" and events[-1].data["seat"] == 1


# -- bidding --------------------------------------------------------------------------------


def test_call_then_rob_then_the_caller_robs_back() -> None:
    state = started({}, first=0)
    assert state.legal_actions(0) == [CALL, NO_CALL] and state.legal_actions(1) == []
    bids(state, CALL)
    assert state.phase() == "rob" and state.to_act() == (1,)
    bids(state, ROB, NO_ROB)
    assert state.to_act() == (0,), "the caller has the last word"
    assert state.public_view()["bidder"] == 1
    events = state.apply(0, ROB)
    assert state.phase() == "play" and state.deal.landlord == 0 and state.deal.bid_mult == 4
    assert [e.kind for e in events] == ["rob_landlord", "landlord", "hand", "turn"]
    assert len(state.hand_of(0)) == 20 and state.to_act() == (0,)


def test_the_last_robber_is_landlord_when_the_caller_does_not_rob_back() -> None:
    state = started({}, first=1)
    bids(state, NO_CALL, CALL, ROB, NO_ROB)  # seat 1 no, 2 calls, 0 robs, 2 declines
    assert state.deal.landlord == 0 and state.deal.bid_mult == 2
    assert state.public_view()["landlord"] == 0


def test_a_seat_that_passed_on_calling_may_not_rob() -> None:
    state = started({}, first=0)
    bids(state, NO_CALL, CALL)  # seat 0 passed, seat 1 called: only seat 2 may rob
    assert state.to_act() == (2,)
    bids(state, NO_ROB)
    assert state.phase() == "play" and state.deal.landlord == 1 and state.deal.bid_mult == 1


def test_nobody_robs_and_a_last_caller_is_landlord_at_once() -> None:
    state = started({}, first=0)
    bids(state, CALL, NO_ROB, NO_ROB)
    assert state.deal.landlord == 0 and state.deal.bid_mult == 1 and state.phase() == "play"
    state = started({}, first=0)
    bids(state, NO_CALL, NO_CALL, CALL)
    assert state.deal.landlord == 2 and state.phase() == "play"


def test_call_only_bidding_has_no_rob() -> None:
    state = started({}, first=2, options={"bidding": "call_only"})
    bids(state, CALL)
    assert state.deal.landlord == 2 and state.phase() == "play"


def test_all_pass_void_ends_the_hand_with_no_payment() -> None:
    state = started({}, first=1, options={"all_pass": "void"})
    bids(state, NO_CALL, NO_CALL, NO_CALL)
    assert state.is_over() and state.to_act() == ()
    result = state.settlement()
    assert result.deltas == (0, 0, 0) and result.payments == ()
    assert result.details["void"] and result.next_dealer == 2


def test_bids_out_of_turn_or_phase_are_refused() -> None:
    state = started({}, first=0)
    with pytest.raises(NotYourTurn):
        state.apply(1, CALL)
    with pytest.raises(IllegalAction) as err:
        state.apply(0, ROB)
    assert err.value.code == "wrong_phase"
    for bad in (Action("call_landlord", choice="maybe"), Action("call_landlord"),
                Action("call_landlord", tiles=("3s",), choice="yes")):
        with pytest.raises(BadInput):
            state.apply(0, bad)
    with pytest.raises(IllegalAction):
        state.apply(0, PASS)


# -- play -------------------------------------------------------------------------------------

def test_the_leader_must_play_and_followers_may_pass() -> None:
    state = spring_hand()
    assert Action("pass") not in state.legal_actions(0)
    with pytest.raises(IllegalAction) as err:
        state.apply(0, PASS)
    assert err.value.code == "leader_must_play"
    state.apply(0, cards("3h"))
    assert Action("pass") in state.legal_actions(1)
    assert all(state.can(1, a) for a in state.legal_actions(1))


def test_illegal_plays_are_refused_and_change_nothing() -> None:
    state = spring_hand()
    before = state.serialize()
    cases = [
        (1, cards("4h"), NotYourTurn),
        (0, cards("4h"), IllegalAction),           # not held
        (0, cards("3s 4s"), IllegalAction),        # no combination
        (0, Action("play"), BadInput),
        (0, cards("3s 3s"), BadInput),             # one card twice
        (0, cards("3x"), BadInput),
        (0, Action("play", tiles=("3s",), choice="yes"), BadInput),
        (0, Action("discard"), BadInput),
        (5, cards("3s"), BadInput),
    ]
    for seat, action, error in cases:
        with pytest.raises(error):
            state.apply(seat, action)
        assert not state.can(seat, action)
        assert state.serialize() == before
    state.apply(0, cards("3h 3c"))
    with pytest.raises(IllegalAction) as err:
        state.apply(1, cards("4h"))
    assert err.value.code in ("does_not_beat", "card_not_in_hand")


def test_two_passes_give_the_lead_back_and_suits_do_not_matter() -> None:
    state = spring_hand()
    events = state.apply(0, cards("3h 3s"))  # any two 3s held: not the listed lowest suits
    assert events[0].data["kind"] == "pair"
    state.apply(1, PASS)
    events = state.apply(2, PASS)
    assert [e.kind for e in events] == ["pass", "new_trick", "turn"]
    assert state.to_act() == (0,) and state.deal.top is None


def test_spring_bomb_and_rocket_multiply_and_the_ledger_is_zero_sum() -> None:
    state = spring_hand()
    for play in ("3s 4s 5s 6s 7s 8s 9s Ts Js Qs Ks As", "2s 2h 2c 2d", "SJ BJ"):
        state.apply(0, cards(play))
        assert state.legal_actions(1) == [PASS], "nothing beats it"
        state.apply(1, PASS)
        state.apply(2, PASS)
    events = state.apply(0, cards("3h 3c"))
    assert state.is_over() and events[-1].kind == "hand_over"
    result = state.settlement()
    d = result.details
    assert (d["bombs"], d["rockets"], d["spring"], d["anti_spring"]) == (1, 1, True, False)
    assert d["multiplier"] == 8 and d["landlord_won"] and d["winners"] == [0]
    assert result.deltas == (16, -8, -8) and sum(result.deltas) == 0
    assert {(p.payer, p.payee, p.amount) for p in result.payments} == {(1, 0, 8), (2, 0, 8)}
    assert result.next_dealer == 0
    with pytest.raises(HandOver):
        state.apply(1, PASS)


def test_the_cap_limits_the_multiplier() -> None:
    state = spring_hand({"max_mult": 4, "base": 3})
    for play in ("3s 4s 5s 6s 7s 8s 9s Ts Js Qs Ks As", "2s 2h 2c 2d", "SJ BJ"):
        state.apply(0, cards(play))
        state.apply(1, PASS)
        state.apply(2, PASS)
    state.apply(0, cards("3h 3c"))
    d = state.settlement().details
    assert d["uncapped"] == 8 and d["multiplier"] == 4 and d["stake"] == 12
    assert state.settlement().deltas == (24, -12, -12)


def test_anti_spring_when_the_landlord_played_once() -> None:
    farmer = "SJ BJ 2s 2h 2c 3h 4h 5h 6h 7h 8h 9h Th Jh Qh Kh Ah"
    state = started({0: "3s", 1: farmer}, first=0)
    make_landlord(state, 0)
    state.apply(0, cards("3s"))
    state.apply(1, cards("BJ"))
    for play in ("3h 4h 5h 6h 7h 8h 9h Th Jh Qh Kh Ah", "2s 2h 2c"):
        state.apply(2, PASS)
        state.apply(0, PASS)
        state.apply(1, cards(play))
    state.apply(2, PASS)
    state.apply(0, PASS)
    state.apply(1, cards("SJ"))
    result = state.settlement()
    d = result.details
    assert d["anti_spring"] and not d["spring"] and d["multiplier"] == 2
    assert result.deltas == (-4, 2, 2) and d["winners"] == [1, 2] and result.next_dealer == 1


def test_no_spring_once_a_farmer_played() -> None:
    state = spring_hand()
    state.apply(0, cards("3h"))
    (follow,) = [a for a in state.legal_actions(1) if a.kind == "play"][:1]
    state.apply(1, follow)
    state.apply(2, PASS)
    state.apply(0, cards("SJ BJ"))
    state.apply(1, PASS)
    state.apply(2, PASS)
    for play in ("3s 4s 5s 6s 7s 8s 9s Ts Js Qs Ks As", "2s 2h 2c 2d"):
        state.apply(0, cards(play))
        state.apply(1, PASS)
        state.apply(2, PASS)
    state.apply(0, cards("3c"))
    d = state.settlement().details
    assert not d["spring"] and d["multiplier"] == 4 and state.settlement().deltas == (8, -4, -4)


# -- views, serialization, whole random hands ---------------------------------------------------


def _names_in(text: str, codes: list[int]) -> list[str]:
    return [card_name(c) for c in codes if re.search(rf"\b{card_name(c)}\b", text)]


def random_hand(seed: int) -> list[game.DoudizhuState]:
    """Every state of a hand played by random legal actions (copies)."""
    state = game.new_hand({}, seed, seed % 3)
    stream = Stream(seed)
    states = [state.clone()]
    while not state.is_over():
        (seat,) = state.to_act()
        state.apply(seat, stream.choice(state.legal_actions(seat)))
        states.append(state.clone())
    return states


@pytest.mark.parametrize("seed", range(6))
def test_views_hide_other_hands_until_the_end(seed: int) -> None:
    for state in random_hand(seed):
        d = state.deal
        public = json.dumps(state.public_view())
        shown = set(d.bottom) if d.phase in ("play", "over") else set()
        for seat in range(3):
            hidden = [c for c in d.hands[seat] if c not in shown]
            if d.phase != "over":
                assert not _names_in(public, hidden)
            for other in range(3):
                text = json.dumps(state.observation(other))
                found = _names_in(text, hidden)
                assert found if (other == seat or d.phase == "over") and hidden else not found
        if d.phase in ("call", "rob"):
            assert state.public_view()["bottom"] is None and not _names_in(public, d.bottom)


@pytest.mark.parametrize("seed", range(20, 30))
def test_serialization_round_trips_and_every_listed_action_is_legal(seed: int) -> None:
    state = game.new_hand({"base": 2}, seed, seed % 3)
    stream = Stream(seed)
    while not state.is_over():
        text = state.serialize()
        copy = game.deserialize(text)
        assert copy.serialize() == text and json.loads(text)["seed"] == seed
        (seat,) = state.to_act()
        actions = state.legal_actions(seat)
        assert actions and all(state.can(seat, a) for a in actions)
        assert state.default_action(seat) in actions or state.can(seat, state.default_action(seat))
        assert all(state.legal_actions(s) == [] for s in range(3) if s != seat)
        action = stream.choice(actions)
        assert [e.to_dict() for e in copy.apply(seat, action)] == \
            [e.to_dict() for e in state.apply(seat, action)]
    result = state.settlement()
    assert sum(result.deltas) == 0 and result.deltas != (0, 0, 0)
    assert abs(result.deltas[state.deal.landlord]) == 2 * abs(
        result.deltas[(state.deal.landlord + 1) % 3])
    assert state.public_view()["scores"] == list(result.deltas)


def test_a_fair_seed_is_kept_as_hex_and_a_clone_is_independent() -> None:
    state = game.new_hand({}, HAND_SEED, 0)
    assert HAND_SEED.hex() in state.serialize()
    copy = state.clone()
    copy.apply(0, CALL)
    assert state.phase() == "call" and state.to_act() == (0,)


def test_entrust_never_bids_and_leads_low_without_breaking_bombs() -> None:
    state = started({0: "3s 3h 3c 3d 4s SJ BJ"}, bottom="5s 5h 5c")
    assert state.default_action(0) == NO_CALL
    make_landlord(state, 0)
    assert state.default_action(0) == cards("4s")
    with pytest.raises(NotYourTurn):
        state.default_action(1)
    state.apply(0, cards("4s"))
    assert state.default_action(1) == PASS


# -- bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize("options", [
    {"players": 4}, {"base": 0}, {"base": True}, {"bidding": "score"}, {"all_pass": "again"},
    {"max_mult": -1}, {"bomb_mult": "2"},
])
def test_bad_options_are_bad_input(options: dict[str, object]) -> None:
    with pytest.raises(BadInput):
        game.parse_options(options)
    with pytest.raises(BadInput):
        game.new_hand(options, 1, 0)


def test_options_default_and_validate() -> None:
    assert game.parse_options({}) == game.DEFAULT_OPTIONS
    assert game.parse_options({"max_mult": 64})["max_mult"] == 64


@pytest.mark.parametrize("bad", ["", "{}", "[1]", '{"phase": "call"}', "not json"])
def test_bad_serialized_states_are_bad_input(bad: str) -> None:
    with pytest.raises(BadInput):
        game.deserialize(bad)


def test_bad_seeds_seats_and_deals_are_bad_input() -> None:
    for seed in (b"short", "seed", 1.5):
        with pytest.raises(BadInput):
            game.new_hand({}, seed, 0)  # type: ignore[arg-type]
    with pytest.raises(BadInput):
        game.new_hand({}, 1, 3)
    hands, bottom = make_deal({})
    with pytest.raises(BadInput):
        game.new_hand_from_deal({}, hands[:2], bottom, 0)
    with pytest.raises(BadInput):
        game.new_hand_from_deal({}, [hands[0], hands[0], hands[2]], bottom, 0)
    state = game.new_hand({}, 1, 0)
    with pytest.raises(BadInput):
        state.observation(3)
    with pytest.raises(RuleError):
        state.settlement()
    with pytest.raises(StaleRef):
        state.record_response(0, PASS)
    assert state.pending_window() is None and state.num_seats == 3


def test_hands_leave_no_reference_cycles() -> None:
    """As tests/unit/games/test_no_reference_cycles.py asks of the registered games: what an
    action allocates is freed by reference counting (no pause of the collector)."""
    import gc

    from games.bots.doudizhu import greedy_policy

    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        for seed in range(3):
            state = game.new_hand({}, seed, seed)
            state.deal_events()
            while not state.is_over():
                (seat,) = state.to_act()
                state.observation(seat)
                state.public_view()
                state.clone()
                state.apply(seat, greedy_policy(state, seat))
            state.settlement()
            del state
        unreachable = gc.collect()
    finally:
        if was:
            gc.enable()
    assert unreachable == 0
