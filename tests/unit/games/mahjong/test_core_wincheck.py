"""The table-based win check against the `mahjong` package and a plain recursive reference."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from mahjong.agari import Agari

from games.mahjong import is_seven_pairs, is_win, parse_tiles, waits
from games.mahjong.wincheck import is_win_keys, suit_keys

AGARI = Agari()


def ref_standard(counts: list[int]) -> bool:
    """n sets + one pair, by plain search: a pair anywhere, then the lowest tile starts a set."""

    def sets_only(c: list[int]) -> bool:
        t = next((i for i in range(27) if c[i]), None)
        if t is None:
            return True
        if c[t] >= 3:
            c[t] -= 3
            ok = sets_only(c)
            c[t] += 3
            if ok:
                return True
        if t % 9 <= 6 and c[t + 1] and c[t + 2]:
            for i in (t, t + 1, t + 2):
                c[i] -= 1
            ok = sets_only(c)
            for i in (t, t + 1, t + 2):
                c[i] += 1
            return ok
        return False

    if sum(counts) % 3 != 2:
        return False
    c = list(counts)
    for p in range(27):
        if c[p] >= 2:
            c[p] -= 2
            if sets_only(c):
                return True
            c[p] += 2
    return False


def ref_win(counts: list[int]) -> bool:
    seven = sum(counts) == 14 and all(x % 2 == 0 for x in counts)
    return seven or (sum(counts) <= 14 and ref_standard(counts))


def counts_from(tiles: list[int]) -> list[int]:
    return [tiles.count(t) for t in range(27)]


def _copies(limit: int) -> st.SearchStrategy[list[int]]:
    """Random 14-tile hands with at most ``limit`` copies of a tile (draws from a set that
    holds ``limit`` of each)."""
    return st.lists(
        st.integers(0, 27 * limit - 1), min_size=14, max_size=14, unique=True
    ).map(lambda xs: counts_from([x // limit for x in xs]))


SETS = [("pung", t) for t in range(27)] + [("chow", t) for t in range(27) if t % 9 <= 6]


def _build(sets: list[tuple[str, int]], pair: int) -> list[int]:
    counts = [0] * 27
    counts[pair] += 2
    for kind, t in sets:
        for i in (t, t, t) if kind == "pung" else (t, t + 1, t + 2):
            counts[i] += 1
    return counts


def _wins(n: int, limit: int) -> st.SearchStrategy[list[int]]:
    """Winning hands built from n random sets and a pair, at most ``limit`` copies."""
    return st.builds(
        _build, st.lists(st.sampled_from(SETS), min_size=n, max_size=n), st.integers(0, 26)
    ).filter(lambda c: max(c) <= limit)


@st.composite
def _near_wins(draw: st.DrawFn, limit: int) -> list[int]:
    """A built win with one tile swapped for another: mostly not a win, often close."""
    counts = draw(_wins(4, limit))
    out = draw(st.sampled_from([t for t in range(27) if counts[t]]))
    into = draw(st.sampled_from([t for t in range(27) if counts[t] < limit and t != out]))
    counts[out] -= 1
    counts[into] += 1
    return counts


def _pairs(unique: bool) -> st.SearchStrategy[list[int]]:
    """Seven pairs; with ``unique=False`` a tile may give two pairs (a quad)."""
    return st.lists(st.integers(0, 26), min_size=7, max_size=7, unique=unique).map(
        lambda ts: [2 * ts.count(t) for t in range(27)]
    ).filter(lambda c: max(c) <= 4)


no_quads = st.one_of(_copies(3), _wins(4, 3), _near_wins(3), _pairs(True))
any_hand = st.one_of(_copies(4), _wins(4, 4), _near_wins(4), _pairs(False))


@settings(max_examples=1500)
@given(no_quads)
@example(parse_tiles("11223344556677m"))
@example(parse_tiles("113355m224466p88s"))
def test_is_win_agrees_with_mahjong_package(counts: list[int]) -> None:
    assert is_win(counts) == AGARI.is_agari(counts + [0] * 7)


@settings(max_examples=1000)
@given(any_hand)
def test_is_win_agrees_with_reference_with_quads(counts: list[int]) -> None:
    assert is_win(counts) == ref_win(counts)
    assert is_win_keys(*suit_keys(counts)) == is_win(counts)


@settings(max_examples=300)
@given(st.integers(0, 3).flatmap(lambda n: _wins(n, 4)))
def test_built_wins_with_melds_win(counts: list[int]) -> None:
    assert is_win(counts)


@settings(max_examples=500)
@given(st.sampled_from([1, 4, 7, 10, 13]).flatmap(
    lambda k: st.lists(st.integers(0, 107), min_size=k, max_size=k, unique=True)
))
def test_waits_are_exactly_the_winning_tiles(wall_ids: list[int]) -> None:
    counts = counts_from([x // 4 for x in wall_ids])
    expected = [
        t for t in range(27)
        if counts[t] < 4 and ref_win([c + (i == t) for i, c in enumerate(counts)])
    ]
    assert waits(counts) == expected


@pytest.mark.parametrize(
    "hand",
    [
        "111222333m55p",
        "11223344556677m",  # seven pairs and a standard win
        "1111m22p33p44p55p66p",  # a quad counts as two pairs
        "1111335m224466p5m",  # 龙七对 (XZ-05)
        "123456789m234p5p5p",  # XZ-01
        "5557779m9m",  # 5 concealed tiles after two pengs (XZ-08)
        "8p8p",  # 金钩钓: only the pair left (XZ-09)
        "11m",
        "123m11p",
    ],
)
def test_wins(hand: str) -> None:
    assert is_win(parse_tiles(hand))


@pytest.mark.parametrize(
    "hand",
    [
        "",
        "1m",
        "111m",  # sets without a pair
        "1111m",  # a quad alone is no pair + set
        "11m22p",  # two pairs is not a 4-tile win (and 4 is no concealed total)
        "1122m",
        "123m456p789s11s22s",  # 15 tiles
        "1122334455667m8m",  # 14 tiles, no shape
        "11112222m33334444p",  # eight pairs: 16 tiles
        "11122233344455566m",  # 17 tiles: five sets + pair is too many
    ],
)
def test_not_wins(hand: str) -> None:
    assert not is_win(parse_tiles(hand))


def test_seven_pairs() -> None:
    assert is_seven_pairs(parse_tiles("11223344556677m"))
    assert is_seven_pairs(parse_tiles("1111m22p33p44p55p66p"))
    assert is_seven_pairs(parse_tiles("111122223333m44p"))  # three quads
    assert not is_seven_pairs(parse_tiles("11112222m33334444p"))  # 16 tiles
    assert not is_seven_pairs(parse_tiles("111222333m55p"))
    assert not is_seven_pairs(parse_tiles("112233445566m"))  # six pairs


def test_waits_respect_held_tiles() -> None:
    counts = parse_tiles("1112345678999m")  # nine gates: waits on every 万
    assert waits(counts) == list(range(9))
    held = list(counts)
    held[4] = 4  # the player has 5m in a meld... all four copies seen by him
    assert waits(counts, held) == [0, 1, 2, 3, 5, 6, 7, 8]
    # a wait on the fifth copy of a tile the hand already holds four of is no wait
    assert waits(parse_tiles("1111m234p567p789p")) == []
