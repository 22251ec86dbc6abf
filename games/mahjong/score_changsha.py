"""Changsha (长沙麻将) hand value: small hu (小胡) or the count of big hu (大胡) items, and X.

Rules: ../shared/rules/mahjong.md §B6-B8. A small hu needs a standard shape with a 2/5/8 pair;
any big-hu shape item allows any pair (乱将); situational big hu items (海底, 杠上, 抢杠, 天/地胡)
still need a legal shape. Every reading is scored and the one with most big hu kept (Part C).
Dealer bonus and birds: :mod:`games.mahjong.score_changsha_pay`; opening wins (起手胡):
:mod:`games.mahjong.score_changsha_opening`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from games.engine import BadInput
from games.mahjong.meld import Meld
from games.mahjong.score_common import (
    Shape,
    WinContext,
    check_hand,
    ranks_used,
    resolve_options,
    shapes,
    suits_used,
    total_counts,
    with_tile,
)
from games.mahjong.tiles import rank_of
from games.mahjong.wincheck import is_win

# The four opening-win types of §B3 (大四喜, 板板胡, 缺一色, 六六顺): the DEFAULT set.
OPENING_HU_TYPES = (
    "opening_four",
    "opening_no_258",
    "opening_missing_suit",
    "opening_two_triplets",
)
# The optional regional extras, off by default: 节节高, 三同 and 一枝花 on the dealt hand;
# 中途四喜 and 中途六六顺 declared during play (see score_changsha_opening).
EXTRA_OPENING_HU_TYPES = (
    "opening_step_pairs",
    "opening_same_rank_pairs",
    "opening_one_flower",
    "midway_four",
    "midway_two_triplets",
)
ALL_OPENING_HU_TYPES = OPENING_HU_TYPES + EXTRA_OPENING_HU_TYPES

# Scoring-related room options of §B8 with their DEFAULT values.
CHANGSHA_SCORING_DEFAULTS: Mapping[str, Any] = {
    "opening_hu_types": OPENING_HU_TYPES,
    "opening_hu_repeat": "once_per_type",
    "dealer_bonus": "on",
    "bird_mode": "add_double",
    "big_hu_stack": "additive",
    "menqing_big_hu": "off",
}
_ALLOWED: Mapping[str, Sequence[Any]] = {
    "opening_hu_repeat": ("once_per_type", "count_repeats"),
    "dealer_bonus": ("on", "off"),
    "bird_mode": ("add_double", "mul_double", "add_points"),
    "big_hu_stack": ("additive", "multiplicative"),
    "menqing_big_hu": ("on", "off"),
}
SMALL_X_SELF_DRAW = 2
SMALL_X_DISCARD = 1
BIG_X = 6
_LUXURY = {
    0: "seven_pairs",
    1: "luxury_seven_pairs",
    2: "double_luxury_seven_pairs",
    3: "triple_luxury_seven_pairs",
}


@dataclass(frozen=True, slots=True)
class ChangshaScore:
    """``big_hu`` counts big hu items (luxury seven pairs count 2/3/4); ``x`` is the amount
    per payer before dealer bonus and birds: 2 (small hu self-draw), 1 (small hu discard),
    ``6k`` (additive) or ``6 x 2^(k-1)`` (multiplicative). ``reason`` explains a non-win."""

    winning: bool
    small_hu: bool = False
    patterns: tuple[str, ...] = ()
    big_hu: int = 0
    x: int = 0
    reason: str = ""


def changsha_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """The scoring options of a room, defaults filled in and values checked."""
    if not isinstance(options, Mapping):
        raise BadInput("options must be a mapping")
    rest = {k: v for k, v in options.items() if k != "opening_hu_types"}
    out = resolve_options(CHANGSHA_SCORING_DEFAULTS, _ALLOWED, rest)
    types = options.get("opening_hu_types", OPENING_HU_TYPES)
    if isinstance(types, str) or not all(t in ALL_OPENING_HU_TYPES for t in types):
        raise BadInput(f"opening_hu_types must be a list drawn from {list(ALL_OPENING_HU_TYPES)}")
    out["opening_hu_types"] = tuple(types)
    return out


def score_changsha(
    concealed: Sequence[int], melds: Sequence[Meld], ctx: WinContext, options: Mapping[str, Any]
) -> ChangshaScore:
    """Value of winning on ``ctx.win_tile`` with ``concealed`` (27 counts without the winning
    tile) and ``melds`` (chi/peng/kaigang/buzhang/angang all count as sets)."""
    check_hand(concealed, melds, ctx.win_tile)
    opts = changsha_options(options)
    full = with_tile(concealed, ctx.win_tile)
    total = total_counts(full, melds)
    extra = _situational(ctx, melds, opts)
    candidates = []
    for shape in shapes(full, melds):
        items = _shape_items(shape, full, total, melds)
        pair_258 = shape.pair is not None and rank_of(shape.pair) in (2, 5, 8)
        if items or pair_258:
            candidates.append(items + extra)
    if ranks_used(total) <= {2, 5, 8}:  # 将将胡 needs no set structure
        candidates.append([("all_258", 1), *extra])
    if not candidates:
        reason = "small hu needs a 2/5/8 pair" if shapes(full, melds) else "not a winning shape"
        return ChangshaScore(False, reason=reason)
    best = max(candidates, key=lambda items: sum(weight for _, weight in items))
    big_hu = sum(weight for _, weight in best)
    if big_hu == 0:
        x = SMALL_X_SELF_DRAW if ctx.win == "self_draw" else SMALL_X_DISCARD
        return ChangshaScore(True, True, ("small_hu",), 0, x)
    patterns = tuple(name for name, _ in best)
    return ChangshaScore(True, False, patterns, big_hu, _big_x(big_hu, opts))


def changsha_waits(
    concealed: Sequence[int], melds: Sequence[Meld], options: Mapping[str, Any]
) -> list[tuple[int, int]]:
    """Each tile (not a fifth copy) that completes the 13-tile hand as a discard win with no
    situational item, with its big hu count (0 for a small hu)."""
    check_hand(concealed, melds)
    held = total_counts(concealed, melds)
    out = []
    for tile in range(27):
        full = with_tile(concealed, tile)
        maybe = is_win(full) or ranks_used(total_counts(full, melds)) <= {2, 5, 8}
        if held[tile] < 4 and maybe:  # fast pre-check: a shape, or 将将胡 (no shape needed)
            score = score_changsha(concealed, melds, WinContext(tile, "discard"), options)
            if score.winning:
                out.append((tile, score.big_hu))
    return out


def changsha_ready(
    concealed: Sequence[int], melds: Sequence[Meld], options: Mapping[str, Any]
) -> bool:
    """听牌: some tile would complete the 13-tile hand. 开杠 is allowed only if this holds
    after the four tiles are set aside."""
    return bool(changsha_waits(concealed, melds, options))


def _shape_items(
    shape: Shape, full: list[int], total: list[int], melds: Sequence[Meld]
) -> list[tuple[str, int]]:
    """Big hu items that come from the tiles of one reading (§B6)."""
    items = []
    if shape.kind == "seven_pairs":
        quads = sum(1 for count in full if count == 4)
        items.append((_LUXURY[min(quads, 3)], 1 + min(quads, 3)))
    elif all(kind == "pung" for kind, _ in shape.sets):
        items.append(("all_pungs", 1))
    if ranks_used(total) <= {2, 5, 8}:
        items.append(("all_258", 1))
    if len(suits_used(total)) == 1:
        items.append(("full_flush", 1))
    if len(melds) == 4:
        items.append(("all_melded", 1))
    return items


def _situational(
    ctx: WinContext, melds: Sequence[Meld], opts: Mapping[str, Any]
) -> list[tuple[str, int]]:
    """Big hu items from how the hand was won; each needs a legal shape to count."""
    names = []
    if "last_tile" in ctx.flags and ctx.win != "rob_kong":
        names.append("last_tile_draw" if ctx.win == "self_draw" else "last_tile_shot")
    names += [flag for flag in ("kong_bloom", "double_kong_bloom", "kong_shot") if flag in ctx.flags]
    if ctx.win == "rob_kong":
        names.append("rob_kong")
    names += [flag for flag in ("heavenly", "earthly") if flag in ctx.flags]
    menqing = all(meld.concealed for meld in melds) and ctx.win == "self_draw"
    if opts["menqing_big_hu"] == "on" and menqing:
        names.append("concealed")
    return [(name, 1) for name in names]


def _big_x(big_hu: int, opts: Mapping[str, Any]) -> int:
    if opts["big_hu_stack"] == "multiplicative":
        stacked: int = BIG_X * 2 ** (big_hu - 1)
        return stacked
    return BIG_X * big_hu
