"""Matchmaking over the wire (services/lobby/matchmaker.py; docs/protocol.md, "Matchmaking")
with a real nats-server, arbiter, table and lobbies on loopback (records in-test): four
players ask for a match, are matched into one room and seated, and the hand starts; a
lone player of an unranked queue gets robots; cancel works; bad input gets its codes; the
tickets live in the bucket, so when a game's active matcher dies another lobby takes over
and matches the tickets taken before (one matcher per game:
tests/service/test_lobby_match_leases.py)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import nats

from clients.robot.robot import run_matched
from paiju.v1 import client_pb2, common_pb2, lobby_msgs_pb2
from services.common.config import Config
from services.common.natsd import EmbeddedNats
from services.common.tasks import cancel_and_wait
from services.lobby.matchmaker import BUCKET, LEASE_PREFIX
from services.lobby.server import LobbyHost
from services.lobby.server import start as start_lobby
from tests.support.lobbyworld import SECRET, Client, code_of, game_servers
from tests.support.procs import make_service

E = common_pb2
Frame = client_pb2.ServerFrame
FAST = {"match_tick_seconds": 0.2, "match_lease_seconds": 1.0}


@dataclass
class Stack:
    cfg: Config
    lobbies: list[LobbyHost] = field(default_factory=list)
    clients: list[Client] = field(default_factory=list)

    async def lobby(self, **lobby: Any) -> LobbyHost:
        cfg = replace(self.cfg, lobby=replace(self.cfg.lobby, **{**FAST, **lobby}))
        host = await start_lobby(cfg, port=0, metrics_port=-1)
        self.lobbies.append(host)
        return host

    async def player(self, host: LobbyHost, user_id: int) -> Client:
        client = Client(f"127.0.0.1:{host.port}")
        self.clients.append(client)
        await client.login(user_id)
        return client


@contextlib.asynccontextmanager
async def stack(nats_url: str) -> AsyncIterator[Stack]:
    """Arbiter and table for real, records in-test; lobbies made by the test."""
    async with game_servers(nats_url, "table-match") as cfg:
        s = Stack(cfg)
        try:
            yield s
        finally:
            for client in s.clients:
                await client.close()
            for host in s.lobbies:
                await host.stop(0.2)


def has(name: str) -> Any:
    return lambda f: f.WhichOneof("payload") == name


async def queued(client: Client, **ask: Any) -> lobby_msgs_pb2.MatchQueued:
    reply = await client.request(lobby_msgs_pb2.AskMatch(**{"game": "xuezhan", **ask}))
    assert reply.WhichOneof("payload") == "match_queued", reply
    return reply.match_queued


async def found(client: Client, timeout: float = 20.0) -> tuple[Frame, Frame]:
    """MatchFound, then the RoomJoined of the join that follows it. Either may have come
    while an earlier request of the client waited for its own reply (``request`` reads past
    other frames: the match can be made before the MatchQueued answer is out), so the frames
    read since the last ``found`` of this client are looked at first."""
    earlier = client.seen[client.found_upto:]
    match = next((f for f in earlier if has("match_found")(f)), None)
    if match is None:
        match, earlier = await client.until(has("match_found"), timeout), []
    else:
        earlier = earlier[earlier.index(match) + 1:]
    joined = next((f for f in earlier if has("room_joined")(f)), None)
    if joined is None:
        joined = await client.until(has("room_joined"), 10)
    client.found_upto = len(client.seen)
    return match, joined


async def hand_starts(client: Client) -> None:
    """Ready, then the first frame of a dealt hand reaches the player."""
    assert code_of(await client.request(lobby_msgs_pb2.AskReady(is_ready=True))) == E.OK
    await client.until(lambda f: f.WhichOneof("payload") in ("mj_hand", "mj_deal", "prompt"),
                       30)


async def test_four_players_are_matched_into_one_room_and_play(
        fresh_nats: EmbeddedNats) -> None:
    async with stack(fresh_nats.url) as s:
        host = await s.lobby()
        players = [await s.player(host, 7001 + i) for i in range(4)]
        first = await queued(players[0], stake=2)
        assert first.ticket_id and first.game == "xuezhan" and first.stake == 2
        assert first.waiting == 1 and first.since_ms > 0
        for p in players[1:]:
            await queued(p, stake=2)
        results = await asyncio.gather(*(found(p) for p in players))
        rooms = {m.match_found.room_id for m, _ in results}
        assert len(rooms) == 1 and rooms.pop() > 0
        assert sorted(m.match_found.seat for m, _ in results) == [0, 1, 2, 3]
        room = results[0][1].room_joined.room
        assert room.base_score == 2 and room.has_password     # a private room: no quick start
        assert all(m.match_found.robots == 0 for m, _ in results)
        await asyncio.gather(*(hand_starts(p) for p in players))
        # seated now: a new ticket is refused
        refused = await players[0].request(lobby_msgs_pb2.AskMatch(game="xuezhan"))
        assert code_of(refused) == E.ERR_ALREADY_IN_ROOM


async def test_cancel_and_bad_input(fresh_nats: EmbeddedNats) -> None:
    async with stack(fresh_nats.url) as s:
        host = await s.lobby()
        me = await s.player(host, 7101)
        for ask, code in ((dict(game="poker"), E.ERR_BAD_OPTIONS),
                          (dict(game="changsha", options_json='{"no_such_rule": 1}'),
                           E.ERR_BAD_OPTIONS),
                          (dict(game="xuezhan", options_json="[1]"), E.ERR_BAD_OPTIONS),
                          (dict(game="xuezhan", stake=-3), E.ERR_BAD_OPTIONS),
                          (dict(game="xuezhan", region="x" * 65), E.ERR_BAD_OPTIONS),
                          # FakeRecords gives 10,000 + uid coins; 20 stakes must be covered
                          (dict(game="xuezhan", stake=1000), E.ERR_STAKE_TOO_HIGH)):
            reply = await me.request(lobby_msgs_pb2.AskMatch(**ask))
            assert code_of(reply) == code, (ask, reply)
        assert code_of(await me.request(lobby_msgs_pb2.CancelMatch())) == E.ERR_NOT_QUEUED
        ticket = await queued(me, game="dadun", ranked=True)
        again = await me.request(lobby_msgs_pb2.AskMatch(game="xuezhan"))
        assert code_of(again) == E.ERR_ALREADY_QUEUED
        for elsewhere in (lobby_msgs_pb2.CreateRoom(game=E.DADUN, base_score=1, total_hands=1),
                          lobby_msgs_pb2.JoinRoom(game=E.DADUN)):     # quick start
            assert code_of(await me.request(elsewhere)) == E.ERR_ALREADY_QUEUED
        cancelled = await me.request(lobby_msgs_pb2.CancelMatch())
        assert cancelled.match_cancelled.ticket_id == ticket.ticket_id
        assert cancelled.match_cancelled.reason == lobby_msgs_pb2.MatchCancelled.CANCELLED
        assert code_of(await me.request(lobby_msgs_pb2.CancelMatch())) == E.ERR_NOT_QUEUED
        # a cancelled ticket is never matched: three others wait with it gone
        others = [await s.player(host, 7102 + i) for i in range(3)]
        for p in others:
            await queued(p, game="dadun", ranked=True)
        await asyncio.sleep(1.0)
        assert host.app.matchmaking.matches == 0
        # a ticket whose connection dropped is held for its player, not matched: the three
        # and a newcomer make a table (tests/service/test_lobby_match_grace.py: the return)
        await queued(me, game="dadun", ranked=True)
        await me.close()
        s.clients.remove(me)
        for _ in range(200):                   # held as its session ended
            if host.app.matchmaking.view["t.7101"][1].away_at is not None:
                break
            await asyncio.sleep(0.05)
        assert host.app.matchmaking.view["t.7101"][1].away_at is not None
        late = await s.player(host, 7105)
        await queued(late, game="dadun", ranked=True)
        results = await asyncio.gather(*(found(p) for p in [*others, late]))
        assert len({m.match_found.room_id for m, _ in results}) == 1


async def test_a_ticket_nobody_fits_times_out(fresh_nats: EmbeddedNats) -> None:
    async with stack(fresh_nats.url) as s:
        host = await s.lobby(match_timeout_seconds=1.0)
        me = await s.player(host, 7151)
        ticket = await queued(me, game="xuezhan", stake=3)
        ended = await me.until(has("match_cancelled"), 10)
        assert ended.match_cancelled.ticket_id == ticket.ticket_id
        assert ended.match_cancelled.reason == lobby_msgs_pb2.MatchCancelled.TIMEOUT
        assert code_of(await me.request(lobby_msgs_pb2.CancelMatch())) == E.ERR_NOT_QUEUED
        await queued(me, game="xuezhan")       # and a new request is taken


async def test_robots_fill_an_unranked_queue(fresh_nats: EmbeddedNats) -> None:
    async with stack(fresh_nats.url) as s:
        host = await s.lobby(match_robot_fill_seconds=0.5)
        me = await s.player(host, 7201)
        await queued(me, game="changsha")
        match, joined = await found(me)
        assert match.match_found.robots == 3 and match.match_found.seat == 0
        await hand_starts(me)
        seated = await me.request(lobby_msgs_pb2.RefreshRoom())
        assert seated is not None


async def test_a_dead_matchers_tickets_are_matched_by_another_lobby(
        fresh_nats: EmbeddedNats) -> None:
    async with stack(fresh_nats.url) as s:
        a = await s.lobby()
        for _ in range(50):
            if "dadun" in a.app.matchmaking.leading:
                break
            await asyncio.sleep(0.1)
        assert "dadun" in a.app.matchmaking.leading      # alone: every game's matcher
        b = await s.lobby()
        for _ in range(100):                   # the leases spread over the two lobbies
            if a.app.matchmaking.leading and b.app.matchmaking.leading:
                break
            await asyncio.sleep(0.1)
        holder, standby = (a, b) if "dadun" in a.app.matchmaking.leading else (b, a)
        assert "dadun" not in standby.app.matchmaking.leading
        players = [await s.player(standby, 7301 + i) for i in range(4)]
        for p in players[:2]:
            await queued(p, game="dadun")
        await asyncio.sleep(0.5)               # two waiting in the holder's matcher
        # it dies as at a kill -9 (no resign); a single cancel can be lost on Python 3.11
        await cancel_and_wait(*holder.app.matchmaking.tasks)
        for p in players[2:]:
            await queued(p, game="dadun")
        results = await asyncio.gather(*(found(p, timeout=30) for p in players))
        assert len({m.match_found.room_id for m, _ in results}) == 1
        assert "dadun" in standby.app.matchmaking.leading
        assert standby.app.matchmaking.matches == 1 and holder.app.matchmaking.matches == 0


async def test_robots_seated_by_matchmaking_across_two_lobbies_play_a_hand(
        fresh_nats: EmbeddedNats) -> None:
    """clients.robot's ``--match``: four robots on two lobbies ask, whichever lobby runs the
    matcher seats them all in one room (the others' lobbies deliver), and they play."""
    async with stack(fresh_nats.url) as s:
        a, b = await s.lobby(match_total_hands=1), await s.lobby(match_total_hands=1)
        addresses = [f"127.0.0.1:{a.port}", f"127.0.0.1:{b.port}"]
        stats = await asyncio.wait_for(run_matched(addresses, "xuezhan", 4, SECRET, hands=1,
                                                   first_uid=7401, match={"stake": 1}), 90)
        assert [st.errors for st in stats] == [[]] * 4
        assert all(st.hands == 1 for st in stats)
        assert len({tuple(st.rooms) for st in stats}) == 1 and stats[0].rooms[0] > 0
        assert a.app.matchmaking.matches + b.app.matchmaking.matches == 1


async def test_a_killed_matcher_process_loses_no_ticket(
        fresh_nats: EmbeddedNats, tmp_path: Path) -> None:
    """Lobby A, a real process, is the active matcher of every game and holds two players'
    tickets; it is killed (SIGKILL: no lease given up, no ticket withdrawn). Its players log
    in on lobby B, where their tickets follow them (MatchQueued again); B takes the leases
    over once they stood still, and matches them with two players of its own."""
    async with stack(fresh_nats.url) as s:
        records = s.cfg.records.address
        proc = make_service("lobby", fresh_nats.url, tmp_path, **{
            "PAIJU_LOBBY__TOKEN_SECRET": SECRET, "PAIJU_RECORDS__ADDRESS": records,
            "PAIJU_LOBBY__WS_PORT": "-1", "PAIJU_LOBBY__MATCH_TICK_SECONDS": "0.2",
            "PAIJU_LOBBY__MATCH_LEASE_SECONDS": "1.0"})
        await asyncio.to_thread(proc.start)
        nc = await nats.connect(fresh_nats.url)
        try:
            kv = await nc.jetstream().key_value(BUCKET)
            for _ in range(100):
                with contextlib.suppress(Exception):
                    if (await kv.get(LEASE_PREFIX + "changsha")).value:
                        break
                await asyncio.sleep(0.1)
            b = await s.lobby()
            first = []
            for uid in (7501, 7502):
                client = Client(proc.address)
                s.clients.append(client)
                await client.login(uid)
                first.append((await queued(client, game="changsha")).ticket_id)
            await asyncio.sleep(0.4)
            await asyncio.to_thread(proc.kill)
            players = []
            for uid, ticket in zip((7501, 7502), first, strict=True):
                again = await s.player(b, uid)
                resumed = await again.until(has("match_queued"), 10)
                assert resumed.match_queued.ticket_id == ticket
                players.append(again)
            for uid in (7503, 7504):
                players.append(await s.player(b, uid))
                await queued(players[-1], game="changsha")
            results = await asyncio.gather(*(found(p, timeout=20) for p in players))
            assert len({m.match_found.room_id for m, _ in results}) == 1
            assert {m.match_found.ticket_id for m, _ in results[:2]} == set(first)
            assert "changsha" in b.app.matchmaking.leading and b.app.matchmaking.matches == 1
        finally:
            await nc.close()
            await asyncio.to_thread(proc.stop)


async def test_a_draining_matcher_hands_over_at_once_and_its_players_keep_their_tickets(
        fresh_nats: EmbeddedNats) -> None:
    """SIGTERM of the active matchers' lobby: its clients are sent away (their tickets stay),
    it gives the leases up, the other lobby matches at its next pass; the players resume
    their tickets there."""
    async with stack(fresh_nats.url) as s:
        a = await s.lobby()
        for _ in range(50):
            if a.app.matchmaking.leading:
                break
            await asyncio.sleep(0.1)
        b = await s.lobby(match_lease_seconds=30.0)   # only a given-up lease goes this fast
        first = []
        for uid in (7601, 7602):
            client = await s.player(a, uid)
            first.append((await queued(client, game="xuezhan", stake=5)).ticket_id)
        await a.stop(0.5)
        s.lobbies.remove(a)
        players = []
        for uid in (7601, 7602):
            again = await s.player(b, uid)
            assert (await again.until(has("match_queued"), 10)).match_queued.ticket_id \
                in first
            players.append(again)
        for uid in (7603, 7604):
            players.append(await s.player(b, uid))
            await queued(players[-1], game="xuezhan", stake=5)
        results = await asyncio.gather(*(found(p, timeout=10) for p in players))
        assert len({m.match_found.room_id for m, _ in results}) == 1
        assert b.app.matchmaking.leading == set(b.app.matchmaking.games)


async def test_a_party_is_seated_together_once_every_member_asked(
        fresh_nats: EmbeddedNats) -> None:
    async with stack(fresh_nats.url) as s:
        a, b = await s.lobby(), await s.lobby()
        lead = await s.player(a, 7801)
        for party, why in (([7801], "yourself"), ([7802, 7802], "twice"),
                           ([7802, 7803, 7804], "too many"), ([-5], "no such user")):
            refused = await lead.request(lobby_msgs_pb2.AskMatch(game="changsha", party=party))
            assert code_of(refused) == E.ERR_BAD_OPTIONS, why
        friend = await s.player(b, 7802)                  # online on the other lobby
        await queued(lead, game="changsha", party=[7802])
        solos = [await s.player(b if i % 2 else a, 7803 + i) for i in range(3)]
        for p in solos:
            await queued(p, game="changsha")
        await asyncio.sleep(1.0)         # three alone and a party of one so far: no table
        assert a.app.matchmaking.matches + b.app.matchmaking.matches == 0
        await queued(friend, game="changsha", party=[7801])
        (m1, _), (m2, _) = await asyncio.gather(found(lead), found(friend))
        assert m1.match_found.room_id == m2.match_found.room_id
        assert a.app.matchmaking.matches + b.app.matchmaking.matches == 1
        # the party and two of the three made the table; the third still waits
        view = (a if "changsha" in a.app.matchmaking.leading else b).app.matchmaking.view
        for _ in range(100):
            left = [i for i in range(3) if f"t.{7803 + i}" in view]
            if len(left) == 1:
                break
            await asyncio.sleep(0.05)
        assert len(left) == 1 and view[f"t.{7803 + left[0]}"][1].state == "waiting"
        others = [p for i, p in enumerate(solos) if i not in left]
        rooms = {m.match_found.room_id for m, _ in await asyncio.gather(*map(found, others))}
        assert rooms == {m1.match_found.room_id}
