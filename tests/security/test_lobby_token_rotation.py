"""Issue 24: the token signing key rotates without logging anyone out. Real lobbies (in this
process) on a real nats-server, with the in-test table and records of
tests/support/lobbyworld.py, as a rotation rolls through them:

1. the old lobbies know the key ``k1`` only; a player signs in with a ``k1`` token;
2. rotated lobbies sign with ``k2`` and accept ``k1`` until the end of the overlap: the
   player's ``k1`` token still logs in there (a reconnect during the rolling update), a new
   ``k2`` token logs in, and an old lobby refuses ``k2`` (so the issuer switches to the new
   key only once every lobby has it);
3. after the overlap a lobby refuses ``k1`` tokens, while sessions that logged in before stay
   (tokens are checked at login only)."""

from __future__ import annotations

import time

from paiju.v1 import client_pb2, lobby_msgs_pb2
from services.lobby import tokens
from services.lobby.server import start
from tests.support.lobbykit import lobby_config
from tests.support.lobbyworld import SECRET, Client, E, World, code_of

OLD = SECRET                       # what the old lobbies sign with, as key k1
NEW = "rotated-secret-0123456789abcdef"


async def lobby(world: World, secret: str, **keys: object) -> str:
    cfg = lobby_config(world.nats.url, f"127.0.0.1:{world.backend_port}", secret, **keys)
    host = await start(cfg, port=0, metrics_port=0)
    world.lobbies.append(host)
    return f"127.0.0.1:{host.port}"


async def login(world: World, address: str, tok: str) -> tuple[Client, client_pb2.ServerFrame]:
    client = await world.client(address)
    return client, await client.request(lobby_msgs_pb2.Login(token=tok))


async def still_serving(c: Client) -> bool:
    beat = await c.request(lobby_msgs_pb2.HeartBeat(client_time_ms=5))
    return beat.heartbeat.client_time_ms == 5


async def test_a_key_rotation_rolls_through_the_lobbies_without_logging_anyone_out(
        world: World) -> None:
    old_lobby = await lobby(world, OLD, token_key_id="k1")
    k1 = tokens.mint(6001, OLD, 3600, key_id="k1")
    _, ok = await login(world, old_lobby, k1)
    assert ok.HasField("login_ok")

    overlap_end = time.time() + 600
    rotated = await lobby(world, NEW, token_key_id="k2", token_previous_secret=OLD,
                          token_previous_key_id="k1", token_previous_until=overlap_end)
    moved, ok = await login(world, rotated, k1)           # the same player, reconnecting
    assert ok.HasField("login_ok"), ok
    k2 = tokens.mint(6002, NEW, 3600, key_id="k2")         # the issuer, once switched
    _, ok = await login(world, rotated, k2)
    assert ok.HasField("login_ok"), ok
    refused_client, refused = await login(world, old_lobby, tokens.mint(6003, NEW, 3600,
                                                                        key_id="k2"))
    assert code_of(refused) == E.ERR_BAD_TOKEN and "does not accept" in refused.ret.message
    assert await refused_client.closed()

    retired = await lobby(world, NEW, token_key_id="k2", token_previous_secret=OLD,
                          token_previous_key_id="k1", token_previous_until=time.time() - 1)
    late, refused = await login(world, retired, k1)        # the overlap is over
    assert code_of(refused) == E.ERR_BAD_TOKEN and "retired" in refused.ret.message
    assert await late.closed()
    _, ok = await login(world, retired, tokens.mint(6004, NEW, 3600, key_id="k2"))
    assert ok.HasField("login_ok")
    assert await still_serving(moved)     # logged in with k1 during the overlap: still on
