"""A login whose seat cannot be resumed right now (the table refuses the snapshot for a
moment, or does not answer it) never leaves the client logged in outside its room, silent
until the lobby's silence sweep (45 s) closes it: the client is told to log in again in a
moment, and then its seat is resumed and its snapshot (with the prompt) comes.

Real lobbies on a real nats-server, the in-test table and records of tests/support/lobbyworld.py; the
client is clients/session.py's, as the robots and the terminal client use it."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from clients.session import Backoff, LobbySession
from paiju.v1 import common_pb2, table_pb2
from paiju.v1 import lobby_msgs_pb2 as lm
from tests.support.lobbyworld import World, token

QUICK = Backoff(first=0.05, longest=0.2, give_up=20.0)



@pytest.mark.parametrize("refusal", [common_pb2.ERR_INTERNAL, common_pb2.ERR_UNAVAILABLE])
async def test_a_seat_not_resumed_for_a_moment_is_resumed_at_the_next_login(
        world: World, refusal: int) -> None:
    first, second = await world.lobby(), await world.lobby()
    room = await world.table.add_room()
    uid = 611 + refusal % 7
    s = LobbySession([first, second], backoff=QUICK)
    await s.open()
    try:
        assert (await s.login(token(uid)())).WhichOneof("payload") == "login_ok"
        joined = await s.request(lm.JoinRoom(room_id=room.room_id))
        assert joined.WhichOneof("payload") == "room_joined"
        # the table refuses the next snapshot (a table busy taking the room over, say)
        table = world.table
        answer = table.answer
        refused: list[int] = []

        async def refuse_once(cmd: table_pb2.TableCommand) -> table_pb2.TableReply:
            if cmd.kind == "snapshot" and not refused:
                refused.append(cmd.user_id)
                return table_pb2.TableReply(request_id=cmd.request_id, code=refusal,
                                            message="not now", seat=-1)
            return await answer(cmd)
        table.answer = refuse_once   # type: ignore[method-assign]
        host = world.lobbies.pop(0)
        await host.server.stop(0)          # its lobby dies: the stream breaks
        assert await asyncio.wait_for(s.pushes.get(), 10) is None
        died = time.monotonic()
        ok = await s.reconnect(token(uid))
        assert ok.login_ok.room.room_id == room.room_id   # the snapshot is asked after it
        # told to come back in a moment, it does, and the seat is resumed
        kinds: list[str | None] = []
        while True:
            frame: Any = await asyncio.wait_for(s.pushes.get(), 10)
            if frame is None:
                ok = await s.reconnect(token(uid))
                assert ok.login_ok.room.room_id == room.room_id
                continue
            kinds.append(frame.WhichOneof("payload"))
            if frame.WhichOneof("payload") == "room_joined":
                break
        assert refused == [uid] and "reconnect" in kinds, (refused, kinds)
        assert frame.room_joined.room.room_id == room.room_id
        assert time.monotonic() - died < 5.0
        assert s.reconnects == 2
        assert (await s.request(lm.AskReady(is_ready=True))).ret.code == 0
        await host.stop(0)
    finally:
        await s.close()
