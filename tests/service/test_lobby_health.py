"""The lobby's health tells the truth, and the lobby drains on SIGTERM.

- NATS stopped under a running lobby: WebSocket ``/healthz`` answers 503 and the gRPC health
  service NOT_SERVING (readiness); once NATS has been away longer than
  ``nats.liveness_seconds``, ``/livez`` answers 503 and the gRPC health name ``liveness``
  NOT_SERVING; all back to 200 / SERVING when NATS returns.
- Drain: every client gets a final ``Reconnect(reason="draining")`` frame and its stream
  ends; a seated user's table is told "offline" with that session's identity; while the lobby
  drains it is not ready and a new stream gets Reconnect at once.

Real nats-server, real lobby (in this process, and as a process stopped with SIGTERM), the
in-test table and records of tests/support/lobbyworld.py."""

from __future__ import annotations

import asyncio
import signal
from dataclasses import replace
from pathlib import Path

import aiohttp
import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from services.common.natsd import EmbeddedNats
from services.lobby.grpc_front import SERVICE
from services.lobby.server import start as start_lobby
from services.lobby.sessions import Session
from tests.service.test_lobby_ws import WsClient
from tests.support.lobbykit import lobby_config
from tests.support.lobbyworld import SECRET, World, seated_client
from tests.support.procs import make_service
from tests.support.waiting import eventually

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


async def grpc_health(address: str, service: str = "") -> int:
    async with grpc.aio.insecure_channel(address) as channel:
        reply = await health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service=service), timeout=2)
        return int(reply.status)


async def http_status(port: int, path: str) -> int:
    async with aiohttp.ClientSession() as http, \
            http.get(f"http://127.0.0.1:{port}{path}") as r:
        return r.status


async def status_is(port: int, path: str, want: int) -> bool:
    return await http_status(port, path) == want


async def test_nats_down_is_not_ready_then_not_live_and_both_come_back(
        fresh_nats: EmbeddedNats) -> None:
    cfg = lobby_config(fresh_nats.url, "127.0.0.1:1", SECRET, ws_port=0)
    cfg = replace(cfg, nats=replace(cfg.nats, liveness_seconds=2.0))
    host = await start_lobby(cfg, port=0, metrics_port=0)
    address, ws = f"127.0.0.1:{host.port}", host.ws_port
    try:
        for name in ("", SERVICE, "liveness"):
            assert await grpc_health(address, name) == SERVING
        assert await http_status(ws, "/healthz") == 200
        assert await http_status(ws, "/livez") == 200

        fresh_nats.stop()
        await eventually(lambda: status_is(ws, "/healthz", 503), "/healthz never 503", seconds=15,
                         every=0.1)
        assert await grpc_health(address) == NOT_SERVING
        assert await grpc_health(address, SERVICE) == NOT_SERVING
        assert await http_status(ws, "/livez") == 200     # not down for long yet
        assert await grpc_health(address, "liveness") == SERVING
        await eventually(lambda: status_is(ws, "/livez", 503), "/livez never 503", seconds=15,
                         every=0.1)
        assert await grpc_health(address, "liveness") == NOT_SERVING

        fresh_nats.start()
        await eventually(lambda: status_is(ws, "/healthz", 200), "/healthz never 200", seconds=15,
                         every=0.1)
        await eventually(lambda: status_is(ws, "/livez", 200), "/livez never 200", seconds=15,
                         every=0.1)
        for name in ("", SERVICE, "liveness"):
            assert await grpc_health(address, name) == SERVING
    finally:
        await host.stop(0.5)


async def test_a_stopping_lobby_sends_every_client_away_and_keeps_their_seats_online(
        world: World) -> None:
    address = await world.lobby(ws_port=0, drain_seconds=10.0)
    host = world.lobbies[-1]
    seated, room = await seated_client(world, address, 401)
    idle = await world.client(address)
    await idle.login(402)
    sock = await WsClient.open(host.ws_port)
    # a client whose stream has not ended yet: the drain lasts until it is gone (else it ends,
    # and the ports close, as soon as the three below have left: the checks of the drain
    # below would race with that)
    held = Session(peer_ip="127.0.0.1")
    try:
        await sock.login(403)
        world.lobbies.remove(host)
        host.app.hub.sessions.add(held)
        stopping = asyncio.create_task(host.stop(0.5))

        for client in (seated, idle, sock):
            frame = await client.until(lambda f: f.HasField("reconnect"))
            assert frame.reconnect.reason == "draining"
            assert 0 <= frame.reconnect.after_ms <= 1000
        assert await seated.closed() and await idle.closed() and await sock.closed()

        # while it drains: not ready anywhere, and a newcomer is sent away at once
        assert not stopping.done()
        assert await grpc_health(address) == NOT_SERVING
        assert await http_status(host.ws_port, "/healthz") == 503
        late = await world.client(address)
        first = await late.recv()
        assert first is not None and first.reconnect.reason == "draining"
        assert await late.closed()
        host.app.hub.sessions.discard(held)   # the last client gone: the drain ends
        await asyncio.wait_for(stopping, 10)
        # players sent away are coming back: their seats do not go offline (entrust would
        # play their turns meanwhile; one who does not come back times out as any slow one)
        assert world.table.of_kind("offline", 401) == []
        assert world.table.of_kind("offline", 402) == []
    finally:
        await sock.close()


async def test_sigterm_drains_a_lobby_process(world: World, tmp_path: Path) -> None:
    lobby = make_service("lobby", world.nats.url, tmp_path,
                         PAIJU_LOBBY__TOKEN_SECRET=SECRET,
                         PAIJU_RECORDS__ADDRESS=f"127.0.0.1:{world.backend_port}")
    lobby.start()
    try:
        c, room = await seated_client(world, lobby.address, 411)
        stopped = asyncio.get_running_loop().run_in_executor(None, lobby.stop, signal.SIGTERM)
        frame = await c.until(lambda f: f.HasField("reconnect"))
        assert frame.reconnect.reason == "draining"
        assert await c.closed()
        assert await stopped == 0
        assert world.table.of_kind("offline", 411) == []   # sent away, not gone
    finally:
        lobby.stop(signal.SIGKILL)


async def test_a_lobby_told_to_drain_before_a_stream_opens_takes_no_login(world: World) -> None:
    address = await world.lobby()
    app = world.lobbies[-1].app
    await app.drain(0.5)
    c = await world.client(address)
    frame = await c.recv()
    assert frame is not None and frame.HasField("reconnect")
    assert await c.closed()
    assert not app.hub.sessions and not world.records.calls
