"""Mahjong policies for robots and entrust (托管), for XueZhan and Changsha.

A policy sees only what a player sees: it calls ``state.legal_actions(seat)`` and
``state.observation(seat)`` and nothing else on the state.

* :func:`random_policy` - a uniformly random legal action (conformance and load tests).
* :func:`greedy_policy` - a deterministic one-ply player: it takes every win, keeps the void
  rule (定缺), and otherwise picks the action that leaves the lowest shanten (向听数), breaking
  ties by the number of useful tiles (有效牌) not yet visible on the table. In Changsha the
  shanten counts a small hu (小胡) only with a 2/5/8 pair (将); the big hu shapes that take
  any pair (seven pairs, all pungs, full flush, all melded) keep theirs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import combinations
from typing import Any

from games.bots.view import PlayerView
from games.engine import Action
from games.mahjong import (
    SUITS,
    parse_tile_list,
    parse_tiles,
    shanten,
    tile_index,
    tile_name,
    useful_tiles,
)
from games.mahjong.shanten import FINAL_STATES, RANK_MOVES, reuse_by_state, suit_costs
from games.mahjong.wincheck import MAX_SETS, suit_keys
from games.rng import Stream

_ROW = MAX_SETS + 1  # suit_costs row layout: cost[pair * _ROW + sets]
_JIANG_RANKS = (1, 4, 7)  # rank indices of 2, 5 and 8 (将)
_FAR = 99


def random_policy(state: PlayerView, seat: int, stream: Stream) -> Action:
    """A uniformly random legal action of ``seat``, drawn from ``stream``."""
    return stream.choice(_legal(state, seat))


def greedy_policy(state: PlayerView, seat: int) -> Action:
    """The greedy action of ``seat`` now (deterministic; see the module doc)."""
    legal = _legal(state, seat)
    by_kind: dict[str, list[Action]] = {}
    for action in legal:
        by_kind.setdefault(action.kind, []).append(action)
    if "midway_hu" in by_kind:  # Changsha 中途四喜/六六顺: free points, the turn goes on
        return by_kind["midway_hu"][0]
    if "hu" in by_kind:
        return by_kind["hu"][0]
    if len(legal) == 1:
        return legal[0]
    view = _View.of(state.observation(seat))
    if "exchange_three" in by_kind:
        return _exchange(view)
    if "declare_void" in by_kind:
        return _declare_void(view, by_kind["declare_void"])
    if "haidi" in by_kind:
        return next((a for a in by_kind["haidi"] if a.choice == "yes"), by_kind["haidi"][0])
    if "discard" in by_kind:
        return _own_turn(view, by_kind)
    if "pass" in by_kind:
        return _respond(view, by_kind)
    return legal[0]


def _legal(state: PlayerView, seat: int) -> list[Action]:
    legal = state.legal_actions(seat)
    if not legal:
        raise ValueError(f"seat {seat} has no legal action now")
    return legal


# ---------------------------------------------------------------------- what the seat sees


@dataclass(frozen=True)
class _View:
    """The parts of an observation the greedy policy uses."""

    hand: tuple[int, ...]  # 27 counts of the own concealed tiles
    void: int | None  # own void suit index (XueZhan), None before declaring or in Changsha
    pengs: frozenset[int]  # tiles of own peng melds (for added kongs)
    seen: tuple[int, ...]  # 27 counts of tiles this seat can see (own hand, melds, rivers)
    window_tile: int | None
    # Changsha: a small hu needs a 2/5/8 pair. ``meld_suits`` / ``chi``: own melds' suits and
    # whether one is a chi (they rule out full flush / all pungs).
    jiang: bool = False
    meld_suits: frozenset[int] = frozenset()
    chi: bool = False

    @classmethod
    def of(cls, obs: Mapping[str, Any]) -> _View:
        seat = obs["seat"]
        hand = parse_tiles(obs["hand"])
        seen = list(hand)
        for tile in _visible_tiles(obs):
            seen[tile] += 1
        own_void = obs["void"][seat] if obs.get("void") else None
        pengs = frozenset(
            parse_tile_list(m["tiles"])[0]
            for m in obs["melds"][seat]
            if m["kind"] == "peng" and m["tiles"]
        )
        window = obs.get("window")
        own = obs["melds"][seat]
        return cls(
            tuple(hand),
            None if own_void is None else SUITS.index(own_void),
            pengs,
            tuple(min(c, 4) for c in seen),
            None if not window else tile_index(window["tile"]),
            obs.get("variant") == "changsha",
            frozenset(SUITS.index(m["tiles"][-1]) for m in own if m["tiles"]),
            any(m["kind"] == "chi" for m in own),
        )

    def is_void(self, tile: int) -> bool:
        return self.void is not None and tile // 9 == self.void

    def level(self, counts: Sequence[int], meld: int | None = None, chi: bool = False) -> int:
        """The shanten this variant plays by: Changsha's 将 rule, else the void rule.
        ``meld`` / ``chi``: the tile of a meld about to be claimed, and whether it is a chi."""
        if self.jiang:
            suits = self.meld_suits if meld is None else self.meld_suits | {meld // 9}
            return _changsha_shanten(counts, suits, self.chi or chi)
        return _shanten(counts, self.void)


def _visible_tiles(obs: Mapping[str, Any]) -> list[int]:
    """Tiles shown on the table: every river, exposed meld and revealed winning tile."""
    out: list[int] = []
    for river in obs.get("discards", []):
        out.extend(tile_index(name) for name in river)
    for melds in obs.get("melds", []):
        for meld in melds:
            if meld["tiles"]:
                out.extend(parse_tile_list(meld["tiles"]))
    for tiles in obs.get("won_tiles", []):
        out.extend(tile_index(name) for name in tiles)
    return out


# ---------------------------------------------------------------------- hand evaluation


def _shanten(counts: Sequence[int], void: int | None) -> int:
    """Shanten where a winning hand may hold no tile of the void suit (定缺): void tiles are
    thrown away. Without void tiles this is :func:`games.mahjong.shanten`; with them only the
    standard shape is considered (seven pairs is ignored until the void is cleared)."""
    if void is None or not any(counts[9 * void : 9 * void + 9]):
        return shanten(counts)
    sets = sum(counts) // 3
    keys = suit_keys(counts)
    a, b = (suit_costs(keys[s]) for s in range(3) if s != void)
    row = MAX_SETS + 1  # suit row layout: cost[pair * row + sets]
    need = min(
        min(a[row + m] + b[sets - m], a[m] + b[row + sets - m]) for m in range(sets + 1)
    )
    return need - 1


def _changsha_shanten(counts: Sequence[int], meld_suits: frozenset[int], chi: bool) -> int:
    """Shanten of a Changsha hand: a standard shape only with a 2/5/8 pair (小胡), or a big
    hu that takes any pair - seven pairs, all pungs (no chi), full flush (melds in that
    suit), all melded (the last pair may be anything). 将将胡 (all 2/5/8, no shape) is left
    out: the bot does not aim for it."""
    total = sum(counts)
    sets = total // 3
    if sets == 0:
        return shanten(counts)  # 全求人: the last pair may be anything
    keys = suit_keys(counts)
    need = _small_hu_need(keys, sets)
    if need > 0 and total >= 13:
        need = min(need, _seven_pairs_need(counts))
    if need > 0 and not chi:
        need = min(need, _pungs_need(counts, sets))
    if need > 0 and len(meld_suits) <= 1:
        for s in meld_suits or range(3):
            # every tile outside the suit must go: at least that many tiles to add
            if 3 * sets + 2 - sum(counts[9 * s : 9 * s + 9]) < need:
                need = min(need, suit_costs(keys[s])[_ROW + sets])
    return need - 1


def _small_hu_need(keys: tuple[int, int, int], sets: int) -> int:
    """Fewest tiles to add for ``sets`` sets and a pair of rank 2, 5 or 8."""
    plain = [suit_costs(k) for k in keys]
    best = _FAR
    for s, x, y in ((0, 1, 2), (1, 0, 2), (2, 0, 1)):
        jiang, a, b = _jiang_costs(keys[s]), plain[x], plain[y]
        for m in range(sets + 1):
            with_pair = jiang[m]
            if with_pair >= best:
                continue
            rest = sets - m
            for n in range(rest + 1):
                v = with_pair + a[n] + b[rest - n]
                if v < best:
                    best = v
    return best


def _jiang_moves() -> list[list[list[tuple[int, int]]]]:
    """The shanten DP's moves per rank (from games.mahjong.shanten) with the pair allowed
    only on ranks 2, 5 and 8: elsewhere the moves that take the pair are dropped."""
    out = []
    for rank, groups in enumerate(RANK_MOVES):
        if rank in _JIANG_RANKS:
            out.append(groups)
        else:
            out.append([[(a, b) for a, b in moves if b % 2 <= a % 2] for moves in groups])
    return out


_JIANG_MOVES = _jiang_moves()


@lru_cache(maxsize=1 << 16)
def _jiang_costs(key: int) -> tuple[int, ...]:
    """For one suit key: ``cost[m]`` = fewest tiles to add so that the suit holds m sets and
    a pair of rank 2, 5 or 8 (the pair-row analogue of ``suit_costs``; 2/5/8 is symmetric,
    so a key and its mirror share one run)."""
    ranks = key.to_bytes(9, "little")
    mirror = int.from_bytes(ranks, "big")
    if mirror < key:
        return _jiang_costs(mirror)
    best = reuse_by_state(ranks, _JIANG_MOVES)
    cost = [_FAR] * _ROW
    for state, m, pair in FINAL_STATES:
        if pair and best[state] >= 0:
            cost[m] = min(cost[m], 3 * m + 2 - best[state])
    return tuple(cost)


def _seven_pairs_need(counts: Sequence[int]) -> int:
    """Fewest tiles to add for seven pairs (a quad is two pairs)."""
    missing = max(0, 7 - sum(c // 2 for c in counts))
    singles = sum(c & 1 for c in counts)
    return missing + max(0, missing - singles)


def _pungs_need(counts: Sequence[int], sets: int) -> int:
    """Fewest tiles to add for ``sets`` triplets and a pair of other kinds (碰碰胡): the
    sets + 1 most held kinds, the pair on one held fewer than three times if any."""
    top = sorted(counts, reverse=True)[: sets + 1]
    need = sum(3 - c if c < 3 else 0 for c in top)
    return need - 1 if top[-1] < 3 else need


def _after_discard(view: _View, counts: list[int], tile: int) -> int:
    """Minus the unseen useful tiles (有效牌) once ``tile`` leaves ``counts``: lower is
    better. Useful = lowers the plain shanten (any pair), the cheap tie-break in both
    variants; a tile seen four times is never counted."""
    counts[tile] -= 1
    try:
        return -sum(4 - view.seen[t] for t in useful_tiles(counts, view.seen))
    finally:
        counts[tile] += 1


def _best_discard(view: _View, choices: list[int]) -> int:
    """The tile among ``choices`` whose discard leaves the best hand (void tiles first)."""
    void_tiles = [t for t in choices if view.is_void(t)]
    choices = void_tiles or choices
    counts = list(view.hand)
    level = {t: view.level(_without(counts, t, 1)) for t in choices}
    lowest = min(level.values())
    tied = [t for t in choices if level[t] == lowest]
    if len(tied) == 1:
        return tied[0]
    return min(tied, key=lambda t: (_after_discard(view, counts, t), t))


def _without(counts: Sequence[int], tile: int, n: int) -> list[int]:
    out = list(counts)
    out[tile] -= n
    return out


# ---------------------------------------------------------------------- decisions


def _exchange(view: _View) -> Action:
    """换三张: three tiles of the shortest suit holding at least three, chosen to hurt least."""
    per_suit = [sum(view.hand[9 * s : 9 * s + 9]) for s in range(3)]
    suit = min((n, s) for s, n in enumerate(per_suit) if n >= 3)[1]
    tiles = [t for t in range(9 * suit, 9 * suit + 9) for _ in range(view.hand[t])]
    best = min(
        dict.fromkeys(combinations(tiles, 3)),
        key=lambda trio: shanten([c - trio.count(i) for i, c in enumerate(view.hand)]),
    )
    return Action("exchange_three", tuple(tile_name(t) for t in best))


def _declare_void(view: _View, actions: list[Action]) -> Action:
    """定缺: the suit with the fewest tiles; on ties the one with fewer pairs (keep pairs)."""

    def cost(action: Action) -> tuple[int, int]:
        s = SUITS.index(action.choice)
        ranks = view.hand[9 * s : 9 * s + 9]
        return sum(ranks), sum(1 for c in ranks if c >= 2)

    return min(actions, key=cost)


def _own_turn(view: _View, by_kind: Mapping[str, list[Action]]) -> Action:
    """Kong when it does not raise shanten (开杠 only when ready), otherwise discard."""
    choices = [tile_index(a.tiles[0]) for a in by_kind["discard"]]
    discard = _best_discard(view, choices)
    best = view.level(_without(view.hand, discard, 1))
    for kind in ("kaigang", "angang", "bugang", "buzhang"):
        for action in by_kind.get(kind, []):
            tile = tile_index(action.tiles[0])
            used = 1 if tile in view.pengs else 4
            after = view.level(_without(view.hand, tile, used), tile)
            if (after == 0) if kind == "kaigang" else (after <= best):
                return action
    return next(a for a in by_kind["discard"] if tile_index(a.tiles[0]) == discard)


def _respond(view: _View, by_kind: Mapping[str, list[Action]]) -> Action:
    """A claim that does not raise shanten (chi only when it lowers it), otherwise pass."""
    tile = view.window_tile
    if tile is None or view.is_void(tile):
        return by_kind["pass"][0]
    now = view.level(view.hand)
    for kind in ("kaigang", "zhigang", "buzhang"):
        if kind in by_kind:
            after = view.level(_without(view.hand, tile, 3), tile)
            if (after == 0) if kind == "kaigang" else (after <= now):
                return by_kind[kind][0]
    if "peng" in by_kind and view.level(_without(view.hand, tile, 2), tile) <= now:
        return by_kind["peng"][0]
    for action in by_kind.get("chi", []):
        counts = list(view.hand)
        for name in action.tiles:
            counts[tile_index(name)] -= 1
        if view.level(counts, tile, chi=True) < now:
            return action
    return by_kind["pass"][0]
