"""Issue 9, rules of access: a newer sign-in revokes the tokens issued before it.

Tokens may carry a generation (``<uid>.<expiry>.<gen>.<sig>``; services/lobby/tokens.py).
A login with generation g kicks the older session, and from then on every lobby refuses a
token of that user with a lower generation (ERR_BAD_TOKEN, the client does not retry); a
lobby that had not heard of the newer sign-in and lets an older token in has that session
kicked at once by the newer session's lobby. Tokens without a generation keep the plain
rule: the newest login wins, and replaying a token is a login like any other.

Real lobbies (in this process) on a real nats-server, with the in-test table and records of
tests/support/lobbyworld.py."""

from __future__ import annotations

from paiju.v1 import client_pb2, lobby_msgs_pb2
from services.lobby import tokens
from tests.support.lobbyworld import SECRET, Client, E, World, code_of

UID = 5001


def token(gen: int, uid: int = UID) -> str:
    return tokens.mint(uid, SECRET, 600, gen=gen)


async def login(c: Client, tok: str) -> client_pb2.ServerFrame:
    return await c.request(lobby_msgs_pb2.Login(token=tok))


async def still_serving(c: Client) -> bool:
    beat = await c.request(lobby_msgs_pb2.HeartBeat(client_time_ms=9))
    return beat.heartbeat.client_time_ms == 9


async def test_a_newer_sign_in_revokes_the_older_token_on_every_lobby(world: World) -> None:
    one = await world.lobby()
    two = await world.lobby()
    old = await world.client(one)
    assert (await login(old, token(1))).HasField("login_ok")
    new = await world.client(two)
    assert (await login(new, token(2))).HasField("login_ok")       # another device signs in
    assert (await old.until(lambda f: f.HasField("kick_out"))).kick_out.user_id == UID
    assert await old.closed()

    # the captured older token is dead on both lobbies, and the newer session stays
    for address in (one, two):
        thief = await world.client(address)
        refused = await login(thief, token(1))
        assert code_of(refused) == E.ERR_BAD_TOKEN
        assert "revoked by a newer sign-in" in refused.ret.message
        assert await thief.closed()
    assert await still_serving(new)
    assert not any(f.HasField("kick_out") for f in new.seen)

    # the same (newest) token logs in again, as a reconnect does: it replaces the session
    again = await world.client(one)
    assert (await login(again, token(2))).HasField("login_ok")
    assert (await new.until(lambda f: f.HasField("kick_out"))).kick_out.user_id == UID
    # a tokenless-generation (0) token is older than any generation
    plain = await world.client(two)
    assert code_of(await login(plain, token(0))) == E.ERR_BAD_TOKEN
    assert await still_serving(again)


async def test_a_lobby_that_missed_the_newer_sign_in_has_the_older_session_kicked(
        world: World) -> None:
    one = await world.lobby()
    new = await world.client(one)
    assert (await login(new, token(3))).HasField("login_ok")
    late = await world.lobby()                  # started afterwards: it never heard of gen 3
    thief = await world.client(late)
    assert (await login(thief, token(2))).HasField("login_ok")     # let in for a moment...
    kicked = await thief.until(lambda f: f.HasField("kick_out"))  # ...and kicked at once
    assert kicked.kick_out.user_id == UID
    assert await thief.closed()
    assert await still_serving(new)             # the newer session was never kicked
    assert not any(f.HasField("kick_out") for f in new.seen)
    # and the late lobby now knows: the older token is refused there too
    again = await world.client(late)
    assert code_of(await login(again, token(2))) == E.ERR_BAD_TOKEN


async def test_tokens_without_a_generation_keep_the_newest_login_rule(world: World) -> None:
    address = await world.lobby()
    tok = token(0, uid=5002)
    first = await world.client(address)
    assert (await login(first, tok)).HasField("login_ok")
    second = await world.client(address)
    assert (await login(second, tok)).HasField("login_ok")
    await first.until(lambda f: f.HasField("kick_out"))
    assert await first.closed()
    # a kicked stream cannot act again: it is closed; the token itself still logs in (a new
    # login, which kicks the other session)
    third = await world.client(address)
    assert (await login(third, tok)).HasField("login_ok")
    await second.until(lambda f: f.HasField("kick_out"))
    assert await still_serving(third)


def test_the_generations_a_lobby_remembers_expire_with_their_tokens() -> None:
    from services.lobby.hub import Generations

    g = Generations()
    g.note(1, 3, expiry=100.0, now=0.0)
    g.note(1, 2, expiry=500.0, now=0.0)     # an older generation changes nothing
    assert g.newest(1, now=50.0) == 3
    g.note(2, 0, expiry=100.0, now=0.0)     # no generation: nothing to remember
    assert len(g) == 1
    assert g.newest(1, now=100.0) == 0      # the newest token expired: forgotten
    assert len(g) == 0
