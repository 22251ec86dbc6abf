"""The client session (clients/session.py) over the lobby's WebSocket (clients/ws_edge.py):
an address ``ws://host:port/ws`` speaks the Connect protocol in binary messages. Logged in, it
beats, is answered, and gets its pushes; a lobby that goes away ends the stream (the end
comes in ``pushes``) and the session is taken back by the next lobby, over its WebSocket
too; a lobby that stops answering without closing is dropped after an unanswered beat.

Real lobbies on a real nats-server (the in-test table and records of tests/support/lobbyworld.py)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from clients.session import Backoff, LobbySession
from clients.ws_edge import WsEdge
from paiju.v1 import client_pb2 as cm
from paiju.v1 import lobby_msgs_pb2 as lm
from services.lobby import tokens
from tests.service.test_client_heartbeat import BEAT
from tests.support.lobbyworld import SECRET, World
from tests.support.relay import FreezingRelay


async def ws_lobby(world: World) -> str:
    await world.lobby(ws_port=0, **BEAT)
    return f"ws://127.0.0.1:{world.lobbies[-1].ws_port}/ws"


async def test_a_session_over_the_websocket_logs_in_beats_and_is_answered(world: World) -> None:
    s = LobbySession(await ws_lobby(world))
    assert isinstance(s.edge, WsEdge)
    await s.open()
    try:
        ok = await s.login(tokens.mint(711, SECRET, 600))
        assert ok.WhichOneof("payload") == "login_ok" and ok.login_ok.heartbeat_seconds == 1
        await asyncio.sleep(BEAT["offline_after_seconds"] * 1.5)  # quiet past the sweep's limit
        assert not s.closed.is_set(), s.pending()
        beats = [f for f in s.received if f.WhichOneof("payload") == "heartbeat"]
        assert len(beats) >= 3, [f.WhichOneof("payload") for f in s.received]
        listed = await s.request(lm.AskRoomList(), timeout=5)
        assert listed.WhichOneof("payload") == "room_list"
    finally:
        await s.close()


async def test_a_lobby_gone_ends_the_stream_and_the_next_one_takes_the_session(
        world: World) -> None:
    first, second = await ws_lobby(world), await ws_lobby(world)
    token = tokens.mint(712, SECRET, 600)
    s = LobbySession([first, second], backoff=Backoff(first=0.05, longest=0.2, give_up=10.0))
    await s.open()
    try:
        assert (await s.login(token)).WhichOneof("payload") == "login_ok"
        await world.lobbies[0].stop(grace=0.5)   # drains: a Reconnect frame, then the end
        while (pushed := await asyncio.wait_for(s.pushes.get(), 10)) is not None:
            assert pushed.WhichOneof("payload") == "reconnect", pushed
        again = await s.reconnect(lambda: token)
        assert again.WhichOneof("payload") == "login_ok" and s.address == second
        listed = await s.request(lm.AskRoomList(), timeout=5)
        assert listed.WhichOneof("payload") == "room_list"
    finally:
        await s.close()


async def test_a_websocket_whose_lobby_stops_answering_is_dropped(world: World) -> None:
    await world.lobby(ws_port=0, **BEAT)
    relay = FreezingRelay(f"127.0.0.1:{world.lobbies[-1].ws_port}")
    s = LobbySession(f"ws://{await relay.start()}/ws")
    await s.open()
    try:
        assert (await s.login(tokens.mint(713, SECRET, 600))).WhichOneof(
            "payload") == "login_ok"
        assert relay.freeze() >= 1
        # a beat within a second, unanswered for a second: the stream's end is announced
        assert await asyncio.wait_for(s.pushes.get(), 10) is None
        assert s.closed.is_set()
    finally:
        await s.close()
        await relay.close()


async def test_a_reader_cancelled_while_the_socket_opens_ends_cancelled() -> None:
    """Cancelling the task that reads a stream still opening (a lobby slow to answer the
    upgrade) cancels that task, as asyncio's callers expect (a TaskGroup, wait_for), rather
    than ending it as if the connection had simply failed."""
    silent = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)   # never answers
    port = silent.sockets[0].getsockname()[1]
    edge = WsEdge(f"ws://127.0.0.1:{port}/ws")

    async def nothing() -> AsyncIterator[cm.ClientFrame]:
        await asyncio.Event().wait()
        yield cm.ClientFrame()

    async def read() -> list[object]:
        return [f async for f in edge.connect(nothing())]

    try:
        reader = asyncio.create_task(read())
        await asyncio.sleep(0.2)
        reader.cancel()
        await asyncio.gather(reader, return_exceptions=True)
        assert reader.cancelled()
        # the connection attempt failing on its own still just ends the iteration
        stream = edge.connect(nothing())
        stream.cancel()
        assert [f async for f in stream] == []
    finally:
        await edge.close()
        silent.close()
