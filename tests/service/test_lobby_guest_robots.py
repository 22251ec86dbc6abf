"""Guest login and robots through the lobby's front door, with a real nats-server, arbiter,
table and lobby (records in-test): a browser asks ``POST /guest`` for a token with a
nickname, logs in with it over the WebSocket, creates a room, fills it with robots
(AddRobots, forwarded like every seated command) and plays a whole hand; guest login is a
404 where it is off, bad nicknames are refused, the per-IP login limit holds it, and a
robot's user id can never log in."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from paiju.v1 import common_pb2, lobby_msgs_pb2
from services.common import reserved
from services.common.natsd import EmbeddedNats
from services.lobby import tokens
from tests.service.test_lobby_ws import WsClient, play_until_hand_over, real_stack, ws_clients
from tests.support.lobbyworld import SECRET, World, code_of, open_world

E = common_pb2


async def post_guest(port: int, body: Any) -> tuple[int, dict[str, Any]]:
    async with aiohttp.ClientSession() as http:
        async with http.post(f"http://127.0.0.1:{port}/guest", json=body) as resp:
            return resp.status, await resp.json()


@pytest.mark.parametrize("game,enum", [("changsha", E.CHANGSHA), ("dadun", E.DADUN)])
async def test_a_guest_fills_a_room_with_robots_and_plays_a_hand(
        fresh_nats: EmbeddedNats, game: str, enum: Any) -> None:
    async with real_stack(fresh_nats.url) as (_, port), ws_clients() as clients:
        status, guest = await post_guest(port, {"nickname": "  小 明 "})
        assert status == 200, guest
        uid = int(guest["user_id"])
        assert reserved.is_guest(uid) and guest["nickname"] == "小 明"
        assert tokens.verify(guest["token"], SECRET) == uid and guest["expires_in"] > 0
        me = await WsClient.open(port, as_json=True)
        clients.append(me)
        ok = await me.request(lobby_msgs_pb2.Login(token=guest["token"],
                                                   nickname=guest["nickname"]))
        assert ok.login_ok.player.user_id == uid
        created = await me.request(lobby_msgs_pb2.CreateRoom(game=enum, base_score=1,
                                                              total_hands=1))
        assert created.room_joined.room.room_id
        assert created.room_joined.room.creator_id == uid   # the page shows it the control
        assert code_of(await me.request(lobby_msgs_pb2.AddRobots(count=0))) == E.OK
        assert code_of(await me.request(lobby_msgs_pb2.AddRobots())) == E.ERR_ROOM_FULL
        assert code_of(await me.request(lobby_msgs_pb2.AskReady(is_ready=True))) == E.OK
        prompts, over = await play_until_hand_over(me, game)
        assert prompts > 0 and sum(over["deltas"]) == 0
        robots = [p for f in me.seen if f.HasField("player_change")
                  for p in f.player_change.players if p.robot]
        assert robots and all(reserved.is_robot(p.user_id) for p in robots)
        # nothing a robot was dealt or prompted ever reached this session
        assert not any(f.HasField("prompt") and f.prompt.seat != 0 for f in me.seen)


async def test_guest_login_is_off_limited_and_checked(fresh_nats: EmbeddedNats) -> None:
    async with open_world(fresh_nats) as world:
        await world.lobby(ws_port=0, guest_login=False)
        off = world.lobbies[-1].ws_port
        assert (await post_guest(off, {"nickname": "x"}))[0] == 404
        await world.lobby(ws_port=0, logins_per_ip_per_minute=7)
        port = world.lobbies[-1].ws_port
        for body in ({}, {"nickname": ""}, {"nickname": "x" * 25}, {"nickname": "a\x00b"},
                     {"nickname": "RoBot 3"}, ["nickname"]):
            status, answer = await post_guest(port, body)
            assert status == 400 and answer["error"] == "bad_request", (body, answer)
        status, answer = await post_guest(port, {"nickname": "ok"})
        assert status == 200 and reserved.is_guest(int(answer["user_id"]))
        status, answer = await post_guest(port, {"nickname": "late"})
        assert status == 429 and answer["error"] == "rate_limited"


async def test_a_robot_id_never_logs_in(world: World) -> None:
    address = await world.lobby()
    client = await world.client(address)
    robot = reserved.robot_id(12345678, 1)
    reply = await client.request(lobby_msgs_pb2.Login(token=tokens.mint(robot, SECRET, 600)))
    assert code_of(reply) == E.ERR_BAD_TOKEN and "robot" in reply.ret.message


@pytest.fixture
async def world(fresh_nats: EmbeddedNats) -> Any:
    async with open_world(fresh_nats) as w:
        yield w
