"""The lobby's test world: a real nats-server (the test's), real lobbies made by the test,
and a small in-test Table servicer (docs/services.md: CreateRoom, the command subject, the
directory buckets) and Records servicer, both on loopback. They record what the lobby sends
them. The ``world`` fixture (tests/conftest.py) opens one per test."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from typing import Any

import grpc
import nats
from google.protobuf import json_format

from games import registry
from paiju.contracts.directory import RoomEntry, SeatEntry, TableEntry
from paiju.frames import server_frame
from paiju.v1 import (
    client_pb2,
    common_pb2,
    lobby_msgs_pb2,
    records_pb2,
    records_pb2_grpc,
    table_pb2,
    table_pb2_grpc,
)
from services.common import bus
from services.common.config import Config, load_config
from services.common.natsd import EmbeddedNats
from services.lobby import tokens
from services.lobby.server import start
from tests.support.lobbykit import ConnectStream, FrameReader, lobby_config

E = common_pb2
SECRET = "test-secret"
_room_ids = itertools.count(300001)


# -- in-test Records ----------------------------------------------------------------------

class FakeRecords(records_pb2_grpc.RecordsServicer):
    def __init__(self) -> None:
        self.down = False
        self.not_found = False   # GetHistoryScores answers NOT_FOUND (not the asker's room)
        self.history_held: asyncio.Event | None = None   # GetHistoryScores waits for it
        self.calls: list[tuple[str, Any]] = []
        self.unknown: set[int] = set()   # users with no profile (GetPlayer(s): not found)
        self.has_get_players = True      # False: a records of the last release (UNIMPLEMENTED)
        self.players_held: asyncio.Event | None = None   # GetPlayers waits for it

    async def _check(self, name: str, req: Any, context: grpc.aio.ServicerContext) -> None:
        self.calls.append((name, req))
        if self.down:
            await context.abort(grpc.StatusCode.UNAVAILABLE, "records is down")

    async def EnsurePlayer(self, req, context):  # type: ignore[no-untyped-def]  # noqa: N802
        await self._check("EnsurePlayer", req, context)
        return records_pb2.PlayerRecord(user_id=req.user_id, nickname=req.nickname,
                                        coins=10_000 + req.user_id)

    async def GetPlayer(self, req, context):  # type: ignore[no-untyped-def]  # noqa: N802
        await self._check("GetPlayer", req, context)
        if req.user_id <= 0:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "user_id must be positive")
        if req.user_id in self.unknown:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"no player {req.user_id}")
        return records_pb2.PlayerRecord(user_id=req.user_id, nickname=f"p{req.user_id}")

    async def GetPlayers(self, req, context):  # type: ignore[no-untyped-def]  # noqa: N802
        if not self.has_get_players:
            self.calls.append(("GetPlayers", req))
            await context.abort(grpc.StatusCode.UNIMPLEMENTED, "Method not found!")
        await self._check("GetPlayers", req, context)
        if any(uid <= 0 for uid in req.user_ids):
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "user_ids must be positive")
        if self.players_held is not None:
            await self.players_held.wait()
        return records_pb2.PlayerRecords(players=[
            records_pb2.PlayerRecord(user_id=uid, nickname=f"p{uid}")
            for uid in dict.fromkeys(req.user_ids) if uid not in self.unknown])

    async def GetHistoryScores(self, req, context):  # type: ignore[no-untyped-def]  # noqa: N802
        await self._check("GetHistoryScores", req, context)
        if self.history_held is not None:
            await self.history_held.wait()
        if self.not_found:
            await context.abort(grpc.StatusCode.NOT_FOUND, "no such room for this user")
        return lobby_msgs_pb2.UseHistoryScore(room_id=req.room_id, items=[
            lobby_msgs_pb2.HistoryScoreItem(user_id=1, scores=[3, -1])])

    async def GetReplay(self, req, context):  # type: ignore[no-untyped-def]  # noqa: N802
        await self._check("GetReplay", req, context)
        return lobby_msgs_pb2.Replay(room_id=req.room_id, hand_no=req.hand_no, game="xuezhan",
                                     cells=[lobby_msgs_pb2.ReplayCell(kind=f"u{req.user_id}")])


# -- in-test Table --------------------------------------------------------------------------

@dataclass
class FakeRoom:
    room_id: int
    game: int
    password: str
    seats: list[int] = field(default_factory=lambda: [0, 0, 0, 0])
    status: int = E.ROOM_WAITING
    index: int = 0                       # the room's stream position (index, part 0)
    ring: list[table_pb2.RoomEvents] = field(default_factory=list)   # recent messages

    def ordered(self, reply: table_pb2.TableReply) -> table_pb2.TableReply:
        """The reply made at the room's current position (docs/ordered-events.md)."""
        reply.ordered, reply.index, reply.part = True, self.index, 0
        return reply

    def since(self, index: int, part: int) -> list[table_pb2.RoomEvents] | None:
        """The messages after (index, part); None when the ring does not reach back."""
        if self.ring and (index, part) < (self.ring[0].index - 1, 0):
            return None
        return [m for m in self.ring if (m.index, m.part) > (index, part)]

    def info(self) -> common_pb2.RoomInfo:
        info = common_pb2.RoomInfo(room_id=self.room_id, game=self.game, status=self.status,
                                   has_password=bool(self.password))
        for seat, uid in enumerate(self.seats):
            if uid:
                info.players.add(user_id=uid, seat=seat, ip="10.1.2.3")
        return info


async def publish_events(nc: Any, room: FakeRoom, frames: Any = (), private: Any = (),
                         closed: bool = False) -> table_pb2.RoomEvents:
    """One log record of ``room``: the next index, its part 0 published on
    room.<id>.events as a table does (docs/ordered-events.md) and kept in the room's ring.
    ``private`` is (user id, frame) pairs."""
    room.index += 1
    message = table_pb2.RoomEvents(room_id=room.room_id, index=room.index, part=0,
                                   frames=list(frames), closed=closed, private=[
                                       table_pb2.UserFrame(user_id=uid, frame=frame)
                                       for uid, frame in private])
    room.ring = [*room.ring[-255:], message]
    await nc.publish(bus.room_events(room.room_id), message.SerializeToString())
    return message


@contextlib.asynccontextmanager
async def game_servers(nats_url: str, instance: str) -> AsyncIterator[Config]:
    """A real arbiter and table (``instance``) on ``nats_url``, records in-test
    (FakeRecords): the config a lobby of theirs starts with (token secret SECRET)."""
    from services.arbiter.server import start as start_arbiter
    from services.table.server import start as start_table

    records = grpc.aio.server()
    records_pb2_grpc.add_RecordsServicer_to_server(FakeRecords(), records)
    records_port = records.add_insecure_port("127.0.0.1:0")
    await records.start()
    arbiter = await start_arbiter(load_config("test", environ={"NATS_URL": nats_url}),
                                  port=0, metrics_port=-1)
    cfg = load_config("test", environ={"NATS_URL": nats_url, "PAIJU_TABLE__INSTANCE": instance})
    table = await start_table(cfg, port=0, metrics_port=-1)
    try:
        yield replace(cfg, lobby=replace(cfg.lobby, token_secret=SECRET),
                      records=replace(cfg.records, address=f"127.0.0.1:{records_port}"))
    finally:
        await table.stop(0)
        await arbiter.stop(0)
        await records.stop(0)


class FakeTable(table_pb2_grpc.TableServicer):
    """Follows docs/services.md and docs/ordered-events.md closely enough for the lobby:
    seats players, answers every command once with its request id (ordered at the room's
    position; a command that changes the room is a log record first, published as its
    RoomEvents), refills from the room's ring, keeps the rooms and seats buckets current."""

    def __init__(self, instance: str, kv: dict[str, Any], nc: Any = None) -> None:
        self.instance = instance
        self.kv = kv
        self.nc = nc            # where the room's messages are published
        self.address = ""
        self.rooms: dict[int, FakeRoom] = {}
        self.commands: list[table_pb2.TableCommand] = []
        self.created: list[table_pb2.CreateRoomRequest] = []
        self.got = asyncio.Event()
        self.hold = False      # never answer (to test timeouts and dead tables)
        self.unanswered: Any = None   # a command for which this says True is never answered
        self.subscription: Any = None

    async def register(self, rooms: int = 0) -> None:
        value = TableEntry(instance=self.instance, address=self.address, rooms=rooms,
                           players=0, started_at=0.0, draining=False)
        await self.kv["tables"].put(self.instance, value.encode())

    async def publish_room(self, room: FakeRoom) -> None:
        info = json_format.MessageToDict(room.info(), preserving_proto_field_name=True)
        value = RoomEntry(room_id=room.room_id, owner=self.instance, address=self.address,
                          game=registry.by_type(room.game).name, status=room.status,
                          free_seats=room.seats.count(0), has_password=bool(room.password),
                          room=info)
        await self.kv["rooms"].put(str(room.room_id), value.encode())

    async def add_room(self, game: int = E.XUEZHAN, password: str = "",
                       seated: tuple[int, ...] = ()) -> FakeRoom:
        room = FakeRoom(next(_room_ids), game, password)
        for i, uid in enumerate(seated):
            room.seats[i] = uid
        self.rooms[room.room_id] = room
        await self.publish_room(room)
        return room

    async def CreateRoom(self, req, context):  # type: ignore[no-untyped-def]  # noqa: N802
        self.created.append(req)
        if req.game == E.GAME_UNSPECIFIED:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "unknown game")
        room = await self.add_room(req.game, req.password)
        return table_pb2.CreateRoomReply(room=room.info())

    async def listen(self) -> None:
        """Take the lobby's commands on ``table.<address>.commands``, as a table does."""
        self.subscription = await self.nc.subscribe(bus.table_commands(self.address),
                                                    cb=self._on_command)
        await bus.sync(self.nc)

    async def deaf(self) -> None:
        """Stop taking commands (a dead table: nobody on its subject)."""
        await self.subscription.unsubscribe()
        await bus.sync(self.nc)

    async def _on_command(self, msg: Any) -> None:
        cmd = table_pb2.TableCommand.FromString(msg.data)
        self.commands.append(cmd)
        self.got.set()
        if not self.hold and not (self.unanswered is not None and self.unanswered(cmd)):
            await msg.respond((await self.answer(cmd)).SerializeToString())

    async def answer(self, cmd: table_pb2.TableCommand) -> table_pb2.TableReply:
        reply = table_pb2.TableReply(request_id=cmd.request_id)
        room = self.rooms.get(cmd.room_id)
        if room is None:
            reply.code, reply.message = E.ERR_NO_SUCH_ROOM, "no such room"
            return reply
        if cmd.kind == "events_since":
            missed = room.since(cmd.since_index, cmd.since_part)
            reply.resync = missed is None
            reply.events.extend(missed or ())
            return room.ordered(reply)
        payload = cmd.frame.WhichOneof("payload")
        if payload == "join_room":
            return await self._join(cmd, room, reply)
        seat = room.seats.index(cmd.user_id) if cmd.user_id in room.seats else -1
        if payload == "ask_exit":
            room.seats[seat] = 0
            await self.kv["seats"].delete(str(cmd.user_id))
            await self.publish_room(room)
            await publish_events(self.nc, room)
            reply.room_id, reply.seat = 0, -1
        elif cmd.kind == "snapshot":
            reply.frames.append(server_frame(lobby_msgs_pb2.RoomJoined(room=room.info(),
                                                                       seat=seat)))
            reply.room_id, reply.seat = room.room_id, seat
        elif payload == "refresh_room":
            reply.frames.append(server_frame(lobby_msgs_pb2.RoomJoined(room=room.info(),
                                                                       seat=seat)))
        else:   # ready, online, offline ...: a record of the room
            await publish_events(self.nc, room)
        return room.ordered(reply)

    async def _join(self, cmd: table_pb2.TableCommand, room: FakeRoom,
                    reply: table_pb2.TableReply) -> table_pb2.TableReply:
        if room.password and cmd.frame.join_room.password != room.password:
            reply.code, reply.message = E.ERR_BAD_PASSWORD, "wrong password"
            return room.ordered(reply)
        if 0 not in room.seats:
            reply.code, reply.message = E.ERR_ROOM_FULL, "room is full"
            return room.ordered(reply)
        seat = room.seats.index(0)
        room.seats[seat] = cmd.user_id
        await self.publish_room(room)
        await self.kv["seats"].put(str(cmd.user_id), SeatEntry(
            room_id=room.room_id, owner=self.instance, address=self.address,
            seat=seat).encode())
        await publish_events(self.nc, room)
        reply.frames.append(server_frame(lobby_msgs_pb2.RoomJoined(room=room.info(), seat=seat)))
        reply.room_id, reply.seat = room.room_id, seat
        return room.ordered(reply)

    def of_kind(self, kind: str, user_id: int | None = None) -> list[table_pb2.TableCommand]:
        return [c for c in self.commands if (c.kind or c.frame.WhichOneof("payload")) == kind
                and (user_id is None or c.user_id == user_id)]

    async def wait_for(self, kind: str, user_id: int | None = None,
                       timeout: float = 10.0) -> table_pb2.TableCommand:
        async def poll() -> table_pb2.TableCommand:
            while not (found := self.of_kind(kind, user_id)):
                self.got.clear()
                await self.got.wait()
            return found[-1]
        return await asyncio.wait_for(poll(), timeout)


# -- a client of Lobby.Connect ------------------------------------------------------------

class Client(ConnectStream, FrameReader):
    """The Connect stream with checks: every frame read is kept in ``seen``, and server seq
    numbers must increase by one."""

    def __init__(self, address: str) -> None:
        super().__init__(address)
        self.start_reading()

    def start_reading(self) -> None:
        self.seen: list[client_pb2.ServerFrame] = []
        self.found_upto = 0     # frames of ``seen`` a match wait looked through (found())
        self.batches: list[int] = []    # the number of frames in each batch message read
        self._batched: collections.deque[client_pb2.ServerFrame] = collections.deque()

    async def recv(self, timeout: float = 10.0) -> client_pb2.ServerFrame | None:
        if self._batched:
            frame = self._batched.popleft()
        else:
            frame = await asyncio.wait_for(self.call.read(), timeout)
            if frame is grpc.aio.EOF:
                return None
            if frame.WhichOneof("payload") == "batch":   # Login.accept_batches
                assert frame.seq == 0 and len(frame.batch.frames) >= 2, frame
                self.batches.append(len(frame.batch.frames))
                self._batched.extend(frame.batch.frames)
                frame = self._batched.popleft()
        assert not self.seen or frame.seq == self.seen[-1].seq + 1, "seq must increase by 1"
        self.seen.append(frame)
        return frame

    async def login(self, user_id: int, *, lat: float = 0, lng: float = 0,
                    nickname: str = "", batches: bool = False) -> client_pb2.ServerFrame:
        token = tokens.mint(user_id, SECRET, 600)
        reply = await self.request(lobby_msgs_pb2.Login(token=token, lat=lat, lng=lng,
                                                        nickname=nickname,
                                                        accept_batches=batches))
        assert reply.WhichOneof("payload") == "login_ok", reply
        return reply

    async def closed(self, timeout: float = 10.0) -> bool:
        """True when the server ends the stream (frames before the end are skipped)."""
        async def drain() -> bool:
            while True:
                try:
                    if await self.recv(timeout) is None:
                        return True
                except grpc.aio.AioRpcError:
                    return True
        return await asyncio.wait_for(drain(), timeout)


async def tables_seen(app: Any, *instances: str, timeout: float = 10.0) -> None:
    """Wait until a lobby's table cache (its watch of the ``tables`` bucket, asynchronous)
    lists exactly these live instances, with their latest entries."""
    async def poll() -> None:
        while sorted(t.instance for t in app.directory.table_cache.live()) \
                != sorted(instances):
            await asyncio.sleep(0.02)
    await asyncio.wait_for(poll(), timeout)


def code_of(frame: client_pb2.ServerFrame) -> int:
    assert frame.WhichOneof("payload") == "ret", frame
    return frame.ret.code


# -- the world: nats, fakes, lobbies --------------------------------------------------------

@dataclass
class World:
    nats: EmbeddedNats
    nc: Any
    kv: dict[str, Any]
    records: FakeRecords
    tables: list[FakeTable]
    backend: grpc.aio.Server
    backend_port: int
    lobbies: list[Any] = field(default_factory=list)
    clients: list[Client] = field(default_factory=list)

    @property
    def table(self) -> FakeTable:
        return self.tables[0]

    async def lobby(self, **lobby_cfg: Any) -> str:
        cfg = lobby_config(self.nats.url, f"127.0.0.1:{self.backend_port}", SECRET, **lobby_cfg)
        host = await start(cfg, port=0, metrics_port=0)
        self.lobbies.append(host)
        return f"127.0.0.1:{host.port}"

    async def client(self, address: str) -> Client:
        client = Client(address)
        self.clients.append(client)
        return client

    async def emit(self, room: FakeRoom, frames: Any = (), private: Any = (),
                   closed: bool = False) -> table_pb2.RoomEvents:
        """The room's next message (what a table publishes for one log record)."""
        return await publish_events(self.nc, room, frames, private, closed)

    async def add_table(self, instance: str, rooms: int = 0) -> FakeTable:
        table = FakeTable(instance, self.kv, self.nc)
        server = grpc.aio.server()
        table_pb2_grpc.add_TableServicer_to_server(table, server)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        table.address = f"127.0.0.1:{port}"
        table.server = server  # type: ignore[attr-defined]
        await table.listen()
        await table.register(rooms)
        self.tables.append(table)
        return table


@contextlib.asynccontextmanager
async def open_world(fresh_nats: EmbeddedNats) -> AsyncIterator[World]:
    """Buckets, the in-test records and table servers; lobbies and clients closed at exit."""
    nc = await nats.connect(fresh_nats.url)
    js = nc.jetstream()
    kv = {"tables": await bus.ensure_bucket(js, "tables", ttl=10),
          "rooms": await bus.ensure_bucket(js, "rooms"),
          "seats": await bus.ensure_bucket(js, "seats")}
    records = FakeRecords()
    table = FakeTable("table-a", kv, nc)
    backend = grpc.aio.server()
    records_pb2_grpc.add_RecordsServicer_to_server(records, backend)
    table_pb2_grpc.add_TableServicer_to_server(table, backend)
    port = backend.add_insecure_port("127.0.0.1:0")
    await backend.start()
    w = World(fresh_nats, nc, kv, records, [], backend, port)
    table.address = f"127.0.0.1:{port}"
    await table.listen()
    await table.register()
    w.tables.append(table)
    try:
        yield w
    finally:
        for client in w.clients:
            await client.close()
        for host in w.lobbies:
            await host.stop(0.5)
        for table in w.tables[1:]:
            await table.server.stop(0)  # type: ignore[attr-defined]
        await backend.stop(0)
        await nc.close()


async def seated_client(w: World, address: str, user_id: int,
                        room: FakeRoom | None = None) -> tuple[Client, FakeRoom]:
    """A logged-in client seated in ``room`` (a new waiting room by default)."""
    room = room or await w.table.add_room()
    client = await w.client(address)
    await client.login(user_id)
    joined = await client.request(lobby_msgs_pb2.JoinRoom(room_id=room.room_id))
    assert joined.WhichOneof("payload") == "room_joined", joined
    return client, room


def token(uid: int) -> Callable[[], str]:
    """A fresh login token of ``uid`` at each call (clients/session.py asks one per login)."""
    return lambda: tokens.mint(uid, SECRET, 600)
