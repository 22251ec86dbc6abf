"""Room ids (services/table/room_ids.py): the counter's permutation gives every id once, in
the 9-digit range, and its values are pinned (ids already given out came from them)."""

from __future__ import annotations

import io
import random

import pytest

from services.table.room_ids import (
    BLOCK,
    ID_LOW,
    MARGIN_BLOCKS,
    SPAN,
    main,
    next_after,
    permute,
    unpermute,
)


def test_every_counter_value_has_its_own_place_in_the_range() -> None:
    """``permute`` has an inverse, so it gives no place twice."""
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
    with pytest.raises(ValueError, match="out of range"):
        unpermute(c)


def test_the_counter_set_again_from_records_gives_none_of_their_ids_again() -> None:
    """A lost counter is set from the room ids known (docs/runbooks.md): the value starts
    the block after the latest of them, past the blocks running tables may hold unused;
    8-digit ids of earlier releases do not count."""
    given = [ID_LOW + permute(c) for c in range(3 * BLOCK + 5)]
    after = next_after([*random.Random(3).sample(given, len(given)), 12_345_678])
    assert after == (4 + MARGIN_BLOCKS) * BLOCK
    assert not {ID_LOW + permute(c) for c in range(after, after + 5 * BLOCK)} & set(given)
    assert next_after([]) == next_after([12_345_678]) == 0


def test_next_after_reads_ids_from_stdin(monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    ids = [ID_LOW + permute(c) for c in (0, 7)]
    # SETTLE's subjects as `nats stream subjects SETTLE --names` lists them: an earlier
    # release's, one per room, and today's one for all
    lines = [*(f"{i}\n" for i in ids), f"settle.{ID_LOW + permute(40)}\n", "settle.all\n",
             "\n"]
    monkeypatch.setattr("sys.stdin", io.StringIO("".join(lines)))
    assert main(["next-after"]) == 0
    assert capsys.readouterr().out == f"{(2 + MARGIN_BLOCKS) * BLOCK}\n"
    monkeypatch.setattr("sys.stdin", io.StringIO(f"{ids[0]}\nroom twelve\n"))
    assert main(["next-after"]) == 1
    assert "line 2: not a room id" in capsys.readouterr().err
    assert main([]) == 2
    assert "usage" in capsys.readouterr().err
