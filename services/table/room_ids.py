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

The counter must never go back: records keeps every hand by room + hand, so an id given out
again would have its hands taken for ones already written. So a missing counter starts at 0
only on a new cluster (no room in the ``rooms`` bucket or SETTLE) or over an earlier
release's ids (the bucket holds their keys); a counter deleted or purged (its key holds a
marker), a bucket made again empty where rooms were played, an unreadable value, or a value
below a block this table already had, is refused (RoomIdsLost: no room can be made until an
operator sets it, docs/runbooks.md "The room id counter lost"; rooms in play go on).
``python -m services.table.room_ids next-after < ids`` prints the value to set from the ids
known (records', the ``rooms`` bucket's). What looks like a new cluster is not
refused: a JetStream lost whole, a bucket lost after 30 days without a room, or a counter
removed with no marker where an earlier release's keys are (the runbook names them).
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import sys
from collections.abc import Callable, Iterable
from typing import Any

from nats.js.errors import KeyWrongLastSequenceError, NotFoundError

from services.common.bus import (
    ROOM_IDS_BUCKET,
    ROOMS_BUCKET,
    SETTLE_STREAM,
    SETTLE_SUBJECT,
    kv_latest,
)

ID_LOW = 100_000_000       # 9 digits; earlier releases' ids are 8 digits (below this)
SPAN = 900_000_000         # ids ID_LOW .. ID_LOW + SPAN - 1 = 999,999,999
BLOCK = 32                 # counter values a table reserves at once
NEXT_KEY = "next"          # the counter: the first value no table has reserved
_HALF_BITS = 15            # 2 x 15 bits = 2**30 >= SPAN: on average 1.2 rounds of walking
_HALF_MASK = (1 << _HALF_BITS) - 1
_ROUND_KEYS = (b"paiju-room-id-1", b"paiju-room-id-2", b"paiju-room-id-3", b"paiju-room-id-4")
RESERVE_TRIES = 50         # compare-and-set conflicts (other tables reserving) before giving up
# next_after skips this many blocks more: blocks running tables hold with no id in use yet
MARGIN_BLOCKS = 1024


class RoomIdsUnusable(RuntimeError):
    """No room id can be given out: an operator must act (docs/runbooks.md)."""


class RoomIdsExhausted(RoomIdsUnusable):
    """Every id of the range was given out."""


class RoomIdsLost(RoomIdsUnusable):
    """The counter is gone or went back: started again it would give out ids again."""


def _round(key: bytes, half: int) -> int:
    digest = hashlib.blake2b(half.to_bytes(2, "big"), digest_size=2, key=key).digest()
    return int.from_bytes(digest, "big") & _HALF_MASK


def _feistel(x: int) -> int:
    """A permutation of range(2**30)."""
    left, right = x >> _HALF_BITS, x & _HALF_MASK
    for key in _ROUND_KEYS:
        left, right = right, left ^ _round(key, right)
    return left << _HALF_BITS | right


def _unfeistel(y: int) -> int:
    left, right = y >> _HALF_BITS, y & _HALF_MASK
    for key in reversed(_ROUND_KEYS):
        left, right = right ^ _round(key, left), left
    return left << _HALF_BITS | right


def _walk(step: Callable[[int], int], x: int) -> int:
    """``step`` applied to ``x`` until the value falls in range(SPAN) (cycle walking)."""
    x = step(x)
    while x >= SPAN:
        x = step(x)
    return x


def permute(c: int) -> int:
    """The place in range(SPAN) of counter value ``c`` (0 <= c < SPAN): a bijection. The
    network permutes range(2**30); applying it again until the value falls below SPAN
    (cycle walking) keeps the values of range(SPAN) a permutation of themselves."""
    if not 0 <= c < SPAN:
        raise ValueError(f"counter value out of range: {c}")
    return _walk(_feistel, c)


def unpermute(x: int) -> int:
    """The counter value whose place is ``x``: ``unpermute(permute(c)) == c``."""
    if not 0 <= x < SPAN:
        raise ValueError(f"place out of range: {x}")
    return _walk(_unfeistel, x)


def next_after(room_ids: Iterable[int]) -> int:
    """The counter value that gives out none of ``room_ids`` again: the start of the block
    after the latest of them, and MARGIN_BLOCKS more for the blocks that running tables hold
    with no id in use yet; earlier releases' ids, below ID_LOW, do not count."""
    used = [unpermute(i - ID_LOW) for i in room_ids if ID_LOW <= i < ID_LOW + SPAN]
    return 0 if not used else (max(used) // BLOCK + 1 + MARGIN_BLOCKS) * BLOCK


async def _messages(js: Any, stream: str) -> int:
    try:
        return int((await js.stream_info(stream)).state.messages)
    except NotFoundError:
        return 0


async def may_start_at_zero(js: Any) -> bool:
    """Whether a counter that was never there may start at 0: on a new cluster (neither the
    ``rooms`` bucket nor SETTLE holds anything), or over an earlier release's ids
    (``room_ids`` holds their keys; their range is apart). Anywhere else it was lost. The
    rooms and SETTLE are looked at first: a room or a settlement there came after its
    table wrote the counter, so a table starting beside another cannot take that one's
    first room for a lost counter."""
    if not (await _messages(js, f"KV_{ROOMS_BUCKET}") or await _messages(js, SETTLE_STREAM)):
        return True
    return bool(await _messages(js, f"KV_{ROOM_IDS_BUCKET}"))


class RoomIds:
    """A table's source of room ids over the ``room_ids`` bucket (a nats-py KeyValue) of its
    JetStream context ``js``."""

    def __init__(self, kv: Any, js: Any) -> None:
        self.kv = kv
        self.js = js
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
        for _ in range(RESERVE_TRIES):
            # from the stream's leader: a replica catching up may answer an older value
            entry = await kv_latest(self.js, ROOM_IDS_BUCKET, NEXT_KEY)
            if entry is None:
                if not await may_start_at_zero(self.js):
                    raise _lost("is missing where rooms were played")
                start, last = 0, 0       # the first block of a new cluster
            elif entry.value is None:
                raise _lost("was deleted or purged")   # the counter was there
            else:
                text = entry.value.decode("ascii", errors="replace")
                if not text.isdigit():
                    raise _lost(f"is unreadable ({text!r})")
                start, last = int(text), entry.revision
            if start < self._end:        # below a block this table had: set back
                raise _lost(f"went back to {start}, below {self._end}")
            if start + BLOCK > SPAN:
                raise RoomIdsExhausted(f"room ids exhausted: {start} of {SPAN} given out")
            try:
                # last=0: made only where the key never was (nats-py's create would write
                # over a delete marker)
                await self.kv.update(NEXT_KEY, str(start + BLOCK).encode(), last=last)
                return start, start + BLOCK
            except KeyWrongLastSequenceError:
                # another table reserved this block (or made the counter): read again
                await asyncio.sleep(random.uniform(0, 0.01))
        raise TimeoutError(f"no block of room ids reserved in {RESERVE_TRIES} tries")


def _lost(what: str) -> RoomIdsLost:
    return RoomIdsLost(f"the room id counter (bucket {ROOM_IDS_BUCKET}, key {NEXT_KEY}) {what}: "
                       "no room can be made until it is set past every id given out "
                       "(docs/runbooks.md, \"The room id counter lost\")")


def main(argv: list[str]) -> int:
    """``next-after``: room ids on stdin, one per line (a plain id, or a subject that ends
    with one, as earlier releases' SETTLE subjects ``settle.<id>`` do; SETTLE's subject of
    today, which names no room, is passed over), the counter value to put in ``room_ids``'
    key ``next`` on stdout."""
    if argv != ["next-after"]:
        print("usage: python -m services.table.room_ids next-after < room_ids",
              file=sys.stderr)
        return 2
    ids = []
    for n, line in enumerate(sys.stdin, 1):
        word = line.strip().rsplit(".", 1)[-1]
        if not word or line.strip() == SETTLE_SUBJECT:
            continue
        if not word.isdigit():
            print(f"line {n}: not a room id: {line.strip()!r}", file=sys.stderr)
            return 1
        ids.append(int(word))
    print(next_after(ids))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
