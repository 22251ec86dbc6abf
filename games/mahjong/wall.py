"""The wall (牌墙): 108 tiles, normal draws from the front, kong replacements, 开杠 reveals
and birds (扎鸟) from the back. There is no dead wall: every tile can be drawn."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from games.fair import Seed, stream

NUM_KINDS = 27
NUM_TILES = 108


def full_set() -> list[int]:
    """All 108 tiles in index order (four copies of each of the 27 kinds)."""
    return [kind for kind in range(NUM_KINDS) for _ in range(4)]


def shuffled_wall(seed: Seed) -> list[int]:
    """The wall for a hand, in draw order: Fisher-Yates over the full set with the hand's
    "wall" stream (a 32-byte seed: docs/fairness.md; an int: its SplitMix64 stream)."""
    tiles = full_set()
    stream(seed, "wall").shuffle(tiles)
    return tiles


def check_wall(tiles: Sequence[int]) -> None:
    """Raise ValueError unless ``tiles`` is exactly the 108-tile set in some order."""
    if len(tiles) != NUM_TILES or sorted(tiles) != full_set():
        raise ValueError("a wall must hold each of the 27 tile kinds exactly four times")


class Wall:
    """The undrawn tiles between ``front`` (next normal draw) and ``back`` (exclusive end)."""

    __slots__ = ("tiles", "front", "back")

    def __init__(self, tiles: Sequence[int], front: int = 0, back: int | None = None) -> None:
        self.tiles = list(tiles)
        self.front = front
        self.back = len(self.tiles) if back is None else back

    def remaining(self) -> int:
        return self.back - self.front

    def draw_front(self) -> int:
        if self.remaining() <= 0:
            raise IndexError("the wall is empty")
        tile = self.tiles[self.front]
        self.front += 1
        return tile

    def draw_back(self) -> int:
        if self.remaining() <= 0:
            raise IndexError("the wall is empty")
        self.back -= 1
        return self.tiles[self.back]

    def undrawn(self) -> list[int]:
        return self.tiles[self.front : self.back]

    def to_dict(self) -> dict[str, object]:
        return {"tiles": list(self.tiles), "front": self.front, "back": self.back}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Wall:
        return cls(data["tiles"], data["front"], data["back"])


def deal(wall: Wall, dealer: int, seats: int = 4) -> list[list[int]]:
    """Deal 13 tiles each, one at a time starting with the dealer, then a 14th to the dealer."""
    hands: list[list[int]] = [[] for _ in range(seats)]
    for _ in range(13):
        for k in range(seats):
            hands[(dealer + k) % seats].append(wall.draw_front())
    hands[dealer].append(wall.draw_front())
    return hands


def stacked_wall(
    hands: Sequence[Sequence[int] | None], dealer: int, front: Sequence[int] = (),
    back: Sequence[int] = (),
) -> list[int]:
    """A wall (for tests and replays of real tables) whose deal gives ``hands`` (the dealer's
    with 14 tiles; None: a filler hand of spread-out kinds that rarely pairs), then draws
    ``front`` in order from the front and ``back`` in order from the back; every other tile
    fills the middle in index order."""
    pool = full_set()
    for tile in [t for h in hands if h is not None for t in h] + list(front) + list(back):
        if tile not in pool:
            raise ValueError(f"more than four copies of tile {tile} in the layout")
        pool.remove(tile)
    full = [list(h) if h is not None else _filler(pool, 14 if s == dealer else 13, 7 * s)
            for s, h in enumerate(hands)]
    for seat, hand in enumerate(full):
        if len(hand) != (14 if seat == dealer else 13):
            raise ValueError(f"seat {seat} needs {14 if seat == dealer else 13} tiles")
    wall: list[int] = [-1] * NUM_TILES
    for r in range(14):
        for k in range(4):
            seat = (dealer + k) % 4
            if r < 13 or seat == dealer:
                wall[4 * r + k if r < 13 else 52] = full[seat][r]
    for i, t in enumerate(front):
        wall[53 + i] = t
    for i, t in enumerate(back):
        wall[NUM_TILES - 1 - i] = t
    filled = [t if t >= 0 else pool.pop(0) for t in wall]
    check_wall(filled)
    return filled


def _filler(pool: list[int], count: int, start: int) -> list[int]:
    """Take ``count`` tiles from ``pool``, stepping through kinds 5 apart."""
    got: list[int] = []
    kind = start
    while len(got) < count:
        if kind % NUM_KINDS in pool:
            pool.remove(kind % NUM_KINDS)
            got.append(kind % NUM_KINDS)
        kind += 5
    return got


def deal_layout(seed: Seed) -> dict[str, list[str]]:
    """What a replay stores of the shuffle (docs/fairness.md): the wall in draw order."""
    from games.mahjong.tiles import tile_name

    return {"wall": [tile_name(t) for t in shuffled_wall(seed)]}
