"""Matchmaking over the wire, what outlives a connection or a matcher (issue 23; real
nats-server, arbiter, table and lobbies, records in-test, as test_lobby_matchmaking.py): a
ticket is held through a dropped connection for ``lobby.reconnect_grace_seconds`` and
follows its player to another lobby, and goes once the grace passed without him; a party
naming a friend who is offline or busy is refused at once; the day's encounters of
strangers survive a change of the active matcher."""

from __future__ import annotations

import asyncio
import time

from paiju.v1 import common_pb2, lobby_msgs_pb2
from services.common.natsd import EmbeddedNats
from services.lobby.server import LobbyHost
from tests.service.test_lobby_matchmaking import found, has, queued, stack
from tests.support.lobbyworld import code_of
from tests.support.waiting import eventually

E = common_pb2


async def leader(game: str, *hosts: LobbyHost) -> LobbyHost:
    """The lobby holding the game's lease (once one does)."""
    await eventually(lambda: any(game in h.app.matchmaking.leading for h in hosts))
    return next(h for h in hosts if game in h.app.matchmaking.leading)


async def test_a_dropped_connection_keeps_the_ticket_until_the_grace_ends(
        fresh_nats: EmbeddedNats) -> None:
    async with stack(fresh_nats.url) as s:
        # a grace that three more logins and tickets and a second of waiting fit in, on a
        # slow machine too
        a = await s.lobby(reconnect_grace_seconds=6)
        b = await s.lobby(reconnect_grace_seconds=6)
        me = await s.player(a, 7901)
        ticket = await queued(me, game="dadun")
        await me.close()                          # the connection drops
        s.clients.remove(me)
        view = b.app.matchmaking.view
        await eventually(lambda: "t.7901" in view and view["t.7901"][1].away_at is not None)
        others = [await s.player(b, 7902 + i) for i in range(3)]
        for p in others:
            await queued(p, game="dadun")
        await asyncio.sleep(1.0)                  # held: not matched while he is away
        assert a.app.matchmaking.matches + b.app.matchmaking.matches == 0
        back = await s.player(b, 7901)            # back within the grace, on another lobby
        resumed = await back.until(has("match_queued"), 10)
        assert resumed.match_queued.ticket_id == ticket.ticket_id
        results = await asyncio.gather(*(found(p) for p in [back, *others]))
        assert len({m.match_found.room_id for m, _ in results}) == 1
        assert results[0][0].match_found.ticket_id == ticket.ticket_id

        # the grace passes without him: the ticket goes, nothing waits at his return
        gone = await s.player(a, 7911)
        await queued(gone, game="changsha")
        await gone.close()
        s.clients.remove(gone)
        await eventually(lambda: "t.7911" in view and view["t.7911"][1].away_at is not None)
        await eventually(lambda: "t.7911" not in view, seconds=20)
        late = await s.player(b, 7911)
        assert code_of(await late.request(lobby_msgs_pb2.CancelMatch())) == E.ERR_NOT_QUEUED
        assert not any(f.WhichOneof("payload") == "match_queued" for f in late.seen)
        await queued(late, game="changsha")       # and he may ask again


async def test_a_party_naming_an_offline_or_busy_friend_is_refused_at_once(
        fresh_nats: EmbeddedNats) -> None:
    async with stack(fresh_nats.url) as s:
        a, b = await s.lobby(), await s.lobby()
        lead = await s.player(a, 7951)
        started = time.monotonic()
        offline = await lead.request(lobby_msgs_pb2.AskMatch(game="changsha", party=[7952]))
        assert code_of(offline) == E.ERR_PARTY_OFFLINE, offline
        assert time.monotonic() - started < 5
        friend = await s.player(b, 7952)          # online, on the other lobby
        await queued(friend, game="xuezhan")      # but waiting in another queue
        busy = await lead.request(lobby_msgs_pb2.AskMatch(game="changsha", party=[7952]))
        assert code_of(busy) == E.ERR_PARTY_BUSY, busy
        await friend.request(lobby_msgs_pb2.CancelMatch())
        # free and online elsewhere: the party is taken, and the friend's own ask after it
        await queued(lead, game="changsha", party=[7952])
        await queued(friend, game="changsha", party=[7951])
        # a friend sitting in a room is busy too (same lobby this time)
        seated = await s.player(a, 7953)
        made = await seated.request(lobby_msgs_pb2.CreateRoom(game=E.CHANGSHA, base_score=1,
                                                              total_hands=1))
        assert made.WhichOneof("payload") == "room_joined", made
        other = await s.player(b, 7954)
        busy = await other.request(lobby_msgs_pb2.AskMatch(game="changsha", party=[7953]))
        assert code_of(busy) == E.ERR_PARTY_BUSY, busy
        # a member of a waiting party named by someone else's party is busy
        third = await s.player(b, 7955)
        taken = await third.request(lobby_msgs_pb2.AskMatch(game="changsha", party=[7951]))
        assert code_of(taken) == E.ERR_PARTY_BUSY, taken


async def test_the_encounters_of_strangers_survive_a_change_of_matcher(
        fresh_nats: EmbeddedNats) -> None:
    """With ``match_stranger_tables_per_day`` 1, changsha's matcher on A seats four strangers
    together; A stops; B, which took the lease over, will not seat any two of them together
    again."""
    once = {"match_stranger_tables_per_day": 1}
    async with stack(fresh_nats.url) as s:
        a = await s.lobby(**once)
        assert await leader("changsha", a) is a
        b = await s.lobby(**once, match_lease_seconds=30.0)   # takes over a given-up lease
        uids = [7971, 7972, 7973, 7974]
        players = [await s.player(b, u) for u in uids]
        for p in players:
            await queued(p, game="changsha")
        results = await asyncio.gather(*(found(p) for p in players))
        assert len({m.match_found.room_id for m, _ in results}) == 1
        assert a.app.matchmaking.matches == 1
        # A wrote the room's meetings into the bucket (b's view follows it)
        await eventually(lambda: any(k.startswith("e.") for k in b.app.matchmaking.met))
        await a.stop(0.5)
        s.lobbies.remove(a)
        assert await leader("changsha", b) is b
        matcher = b.app.matchmaking.matchers["changsha"]
        assert matcher.encounters.count(7971, 7972) == 1
        for p in players:                         # out of the room, and asking again
            left = await p.request(lobby_msgs_pb2.AskExit())
            assert left.WhichOneof("payload") != "ret" or code_of(left) == E.OK, left
            await queued(p, game="changsha")
        passes = b.app.matchmaking.passes["changsha"]
        await eventually(lambda: b.app.matchmaking.passes["changsha"] >= passes + 5)
        assert b.app.matchmaking.matches == 0
        view = b.app.matchmaking.view
        assert all(view[f"t.{u}"][1].state == "waiting" for u in uids)
        # strangers they have not met are seated with them: one of them and three newcomers
        for p in players[1:]:
            await p.request(lobby_msgs_pb2.CancelMatch())
        newcomers = [await s.player(b, 7981 + i) for i in range(3)]
        for p in newcomers:
            await queued(p, game="changsha")
        results = await asyncio.gather(*(found(p) for p in [players[0], *newcomers]))
        assert len({m.match_found.room_id for m, _ in results}) == 1
        assert b.app.matchmaking.matches == 1
