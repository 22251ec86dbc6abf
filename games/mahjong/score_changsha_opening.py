"""Changsha opening wins (起手胡), declared on the dealt hand before the dealer's first
discard (§B3 of ../shared/rules/mahjong.md). Each one found scores as a small hu self-draw
(X = 2 from every other player); the hand then goes on."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from games.engine import BadInput
from games.mahjong.score_changsha import changsha_options
from games.mahjong.tiles import rank_of, suit_of


def changsha_opening_hu(counts: Sequence[int], options: Mapping[str, Any]) -> tuple[str, ...]:
    """The opening wins of a dealt hand (13 tiles, or 14 for the dealer), in the order of
    the rules table, among the room's ``opening_hu_types``. A type counts once; with
    ``opening_hu_repeat = count_repeats`` 大四喜 repeats per quad and 六六顺 per two triplets."""
    if len(counts) != 27 or not all(isinstance(c, int) and 0 <= c <= 4 for c in counts):
        raise BadInput("counts must be 27 tile counts of 0..4")
    if sum(counts) not in (13, 14):
        raise BadInput(f"an opening hand holds 13 or 14 tiles, got {sum(counts)}")
    opts = changsha_options(options)
    repeat = opts["opening_hu_repeat"] == "count_repeats"
    held = [tile for tile, count in enumerate(counts) if count]
    quads = sum(1 for count in counts if count == 4)
    triplets = sum(1 for count in counts if count >= 3)
    found = {
        "opening_four": quads if repeat else min(quads, 1),
        "opening_no_258": int(all(rank_of(t) not in (2, 5, 8) for t in held)),
        "opening_missing_suit": int(len({suit_of(t) for t in held}) < 3),
        "opening_two_triplets": triplets // 2 if repeat else int(triplets >= 2),
    }
    return tuple(name for name in opts["opening_hu_types"] for _ in range(found[name]))
