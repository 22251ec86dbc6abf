"""The client session (clients/session.py) takes itself back when its lobby goes away: a
draining lobby's Reconnect frame, or a lobby that stops dead, is followed by a login on the
next address, where the lobby resumes the seat (LoginOk.room, then the snapshot). Streams
tried on the way that never logged in leave nothing in ``pushes``. With no lobby left it
gives up after the bound, with a clear error.

Real lobbies on a real nats-server, the in-test table and records of tests/support/lobbyworld.py."""

from __future__ import annotations

import asyncio
import time

import pytest

from clients.session import Backoff, GaveUp, LobbySession
from paiju.v1 import client_pb2
from paiju.v1 import lobby_msgs_pb2 as lm
from services.common.natsd import free_port
from tests.support.lobbyworld import World, token

QUICK = Backoff(first=0.05, longest=0.2, give_up=10.0)



async def next_push(s: LobbySession, timeout: float = 10) -> client_pb2.ServerFrame | None:
    return await asyncio.wait_for(s.pushes.get(), timeout)


async def seated_session(world: World, addresses: list[str], uid: int,
                         ) -> tuple[LobbySession, int]:
    room = await world.table.add_room()
    s = LobbySession(addresses, backoff=QUICK)
    await s.open()
    ok = await s.login(token(uid)())
    assert ok.WhichOneof("payload") == "login_ok"
    joined = await s.request(lm.JoinRoom(room_id=room.room_id))
    assert joined.WhichOneof("payload") == "room_joined"
    return s, room.room_id


async def test_a_draining_lobby_sends_the_client_to_the_next_one(world: World) -> None:
    first, second = await world.lobby(), await world.lobby()
    s, room_id = await seated_session(world, [first, second], 601)
    try:
        await world.lobbies[0].app.drain(1.0)
        frame = await next_push(s)
        assert frame is not None and frame.reconnect.reason == "draining"
        assert await next_push(s) is None and not s.kicked
        after = s.reconnect_after
        assert 0 <= after <= 1.0
        started = time.monotonic()
        ok = await s.reconnect(token(601), nickname="back")
        assert time.monotonic() - started >= after * 0.9   # waited the lobby's after_ms
        assert s.address == second and s.reconnects == 1
        assert ok.login_ok.room.room_id == room_id
        snap = await next_push(s)
        assert snap is not None and snap.room_joined.room.room_id == room_id
        await world.table.wait_for("online", 601)
        assert (await s.request(lm.AskReady(is_ready=True))).ret.code == 0
    finally:
        await s.close()


async def test_a_dead_lobby_is_skipped_and_leaves_no_end_in_the_pushes(world: World) -> None:
    first, second = await world.lobby(), await world.lobby()
    dead = f"127.0.0.1:{free_port()}"
    s, room_id = await seated_session(world, [first, dead, second], 602)
    try:
        host = world.lobbies.pop(0)
        await host.server.stop(0)          # killed: no Reconnect frame, the stream breaks
        assert await next_push(s) is None
        ok = await s.reconnect(token(602))
        assert s.address == second and ok.login_ok.room.room_id == room_id
        snap = await next_push(s)           # not a None from the attempt on the dead address
        assert snap is not None and snap.WhichOneof("payload") == "room_joined"
        await host.stop(0)
    finally:
        await s.close()


async def test_a_kick_is_not_a_reason_to_come_back(world: World) -> None:
    address = await world.lobby()
    s, _ = await seated_session(world, [address], 603)
    other = LobbySession(address)
    await other.open()
    try:
        await other.login(token(603)())
        frames = []
        while (frame := await next_push(s)) is not None:
            frames.append(frame.WhichOneof("payload"))
        assert "kick_out" in frames and s.kicked
    finally:
        await other.close()
        await s.close()


async def test_no_lobby_left_gives_up_after_the_bound() -> None:
    s = LobbySession([f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"],
                     backoff=Backoff(first=0.05, longest=0.2, give_up=1.0))
    await s.open()
    started = time.monotonic()
    try:
        with pytest.raises(GaveUp, match="took the session back in 1 s"):
            await s.reconnect(token(604))
        assert 0.8 < time.monotonic() - started < 5
        # the end of the first stream only: the attempts' streams never speak to pushes
        assert s.pushes.qsize() == 1 and s.pushes.get_nowait() is None
    finally:
        await s.close()


async def test_a_request_cut_off_by_a_dead_lobby_leaves_no_stale_end_after_the_reconnect(
        world: World) -> None:
    # chaos found this: a request failed with SessionClosed, the robot reconnected without
    # reading the dead stream's end marker, then read it and reconnected again, for ever
    first, second = await world.lobby(), await world.lobby()
    s, room_id = await seated_session(world, [first, second], 605)
    try:
        host = world.lobbies.pop(0)
        await host.server.stop(0)           # killed: the stream breaks, its end is queued
        await asyncio.wait_for(s.closed.wait(), 10)
        ok = await s.reconnect(token(605))  # as after a failed request: marker not read
        assert ok.login_ok.room.room_id == room_id and s.reconnects == 1
        while True:                          # the resumed seat's frames, and no end at all
            try:
                frame = await asyncio.wait_for(s.pushes.get(), 1.0)
            except TimeoutError:
                break
            assert frame is not None, "a stale end-of-stream marker would reconnect again"
        assert (await s.request(lm.AskReady(is_ready=True))).ret.code == 0
        await host.stop(0)
    finally:
        await s.close()
