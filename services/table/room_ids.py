"""Room ids: 9 digits, never given out twice, and one key in NATS however many rooms are made.

An id names a room's log subject and its settlements (records: unique on room + hand) for
ever, so it must never be given out again. A table reserves BLOCK values of a counter at a
time, with a compare-and-set on the key ``next`` of the ``room_ids`` bucket, and gives out
``ID_LOW + permute(c)`` for each value c of its block. ``permute`` is a fixed permutation of
``range(SPAN)`` (a four-round Feistel network over 30 bits, walked until it lands in the
range), so rooms made one after another do not get neighbouring numbers, and two counter
values never give one id. A table that stops leaves the rest of its block unused.

The permutation's constants are part of the id space: ids already given out came from them,
so changing them could give one of those ids again (``tests/unit/services/test_room_ids.py``
pins its first values).

Earlier releases drew 8-digit ids at random and kept one key per id in the same bucket, for
ever (about 170 bytes of every NATS node's memory per room). The ranges do not meet, so
tables of both kinds can run together during a rolling release; the keys they wrote stay.
"""

from __future__ import annotations

import asyncio
import hashlib
from typing import Any

from nats.js.errors import KeyNotFoundError, KeyWrongLastSequenceError

ID_LOW = 100_000_000       # 9 digits; earlier releases' ids are 8 digits (below this)
SPAN = 900_000_000         # ids ID_LOW .. ID_LOW + SPAN - 1 = 999,999,999
BLOCK = 32                 # counter values a table reserves at once
NEXT_KEY = "next"          # the counter: the first value no table has reserved
_HALF_BITS = 15            # 2 x 15 bits = 2**30 >= SPAN: on average 1.2 rounds of walking
_HALF_MASK = (1 << _HALF_BITS) - 1
_ROUND_KEYS = (b"paiju-room-id-1", b"paiju-room-id-2", b"paiju-room-id-3", b"paiju-room-id-4")


class RoomIdsExhausted(RuntimeError):
    """Every id of the range was given out."""


def _round(key: bytes, half: int) -> int:
    digest = hashlib.blake2b(half.to_bytes(2, "big"), digest_size=2, key=key).digest()
    return int.from_bytes(digest, "big") & _HALF_MASK


def _feistel(x: int) -> int:
    """A permutation of range(2**30)."""
    left, right = x >> _HALF_BITS, x & _HALF_MASK
    for key in _ROUND_KEYS:
        left, right = right, left ^ _round(key, right)
    return left << _HALF_BITS | right


def permute(c: int) -> int:
    """The place in range(SPAN) of counter value ``c`` (0 <= c < SPAN): a bijection. The
    network permutes range(2**30); applying it again until the value falls below SPAN
    (cycle walking) keeps the values of range(SPAN) a permutation of themselves."""
    if not 0 <= c < SPAN:
        raise ValueError(f"counter value out of range: {c}")
    x = _feistel(c)
    while x >= SPAN:
        x = _feistel(x)
    return x


class RoomIds:
    """A table's source of room ids over the ``room_ids`` bucket (a nats-py KeyValue)."""

    def __init__(self, kv: Any) -> None:
        self.kv = kv
        self._next = self._end = 0
        self._reserving = asyncio.Lock()

    async def allocate(self) -> int:
        """A room id no table gave out before. A NATS failure (no leader for the bucket, no
        answer) raises as nats-py raises it; the block stays as it was."""
        async with self._reserving:
            if self._next >= self._end:
                self._next, self._end = await self._reserve()
            c = self._next
            self._next += 1
        return ID_LOW + permute(c)

    async def _reserve(self) -> tuple[int, int]:
        kv = self.kv
        while True:
            try:
                entry = await kv.get(NEXT_KEY)
            except KeyNotFoundError:
                try:
                    await kv.create(NEXT_KEY, str(BLOCK).encode())
                    return 0, BLOCK
                except KeyWrongLastSequenceError:
                    continue   # another table made it first
            start = int(entry.value)
            if start + BLOCK > SPAN:
                raise RoomIdsExhausted(f"room ids exhausted: {start} of {SPAN} given out")
            try:
                await kv.update(NEXT_KEY, str(start + BLOCK).encode(),
                                last=entry.revision)
                return start, start + BLOCK
            except KeyWrongLastSequenceError:
                continue       # another table reserved this block: read again
