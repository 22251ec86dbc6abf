"""Conformance of both mahjong variants over seeded self-play (OpenSpiel-style suite).

Every hand is played to the end by a seeded chooser (games.bots.mahjong's random policy, or
a shanten-driven player that reaches the win paths). Checked after every action: all 108
tiles accounted for, the ledger zero-sum, private events addressed to their own seat, no
public event or observation carrying another seat's concealed tiles; at the end: bounded
length, settlement zero-sum; and determinism across replay, clone and serialize round trips.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace

import pytest

from games.arbitration import resolve
from games.bots.mahjong import random_policy
from games.engine import Action, BadInput, IllegalAction, NotYourTurn, RuleError, StaleRef
from games.mahjong import changsha, shanten, tile_index, xuezhan
from games.mahjong.score_changsha import ALL_OPENING_HU_TYPES
from games.rng import Stream

VARIANTS = [xuezhan, changsha]
HANDS = 1500
MAX_STEPS = 1500

def choose(state, seat: int, stream: Stream, smart: bool = False) -> Action:
    """Random-legal play, or (``smart``) a shanten-driven player that wins far more often,
    so that win paths (multi-win, three winners, 呼叫转移, birds) are exercised too."""
    if smart:
        return smart_choice(state, seat, stream)
    return random_policy(state, seat, stream)


def smart_choice(state, seat: int, stream: Stream) -> Action:
    actions = state.legal_actions(seat)
    by_kind = {}
    for a in actions:
        by_kind.setdefault(a.kind, []).append(a)
    for kind in ("hu", "midway_hu", "angang", "bugang", "kaigang", "zhigang", "buzhang", "peng",
                 "chi"):
        if kind in by_kind and (kind == "hu" or stream.below(2)):
            return by_kind[kind][0]
    if "discard" in by_kind:
        hand = state.hands[seat]

        def after(a):
            counts = list(hand)
            counts[tile_index(a.tiles[0])] -= 1
            return shanten(counts)

        return min(by_kind["discard"], key=after)
    if "pass" in by_kind:
        return by_kind["pass"][0]
    if state.phase() == "haidi":
        return Action("haidi", choice="yes")
    return state.default_action(seat)


def tile_census(state) -> list[int]:
    """Where every tile is: wall, hands, tiles set aside for the exchange, melds, rivers,
    winning tiles and birds taken from the wall. 27 counts."""
    counts = [0] * 27
    loose = list(state.wall.undrawn())
    for seat in range(4):
        for t, n in enumerate(state.hands[seat]):
            counts[t] += n
        if state.stage == "exchange" and state.exchange_sel[seat] is not None:
            loose += state.exchange_sel[seat]
        for meld in state.melds[seat]:
            loose += meld.tiles
        loose += state.discards[seat] + state.won_tiles[seat]
    if state.birds is not None and state.birds.from_wall:
        loose += [tile_index(n) for n in state.birds.tiles]
    for t in loose:
        counts[t] += 1
    return counts


FULL = [4] * 27


def check_events(events, final: bool) -> None:
    for e in events:
        if e.to is not None:
            assert e.data.get("seat", e.to) == e.to, e
            continue
        if e.kind in ("draw", "exchange_committed", "void_chosen", "response", "candidates"):
            assert "tile" not in e.data and "tiles" not in e.data and "suit" not in e.data, e
        if e.kind == "angang" and e.data.get("origin") == "concealed":
            assert "tile" not in e.data, e
        if e.kind == "hand_over":
            assert final


def scramble_others(state, seat: int, stream: Stream):
    """A copy where the other seats' concealed tiles are redealt among them (same sizes):
    whatever seat ``seat`` may see must not change."""
    other = state.clone()
    seats = [s for s in range(4) if s != seat]
    pool = [t for s in seats for t in range(27) for _ in range(state.hands[s][t])]
    stream.shuffle(pool)
    for s in seats:
        n = sum(state.hands[s])
        other.hands[s] = [0] * 27
        for t in pool[:n]:
            other.hands[s][t] += 1
        pool = pool[n:]
        other.drawn[s] = None
    return other


def play(variant, seed: int, deep: bool, options=None):
    state = variant.new_hand(options or {}, seed, seed % 4)
    stream = Stream(seed * 7919 + 1)
    log, events = [], list(state.deal_events())
    steps = 0
    while not state.is_over():
        acting = state.to_act()
        seat = acting[stream.below(len(acting))]
        action = choose(state, seat, stream, smart=seed % 2 == 1)
        new = state.apply(seat, action)
        log.append((seat, action))
        events.extend(new)
        steps += 1
        assert steps < MAX_STEPS, "hand did not end"
        assert tile_census(state) == FULL
        check_events(new, state.is_over())
        if deep:
            check_views(state, stream)
    settlement = state.settlement()
    assert sum(settlement.deltas) == 0
    assert all(p.amount > 0 for p in settlement.payments)
    return state, log, events


def check_views(state, stream: Stream) -> None:
    for seat in range(4):
        obs = state.observation(seat)
        json.dumps(obs)
        assert obs["hand"] == state.fmt(state.hands[seat])
        twin = scramble_others(state, seat, stream)
        assert twin.observation(seat) == obs
    public = state.public_view()
    assert "hand" not in public
    assert scramble_others(state, 0, stream).public_view() == public


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.NAME)
def test_self_play_invariants(variant):
    ends, wins = Counter(), 0
    for seed in range(HANDS):
        state, _, _ = play(variant, seed, deep=seed < 30)
        ends[state.end_reason] += 1
        wins += len(state.wins)
        reasons = {p.reason for p in state.ledger}
        winners = {w["seat"] for w in state.wins}
        if state.end_reason == "three_won":  # XueZhan plays on until three have won
            assert len(winners) == 3 == len(state.wins)
            assert not reasons & {"flower_pig", "not_ready", "kong_refund"}
        elif state.end_reason == "win":  # Changsha ends at the first win (or 通炮)
            assert len({w["trigger"] for w in state.wins}) == 1
        else:
            assert len(winners) < 3 or variant is changsha
    assert wins > 0 and ends["wall_exhausted"] > 0
    assert ends["three_won" if variant is xuezhan else "win"] > 0


# Changsha with every optional extra on (the regional opening types, repeats, dice birds
# for them, 双杠上开花, kong points): the same invariants hold, and the extras do happen.
CHANGSHA_EXTRAS = {
    "opening_hu_types": list(ALL_OPENING_HU_TYPES), "opening_hu_repeat": "count_repeats",
    "opening_hu_birds": "two_dice", "double_kong_bloom": True, "gang_points": True,
}


def test_changsha_with_every_extra_keeps_the_invariants():
    kinds = Counter()
    for seed in range(400):
        state, log, events = play(changsha, seed, deep=seed < 20, options=CHANGSHA_EXTRAS)
        kinds.update(e.kind for e in events if e.kind in ("opening_hu", "midway_hu"))
        if seed < 40:  # the same log replays to the same hand
            again = changsha.new_hand(CHANGSHA_EXTRAS, seed, seed % 4)
            for seat, action in log:
                again.apply(seat, action)
            assert again.serialize() == state.serialize()
    assert kinds["opening_hu"] > 0 and kinds["midway_hu"] > 0, kinds


def replay(variant, seed: int, log):
    state = variant.new_hand({}, seed, seed % 4)
    events = list(state.deal_events())
    for seat, action in log:
        events.extend(state.apply(seat, action))
    return state, events


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.NAME)
def test_determinism_replay_clone_serialize(variant):
    for seed in range(60):
        state, log, events = play(variant, seed, deep=False)
        again, events2 = replay(variant, seed, log)
        assert [e.to_dict() for e in events2] == [e.to_dict() for e in events]
        assert again.serialize() == state.serialize()
        half = len(log) // 2
        part, early = replay(variant, seed, log[:half])
        restored = variant.deserialize(part.serialize())
        copy = part.clone()
        tail = [e.to_dict() for e in events[len(early):]]
        for other in (restored, copy):
            got = []
            for seat, action in log[half:]:
                got.extend(e.to_dict() for e in other.apply(seat, action))
            assert got == tail
            assert other.settlement() == state.settlement()


def bad_actions(state):
    """(seat, action, expected error) triples that must be rejected in this state."""
    acting = state.to_act()
    idle = [s for s in range(4) if s not in acting]
    out = [(acting[0], Action("fly"), BadInput), (acting[0], Action("discard", ("0x",)), BadInput)]
    if idle and state.stage != "window":
        out.append((idle[0], Action("discard", ("1m",)), NotYourTurn))
    if state.stage == "window":
        out.append((acting[0], Action("pass", ref="999999"), StaleRef))
    if state.stage == "play":
        seat = acting[0]
        missing = next(t for t in range(27) if state.hands[seat][t] == 0)
        out.append((seat, Action("discard", (state.name(missing),)), IllegalAction))
        out.append((seat, Action("pass", ref="1"), StaleRef))
    return out


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.NAME)
def test_bad_input_is_typed_and_harmless(variant):
    for seed in range(30):
        state = variant.new_hand({}, seed, 0)
        stream = Stream(seed)
        while not state.is_over():
            before = state.serialize()
            for seat, action, error in bad_actions(state):
                with pytest.raises(error):
                    state.apply(seat, action)
                assert not state.can(seat, action)
                assert state.serialize() == before
            acting = state.to_act()
            seat = acting[stream.below(len(acting))]
            state.apply(seat, choose(state, seat, stream))
        with pytest.raises(RuleError):
            state.apply(0, Action("pass"))


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.NAME)
def test_default_actions_finish_every_hand(variant):
    for seed in range(100):
        state = variant.new_hand({}, seed, seed % 4)
        for _ in range(MAX_STEPS):
            if state.is_over():
                break
            seat = state.to_act()[0]
            action = state.default_action(seat)
            assert state.can(seat, action), (state.phase(), action)
            state.apply(seat, action)
        assert state.is_over()
        assert sum(state.settlement().deltas) == 0


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.NAME)
def test_options_validation(variant):
    assert variant.new_hand(dict(variant.DEFAULT_OPTIONS), 1, 0).options["base"] == 1
    for bad in ({"no_such_option": 1}, {"base": 0}, {"multi_ron": "maybe"}, {"base": "1"}):
        with pytest.raises(BadInput):
            variant.new_hand(bad, 1, 0)
    with pytest.raises(BadInput):
        variant.new_hand({}, 1, 7)


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.NAME)
def test_table_service_window_api_matches_apply(variant):
    """record_response + games.arbitration.resolve + resolve_window gives the same events
    and state as apply(); stale or unfinished decisions are refused."""
    checked = 0
    for seed in range(40):
        state = variant.new_hand({}, seed, 0)
        stream = Stream(seed)
        while not state.is_over() and checked < 60:
            if state.phase() != "window":
                seat = state.to_act()[0]
                state.apply(seat, choose(state, seat, stream, smart=True))
                continue
            assert state.pending_window().id == state.window.id
            twin, got, want = state.clone(), [], []
            answers = [(s, choose(state, s, stream)) for s in state.to_act()]
            wid = state.window.id
            for seat, action in answers:
                want.extend(e.to_dict() for e in twin.apply(seat, action))
                got.extend(e.to_dict() for e in state.record_response(seat, action))
                if twin.phase() != "window" or twin.window.id != wid:
                    break  # apply() resolves as soon as the outcome is certain
            window = state.pending_window()
            decision = resolve(window, state.rules.arbitration(state.options))
            assert decision.final
            with pytest.raises(StaleRef):
                state.resolve_window(replace(decision, window_id=decision.window_id + 1))
            with pytest.raises(IllegalAction):
                state.resolve_window(replace(decision, final=False))
            got.extend(e.to_dict() for e in state.resolve_window(decision))
            assert got == want and state.serialize() == twin.serialize()
            checked += 1
    assert checked >= 20
