"""The client session (clients/session.py) beats every ``heartbeat_seconds`` of its LoginOk,
as docs/protocol.md asks: a quiet player is not taken offline by the lobby's silence sweep,
and a stream whose lobby stops answering without closing it (a frozen process, a cut
network) is dropped after an unanswered beat, so the player reconnects instead of waiting.

Real lobbies on a real nats-server (the in-test table and records of tests/support/lobbyworld.py); the
frozen lobby is a TCP relay in front of a real one that stops relaying."""

from __future__ import annotations

import asyncio
import contextlib

from clients.session import LobbySession
from paiju.v1 import lobby_msgs_pb2 as lm
from services.lobby import tokens
from tests.support.lobbyworld import SECRET, World

BEAT = {"heartbeat_seconds": 1, "offline_after_seconds": 3}


class FreezableRelay:
    """A TCP relay to ``target`` that, once frozen, keeps every connection open and
    passes nothing on."""

    def __init__(self, target: str) -> None:
        self.host, port = target.rsplit(":", 1)
        self.port = int(port)
        self.frozen = asyncio.Event()
        self.server: asyncio.Server | None = None
        self.tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> str:
        self.server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        return f"127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(self.host, self.port)
        for src, dst in ((reader, up_writer), (up_reader, writer)):
            task = asyncio.create_task(self._pipe(src, dst))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

    async def _pipe(self, src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError):
            while data := await src.read(65536):
                if self.frozen.is_set():
                    await asyncio.Event().wait()     # held open, never passed on
                dst.write(data)
                await dst.drain()
        dst.close()

    async def close(self) -> None:
        for task in list(self.tasks):
            task.cancel()
        if self.server is not None:
            self.server.close()


async def logged_in(address: str, uid: int) -> LobbySession:
    s = LobbySession(address)
    await s.open()
    ok = await s.login(tokens.mint(uid, SECRET, 600))
    assert ok.WhichOneof("payload") == "login_ok" and ok.login_ok.heartbeat_seconds == 1
    return s


async def test_a_quiet_client_beats_and_stays_online(world: World) -> None:
    address = await world.lobby(**BEAT)
    s = await logged_in(address, 701)
    try:
        await asyncio.sleep(BEAT["offline_after_seconds"] * 2)   # quiet past the sweep's limit
        assert not s.closed.is_set() and s.pushes.empty(), s.pending()
        beats = [f for f in s.received if f.WhichOneof("payload") == "heartbeat"]
        assert len(beats) >= 4, [f.WhichOneof("payload") for f in s.received]
        listed = await s.request(lm.AskRoomList(), timeout=5)
        assert listed.WhichOneof("payload") == "room_list"
    finally:
        await s.close()


async def test_a_stream_whose_lobby_stops_answering_is_dropped(world: World) -> None:
    relay = FreezableRelay(await world.lobby(**BEAT))
    s = await logged_in(await relay.start(), 702)
    try:
        await asyncio.sleep(1.5)
        assert not s.closed.is_set()
        relay.frozen.set()
        # a beat within a second, unanswered for a second: the stream's end is announced
        assert await asyncio.wait_for(s.pushes.get(), 10) is None
        assert s.closed.is_set()
    finally:
        await s.close()
        await relay.close()
