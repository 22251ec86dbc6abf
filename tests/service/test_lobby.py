"""The lobby as a real gRPC service on a real nats-server, with the in-test Table and
Records servicers of tests/support/lobbyworld.py on loopback.
"""

from __future__ import annotations

import asyncio
import urllib.request
from pathlib import Path
from typing import Any

import nats
import pytest

from paiju.contracts.directory import SeatEntry
from paiju.frames import client_frame, server_frame
from paiju.v1 import (
    client_pb2,
    lobby_msgs_pb2,
)
from services.lobby import tokens
from tests.support.lobbyworld import (
    SECRET,
    E,
    World,
    code_of,
    seated_client,
)
from tests.support.procs import make_service

# -- login ----------------------------------------------------------------------------------

async def test_login_replies_own_profile_with_ip_and_session(world: World) -> None:
    c = await world.client(await world.lobby())
    ok = (await c.login(1001, nickname="alice")).login_ok
    assert ok.player.user_id == 1001 and ok.player.nickname == "alice"
    assert ok.player.coins == 11_001 and ok.player.ip == "127.0.0.1"
    assert ok.player.seat == -1 and not ok.HasField("room")
    assert ok.session_id and ok.heartbeat_seconds == 15
    assert world.records.calls[0][0] == "EnsurePlayer"
    beat = await c.request(lobby_msgs_pb2.HeartBeat(client_time_ms=77))
    assert beat.heartbeat.client_time_ms == 77


async def test_a_heartbeat_is_answered_while_a_command_waits(world: World) -> None:
    """A command that waits (here records, slow to answer a history) holds the session's
    next commands back, in order, but not its heartbeats: a client gives up a socket whose
    beat goes unanswered for heartbeat_seconds, and this one is healthy."""
    c = await world.client(await world.lobby())
    await c.login(1001)
    world.records.history_held = asyncio.Event()
    asked = await c.send(lobby_msgs_pb2.AskHistoryScore(room_id=300001))
    listed = await c.send(lobby_msgs_pb2.AskRoomList())
    beat = await c.request(lobby_msgs_pb2.HeartBeat(client_time_ms=5))
    assert beat.heartbeat.client_time_ms == 5
    assert not [f for f in c.seen if f.reply_to in (asked, listed)], "served out of turn"
    world.records.history_held.set()
    history = await c.until(lambda f: f.reply_to in (asked, listed))
    assert history.reply_to == asked and history.HasField("history_score")
    rooms = await c.until(lambda f: f.reply_to == listed)
    assert rooms.HasField("room_list")


async def test_a_login_the_broker_does_not_answer_is_a_moment_not_an_internal_error(
        world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """A NATS request that times out while a login reads the directory (a node lost, an
    election, a partition: tests/cluster/test_partition.py has the real one) is answered
    ERR_UNAVAILABLE, which clients send again, and the next try logs in."""
    address = await world.lobby()
    app = world.lobbies[-1].app
    real = app.directory.seat
    calls = 0

    async def slow_broker(user_id: int) -> Any:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise nats.errors.TimeoutError
        return await real(user_id)

    monkeypatch.setattr(app.directory, "seat", slow_broker)
    c = await world.client(address)
    refused = await c.request(lobby_msgs_pb2.Login(token=tokens.mint(1011, SECRET, 600)))
    assert refused.WhichOneof("payload") == "ret", refused
    assert refused.ret.code == E.ERR_UNAVAILABLE, refused
    assert (await c.login(1011)).login_ok.player.user_id == 1011


@pytest.mark.parametrize("token,code", [
    ("1001.9999999999.deadbeef", E.ERR_BAD_TOKEN),
    ("garbage", E.ERR_BAD_TOKEN),
    (tokens.mint(1001, "other-secret", 600), E.ERR_BAD_TOKEN),
    (tokens.mint(1001, SECRET, -5), E.ERR_TOKEN_EXPIRED),
])
async def test_bad_or_expired_token_gets_its_code_then_the_stream_closes(
        world: World, token: str, code: int) -> None:
    c = await world.client(await world.lobby())
    reply = await c.request(lobby_msgs_pb2.Login(token=token))
    assert code_of(reply) == code
    assert await c.closed()
    assert world.records.calls == []


async def test_legacy_md5_login(world: World) -> None:
    address = await world.lobby(legacy_md5=True)
    good = await world.client(address)
    reply = await good.request(lobby_msgs_pb2.Login(
        token="2002", secret_string=tokens.legacy_secret_string("2002", SECRET)))
    assert reply.login_ok.player.user_id == 2002
    bad = await world.client(address)
    reply = await bad.request(lobby_msgs_pb2.Login(
        token="2002", secret_string=tokens.legacy_secret_string("2002", "nope")))
    assert code_of(reply) == E.ERR_BAD_TOKEN
    assert await bad.closed()


async def test_records_down_means_unavailable_and_the_session_may_retry(world: World) -> None:
    c = await world.client(await world.lobby())
    world.records.down = True
    reply = await c.request(lobby_msgs_pb2.Login(token=tokens.mint(5, SECRET, 60)))
    assert code_of(reply) == E.ERR_UNAVAILABLE
    world.records.down = False
    assert (await c.login(5)).login_ok.player.user_id == 5


async def test_commands_before_login_are_refused_and_the_session_goes_on(world: World) -> None:
    c = await world.client(await world.lobby())
    for payload in (lobby_msgs_pb2.HeartBeat(), lobby_msgs_pb2.AskRoomList(),
                    lobby_msgs_pb2.AskReady(is_ready=True)):
        reply = await c.request(payload)
        assert code_of(reply) == E.ERR_NOT_LOGGED_IN
        assert reply.ret.event_id == client_frame(payload).event_id
    await c.login(6)
    assert world.table.commands == []


async def test_malformed_frames_get_bad_frame_and_the_session_goes_on(world: World) -> None:
    c = await world.client(await world.lobby())
    await c.login(7)
    await c.send_raw(client_pb2.ClientFrame(seq=50).SerializeToString())      # no payload
    assert code_of(await c.until(lambda f: f.reply_to == 50)) == E.ERR_BAD_FRAME
    unknown = client_pb2.ClientFrame(seq=51).SerializeToString() + bytes([0xAA, 0x06, 0x00])
    await c.send_raw(unknown)                                                  # field 101
    assert code_of(await c.until(lambda f: f.reply_to == 51)) == E.ERR_BAD_FRAME
    await c.send_raw(b"\xff\xff\xff")                                          # not protobuf
    assert code_of(await c.recv()) == E.ERR_BAD_FRAME
    c.seq = 60
    assert (await c.request(lobby_msgs_pb2.HeartBeat())).HasField("heartbeat")


# -- one live session per user ----------------------------------------------------------------

async def test_second_login_kicks_the_first_on_the_same_lobby(world: World) -> None:
    address = await world.lobby()
    first, second = await world.client(address), await world.client(address)
    await first.login(8)
    await second.login(8)
    kick = await first.until(lambda f: f.HasField("kick_out"))
    assert kick.kick_out.user_id == 8
    assert await first.closed()
    assert (await second.request(lobby_msgs_pb2.HeartBeat())).HasField("heartbeat")


async def test_second_login_kicks_the_first_across_lobbies(world: World) -> None:
    one, two = await world.lobby(), await world.lobby()
    first, second, other = (await world.client(one), await world.client(two),
                            await world.client(one))
    await first.login(9)
    await other.login(10)
    await second.login(9)
    assert (await first.until(lambda f: f.HasField("kick_out"))).kick_out.user_id == 9
    assert await first.closed()
    assert (await second.request(lobby_msgs_pb2.HeartBeat())).HasField("heartbeat")
    assert (await other.request(lobby_msgs_pb2.HeartBeat())).HasField("heartbeat")


async def test_kicked_session_does_not_send_offline(world: World) -> None:
    address = await world.lobby()
    first, room = await seated_client(world, address, 11)
    second = await world.client(address)
    ok = await second.login(11)
    assert ok.login_ok.room.room_id == room.room_id
    assert await first.closed()
    await world.table.wait_for("online", 11)
    await asyncio.sleep(0.3)
    assert world.table.of_kind("offline", 11) == []


# -- offline, reconnect -------------------------------------------------------------------------

async def test_silent_session_is_closed_and_the_table_told_offline(world: World) -> None:
    c, room = await seated_client(world, await world.lobby(offline_after_seconds=1), 12)
    offline = await world.table.wait_for("offline", 12)
    assert offline.room_id == room.room_id
    assert await c.closed()


async def test_stream_end_sends_offline_for_a_seated_user_only(world: World) -> None:
    address = await world.lobby()
    seated, room = await seated_client(world, address, 13)
    idle = await world.client(address)
    await idle.login(14)
    await seated.close()
    await idle.close()
    assert (await world.table.wait_for("offline", 13)).room_id == room.room_id
    await asyncio.sleep(0.3)
    assert world.table.of_kind("offline", 14) == []


async def test_reconnect_gets_room_snapshot_and_goes_online(world: World) -> None:
    address = await world.lobby()
    room = await world.table.add_room(seated=(15, 16))
    await world.kv["seats"].put("15", SeatEntry(
        room_id=room.room_id, owner="table-a", address=world.table.address, seat=0).encode())
    c = await world.client(address)
    ok = await c.login(15)
    assert ok.login_ok.room.room_id == room.room_id and ok.login_ok.player.seat == 0
    assert not any(p.ip for p in ok.login_ok.room.players)
    snap = await c.until(lambda f: f.HasField("room_joined"))
    assert snap.room_joined.room.room_id == room.room_id
    kinds = [cmd.kind for cmd in world.table.commands if cmd.user_id == 15]
    assert kinds[:1] == ["snapshot"]
    await world.table.wait_for("online", 15)
    assert world.table.of_kind("snapshot", 15)[0].profile.nickname == "player15"
    await c.request(lobby_msgs_pb2.AskReady(is_ready=True))
    assert world.table.of_kind("ask_ready", 15)[0].room_id == room.room_id


# -- events ----------------------------------------------------------------------------------

async def test_room_and_private_events_reach_the_right_sessions_only(world: World) -> None:
    address = await world.lobby()
    a, room = await seated_client(world, address, 21)
    b, _ = await seated_client(world, address, 22, room)
    outsider, other_room = await seated_client(world, address, 23)
    event = server_frame(lobby_msgs_pb2.InEntrust(seat=1, count=2), event_uid=f"{room.room_id}:1:5")
    private = server_frame(lobby_msgs_pb2.DistanceAlert(alert="only for 22"))
    await world.emit(room, [event], [(22, private)])
    got_a = await a.until(lambda f: f.HasField("in_entrust"))
    assert got_a.event_uid == f"{room.room_id}:1:5" and got_a.seq > 1
    await b.until(lambda f: f.HasField("in_entrust"))
    assert (await b.until(lambda f: f.HasField("distance_alert"))).distance_alert.alert \
        == "only for 22"
    marker = server_frame(lobby_msgs_pb2.HeartBeat(client_time_ms=1))
    await world.emit(room, [], [(21, marker)])
    await world.emit(other_room, [], [(23, marker)])
    for client in (a, outsider):
        await client.until(lambda f: f.HasField("heartbeat"))
        kinds = {f.WhichOneof("payload") for f in client.seen}
        assert "distance_alert" not in kinds
    assert "in_entrust" not in {f.WhichOneof("payload") for f in outsider.seen}


async def test_dismissal_notice_clears_the_room(world: World) -> None:
    c, room = await seated_client(world, await world.lobby(), 24)
    notice = lobby_msgs_pb2.NoticeDismiss(dismissed=True, room_id=room.room_id)
    await world.emit(room, [server_frame(notice)], closed=True)
    await c.until(lambda f: f.HasField("notice_dismiss"))
    reply = await c.request(lobby_msgs_pb2.AskReady(is_ready=True))
    assert code_of(reply) == E.ERR_NOT_IN_ROOM


# -- chat ------------------------------------------------------------------------------------

async def test_chat_is_relayed_to_the_room_with_author_capped_and_rate_limited(
        world: World) -> None:
    address = await world.lobby(chat_max_len=10, chat_per_minute=2)
    a, room = await seated_client(world, address, 31)
    b, _ = await seated_client(world, address, 32, room)
    too_long = await a.request(lobby_msgs_pb2.Chat(content="x" * 11))
    assert code_of(too_long) == E.ERR_TOO_LONG
    for text in ("hi", "again"):
        assert code_of(await a.request(lobby_msgs_pb2.Chat(type=1, content=text))) == E.OK
        got = await b.until(lambda f: f.HasField("chat"))
        assert (got.chat.content, got.chat.author_id, got.chat.type) == (text, 31, 1)
    assert code_of(await a.request(lobby_msgs_pb2.Chat(content="third"))) == E.ERR_RATE_LIMITED
    lone = await world.client(address)
    await lone.login(33)
    assert code_of(await lone.request(lobby_msgs_pb2.Chat(content="x"))) == E.ERR_NOT_IN_ROOM


async def test_forged_author_is_replaced(world: World) -> None:
    a, _ = await seated_client(world, await world.lobby(), 34)
    await a.request(lobby_msgs_pb2.Chat(content="me", author_id=999))
    assert (await a.until(lambda f: f.HasField("chat"))).chat.author_id == 34


# -- history and replay -------------------------------------------------------------------------

async def test_history_and_replay_come_from_records_for_the_current_room(world: World) -> None:
    c, room = await seated_client(world, await world.lobby(), 41)
    history = await c.request(lobby_msgs_pb2.AskHistoryScore())
    assert history.history_score.room_id == room.room_id
    assert list(history.history_score.items[0].scores) == [3, -1]
    asked = world.records.calls[-1]
    # the asker goes with it: records answers only for a room he sat in
    assert asked[0] == "GetHistoryScores" and asked[1].user_id == 41
    replay = await c.request(lobby_msgs_pb2.AskReplay(hand_no=2))
    assert (replay.replay.room_id, replay.replay.hand_no) == (room.room_id, 2)
    assert replay.replay.cells[0].kind == "u41"   # filtered for the requester
    last = world.records.calls[-1]
    assert last[0] == "GetReplay" and last[1].user_id == 41


async def test_history_without_room_is_refused(world: World) -> None:
    c = await world.client(await world.lobby())
    await c.login(42)
    assert code_of(await c.request(lobby_msgs_pb2.AskHistoryScore())) == E.ERR_NOT_IN_ROOM
    other = await c.request(lobby_msgs_pb2.AskHistoryScore(room_id=123456))
    assert other.history_score.room_id == 123456
    assert world.records.calls[-1][1].user_id == 42


async def test_history_of_a_room_records_does_not_show_the_asker_is_empty(
        world: World) -> None:
    """Records answers NOT_FOUND for a room the asker did not sit in: he gets an empty
    history, the same as for a room without a settled hand, and nothing else."""
    world.records.not_found = True
    c = await world.client(await world.lobby())
    await c.login(43)
    other = await c.request(lobby_msgs_pb2.AskHistoryScore(room_id=123457))
    assert other.history_score.room_id == 123457 and not other.history_score.items



# -- metrics and the real records service ------------------------------------------------------

async def test_metrics_count_sessions_logins_frames_and_kicks(world: World) -> None:
    address = await world.lobby()
    first, second = await world.client(address), await world.client(address)
    await first.login(71)
    await second.login(71)
    assert await first.closed()
    odd = await world.client(address)  # a frame with no payload and an id of its own
    await odd.send_raw(client_pb2.ClientFrame(seq=1, event_id=987654).SerializeToString())
    await odd.until(lambda f: f.HasField("ret"))
    bad = await world.client(address)
    await bad.request(lobby_msgs_pb2.Login(token="x"))
    await asyncio.sleep(0.1)
    port = world.lobbies[-1].metrics_port
    text = await asyncio.to_thread(
        lambda: urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read())
    lines = text.decode().splitlines()
    for needle in ('paiju_lobby_logins_total{result="ok"}',
                   'paiju_lobby_logins_total{result="bad_token"}',
                   'paiju_lobby_kicks_total{origin="local"}',
                   'paiju_lobby_frames_in_total{event_id="1002"}',
                   'paiju_lobby_frames_out_total{event_id="1003"}',
                   "paiju_lobby_sessions "):
        assert any(line.startswith(needle) and float(line.split()[-1]) >= 1 for line in lines), \
            needle
    assert not [line for line in lines if "987654" in line]  # no series from client input


def _records_implemented() -> bool:
    from services.records import server as records_server

    return "EnsurePlayer" in vars(records_server.RecordsService)


@pytest.mark.skipif(not _records_implemented(),
                    reason="services/records does not implement EnsurePlayer yet "
                           "(login against the real records process waits for it)")
async def test_login_against_the_real_records_process(world: World, tmp_path: Path) -> None:
    proc = make_service("records", world.nats.url, tmp_path)
    await asyncio.to_thread(proc.start)
    try:
        world.backend_port = proc.port
        c = await world.client(await world.lobby())
        ok = (await c.login(81, nickname="real")).login_ok
        assert ok.player.user_id == 81 and ok.player.nickname == "real"
        room = await world.table.add_room()
        await c.request(lobby_msgs_pb2.JoinRoom(room_id=room.room_id))
        history = await c.request(lobby_msgs_pb2.AskHistoryScore())
        assert history.history_score.room_id == room.room_id
        assert list(history.history_score.items) == []          # no hand settled yet
        replay = await c.request(lobby_msgs_pb2.AskReplay(hand_no=1))
        assert code_of(replay) == E.ERR_NO_SUCH_ROOM
        strict = await world.lobby(dev_profiles=False)
        again = await world.client(strict)
        assert (await again.login(81)).login_ok.player.nickname == "real"
        stranger = await world.client(strict)
        refused = await stranger.request(lobby_msgs_pb2.Login(token=tokens.mint(82, SECRET, 60)))
        assert code_of(refused) == E.ERR_BAD_TOKEN
    finally:
        await asyncio.to_thread(proc.stop)


async def test_a_client_that_does_not_read_is_dropped_without_blocking_others(
        world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("services.lobby.sessions.OUTBOX_LIMIT", 4)
    address = await world.lobby()
    reader, room = await seated_client(world, address, 91)
    sleeper, _ = await seated_client(world, address, 92, room)
    big = server_frame(lobby_msgs_pb2.Chat(content="x" * 200_000))
    for _ in range(60):   # 12 MB: beyond what the sleeper's transport absorbs
        await world.emit(room, [big])
        await reader.until(lambda f: f.HasField("chat"))
    hub = world.lobbies[-1].app.hub
    for _ in range(100):
        if 92 not in hub.by_user:
            break
        await asyncio.sleep(0.05)
    assert 92 not in hub.by_user
    assert 91 in hub.by_user
    assert (await reader.request(lobby_msgs_pb2.HeartBeat())).HasField("heartbeat")
    assert (await world.table.wait_for("offline", 92)).room_id == room.room_id


# -- joining: nothing of a room before the table seats you, everything after -----------------

async def test_a_refused_join_shows_nothing_of_the_room_and_an_accepted_one_everything(
        world: World) -> None:
    address = await world.lobby()
    room = await world.table.add_room(password="8888")
    member = await world.client(address)
    await member.login(41)
    joined = await member.request(lobby_msgs_pb2.JoinRoom(room_id=room.room_id, password="8888"))
    assert joined.WhichOneof("payload") == "room_joined", joined
    gate = asyncio.Event()
    answer_join = world.table._join

    async def gated_join(cmd: Any, the_room: Any, reply: Any) -> Any:
        answer = await answer_join(cmd, the_room, reply)
        await gate.wait()  # the table has decided; its answer is late, the room talks
        return answer

    world.table._join = gated_join  # type: ignore[method-assign]
    for uid, password, seated in ((42, "1234", False), (43, "8888", True)):
        gate.clear()
        other = await world.client(address)
        await other.login(uid)
        asking = asyncio.create_task(other.request(
            lobby_msgs_pb2.JoinRoom(room_id=room.room_id, password=password)))
        await world.table.wait_for("join_room", uid)  # the lobby has subscribed the room
        before = room.index          # an accepted join is at the next position, a refusal here
        while room.index == before and seated:
            await asyncio.sleep(0.01)
        # the room talks after the join's position, while the table's answer is on its way
        chat = server_frame(lobby_msgs_pb2.Chat(content=f"secret {uid}", author_id=41))
        await world.emit(room, [chat])
        # the member got it, so the lobby has handled it for the joiner too (same callback)
        await member.until(lambda f, uid=uid: f.HasField("chat")
                           and f.chat.content == f"secret {uid}")
        gate.set()
        reply = await asking
        marker = server_frame(lobby_msgs_pb2.HeartBeat(client_time_ms=7))
        await world.emit(room, [], [(uid, marker)])
        if seated:
            await other.until(lambda f: f.HasField("heartbeat"))
        else:
            assert (await other.request(lobby_msgs_pb2.HeartBeat())).HasField("heartbeat")
        chats = [f.chat.content for f in other.seen if f.HasField("chat")]
        if seated:
            assert reply.WhichOneof("payload") == "room_joined", reply
            assert chats == [f"secret {uid}"]
        else:
            assert code_of(reply) == E.ERR_BAD_PASSWORD
            assert chats == []
            assert not [f for f in other.seen if f.HasField("heartbeat") and f.reply_to == 0]
