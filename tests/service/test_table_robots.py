"""Robots seated by the table (AddRobots) with a real nats-server, arbiter and table: only the
room's creator may add them, between hands; they are entrusted for good and always ready, so
one person plays a whole hand against three of them; nothing private is ever published for a
robot's user id; the table refuses them when ``table.robots_allowed`` is off."""

from __future__ import annotations

import json
from typing import Any

import grpc
import nats
import pytest

from paiju import frames
from paiju.v1 import common_pb2, table_pb2
from paiju.v1 import lobby_msgs_pb2 as lm
from services.common import reserved
from services.common.natsd import EmbeddedNats
from tests.service.test_table import running_stack, settlements
from tests.support.tablekit import Table, hand_overs
from tests.support.waiting import eventually


async def robot_room(stack: dict[str, Any], game: int, creator: int) -> Table:
    reply = await stack["stub"].CreateRoom(table_pb2.CreateRoomRequest(
        game=game, base_score=1, total_hands=1, options_json="{}", creator_id=creator))
    name = {common_pb2.XUEZHAN: "xuezhan", common_pb2.CHANGSHA: "changsha",
            common_pb2.DADUN: "dadun"}[game]
    t = Table(stack["nats"].url, stack["link"], reply.room.room_id, name)
    await t.connect()
    return t


def add_robots(count: int = 0) -> Any:
    return frames.client_frame(lm.AddRobots(count=count))


@pytest.mark.parametrize("game", [common_pb2.XUEZHAN, common_pb2.DADUN])
async def test_the_creator_fills_the_room_with_robots_and_plays_a_hand(
        fresh_nats: EmbeddedNats, game: int) -> None:
    async with running_stack(fresh_nats) as stack:
        t = await robot_room(stack, game, creator=41)
        raw = await nats.connect(fresh_nats.url)   # everything the room publishes
        published: list[table_pb2.RoomEvents] = []

        async def keep(msg: Any) -> None:
            published.append(table_pb2.RoomEvents.FromString(msg.data))
        await raw.subscribe(f"room.{t.room_id}.events", cb=keep)
        owner, reply = await t.seat(41)
        assert reply.code == 0
        guest, reply = await t.seat(42)
        link = stack["link"]
        # only the creator may add robots
        refused = await link.send(t.room_id, 42, add_robots())
        assert refused.code == common_pb2.ERR_NOT_ROOM_OWNER, refused
        one = await link.send(t.room_id, 41, add_robots(1))
        assert one.code == 0, one.message
        rest = await link.send(t.room_id, 41, add_robots(0))
        assert rest.code == 0, rest.message
        full = await link.send(t.room_id, 41, add_robots(0))
        assert full.code == common_pb2.ERR_ROOM_FULL
        info = await stack["stub"].GetRoom(table_pb2.GetRoomRequest(room_id=t.room_id))
        robots = [p for p in info.players if p.robot]
        assert [p.seat for p in robots] == [2, 3]
        assert all(reserved.is_robot(p.user_id) and p.entrusted and p.ready and
                   "robot" in p.nickname for p in robots)
        assert not any(p.robot for p in info.players if p.user_id in (41, 42))
        # the two people get ready; the robots are: the hand starts and plays to its end
        t.play()
        await t.ready_all()
        hand, final = await settlements(stack["nats"].url, 2, timeout=60)
        assert hand["room_id"] == t.room_id and sum(hand["deltas"]) == 0
        assert sum(1 for uid in hand["seats"] if reserved.is_robot(uid)) == 2
        await eventually(lambda: hand_overs(owner) and hand_overs(guest),
                         "the people see the hand end", seconds=10)
        # nothing private was ever published for a robot (no hand, no prompt)
        assert published
        addressed = {p.user_id for m in published for p in m.private}
        assert addressed and not any(reserved.is_robot(uid) for uid in addressed), addressed
        await raw.close()
        await t.close()


async def test_robots_only_between_hands_and_a_room_of_robots_alone_closes(
        fresh_nats: EmbeddedNats) -> None:
    async with running_stack(fresh_nats) as stack:
        t = await robot_room(stack, common_pb2.XUEZHAN, creator=51)
        owner, _ = await t.seat(51)
        link = stack["link"]
        assert (await link.send(t.room_id, 51, add_robots(2))).code == 0
        assert (await link.send(t.room_id, 51, add_robots(-1))).code == common_pb2.ERR_BAD_FRAME
        # the creator leaves before the first hand: robots alone do not keep the room
        left = await link.send(t.room_id, 51, frames.client_frame(lm.AskExit()))
        assert left.code == 0
        with pytest.raises(grpc.aio.AioRpcError) as gone:
            await stack["stub"].GetRoom(table_pb2.GetRoomRequest(room_id=t.room_id))
        assert gone.value.code() == grpc.StatusCode.NOT_FOUND
        assert [n.reason for n in owner.of_kind("notice_dismiss")] in (
            [], [lm.NoticeDismiss.IDLE_TOO_LONG])
        # in a hand: refused
        t2 = await robot_room(stack, common_pb2.XUEZHAN, creator=61)
        for uid in (61, 62, 63):
            await t2.seat(uid)
        for p in t2.players:
            p.auto = False
        assert (await link.send(t2.room_id, 61, add_robots(1))).code == 0
        await t2.ready_all()
        await eventually(lambda: t2.players[0].of_kind("prompt"), "the hand started", 10)
        late = await link.send(t2.room_id, 61, add_robots(0))
        assert late.code in (common_pb2.ERR_HAND_IN_PROGRESS, common_pb2.ERR_ROOM_FULL)
        await t.close()
        await t2.close()


async def test_robots_are_refused_when_the_table_does_not_allow_them(
        fresh_nats: EmbeddedNats) -> None:
    async with running_stack(fresh_nats, PAIJU_TABLE__ROBOTS_ALLOWED="false") as stack:
        t = await robot_room(stack, common_pb2.CHANGSHA, creator=71)
        await t.seat(71)
        reply = await stack["link"].send(t.room_id, 71, add_robots())
        assert reply.code == common_pb2.ERR_DISABLED
        info = await stack["stub"].GetRoom(table_pb2.GetRoomRequest(room_id=t.room_id))
        assert len(info.players) == 1
        await t.close()


def test_robot_ids_are_reserved() -> None:
    rid = reserved.robot_id(999_999_999, 3)   # the highest room id (table/room_ids.py)
    assert reserved.is_robot(rid) and rid <= reserved.INT64_MAX
    assert not reserved.is_robot(reserved.new_guest_id())
    assert reserved.is_guest(reserved.new_guest_id())
    assert json.dumps(rid)
