"""Issue 24: a token whose session was kicked by a newer sign-in of the same user with
another token no longer logs in, on any lobby, whatever its generation (tokens without one
included: before, a captured token logged in again and kicked its owner back until it
expired). A login with the same token (a reconnect) still replaces the session.

Real lobbies (in this process) on a real nats-server, with the in-test table and records of
tests/support/lobbyworld.py; the revocation travels in the session announcements
(``session.kick.<uid>``) every lobby already hears."""

from __future__ import annotations

from paiju.v1 import client_pb2, lobby_msgs_pb2
from services.lobby import tokens
from services.lobby.hub import Revocations
from tests.support.lobbyworld import SECRET, Client, E, World, code_of

UID = 5101


def token(ttl: int, uid: int = UID) -> str:
    """Tokens without a generation; a different ttl gives a different token."""
    return tokens.mint(uid, SECRET, ttl)


async def login(c: Client, tok: str) -> client_pb2.ServerFrame:
    return await c.request(lobby_msgs_pb2.Login(token=tok))


async def still_serving(c: Client) -> bool:
    beat = await c.request(lobby_msgs_pb2.HeartBeat(client_time_ms=7))
    return beat.heartbeat.client_time_ms == 7


async def test_a_kicked_session_s_token_is_refused_on_every_lobby(world: World) -> None:
    one, two = await world.lobby(), await world.lobby()
    first, second = token(600), token(601)
    phone = await world.client(one)
    assert (await login(phone, first)).HasField("login_ok")
    tablet = await world.client(two)
    assert (await login(tablet, second)).HasField("login_ok")      # the user signs in again
    assert (await phone.until(lambda f: f.HasField("kick_out"))).kick_out.user_id == UID
    assert await phone.closed()

    # the first token, replayed (a thief's copy, or the old device retrying), is dead on
    # both lobbies, and the session of the newer sign-in is never kicked by it
    for address in (one, two, one):
        thief = await world.client(address)
        refused = await login(thief, first)
        assert code_of(refused) == E.ERR_BAD_TOKEN, refused
        assert "its session was replaced" in refused.ret.message
        assert await thief.closed()
    assert await still_serving(tablet)
    assert not any(f.HasField("kick_out") for f in tablet.seen)

    # the current token reconnects as before: same token, a new session replaces the old
    again = await world.client(one)
    assert (await login(again, second)).HasField("login_ok")
    assert (await tablet.until(lambda f: f.HasField("kick_out"))).kick_out.user_id == UID
    assert await still_serving(again)


async def test_a_lobby_that_missed_the_replacement_lets_it_in_once_then_kicks_and_learns(
        world: World) -> None:
    one = await world.lobby()
    first, second = token(600), token(601)
    phone = await world.client(one)
    assert (await login(phone, first)).HasField("login_ok")
    tablet = await world.client(one)
    assert (await login(tablet, second)).HasField("login_ok")
    assert await phone.closed()

    late = await world.lobby()                   # started after: it never heard of either
    thief = await world.client(late)
    assert (await login(thief, first)).HasField("login_ok")         # let in for a moment...
    kicked = await thief.until(lambda f: f.HasField("kick_out"))   # ...and kicked at once
    assert kicked.kick_out.user_id == UID
    assert await thief.closed()
    assert await still_serving(tablet)           # the current session was never kicked
    assert not any(f.HasField("kick_out") for f in tablet.seen)
    retry = await world.client(late)             # and the late lobby now refuses it
    assert code_of(await login(retry, first)) == E.ERR_BAD_TOKEN


def test_revocations_follow_the_newest_token_and_expire_with_the_revoked_one() -> None:
    r = Revocations()
    r.note(1, "a", expiry=100.0, now=0.0)
    r.note(1, "a", expiry=100.0, now=1.0)        # the same token again: nothing revoked
    assert not r.revoked("a", now=2.0)
    r.note(1, "b", expiry=200.0, now=3.0)        # another token: "a" revoked until 100
    assert r.revoked("a", now=4.0) and not r.revoked("b", now=4.0)
    r.note(1, "a", expiry=100.0, now=5.0)        # a revoked token never becomes current
    assert r.revoked("a", now=6.0) and not r.revoked("b", now=6.0)
    r.note(2, "c", expiry=50.0, now=6.0)         # other users are apart
    assert not r.revoked("c", now=7.0)
    assert not r.revoked("a", now=100.0)         # gone with its expiry
    r.note(1, "d", expiry=300.0, now=150.0)      # and swept
    assert len(r) == 1 and r.revoked("b", now=151.0)
