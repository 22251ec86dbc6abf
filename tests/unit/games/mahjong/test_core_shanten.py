"""Shanten against its definition: a brute-force reference on small hands, the one-draw
recurrence on full-size hands, and its links to is_win and waits."""

from __future__ import annotations

from itertools import combinations_with_replacement

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from games.mahjong import is_win, parse_tiles, shanten, useful_tiles, waits

SETS = [(t, t, t) for t in range(27)] + [(t, t + 1, t + 2) for t in range(27) if t % 9 <= 6]


def _targets(n: int) -> list[list[tuple[int, int]]]:
    """Every winning hand of n sets + pair (no fifth copy), as (tile, count) items."""
    out = []
    for sets in combinations_with_replacement(SETS, n):
        for pair in range(27):
            tiles = [pair, pair] + [t for s in sets for t in s]
            items = [(t, tiles.count(t)) for t in set(tiles)]
            if all(c <= 4 for _, c in items):
                out.append(items)
    return out


TARGETS = {n: _targets(n) for n in range(3)}


def ref_shanten(counts: list[int]) -> int:
    """Fewest missing tiles over every winning hand of the right size, minus one."""
    n = sum(counts) // 3
    return min(sum(max(0, c - counts[t]) for t, c in w) for w in TARGETS[n]) - 1


def wall_hand(size: int) -> st.SearchStrategy[list[int]]:
    return st.lists(st.integers(0, 107), min_size=size, max_size=size, unique=True).map(
        lambda xs: [sum(1 for x in xs if x // 4 == t) for t in range(27)]
    )


def _built(sets: list[tuple[int, ...]], pair: int) -> list[int]:
    counts = [0] * 27
    for t in [pair, pair] + [t for s in sets for t in s]:
        counts[t] += 1
    return counts


def built_win(n: int) -> st.SearchStrategy[list[int]]:
    return st.builds(
        _built, st.lists(st.sampled_from(SETS), min_size=n, max_size=n), st.integers(0, 26)
    ).filter(lambda c: max(c) <= 4)


@st.composite
def near(draw: st.DrawFn, n: int, drop: int) -> list[int]:
    """A built win of n sets + pair with ``drop`` random tiles removed (0, 1 or 3)."""
    counts = draw(built_win(n))
    for _ in range(drop):
        counts[draw(st.sampled_from([t for t in range(27) if counts[t]]))] -= 1
    return counts


def plus(counts: list[int], t: int) -> list[int]:
    out = list(counts)
    out[t] += 1
    return out


def minus(counts: list[int], t: int) -> list[int]:
    out = list(counts)
    out[t] -= 1
    return out


small = st.sampled_from([1, 2, 4, 5, 7, 8]).flatmap(wall_hand) | st.sampled_from(
    [(0, 0), (0, 1), (1, 1), (1, 0), (2, 1), (2, 0), (2, 3)]
).flatmap(lambda nd: near(*nd))


@settings(max_examples=150, deadline=None)
@given(small)
def test_matches_brute_force_on_small_hands(counts: list[int]) -> None:
    assert shanten(counts) == ref_shanten(counts)


big = st.sampled_from([10, 11, 13, 14]).flatmap(wall_hand) | st.sampled_from(
    [(3, 1), (3, 0), (4, 1), (4, 0), (4, 3)]
).flatmap(lambda nd: near(*nd))


@settings(max_examples=300, deadline=None)
@given(big)
def test_one_draw_recurrence(counts: list[int]) -> None:
    """A 3n+1 hand is one more than its best draw; a 3n+2 hand that is not a win is as far as
    its best discard (each draw or discard moves the distance by at most one)."""
    s = shanten(counts)
    if sum(counts) % 3 == 1:
        assert s == 1 + min(shanten(plus(counts, t)) for t in range(27) if counts[t] < 4)
        assert (s == 0) == bool(waits(counts))
    else:
        assert (s == -1) == is_win(counts)
        if s >= 0:
            assert s == min(shanten(minus(counts, t)) for t in range(27) if counts[t])


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([2, 5, 8, 11, 14]).flatmap(wall_hand) | st.integers(0, 4).flatmap(built_win))
def test_minus_one_exactly_for_wins(counts: list[int]) -> None:
    assert (shanten(counts) == -1) == is_win(counts)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from([4, 7, 13]).flatmap(wall_hand) | near(4, 1))
def test_useful_tiles_are_the_draws_that_get_closer(counts: list[int]) -> None:
    s = shanten(counts)
    useful = useful_tiles(counts)
    for t in range(27):
        if counts[t] == 4:
            assert t not in useful
            continue
        drawn = plus(counts, t)
        if is_win(drawn):
            assert t in useful
        else:  # the drawn hand is as far as its best discard
            best = min(shanten(minus(drawn, d)) for d in range(27) if drawn[d])
            assert (t in useful) == (best < s)
    if s == 0:
        assert useful == waits(counts)


@pytest.mark.parametrize(
    "hand, expected",
    [
        ("1112345678999m", 0),  # nine gates
        ("11223344556677m", -1),
        ("1111m22p33p44p55p66p", -1),  # 龙七对
        ("1111m22p33p44p55p6p", 0),  # seven pairs waiting on 6p, quad as two pairs
        ("1111m234p567p789p", 1),  # 1m would be a fifth copy
        ("1111m", 1),
        ("1m", 0),
        ("5557779m", 0),  # after two pengs
        ("147m258p369s1479m", 3),
        ("1199m1199p1199s1m", 0),  # seven pairs' single wait
        ("159m159p159s1599m", 3),  # seven pairs: three pairs, four singles to pair
    ],
)
def test_hand_picked(hand: str, expected: int) -> None:
    assert shanten(parse_tiles(hand)) == expected


def test_useful_tiles_respect_held() -> None:
    counts = parse_tiles("23m55p")
    held = plus(plus(plus(plus(counts, 3), 3), 3), 3)  # a 4m kong elsewhere: all 4m seen
    assert useful_tiles(counts) == [0, 3]
    assert useful_tiles(counts, held) == [0]


@pytest.mark.parametrize("hand", ["", "123m", "111222333m444p55p6p"])
def test_rejects_impossible_totals(hand: str) -> None:
    with pytest.raises(ValueError):
        shanten(parse_tiles(hand))


def test_with_a_quad_held_a_lone_tile_can_be_the_pair() -> None:
    # 111m + three sets want a pair: the fourth 1m pairs with nothing, any other drawn tile
    # (5s, far from every held tile, too) is half of one
    assert useful_tiles(parse_tiles("1111m234p567p789p")) == list(range(1, 27))
