"""Two lobbies, robots spread over both, and one lobby is stopped mid-hand (SIGTERM: it
drains, sending its clients a Reconnect frame). Its robots log in again on the other lobby,
resume their seats from the snapshot and play on: every hand finishes, is settled exactly
once and zero-sum, and no robot gives up. A killed lobby (SIGKILL) is the compact chaos
run's lobby-kill (tests/cluster/test_chaos.py: settled once, zero-sum) and
tests/cluster/test_lobby_kill_prompts.py (every player prompted again within a bound)."""

from __future__ import annotations

import asyncio
import signal
from collections import Counter
from pathlib import Path

import grpc
import nats

from clients.robot.robot import run_tables
from paiju.v1 import common_pb2, lobby_msgs_pb2, records_pb2, records_pb2_grpc
from services.common import bus
from tests.support.procs import make_service
from tests.support.tablekit import room_frames
from tests.system.conftest import SECRET, start_stack, stop_stack

HANDS = 2
DISCARDS_BEFORE = 6        # the lobby goes away once this many discards were made


async def hands_of(address: str, room_ids: set[int]) -> list[records_pb2.HandRecord]:
    async with grpc.aio.insecure_channel(address) as channel:
        reply = await records_pb2_grpc.RecordsStub(channel).ListHands(
            records_pb2.ListHandsRequest(limit=1000), timeout=5)
    return [h for h in reply.hands if h.room_id in room_ids]


async def test_robots_finish_every_hand_when_their_lobby_drains(tmp_path: Path) -> None:
    stack = start_stack(tmp_path)
    other = make_service("lobby", stack.nats.url, tmp_path, **{
        k: v for k, v in stack.lobby.env.items() if k.startswith(("PAIJU_RECORDS", "PAIJU_ARB",
                                                                  "PAIJU_LOBBY__TOKEN"))})
    other.start()
    nc = await nats.connect(stack.nats.url)
    try:
        discards = asyncio.Event()
        seen: list[int] = []

        async def on_event(msg: nats.aio.msg.Msg) -> None:
            for frame in room_frames(msg.data):
                if frame.WhichOneof("payload") == "mj_discard":
                    seen.append(1)
                    if len(seen) >= DISCARDS_BEFORE:
                        discards.set()

        await nc.subscribe("room.*.events", cb=on_event)
        await bus.sync(nc)
        robots = asyncio.create_task(run_tables(
            [stack.lobby_address, other.address], "xuezhan", 1, SECRET, hands=HANDS,
            first_uid=62_000))
        await asyncio.wait_for(discards.wait(), 60)
        # robots 0 and 2 started on the first lobby, 1 and 3 on the other
        await asyncio.to_thread(stack.lobby.stop, signal.SIGTERM)
        results = await asyncio.wait_for(robots, 240)

        assert len(results) == 4
        assert all(r.user_id for r in results), [r.errors for r in results]
        assert [r.hands for r in results] == [HANDS] * 4, [r.errors for r in results]
        moved = {r.user_id: r.reconnects for r in results}
        assert all(moved[uid] >= 1 for uid in (results[0].user_id, results[2].user_id)), moved
        transient = (str(common_pb2.ERR_ROOM_MOVING), str(common_pb2.ERR_UNAVAILABLE))
        assert all(e.startswith(("969", *transient)) for r in results for e in r.errors), \
            [r.errors for r in results]
        assert any(r.closed_reason == lobby_msgs_pb2.NoticeDismiss.ALL_HANDS_PLAYED
                   for r in results)
        rooms = {room for r in results for room in r.rooms}
        assert len(rooms) == 1
        hands: list[records_pb2.HandRecord] = []
        for _ in range(100):   # records consumes asynchronously
            hands = await hands_of(stack.records.address, rooms)
            if len(hands) >= HANDS + 1:
                break
            await asyncio.sleep(0.2)
        per_hand = Counter((h.room_id, h.hand_no) for h in hands if not h.final)
        assert sorted(hand for _, hand in per_hand) == list(range(1, HANDS + 1))
        assert set(per_hand.values()) == {1}, "every hand is settled exactly once"
        assert all(sum(h.deltas) == 0 for h in hands if not h.final)
    finally:
        await nc.close()
        other.stop()
        stop_stack(stack)
