"""The client IP the lobby believes (geo, same-IP alerts, per-address limits): the peer's,
or the client a trusted proxy names in ``X-Forwarded-For`` (WebSocket header) or
``x-forwarded-for`` (gRPC metadata), through the real front doors. The in-test table and
records of tests/support/lobbyworld.py stand in for the real ones."""

from __future__ import annotations

import aiohttp
import grpc

from paiju.v1 import client_pb2, lobby_msgs_pb2
from services.lobby.client_ip import HEADER, METADATA_KEY
from tests.service.test_lobby_ws import WsClient, ws_clients
from tests.support.lobbyworld import Client, World

CLIENT = "203.0.113.5"
FORGED = "198.51.100.66"


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
        self.start_reading()


async def test_grpc_believes_x_forwarded_for_metadata_only_from_a_trusted_proxy(
        world: World) -> None:
    trusting = await world.lobby(trusted_proxies=("127.0.0.1/32",))
    not_trusting = await world.lobby(trusted_proxies=("192.0.2.0/24",))
    for address, user_id, expected in ((trusting, 211, CLIENT),
                                       (not_trusting, 212, "127.0.0.1")):
        c = ProxiedClient(address, f"{FORGED}, {CLIENT}")
        world.clients.append(c)
        assert (await c.login(user_id)).login_ok.player.ip == expected
