"""Tile notation round trips and errors."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from games.mahjong import (
    SUITS,
    format_counts,
    format_tiles,
    parse_tile_list,
    parse_tiles,
    rank_of,
    suit_of,
    tile_index,
    tile_name,
)

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
