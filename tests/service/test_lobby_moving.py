"""A room moving between tables (an adoption after a table died, a table's drain), seen from
the lobby: commands follow the room to its new owner, the player's room subscription stays
while the directory has the room, and a move that outlasts the bound is ERR_ROOM_MOVING
("a moment"), never an internal error (services/lobby/app.py, LobbyApp.command).

The tables are the in-test servicers of tests/support/lobbyworld.py on loopback, with a real nats-server and
real directory buckets; a table "dies" by stopping its gRPC server."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import grpc
import pytest

from paiju.contracts.directory import SeatEntry
from paiju.frames import server_frame
from paiju.v1 import lobby_msgs_pb2, table_pb2, table_pb2_grpc
from services.lobby import forwarding
from tests.service.test_lobby_room_ended_unheard import frames_until_end
from tests.support.lobbyworld import (
    E,
    FakeRoom,
    FakeTable,
    World,
    code_of,
    seated_client,
)


class MovingTable(FakeTable):
    """A table that answers ERR_ROOM_MOVING to its next ``moving`` commands (a new owner
    that has claimed a room and not rebuilt it yet); -1: to every command."""

    def __init__(self, instance: str, kv: dict[str, Any]) -> None:
        super().__init__(instance, kv)
        self.moving = 0

    async def answer(self, cmd: table_pb2.TableCommand) -> table_pb2.TableReply:
        if self.moving:
            self.moving -= 1 if self.moving > 0 else 0
            return table_pb2.TableReply(request_id=cmd.request_id, code=E.ERR_ROOM_MOVING,
                                        message=f"room {cmd.room_id} is being rebuilt", seat=-1)
        return await super().answer(cmd)


async def serve(world: World, table: FakeTable) -> FakeTable:
    """Run ``table`` on its own gRPC server and command subject, and list it in ``tables``."""
    server = grpc.aio.server()
    table_pb2_grpc.add_TableServicer_to_server(table, server)
    table.address = f"127.0.0.1:{server.add_insecure_port('127.0.0.1:0')}"
    table.nc = world.nc
    await server.start()
    table.server = server  # type: ignore[attr-defined]
    await table.listen()
    await table.register()
    world.tables.append(table)
    return table


async def adopt(new: FakeTable, room: FakeRoom, old: FakeTable | None = None) -> None:
    """``new`` takes ``room`` over: ``old`` forgets it, the directory names ``new``."""
    if old is not None:
        old.rooms.pop(room.room_id, None)
    new.rooms[room.room_id] = room
    await new.publish_room(room)


async def seated_at_a_dead_table(world: World, user_id: int, heir: FakeTable
                                 ) -> tuple[Any, Any, FakeTable, FakeRoom]:
    """A player seated in a room of a table that then dies (its gRPC server and its command
    subject gone), ``heir`` serving beside it: the client, its lobby, the dead table and
    the room. The lobby follows a move for a minute."""
    dead = await serve(world, FakeTable("table-dead", world.kv))
    await serve(world, heir)
    room = await dead.add_room()
    c, _ = await seated_client(world, await world.lobby(), user_id, room)
    app = world.lobbies[-1].app
    app.move_seconds = 60.0
    await dead.server.stop(0)  # type: ignore[attr-defined]
    await dead.deaf()
    return c, app, dead, room


async def ready_while_adopted(client: Any, heir: FakeTable, room: FakeRoom, *, after: float,
                              within: float) -> Any:
    """The player's AskReady sent now, ``heir`` adopting ``room`` ``after`` seconds later:
    the answer, which must come within ``within`` seconds."""
    async def adopted_later() -> None:
        await asyncio.sleep(after)
        await adopt(heir, room)

    mover = asyncio.create_task(adopted_later())
    reply = await asyncio.wait_for(client.request(lobby_msgs_pb2.AskReady(is_ready=True),
                                                  timeout=60), within)
    await mover
    return reply


async def room_event_reaches(world: World, client: Any, room: FakeRoom, marker: int) -> None:
    """A room event published now reaches ``client`` (its room subscription is live)."""
    event = server_frame(lobby_msgs_pb2.InEntrust(seat=0, count=marker))
    await world.emit(room, [event])
    got = await client.until(lambda f: f.HasField("in_entrust") and f.in_entrust.count == marker)
    assert got.in_entrust.count == marker


async def stream_settled(world: World, room: FakeRoom) -> None:
    """The lobby's stream of ``room`` has made its first refill (streams.py: once after its
    subscription is confirmed) and has none on its way."""
    streams = world.lobbies[-1].app.streams
    for _ in range(200):
        stream = streams.rooms.get(room.room_id)
        if stream is not None and stream.confirm == "done" and stream.refilling is None:
            return
        await asyncio.sleep(0.02)
    raise AssertionError("the room's stream never settled")


async def test_a_command_follows_the_room_through_an_adoption(world: World) -> None:
    """The old owner says "not on this table" while the directory still lists the room, the
    new owner answers ERR_ROOM_MOVING until it has rebuilt: the client sees only its OK."""
    old = await serve(world, FakeTable("table-old", world.kv))
    new = await serve(world, MovingTable("table-new", world.kv))
    room = await old.add_room()
    address = await world.lobby()
    c, _ = await seated_client(world, address, 301, room)
    await stream_settled(world, room)    # its first refill is not one of the commands counted
    old.rooms.pop(room.room_id)          # claimed elsewhere: the old owner has let it go
    new.moving = 3                       # ... and the new one is still rebuilding

    async def directory_moves_later() -> None:
        await asyncio.sleep(0.4)
        await adopt(new, room)

    mover = asyncio.create_task(directory_moves_later())
    reply = await c.request(lobby_msgs_pb2.AskReady(is_ready=True), timeout=15)
    await mover
    assert code_of(reply) == E.OK
    assert len(old.of_kind("ask_ready", 301)) >= 1   # tried there while the directory said so
    assert len(new.of_kind("ask_ready", 301)) == 4   # three "moving" answers, then served
    app = world.lobbies[-1].app
    assert app.streams.rooms.get(room.room_id)         # never unsubscribed
    await room_event_reaches(world, c, room, 7)


async def test_a_command_held_by_a_frozen_table_follows_the_room_as_soon_as_it_moves(
        world: World) -> None:
    """The owner takes the command and never answers (frozen: SIGSTOP, a stopped VM); when
    the directory names another table (its adopter), the lobby stops waiting for the frozen
    one (here its link would wait 60 s) and the adopter answers."""
    frozen = await serve(world, FakeTable("table-frozen", world.kv))
    heir = await serve(world, FakeTable("table-heir", world.kv))
    room = await frozen.add_room()
    c, _ = await seated_client(world, await world.lobby(), 303, room)
    await stream_settled(world, room)
    app = world.lobbies[-1].app
    app.move_seconds = 60.0
    app.forwarder.directory.link(frozen.address).timeout = 60.0
    frozen.hold = True

    async def adopted_later() -> None:
        while not frozen.of_kind("ask_ready", 303):
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.3)
        await adopt(heir, room, frozen)

    mover = asyncio.create_task(adopted_later())
    started = time.monotonic()
    reply = await asyncio.wait_for(c.request(lobby_msgs_pb2.AskReady(is_ready=True),
                                             timeout=30), 10)
    await mover
    assert code_of(reply) == E.OK
    assert len(heir.of_kind("ask_ready", 303)) == 1
    print(f"answered by the adopter {time.monotonic() - started:.2f} s after the command")
    assert not app.cache._leaving, "a finished command still waits for its room to move"


async def test_a_dead_table_is_left_for_the_owner_the_directory_names_next(
        world: World) -> None:
    heir = FakeTable("table-heir", world.kv)
    c, app, dead, room = await seated_at_a_dead_table(world, 302, heir)
    # a command waiting out the dead link's timeout would take a minute; a directory read
    # slowed by a loaded machine (its own 5 s timeout) must not look like one
    app.forwarder.directory.link(dead.address).timeout = 60.0

    async def adopted_later() -> None:
        await asyncio.sleep(0.8)   # lease expiry, claim, rebuild
        await adopt(heir, room)

    mover = asyncio.create_task(adopted_later())
    started = time.monotonic()
    reply = await c.request(lobby_msgs_pb2.AskReady(is_ready=True), timeout=90)
    await mover
    assert code_of(reply) == E.OK
    assert time.monotonic() - started < 30   # a dead link fails fast, not after its timeout
    assert heir.of_kind("ask_ready", 302)
    await room_event_reaches(world, c, room, 8)


async def test_a_command_for_a_dead_table_follows_the_room_when_the_watch_shows_it_moved(
        world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """The owner died with the command: between tries the lobby waits for the directory's
    watch to name another table, not only out its pause (here 20 s, which the answer
    must not wait for: the adopter claims the room 1.5 s after the death)."""
    monkeypatch.setattr(forwarding, "MOVE_FIRST", 20.0)
    heir = FakeTable("table-heir", world.kv)
    c, app, _, room = await seated_at_a_dead_table(world, 304, heir)
    reply = await ready_while_adopted(c, heir, room, after=1.5, within=10)  # lease, claim
    assert code_of(reply) == E.OK
    assert len(heir.of_kind("ask_ready", 304)) == 1
    assert not app.cache._leaving, "a finished command still waits for its room to move"


async def test_the_back_off_starts_again_at_a_new_owner_still_rebuilding_the_room(
        world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pauses between tries grew while the dead owner's lease ran out (here up to 30 s);
    the adopter first answers "being rebuilt", and is asked again after the first short
    pause, not after the next long one."""
    monkeypatch.setattr(forwarding, "MOVE_LONGEST", 30.0)
    heir = MovingTable("table-heir", world.kv)
    heir.moving = 1
    c, _, _, room = await seated_at_a_dead_table(world, 305, heir)
    # adopted after pauses of 0.1, 0.2, 0.4, 0.8, 1.6 s, in the next of 3.2 s
    reply = await ready_while_adopted(c, heir, room, after=3.5, within=6.5)
    assert code_of(reply) == E.OK
    assert heir.moving == 0   # asked twice: "being rebuilt", then answered
    assert len(heir.of_kind("ask_ready", 305)) == 2


async def test_a_move_longer_than_the_bound_is_room_moving_and_keeps_the_room(
        world: World) -> None:
    table = await serve(world, MovingTable("table-slow", world.kv))
    room = await table.add_room()
    c, _ = await seated_client(world, await world.lobby(), 303, room)
    app = world.lobbies[-1].app
    app.move_seconds = 1.0
    table.moving = -1
    started = time.monotonic()
    reply = await c.request(lobby_msgs_pb2.AskReady(is_ready=True), timeout=10)
    assert code_of(reply) == E.ERR_ROOM_MOVING
    assert "moving" in reply.ret.message and "a moment" in reply.ret.message
    assert 0.9 < time.monotonic() - started < 5
    assert len(table.of_kind("ask_ready", 303)) >= 3     # retried with a growing pause
    assert app.streams.rooms.get(room.room_id)
    await room_event_reaches(world, c, room, 9)
    table.moving = 0                                     # rebuilt: the next command goes through
    assert code_of(await c.request(lobby_msgs_pb2.AskReady(is_ready=True))) == E.OK


async def test_a_room_gone_from_the_directory_is_left_at_once(world: World) -> None:
    """Its table has it no more and its entry goes while a client sits there, silent: the
    lobby refills the room once when the entry is deleted (streams.entry_deleted), finds it
    gone, and tells the client at once to log in again; the new LoginOk has no room."""
    address = await world.lobby()
    c, room = await seated_client(world, address, 304)
    app = world.lobbies[-1].app
    world.table.rooms.pop(room.room_id)
    await world.kv["seats"].delete("304")
    await world.kv["rooms"].delete(str(room.room_id))
    started = time.monotonic()
    frames = await frames_until_end(c, timeout=5.0)
    assert "reconnect" in [f.WhichOneof("payload") for f in frames], frames
    assert time.monotonic() - started < 2
    assert room.room_id not in app.streams.rooms
    again = await world.client(address)
    ok = (await again.login(304)).login_ok
    assert not ok.HasField("room") and ok.player.seat == -1


async def test_a_finished_room_still_listed_counts_as_gone(world: World) -> None:
    c, room = await seated_client(world, await world.lobby(), 305)
    world.table.rooms.pop(room.room_id)
    room.status = E.ROOM_FINISHED
    await world.table.publish_room(room)
    reply = await c.request(lobby_msgs_pb2.AskReady(is_ready=True))
    assert code_of(reply) == E.ERR_NO_SUCH_ROOM


async def test_a_resume_into_a_room_still_moving_says_so_and_sends_the_client_back(
        world: World) -> None:
    table = await serve(world, MovingTable("table-rebuilding", world.kv))
    room = await table.add_room(seated=(306,))
    await world.kv["seats"].put("306", SeatEntry(
        room_id=room.room_id, owner=table.instance, address=table.address, seat=0).encode())
    address = await world.lobby()
    world.lobbies[-1].app.move_seconds = 0.5
    table.moving = -1
    c = await world.client(address)
    ok = await c.login(306)
    assert ok.login_ok.room.room_id == room.room_id
    failed = await c.until(lambda f: f.HasField("ret"))
    assert failed.ret.code == E.ERR_ROOM_MOVING and str(room.room_id) in failed.ret.message
    again = await c.until(lambda f: f.HasField("reconnect"))
    assert again.reconnect.reason == "room_moving" and 500 <= again.reconnect.after_ms <= 1500
    assert await c.closed()
    assert table.of_kind("offline", 306) == []   # never brought online, so never offline
