"""Spectators (观战) with a real nats-server, arbiter, table and lobby (records in-test): a
watcher gets the room as seat -1 and the public view, then exactly the public frames of the
room's stream (never one that was private to anyone: compared with everything the table
published), sees the hand end, cannot act (ERR_SPECTATOR), is counted in the room list, and
stops counting when it stops watching."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import nats
import pytest

from paiju.frames import hand_over_data
from paiju.v1 import client_pb2, common_pb2, lobby_msgs_pb2, table_pb2
from paiju.v1 import game_msgs_pb2 as g
from services.common.natsd import EmbeddedNats
from tests.service.test_lobby_ws import (
    GAMES,
    WsClient,
    answer,
    play_until_hand_over,
    real_stack,
    ws_clients,
)
from tests.support.lobbyworld import code_of

E = common_pb2
HIDDEN_KEYS = {"hand", "drawn", "exchange", "candidates", "token", "my_partner"}


def bare(frame: client_pb2.ServerFrame) -> bytes:
    """A frame as the table made it (without the session's seq and reply_to)."""
    copy = client_pb2.ServerFrame()
    copy.CopyFrom(frame)
    copy.seq = copy.reply_to = 0
    return copy.SerializeToString(deterministic=True)


async def spectators_of(client: WsClient, room_id: int, want: int) -> None:
    async with asyncio.timeout(10):
        while True:
            rooms = await client.request(lobby_msgs_pb2.AskRoomList())
            mine = [r for r in rooms.room_list.items if r.room_id == room_id]
            if mine and mine[0].spectators == want:
                return
            await asyncio.sleep(0.1)


@pytest.mark.parametrize("game,enum", GAMES)
async def test_a_spectator_watches_a_hand_and_never_sees_a_hidden_tile(
        fresh_nats: EmbeddedNats, game: str, enum: Any) -> None:
    async with real_stack(fresh_nats.url) as (_, port), ws_clients() as clients:
        raw = await nats.connect(fresh_nats.url)
        published: list[table_pb2.RoomEvents] = []

        async def keep(msg: Any) -> None:
            published.append(table_pb2.RoomEvents.FromString(msg.data))
        await raw.subscribe("room.*.events", cb=keep)
        me, fan, late = [await WsClient.open(port, as_json=True) for _ in range(3)]
        clients += [me, fan, late]
        await me.login(301)
        await fan.login(302)
        await late.login(303)
        created = await me.request(lobby_msgs_pb2.CreateRoom(game=enum, base_score=1,
                                                              total_hands=1))
        room_id = created.room_joined.room.room_id
        assert code_of(await me.request(lobby_msgs_pb2.AddRobots())) == E.OK
        watched = await fan.request(lobby_msgs_pb2.WatchRoom(room_id=room_id))
        assert watched.room_joined.seat == -1 and watched.room_joined.room.room_id == room_id
        assert all(not p.ip for p in watched.room_joined.room.players)
        await spectators_of(fan, room_id, 1)
        # a spectator cannot act
        for payload in (lobby_msgs_pb2.AskReady(is_ready=True), lobby_msgs_pb2.AddRobots(),
                        lobby_msgs_pb2.Chat(content="hi"), g.MahjongAction(kind="pass"),
                        g.DdAskOut(token="x"), g.GameAction(kind="pass")):
            assert code_of(await fan.request(payload)) == E.ERR_SPECTATOR, payload
        watching: list[client_pb2.ServerFrame] = []

        async def follow() -> None:
            while True:
                frame = await fan.next(timeout=60)
                watching.append(frame)
                if hand_over_data(frame) is not None:
                    return
        follower = asyncio.create_task(follow())
        assert code_of(await me.request(lobby_msgs_pb2.AskReady(is_ready=True))) == E.OK
        first = await me.until(lambda f: f.HasField("prompt"), 20)
        # a watcher arriving mid-hand gets the public view of the hand, no concealed tile
        seen = await late.request(lobby_msgs_pb2.WatchRoom(room_id=room_id))
        assert seen.room_joined.seat == -1
        info = await late.until(lambda f: f.HasField("mj_game_info") or f.HasField("dd_game_info")
                                or f.HasField("game_info"))
        if info.HasField("mj_game_info"):
            assert not HIDDEN_KEYS & set(json.loads(info.mj_game_info.observation_json))
        elif info.HasField("game_info"):   # a game without its own snapshot: the public view
            public = json.loads(info.game_info.observation_json)
            assert not HIDDEN_KEYS & set(public) and not public.get("all_hands"), public
        else:
            assert not info.dd_game_info.hand and not info.dd_game_info.out_token
            assert not [h for h in info.dd_game_info.all_hands if h.cards]
        await spectators_of(me, room_id, 2)
        # the player plays the hand out (his first prompt answered first)
        await me.send(answer(game, first.prompt.actions[0]))
        _, over = await play_until_hand_over(me, game)
        await asyncio.wait_for(follower, 30)
        assert sum(over["deltas"]) == 0
        await asyncio.sleep(0.3)
        await raw.drain()   # every message received so far reaches keep() first
        private = {bare(p.frame) for m in published for p in m.private}
        public = {bare(f) for m in published for f in m.frames}
        assert private and public and len(watching) > 10
        got = [bare(f) for f in watching]
        assert not set(got) & private, "a private frame reached a spectator"
        kinds = {f.WhichOneof("payload") for f in watching}
        assert not kinds & {"prompt", "mj_hand", "mj_candidates"}, kinds
        unpublished = [f for b, f in zip(got, watching, strict=True)
                       if b not in public and f.WhichOneof("payload") not in ("ret", "room_joined")
                       and not f.HasField("mj_game_info") and not f.HasField("dd_game_info")
                       and not f.HasField("game_info")]
        assert not unpublished, (unpublished[:3], len(published))
        assert all(not f.mj_draw.tile for f in watching if f.HasField("mj_draw"))
        # stop watching: counted no more; seated commands still refused, now as not in a room
        assert code_of(await late.request(lobby_msgs_pb2.StopWatching())) == E.OK
        assert code_of(await late.request(lobby_msgs_pb2.AskReady())) == E.ERR_NOT_IN_ROOM


async def test_watching_an_unknown_room_or_while_seated_is_refused(
        fresh_nats: EmbeddedNats) -> None:
    async with real_stack(fresh_nats.url) as (_, port), ws_clients() as clients:
        me = await WsClient.open(port, as_json=True)
        clients.append(me)
        await me.login(401)
        assert code_of(await me.request(lobby_msgs_pb2.WatchRoom(room_id=12345678))) \
            == E.ERR_NO_SUCH_ROOM
        assert code_of(await me.request(lobby_msgs_pb2.WatchRoom())) == E.ERR_BAD_FRAME
        created = await me.request(lobby_msgs_pb2.CreateRoom(game=E.XUEZHAN, total_hands=1))
        room_id = created.room_joined.room.room_id
        assert code_of(await me.request(lobby_msgs_pb2.WatchRoom(room_id=room_id))) \
            == E.ERR_ALREADY_IN_ROOM
        # a watcher that sits down stops watching
        other = await WsClient.open(port, as_json=True)
        clients.append(other)
        await other.login(402)
        assert (await other.request(lobby_msgs_pb2.WatchRoom(room_id=room_id))).room_joined
        joined = await other.request(lobby_msgs_pb2.JoinRoom(room_id=room_id))
        assert joined.room_joined.seat == 1
        await spectators_of(me, room_id, 0)
        assert code_of(await other.request(lobby_msgs_pb2.AskReady(is_ready=True))) == E.OK



async def test_a_delayed_spectator_sees_the_same_frames_later(fresh_nats: EmbeddedNats) -> None:
    """With ``lobby.spectator_delay`` = 3 the watcher gets the public frames the player got,
    in the same order, each once the room is three log positions further on (the room's
    last ones when it closes)."""
    async with real_stack(fresh_nats.url, spectator_delay=3) as (_, port), \
            ws_clients() as clients:
        me, fan = [await WsClient.open(port, as_json=True) for _ in range(2)]
        clients += [me, fan]
        await me.login(501)
        await fan.login(502)
        created = await me.request(lobby_msgs_pb2.CreateRoom(game=E.DADUN, total_hands=1))
        room_id = created.room_joined.room.room_id
        assert code_of(await me.request(lobby_msgs_pb2.AddRobots())) == E.OK
        assert (await fan.request(lobby_msgs_pb2.WatchRoom(room_id=room_id))).room_joined
        assert code_of(await me.request(lobby_msgs_pb2.AskReady(is_ready=True))) == E.OK
        _, over = await play_until_hand_over(me, "dadun")
        started = asyncio.get_running_loop().time()
        watched = await fan.until(lambda f: hand_over_data(f) is not None, 20)
        await fan.until(lambda f: f.HasField("notice_dismiss"), 20)
        assert asyncio.get_running_loop().time() - started < 10   # not the 30 s bound
        assert hand_over_data(watched) == over
        await me.until(lambda f: f.HasField("notice_dismiss"), 10)
        game = {"player_change", "hand_commitment", "fair_reveal", "notice_dismiss"}
        mine = [bare(f) for f in me.seen if f.WhichOneof("payload") in game
                or f.WhichOneof("payload").startswith("dd_")]
        theirs = [bare(f) for f in fan.seen if f.WhichOneof("payload") in game
                  or f.WhichOneof("payload").startswith("dd_") and not f.HasField("dd_game_info")]
        missing = [client_pb2.ServerFrame.FromString(b) for b in theirs if b not in mine]
        assert theirs and not missing, missing[:3]
        positions = [mine.index(b) for b in theirs]
        assert positions == sorted(positions), "the watcher's frames keep the room's order"
