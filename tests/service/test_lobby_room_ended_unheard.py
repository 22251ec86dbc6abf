"""A room that ends while its lobby does not hear it: its last messages (the last hand's
end, the dismissal) go while the lobby's NATS connection is away (a node cut off from its
cluster, a reconnect), so the lobby's refill after the reconnect finds the room gone (its
table answers "no such room", the directory has no entry: services/lobby/streams.py). The
seated client must be told, or it waits for ever for a room that says nothing more (a
partition run, room 11333951: the cut table's room was adopted and played to its end while
the other lobby's refills failed, and its two robots there waited until the run stopped
them 320 s later; likely the chaos report's partition-lobby room 13834371 too, whose
players got no prompt for 60 s). It is told to log in again, and its new
LoginOk has no room: "the room ended while you were away" (docs/protocol.md, "Reconnect
and snapshots").

A real lobby on a real nats-server with the in-test table of test_lobby.py, which answers
as a table does for a room it closed: ERR_NO_SUCH_ROOM."""

from __future__ import annotations

import asyncio
import contextlib

from paiju.frames import server_frame
from paiju.v1 import client_pb2, common_pb2, lobby_msgs_pb2, table_pb2
from tests.support.lobbyworld import World, seated_client


async def frames_until_end(client: object, timeout: float) -> list[client_pb2.ServerFrame]:
    """The frames the server sends until it ends the stream; AssertionError when it says
    nothing more and keeps the stream open for ``timeout`` seconds."""
    seen: list[client_pb2.ServerFrame] = []
    while True:
        try:
            frame = await client.recv(timeout)  # type: ignore[attr-defined]
        except TimeoutError:
            raise AssertionError(f"the lobby said nothing for {timeout:g} s and kept the "
                                 f"stream open (frames before: {seen})") from None
        if frame is None:
            return seen
        seen.append(frame)


async def logged_in_outside_any_room(world: World, address: str, uid: int) -> None:
    """``uid`` logs in again: LoginOk has no room, and nothing sends him round again (2 s)."""
    last = await world.client(address)
    ok = (await last.login(uid)).login_ok
    assert not ok.HasField("room"), ok
    later: list[str | None] = []
    with contextlib.suppress(TimeoutError):
        while (frame := await last.recv(2.0)) is not None:
            later.append(frame.WhichOneof("payload"))
        later.append("the stream ended")
    assert "reconnect" not in later and "the stream ended" not in later, later


async def test_a_room_that_ended_unheard_sends_its_clients_to_log_in_again(
        world: World) -> None:
    address = await world.lobby()
    host = world.lobbies[0]
    client, room = await seated_client(world, address, 4101)
    await world.emit(room)            # the room plays on: heard (the stream has a position)
    # its last record, the dismissal, goes while the lobby's NATS connection is away: kept in
    # the table's ring, never heard by the lobby
    room.index += 1
    dismissal = lobby_msgs_pb2.NoticeDismiss(
        dismissed=True, reason=lobby_msgs_pb2.NoticeDismiss.ALL_HANDS_PLAYED)
    room.ring.append(table_pb2.RoomEvents(room_id=room.room_id, index=room.index, closed=True,
                                          frames=[server_frame(dismissal)]))
    # then the room is gone, as after a room's end: its table has it no more, nor the
    # directory its entry or the seat
    del world.table.rooms[room.room_id]
    await world.kv["rooms"].delete(str(room.room_id))
    await world.kv["seats"].delete("4101")
    # the lobby's connection comes back: every room is refilled, this one is gone
    await host.app.nc.force_reconnect()
    frames = await frames_until_end(client, timeout=8.0)
    kinds = [f.WhichOneof("payload") for f in frames]
    assert "reconnect" in kinds, kinds
    # logged in again, the client learns that its room ended while it was away
    again = await world.client(address)
    ok = (await again.login(4101)).login_ok
    assert not ok.HasField("room") and ok.player.seat == -1


async def test_a_silent_room_whose_entry_goes_sends_its_clients_to_log_in_again(
        world: World) -> None:
    """No reconnect this time: the room just says nothing more (its table found no log for
    it and took it for lost, services/table/lifecycle.py), and its directory entry goes. The
    lobby refills the room once when its entry is deleted, finds it gone, and tells its
    seated client to log in again."""
    address = await world.lobby()
    streams = world.lobbies[0].app.streams
    client, room = await seated_client(world, address, 4102)
    await world.emit(room)            # heard: the stream has a position
    for _ in range(100):              # and its first refill (after subscribing) is done
        stream = streams.rooms.get(room.room_id)
        if stream is not None and stream.confirm == "done" and stream.refilling is None:
            break
        await asyncio.sleep(0.05)
    else:
        raise AssertionError("the room's stream never settled")
    del world.table.rooms[room.room_id]
    await world.kv["seats"].delete("4102")
    await world.kv["rooms"].delete(str(room.room_id))
    frames = await frames_until_end(client, timeout=8.0)
    kinds = [f.WhichOneof("payload") for f in frames]
    assert "reconnect" in kinds, kinds


async def test_a_room_that_closed_while_its_player_reconnected_sends_it_to_log_in_again(
        world: World) -> None:
    """The room closes at its table while its player reconnects, before its entries are
    deleted: LoginOk still names the room, and the snapshot finds it gone. Nothing else would
    tell the client (it would wait for a room that says nothing more): it is told to log in
    again, and that LoginOk has no room. The seat's entry, never deleted here, does not
    send it round again."""
    address = await world.lobby()
    _, room = await seated_client(world, address, 4103)
    del world.table.rooms[room.room_id]          # closed; its directory entries still there
    back = await world.client(address)
    ok = (await back.login(4103)).login_ok
    assert ok.room.room_id == room.room_id
    await world.kv["rooms"].delete(str(room.room_id))   # the room's entry goes, not the seat's
    frames = await frames_until_end(back, timeout=20.0)
    kinds = [f.WhichOneof("payload") for f in frames]
    assert "reconnect" in kinds, kinds
    assert await world.kv["seats"].get("4103")
    await logged_in_outside_any_room(world, address, 4103)


async def test_a_room_still_there_without_the_player_sends_it_round_once(
        world: World) -> None:
    """The player left the room, but his seat entry still names it (its clear was lost), and
    he logs in: LoginOk names the room, and the table answers the snapshot "not in this room"
    and clears the entry (as the real table does: test_table_more.py). He is told to log in
    again: the next LoginOk has no room, and nothing sends him round again."""
    address = await world.lobby()
    _, room = await seated_client(world, address, 4104)
    answer = world.table.answer

    async def not_in_room(cmd: table_pb2.TableCommand) -> table_pb2.TableReply:
        if cmd.kind == "snapshot":
            await world.kv["seats"].delete("4104")
            return table_pb2.TableReply(request_id=cmd.request_id,
                                        code=common_pb2.ERR_NOT_IN_ROOM,
                                        message="not in this room", seat=-1)
        return await answer(cmd)
    world.table.answer = not_in_room   # type: ignore[method-assign]
    back = await world.client(address)
    ok = (await back.login(4104)).login_ok
    assert ok.room.room_id == room.room_id       # the directory names it, as the seat does
    kinds = [f.WhichOneof("payload") for f in await frames_until_end(back, timeout=10.0)]
    assert "reconnect" in kinds, kinds
    await logged_in_outside_any_room(world, address, 4104)
