"""Lobby rooms: the room list and its changes, creating a room on the least-loaded table,
joining, quick start, commands forwarded to the owning table, and a table that breaks."""

from __future__ import annotations

import asyncio
import json

import grpc
import pytest

from clients.robot.robot import run_tables
from paiju.frames import server_frame
from paiju.v1 import common_pb2, lobby_msgs_pb2, table_pb2_grpc
from services.lobby import directory
from tests.support import lobbykit
from tests.support.lobbyworld import (
    SECRET,
    E,
    FakeTable,
    World,
    code_of,
    seated_client,
    tables_seen,
)

XZ = common_pb2.XUEZHAN


async def test_room_list_hides_passwords_and_filters_by_game(world: World) -> None:
    table = world.table
    vip = await table.add_room(password="hunter2")
    plain = await table.add_room(game=common_pb2.DADUN, seated=(1, 2, 3, 4))
    plain.status = E.ROOM_PLAYING
    await table.publish_room(plain)
    raw = json.loads((await world.kv["rooms"].get(str(vip.room_id))).value)
    raw["password"] = raw["room"]["password"] = "hunter2"   # a careless writer
    await world.kv["rooms"].put(str(vip.room_id), json.dumps(raw).encode())
    c = await world.client(await world.lobby())
    await wait_cached(world, vip.room_id, plain.room_id)  # written before the lobby started
    await c.login(51)
    listed = (await c.request(lobby_msgs_pb2.AskRoomList())).room_list
    by_id = {r.room_id: r for r in listed.items}
    assert set(by_id) == {vip.room_id, plain.room_id}
    assert by_id[vip.room_id].has_password and listed.started_room_num == 1
    assert all(b"hunter2" not in f.SerializeToString() for f in c.seen)
    assert all(not p.ip for r in listed.items for p in r.players)
    dadun = (await c.request(lobby_msgs_pb2.AskRoomList(game=common_pb2.DADUN))).room_list
    assert [r.room_id for r in dadun.items] == [plain.room_id]


async def test_room_changes_reach_lobby_sessions_not_in_a_room(world: World) -> None:
    address = await world.lobby()
    seated, room = await seated_client(world, address, 52)
    idle = await world.client(address)
    await idle.login(53)
    room.seats[1] = 60                 # the room's entry changes (the one channel)
    await world.table.publish_room(room)
    got = await idle.until(lambda f: f.HasField("room_change")
                           and f.room_change.room.room_id == room.room_id
                           and len(f.room_change.room.players) == 2)
    assert got.room_change.reason == lobby_msgs_pb2.RoomChange.UPDATED
    assert got.room_change.started_room_num == 0       # this lobby's count
    assert not any(p.ip for p in got.room_change.room.players)
    marker = server_frame(lobby_msgs_pb2.HeartBeat(client_time_ms=5))
    await world.emit(room, [], [(52, marker)])
    await seated.until(lambda f: f.HasField("heartbeat"))
    assert not any(f.HasField("room_change") for f in seated.seen)


async def test_create_room_goes_to_the_least_loaded_table_and_seats_the_creator(
        world: World) -> None:
    await world.table.register(rooms=5)
    idle = await world.add_table("table-b", rooms=1)
    c = await world.client(await world.lobby())
    await c.login(54, lat=30.5, lng=104.1, nickname="bob")
    reply = await c.request(lobby_msgs_pb2.CreateRoom(game=XZ, base_score=2, total_hands=8,
                                                      password="pw"))
    assert reply.WhichOneof("payload") == "room_joined"
    assert world.table.created == [] and len(idle.created) == 1
    assert idle.created[0].creator_id == 54 and idle.created[0].password == "pw"
    join = idle.of_kind("join_room", 54)[0]
    assert join.room_id == reply.room_joined.room.room_id
    assert join.frame.join_room.password == "pw"
    p = join.profile
    assert (p.nickname, p.coins, p.ip, p.lat, p.lng) == ("bob", 10_054, "127.0.0.1", 30.5, 104.1)
    again = await c.request(lobby_msgs_pb2.CreateRoom(game=XZ))
    assert code_of(again) == E.ERR_ALREADY_IN_ROOM


async def test_create_room_errors(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(directory, "NO_TABLE_WAIT_SECONDS", 0.5)   # no table appears
    c = await world.client(await world.lobby())
    await c.login(55)
    assert code_of(await c.request(lobby_msgs_pb2.CreateRoom())) == E.ERR_BAD_OPTIONS
    await world.kv["tables"].delete("table-a")
    await tables_seen(world.lobbies[-1].app)                  # the lobby heard of it
    assert code_of(await c.request(lobby_msgs_pb2.CreateRoom(game=XZ))) == E.ERR_NO_TABLE


async def test_join_errors_unknown_room_and_wrong_password(world: World) -> None:
    vip = await world.table.add_room(password="pw")
    c = await world.client(await world.lobby())
    await c.login(56)
    missing = await c.request(lobby_msgs_pb2.JoinRoom(room_id=999999))
    assert code_of(missing) == E.ERR_NO_SUCH_ROOM
    wrong = await c.request(lobby_msgs_pb2.JoinRoom(room_id=vip.room_id, password="x"))
    assert code_of(wrong) == E.ERR_BAD_PASSWORD
    ok = await c.request(lobby_msgs_pb2.JoinRoom(room_id=vip.room_id, password="pw"))
    assert ok.room_joined.room.room_id == vip.room_id


async def wait_cached(world: World, *room_ids: int) -> None:
    """The latest lobby's room cache holds these rooms (its bucket watch is asynchronous)."""
    await lobbykit.wait_cached(world.lobbies[-1].app, *room_ids)


async def test_quick_start_joins_a_waiting_public_room_or_creates_one(world: World) -> None:
    address = await world.lobby()
    vip = await world.table.add_room(password="pw", seated=(1, 2, 3))
    fuller = await world.table.add_room(seated=(4, 5))
    emptier = await world.table.add_room(seated=(6,))
    await world.table.add_room(game=common_pb2.DADUN, seated=(7, 8, 9))
    for room in (vip, fuller, emptier):
        await wait_cached(world, room.room_id)
    c = await world.client(address)
    await c.login(57)
    joined = await c.request(lobby_msgs_pb2.JoinRoom(game=XZ))
    assert joined.room_joined.room.room_id == fuller.room_id
    other = await world.client(address)
    await other.login(58)
    fresh = await other.request(lobby_msgs_pb2.JoinRoom(game=common_pb2.CHANGSHA))
    assert fresh.WhichOneof("payload") == "room_joined"
    created = world.table.created[-1]
    assert created.game == common_pb2.CHANGSHA and created.creator_id == 58
    assert code_of(await other.request(lobby_msgs_pb2.JoinRoom())) == E.ERR_ALREADY_IN_ROOM


async def test_quick_start_tries_again_when_the_room_filled_meanwhile(world: World) -> None:
    address = await world.lobby()
    stale = await world.table.add_room(seated=(1, 2, 3))
    await wait_cached(world, stale.room_id)
    stale.seats[3] = 99                     # filled at the table, not yet in the directory
    c = await world.client(address)
    await c.login(59)
    joined = await c.request(lobby_msgs_pb2.JoinRoom(game=XZ))
    assert joined.WhichOneof("payload") == "room_joined"
    assert joined.room_joined.room.room_id != stale.room_id
    tried = [cmd.room_id for cmd in world.table.of_kind("join_room", 59)]
    assert tried == [stale.room_id, joined.room_joined.room.room_id]


async def test_seated_commands_are_forwarded_unchanged_and_answered(world: World) -> None:
    address = await world.lobby()
    c = await world.client(address)
    await c.login(60)
    refused = await c.request(lobby_msgs_pb2.AskReady(is_ready=True))
    assert code_of(refused) == E.ERR_NOT_IN_ROOM
    c, room = await seated_client(world, address, 61)
    seq = await c.send(lobby_msgs_pb2.AskReady(is_ready=True))
    ok = await c.until(lambda f: f.reply_to == seq)
    assert code_of(ok) == E.OK and ok.ret.event_id == 1016
    forwarded = world.table.of_kind("ask_ready", 61)[0]
    assert forwarded.room_id == room.room_id and forwarded.frame.seq == seq
    assert forwarded.frame.ask_ready.is_ready
    refresh = await c.request(lobby_msgs_pb2.RefreshRoom())
    assert refresh.room_joined.room.room_id == room.room_id
    left = await c.request(lobby_msgs_pb2.AskExit())
    assert code_of(left) == E.OK
    assert code_of(await c.request(lobby_msgs_pb2.AskReady())) == E.ERR_NOT_IN_ROOM


async def test_a_command_lost_with_its_table_is_sent_again_once_the_table_is_back(
        world: World) -> None:
    """The table dies with a command in flight: the lobby neither drops it nor answers an
    error while the directory still lists the room; it sends it again once the table takes
    commands again (forwarding.py)."""
    b = await world.add_table("table-b")
    port = int(b.address.rsplit(":", 1)[1])
    room = await b.add_room()
    c = await world.client(await world.lobby())
    await c.login(62)
    await c.request(lobby_msgs_pb2.JoinRoom(room_id=room.room_id))
    b.hold = True
    seq = await c.send(lobby_msgs_pb2.AskReady(is_ready=True))
    await b.wait_for("ask_ready", 62)
    await b.server.stop(0)  # type: ignore[attr-defined]
    await b.deaf()
    await asyncio.sleep(0.5)   # the command waits for its answer; tries meanwhile fail fast
    server = grpc.aio.server()
    table_pb2_grpc.add_TableServicer_to_server(b, server)
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    b.server, b.hold = server, False  # type: ignore[attr-defined]
    await b.listen()
    reply = await c.until(lambda f: f.reply_to == seq, timeout=15)
    assert code_of(reply) == E.OK
    assert len(b.of_kind("ask_ready", 62)) == 2


# -- robot tables (clients/robot run_tables): the three joiners wait for the creator's room --

class SlowTable(FakeTable):
    """A table that takes a CreateRoom and never answers it."""

    async def CreateRoom(self, req, context):  # type: ignore[no-untyped-def]  # noqa: N802
        self.created.append(req)
        self.got.set()
        await asyncio.Event().wait()


async def test_robot_tables_never_send_joiners_elsewhere_when_the_creator_has_no_room(
        world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(directory, "NO_TABLE_WAIT_SECONDS", 0.5)
    address = await world.lobby()
    await world.table.register(rooms=5)
    slow = SlowTable("table-slow", world.kv)
    server = grpc.aio.server()
    table_pb2_grpc.add_TableServicer_to_server(slow, server)
    slow.address = f"127.0.0.1:{server.add_insecure_port('127.0.0.1:0')}"
    await server.start()
    try:
        await slow.register(rooms=0)                       # the least loaded: it gets the room
        await tables_seen(world.lobbies[-1].app, "table-a", "table-slow")
        stats = await asyncio.wait_for(run_tables(address, "xuezhan", 1, SECRET, hands=1,
                                                  first_uid=70_000, room_wait=0.5), 30)
        assert len(slow.created) == 1 and slow.created[0].creator_id == 70_000
        assert sorted(s.user_id for s in stats if s.user_id) == [70_001, 70_002, 70_003]
        assert all(s.errors for s in stats)
        assert all("had no room after 0.5 s" in s.errors[0] for s in stats if s.user_id)
        # nobody quick-started or joined another room
        assert world.table.created == [] and world.table.commands == [] and slow.commands == []

        # a creator refused outright: its table is not played either, at once
        await world.kv["tables"].delete("table-a")
        await world.kv["tables"].delete("table-slow")
        await tables_seen(world.lobbies[-1].app)
        stats = await asyncio.wait_for(run_tables(address, "xuezhan", 1, SECRET, hands=1,
                                                  first_uid=70_010), 30)
        assert len(stats) == 4 and all(s.errors for s in stats)
        joiners = [s.errors[0] for s in stats if s.user_id]
        assert len(joiners) == 3
        assert all("ended without a room" in e and str(E.ERR_NO_TABLE) in e for e in joiners)
        assert world.table.commands == [] and slow.commands == []
    finally:
        await server.stop(0)


async def test_a_reopened_rooms_watch_drops_a_room_whose_marker_was_swept(
        world: World) -> None:
    """A room that closed while the lobby's watch was not running, and whose delete marker
    the tables have swept since (services/table/markers.py), leaves no trace in the bucket:
    the reopened watch's first values do not hold it, so the lobby drops it."""
    address = await world.lobby()
    app = world.lobbies[-1].app
    kept = await world.table.add_room()
    gone = await world.table.add_room()
    await wait_cached(world, kept.room_id, gone.room_id)
    idle = await world.client(address)
    await idle.login(54)
    # closed and swept: no message is left for the watch to hear
    await world.nc.jetstream().purge_stream("KV_rooms", subject=f"$KV.rooms.{gone.room_id}")
    await app.rooms_watch.stop()          # the watch ends; the lobby opens it again
    await idle.until(lambda f: f.HasField("room_change")
                     and f.room_change.room.room_id == gone.room_id
                     and f.room_change.reason == lobby_msgs_pb2.RoomChange.DISMISSED)
    assert app.cache.get(gone.room_id) is None
    assert app.cache.get(kept.room_id) is not None
