"""Records killed while robots play, then started again: every hand is stored exactly once,
with zero-sum deltas and exact coin balances."""

from __future__ import annotations

import asyncio
import signal
from collections import Counter
from pathlib import Path

import grpc

from clients.robot.robot import run_tables
from paiju.v1 import records_pb2, records_pb2_grpc
from tests.system.conftest import SECRET, start_stack, stop_stack

ROOMS, HANDS = 2, 6


async def list_hands(address: str) -> list[records_pb2.HandRecord]:
    async with grpc.aio.insecure_channel(address) as channel:
        reply = await records_pb2_grpc.RecordsStub(channel).ListHands(
            records_pb2.ListHandsRequest(limit=1000), timeout=5)
    return list(reply.hands)


async def test_records_killed_mid_run_loses_and_doubles_nothing(tmp_path: Path) -> None:
    stack = start_stack(tmp_path, PAIJU_RECORDS__ACK_WAIT_SECONDS="2")
    try:
        robots = asyncio.create_task(run_tables(stack.lobby_address, "xuezhan", ROOMS, SECRET,
                                                hands=HANDS, first_uid=40_000))
        for _ in range(200):  # some hands are written, then records dies mid-stream
            if len(await list_hands(stack.records.address)) >= 3:
                break
            await asyncio.sleep(0.05)
        stack.records.stop(signal.SIGKILL)
        assert not robots.done(), "records died while hands were still being played"
        await asyncio.sleep(2.0)   # robots keep playing: settlements pile up in JetStream
        stack.records.start()
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
