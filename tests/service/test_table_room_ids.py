"""Room ids over a real nats-server (services/table/room_ids.py): tables allocating at the
same time never get the same id, and the ``room_ids`` bucket keeps one key however many
rooms are made, beside the keys of an earlier release's 8-digit ids; a counter deleted or
purged is refused rather than started again from 0, and the range's end is a clear error."""

from __future__ import annotations

import asyncio

import nats
import pytest

from services.common import bus
from services.common.natsd import EmbeddedNats
from services.table.room_ids import (
    BLOCK,
    ID_LOW,
    NEXT_KEY,
    SPAN,
    RoomIds,
    RoomIdsExhausted,
    RoomIdsLost,
    next_after,
)


async def test_tables_allocating_together_never_share_an_id(fresh_nats: EmbeddedNats) -> None:
    conns = [await nats.connect(fresh_nats.url) for _ in range(3)]
    try:
        buckets = [await bus.ensure_bucket(nc.jetstream(), bus.ROOM_IDS_BUCKET) for nc in conns]
        # an earlier release's tables created a key per id, drawn at random below ID_LOW
        await buckets[0].create("12345678", b"table-old")
        tables = [RoomIds(kv) for kv in buckets]

        async def make(ids: RoomIds, n: int) -> list[int]:
            return [await ids.allocate() for _ in range(n)]

        # 100 each, concurrently: blocks are reserved while the others reserve theirs
        got = await asyncio.gather(*(make(t, 100) for t in tables),
                                   *(make(t, 40) for t in tables))
        ids = [i for part in got for i in part]
        assert len(ids) == 420 and len(set(ids)) == 420
        assert all(ID_LOW <= i <= 999_999_999 for i in ids)
        # one key for every id given out, and the old release's, untouched
        assert sorted(await buckets[0].keys()) == sorted([NEXT_KEY, "12345678"])
        reserved = int((await buckets[1].get(NEXT_KEY)).value)
        assert reserved % BLOCK == 0 and 420 <= reserved <= 420 + 6 * BLOCK
        # a restarted table starts on a new block: no id of the blocks before comes again
        again = [await RoomIds(buckets[2]).allocate() for _ in range(BLOCK + 1)]
        assert not set(again) & set(ids)
    finally:
        for nc in conns:
            await nc.close()


@pytest.mark.parametrize("how", ["delete", "purge"])
async def test_a_counter_deleted_or_purged_is_never_started_again(
        fresh_nats: EmbeddedNats, how: str) -> None:
    nc = await nats.connect(fresh_nats.url)
    try:
        kv = await bus.ensure_bucket(nc.jetstream(), bus.ROOM_IDS_BUCKET)
        first = [await RoomIds(kv).allocate() for _ in range(3)]   # three tables' blocks
        await getattr(kv, how)(NEXT_KEY)
        ids = RoomIds(kv)
        with pytest.raises(RoomIdsLost, match="deleted or purged"):
            await ids.allocate()
        # set again as the runbook says, from the ids given out, it goes on
        await kv.put(NEXT_KEY, str(next_after(first)).encode())
        assert await ids.allocate() not in first
    finally:
        await nc.close()


async def test_the_end_of_the_range_is_a_clear_error(fresh_nats: EmbeddedNats) -> None:
    nc = await nats.connect(fresh_nats.url)
    try:
        kv = await bus.ensure_bucket(nc.jetstream(), bus.ROOM_IDS_BUCKET)
        await kv.put(NEXT_KEY, str(SPAN - BLOCK).encode())
        ids = RoomIds(kv)
        last = {await ids.allocate() for _ in range(BLOCK)}
        assert len(last) == BLOCK
        with pytest.raises(RoomIdsExhausted):
            await ids.allocate()
    finally:
        await nc.close()
