"""Frames relayed from NATS through a real lobby reach every transport as before: gRPC
Connect (checked byte for byte against the canonical serialization), binary WebSocket and
JSON WebSocket (checked against the JSON printer), in publish order, each client with its
own gap-free seq interleaved with its replies; a publisher's seq never reaches a client and
a malformed NATS payload is dropped without disturbing anyone. Uses the in-test table and
records of tests/support/lobbyworld.py."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import grpc

from paiju.frames import client_frame, server_frame
from paiju.v1 import client_pb2, common_pb2, game_msgs_pb2, lobby_msgs_pb2
from services.common import bus
from services.lobby import tokens
from services.lobby.ws import to_json
from tests.service.test_lobby_ws import WsClient, ws_clients
from tests.support.lobbykit import FrameReader
from tests.support.lobbyworld import SECRET, World, seated_client

MARK = 4242


class RawConnectClient(FrameReader):
    """A Connect stream whose server frames are read as bytes (no deserializer), kept in
    ``raw``; seq must increase by one."""

    def __init__(self, address: str) -> None:
        self.channel = grpc.aio.insecure_channel(address)
        self.call = self.channel.stream_stream("/paiju.v1.Lobby/Connect",
                                               request_serializer=None,
                                               response_deserializer=None)()
        self.seq = 0
        self.raw: list[bytes] = []
        self.seen: list[client_pb2.ServerFrame] = []

    async def send(self, payload: Any) -> int:
        self.seq += 1
        await self.call.write(client_frame(payload, seq=self.seq).SerializeToString())
        return self.seq

    async def recv(self, timeout: float = 10.0) -> client_pb2.ServerFrame | None:
        data = await asyncio.wait_for(self.call.read(), timeout)
        if data is grpc.aio.EOF:
            return None
        frame = client_pb2.ServerFrame.FromString(data)
        assert not self.seen or frame.seq == self.seen[-1].seq + 1, "seq must increase by 1"
        self.raw.append(data)
        self.seen.append(frame)
        return frame

    async def close(self) -> None:
        self.call.cancel()
        await self.channel.close()


class TextRecorder:
    """Wraps a client WebSocket to keep every text message it receives."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self.texts: list[str] = []

    async def receive(self, timeout: float | None = None) -> aiohttp.WSMessage:
        msg = await self.ws.receive(timeout)
        if msg.type == aiohttp.WSMsgType.TEXT:
            self.texts.append(msg.data)
        return msg

    def __getattr__(self, name: str) -> Any:
        return getattr(self.ws, name)


def room_events(room_id: int) -> list[bytes]:
    """Frames a table publishes in a room's RoomEvents, as bytes, plus oddities: a seq set
    by the publisher, an empty frame, a large snapshot-like frame."""
    info = common_pb2.RoomInfo(room_id=room_id, play_desc="血战到底 " * 50,
                               options_json='{"max_fan": 4}')
    for seat in range(4):
        info.players.add(user_id=100 + seat, seat=seat, nickname=f"p{seat}")
    frames = [
        server_frame(lobby_msgs_pb2.InEntrust(seat=1, count=2), event_uid=f"{room_id}:1:5"),
        server_frame(game_msgs_pb2.GameEvent(game="xuezhan", kind="discard", seat=2,
                                             json='{"tile": "5m"}'),
                     event_uid=f"{room_id}:1:6"),
        server_frame(lobby_msgs_pb2.RoomChange(reason=lobby_msgs_pb2.RoomChange.UPDATED,
                                                room=info)),
        server_frame(lobby_msgs_pb2.PlayerChange(reason=lobby_msgs_pb2.PlayerChange.OFFLINE,
                                                  seat=3, user_id=103,
                                                  players=list(info.players))),
    ]
    frames[3].seq = 999                      # a publisher's seq: the session's own must win
    out = [f.SerializeToString() for f in frames]
    out.insert(2, b"")                       # an empty frame is relayed as an empty frame
    return out


def mark() -> bytes:
    return server_frame(lobby_msgs_pb2.InEntrust(seat=0, count=MARK)).SerializeToString()


async def test_room_events_reach_every_transport_with_gap_free_seq(world: World) -> None:
    address = await world.lobby(ws_port=0)
    port = world.lobbies[-1].ws_port
    grpc_client, room = await seated_client(world, address, 31)
    raw_client = RawConnectClient(address)
    try:
        await raw_client.request(lobby_msgs_pb2.Login(token=tokens.mint(32, SECRET, 600)))
        joined = await raw_client.request(lobby_msgs_pb2.JoinRoom(room_id=room.room_id))
        assert joined.HasField("room_joined"), joined
        async with ws_clients() as sockets:
            binary = await WsClient.open(port)
            text = await WsClient.open(port, as_json=True)
            sockets += [binary, text]
            recorder = TextRecorder(text.ws)
            text.ws = recorder  # type: ignore[assignment]
            for uid, ws_client in ((33, binary), (34, text)):
                await ws_client.login(uid)
                joined = await ws_client.request(lobby_msgs_pb2.JoinRoom(room_id=room.room_id))
                assert joined.HasField("room_joined"), joined
            clients: list[Any] = [grpc_client, raw_client, binary, text]
            await _exchange(world, room.room_id, clients)
            # JSON: the text is what the JSON printer makes of the frame, seq first
            assert recorder.texts
            for data, frame in zip(recorder.texts, text.seen, strict=True):
                assert data == to_json(frame)
                assert data.startswith(f'{{"seq": "{frame.seq}"')
    finally:
        await raw_client.close()
    # gRPC: byte for byte the canonical serialization (what the lobby sent before)
    for data, frame in zip(raw_client.raw, raw_client.seen, strict=True):
        assert data == frame.SerializeToString()


async def _exchange(world: World, room_id: int, clients: list[Any]) -> None:
    """Publish room events (and a malformed one) and private frames while every client sends
    heartbeats; every client gets all of them, in order, and every reply."""
    events = room_events(room_id)
    room = world.table.rooms[room_id]
    beats: dict[int, list[int]] = {i: [] for i in range(len(clients))}
    for n, data in enumerate(events):
        await world.emit(room, [client_pb2.ServerFrame.FromString(data)])
        if n == 1:
            await world.nc.publish(bus.room_events(room_id), b"\xff\xff\xff")   # dropped
        for i, client in enumerate(clients):
            beats[i].append(await client.send(lobby_msgs_pb2.HeartBeat(client_time_ms=n)))
    private = server_frame(lobby_msgs_pb2.DistanceAlert(alert="yours"))
    private.seq = 7
    await world.emit(room, [], [(uid, private) for uid in (31, 32, 33, 34)])
    await world.emit(room, [client_pb2.ServerFrame.FromString(mark())])
    for i, client in enumerate(clients):
        start = len(client.seen)
        while not _complete(client.seen[start:], beats[i]):
            assert await client.recv() is not None, "the lobby closed the stream"
        got = client.seen[start:]
        assert [f.seq for f in got] == list(range(got[0].seq, got[0].seq + len(got)))
        relayed = [f for f in got if f.HasField("in_entrust") or f.HasField("game_event")
                   or f.HasField("room_change") or f.HasField("player_change")
                   or f.WhichOneof("payload") is None]
        expected = [client_pb2.ServerFrame.FromString(data) for data in [*events, mark()]]
        assert len(relayed) == len(expected)
        for want, have in zip(expected, relayed, strict=True):
            want.seq = have.seq                  # the session's seq, nothing else changed
            assert have == want
        alerts = [f for f in got if f.HasField("distance_alert")]
        assert [f.distance_alert.alert for f in alerts] == ["yours"]


def _complete(frames: list[client_pb2.ServerFrame], beats: list[int]) -> bool:
    """The marker, the private frame and a reply to every heartbeat have arrived."""
    replies = {f.reply_to for f in frames if f.HasField("heartbeat")}
    return (any(f.in_entrust.count == MARK for f in frames)
            and any(f.HasField("distance_alert") for f in frames) and set(beats) <= replies)
