"""Mahjong policies for robots and entrust (托管), for XueZhan and Changsha.

A policy sees only what a player sees: it calls ``state.legal_actions(seat)`` and
``state.observation(seat)`` and nothing else on the state.

* :func:`random_policy` - a uniformly random legal action (conformance and load tests).
* :func:`greedy_policy` - a deterministic one-ply player: it takes every win, keeps the void
  rule (定缺), and otherwise picks the action that leaves the lowest shanten (向听数), breaking
  ties by the number of useful tiles (有效牌) not yet visible on the table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
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
from games.mahjong.shanten import suit_costs
from games.mahjong.wincheck import MAX_SETS, suit_keys
from games.rng import Stream

_OWN_KONGS = ("angang", "bugang", "buzhang", "kaigang")
_CLAIM_KONGS = ("zhigang", "buzhang", "kaigang")


def random_policy(state: PlayerView, seat: int, stream: Stream) -> Action:
    """A uniformly random legal action of ``seat``, drawn from ``stream``."""
    return stream.choice(_legal(state, seat))


def greedy_policy(state: PlayerView, seat: int) -> Action:
    """The greedy action of ``seat`` now (deterministic; see the module doc)."""
    legal = _legal(state, seat)
    by_kind: dict[str, list[Action]] = {}
    for action in legal:
        by_kind.setdefault(action.kind, []).append(action)
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
        return cls(
            tuple(hand),
            None if own_void is None else SUITS.index(own_void),
            pengs,
            tuple(min(c, 4) for c in seen),
            None if not window else tile_index(window["tile"]),
        )

    def is_void(self, tile: int) -> bool:
        return self.void is not None and tile // 9 == self.void


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


def _after_discard(view: _View, counts: list[int], tile: int) -> tuple[int, int]:
    """(shanten, -unseen useful tiles) once ``tile`` leaves ``counts``: lower is better."""
    counts[tile] -= 1
    try:
        level = _shanten(counts, view.void)
        useful = useful_tiles(counts, view.seen)
        return level, -sum(4 - view.seen[t] for t in useful)
    finally:
        counts[tile] += 1


def _best_discard(view: _View, choices: list[int]) -> int:
    """The tile among ``choices`` whose discard leaves the best hand (void tiles first)."""
    void_tiles = [t for t in choices if view.is_void(t)]
    choices = void_tiles or choices
    counts = list(view.hand)
    level = {t: _shanten([c - (i == t) for i, c in enumerate(counts)], view.void)
             for t in choices}
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
    best = _shanten(_without(view.hand, discard, 1), view.void)
    for kind in ("kaigang", "angang", "bugang", "buzhang"):
        for action in by_kind.get(kind, []):
            tile = tile_index(action.tiles[0])
            used = 1 if tile in view.pengs else 4
            after = _shanten(_without(view.hand, tile, used), view.void)
            if (after == 0) if kind == "kaigang" else (after <= best):
                return action
    return next(a for a in by_kind["discard"] if tile_index(a.tiles[0]) == discard)


def _respond(view: _View, by_kind: Mapping[str, list[Action]]) -> Action:
    """A claim that does not raise shanten (chi only when it lowers it), otherwise pass."""
    tile = view.window_tile
    if tile is None or view.is_void(tile):
        return by_kind["pass"][0]
    now = _shanten(view.hand, view.void)
    for kind in ("kaigang", "zhigang", "buzhang"):
        if kind in by_kind:
            after = _shanten(_without(view.hand, tile, 3), view.void)
            if (after == 0) if kind == "kaigang" else (after <= now):
                return by_kind[kind][0]
    if "peng" in by_kind and _shanten(_without(view.hand, tile, 2), view.void) <= now:
        return by_kind["peng"][0]
    for action in by_kind.get("chi", []):
        counts = list(view.hand)
        for name in action.tiles:
            counts[tile_index(name)] -= 1
        if _shanten(counts, view.void) < now:
            return action
    return by_kind["pass"][0]
