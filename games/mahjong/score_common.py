"""Shared pieces of mahjong hand scoring (胡牌计分) for XueZhan and Changsha.

A winning hand is the player's concealed tiles plus the winning tile plus his melds. This
module validates that input, lists every way to read it as a hand shape (all decompositions
plus seven pairs), and resolves room options; the variant modules turn shapes into value.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from games.engine import BadInput
from games.mahjong.decompose import decompositions
from games.mahjong.meld import Meld
from games.mahjong.tiles import rank_of, suit_of, tile_name
from games.mahjong.wincheck import is_seven_pairs

WIN_KINDS = frozenset({"discard", "self_draw", "rob_kong"})
FLAGS = frozenset({"kong_bloom", "double_kong_bloom", "kong_shot", "last_tile", "heavenly",
                   "earthly"})


@dataclass(frozen=True, slots=True)
class WinContext:
    """How the hand was won. ``win``: "discard" (点炮), "self_draw" (自摸) or "rob_kong"
    (抢杠胡); ``flags``: situational facts the table knows ("kong_bloom", "kong_shot",
    "last_tile", "heavenly", "earthly"; Changsha "double_kong_bloom": both 开杠 reveals
    complete the hand, with that room option on); ``void``: the XueZhan void suit 0..2 (定缺)."""

    win_tile: int
    win: str
    flags: frozenset[str] = frozenset()
    void: int | None = None

    def __post_init__(self) -> None:
        check_tile(self.win_tile, "win_tile")
        if self.win not in WIN_KINDS:
            raise BadInput(f"win must be one of {sorted(WIN_KINDS)}, got {self.win!r}")
        unknown = set(self.flags) - FLAGS
        if unknown:
            raise BadInput(f"unknown flags {sorted(unknown)}")
        if "kong_shot" in self.flags and self.win != "discard":
            raise BadInput("kong_shot needs a discard win")
        if "double_kong_bloom" in self.flags and "kong_bloom" not in self.flags:
            raise BadInput("double_kong_bloom needs kong_bloom")
        if "heavenly" in self.flags and self.win != "self_draw":
            raise BadInput("heavenly needs a self_draw win")
        if self.void is not None and self.void not in (0, 1, 2):
            raise BadInput(f"void must be a suit 0..2, got {self.void!r}")


@dataclass(frozen=True, slots=True)
class Shape:
    """One reading of a complete hand. ``kind`` is "standard" (sets + pair) or
    "seven_pairs"; ``sets`` holds ("pung" | "chow", lowest tile) for the concealed sets AND
    the melds (a kong reads as a pung); ``pair`` is None for seven pairs."""

    kind: str
    pair: int | None
    sets: tuple[tuple[str, int], ...]


def check_tile(tile: Any, what: str = "tile") -> None:
    if not isinstance(tile, int) or isinstance(tile, bool) or not 0 <= tile < 27:
        raise BadInput(f"{what} must be a tile index 0..26, got {tile!r}")


def check_melds(melds: Sequence[Meld]) -> None:
    """Each meld must be a real set: chi a run of one suit, peng/kongs identical tiles."""
    if len(melds) > 4:
        raise BadInput(f"at most 4 melds, got {len(melds)}")
    for meld in melds:
        if not isinstance(meld, Meld):
            raise BadInput(f"not a Meld: {meld!r}")
        for tile in meld.tiles:
            check_tile(tile, "meld tile")
        low = min(meld.tiles)
        if meld.kind == "chi":
            run = sorted(meld.tiles) == [low, low + 1, low + 2] and rank_of(low) <= 7
            if not run:
                raise BadInput(f"chi {names(meld.tiles)} is not a run of one suit")
        elif len(set(meld.tiles)) != 1:
            raise BadInput(f"{meld.kind} {names(meld.tiles)} needs identical tiles")


def check_hand(
    concealed: Sequence[int], melds: Sequence[Meld], win_tile: int | None = None
) -> None:
    """``concealed`` is 27 counts holding 13 - 3 x melds tiles; no tile kind may exceed four
    copies across hand, melds and the winning tile (if given)."""
    if len(concealed) != 27 or not all(isinstance(c, int) and c >= 0 for c in concealed):
        raise BadInput("concealed must be 27 non-negative tile counts")
    check_melds(melds)
    want = 13 - 3 * len(melds)
    if sum(concealed) != want:
        raise BadInput(f"concealed holds {sum(concealed)} tiles, expected {want}")
    counts = total_counts(concealed, melds)
    if win_tile is not None:
        counts[win_tile] += 1
    for tile, count in enumerate(counts):
        if count > 4:
            raise BadInput(f"{count} copies of {tile_name(tile)}; at most 4 exist")


def with_tile(concealed: Sequence[int], tile: int) -> list[int]:
    counts = list(concealed)
    counts[tile] += 1
    return counts


def total_counts(concealed: Sequence[int], melds: Sequence[Meld]) -> list[int]:
    """Counts over the concealed tiles and every meld (a kong contributes four)."""
    counts = list(concealed)
    for meld in melds:
        for tile in meld.tiles:
            counts[tile] += 1
    return counts


def meld_set(meld: Meld) -> tuple[str, int]:
    return ("chow", min(meld.tiles)) if meld.kind == "chi" else ("pung", meld.tiles[0])


def shapes(full: Sequence[int], melds: Sequence[Meld]) -> list[Shape]:
    """Every reading of the concealed tiles ``full`` (winning tile included) with the melds:
    each decomposition into sets + pair, and seven pairs when there is no meld."""
    fixed = tuple(meld_set(m) for m in melds)
    out = [Shape("standard", d.pair, fixed + tuple(d.sets)) for d in decompositions(list(full))]
    if not melds and is_seven_pairs(list(full)):
        out.append(Shape("seven_pairs", None, ()))
    return out


def set_tiles(kind_tile: tuple[str, int]) -> tuple[int, ...]:
    kind, tile = kind_tile
    return (tile, tile + 1, tile + 2) if kind == "chow" else (tile,)


def suits_used(counts: Sequence[int]) -> set[int]:
    return {suit_of(t) for t, c in enumerate(counts) if c}


def ranks_used(counts: Sequence[int]) -> set[int]:
    return {rank_of(t) for t, c in enumerate(counts) if c}


def names(tiles: Sequence[int]) -> str:
    return " ".join(tile_name(t) for t in tiles)


def resolve_options(
    defaults: Mapping[str, Any], allowed: Mapping[str, Sequence[Any]], given: Mapping[str, Any]
) -> dict[str, Any]:
    """The defaults overridden by ``given``; keys this scorer does not use are ignored (a
    room passes all its options), known keys must carry an allowed value. Booleans are
    accepted for "on"/"off" switches."""
    if not isinstance(given, Mapping):
        raise BadInput("options must be a mapping")
    out = dict(defaults)
    for key in defaults.keys() & given.keys():
        value = given[key]
        if isinstance(value, bool) and "on" in allowed[key]:
            value = "on" if value else "off"
        if value not in allowed[key]:
            raise BadInput(f"option {key}={value!r}; allowed: {list(allowed[key])}")
        out[key] = value
    return out
