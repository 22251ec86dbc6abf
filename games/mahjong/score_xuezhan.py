"""Sichuan XueZhan (血战到底) hand value: fan (番) items, cap and the amount per payer.

Rules: ../shared/rules/mahjong.md §A7-A8 (additive fan, ``base x 2^min(fan, cap)``) and the
room options of §A11. Every reading of the hand is scored and the best one kept (Part C).
Who pays, kong money and end-of-hand checks belong to the hand engine.
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
    set_tiles,
    shapes,
    suits_used,
    total_counts,
    with_tile,
)
from games.mahjong.tiles import rank_of
from games.mahjong.wincheck import is_win

# Scoring-related room options of §A11 with their DEFAULT values.
XUEZHAN_SCORING_DEFAULTS: Mapping[str, Any] = {
    "self_draw_bonus": "add_fan",
    "yaojiu_jiangdui": "on",
    "menqing_zhongzhang": "off",
    "tian_di_hu": "on",
    "haidi_pao_counts": "on",
    "cap_fan": 4,
}
_ALLOWED: Mapping[str, Sequence[Any]] = {
    "self_draw_bonus": ("add_fan", "add_base"),
    "yaojiu_jiangdui": ("on", "off"),
    "menqing_zhongzhang": ("on", "off"),
    "tian_di_hu": ("on", "off"),
    "haidi_pao_counts": ("on", "off"),
    "cap_fan": (2, 3, 4, 5, 6, "none", None),
}
HEAVENLY_FAN = 5  # 天胡 / 地胡 are worth max(5, hand) (§A8.2)


@dataclass(frozen=True, slots=True)
class XueZhanScore:
    """``fan`` is raw (before the cap); ``per_payer`` is what each payer owes at base 1:
    ``2^min(fan, cap)``, plus one base on a self-draw when ``self_draw_bonus = add_base``.
    ``reason`` says why a hand does not win (empty when it does)."""

    winning: bool
    patterns: tuple[str, ...] = ()
    roots: int = 0
    fan: int = 0
    per_payer: int = 0
    reason: str = ""


def score_xuezhan(
    concealed: Sequence[int], melds: Sequence[Meld], ctx: WinContext, options: Mapping[str, Any]
) -> XueZhanScore:
    """Value of winning on ``ctx.win_tile`` with ``concealed`` (27 counts, without the
    winning tile) and ``melds``. Raises BadInput for malformed input or options."""
    check_hand(concealed, melds, ctx.win_tile)
    opts = resolve_options(XUEZHAN_SCORING_DEFAULTS, _ALLOWED, options)
    if any(meld.kind == "chi" for meld in melds):
        raise BadInput("XueZhan has no chi melds")
    full = with_tile(concealed, ctx.win_tile)
    total = total_counts(full, melds)
    if ctx.void is not None and ctx.void in suits_used(total):
        return XueZhanScore(False, reason="void suit tile held")
    readings = shapes(full, melds)
    if not readings:
        return XueZhanScore(False, reason="not a winning shape")
    fan, patterns = max((_hand_fan(s, total, melds, opts) for s in readings), key=lambda r: r[0])
    fan, patterns = _add_situational(fan, patterns, ctx, opts)
    roots = sum(1 for count in total if count == 4)
    return XueZhanScore(True, patterns, roots, fan, _per_payer(fan, ctx, opts))


def xuezhan_waits(
    concealed: Sequence[int],
    melds: Sequence[Meld],
    void: int | None,
    options: Mapping[str, Any],
) -> list[tuple[int, int]]:
    """Each tile that completes the 13-tile hand, with its best fan as a discard win with no
    situational fan (查大叫 value, roots included). A tile whose four copies the player
    already holds is no wait (no fifth copy)."""
    check_hand(concealed, melds)
    held = total_counts(concealed, melds)
    out = []
    for tile in range(27):
        if held[tile] < 4 and is_win(with_tile(concealed, tile)):  # fast shape pre-check
            score = score_xuezhan(concealed, melds, WinContext(tile, "discard", void=void), options)
            if score.winning:
                out.append((tile, score.fan))
    return out


def xuezhan_ready_value(
    concealed: Sequence[int],
    melds: Sequence[Meld],
    void: int | None,
    options: Mapping[str, Any],
) -> int:
    """What a ready (听牌) hand collects per payer in 查大叫: ``2^min(best fan, cap)`` over
    its waits; 0 when the hand is not ready."""
    waits = xuezhan_waits(concealed, melds, void, options)
    if not waits:
        return 0
    opts = resolve_options(XUEZHAN_SCORING_DEFAULTS, _ALLOWED, options)
    return _multiplier(max(fan for _, fan in waits), opts)


def _hand_fan(
    shape: Shape, total: list[int], melds: Sequence[Meld], opts: Mapping[str, Any]
) -> tuple[int, tuple[str, ...]]:
    """Fan of one reading from the tiles alone (§A8.1, plus 门清/中张 when enabled)."""
    if shape.kind == "seven_pairs":
        items = [("seven_pairs", 2)]
    elif all(kind == "pung" for kind, _ in shape.sets):
        items = [("all_pungs", 1)]
    else:
        items = [("basic", 0)]
    if len(suits_used(total)) == 1:
        items.append(("full_flush", 2))
    if opts["yaojiu_jiangdui"] == "on":
        if shape.kind == "standard" and _all_terminal_groups(shape):
            items.append(("terminals", 2))
        if ranks_used(total) <= {2, 5, 8}:
            items.append(("all_258", 2))
    if len(melds) == 4:
        items.append(("single_wait", 1))
    roots = sum(1 for count in total if count == 4)
    if roots:
        items.append(("root", roots))
    if opts["menqing_zhongzhang"] == "on":
        if all(meld.kind == "angang" for meld in melds):
            items.append(("concealed", 1))
        if not ranks_used(total) & {1, 9}:
            items.append(("all_simples", 1))
    return sum(fan for _, fan in items), tuple(name for name, _ in items)


def _all_terminal_groups(shape: Shape) -> bool:
    """带幺九: every set and the pair contains a 1 or a 9."""
    if shape.pair is None:
        return False
    groups = [set_tiles(s) for s in shape.sets] + [(shape.pair,)]
    return all(any(rank_of(t) in (1, 9) for t in group) for group in groups)


def _add_situational(
    fan: int, patterns: tuple[str, ...], ctx: WinContext, opts: Mapping[str, Any]
) -> tuple[int, tuple[str, ...]]:
    """§A8.2: +1 per situational item; 天胡/地胡 make it max(5, everything but 自摸)."""
    items = []
    if ctx.win == "rob_kong":
        items.append("rob_kong")
    for flag in ("kong_bloom", "kong_shot"):
        if flag in ctx.flags:
            items.append(flag)
    if "last_tile" in ctx.flags:
        if ctx.win == "self_draw":
            items.append("last_tile_draw")
        elif ctx.win == "discard" and opts["haidi_pao_counts"] == "on":
            items.append("last_tile_shot")
    fan += len(items)
    special = _heavenly_or_earthly(ctx, opts)
    if special:
        return max(HEAVENLY_FAN, fan), (special, *patterns, *items)
    if ctx.win == "self_draw" and opts["self_draw_bonus"] == "add_fan":
        items.append("self_draw")
        fan += 1
    return fan, (*patterns, *items)


def _heavenly_or_earthly(ctx: WinContext, opts: Mapping[str, Any]) -> str:
    if opts["tian_di_hu"] != "on":
        return ""
    for flag in ("heavenly", "earthly"):
        if flag in ctx.flags:
            return flag
    return ""


def _per_payer(fan: int, ctx: WinContext, opts: Mapping[str, Any]) -> int:
    amount = _multiplier(fan, opts)
    plain_self_draw = ctx.win == "self_draw" and not _heavenly_or_earthly(ctx, opts)
    if plain_self_draw and opts["self_draw_bonus"] == "add_base":
        amount += 1
    return amount


def _multiplier(fan: int, opts: Mapping[str, Any]) -> int:
    """``2^min(fan, cap)``; cap_fan "none" (or None) means no cap."""
    cap = opts["cap_fan"]
    mult: int = 2 ** (fan if cap in ("none", None) else min(fan, cap))
    return mult


__all__ = [
    "XUEZHAN_SCORING_DEFAULTS",
    "WinContext",
    "XueZhanScore",
    "score_xuezhan",
    "xuezhan_ready_value",
    "xuezhan_waits",
]
