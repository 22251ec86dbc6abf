"""Sessions across the real stack: duplicate login kicks, disconnect -> entrust, reconnect ->
a snapshot equal to the table's own view, bad input that changes nothing, dismiss voting."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

from clients.robot.robot import action_frame
from clients.robot.view import choose
from clients.session import LobbySession, mint_token
from paiju.v1 import client_pb2, common_pb2
from paiju.v1 import game_msgs_pb2 as g
from paiju.v1 import lobby_msgs_pb2 as lm
from tests.support.tablekit import LobbyLink
from tests.system.conftest import SECRET, Stack, start_stack, stop_stack


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """One stack for this file's tests: each plays its own users (5xx, 6xx, ...) and rooms."""
    s = start_stack(tmp_path_factory.mktemp("sessions"))
    try:
        yield s
    finally:
        stop_stack(s)


async def login(stack: Stack, uid: int, **fields: Any) -> tuple[LobbySession, client_pb2.ServerFrame]:
    s = LobbySession(stack.lobby_address)
    await s.open()
    reply = await s.login(mint_token(uid, SECRET), nickname=f"p{uid}", **fields)
    return s, reply


async def next_push(s: LobbySession, kind: str, timeout: float = 15) -> Any:
    """The next pushed frame of a payload kind (others are skipped)."""
    async def wait() -> Any:
        while True:
            frame = await s.pushes.get()
            if frame is None:
                raise AssertionError(f"stream closed while waiting for {kind}")
            if frame.WhichOneof("payload") == kind:
                return getattr(frame, kind)
    return await asyncio.wait_for(wait(), timeout)


async def seat_four(stack: Stack, game: int, uids: list[int], options: dict[str, Any],
                    hands: int = 1) -> tuple[list[LobbySession], int]:
    sessions = []
    first, _ = await login(stack, uids[0])
    created = await first.request(lm.CreateRoom(game=game, base_score=1, total_hands=hands,
                                                 options_json=json.dumps(options)))
    assert created.WhichOneof("payload") == "room_joined", created
    room_id = created.room_joined.room.room_id
    sessions.append(first)
    for uid in uids[1:]:
        s, _ = await login(stack, uid)
        joined = await s.request(lm.JoinRoom(room_id=room_id))
        assert joined.WhichOneof("payload") == "room_joined", joined
        sessions.append(s)
    return sessions, room_id


async def test_second_login_kicks_the_first(stack: Stack) -> None:
    a, ok = await login(stack, 501)
    assert ok.WhichOneof("payload") == "login_ok"
    b, ok2 = await login(stack, 501)
    assert ok2.WhichOneof("payload") == "login_ok"
    kicked = await next_push(a, "kick_out")
    assert kicked.user_id == 501
    await asyncio.wait_for(a.closed.wait(), 5)
    listing = await b.request(lm.AskRoomList())
    assert listing.WhichOneof("payload") == "room_list"
    await b.close()
    await a.close()


async def test_bad_login_is_refused_and_closed(stack: Stack) -> None:
    s = LobbySession(stack.lobby_address)
    await s.open()
    reply = await s.login("1.99999999999.deadbeef")
    assert reply.ret.code == common_pb2.ERR_BAD_TOKEN
    await asyncio.wait_for(s.closed.wait(), 5)
    await s.close()


async def test_disconnect_entrusts_and_reconnect_gets_the_tables_view(stack: Stack) -> None:
    uids = [601, 602, 603, 604]
    opts = {"turn_seconds": 60, "window_seconds": 60}
    sessions, room_id = await seat_four(stack, common_pb2.XUEZHAN, uids, opts)
    for s in sessions:
        ready = await s.request(lm.AskReady(is_ready=True))
        assert ready.ret.code == 0
    await next_push(sessions[1], "prompt")       # the hand has started
    await sessions[0].close()                    # seat 0 drops its connection
    entrusted = await next_push(sessions[1], "in_entrust")
    assert entrusted.seat == 0
    # seat 0 is played by entrust; the others do not answer, so the hand stands still
    await asyncio.sleep(1.0)
    back, ok = await login(stack, 601)
    assert ok.WhichOneof("payload") == "login_ok" and ok.login_ok.room.room_id == room_id
    info = await next_push(back, "mj_game_info")
    seen = json.loads(info.observation_json)
    link = LobbyLink(stack.table.address, stack.nats.url)   # the table's own view of seat 0, asked directly
    direct = await link.send(room_id, 601, kind="snapshot")
    await link.close()
    table_view = json.loads(next(f.mj_game_info.observation_json for f in direct.frames
                                 if f.WhichOneof("payload") == "mj_game_info"))
    assert seen == table_view
    assert seen["seat"] == 0 and seen["hand"]
    for s in [back, *sessions[1:]]:
        await s.close()


async def test_bad_frames_and_stale_actions_get_codes_and_the_room_goes_on(stack: Stack) -> None:
    uids = [701, 702, 703, 704]
    sessions, room_id = await seat_four(stack, common_pb2.DADUN, uids, {}, hands=1)
    for s in sessions:
        assert (await s.request(lm.AskReady(is_ready=True))).ret.code == 0
    codes: list[int] = []
    used_tokens: list[str] = []
    turn_codes: list[int] = []
    stolen = asyncio.Event()   # the steal below has its answer
    done = asyncio.Event()

    async def play(s: LobbySession, evil: bool) -> None:
        while not done.is_set():
            frame = await s.pushes.get()
            if frame is None:
                return
            kind = frame.WhichOneof("payload")
            if kind == "notice_dismiss":
                done.set()
                return
            if evil and kind == "dd_hint_out" and frame.dd_hint_out.seat != 0 and not turn_codes:
                # a current token, but another seat's turn (that seat holds its answer until
                # this one is answered: the turn cannot have moved on to seat 0 meanwhile)
                steal = await s.request(g.DdAskOut(token=frame.dd_hint_out.token, is_skip=True))
                turn_codes.append(steal.ret.code)
                stolen.set()
            if kind != "prompt":
                continue
            if evil:
                empty = await s.request(client_pb2.ClientFrame())          # no payload
                codes.append(empty.ret.code)
                wrong = await s.request(g.MahjongAction(kind="discard", tiles=["5m"]))
                codes.append(wrong.ret.code)                                # not this game
                if used_tokens:                                             # replayed token
                    replay = await s.request(g.DdAskOut(token=used_tokens[-1], is_skip=True))
                    codes.append(replay.ret.code)
            action = choose("dadun", frame.prompt)
            if not evil and action.ref:   # a play or a pass: not before the steal
                await stolen.wait()
            if action.ref:
                used_tokens.append(action.ref)
            await s.request(action_frame("dadun", action.to_dict()))

    evil_task = asyncio.create_task(play(sessions[0], True))
    others = [asyncio.create_task(play(s, False)) for s in sessions[1:]]
    # a play before the play phase, with a made-up token
    early = await sessions[1].request(g.DdAskOut(token="t0.0", cards=["3s"]))
    assert early.ret.code in (common_pb2.DD_NOT_YOUR_TURN, common_pb2.DD_STALE_TOKEN,
                              common_pb2.DD_ILLEGAL_PLAY)
    await asyncio.wait_for(done.wait(), 120)
    for t in [evil_task, *others]:
        t.cancel()
    assert turn_codes == [common_pb2.DD_NOT_YOUR_TURN]
    assert common_pb2.ERR_BAD_FRAME in codes
    assert common_pb2.DD_STALE_TOKEN in codes
    assert all(c != 0 for c in codes)
    history = await sessions[1].request(lm.AskHistoryScore(room_id=room_id))
    for _ in range(50):  # records writes the settlement asynchronously
        if history.WhichOneof("payload") == "history_score" and history.history_score.items:
            break
        await asyncio.sleep(0.2)
        history = await sessions[1].request(lm.AskHistoryScore(room_id=room_id))
    assert history.WhichOneof("payload") == "history_score"
    scores = {i.user_id: list(i.scores) for i in history.history_score.items}
    assert set(scores) == set(uids) and sum(v[0] for v in scores.values()) == 0
    replay = await sessions[1].request(lm.AskReplay(room_id=room_id, hand_no=1))
    cells = replay.replay.cells
    assert len(cells) > 20 and replay.replay.game == "dadun"
    owners = {json.loads(c.json).get("to") for c in cells}
    assert owners <= {None, 1}, "a replay holds public events and the asker's own only"
    assert 1 in owners
    for s in sessions:
        await s.close()


async def test_dismiss_vote_through_the_lobby(stack: Stack) -> None:
    uids = [801, 802, 803, 804]
    sessions, room_id = await seat_four(stack, common_pb2.CHANGSHA, uids, {}, hands=4)
    assert (await sessions[0].request(lm.AskDismiss())).ret.code == 0
    query = await next_push(sessions[2], "query_dismiss")
    assert query.apply_user_id == 801
    assert (await sessions[1].request(lm.ReportDismiss(agree=True))).ret.code == 0
    assert (await sessions[2].request(lm.ReportDismiss(agree=True))).ret.code == 0
    result = await next_push(sessions[3], "notice_dismiss")
    assert result.dismissed and result.reason == lm.NoticeDismiss.PLAYER_VOTE
    assert result.room_id == room_id
    after = await sessions[3].request(lm.AskReady(is_ready=True))
    assert after.ret.code == common_pb2.ERR_NOT_IN_ROOM
    listing = await sessions[3].request(lm.AskRoomList())
    assert room_id not in [r.room_id for r in listing.room_list.items]
    for s in sessions:
        await s.close()

