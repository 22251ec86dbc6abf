"""The client session (clients/session.py) beats every ``heartbeat_seconds`` of its LoginOk,
as docs/protocol.md asks: a quiet player is not taken offline by the lobby's silence sweep,
and a stream whose lobby stops answering without closing it (a frozen process, a cut
network) is dropped after an unanswered beat, so the player reconnects instead of waiting.

Real lobbies on a real nats-server (the in-test table and records of tests/support/lobbyworld.py); the
frozen lobby is a TCP relay in front of a real one that stops relaying."""

from __future__ import annotations

import asyncio

from clients.session import LobbySession
from paiju.v1 import lobby_msgs_pb2 as lm
from services.lobby import tokens
from tests.support.lobbyworld import SECRET, World
from tests.support.relay import FreezingRelay

BEAT = {"heartbeat_seconds": 1, "offline_after_seconds": 3}


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
    relay = FreezingRelay(await world.lobby(**BEAT))
    s = await logged_in(await relay.start(), 702)
    try:
        await asyncio.sleep(1.5)
        assert not s.closed.is_set()
        assert relay.freeze() >= 1
        # a beat within a second, unanswered for a second: the stream's end is announced
        assert await asyncio.wait_for(s.pushes.get(), 10) is None
        assert s.closed.is_set()
    finally:
        await s.close()
        await relay.close()
