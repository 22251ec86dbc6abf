"""Changsha opening wins (起手胡), declared on the dealt hand before the dealer's first
discard (§B3 of ../shared/rules/mahjong.md), and their optional during-play forms
(中途四喜 / 中途六六顺). Each one found scores as a small hu self-draw (X = 2 from every
other player); the hand then goes on.

The optional regional types are read as follows (the rules say only "rules vary" for
一枝花):

* 节节高 ``opening_step_pairs``: pairs of three consecutive ranks in one suit (223344m).
* 三同 ``opening_same_rank_pairs``: a pair of the same rank in each suit (22m 22p 22s).
* 一枝花 ``opening_one_flower``: the hand holds exactly one tile of rank 2, 5 or 8 (将),
  and that tile is a 5.
* 中途四喜 ``midway_four``: during play, on his turn, a player holds four of a tile in his
  concealed hand that he has not shown as a 大四喜 / 中途四喜 yet.
* 中途六六顺 ``midway_two_triplets``: during play, on his turn, two concealed triplets (a
  quad qualifies), at least one of them not shown in an earlier 六六顺.

A type counts once per hand; with ``opening_hu_repeat = count_repeats`` every disjoint
occurrence counts (a quad, two triplets, a run of three pairs, a rank paired in all suits).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from games.engine import BadInput
from games.mahjong.score_changsha import changsha_options
from games.mahjong.tiles import rank_of, suit_of


def changsha_opening_hu(counts: Sequence[int], options: Mapping[str, Any]) -> tuple[str, ...]:
    """The opening wins of a dealt hand (13 tiles, or 14 for the dealer), in the order of
    the rules table, among the room's ``opening_hu_types`` (the midway types are never
    found here: they are declared during play)."""
    if len(counts) != 27 or not all(isinstance(c, int) and 0 <= c <= 4 for c in counts):
        raise BadInput("counts must be 27 tile counts of 0..4")
    if sum(counts) not in (13, 14):
        raise BadInput(f"an opening hand holds 13 or 14 tiles, got {sum(counts)}")
    opts = changsha_options(options)
    repeat = opts["opening_hu_repeat"] == "count_repeats"
    held = [tile for tile, count in enumerate(counts) if count]
    quads = sum(1 for count in counts if count == 4)
    triplets = sum(1 for count in counts if count >= 3)
    jiang = [t for t in held for _ in range(counts[t]) if rank_of(t) in (2, 5, 8)]
    found = {
        "opening_four": quads if repeat else min(quads, 1),
        "opening_no_258": int(not jiang),
        "opening_missing_suit": int(len({suit_of(t) for t in held}) < 3),
        "opening_two_triplets": triplets // 2 if repeat else int(triplets >= 2),
        "opening_step_pairs": _limit(len(step_pair_runs(counts)), repeat),
        "opening_same_rank_pairs": _limit(len(same_rank_pairs(counts)), repeat),
        "opening_one_flower": int(len(jiang) == 1 and rank_of(jiang[0]) == 5),
    }
    return tuple(name for name in opts["opening_hu_types"] for _ in range(found.get(name, 0)))


def _limit(count: int, repeat: bool) -> int:
    return count if repeat else min(count, 1)


def step_pair_runs(counts: Sequence[int]) -> list[int]:
    """Disjoint 节节高 runs (the lowest tile of each): three consecutive ranks of one suit
    with a pair each, taken greedily from the lowest rank (which finds the most runs)."""
    pairs = [count // 2 for count in counts]
    runs = []
    for suit in range(3):
        for rank in range(7):
            t = 9 * suit + rank
            while pairs[t] and pairs[t + 1] and pairs[t + 2]:
                for k in range(3):
                    pairs[t + k] -= 1
                runs.append(t)
    return runs


def same_rank_pairs(counts: Sequence[int]) -> list[int]:
    """三同 occurrences (the 1..9 rank index 0..8 of each): a rank paired in all three suits;
    a rank held four times in every suit counts twice."""
    out = []
    for rank in range(9):
        out += [rank] * min(counts[rank] // 2, counts[9 + rank] // 2, counts[18 + rank] // 2)
    return out


def opening_shown_tiles(counts: Sequence[int], types: Sequence[str]) -> list[int]:
    """The tiles a seat shows for the opening types it declared: the whole hand for 板板胡,
    缺一色 and 一枝花 (they are about every tile), else the quads, triplets and pairs of the
    declared types (one occurrence per time a type is listed)."""
    whole = [t for t in range(27) for _ in range(counts[t])]
    if any(t in ("opening_no_258", "opening_missing_suit", "opening_one_flower") for t in types):
        return whole
    shown: list[int] = []
    for quad in shown_quads(counts, types):
        shown += [quad] * 4
    for triplet in shown_triplets(counts, types):
        shown += [triplet] * 3
    for low in step_pair_runs(counts)[: types.count("opening_step_pairs")]:
        shown += [low, low, low + 1, low + 1, low + 2, low + 2]
    for rank in same_rank_pairs(counts)[: types.count("opening_same_rank_pairs")]:
        shown += [rank, rank, 9 + rank, 9 + rank, 18 + rank, 18 + rank]
    return sorted(shown)


def shown_quads(counts: Sequence[int], types: Sequence[str]) -> list[int]:
    """The quads shown for the 大四喜 entries of ``types`` (lowest tiles first)."""
    return [t for t in range(27) if counts[t] == 4][: types.count("opening_four")]


def shown_triplets(counts: Sequence[int], types: Sequence[str]) -> list[int]:
    """The triplets shown for the 六六顺 entries of ``types`` (two each, lowest first)."""
    return [t for t in range(27) if counts[t] >= 3][: 2 * types.count("opening_two_triplets")]


def changsha_midway_hu(
    counts: Sequence[int],
    options: Mapping[str, Any],
    declared: Iterable[tuple[str, Sequence[int]]],
    shown_fours: Iterable[int] = (),
    shown_threes: Iterable[int] = (),
    *,
    checked: bool = False,
) -> list[tuple[str, tuple[int, ...]]]:
    """The during-play wins open to a seat on its turn: ``(type, tiles)`` with one tile (the
    quad of 中途四喜) or two (the triplets of 中途六六顺). ``declared`` lists the seat's
    earlier midway wins, ``shown_fours`` / ``shown_threes`` what it showed at the
    opening. Only types among the room's ``opening_hu_types`` are offered. ``checked``:
    ``options`` are a hand's already validated options (no second validation per turn)."""
    opts = options if checked else changsha_options(options)
    types = opts["opening_hu_types"]
    repeat = opts["opening_hu_repeat"] == "count_repeats"
    done = list(declared)
    out: list[tuple[str, tuple[int, ...]]] = []
    if "midway_four" in types and (repeat or all(kind != "midway_four" for kind, _ in done)):
        used = set(shown_fours) | {tiles[0] for kind, tiles in done if kind == "midway_four"}
        out += [("midway_four", (t,)) for t in range(27) if counts[t] == 4 and t not in used]
    if "midway_two_triplets" in types and (
        repeat or all(kind != "midway_two_triplets" for kind, _ in done)
    ):
        used = set(shown_threes)
        for kind, tiles in done:
            if kind == "midway_two_triplets":
                used.update(tiles)
        held = [t for t in range(27) if counts[t] >= 3]
        out += [("midway_two_triplets", (a, b)) for i, a in enumerate(held) for b in held[i + 1:]
                if a not in used or b not in used]
    return out
