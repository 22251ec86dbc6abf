"""Properties of ``beats`` over combinations sampled from random hands (rules/dadun.md §3.2)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from games.dadun.cards import SJ, full_deck
from games.dadun.combos import Combo, beats, classify, interpretations, try_classify


@st.composite
def combos(draw):
    """A valid play drawn from a few ranks of a random pool, read as a last play at times;
    falls back to one of its cards (a single) when the draw is no combination."""
    start = draw(st.integers(0, 12))
    ranks = set(range(start, min(13, start + draw(st.integers(1, 4)))))
    if draw(st.booleans()):
        ranks |= {2, 7, 10}
    pool = [c for c in full_deck() if c < SJ and c >> 2 in ranks] + [SJ, SJ, SJ + 1, SJ + 1]
    idx = draw(st.lists(st.integers(0, len(pool) - 1), min_size=1, max_size=12, unique=True))
    cards = [pool[i] for i in idx]
    hand = len(cards) + draw(st.sampled_from([0, 0, 5]))
    return try_classify(cards, hand) or classify(cards[:1], 1)


@settings(max_examples=300, deadline=None)
@given(st.lists(combos(), min_size=3, max_size=12))
def test_beats_is_irreflexive_antisymmetric_and_transitive(sample: list[Combo]):
    for a in sample:
        assert not beats(a, a)
        for b in sample:
            if beats(a, b):
                assert not beats(b, a)
                for c in sample:
                    if beats(b, c):
                        assert beats(a, c), (a, b, c)


@settings(max_examples=300, deadline=None)
@given(combos())
def test_classified_combo_is_consistent(combo: Combo):
    assert combo.size == len(combo.cards)
    assert combo.cards == tuple(sorted(combo.cards))
    assert (combo.rung > 0) is (combo.cls not in {1, 2, 3, 4, 5, 6, 7, 8, 15, 27})
    assert combo in interpretations(combo.cards, combo.size)
    assert not combo.last_only or try_classify(combo.cards, combo.size + 1) != combo


@settings(max_examples=200, deadline=None)
@given(combos(), combos())
def test_a_bomb_tier_play_and_a_normal_play_are_always_ordered(a: Combo, b: Combo):
    if (a.rung > 0) != (b.rung > 0):
        assert beats(a, b) is (a.rung > 0)
        assert beats(b, a) is (b.rung > 0)
