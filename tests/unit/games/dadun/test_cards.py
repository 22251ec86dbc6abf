"""Dadun card codes, notation, points and seed-compatible wire ids (rules/dadun.md §1)."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from games.dadun.cards import (
    BJ,
    RANKS,
    SJ,
    SUITS,
    card_name,
    counts_of,
    format_cards,
    from_wire_id,
    full_deck,
    is_red,
    parse_card,
    parse_cards,
    point_value,
    rank_of,
    suit_of,
    to_wire_id,
)


def test_constants_and_code_layout():
    assert RANKS == "3456789TJQKA2"
    assert SUITS == "shcd"
    assert (SJ, BJ) == (52, 53)
    assert parse_card("3s") == 0
    assert parse_card("Th") == 7 * 4 + 1
    assert parse_card("2d") == 51


@pytest.mark.parametrize(
    ("text", "rank", "suit", "red"),
    [("3s", 0, 0, False), ("Th", 7, 1, True), ("Kc", 10, 2, False), ("Ad", 11, 3, True),
     ("2h", 12, 1, True), ("SJ", 13, None, False), ("BJ", 14, None, False)],
)
def test_rank_suit_colour(text, rank, suit, red):
    code = parse_card(text)
    assert rank_of(code) == rank
    assert suit_of(code) == suit
    assert is_red(code) is red
    assert card_name(code) == text


def test_parse_and_format_cards_sorted_by_rank_then_suit():
    codes = parse_cards("Ks 5h  Td SJ 5s")
    assert [card_name(c) for c in codes] == ["Ks", "5h", "Td", "SJ", "5s"]
    assert format_cards(codes) == "5s 5h Td Ks SJ"
    assert parse_cards("") == []


@pytest.mark.parametrize("bad", ["1h", "Tx", "10h", "th", "S", "sj", "Th,"])
def test_parse_rejects_bad_text_with_a_clear_message(bad):
    with pytest.raises(ValueError, match="bad card"):
        parse_cards(f"5h {bad}")


def test_card_name_rejects_bad_codes():
    for bad in (-1, 54, True):
        with pytest.raises(ValueError):
            card_name(bad)


def test_point_values():
    assert point_value(parse_cards("5h Td Ks")) == 25
    assert point_value(parse_cards("4h 6d Qs Ah 2c SJ BJ")) == 0
    assert point_value(full_deck()) == 200


def test_full_deck_has_two_copies_of_each_of_54_codes():
    deck = full_deck()
    assert len(deck) == 108
    assert set(Counter(deck).values()) == {2}
    assert sorted(set(deck)) == list(range(54))
    assert counts_of(deck) == [2] * 54


def test_counts_of():
    counts = counts_of(parse_cards("5h 5h SJ"))
    assert counts[parse_card("5h")] == 2 and counts[SJ] == 1 and sum(counts) == 3


@pytest.mark.parametrize(
    ("text", "wire"),
    [("3d", 3), ("Ad", 14), ("2d", 15), ("3c", 23), ("3h", 43), ("Kh", 53),
     ("3s", 63), ("2s", 75), ("SJ", 83), ("BJ", 84)],
)
def test_wire_ids_follow_the_seed_client(text, wire):
    assert to_wire_id(parse_card(text)) == wire
    assert from_wire_id(wire) == parse_card(text)


@given(st.integers(min_value=0, max_value=53))
def test_wire_id_round_trip(code):
    assert from_wire_id(to_wire_id(code)) == code


def test_wire_ids_are_distinct_and_bad_ids_rejected():
    ids = {to_wire_id(c) for c in range(54)}
    assert len(ids) == 54
    for bad in (0, 2, 16, 19, 80, 82, 85, -3):
        with pytest.raises(ValueError):
            from_wire_id(bad)
