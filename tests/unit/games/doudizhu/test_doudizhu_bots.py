"""Dou Dizhu bots: always legal, sensible bids, and the greedy player clearly beats the
random one on either side."""

from __future__ import annotations

from games.bots.doudizhu import greedy_policy, random_policy, strength
from games.dadun.cards import parse_cards
from games.doudizhu import game
from games.doudizhu.cards import rank_counts
from games.doudizhu.combos import classify
from games.engine import Action
from games.rng import Stream, derive
from tests.unit.games.doudizhu.helpers import make_landlord, ranks, started


def play_hand(seed: int, greedy_seats: set[int], check: bool = False) -> game.DoudizhuState:
    state = game.new_hand({}, seed, seed % 3)
    stream = Stream(derive(seed, "bots"))
    while not state.is_over():
        (seat,) = state.to_act()
        if seat in greedy_seats:
            action = greedy_policy(state, seat)
        else:
            action = random_policy(state, seat, stream)
        if check:
            assert state.can(seat, action), (seed, seat, action)
            assert action in state.legal_actions(seat)
        state.apply(seat, action)
    return state


def test_bots_always_return_legal_actions() -> None:
    for seed in range(30):
        assert play_hand(seed, {seed % 3, (seed + 1) % 3} if seed % 2 else {0}, check=True)\
            .is_over()


def test_greedy_beats_random_as_landlord_and_as_farmers() -> None:
    as_landlord = as_farmers = 0
    hands = 60
    for seed in range(1000, 1000 + hands):
        for greedy in ({0}, {1}, {2}):
            state = play_hand(seed, greedy)
            landlord = state.deal.landlord
            deltas = state.settlement().deltas
            if landlord in greedy:
                as_landlord += deltas[landlord]
            elif landlord is not None:
                as_farmers += sum(deltas[s] for s in greedy)
    assert as_landlord > 0 and as_farmers > 0, (as_landlord, as_farmers)


def test_strength_and_bids() -> None:
    assert strength(ranks("BR2222A")) == 8 + 6 + 1
    assert strength(ranks("3456789")) == 0
    weak = started({0: "3s 4s 5s 6s 7s 8s 9s Th Jh"}, first=0)
    assert greedy_policy(weak, 0) == Action("call_landlord", choice="no")
    strong = started({0: "SJ BJ 2s 2h 2c 2d As"}, first=0)
    assert greedy_policy(strong, 0) == Action("call_landlord", choice="yes")


def test_greedy_leads_low_keeps_bombs_and_does_not_beat_its_fellow_farmer() -> None:
    state = started({0: "3s 4h 5h 6h 7h 9s 9h 9c 9d"}, bottom="Ks Kh Kc", first=0)
    make_landlord(state, 0)
    lead = greedy_policy(state, 0)
    used = rank_counts(parse_cards(" ".join(lead.tiles)))
    combo = classify(used)
    assert combo is not None and combo.key == 0, "a play from the lowest rank, the 3s"
    assert combo.size >= 5, "the longest play of that rank"
    assert used[ranks("9").index(1)] == 0, "the bomb of 9s is kept"
    state.apply(0, lead)
    follow = greedy_policy(state, 1)
    if follow.kind == "play":  # seat 1 beats the landlord when it can
        state.apply(1, follow)
        assert greedy_policy(state, 2) == Action("pass"), "not over a fellow farmer"
