"""A concealed hand kept with its per-suit keys, so that a win check is three lookups."""

from __future__ import annotations

from collections.abc import Sequence

from games.mahjong.tiles import COPIES, NUM_TILES, format_counts, tile_name
from games.mahjong.wincheck import KEY_STEP, is_win_keys, suit_keys


class Hand:
    """Concealed tiles (手牌) as 27 counts plus the three suit keys of
    :mod:`games.mahjong.wincheck`, updated on every ``add``/``remove``."""

    __slots__ = ("_counts", "keys", "total")

    def __init__(self) -> None:
        self._counts = [0] * NUM_TILES
        self.keys = [0, 0, 0]
        self.total = 0

    @classmethod
    def from_counts(cls, counts: Sequence[int]) -> Hand:
        if len(counts) != NUM_TILES or any(not 0 <= c <= COPIES for c in counts):
            raise ValueError(f"a hand needs {NUM_TILES} counts in 0..{COPIES}")
        hand = cls()
        hand._counts = list(counts)
        hand.keys = list(suit_keys(counts))
        hand.total = sum(counts)
        return hand

    @property
    def counts(self) -> list[int]:
        """The 27 counts. Read them, do not mutate them: use ``add``/``remove``."""
        return self._counts

    def add(self, t: int) -> None:
        """Take tile ``t`` into the hand; raises ValueError on a fifth copy."""
        if not 0 <= t < NUM_TILES:
            raise ValueError(f"tile index {t!r} is outside 0..26")
        if self._counts[t] >= COPIES:
            raise ValueError(f"the hand already holds four {tile_name(t)}")
        self._counts[t] += 1
        self.keys[t // 9] += KEY_STEP[t]
        self.total += 1

    def remove(self, t: int) -> None:
        """Take tile ``t`` out of the hand; raises ValueError if it is not there."""
        if not 0 <= t < NUM_TILES:
            raise ValueError(f"tile index {t!r} is outside 0..26")
        if self._counts[t] == 0:
            raise ValueError(f"the hand holds no {tile_name(t)}")
        self._counts[t] -= 1
        self.keys[t // 9] -= KEY_STEP[t]
        self.total -= 1

    def is_win(self) -> bool:
        """Standard shape or seven pairs, as :func:`games.mahjong.wincheck.is_win`."""
        k = self.keys
        return is_win_keys(k[0], k[1], k[2])

    def copy(self) -> Hand:
        hand = Hand()
        hand._counts = self._counts.copy()
        hand.keys = self.keys.copy()
        hand.total = self.total
        return hand

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Hand) and self._counts == other._counts

    # Mutable and compared by value, so unhashable; typeshed declares __hash__ a method.
    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Hand({format_counts(self._counts)!r})"
