"""Room option ``pure510k_suit_order`` (rules/dadun.md §3.2 rung 2, §8.6, §9).

Off (the default): every pure 510K ties with every other, so none beats another. On: pure
510Ks rank by suit, spades > hearts > clubs > diamonds (the common Chinese order; the rules
leave it open). Mixed 510Ks tie among themselves either way, and nothing else changes.
"""

from __future__ import annotations

from itertools import combinations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from games.dadun import game
from games.dadun.cards import SJ, SUITS, full_deck, parse_cards
from games.dadun.combos import (
    Combo,
    beats,
    beats_by_suit,
    beats_rule,
    classify,
    try_classify,
)
from games.dadun.legal import has_legal_play, hint_plays, iter_legal_plays, legal_plays
from games.dadun.options import normalize_options
from games.engine import Action, BadInput, IllegalAction
from tests.unit.games.dadun.helpers import NO, make_deal

ORDER = "shcd"  # strongest first


def cl(text: str, hand_size: int | None = None) -> Combo:
    cards = parse_cards(text)
    return classify(cards, hand_size or len(cards))


def pure(suit: str) -> Combo:
    return cl(f"5{suit} T{suit} K{suit}")


# -- the comparison -------------------------------------------------------------------------


@pytest.mark.parametrize("a", SUITS)
@pytest.mark.parametrize("b", SUITS)
def test_pure_510k_against_pure_510k_by_suit(a, b):
    assert pure(a).pure and pure(a).rung == 2
    assert beats(pure(a), pure(b)) is False
    assert beats_by_suit(pure(a), pure(b)) is (ORDER.index(a) < ORDER.index(b))
    assert beats_rule(False) is beats and beats_rule(True) is beats_by_suit


def test_mixed_510ks_still_tie_and_pure_over_mixed_is_unchanged():
    mixed = [cl("5s Th Kh"), cl("5d Tc Ks"), cl("5h Th Kd")]
    for a in mixed:
        for b in mixed:
            assert not beats_by_suit(a, b) and not beats(a, b)
        for suit in SUITS:
            assert beats_by_suit(pure(suit), a) and not beats_by_suit(a, pure(suit))
    # the lowest pure 510K still beats every mixed one and loses to a plain 4-bomb
    assert beats_by_suit(pure("d"), cl("5s Ts Kh"))
    assert beats_by_suit(cl("3s 3h 3c 3d"), pure("s"))
    assert not beats_by_suit(pure("s"), cl("3s 3h 3c 3d"))


REPRESENTATIVES = [
    "3s", "BJ", "4s 4h", "SJ BJ", "BJ BJ", "7h 7d 7c 9s 4d", "3s 4h 5d 6c 7s",
    "5s 5h 6d 6c", "3s 3h 3d 4s 4h 4d 9c Jd Qs 2h", "5h Td Ks", "5d Tc Kc", "5s Ts Ks",
    "5d Td Kd", "3s 3h 3c 3d", "9h 9h 9d 9d", "3s 3h 3c 3d 3s", "5h 5d 5s Th Td Ts Kh Kd Ks",
    "SJ BJ BJ", "2s 2s 2h 2h 2c 2c 2d 2d", "SJ SJ BJ BJ",
]


def test_nothing_but_pure_against_pure_changes():
    combos = [cl(t) for t in REPRESENTATIVES]
    for a in combos:
        for b in combos:
            if a.pure and b.pure:
                continue
            assert beats_by_suit(a, b) is beats(a, b), (a.cards, b.cards)


@st.composite
def sampled_combos(draw):
    """A valid play of a few ranks that often include 5, 10 and K (so 510Ks are common)."""
    start = draw(st.integers(0, 12))
    ranks = set(range(start, min(13, start + draw(st.integers(1, 3))))) | {2, 7, 10}
    pool = [c for c in full_deck() if c < SJ and c >> 2 in ranks] + [SJ, SJ + 1]
    idx = draw(st.lists(st.integers(0, len(pool) - 1), min_size=1, max_size=9, unique=True))
    cards = [pool[i] for i in idx]
    if draw(st.integers(0, 2)) == 0:
        suit = draw(st.integers(0, 3))
        cards = [2 * 4 + suit, 7 * 4 + suit, 10 * 4 + suit]  # a pure 510K
    return try_classify(cards, len(cards)) or classify(cards[:1], 1)


@settings(max_examples=200, deadline=None)
@given(st.lists(sampled_combos(), min_size=3, max_size=10))
def test_suit_order_is_still_a_strict_partial_order(sample):
    for a in sample:
        assert not beats_by_suit(a, a)
        for b in sample:
            assert not (beats_by_suit(a, b) and beats_by_suit(b, a))
            for c in sample:
                if beats_by_suit(a, b) and beats_by_suit(b, c):
                    assert beats_by_suit(a, c)


# -- generation and hints against brute force ------------------------------------------------


def brute_force(hand, previous, suit_order):
    """Every sub-multiset of a small hand that is a legal play on ``previous``."""
    better = beats_rule(suit_order)
    out = set()
    for k in range(1, len(hand) + 1):
        for sub in set(combinations(sorted(hand), k)):
            try:
                combo = classify(sub, len(hand), against=previous, suit_order=suit_order)
            except IllegalAction:
                continue
            if previous is None or better(combo, previous):
                out.add(sub)
    return out


@st.composite
def hands_on_a_510k(draw):
    """Up to 9 cards rich in 5s, 10s and Ks (several suits, so several pure 510Ks), and a
    previous play that is a pure 510K of some suit, a mixed 510K or a 4-bomb."""
    pool = [c for c in full_deck() if c < SJ and c >> 2 in (2, 7, 10, draw(st.integers(0, 12)))]
    idx = draw(st.lists(st.integers(0, len(pool) - 1), min_size=1, max_size=9, unique=True))
    hand = sorted(pool[i] for i in idx)
    previous = draw(st.sampled_from(
        ["5s Ts Ks", "5h Th Kh", "5c Tc Kc", "5d Td Kd", "5h Td Ks", "9s 9h 9c 9d"]))
    return hand, cl(previous)


@settings(max_examples=300, deadline=None)
@given(hands_on_a_510k(), st.booleans())
def test_generation_and_hints_agree_with_brute_force(case, suit_order):
    hand, previous = case
    plays = legal_plays(hand, previous, suit_order=suit_order)
    assert len(plays) == len(set(plays))
    assert set(plays) == brute_force(hand, previous, suit_order)
    assert has_legal_play(hand, previous, suit_order=suit_order) is bool(plays)
    hints = hint_plays(hand, previous, 8, suit_order=suit_order)
    assert set(hints) <= set(plays) and bool(hints) is bool(plays)


def test_small_hand_by_hand():
    hand = parse_cards("5s Ts Ks 5d Td Kd 5h Tc")
    on_hearts = pure("h")
    # off: no pure 510K beats another, so nothing answers a pure hearts 510K
    assert legal_plays(hand, on_hearts) == []
    assert hint_plays(hand, on_hearts) == []
    # on: the spade set (and no other) beats the hearts set
    spades = tuple(sorted(parse_cards("5s Ts Ks")))
    assert legal_plays(hand, on_hearts, suit_order=True) == [spades]
    assert hint_plays(hand, on_hearts, suit_order=True) == [spades]
    # on, over a diamond set: every higher suit the hand holds; the hint is the weakest
    on_diamonds = pure("d")
    assert legal_plays(hand, on_diamonds, suit_order=True) == [spades]
    hand2 = parse_cards("5s Ts Ks 5c Tc Kc")
    both = legal_plays(hand2, on_diamonds, suit_order=True)
    assert sorted(both) == sorted([spades, tuple(sorted(parse_cards("5c Tc Kc")))])
    assert hint_plays(hand2, on_diamonds, suit_order=True) == [tuple(parse_cards("5c Tc Kc"))]


@pytest.mark.parametrize("suit_order", [False, True])
def test_leading_hint_is_a_mixed_510k_when_the_hand_has_one(suit_order):
    def the_510k(hand):
        hints = hint_plays(hand, None, 20, suit_order=suit_order)
        [found] = [p for p in hints if classify(p, len(hand)).cls == 9]
        return classify(found, len(hand))

    assert not the_510k(parse_cards("5s Ts Ks 5c Tc Kc 3h")).pure
    assert the_510k(parse_cards("5c Tc Kc 5c Tc Kc 3h")).pure  # one suit: pure only


# -- through the engine ------------------------------------------------------------------------

# Seat 0 is the banker (friend card Ah, other copy at seat 2) and holds a hearts set; seat 1
# holds the spade, the diamond and the other hearts set; seats 2 and 3 a clubs set each. The
# rest is dealt round-robin: no four of a kind anywhere.
FIXED = {0: "Ah 5h Th Kh", 1: "5s Ts Ks 5d Td Kd", 2: "Ah", 3: "Ts Td"}


def started(options):
    state = game.new_hand_from_deal(options, make_deal(FIXED), 0)
    state.deal_events()
    while state.phase() == "alone":
        state.apply(state.to_act()[0], NO)
    state.apply(0, Action("choose_friend_card", tiles=("Ah",)))
    return state


def play(state, seat, text):
    return state.apply(seat, Action("play", tuple(text.split()), ref=state.deal.token))


@pytest.mark.parametrize("suit_order", [False, True])
def test_pure_510k_on_a_pure_510k_of_another_suit(suit_order):
    state = started({"pure510k_suit_order": suit_order})
    play(state, 0, "5h Th Kh")
    spades = Action("play", ("5s", "Ts", "Ks"), ref=state.deal.token)
    diamonds = Action("play", ("5d", "Td", "Kd"), ref=state.deal.token)
    with pytest.raises(IllegalAction) as err:
        state.verify(1, diamonds)
    assert err.value.code == "does_not_beat"
    listed = state.legal_actions(1)
    assert all(state.can(1, a) for a in listed)
    hand = state.hand_of(1)
    previous = state.deal.desk[-1]
    if suit_order:
        assert spades in listed
        before = state.serialize()
        events = state.apply(1, spades)
        assert events[0].kind == "play" and events[0].data["class"] == 9
        assert state.serialize() != before
    else:
        with pytest.raises(IllegalAction) as err:
            state.apply(1, spades)
        assert err.value.code == "does_not_beat"
        assert spades not in listed
    # seat 1's other answer is its 3 x 510K (all nine 5/10/K cards), with or without
    sizes = sorted(len(a.tiles) for a in listed if a.kind == "play")
    assert sizes == ([3, 9] if suit_order else [9])
    # the engine's candidates and its judgement agree with a filter of every play
    top = classify(previous.cards, 3)
    everything = legal_plays(hand, None)
    better = beats_rule(suit_order)
    expected = {p for p in everything
                if better(classify(p, len(hand), against=top, suit_order=suit_order), top)}
    assert set(iter_legal_plays(hand, top, suit_order=suit_order)) == expected
    assert {p for p in expected if classify(p, len(hand)).cls == 9} == (
        {tuple(sorted(parse_cards("5s Ts Ks")))} if suit_order else set())


def test_a_higher_pure_set_ends_the_argument_only_with_the_option():
    # hearts led, spades answer (option on); nobody can beat spades, the trick ends there
    state = started({"pure510k_suit_order": True})
    play(state, 0, "5h Th Kh")
    play(state, 1, "5s Ts Ks")
    for seat in (2, 3, 0):
        top = classify(state.deal.desk[-1].cards, 3)
        assert not has_legal_play(state.hand_of(seat), top, suit_order=True)
        assert [a.kind for a in state.legal_actions(seat)] == ["pass"]
        if seat != 0:
            with pytest.raises(IllegalAction, match="does not beat"):
                play(state, seat, "5c Tc Kc")
        state.apply(seat, Action("pass", ref=state.deal.token))
    assert state.public_view()["catch"][1] == 50  # two 510Ks: 2 x 25 points
    assert state.to_act() == (1,) and state.deal.must_play


def test_replay_and_serialize_with_the_option_are_deterministic():
    options = {"pure510k_suit_order": True}
    state = started(options)
    play(state, 0, "5h Th Kh")
    play(state, 1, "5s Ts Ks")
    actions = []
    while not state.is_over():
        (seat,) = state.to_act()
        action = state.default_action(seat)
        actions.append((seat, action))
        state.apply(seat, action)
    again = started(options)
    play(again, 0, "5h Th Kh")
    text = again.serialize()
    restored = game.deserialize(text)
    assert restored.serialize() == text and restored.deal.options["pure510k_suit_order"]
    for target in (again, restored):
        play(target, 1, "5s Ts Ks")
        for seat, action in actions:
            target.apply(seat, action)
    assert again.serialize() == restored.serialize() == state.serialize()
    assert again.settlement().to_dict() == state.settlement().to_dict()


# -- the option itself -----------------------------------------------------------------------


def test_option_values():
    assert normalize_options(None)["pure510k_suit_order"] is False
    assert normalize_options({"pure510k_suit_order": True})["pure510k_suit_order"] is True
    for bad in (1, 0, "true", None, [True]):
        with pytest.raises(BadInput, match="pure510k_suit_order"):
            normalize_options({"pure510k_suit_order": bad})
        with pytest.raises(BadInput):
            game.new_hand({"pure510k_suit_order": bad}, 1, 0)
