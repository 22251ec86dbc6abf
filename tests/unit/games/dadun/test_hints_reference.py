"""Dadun prompts against a plain reference: ``hint_plays`` (the candidates of a prompt) and
``legal_plays`` of many seeded positions, compared with the same rules written the slow,
obvious way here.

The reference tries every shape of every class whether or not the hand holds its ranks,
fills it by the plain rule (:func:`bench.table_views_ref.lowest_fill`), lists every play of
every bomb-tier shape from all count vectors (``itertools.product``) and all code choices
(``itertools.combinations``) and keeps the weakest winner of each, reads the whole hand with
``classify`` (exceptions and all), and sorts everything it found before taking ``limit``. The
engine skips shapes the hand cannot hold, takes the lowest cards of a rank by slicing, walks
only the ranks a shape can use, reads the whole hand without composing an error and looks at
bomb-tier shapes only when fewer than ``limit`` normal plays were found: none of it may change
a hint.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import combinations, product

import pytest

from bench.table_views_ref import lowest_fill as plain_lowest_fill
from games.bots.dadun import greedy_policy, random_policy
from games.dadun import game, trick
from games.dadun.cards import (
    COPIES,
    RANK_5,
    RANK_A,
    RANK_K,
    RANK_SJ,
    RANK_T,
    full_deck,
    rank_of,
)
from games.dadun.combos import (
    AIRPLANE,
    PAIR_FAMILY,
    PAIR_STRAIGHT,
    SINGLE,
    STRAIGHT,
    TRIPLE_FAMILY,
    Combo,
    beats_rule,
    classify,
    pair_order,
    suit_strength,
)
from games.dadun.legal import NUM_RANKS, Bounds, Hand, hint_plays, legal_plays
from games.engine import IllegalAction
from games.rng import Stream, derive

Shape = tuple[Bounds, int, bool]


def plain_normal_shapes(size: int, previous: Combo | None) -> Iterator[Shape]:
    """Every non-bomb shape that could answer ``previous``, for any hand of ``size`` cards."""
    want = None if previous is None else previous.cls
    low = -1 if previous is None else previous.key
    if want in (None, SINGLE):
        yield from (({r: (1, 1)}, 1, False) for r in range(low + 1, NUM_RANKS))
    if want is None or want in PAIR_FAMILY:
        pairs = [((0, r), {r: (2, 2)}) for r in range(RANK_SJ)]
        pairs += [((1, 0), {RANK_SJ: (1, 1), RANK_SJ + 1: (1, 1)})]
        pairs += [((2, r), {r: (2, 2)}) for r in (RANK_SJ, RANK_SJ + 1)]
        floor = (-1, 0) if previous is None else pair_order(previous)
        yield from ((b, 2, False) for order, b in pairs if order > floor)
    if want is None or want in TRIPLE_FAMILY:
        yield from (({t: (3, 4)}, 5, True) for t in range(low + 1, RANK_SJ))
    for cls, each in ((STRAIGHT, 1), (PAIR_STRAIGHT, 2)):
        if want in (None, cls):
            lengths = range(5 if each == 1 else 2, RANK_A + 2) if previous is None \
                else [previous.units]
            for units in lengths:
                for start in range(low + 1, RANK_A + 2 - units):
                    yield ({r: (each, each) for r in range(start, start + units)},
                           each * units, False)
    if want in (None, AIRPLANE):
        lengths = range(2, size // 5 + 1) if previous is None else [previous.units]
        for units in lengths:
            first = -1 if previous is None else previous.key - units + 1
            for start in range(first + 1, RANK_A + 2 - units):
                bounds = {r: (3, COPIES * 4) for r in range(start, start + units)}
                if start + units <= RANK_A:
                    bounds[start + units] = (0, 2)
                yield bounds, 5 * units, True


def plain_bomb_shapes() -> Iterator[Shape]:
    """Every bomb-tier shape of any hand (sizes the hand cannot hold give no play)."""
    yield {RANK_5: (1, 1), RANK_T: (1, 1), RANK_K: (1, 1)}, 3, False
    for r in range(RANK_SJ):
        yield from (({r: (k, k)}, k, False) for k in range(4, 9))
    for sets in range(3, 9):
        yield {RANK_5: (sets, sets), RANK_T: (sets, sets), RANK_K: (sets, sets)}, 3 * sets, False
    yield from (({RANK_SJ: (0, 2), RANK_SJ + 1: (0, 2)}, k, False) for k in (3, 4))


def plain_plays(cards: list[int], shape: Shape) -> list[tuple[int, ...]]:
    """Every play of a shape, count vectors in order, then code choices in order."""
    fixed, total, free = shape
    of_rank = [sorted(c for c in cards if rank_of(c) == r) for r in range(NUM_RANKS)]
    ranges = []
    for r in range(NUM_RANKS):
        lo, hi = fixed.get(r, (0, len(of_rank[r]) if free else 0))
        ranges.append(range(lo, min(hi, len(of_rank[r])) + 1))
    out = []
    for vector in product(*ranges):
        if sum(vector) == total:
            parts = [sorted(set(combinations(of_rank[r], c))) for r, c in enumerate(vector) if c]
            out += [sum(choice, ()) for choice in product(*parts)]
    return out


def reference_hints(cards: list[int], previous: Combo | None, limit: int,
                    suit_order: bool) -> list[tuple[int, ...]]:
    better = beats_rule(suit_order)
    hand = Hand(cards)
    size = len(cards)
    found: dict[tuple[int, ...], Combo] = {}
    for shape in plain_normal_shapes(size, previous):
        play = plain_lowest_fill(hand, *shape)
        if play is not None:
            found[play] = classify(play, size)
    for shape in plain_bomb_shapes():
        winners = []
        for i, play in enumerate(plain_plays(cards, shape)):
            combo = classify(play, size)
            if previous is None or better(combo, previous):
                winners.append(((combo.rung, suit_strength(combo, suit_order), i), play, combo))
        if winners:
            _, play, combo = min(winners)
            found[play] = combo
    whole = tuple(sorted(cards))
    if not _answers(whole, size + 1, previous, suit_order):
        if _answers(whole, size, previous, suit_order):
            found[whole] = classify(whole, size, against=previous, suit_order=suit_order)
    order = sorted(found, key=lambda p: (found[p].rung, found[p].key, found[p].size, p))
    return order[:limit]


def _answers(cards: tuple[int, ...], size: int, previous: Combo | None, suit_order: bool) -> bool:
    try:
        combo = classify(cards, size, against=previous, suit_order=suit_order)
    except IllegalAction:
        return False
    return previous is None or beats_rule(suit_order)(combo, previous)


def selfplay_positions(seeds: range, suit_order: bool) -> Iterator[tuple[list[int], Combo | None]]:
    """Every play decision of seeded deals (greedy seats 0/2, random 1/3): hand, desk top."""
    for seed in seeds:
        state = game.new_hand({"pure510k_suit_order": suit_order}, seed, seed % 4)
        rng = Stream(derive(seed, "test.hints_reference"))
        while not state.is_over():
            seat = state.to_act()[0]
            if state.phase() == "play":
                yield list(state.deal.hands[seat]), trick.top_combo(state.deal)
            action = greedy_policy(state, seat) if seat % 2 == 0 else random_policy(state, seat, rng)
            state.apply(seat, action)


@pytest.mark.parametrize("suit_order", [False, True])
def test_hints_of_selfplay_positions_are_the_reference_ones(suit_order: bool) -> None:
    seen = 0
    for hand, previous in selfplay_positions(range(16), suit_order):
        expected = reference_hints(hand, previous, 8, suit_order)
        assert hint_plays(hand, previous, 8, suit_order=suit_order) == expected
        assert hint_plays(hand, previous, 3, suit_order=suit_order) == expected[:3]
        seen += 1
    assert seen > 1200


def random_cases(seed: int) -> Iterator[tuple[list[int], Combo | None]]:
    """Hands of 1..27 cards dealt from a deck that holds the bomb ranks often, each leading
    and following a play drawn from another hand's hints (any class, bombs included)."""
    rng = Stream(derive(seed, "test.hints_reference.random"))
    for _ in range(25):
        deck = full_deck()
        if rng.below(2):   # few ranks: bombs, long runs, airplanes and 510Ks are frequent
            ranks = {rng.below(13) for _ in range(6)} | {RANK_5, RANK_T, RANK_K}
            deck = [c for c in deck if c >= 52 or c >> 2 in ranks]
        rng.shuffle(deck)
        size = 1 + rng.below(min(27, len(deck) // 2))
        hand, other = sorted(deck[:size]), sorted(deck[size:2 * size])
        yield hand, None
        for play in hint_plays(other, None, 40):
            yield hand, classify(play, len(other) + 1)


@pytest.mark.parametrize("seed", range(4))
def test_hints_and_legal_plays_of_random_hands_are_the_reference_ones(seed: int) -> None:
    for hand, previous in random_cases(seed):
        for suit_order in (False, True):
            assert hint_plays(hand, previous, 8, suit_order=suit_order) == \
                reference_hints(hand, previous, 8, suit_order)
        if len(hand) <= 9:   # every sub-multiset of the hand, classified
            plays = legal_plays(hand, previous)
            assert len(plays) == len(set(plays))
            assert set(plays) == brute_force(hand, previous)


def brute_force(hand: list[int], previous: Combo | None) -> set[tuple[int, ...]]:
    out = set()
    for k in range(1, len(hand) + 1):
        for sub in set(combinations(hand, k)):
            if _answers(sub, len(hand), previous, False):
                out.add(sub)
    return out
