"""Decompositions: every arrangement rebuilds the hand exactly, none is repeated, none is
missed (checked against an independent enumeration of set multisets on small suits)."""

from __future__ import annotations

from itertools import combinations_with_replacement

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from games.mahjong import CHOW, PUNG, Decomposition, decompositions, is_seven_pairs, parse_tiles
from games.mahjong.wincheck import is_standard_keys, suit_keys

SETS = [(PUNG, t) for t in range(27)] + [(CHOW, t) for t in range(27) if t % 9 <= 6]


def rebuild(d: Decomposition) -> list[int]:
    counts = [0] * 27
    counts[d.pair] += 2
    for kind, t in d.sets:
        assert kind in (PUNG, CHOW)
        for i in (t, t, t) if kind == PUNG else (t, t + 1, t + 2):
            counts[i] += 1
    return counts


def _built(sets: list[tuple[str, int]], pair: int) -> list[int]:
    return rebuild(Decomposition(pair, tuple(sets)))


wins = st.integers(0, 4).flatmap(
    lambda n: st.builds(
        _built, st.lists(st.sampled_from(SETS), min_size=n, max_size=n), st.integers(0, 26)
    )
).filter(lambda c: max(c) <= 4)
random_hands = st.lists(st.integers(0, 107), min_size=14, max_size=14, unique=True).map(
    lambda xs: [sum(1 for x in xs if x // 4 == t) for t in range(27)]
)


@settings(max_examples=500)
@given(st.one_of(wins, random_hands))
def test_every_decomposition_rebuilds_the_hand(counts: list[int]) -> None:
    found = decompositions(counts)
    for d in found:
        assert rebuild(d) == counts
        assert list(d.sets) == sorted(d.sets, key=lambda s: (s[1], s[0] == CHOW))
    assert len(set(found)) == len(found)
    # the search finds an arrangement exactly when the lookup tables see a standard shape
    assert bool(found) == is_standard_keys(*suit_keys(counts))


ONE_SUIT_SETS = [s for s in SETS if s[1] < 9]


@pytest.mark.parametrize("n", [1, 2, 3])
def test_no_arrangement_is_missed_in_one_suit(n: int) -> None:
    """Every multiset of n sets + pair in the 万 suit is found from the counts it makes."""
    for sets in combinations_with_replacement(ONE_SUIT_SETS, n):
        for pair in range(9):
            d = Decomposition(pair, tuple(sorted(sets, key=lambda s: (s[1], s[0] == CHOW))))
            counts = rebuild(d)
            if max(counts) <= 4:
                assert d in decompositions(counts)


def test_three_triplets_or_three_runs() -> None:
    found = set(decompositions(parse_tiles("111222333m55p")))
    assert found == {
        Decomposition(13, ((PUNG, 0), (PUNG, 1), (PUNG, 2))),
        Decomposition(13, ((CHOW, 0), (CHOW, 0), (CHOW, 0))),
    }


def test_seven_pairs_hand_also_decomposes() -> None:
    counts = parse_tiles("11223344556677m")
    assert is_seven_pairs(counts)
    pairs = sorted(d.pair for d in decompositions(counts))
    assert pairs == [0, 3, 6]  # 11 + 234x2 567x2, 44 + 123x2 567x2, 77 + 123x2 456x2


def test_seven_pairs_only_hand_has_no_decomposition() -> None:
    assert decompositions(parse_tiles("113355m224466p88s")) == []


def test_melded_hand_and_bad_totals() -> None:
    assert decompositions(parse_tiles("5557779m9m")) == [
        Decomposition(8, ((PUNG, 4), (PUNG, 6)))
    ]
    assert decompositions(parse_tiles("8p8p")) == [Decomposition(16, ())]
    assert decompositions(parse_tiles("123m")) == []
