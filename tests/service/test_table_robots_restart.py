"""A table process killed after robots were seated and started again rebuilds the room from
its log with its robots (ready, entrusted, robot): the one person readies and the hand plays
to its settlement."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import grpc

from paiju import frames
from paiju.v1 import common_pb2, table_pb2, table_pb2_grpc
from paiju.v1 import lobby_msgs_pb2 as lm
from services.common import reserved
from services.common.natsd import EmbeddedNats
from tests.service.test_table import settlements
from tests.support.procs import make_service
from tests.support.tablekit import LobbyLink, Table


async def room_info(address: str, room_id: int) -> common_pb2.RoomInfo:
    async with grpc.aio.insecure_channel(address) as channel:
        return await table_pb2_grpc.TableStub(channel).GetRoom(
            table_pb2.GetRoomRequest(room_id=room_id))


async def test_a_restarted_table_keeps_the_robots(fresh_nats: EmbeddedNats,
                                                  tmp_path: Path) -> None:
    table = make_service("table", fresh_nats.url, tmp_path,
                         PAIJU_TABLE__INSTANCE="table-robots")
    table.start()
    try:
        async with grpc.aio.insecure_channel(table.address) as channel:
            created = await table_pb2_grpc.TableStub(channel).CreateRoom(
                table_pb2.CreateRoomRequest(game=common_pb2.DADUN, base_score=1, total_hands=1,
                                            options_json=json.dumps({}), creator_id=81))
        room_id = created.room.room_id
        link = LobbyLink(table.address, fresh_nats.url)
        t = Table(fresh_nats.url, link, room_id, "dadun")
        await t.connect()
        await t.seat(81)
        reply = await link.send(room_id, 81, frames.client_frame(lm.AddRobots()))
        assert reply.code == 0, reply.message
        before = await room_info(table.address, room_id)
        await t.close()
        await link.close()

        table.stop(signal.SIGKILL)
        table.start()

        after = await room_info(table.address, room_id)
        assert [(p.user_id, p.robot, p.ready, p.entrusted, p.nickname) for p in after.players] \
            == [(p.user_id, p.robot, p.ready, p.entrusted, p.nickname) for p in before.players]
        assert sum(1 for p in after.players if p.robot and reserved.is_robot(p.user_id)) == 3
        link = LobbyLink(table.address, fresh_nats.url)
        t = Table(fresh_nats.url, link, room_id, "dadun")
        await t.connect()
        person, reply = await t.seat(81)   # a re-join of the same seat
        assert reply.code == 0 and reply.seat == 0
        t.play()
        await t.ready_all()
        hand, final = await settlements(fresh_nats.url, 2, timeout=60)
        assert hand["room_id"] == room_id and sum(hand["deltas"]) == 0
        await t.close()
        await link.close()
    finally:
        table.stop(signal.SIGTERM)
