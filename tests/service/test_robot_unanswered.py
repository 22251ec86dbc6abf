"""A robot whose answer to a prompt gets no reply at all (a lobby stuck on the room, or cut
off from it) does not wait for a prompt that already came: after its request bound it gives
the stream up, logs in again (the next lobby), its seat is resumed from a fresh snapshot,
which carries the still open prompt, and it answers that again (the same decision: a
repeat never counts twice at the table). A join answered "a moment" is asked again; a
creation refused because the robot already sits in a room logs in again and plays that seat.

Real lobbies on a real nats-server, the in-test table and records of tests/support/lobbyworld.py."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from clients.robot import robot as robot_mod
from clients.robot.robot import Robot
from clients.session import Backoff
from paiju.contracts.directory import SeatEntry
from paiju.frames import server_frame
from paiju.v1 import common_pb2, table_pb2
from paiju.v1 import game_msgs_pb2 as g
from tests.support.lobbyworld import SECRET, World
from tests.support.waiting import eventually

QUICK = Backoff(first=0.05, longest=0.2, give_up=20.0)
UID = 641


async def test_a_robot_whose_answer_is_never_replied_to_resumes_and_answers_again(
        world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(robot_mod, "REQUEST_TIMEOUT", 1.5)
    first, second = await world.lobby(), await world.lobby()
    for host in world.lobbies:   # a command the table holds is followed, never answered
        host.app.move_seconds = 600
    table = world.table
    room = await table.add_room(game=common_pb2.XUEZHAN)
    prompt = server_frame(g.Prompt(game="xuezhan", seat=0, room_id=room.room_id,
                                   decision=7, actions=[g.ActionSpec(kind="pass")]))
    answer = table.answer

    async def snapshot_with_prompt(cmd: table_pb2.TableCommand) -> table_pb2.TableReply:
        reply = await answer(cmd)
        if cmd.kind == "snapshot":   # the decision is still open: its prompt again
            reply.frames.append(prompt)
        return reply
    table.answer = snapshot_with_prompt   # type: ignore[method-assign]
    robot = Robot([first, second], UID, "xuezhan", SECRET, room_id=room.room_id,
                  policy="random", backoff=QUICK)
    task = asyncio.create_task(robot.run())
    try:
        await asyncio.wait_for(robot.seated.wait(), 10)
        await table.wait_for("ask_ready", UID)

        def actions() -> list[table_pb2.TableCommand]:
            return table.of_kind("mahjong_action", UID)
        table.hold = True                  # from now on the table answers nothing
        await world.emit(room, private=[(UID, prompt)])
        await eventually(lambda: len(actions()) == 1, "the robot never answered the prompt")
        old = actions()[0].session_id
        # the first session's commands stay unanswered (its lobby sends the held answer again,
        # table_link.RESEND_SECONDS); the next session's are answered
        table.unanswered = lambda cmd: cmd.session_id == old
        table.hold = False
        started = asyncio.get_running_loop().time()

        def resumed() -> list[table_pb2.TableCommand]:   # answers of the new session
            return [a for a in actions() if a.session_id != old]
        await eventually(lambda: bool(resumed()),
                         "the robot never answered the prompt again after resuming", 15)
        took = asyncio.get_running_loop().time() - started
        assert robot.session is not None and robot.session.reconnects == 1
        assert robot.session.address == second
        assert table.of_kind("snapshot", UID), "the seat was not resumed"
        again = resumed()[0].frame
        assert again.decision == 7 and again.mahjong_action.kind == "pass"
        assert took < 1.5 + 5.0, took   # the request bound, then a reconnect and a resume
        assert any("timeout: no answer to pass" in e for e in robot.stats.errors)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_a_join_answered_a_moment_is_asked_again(world: World) -> None:
    # seen in the partition test: a robot's JoinRoom answered "a moment" (the directory
    # did not answer) ended the robot, and its room never started
    table = world.table
    room = await table.add_room(game=common_pb2.XUEZHAN)
    answer = table.answer
    refused: list[int] = []

    async def busy_once(cmd: table_pb2.TableCommand) -> table_pb2.TableReply:
        if cmd.frame.WhichOneof("payload") == "join_room" and not refused:
            refused.append(cmd.user_id)
            return table_pb2.TableReply(request_id=cmd.request_id,
                                        code=common_pb2.ERR_UNAVAILABLE,
                                        message="a moment", seat=-1)
        return await answer(cmd)
    table.answer = busy_once   # type: ignore[method-assign]
    robot = Robot([await world.lobby()], 642, "xuezhan", SECRET, room_id=room.room_id,
                  backoff=QUICK)
    task = asyncio.create_task(robot.run())
    try:
        await asyncio.wait_for(robot.seated.wait(), 10)
        assert refused == [642] and len(table.of_kind("join_room", 642)) == 2
        assert robot.room_id == room.room_id and robot.seat == 0
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_a_robot_told_it_sits_elsewhere_logs_in_again_and_plays_that_seat(
        world: World) -> None:
    # seen in the partition test: a creation whose answer was lost seated the robot; asked
    # again it was refused "still seated in room X: log in again to resume it", and the
    # robot ended without a room
    table = world.table
    room = await table.add_room(game=common_pb2.XUEZHAN, seated=(643,))

    class SeatedMeanwhile(Robot):
        async def _take_seat(self, reply: Any) -> None:
            if not reply.login_ok.room.room_id:   # logged in unseated; the lost try seats it
                await world.kv["seats"].put("643", SeatEntry(
                    room_id=room.room_id, owner="table-a", address=table.address,
                    seat=0).encode())
            await super()._take_seat(reply)
    robot = SeatedMeanwhile([await world.lobby()], 643, "xuezhan", SECRET, backoff=QUICK,
                            create={"base_score": 1, "total_hands": 2})
    task = asyncio.create_task(robot.run())
    try:
        await asyncio.wait_for(robot.seated.wait(), 10)
        assert robot.room_id == room.room_id and robot.seat == 0
        assert robot.session is not None and robot.session.reconnects == 1
        await table.wait_for("snapshot", 643)
        assert not table.created, "no second room"
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
