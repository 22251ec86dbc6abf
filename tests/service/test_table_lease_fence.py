"""A table whose lease renewals fail (its NATS cannot reach the ``tables`` bucket, while the
room log and the other buckets still answer) fences itself as a stalled one does
(services/table/lease.py, "Fencing"): once no renewal has landed for most of a lease (its
entry may expire and another table adopt its rooms), it writes, sends and answers nothing
for its rooms (commands are "a moment", ERR_ROOM_MOVING; the log takes no record) and builds
none; when a renewal lands again, each room is checked against its directory entry and its
log's tail, and plays on.

A real nats-server and a real TableCore (services/table/core.py)."""

from __future__ import annotations

import asyncio
import time

import nats
import pytest

from paiju.v1 import common_pb2, table_pb2
from paiju.v1 import lobby_msgs_pb2 as lm
from services.common import bus
from services.common.config import load_config
from services.common.natsd import EmbeddedNats
from services.table.core import TableCore

LEASE = 2


def join(room_id: int, user_id: int) -> table_pb2.TableCommand:
    cmd = table_pb2.TableCommand(room_id=room_id, user_id=user_id,
                                 profile=table_pb2.PlayerProfile(user_id=user_id,
                                                                 nickname=f"p{user_id}"))
    cmd.frame.join_room.CopyFrom(lm.JoinRoom(room_id=room_id))
    return cmd


async def until(check, what: str, seconds: float = 10.0) -> float:  # type: ignore[no-untyped-def]
    started = time.monotonic()
    while not check():
        assert time.monotonic() - started < seconds, what
        await asyncio.sleep(0.05)
    return time.monotonic() - started


async def test_a_table_whose_renewals_fail_fences_its_rooms_until_it_renews_and_checks(
        fresh_nats: EmbeddedNats, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NATS_URL", fresh_nats.url)
    monkeypatch.setenv("PAIJU_TABLE__LEASE_TTL_SECONDS", str(LEASE))
    monkeypatch.setenv("PAIJU_ARBITER__PORT", "1")
    table = TableCore(load_config("test"), "table-f", "127.0.0.1:1")
    await table.start()
    nc = await nats.connect(fresh_nats.url)
    js = nc.jetstream()
    try:
        room = await table.create_room(table_pb2.CreateRoomRequest(
            game=common_pb2.XUEZHAN, base_score=1, total_hands=1))
        room_id = room.room_id
        assert (await table.command(join(room_id, 1))).code == 0
        lease = table.lease
        assert lease.current(table.tenure[room_id])

        await js.delete_stream(f"KV_{bus.TABLES_BUCKET}")   # renewals fail from now on
        cut = time.monotonic()
        fenced = await until(lambda: not lease.current(table.tenure.get(room_id)),
                             "the table never fenced its room while its renewals failed")
        # not before its entry could be about to expire, and soon after
        assert lease.stall_after - lease.interval <= fenced <= lease.stall_after + 2 * lease.interval
        assert lease.unverified
        records = len((await table.log.read(room_id))[0])
        reply = await table.command(join(room_id, 2))
        assert reply.code == common_pb2.ERR_ROOM_MOVING, reply
        await asyncio.sleep(LEASE)         # still failing: still fenced, nothing written
        assert not lease.current(table.tenure.get(room_id)) and lease.unverified
        assert len((await table.log.read(room_id))[0]) == records

        await bus.ensure_bucket(js, bus.TABLES_BUCKET, ttl=LEASE)   # renewals land again
        await until(lambda: lease.current(table.tenure.get(room_id)),
                    "the room never played on after the renewals landed again")
        assert time.monotonic() - cut > LEASE
        assert (await table.command(join(room_id, 2))).code == 0
        assert len((await table.log.read(room_id))[0]) == records + 1
    finally:
        await nc.close()
        await table.stop()
