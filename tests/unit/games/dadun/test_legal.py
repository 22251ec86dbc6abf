"""Dadun legal-play generation: agreement with brute force, validity, hints, fast path."""

from __future__ import annotations

from itertools import combinations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.table_views_ref import lowest_fill as plain_lowest_fill
from games.dadun.cards import SJ, counts_of, full_deck, parse_cards
from games.dadun.combos import Combo, beats, classify, try_classify
from games.dadun.legal import (
    Hand,
    _lowest_fill,
    bomb_shapes,
    has_legal_play,
    hint_plays,
    iter_legal_plays,
    legal_plays,
    normal_shapes,
)
from games.engine import IllegalAction
from games.rng import Stream


def brute_force(hand: list[int], previous: Combo | None) -> set[tuple[int, ...]]:
    """Reference: classify every sub-multiset of the hand (only for small hands)."""
    out = set()
    for k in range(1, len(hand) + 1):
        for sub in set(combinations(sorted(hand), k)):
            try:
                combo = classify(sub, len(hand), against=previous)
            except IllegalAction:
                continue
            if previous is None or beats(combo, previous):
                out.add(sub)
    return out


@st.composite
def pools(draw):
    """Cards of a few ranks (two copies of each code), so that small hands hold bombs,
    triples, runs and 510Ks often; jokers and the 510K ranks are mixed in at times."""
    if draw(st.booleans()):
        start = draw(st.integers(0, 11))
        ranks = set(range(start, min(13, start + draw(st.integers(2, 5)))))
    else:
        ranks = set(draw(st.lists(st.integers(0, 12), min_size=1, max_size=4)))
    if draw(st.booleans()):
        ranks |= {2, 7, 10}
    pool = [c for c in full_deck() if c < SJ and c >> 2 in ranks]
    return pool + ([SJ, SJ, SJ + 1, SJ + 1] if draw(st.booleans()) else [])


@st.composite
def hands_and_previous(draw, max_hand=9):
    pool = draw(pools())
    idx = draw(st.lists(st.integers(0, len(pool) - 1), min_size=1, max_size=max_hand, unique=True))
    hand = sorted(pool[i] for i in idx)
    previous = None
    if draw(st.integers(0, 4)):
        size = draw(st.integers(1, min(10, len(pool))))
        idx = draw(st.lists(st.integers(0, len(pool) - 1), min_size=size, max_size=size,
                            unique=True))
        cards = [pool[i] for i in idx]
        previous = try_classify(cards, len(cards)) or classify(cards[:1], 1)
    return hand, previous


@settings(max_examples=400, deadline=None)
@given(hands_and_previous())
def test_legal_plays_agree_with_brute_force(case):
    hand, previous = case
    plays = legal_plays(hand, previous)
    assert len(plays) == len(set(plays)), "a play was generated twice"
    assert set(plays) == brute_force(hand, previous)
    assert has_legal_play(hand, previous) is bool(plays)


@st.composite
def airplane_hands(draw):
    """10-11 cards from three or four consecutive ranks: full airplanes are possible."""
    start = draw(st.integers(0, 9))
    pool = [c for c in full_deck() if c < SJ and start <= c >> 2 < start + draw(st.integers(3, 4))]
    idx = draw(st.lists(st.integers(0, len(pool) - 1), min_size=10, max_size=11, unique=True))
    return sorted(pool[i] for i in idx)


@settings(max_examples=40, deadline=None)
@given(airplane_hands(), st.sampled_from([None, "3s 3h 3d 4s 4h 4d 9c Jd Qs 2h", "5h Td Ks"]))
def test_legal_plays_agree_with_brute_force_on_airplane_hands(hand, previous_text):
    previous = None if previous_text is None else classify(parse_cards(previous_text), 10)
    assert sorted(legal_plays(hand, previous)) == sorted(brute_force(hand, previous))


@settings(max_examples=150, deadline=None)
@given(hands_and_previous(max_hand=14))
def test_every_generated_play_is_valid_and_beats_previous(case):
    hand, previous = case
    for play in iter_legal_plays(hand, previous):
        assert play == tuple(sorted(play))
        combo = classify(play, len(hand), against=previous)
        assert previous is None or beats(combo, previous)


@settings(max_examples=150, deadline=None)
@given(hands_and_previous(max_hand=14), st.integers(1, 6))
def test_hints_are_legal_lowest_first_and_exist_when_a_play_exists(case, limit):
    hand, previous = case
    hints = hint_plays(hand, previous, limit)
    assert len(hints) <= limit
    assert bool(hints) is has_legal_play(hand, previous)
    combos = [classify(p, len(hand), against=previous) for p in hints]
    for play, combo in zip(hints, combos, strict=True):
        assert previous is None or beats(combo, previous)
        assert try_classify(play, len(hand) + 1) is not None or play == tuple(sorted(hand))
    assert [(c.rung, c.key) for c in combos] == sorted((c.rung, c.key) for c in combos)


def deal(seed: int) -> list[int]:
    deck = full_deck()
    Stream(seed).shuffle(deck)
    return sorted(deck[:27])


FOLLOW = ["4s 4h", "3s 4h 5d 6c 7s", "5s 5h 5d 3c 4c", "6s 6h 6c 6d", "5h Td Ks",
          "3s 3h 3d 4s 4h 4d 9c Jd Qs 2h", "8s 8h 9d 9c", "BJ"]


@pytest.mark.parametrize("previous_text", FOLLOW)
def test_full_hands_following_give_valid_distinct_beating_plays(previous_text):
    previous = classify(parse_cards(previous_text), len(parse_cards(previous_text)))
    for seed in range(12):
        hand = deal(seed)
        plays = legal_plays(hand, previous)
        assert len(plays) == len(set(plays))
        for play in plays:
            assert beats(classify(play, 27, against=previous), previous)
        assert has_legal_play(hand, previous) is bool(plays)


def test_full_hand_leading_plays_are_valid_and_distinct():
    hand = deal(3)
    plays = legal_plays(hand, None)
    assert len(plays) == len(set(plays)) > 1000
    assert all(try_classify(p, 27) is not None for p in plays)
    assert {classify(p, 27).cls for p in plays} >= {1, 2, 5, 6}


def test_small_hand_counted_by_hand():
    # singles 3s 3h, pairs 3s3s 3s3h, and the whole hand as a last-play triple
    plays = legal_plays(parse_cards("3s 3s 3h"), None)
    assert sorted(plays) == sorted(tuple(parse_cards(t)) for t in
                                   ("3s", "3h", "3s 3s", "3s 3h", "3s 3s 3h"))
    # 4 singles, one pair of kings and two mixed 510Ks; the whole hand is no combination
    hand = parse_cards("5h Td Ks Kh")
    assert len(legal_plays(hand, None)) == 7
    following = legal_plays(hand, classify(parse_cards("Qs Qh"), 2))
    assert sorted(following) == sorted(tuple(sorted(parse_cards(t))) for t in
                                       ("Ks Kh", "5h Td Ks", "5h Td Kh"))


def test_suit_variants_of_a_straight_are_distinct_plays():
    hand = parse_cards("4s 4h 5d 6c 7s 8s 8h Kd")
    previous = classify(parse_cards("3s 4h 5d 6c 7s"), 5)
    assert len(legal_plays(hand, previous)) == 4  # 4 x 5 6 7 x 8, two suits each for 4 and 8


def test_counts_and_card_lists_are_the_same_hand():
    hand = deal(5)
    previous = classify(parse_cards("3s 4h 5d 6c 7s"), 5)
    assert legal_plays(counts_of(hand), previous) == legal_plays(hand, previous)


def test_nothing_beats_the_top_bomb():
    hand = parse_cards("2s 2s 2h 2h 2c 2c 2d 2d 3s")
    top = classify(parse_cards("SJ SJ BJ BJ"), 4)
    assert legal_plays(hand, top) == [] and not has_legal_play(hand, top)
    assert hint_plays(hand, top) == []


def test_last_play_triple_answers_a_triple_two_only_as_the_whole_hand():
    previous = classify(parse_cards("9s 9h 9d 4c 5c"), 5)
    for text in ("Ts Td Tc", "Ts Td Tc 3s"):
        assert legal_plays(parse_cards(text), previous) == [tuple(sorted(parse_cards(text)))]
    hand = parse_cards("Ts Td Tc 3s 4s")
    assert legal_plays(hand, previous) == [tuple(sorted(hand))]  # no bare triple, no triple+1


def test_hint_for_a_leader_starts_with_the_lowest_single():
    hand = parse_cards("4s 4h 5d 6c 7s 8s 9h Kd Kc 2s SJ")
    assert hint_plays(hand, None, 2) == [(parse_cards("4s")[0],), tuple(parse_cards("4s 4h"))]


def shapes_of(hand, previous):
    yield from normal_shapes(hand, previous)
    yield from bomb_shapes(hand)
    yield {0: (3, 4)}, 3, True                  # a total below the shape's minimum
    yield {4: (1, 2), 9: (0, 0)}, 6, False      # more cards than the bounds allow


@pytest.mark.parametrize("previous_text", [None, *FOLLOW])
def test_the_lowest_fill_of_every_shape_is_the_plain_one(previous_text):
    previous = None if previous_text is None else classify(parse_cards(previous_text),
                                                          len(parse_cards(previous_text)))
    for seed in range(30):
        cards = deal(seed)
        for size in (27, 14, 6, 2):
            hand = Hand(cards[:size])
            for bounds, total, free in shapes_of(hand, previous):
                assert _lowest_fill(hand, bounds, total, free) == \
                    plain_lowest_fill(hand, bounds, total, free)
