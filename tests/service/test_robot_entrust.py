"""A robot whose seat entrust took over (its turn timed out while its lobby was dead or cut
off) takes it back, as a player back at the table does: on the InEntrust of its own seat,
and when the snapshot of a resumed seat shows it entrusted in a hand. Without that it would
get no prompt until the hand ended (entrust plays a timed-out seat to the end of the deal).

Real lobbies on a real nats-server, the in-test table and records of tests/support/lobbyworld.py."""

from __future__ import annotations

import asyncio

from clients.robot.robot import Robot
from clients.session import Backoff
from paiju.frames import server_frame
from paiju.v1 import common_pb2, table_pb2
from paiju.v1 import lobby_msgs_pb2 as lm
from tests.support.lobbyworld import SECRET, World

QUICK = Backoff(first=0.05, longest=0.2, give_up=20.0)


async def seated(world: World, uid: int, addresses: list[str]) -> tuple[Robot, asyncio.Task]:  # type: ignore[type-arg]
    room = await world.table.add_room(game=common_pb2.XUEZHAN, seated=(uid + 1,))
    robot = Robot(addresses, uid, "xuezhan", SECRET, room_id=room.room_id, backoff=QUICK)
    task = asyncio.create_task(robot.run())
    await asyncio.wait_for(robot.seated.wait(), 10)
    await world.table.wait_for("ask_ready", uid)
    return robot, task


async def test_a_robot_takes_its_entrusted_seat_back(world: World) -> None:
    robot, task = await seated(world, 651, [await world.lobby()])
    try:
        assert robot.seat == 1
        room = world.table.rooms[robot.room_id]
        # another seat's entrust is not ours
        await world.emit(room, [server_frame(lm.InEntrust(seat=0, count=3))])
        await asyncio.sleep(0.5)
        assert not world.table.of_kind("cancel_entrust", 651)
        await world.emit(room, [server_frame(lm.InEntrust(seat=1, count=3))])
        await world.table.wait_for("cancel_entrust", 651)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_a_resumed_robot_entrusted_in_a_hand_takes_its_seat_back(world: World) -> None:
    first, second = await world.lobby(), await world.lobby()
    robot, task = await seated(world, 653, [first, second])
    table = world.table
    answer = table.answer

    async def entrusted_in_a_hand(cmd: table_pb2.TableCommand) -> table_pb2.TableReply:
        reply = await answer(cmd)
        if cmd.kind == "snapshot":   # the seat timed out while its lobby was dead
            joined = reply.frames[0].room_joined
            joined.room.status = common_pb2.ROOM_PLAYING
            for p in joined.room.players:
                p.entrusted = p.user_id == 653
        return reply
    table.answer = entrusted_in_a_hand   # type: ignore[method-assign]
    try:
        assert not table.of_kind("cancel_entrust", 653)
        host = world.lobbies.pop(0)
        await host.server.stop(0)          # its lobby dies: it resumes on the other one
        await table.wait_for("snapshot", 653)
        await table.wait_for("cancel_entrust", 653)
        assert robot.session is not None and robot.session.address == second
        await host.stop(0)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
