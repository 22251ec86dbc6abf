"""Dadun conformance over many seeded self-play deals with the random and greedy bots.

Invariants: all 108 cards accounted for after every action, caught + leftover points = 200,
a zero-sum ledger that matches the payment events, no leak of concealed cards through
observations or events, every deal ends, determinism (replay, serialize/restore, clone),
and typed, state-preserving errors for bad input.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest

from games.bots.dadun import greedy_policy, random_policy
from games.dadun import game
from games.dadun.cards import card_name, full_deck, parse_cards, point_value
from games.engine import Action, BadInput, IllegalAction, NotYourTurn, RuleError, StaleRef
from games.rng import Stream, derive

BOT_DEALS = 300  # legal_actions (hint_plays) costs about 1 ms a call: keep the module short
ENTRUST_DEALS = 600
MAX_ACTIONS = 1500
CARD_EVENTS = {"play", "friend_card", "friend_revealed", "show_hands", "alone"}


def choose(state, seat: int, seed: int, stream: Stream) -> Action:
    """Seed mix: all random; greedy seats 0 and 2 against random; random play in team mode
    (the alone question answered by the entrust default, so that 找朋友 deals are common);
    negative seeds: every seat entrusted (default_action only)."""
    if seed < 0:
        return state.default_action(seat)
    mix = seed % 3
    if mix == 1 and seat % 2 == 0:
        return greedy_policy(state, seat)
    if mix == 2 and state.phase() == "alone":
        return state.default_action(seat)
    return random_policy(state, seat, stream)


def self_play(seed: int, check=None):
    """Play one deal; returns (state, actions, events). ``check(state, events)`` runs after
    every action."""
    state = game.new_hand({"base": 1 + seed % 3}, seed, seed % 4)
    events = state.deal_events()
    stream = Stream(derive(seed, "bots"))
    actions = []
    while not state.is_over():
        assert len(actions) < MAX_ACTIONS, f"seed {seed}: the deal does not end"
        (seat,) = state.to_act()
        action = choose(state, seat, seed, stream)
        actions.append((seat, action))
        events += state.apply(seat, action)
        if check is not None:
            check(state, events)
    return state, actions, events


def played_cards(events) -> list[int]:
    return [c for e in events if e.kind == "play" for c in parse_cards(e.data["cards"])]


def check_cards(state, events):
    held = [c for s in range(4) for c in state.hand_of(s)]
    assert sorted(held + played_cards(events)) == full_deck()


def check_end(state, events):
    assert state.to_act() == () and state.phase() == "over"
    obs = state.public_view()
    leftover = sum(point_value(state.hand_of(s)) for s in range(4))
    assert sum(obs["catch"]) + leftover == 200
    settlement = state.settlement()
    assert sum(settlement.deltas) == 0
    paid = [0, 0, 0, 0]
    for e in events:
        if e.kind == "payment":
            paid[e.data["payer"]] -= e.data["amount"]
            paid[e.data["payee"]] += e.data["amount"]
    assert paid == list(settlement.deltas)
    assert all(p.amount > 0 for p in settlement.payments)
    players = settlement.details["players"]
    assert [p["win_score"] for p in players] == list(settlement.deltas)
    assert 1 in [p["over_order"] for p in players]
    assert settlement.next_dealer == [p["over_order"] for p in players].index(1)
    json.dumps(settlement.to_dict())


def test_entrusted_self_play_invariants():
    for seed in range(-1, -ENTRUST_DEALS - 1, -1):
        state, _, events = self_play(seed, check_cards if seed % 10 == 0 else None)
        check_cards(state, events)
        check_end(state, events)


def test_bot_self_play_invariants():
    modes = Counter()
    for seed in range(BOT_DEALS):
        state, _, events = self_play(seed, check_cards if seed % 10 == 0 else None)
        check_cards(state, events)
        check_end(state, events)
        modes["alone" if state.deal.alone_seat is not None else "team"] += 1
        modes["double"] += any(p["is_double"] for p in state.settlement().details["players"])
    assert modes["alone"] > 50 and modes["team"] > 100 and modes["double"] > 10


# -- hidden information ------------------------------------------------------------------------


def shuffled_others(state, seat: int, seed: int):
    """A copy of the state where the other seats' concealed cards are redealt among them
    (same counts); whatever ``seat`` may see must not change."""
    other = state.clone()
    seats = [s for s in range(4) if s != seat]
    pool = [c for s in seats for c in other.deal.hands[s]]
    Stream(seed).shuffle(pool)
    for s in seats:
        n = len(other.deal.hands[s])
        other.deal.hands[s], pool = sorted(pool[:n]), pool[n:]
    return other


def test_observations_and_events_do_not_leak_concealed_cards():
    checked = Counter()

    def check(state, events):
        open_hands = state.observation(0)["all_hands"] is not None
        if state.is_over() or open_hands:
            return
        checked[state.phase()] += 1
        for seat in range(4):
            other = shuffled_others(state, seat, len(events))
            assert other.observation(seat) == state.observation(seat)
        assert json.dumps(state.public_view()) == json.dumps(
            shuffled_others(state, 0, 1).public_view())

    for seed in [s for s in range(30) if s % 3 != 0]:
        _, _, events = self_play(seed, check)
        for e in events:
            if e.kind == "hand":
                assert e.to is not None
            elif e.to is None and e.kind not in CARD_EVENTS:
                assert not any(isinstance(v, str) and " " in v for v in e.data.values())
            if e.kind == "alone" and "all_hands" in e.data:
                assert e.data["is_alone"]
    assert checked["play"] > 500


# -- determinism ---------------------------------------------------------------------------------


def dump(events):
    return [e.to_dict() for e in events]


@pytest.mark.parametrize("seed", [1, 5, 8, 13, 21])
def test_replay_serialize_restore_and_clone_are_deterministic(seed):
    state, actions, events = self_play(seed)
    replay = game.new_hand({"base": 1 + seed % 3}, seed, seed % 4)
    replayed = replay.deal_events()
    mid = len(actions) // 2
    for i, (seat, action) in enumerate(actions):
        if i == mid:
            text = replay.serialize()
            restored = game.deserialize(text)
            assert restored.serialize() == text
            fork = replay.clone()
            tail = [e for s, a in actions[mid:] for e in restored.apply(s, a)]
            assert replay.serialize() == text  # the restored copy is independent
            fork.apply(seat, action)
            assert replay.serialize() == text  # so is the clone
        replayed += replay.apply(seat, action)
    assert dump(replayed) == dump(events)
    assert restored.serialize() == replay.serialize() == state.serialize()
    assert dump(tail) == dump(replayed[len(replayed) - len(tail):])


def test_deserialize_rejects_garbage():
    for text in ("", "[]", '{"phase": "play"}'):
        with pytest.raises(BadInput):
            game.deserialize(text)


# -- bad input midway ----------------------------------------------------------------------------


def bad_actions(state):
    """Malformed or illegal actions for the current position, with the expected error."""
    (seat,) = state.to_act()
    other = (seat + 1) % 4
    token = state.observation(seat)["token"] or ""
    missing = next(c for c in full_deck() if c not in state.hand_of(seat))
    out = [
        (other, state.legal_actions(seat)[0], NotYourTurn),
        (seat, Action("juggle", ref=token), BadInput),
    ]
    if state.phase() == "alone":
        out.append((seat, Action("choose_alone", choice="maybe"), BadInput))
    if state.phase() == "play":
        out.append((seat, Action("play", ("11",), ref=token), BadInput))
        hand = state.hand_of(seat)
        out += [
            (seat, Action("play", (card_name(hand[0]),), ref=token + "x"), StaleRef),
            (seat, Action("play", (card_name(missing),), ref=token), IllegalAction),
        ]
        if len(hand) >= 2 and hand[0] >> 2 != hand[1] >> 2 and len(hand) > 3:
            wrong = (card_name(hand[0]), card_name(hand[-1]))
            if hand[-1] < 52:
                out.append((seat, Action("play", wrong, ref=token), IllegalAction))
    return out


def test_bad_input_midway_raises_typed_errors_and_changes_nothing():
    tried = Counter()
    for seed in range(12):
        state = game.new_hand({}, seed, seed % 4)
        stream = Stream(seed)
        while not state.is_over():
            if stream.below(4) == 0:
                before = state.serialize()
                for seat, action, error in bad_actions(state):
                    with pytest.raises(error):
                        state.apply(seat, action)
                    assert state.serialize() == before
                    tried[error.__name__] += 1
            (seat,) = state.to_act()
            state.apply(seat, choose(state, seat, seed, stream))
        with pytest.raises(RuleError):
            state.apply(0, Action("pass"))
    assert min(tried.values()) > 10 and len(tried) == 4
