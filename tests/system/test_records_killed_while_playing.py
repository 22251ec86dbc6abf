"""Records killed while robots play, then started again: every hand is stored exactly once,
with zero-sum deltas and exact coin balances."""

from __future__ import annotations

import asyncio
import signal
from collections import Counter
from pathlib import Path
from typing import Any

import grpc
import nats

from clients.robot.robot import run_tables
from paiju.v1 import records_pb2, records_pb2_grpc
from services.common import bus
from tests.system.conftest import SECRET, start_stack, stop_stack

ROOMS, HANDS = 2, 6


async def list_hands(address: str) -> list[records_pb2.HandRecord]:
    async with grpc.aio.insecure_channel(address) as channel:
        reply = await records_pb2_grpc.RecordsStub(channel).ListHands(
            records_pb2.ListHandsRequest(limit=1000), timeout=5)
    return list(reply.hands)


async def settlements_published(js: Any) -> int:
    """Settlements the tables have published so far (the stream dedupes repeats)."""
    return (await js.stream_info(bus.SETTLE_STREAM)).state.messages


async def test_records_killed_mid_run_loses_and_doubles_nothing(tmp_path: Path) -> None:
    stack = start_stack(tmp_path, PAIJU_RECORDS__ACK_WAIT_SECONDS="2")
    try:
        robots = asyncio.create_task(run_tables(stack.lobby_address, "xuezhan", ROOMS, SECRET,
                                                hands=HANDS, first_uid=40_000))
        total = ROOMS * (HANDS + 1)   # every hand and each room's final record
        for _ in range(200):  # some hands are written, then records dies mid-stream
            if len(await list_hands(stack.records.address)) >= 2:
                break
            await asyncio.sleep(0.05)
        # the robots run on this event loop: nothing of theirs moves between the check above
        # and the kill
        stack.records.stop(signal.SIGKILL)
        nc = await nats.connect(stack.nats.url)
        js = nc.jetstream()
        at_kill = published = await settlements_published(js)
        # the robots keep playing: settlements pile up in JetStream while records is down
        # (so the restarted records must write them, not the killed one)
        for _ in range(600):
            published = await settlements_published(js)
            if published >= min(at_kill + 2, total):
                break
            await asyncio.sleep(0.05)
        await nc.close()
        assert at_kill < published, f"no settlement was published while records was down " \
                                    f"({at_kill} at the kill, {published} of {total})"
        stack.records.start(port_retries=0)   # the table and lobby dial its port
        results = await asyncio.wait_for(robots, 300)
        assert sum(r.hands for r in results) == ROOMS * HANDS * 4
        hands: list[records_pb2.HandRecord] = []
        for _ in range(150):
            hands = await list_hands(stack.records.address)
            if len(hands) >= ROOMS * (HANDS + 1):
                break
            await asyncio.sleep(0.2)
        keys = Counter((h.room_id, h.hand_no) for h in hands)
        assert len([k for k in keys if k[1] > 0]) == ROOMS * HANDS
        assert len([k for k in keys if k[1] == 0]) == ROOMS           # the final records
        assert set(keys.values()) == {1}
        totals: Counter[int] = Counter()
        for h in hands:
            if not h.final:
                assert sum(h.deltas) == 0
                for uid, delta in zip(h.user_ids, h.deltas, strict=True):
                    totals[uid] += delta
        async with grpc.aio.insecure_channel(stack.records.address) as channel:
            stub = records_pb2_grpc.RecordsStub(channel)
            for uid, total in totals.items():
                player = await stub.GetPlayer(records_pb2.GetPlayerRequest(user_id=uid))
                assert player.coins == 100_000 + total
    finally:
        stop_stack(stack)
