"""Lobby edge hardening: the client IP behind a trusted proxy (WebSocket header and gRPC
metadata, through the real front doors), table links closed once their table is gone and
unused, and the chat rate limiter forgetting idle users. The in-test table and records of
test_lobby.py stand in for the real ones."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import grpc
import pytest

from paiju.v1 import client_pb2, lobby_msgs_pb2
from services.common.natsd import EmbeddedNats
from services.lobby import directory as directory_module
from services.lobby.client_ip import HEADER, METADATA_KEY
from services.lobby.sessions import RateLimiter
from tests.service.test_lobby import (
    Client,
    World,
    code_of,
    open_world,
    seated_client,
    tables_seen,
)
from tests.service.test_lobby_ws import WsClient, ws_clients
from tests.support.lobbykit import wait_cached

CLIENT = "203.0.113.5"
FORGED = "198.51.100.66"


@pytest.fixture
async def world(fresh_nats: EmbeddedNats) -> AsyncIterator[World]:
    async with open_world(fresh_nats) as w:
        yield w


async def eventually(check: Callable[[], Awaitable[bool] | bool], timeout: float = 5.0) -> None:
    """Poll ``check`` until it holds (a background task's effect), at most ``timeout``."""
    async def poll() -> None:
        while True:
            result = check()
            if isinstance(result, Awaitable):
                result = await result
            if result:
                return
            await asyncio.sleep(0.02)
    await asyncio.wait_for(poll(), timeout)


# -- client IP behind a proxy -----------------------------------------------------------------

async def ws_client_via(port: int, forwarded_for: str) -> WsClient:
    """A WebSocket client whose upgrade request carries ``X-Forwarded-For``, as a proxy's
    would (the socket's peer is 127.0.0.1)."""
    http = aiohttp.ClientSession()
    ws = await http.ws_connect(f"http://127.0.0.1:{port}/ws",
                               headers={HEADER: forwarded_for})
    return WsClient(http, ws, as_json=False)


async def ws_ip(world: World, port: int, user_id: int, forwarded_for: str) -> tuple[str, str]:
    """Log in and join a room over the socket: (IP in LoginOk, IP the table was given)."""
    async with ws_clients() as clients:
        c = await ws_client_via(port, forwarded_for)
        clients.append(c)
        ok = (await c.login(user_id)).login_ok
        room = await world.table.add_room()
        joined = await c.request(lobby_msgs_pb2.JoinRoom(room_id=room.room_id))
        assert joined.room_joined.room.room_id == room.room_id, joined
        return ok.player.ip, world.table.of_kind("join_room", user_id)[0].profile.ip


async def test_websocket_believes_x_forwarded_for_only_from_a_trusted_proxy(
        world: World) -> None:
    await world.lobby(ws_port=0, trusted_proxies=("127.0.0.0/8", "::1"))
    trusting = world.lobbies[-1].ws_port
    await world.lobby(ws_port=0, trusted_proxies=("10.0.0.0/8",))
    not_trusting = world.lobbies[-1].ws_port
    await world.lobby(ws_port=0)
    default = world.lobbies[-1].ws_port
    header = f"{FORGED}, {CLIENT}"   # what the client wrote, then what the proxy saw
    assert await ws_ip(world, trusting, 201, header) == (CLIENT, CLIENT)
    assert await ws_ip(world, not_trusting, 202, header) == ("127.0.0.1", "127.0.0.1")
    assert await ws_ip(world, default, 203, header) == ("127.0.0.1", "127.0.0.1")
    # garbage from a trusted proxy is ignored: the peer stands, the session goes on
    assert await ws_ip(world, trusting, 204, "unknown, ::zz") == ("127.0.0.1", "127.0.0.1")
    assert await ws_ip(world, trusting, 205, "2001:db8::7") == ("2001:db8::7", "2001:db8::7")


class ProxiedClient(Client):
    """A Connect stream whose call carries ``x-forwarded-for`` metadata."""

    def __init__(self, address: str, forwarded_for: str) -> None:  # noqa: D107
        self.channel = grpc.aio.insecure_channel(address)
        self.call = self.channel.stream_stream(
            "/paiju.v1.Lobby/Connect", request_serializer=None,
            response_deserializer=client_pb2.ServerFrame.FromString,
        )(metadata=((METADATA_KEY, forwarded_for),))
        self.seq = 0
        self.seen: list[client_pb2.ServerFrame] = []


async def test_grpc_believes_x_forwarded_for_metadata_only_from_a_trusted_proxy(
        world: World) -> None:
    trusting = await world.lobby(trusted_proxies=("127.0.0.1/32",))
    not_trusting = await world.lobby(trusted_proxies=("192.0.2.0/24",))
    for address, user_id, expected in ((trusting, 211, CLIENT),
                                       (not_trusting, 212, "127.0.0.1")):
        c = ProxiedClient(address, f"{FORGED}, {CLIENT}")
        world.clients.append(c)
        assert (await c.login(user_id)).login_ok.player.ip == expected


# -- table links of departed tables -----------------------------------------------------------

def lobby_app(world: World) -> Any:
    return world.lobbies[-1].app


async def test_the_link_of_a_departed_unused_table_is_closed(world: World) -> None:
    address = await world.lobby()
    app = lobby_app(world)
    a = world.table
    b = await world.add_table("table-b")
    c1, room_a = await seated_client(world, address, 221)         # on table a
    c2, room_b = await seated_client(world, address, 222, await b.add_room())
    # the owners come from the room cache, filled asynchronously by the bucket watch
    await wait_cached(app, room_a.room_id, room_b.room_id)
    assert app.directory.addresses == {a.address, b.address}
    # both tables listed: nothing to close
    assert await app.directory.prune(app.table_addresses()) == []

    await world.kv["tables"].delete("table-b")                    # b's entry expired
    await tables_seen(app, "table-a")
    # a session still sits in b's room: b's link stays
    assert app.table_addresses() == {a.address, b.address}
    assert await app.directory.prune(app.table_addresses()) == []
    left = await c2.request(lobby_msgs_pb2.AskExit())
    assert code_of(left) == 0, left
    assert app.table_addresses() == {a.address}
    assert await app.directory.prune(app.table_addresses()) == [b.address]
    assert app.directory.addresses == {a.address}

    # b comes back (say, restarted on the same address): a new link just works
    await b.register()
    await c2.request(lobby_msgs_pb2.JoinRoom(room_id=room_b.room_id))
    assert b.address in app.directory.addresses
    assert b.streams == 2                                         # a new Session stream


async def test_a_short_listing_or_a_request_in_flight_keeps_the_link(
        world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    address = await world.lobby()
    app = lobby_app(world)
    await seated_client(world, address, 231)
    a = world.table
    assert await app.directory.prune() == []                      # learns a's instance

    async def short_listing() -> list[dict[str, Any]]:
        return []
    monkeypatch.setattr(app.directory, "live_tables", short_listing)
    assert await app.directory.prune() == []                      # a is asked for directly
    monkeypatch.undo()

    await world.kv["tables"].delete("table-a")
    await tables_seen(app)
    a.hold = True                                                 # a never answers
    link = app.directory.link(a.address)
    pending = asyncio.ensure_future(link.command(directory_module.table_pb2.TableCommand(
        room_id=1, user_id=231, kind="online")))
    await eventually(lambda: not link.idle)
    assert await app.directory.prune() == []                      # busy: kept
    pending.cancel()
    await asyncio.gather(pending, return_exceptions=True)
    assert link.idle
    assert await app.directory.prune() == [a.address]


async def test_the_lobby_prunes_on_its_own(world: World,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(directory_module, "PRUNE_SECONDS", 0.05)
    address = await world.lobby()
    app = lobby_app(world)
    b = await world.add_table("table-b")
    c, _ = await seated_client(world, address, 241, await b.add_room())
    await c.request(lobby_msgs_pb2.AskExit())
    assert b.address in app.directory.addresses
    await world.kv["tables"].delete("table-b")
    await eventually(lambda: b.address not in app.directory.addresses)


# -- the chat rate limiter forgets idle users -------------------------------------------------

def test_rate_limiter_limits_within_the_window() -> None:
    rl = RateLimiter(2, window=60.0)
    assert rl.allow(1, now=0.0) and rl.allow(1, now=1.0)
    assert not rl.allow(1, now=59.0)
    assert rl.allow(1, now=60.5)             # the first event left the window
    assert not rl.allow(1, now=60.9)
    assert RateLimiter(0).allow(1, now=0.0) is False
    assert len(RateLimiter(0)) == 0


def test_rate_limiter_state_is_bounded_by_recent_users() -> None:
    rl = RateLimiter(3, window=60.0)
    for user in range(1000):
        assert rl.allow(user, now=user * 0.01)
    assert len(rl) == 1000
    # a minute later the sweep drops everyone whose events left the window
    assert rl.allow(5000, now=200.0)
    assert len(rl) == 1
    # a refused user is kept (still limited), then forgotten once idle
    rl2 = RateLimiter(1, window=10.0)
    assert rl2.allow(7, now=0.0) and not rl2.allow(7, now=5.0)
    assert len(rl2) == 1
    rl2.sweep(now=10.0, force=True)
    assert len(rl2) == 0
    assert rl2.allow(7, now=10.0)


def test_rate_limiter_sweeps_at_most_once_per_window() -> None:
    rl = RateLimiter(5, window=10.0)
    rl.allow(1, now=0.0)                     # first sweep (nothing); the next at 10
    rl.allow(2, now=8.0)
    rl.allow(3, now=10.0)                    # sweep: 1 has left the window, 2 has not
    assert len(rl) == 2
    rl.allow(4, now=19.0)                    # 2 has left the window, but no sweep until 20
    assert len(rl) == 3
    rl.allow(4, now=20.0)                    # sweep: 2 and 3 go
    assert len(rl) == 1
