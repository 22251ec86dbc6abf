"""Tile notation round trips and errors; Hand keeps its suit keys in step with its counts."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from games.mahjong import (
    SUITS,
    Hand,
    format_counts,
    format_tiles,
    is_win,
    parse_tile_list,
    parse_tiles,
    rank_of,
    suit_of,
    tile_index,
    tile_name,
)
from games.mahjong.wincheck import suit_keys

# Any multiset of tiles from a real 108-tile set: 4 copies of each of the 27 kinds.
hands = st.lists(st.integers(0, 107), max_size=14, unique=True).map(
    lambda xs: [sum(1 for x in xs if x // 4 == t) for t in range(27)]
)


def test_index_layout_matches_the_spec() -> None:
    assert [tile_index(n) for n in ("1m", "9m", "1p", "9p", "1s", "9s")] == [0, 8, 9, 17, 18, 26]
    assert SUITS == "mps"
    assert [(suit_of(i), rank_of(i)) for i in (0, 8, 9, 17, 18, 26)] == [
        (0, 1), (0, 9), (1, 1), (1, 9), (2, 1), (2, 9),
    ]


@pytest.mark.parametrize("i", range(27))
def test_name_round_trip(i: int) -> None:
    name = tile_name(i)
    assert name[1] == SUITS[suit_of(i)] and int(name[0]) == rank_of(i)
    assert tile_index(name) == i


def test_parse_examples() -> None:
    counts = parse_tiles("123m55p")
    assert sum(counts) == 5 and counts[0] == counts[1] == counts[2] == 1 and counts[13] == 2
    assert parse_tile_list("1123m") == [0, 0, 1, 2]
    assert parse_tile_list("9s1m") == [26, 0]
    assert format_counts([0] * 27) == ""
    assert format_tiles([26, 0, 9, 0]) == "11m1p9s"


@given(hands)
def test_counts_round_trip(counts: list[int]) -> None:
    text = format_counts(counts)
    assert parse_tiles(text) == counts
    assert format_tiles(parse_tile_list(text)) == text


@pytest.mark.parametrize(
    "bad, fragment",
    [
        ("123", "no suit"),
        ("m", "no ranks"),
        ("0m", "unexpected '0'"),
        ("12x", "unexpected 'x'"),
        ("1z", "unexpected 'z'"),
        ("11111m", "more than 4 copies of 1m"),
    ],
)
def test_parse_errors(bad: str, fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment):
        parse_tiles(bad)


@pytest.mark.parametrize("bad", ["", "5", "0m", "10m", "5z", "m5", "5mm", 5])
def test_tile_index_rejects(bad: object) -> None:
    with pytest.raises(ValueError):
        tile_index(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [-1, 27])
def test_tile_name_rejects(bad: int) -> None:
    with pytest.raises(ValueError):
        tile_name(bad)


def _check(hand: Hand) -> None:
    assert hand.keys == list(suit_keys(hand.counts))
    assert hand.total == sum(hand.counts)
    assert hand.is_win() == is_win(hand.counts)


@settings(max_examples=200)
@given(hands, st.lists(st.tuples(st.booleans(), st.integers(0, 26)), max_size=40))
def test_hand_keys_follow_add_and_remove(start: list[int], ops: list[tuple[bool, int]]) -> None:
    hand = Hand.from_counts(start)
    _check(hand)
    for adding, t in ops:
        before = hand.counts.copy()
        allowed = hand.counts[t] < 4 if adding else hand.counts[t] > 0
        if allowed:
            (hand.add if adding else hand.remove)(t)
            assert hand.counts[t] == before[t] + (1 if adding else -1)
        else:
            with pytest.raises(ValueError):
                (hand.add if adding else hand.remove)(t)
            assert hand.counts == before
        _check(hand)


def test_hand_copy_is_independent() -> None:
    hand = Hand.from_counts(parse_tiles("123m"))
    twin = hand.copy()
    twin.add(3)
    assert format_counts(hand.counts) == "123m" and hand.total == 3
    assert format_counts(twin.counts) == "1234m" and twin.keys != hand.keys


def test_hand_from_counts_rejects_bad_counts() -> None:
    with pytest.raises(ValueError):
        Hand.from_counts([5] + [0] * 26)
    with pytest.raises(ValueError):
        Hand.from_counts([0] * 26)
