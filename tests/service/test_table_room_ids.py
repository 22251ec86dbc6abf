"""Room ids over a real nats-server (services/table/room_ids.py): tables allocating at the
same time never get the same id, and the ``room_ids`` bucket keeps one key however many
rooms are made, beside the keys of an earlier release's 8-digit ids; a counter deleted or
purged, or a bucket made again empty where rooms were played, is refused rather than started
again from 0, and so is one set back; the range's end is a clear error."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

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
    permute,
)


@pytest.fixture
async def nc(fresh_nats: EmbeddedNats) -> AsyncIterator[nats.NATS]:
    """A connection to a nats-server of this test's own."""
    conn = await nats.connect(fresh_nats.url)
    yield conn
    await conn.close()


async def ids_bucket(nc: nats.NATS) -> tuple[Any, RoomIds]:
    """The bucket and a table's RoomIds over it, as the table makes them (core.py)."""
    js = nc.jetstream()
    kv = await bus.ensure_bucket(js, bus.ROOM_IDS_BUCKET)
    return kv, RoomIds(kv, js)


async def test_tables_allocating_together_never_share_an_id(fresh_nats: EmbeddedNats) -> None:
    conns = [await nats.connect(fresh_nats.url) for _ in range(3)]
    try:
        made = [await ids_bucket(nc) for nc in conns]
        buckets, tables = [kv for kv, _ in made], [ids for _, ids in made]
        # an earlier release's tables created a key per id, drawn at random below ID_LOW,
        # and played rooms: the counter starts over their keys
        await buckets[0].create("12345678", b"table-old")
        await bus.ensure_bucket(conns[0].jetstream(), bus.ROOMS_BUCKET)
        await (await conns[0].jetstream().key_value(bus.ROOMS_BUCKET)).put("12345678", b"{}")

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
        again = [await (await ids_bucket(conns[2]))[1].allocate() for _ in range(BLOCK + 1)]
        assert not set(again) & set(ids)
    finally:
        for nc in conns:
            await nc.close()


@pytest.mark.parametrize("how", ["delete", "purge"])
async def test_a_counter_deleted_or_purged_is_never_started_again(
        nc: nats.NATS, how: str) -> None:
    kv, _ = await ids_bucket(nc)
    first = [await (await ids_bucket(nc))[1].allocate() for _ in range(3)]   # 3 blocks
    await getattr(kv, how)(NEXT_KEY)
    _, ids = await ids_bucket(nc)
    with pytest.raises(RoomIdsLost, match="deleted or purged"):
        await ids.allocate()
    # set again as the runbook says, from the ids given out, it goes on
    await kv.put(NEXT_KEY, str(next_after(first)).encode())
    assert await ids.allocate() not in first


async def test_the_end_of_the_range_is_a_clear_error(nc: nats.NATS) -> None:
    kv, ids = await ids_bucket(nc)
    await kv.put(NEXT_KEY, str(SPAN - BLOCK).encode())
    last = {await ids.allocate() for _ in range(BLOCK)}
    assert len(last) == BLOCK
    with pytest.raises(RoomIdsExhausted):
        await ids.allocate()


async def test_a_bucket_made_again_empty_where_rooms_were_played_is_refused(
        nc: nats.NATS) -> None:
    """A new cluster counts from 0; the same empty bucket on a cluster whose ``rooms`` bucket
    holds rooms (its room_ids lost and made again) does not."""
    js = nc.jetstream()
    _, new = await ids_bucket(nc)
    await bus.ensure_bucket(js, bus.ROOMS_BUCKET)
    assert await new.allocate() == ID_LOW + permute(0)
    await (await js.key_value(bus.ROOMS_BUCKET)).put(str(ID_LOW + permute(0)), b"{}")
    await js.delete_key_value(bus.ROOM_IDS_BUCKET)
    _, lost = await ids_bucket(nc)
    with pytest.raises(RoomIdsLost, match="missing where rooms were played"):
        await lost.allocate()


async def test_a_counter_set_back_or_unreadable_is_refused(nc: nats.NATS) -> None:
    kv, ids = await ids_bucket(nc)
    for _ in range(BLOCK + 1):      # a second block: this table has had [0, 64)
        await ids.allocate()
    await kv.put(NEXT_KEY, str(BLOCK).encode())
    for _ in range(BLOCK - 1):      # the block in hand goes on
        await ids.allocate()
    with pytest.raises(RoomIdsLost, match="went back to 32, below 64"):
        await ids.allocate()
    await kv.put(NEXT_KEY, b"many")
    with pytest.raises(RoomIdsLost, match="unreadable"):
        await ids.allocate()
