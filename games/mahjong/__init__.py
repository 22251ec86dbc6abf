"""The shared mahjong core: tiles and notation, hands, the fast win check, decompositions,
waits and shanten. Variant modules (xuezhan, changsha) build on these names."""

from games.mahjong.decompose import CHOW, PUNG, Decomposition, decompositions
from games.mahjong.shanten import shanten, useful_tiles
from games.mahjong.tiles import (
    NUM_TILES,
    SUITS,
    format_counts,
    format_tiles,
    parse_tile_list,
    parse_tiles,
    rank_of,
    suit_of,
    tile_index,
    tile_name,
)
from games.mahjong.wincheck import is_seven_pairs, is_win, waits

__all__ = [
    "CHOW",
    "NUM_TILES",
    "PUNG",
    "SUITS",
    "Decomposition",
    "decompositions",
    "format_counts",
    "format_tiles",
    "is_seven_pairs",
    "is_win",
    "parse_tile_list",
    "parse_tiles",
    "rank_of",
    "shanten",
    "suit_of",
    "tile_index",
    "tile_name",
    "useful_tiles",
    "waits",
]
