"""The lobby follows a room that moves between two real tables mid-hand: its table is killed
(SIGKILL: the other adopts it once its lease expires) or stopped (SIGTERM: it hands the room
over). Commands sent meanwhile are retried against the new owner (ERR_ROOM_MOVING at worst,
never an internal error), the players keep their room subscription, and the robots finish
every hand, each settled exactly once."""

from __future__ import annotations

import asyncio
import signal
from collections import Counter
from pathlib import Path

import nats
import pytest

from clients.robot.robot import run_tables
from paiju.contracts.directory import RoomEntry
from paiju.v1 import common_pb2, lobby_msgs_pb2
from services.common import bus
from tests.support.procs import make_service
from tests.support.tablekit import room_frames
from tests.system.conftest import SECRET, start_stack, stop_stack
from tests.system.test_lobby_drained_while_playing import hands_of

HANDS = 2
DISCARDS_BEFORE = 6
LEASE = "3"      # seconds: a dead table's rooms are adopted soon after


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["killed", "drained"])
async def test_robots_finish_every_hand_when_their_table_goes_away(tmp_path: Path,
                                                                  sig: int) -> None:
    stack = start_stack(tmp_path, PAIJU_TABLE__LEASE_TTL_SECONDS=LEASE)
    env = {k: v for k, v in stack.table.env.items()
           if k.startswith(("PAIJU_RECORDS", "PAIJU_ARB", "PAIJU_LOBBY__TOKEN"))}
    second = make_service("table", stack.nats.url, tmp_path, PAIJU_TABLE__INSTANCE="table-two",
                          PAIJU_TABLE__LEASE_TTL_SECONDS=LEASE, **env).start()
    tables = {"table-sys": stack.table, "table-two": second}
    nc = await nats.connect(stack.nats.url)
    try:
        discards = asyncio.Event()
        count = [0]

        playing: set[str] = set()

        async def on_event(msg: nats.aio.msg.Msg) -> None:
            playing.add(msg.subject.split(".")[1])
            for frame in room_frames(msg.data):
                if frame.WhichOneof("payload") == "mj_discard":
                    count[0] += 1
                    if count[0] >= DISCARDS_BEFORE:
                        discards.set()

        await nc.subscribe("room.*.events", cb=on_event)
        await bus.sync(nc)
        robots = asyncio.create_task(run_tables(
            stack.lobby_address, "xuezhan", 1, SECRET, hands=HANDS,
            first_uid=63_000 if sig == signal.SIGKILL else 64_000))
        await asyncio.wait_for(discards.wait(), 60)
        rooms = await nc.jetstream().key_value(bus.ROOMS_BUCKET)
        # the room from its events' subject (a key listing of the bucket can come back
        # empty while its watch starts: nats-py's NoKeysError)
        assert len(playing) == 1, playing
        owner = RoomEntry.decode((await rooms.get(playing.pop())).value).owner
        await asyncio.to_thread(tables[owner].stop, sig)
        results = await asyncio.wait_for(robots, 240)

        assert [r.hands for r in results] == [HANDS] * 4, [r.errors for r in results]
        assert all(r.reconnects == 0 for r in results), "the lobby stayed: nobody reconnected"
        transient = (str(common_pb2.ERR_ROOM_MOVING), str(common_pb2.ERR_UNAVAILABLE))
        assert all(e.startswith(("969", *transient)) for r in results for e in r.errors), \
            [r.errors for r in results]
        assert any(r.closed_reason == lobby_msgs_pb2.NoticeDismiss.ALL_HANDS_PLAYED
                   for r in results)
        room_ids = {room for r in results for room in r.rooms}
        hands = []
        for _ in range(100):
            hands = await hands_of(stack.records.address, room_ids)
            if len(hands) >= HANDS + 1:
                break
            await asyncio.sleep(0.2)
        per_hand = Counter((h.room_id, h.hand_no) for h in hands if not h.final)
        assert sorted(hand for _, hand in per_hand) == list(range(1, HANDS + 1))
        assert set(per_hand.values()) == {1}, "every hand is settled exactly once"
        assert all(sum(h.deltas) == 0 for h in hands if not h.final)
    finally:
        await nc.close()
        second.stop()
        stop_stack(stack)
