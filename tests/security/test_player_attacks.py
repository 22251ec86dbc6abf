"""What one player account could do to the service (issue 9), tried against a real stack:
each attack must fail, and the stack must still serve everyone afterwards."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import nats

from clients.session import LobbySession, mint_token
from paiju.v1 import client_pb2, common_pb2
from paiju.v1 import lobby_msgs_pb2 as lm
from services.common import bus
from tests.system.conftest import SECRET, Stack


async def login(stack: Stack, uid: int, **fields: Any) -> tuple[LobbySession, client_pb2.ServerFrame]:
    s = LobbySession(stack.lobby_address)
    await s.open()
    reply = await s.login(mint_token(uid, SECRET), nickname=f"p{uid}", **fields)
    return s, reply


def code(frame: client_pb2.ServerFrame) -> int:
    return frame.ret.code if frame.WhichOneof("payload") == "ret" else 0


async def test_vip_passwords_cannot_be_brute_forced(stack: Stack) -> None:
    owner, _ = await login(stack, 7001)
    created = await owner.request(lm.CreateRoom(game=common_pb2.DADUN, base_score=1,
                                                total_hands=1, password="4821"))
    room_id = created.room_joined.room.room_id
    thief, _ = await login(stack, 7002)
    codes = []
    for guess in range(40):   # bounded: as many as a lockout lets through, and more
        reply = await thief.request(lm.JoinRoom(room_id=room_id, password=f"{guess:04d}"))
        codes.append(code(reply))
    assert codes[:5] == [common_pb2.ERR_BAD_PASSWORD] * 5
    assert set(codes[5:]) == {common_pb2.ERR_RATE_LIMITED}   # locked out after five
    # the right password is refused too while locked out, so guesses cannot go on
    right = await thief.request(lm.JoinRoom(room_id=room_id, password="4821"))
    assert code(right) == common_pb2.ERR_RATE_LIMITED
    # another player with the password still gets in
    friend, _ = await login(stack, 7003)
    joined = await friend.request(lm.JoinRoom(room_id=room_id, password="4821"))
    assert joined.WhichOneof("payload") == "room_joined"
    for s in (owner, thief, friend):
        await s.close()


async def test_distance_bands_do_not_locate_a_player(stack: Stack) -> None:
    # the victim sits at a secret place; the prober joins from chosen places, asks the band,
    # leaves, and tries again: his first position stays his in that room, so every answer
    # is the same and the probes learn nothing new
    victim_at = (28.228200, 112.938800)
    victim, _ = await login(stack, 7101, lat=victim_at[0], lng=victim_at[1])
    created = await victim.request(lm.CreateRoom(game=common_pb2.CHANGSHA, base_score=1,
                                                 total_hands=1))
    room_id = created.room_joined.room.room_id
    answers = set()
    for probe in range(4):
        lat = victim_at[0] + 0.0005 * probe   # 0, 55, 110, 165 m north
        prober, _ = await login(stack, 7102, lat=lat, lng=victim_at[1])
        joined = await prober.request(lm.JoinRoom(room_id=room_id))
        assert joined.WhichOneof("payload") == "room_joined", joined
        await asyncio.sleep(2.05)   # one distance query per seat every 2 s
        geo = await prober.request(lm.AskGeo())
        assert geo.WhichOneof("payload") == "use_geo", geo
        hurried = await prober.request(lm.AskGeo())
        assert code(hurried) == common_pb2.ERR_RATE_LIMITED
        answers.add(tuple((i.distance, i.gap) for i in geo.use_geo.items))
        left = await prober.request(lm.AskExit())
        assert code(left) == 0, left
        await prober.close()
    assert len(answers) == 1   # 0 m and 165 m away gave the same band: the first one
    await victim.close()


async def test_a_room_left_empty_before_its_first_hand_closes_at_once(stack: Stack) -> None:
    # create, leave, repeat: each empty room goes away at once instead of sitting in the
    # directory (and every lobby's room list) for half an hour
    nc = await nats.connect(stack.nats.url)
    rooms_kv = await nc.jetstream().key_value(bus.ROOMS_BUCKET)
    s, _ = await login(stack, 7201)
    made = []
    for _ in range(10):
        created = await s.request(lm.CreateRoom(game=common_pb2.XUEZHAN, base_score=1,
                                                total_hands=1))
        assert created.WhichOneof("payload") == "room_joined", created
        made.append(created.room_joined.room.room_id)
        assert code(await s.request(lm.AskExit())) == 0
    deadline = time.monotonic() + 10
    left = set(made)
    while left and time.monotonic() < deadline:
        for room_id in list(left):
            try:
                await rooms_kv.get(str(room_id))
            except nats.js.errors.KeyNotFoundError:
                left.discard(room_id)
        await asyncio.sleep(0.2)
    assert not left, f"rooms still listed: {sorted(left)}"
    await s.close()
    await nc.close()


async def test_simultaneous_logins_of_one_user_leave_the_lobby_serving(stack: Stack) -> None:
    # two logins of the same user at the same moment: the kicked one was cancelled in the
    # middle of a NATS barrier, which cut the whole lobby off from NATS for minutes
    for _ in range(15):
        pair = [LobbySession(stack.lobby_address) for _ in range(2)]
        for s in pair:
            await s.open()
        await asyncio.gather(*(s.login(mint_token(7300, SECRET), nickname="twin") for s in pair),
                             return_exceptions=True)
        for s in pair:
            await s.close()
    # everyone else is still served: a room is created and its events reach the players
    a, ok = await login(stack, 7301)
    assert ok.WhichOneof("payload") == "login_ok"
    created = await a.request(lm.CreateRoom(game=common_pb2.DADUN, base_score=1, total_hands=1))
    room_id = created.room_joined.room.room_id
    b, _ = await login(stack, 7302)
    await b.request(lm.JoinRoom(room_id=room_id))

    async def player_change() -> None:
        while True:
            frame = await a.pushes.get()
            assert frame is not None
            if frame.WhichOneof("payload") == "player_change":
                return

    await asyncio.wait_for(player_change(), 10)
    for s in (a, b):
        await s.close()
