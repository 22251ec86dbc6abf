"""A small, version-stable pseudo-random stream for engines (SplitMix64).

Engines never draw randomness of their own: the caller supplies a seed, and this stream turns
it into shuffles and choices that are identical on every Python version and machine, so a
stored (seed, actions) pair replays the same hand forever. ``Random`` from the standard library
does not promise that for ``randrange``/``shuffle`` across versions.
"""

from __future__ import annotations

from collections.abc import MutableSequence
from typing import TypeVar

_MASK = (1 << 64) - 1
T = TypeVar("T")


class Stream:
    """SplitMix64 with unbiased bounded integers (rejection sampling)."""

    __slots__ = ("state",)

    def __init__(self, seed: int) -> None:
        self.state = seed & _MASK

    def next64(self) -> int:
        self.state = (self.state + 0x9E3779B97F4A7C15) & _MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
        return z ^ (z >> 31)

    def below(self, n: int) -> int:
        """A uniform integer in ``[0, n)``."""
        if n <= 0:
            raise ValueError("below() needs n > 0")
        limit = (1 << 64) - ((1 << 64) % n)
        while True:
            x = self.next64()
            if x < limit:
                return x % n

    def shuffle(self, items: MutableSequence[T]) -> None:
        """Unbiased Fisher-Yates, in place."""
        for i in range(len(items) - 1, 0, -1):
            j = self.below(i + 1)
            items[i], items[j] = items[j], items[i]

    def choice(self, items: list[T]) -> T:
        return items[self.below(len(items))]


def derive(seed: int, label: str) -> int:
    """An independent sub-seed for one purpose (``"wall"``, ``"exchange"``, ...)."""
    s = Stream(seed)
    for ch in label.encode():
        s.state ^= ch
        s.next64()
    return s.next64()
