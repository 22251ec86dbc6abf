"""Dadun bots: always legal, and the greedy player clearly beats the random one."""

from __future__ import annotations

from games.bots.dadun import greedy_policy, random_policy
from games.dadun import game
from games.dadun.cards import parse_cards, rank_of
from games.engine import Action
from games.rng import Stream, derive
from tests.unit.games.dadun.helpers import NO, make_deal


def play_deal(seed: int, greedy_seats: set[int], check_legal: bool = False, options=None):
    state = game.new_hand(options or {}, seed, seed % 4)
    stream = Stream(derive(seed, "bots"))
    while not state.is_over():
        (seat,) = state.to_act()
        if seat in greedy_seats:
            action = greedy_policy(state, seat)
        else:
            action = random_policy(state, seat, stream)
        if check_legal:
            assert state.can(seat, action), (seed, seat, action)
            assert action in state.legal_actions(seat)
        state.apply(seat, action)
    return state


def test_bots_always_return_legal_actions():
    for seed in range(40):
        state = play_deal(seed, {0, 2} if seed % 2 else {1}, check_legal=True)
        assert state.is_over()


def test_bots_stay_legal_when_pure_510ks_rank_by_suit():
    options = {"pure510k_suit_order": True}
    for seed in range(200, 220):
        state = play_deal(seed, {0, 2} if seed % 2 else {1}, check_legal=True, options=options)
        assert state.is_over()


def test_greedy_team_beats_random_team():
    deals = 120
    greedy_total = 0
    for seed in range(1000, 1000 + deals):
        seats = {0, 2} if seed % 2 else {1, 3}
        deltas = play_deal(seed, seats).settlement().deltas
        greedy_total += sum(deltas[s] for s in seats)
    assert greedy_total > deals  # on average more than 1 base per deal, loose


def started(fixed, banker=0, options=None):
    state = game.new_hand_from_deal(options or {}, make_deal(fixed), banker)
    state.deal_events()
    return state


def test_greedy_goes_alone_only_with_a_very_strong_hand():
    strong = started({0: "SJ SJ BJ 2s 2s 2h 2h 2c Ad Ad Ac Ac Ah"})
    assert greedy_policy(strong, 0) == Action("choose_alone", choice="yes")
    yes = 0
    for seed in range(200):
        state = game.new_hand({}, seed, 0)
        yes += greedy_policy(state, 0).choice == "yes"
    assert yes < 10


def test_greedy_names_a_high_card_held_once_as_friend():
    state = started({0: "Ah 2d 2d", 2: "Ah"})
    while state.phase() == "alone":
        state.apply(state.to_act()[0], NO)
    action = greedy_policy(state, 0)
    code = parse_cards(action.tiles[0])[0]
    assert rank_of(code) in (rank_of(parse_cards("As")[0]), rank_of(parse_cards("2s")[0]))
    assert state.hand_of(0).count(code) == 1
    assert state.can(0, action)


def positioned(hands, options=None):
    state = started({0: "Ah", 2: "Ah"}, options=options)
    while state.phase() == "alone":
        state.apply(state.to_act()[0], NO)
    state.apply(0, Action("choose_friend_card", tiles=("Ah",)))
    for seat, cards in hands.items():
        state.deal.hands[seat] = sorted(parse_cards(cards))
    return state


def act(state, seat, kind, cards=""):
    return state.apply(seat, Action(kind, tuple(cards.split()), ref=state.deal.token))


def test_greedy_leads_low_and_keeps_its_bomb():
    state = positioned({0: "4s 4h 4c 4d 9s Jd Qd Qh"})
    action = greedy_policy(state, 0)
    assert action.tiles == ("9s",)


def test_greedy_does_not_beat_its_known_partner_but_beats_an_opponent():
    # Seat 2 holds the other Ah: it knows the banker (seat 0) is its partner.
    state = positioned({0: "3s 9s 9h", 1: "4s 4h", 2: "Ah Jd Qd", 3: "5s"})
    act(state, 0, "play", "9s")
    act(state, 1, "pass")
    assert greedy_policy(state, 2).kind == "pass"
    act(state, 2, "pass")
    act(state, 3, "pass")
    act(state, 0, "play", "3s")
    act(state, 1, "play", "4s")
    assert greedy_policy(state, 2).kind == "play"


def test_greedy_answers_a_pure_510k_with_a_higher_suit_only_when_suits_rank():
    # Seat 1 (an opponent of the banker) holds the spade set; the banker leads the hearts
    # set: 25 points on the desk, worth a bomb-tier answer when one is legal.
    hands = {0: "5h Th Kh 9d", 1: "5s Ts Ks 3d 4d", 2: "Ah Jd Qd", 3: "6s 7s"}
    for suit_order, expected in ((True, ("5s", "Ts", "Ks")), (False, ())):
        state = positioned(hands, {"pure510k_suit_order": suit_order})
        act(state, 0, "play", "5h Th Kh")
        action = greedy_policy(state, 1)
        assert action.tiles == expected and state.can(1, action)
