"""Room ids (services/table/room_ids.py): the counter's permutation gives every id once, in
the 9-digit range, and its values are pinned (ids already given out came from them)."""

from __future__ import annotations

import random

import pytest

from services.table.room_ids import (
    _HALF_BITS,
    _HALF_MASK,
    _ROUND_KEYS,
    ID_LOW,
    SPAN,
    _round,
    permute,
)


def _unfeistel(y: int) -> int:
    left, right = y >> _HALF_BITS, y & _HALF_MASK
    for key in reversed(_ROUND_KEYS):
        left, right = right ^ _round(key, left), left
    return left << _HALF_BITS | right


def unpermute(x: int) -> int:
    """The inverse, walked back the same way: it exists, so ``permute`` gives no id twice."""
    y = _unfeistel(x)
    while y >= SPAN:
        y = _unfeistel(y)
    return y


def test_every_counter_value_has_its_own_place_in_the_range() -> None:
    rng = random.Random(7)
    values = [0, 1, 2, SPAN // 2, SPAN - 2, SPAN - 1, *(rng.randrange(SPAN) for _ in range(5000))]
    for c in values:
        x = permute(c)
        assert 0 <= x < SPAN
        assert unpermute(x) == c
    first = [permute(c) for c in range(20_000)]
    assert len(set(first)) == len(first)


def test_ids_are_nine_digits_and_rooms_made_in_a_row_are_not_neighbours() -> None:
    ids = [ID_LOW + permute(c) for c in range(1000)]
    assert all(len(str(i)) == 9 for i in ids)
    assert not [a for a, b in zip(ids, ids[1:], strict=False) if abs(a - b) < 1000]


def test_the_permutation_is_pinned() -> None:
    """Changing the constants would give again ids already given out: these stay."""
    assert [permute(c) for c in range(5)] == [99760324, 497699549, 529631900, 129920287,
                                              692050441]
    assert permute(SPAN - 1) == 18588194


@pytest.mark.parametrize("c", [-1, SPAN])
def test_a_counter_value_outside_the_range_is_refused(c: int) -> None:
    with pytest.raises(ValueError, match="out of range"):
        permute(c)
