"""Shanten (向听数): how far a concealed hand is from winning, and the tiles that help.

The definition is exact: for a hand H whose concealed part needs n sets and a pair
(n = total // 3, fewer when melds are declared), shanten is the least number of tiles H lacks
from some winning hand W of n sets + pair (or, for 13/14 tiles, seven pairs, a quad counting
as two pairs), minus one; W never holds a fifth copy of a tile. So -1 means a win, and a
13-tile hand has shanten 0 exactly when it has a wait.

Each suit is solved once by a small dynamic programme over its nine ranks (how many tiles of
H the best arrangement of m sets, with or without the pair, can reuse) and memoised by its
suit key; a hand then combines three cached suit rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from games.mahjong.tiles import COPIES
from games.mahjong.wincheck import KEY_STEP, MAX_SETS, suit_keys

_ROW = MAX_SETS + 1  # a suit row: cost[pair * _ROW + sets]
_INF = 99


def _state(a: int, b: int, m: int, p: int) -> int:
    """DP state: runs started on the rank before (a) and two ranks before (b), sets so far
    (m), pair taken (p)."""
    return ((a * (COPIES + 1) + b) * _ROW + m) * 2 + p


_STATES = (COPIES + 1) ** 2 * _ROW * 2
# Three equal runs use the same tiles as three triplets (and four as three triplets + a run),
# so at most two runs start on a rank without losing any arrangement.
_MAX_RUNS = 2


def _transitions(runs_allowed: bool) -> list[list[tuple[int, int]]]:
    """For each state: (next state, tiles the arrangement uses on this rank) per choice of
    new runs, triplet and pair on the rank; no rank above four copies, at most four sets."""
    table: list[list[tuple[int, int]]] = [[] for _ in range(_STATES)]
    for a in range(COPIES + 1):
        for b in range(COPIES + 1 - a):
            for m in range(MAX_SETS + 1):
                for p in (0, 1):
                    moves = table[_state(a, b, m, p)]
                    for runs in range(_MAX_RUNS + 1) if runs_allowed else (0,):
                        for pung in (0, 1):
                            for pair in (0,) if p else (0, 1):
                                used = a + b + runs + 3 * pung + 2 * pair
                                sets = m + runs + pung
                                if used <= COPIES and sets <= MAX_SETS:
                                    moves.append((_state(runs, a, sets, p + pair), used))
    return table


def _rank_moves() -> list[list[list[tuple[int, int]]]]:
    """Per rank, per tiles used on that rank (0..4): the (state, next state) moves from
    the states reachable at that rank. Grouping by tiles used lets the DP add one gain per
    group; keeping only reachable states keeps the inner loop short."""
    inner, last = _transitions(True), _transitions(False)  # ranks 8 and 9 start no run
    live = {_state(0, 0, 0, 0)}
    out = []
    for r in range(9):
        groups: list[list[tuple[int, int]]] = [[] for _ in range(COPIES + 1)]
        for src in sorted(live):
            for dst, used in (inner if r < 7 else last)[src]:
                groups[used].append((src, dst))
        live = {dst for group in groups for _, dst in group}
        out.append(groups)
    return out


# The DP's moves per rank (input of :func:`reuse_by_state`), and its end states: (state,
# sets made, pair made) for every state with no run left open. Public for the Changsha bot,
# which runs the same DP with the pair restricted to 2/5/8 (games.bots.mahjong).
RANK_MOVES = _rank_moves()
FINAL_STATES = [(st, (st // 2) % _ROW, st % 2) for st in range(_STATES)
                if st // (2 * _ROW) == 0]


def reuse_by_state(ranks: bytes, rank_moves: list[list[list[tuple[int, int]]]]) -> list[int]:
    """The DP over one suit's nine ranks (``ranks``: the counts): for each end state, the
    most tiles of the suit an arrangement reuses (negative: unreachable). ``rank_moves`` is
    ``RANK_MOVES`` or a restriction of it (e.g. the pair only on some ranks)."""
    best = [-_INF] * _STATES
    best[0] = 0
    for groups, have in zip(rank_moves, ranks, strict=True):
        nxt = [-_INF] * _STATES
        for used, moves in enumerate(groups):
            gain = used if used < have else have
            for src, dst in moves:
                v = best[src] + gain
                if nxt[dst] < v:
                    nxt[dst] = v
        best = nxt
    return best


@lru_cache(maxsize=1 << 17)
def suit_costs(key: int) -> tuple[int, ...]:
    """For one suit key: ``cost[pair * 5 + m]`` = fewest tiles to add so that the suit holds
    m sets (plus the pair if ``pair``), tiles of H that do not fit being thrown away.
    A suit read from 9 down to 1 costs the same, so a key and its mirror share one DP run."""
    ranks = key.to_bytes(9, "little")
    mirror = int.from_bytes(ranks, "big")
    if mirror < key:
        return suit_costs(mirror)
    best = reuse_by_state(ranks, RANK_MOVES)
    cost = [_INF] * (2 * _ROW)
    for state, m, p in FINAL_STATES:
        if best[state] >= 0:
            cost[p * _ROW + m] = min(cost[p * _ROW + m], 3 * m + 2 * p - best[state])
    return tuple(cost)


def _standard(rows: Sequence[Sequence[int]], sets: int) -> int:
    """Fewest tiles to add for ``sets`` sets + one pair over the three suits' rows
    (:func:`suit_costs`)."""
    return _with_rest(rows[0], _combine(rows[1], rows[2], sets), sets)


def _combine(a: Sequence[int], b: Sequence[int], sets: int) -> tuple[list[int], list[int]]:
    """Two suits' rows as one: for m = 0..sets, the fewest tiles to add for m sets over both
    without the pair, and with it (in either suit)."""
    plain, paired = [_INF] * (sets + 1), [_INF] * (sets + 1)
    for i in range(sets + 1):
        ai, ap = a[i], a[_ROW + i]
        for j in range(sets + 1 - i):
            bj = b[j]
            v = ai + bj
            if v < plain[i + j]:
                plain[i + j] = v
            v = ap + bj
            w = ai + b[_ROW + j]
            if w < v:
                v = w
            if v < paired[i + j]:
                paired[i + j] = v
    return plain, paired


def _with_rest(row: Sequence[int], rest: tuple[list[int], list[int]], sets: int) -> int:
    """The fewest tiles to add for ``sets`` sets + a pair: one suit's ``row`` against the
    other two combined (:func:`_combine`), the pair in this suit or in the rest."""
    plain, paired = rest
    best = _INF
    for m in range(sets + 1):
        v = row[_ROW + m] + plain[sets - m]
        if v < best:
            best = v
        v = row[m] + paired[sets - m]
        if v < best:
            best = v
    return best


def _seven_pairs(pairs: int, singles: int) -> int:
    """Fewest tiles to add for seven pairs, from the pairs held (a quad is two) and the kinds
    held an odd number of times."""
    missing = 7 - pairs
    if missing <= 0:
        return 0
    return missing if singles >= missing else singles + 2 * (missing - singles)


def _pairs_singles(counts: Sequence[int]) -> tuple[int, int]:
    return sum(c // 2 for c in counts), sum(c & 1 for c in counts)


def shanten(counts: Sequence[int]) -> int:
    """Shanten of a concealed hand (1, 2, 4, 5, ..., 13, 14 tiles): -1 complete, 0 ready."""
    total = sum(counts)
    if total % 3 == 0 or total > 14:
        raise ValueError(f"a concealed hand has 3n+1 or 3n+2 tiles (at most 14), not {total}")
    need = _standard([suit_costs(k) for k in suit_keys(counts)], total // 3)
    if total >= 13:
        need = min(need, _seven_pairs(*_pairs_singles(counts)))
    return need - 1


def useful_tiles(counts: Sequence[int], held: Sequence[int] | None = None) -> list[int]:
    """Tiles (有效牌) whose draw lowers the shanten of a 3n+1-tile hand, skipping t when
    ``held[t] >= 4`` (``held``: hand and melds, default ``counts``).

    Adding a tile lowers each entry of its suit's :func:`suit_costs` row by one at most
    and leaves the other suits as they are. So a draw lowers the standard shape's need
    exactly when it lowers an entry whose split is tight: that suit's cost for m sets (with
    or without the pair) plus the other two suits' best for the rest equals the need now.
    Which ranks do that depends only on the suit key and its tight entries, and is cached
    (:func:`_lowering`). Seven pairs gains from a draw of a kind held once or three times
    (a pair, or a quad counting as two)."""
    total = sum(counts)
    if total % 3 != 1 or total > 13:
        raise ValueError(f"useful tiles need a 3n+1-tile hand (1, 4, ..., 13), not {total}")
    held = counts if held is None else held
    sets = total // 3
    keys = suit_keys(counts)
    rows = [suit_costs(k) for k in keys]
    standard = now = _standard(rows, sets)
    seven = total == 13
    if seven:
        pairs, singles = _pairs_singles(counts)
        now = min(now, _seven_pairs(pairs, singles))
    found: set[int] = set()
    if standard == now:   # else the standard shape stays behind seven pairs after any draw
        for suit, row in enumerate(rows):
            a, b = (rows[s] for s in range(3) if s != suit)
            plain, paired = _combine(a, b, sets)
            tight = 0
            for m in range(sets + 1):
                if row[_ROW + m] + plain[sets - m] == now:
                    tight |= 1 << (_ROW + m)
                if row[m] + paired[sets - m] == now:
                    tight |= 1 << m
            if tight:
                found.update(9 * suit + r for r in _lowering(keys[suit], tight))
    if seven and _seven_pairs(pairs + 1, singles - 1) < now:
        found.update(t for t, c in enumerate(counts) if c & 1)
    return sorted(t for t in found if held[t] < COPIES)


@lru_cache(maxsize=1 << 16)
def _lowering(key: int, tight: int) -> tuple[int, ...]:
    """The ranks whose draw lowers one of the ``tight`` entries (bit i: ``cost[i]``) of the
    suit's :func:`suit_costs` row; ranks already held four times are skipped."""
    row, ranks = suit_costs(key), key.to_bytes(9, "little")
    terms = [i for i in range(2 * _ROW) if tight >> i & 1]
    out = []
    for r in range(9):
        if ranks[r] < COPIES:
            drawn = suit_costs(key + KEY_STEP[r])
            if any(drawn[i] < row[i] for i in terms):
                out.append(r)
    return tuple(out)
