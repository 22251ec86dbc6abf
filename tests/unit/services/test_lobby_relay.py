"""The lobby relays NATS frames without re-serializing them per session (services/lobby/
sessions.Relayed): the bytes a session sends are its seq field followed by the frame's
serialization without seq, and JSON WebSocket sessions share one JSON printing per frame.
Checked against the old path (parse, copy, set seq, serialize / print JSON) for every
ServerFrame payload kind, frames that already carry a seq, non-canonical encodings, large
frames, the empty frame and malformed payloads; and the fan-out of one room's NATS message."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from paiju.frames import server_frame
from paiju.v1 import client_pb2, common_pb2, lobby_msgs_pb2, table_pb2
from services.lobby.session_loop import encode_binary
from services.lobby.sessions import Outbox, Relayed, Session
from services.lobby.streams import RoomStreams
from services.lobby.ws import encode_json, to_json
from tests.support.lobbykit import Msg, Nats

SEQS = [1, 2, 127, 128, 255, 300, 16_383, 16_384, 2**21, 2**32 + 5, 2**63 + 1, 2**64 - 1]
F = FieldDescriptor


def _value(field: FieldDescriptor, i: int) -> Any:
    """A non-default value of a scalar field (the i-th of a repeated one)."""
    t = field.type
    if t in (F.TYPE_INT32, F.TYPE_SINT32, F.TYPE_SFIXED32):
        return -7 - i                       # negative: ten-byte varints
    if t in (F.TYPE_INT64, F.TYPE_SINT64, F.TYPE_SFIXED64):
        return -(2**40) - i
    if t in (F.TYPE_UINT32, F.TYPE_FIXED32):
        return 300 + i
    if t in (F.TYPE_UINT64, F.TYPE_FIXED64):
        return 2**40 + i
    if t == F.TYPE_BOOL:
        return True
    if t in (F.TYPE_DOUBLE, F.TYPE_FLOAT):
        return 1.5 + i
    if t == F.TYPE_STRING:
        return f"牌-{field.name}-{i}"
    if t == F.TYPE_BYTES:
        return bytes([0, 8, 255, i])
    if t == F.TYPE_ENUM:
        return field.enum_type.values[-1].number
    raise AssertionError(f"no value for {field.full_name}")


def _repeated(field: FieldDescriptor) -> bool:
    flag = getattr(field, "is_repeated", None)           # protobuf >= 6.31
    return bool(flag) if flag is not None else field.label == F.LABEL_REPEATED


def fill(message: Message, depth: int = 0) -> Message:
    """Every field of ``message`` set to a non-default value (the first field of each oneof,
    two items per repeated field), nested messages down to a few levels."""
    descriptor: Descriptor = message.DESCRIPTOR
    for field in descriptor.fields:
        oneof = field.containing_oneof
        if oneof is not None and message.WhichOneof(oneof.name) is not None:
            continue
        if field.type == F.TYPE_MESSAGE:
            if depth >= 3:
                continue
            if _repeated(field):
                container = getattr(message, field.name)
                if field.message_type.GetOptions().map_entry:
                    key, value = field.message_type.fields_by_name["key"], \
                        field.message_type.fields_by_name["value"]
                    for i in range(2):
                        if value.type == F.TYPE_MESSAGE:
                            fill(container[_value(key, i)], depth + 1)
                        else:
                            container[_value(key, i)] = _value(value, i)
                else:
                    for _ in range(2):
                        fill(container.add(), depth + 1)
            else:
                fill(getattr(message, field.name), depth + 1)
        elif _repeated(field):
            getattr(message, field.name).extend(_value(field, i) for i in range(2))
        else:
            setattr(message, field.name, _value(field, 0))
    return message


def payload_kinds() -> list[str]:
    return [f.name for f in client_pb2.ServerFrame.DESCRIPTOR.oneofs_by_name["payload"].fields]


def frame_of(kind: str, **header: Any) -> client_pb2.ServerFrame:
    frame = client_pb2.ServerFrame(**header)
    fill(getattr(frame, kind))
    return frame


def old_wire(raw: bytes, seq: int) -> bytes:
    """What the lobby sent before: parse, copy, stamp, serialize."""
    frame = client_pb2.ServerFrame.FromString(raw)
    out = client_pb2.ServerFrame()
    out.CopyFrom(frame)
    out.seq = seq
    return out.SerializeToString()


def old_json(raw: bytes, seq: int) -> str:
    frame = client_pb2.ServerFrame.FromString(raw)
    frame.seq = seq
    return to_json(frame)


def expected(raw: bytes, seq: int) -> client_pb2.ServerFrame:
    frame = client_pb2.ServerFrame.FromString(raw)
    frame.seq = seq
    return frame


HEADERS = [{}, {"event_id": 9601, "event_uid": "500001:3:17"}, {"reply_to": 9, "seq": 77},
           {"seq": 2**63, "event_id": -1}]


@pytest.mark.parametrize("kind", payload_kinds())
def test_every_payload_kind_goes_out_as_the_old_path_sent_it(kind: str) -> None:
    for header in HEADERS:
        raw = frame_of(kind, **header).SerializeToString()
        relayed = Relayed.parse(raw)
        assert relayed is not None and relayed.frame.seq == 0
        for seq in SEQS:
            wire = relayed.wire(seq)
            assert wire == old_wire(raw, seq)                       # byte for byte
            assert client_pb2.ServerFrame.FromString(wire) == expected(raw, seq)
            text = encode_json(relayed, seq)
            assert text == old_json(raw, seq)
            assert json_format.Parse(text, client_pb2.ServerFrame()) == expected(raw, seq)


def test_a_seq_from_the_publisher_never_reaches_the_client() -> None:
    frame = server_frame(lobby_msgs_pb2.InEntrust(seat=2, count=1), event_uid="1:1:1")
    body = frame.SerializeToString()
    variants = {
        "canonical seq": client_pb2.ServerFrame(seq=99, event_id=frame.event_id,
                                                event_uid="1:1:1",
                                                in_entrust=frame.in_entrust).SerializeToString(),
        "explicit zero seq after the payload": body + b"\x08\x00",
        "explicit zero seq first": b"\x08\x00" + body,
        "two seqs, last wins": b"\x08\x05" + body + b"\x08\x63",
        "non-minimal varint seq": body + b"\x08\xe3\x80\x80\x00",
    }
    for name, raw in variants.items():
        relayed = Relayed.parse(raw)
        assert relayed is not None, name
        for seq in (1, 200, 2**40):
            got = client_pb2.ServerFrame.FromString(relayed.wire(seq))
            assert got.seq == seq, name
            assert got.in_entrust == frame.in_entrust and got.event_uid == "1:1:1", name
            assert relayed.wire(seq) == client_pb2.ServerFrame(
                seq=seq, event_id=frame.event_id, event_uid="1:1:1",
                in_entrust=frame.in_entrust).SerializeToString(), name
            assert json_format.Parse(encode_json(relayed, seq), client_pb2.ServerFrame()).seq \
                == seq, name


def test_relaying_leaves_the_given_frame_alone() -> None:
    frame = server_frame(lobby_msgs_pb2.InEntrust(seat=2, count=1))
    frame.seq = 41
    relayed = Relayed(frame)
    assert frame.seq == 41 and relayed.frame.seq == 0
    assert client_pb2.ServerFrame.FromString(relayed.wire(3)).seq == 3


def test_large_frames() -> None:
    info = fill(common_pb2.RoomInfo())
    rooms = server_frame(lobby_msgs_pb2.RoomList(items=[info] * 300, started_room_num=12))
    replay = server_frame(lobby_msgs_pb2.Replay(room_id=7, game="xuezhan", cells=[
        lobby_msgs_pb2.ReplayCell(kind="discard", event_data=bytes(range(256)) * 20)
        for _ in range(50)]))
    for frame in (rooms, replay):
        raw = frame.SerializeToString()
        assert len(raw) > 100_000
        relayed = Relayed.parse(raw)
        assert relayed is not None
        for seq in (1, 129, 2**35):
            assert relayed.wire(seq) == old_wire(raw, seq)
            assert encode_json(relayed, seq) == old_json(raw, seq)


def test_the_empty_frame() -> None:
    relayed = Relayed.parse(b"")
    assert relayed is not None and relayed.body == b""
    assert relayed.wire(5) == client_pb2.ServerFrame(seq=5).SerializeToString() == b"\x08\x05"
    assert encode_json(relayed, 5) == old_json(b"", 5) == '{"seq": "5"}'


@pytest.mark.parametrize("raw", [
    b"\xff\xff\xff",                                         # not protobuf
    server_frame(lobby_msgs_pb2.InEntrust(seat=1)).SerializeToString()[:-1],  # truncated
    b"\x52\x05\x08",                                         # payload longer than the data
    b"\x22\x02\xff\xfe",                                     # event_uid not UTF-8
])
def test_a_malformed_payload_is_refused(raw: bytes) -> None:
    assert Relayed.parse(raw) is None


def test_json_is_printed_once_per_frame() -> None:
    relayed = Relayed.parse(server_frame(lobby_msgs_pb2.InEntrust(seat=1)).SerializeToString())
    assert relayed is not None and relayed.json_body is None
    first = encode_json(relayed, 1)
    body = relayed.json_body
    assert body is not None and '"seq"' not in body
    assert encode_json(relayed, 2) != first and relayed.json_body is body


def test_own_frames_are_stamped_and_serialized_as_before() -> None:
    frame = server_frame(lobby_msgs_pb2.KickOut(user_id=3), reply_to=4)
    assert encode_binary(frame, 9) == client_pb2.ServerFrame(
        seq=9, reply_to=4, event_id=frame.event_id, kick_out=frame.kick_out).SerializeToString()
    assert frame.seq == 9
    assert encode_json(frame, 10) == to_json(frame) and frame.seq == 10


# -- the room streams: one NATS message, many sessions ------------------------------------

async def drain(outbox: Outbox) -> list[Any]:
    """The items queued so far (next() does not wait while the outbox holds some)."""
    return [await outbox.next() for _ in range(len(outbox))]


class NoTable:
    """The room's owner: nothing was missed."""

    async def events_since(self, room_id: int, since: Any) -> table_pb2.TableReply:
        return table_pb2.TableReply(room_id=room_id, ordered=True, index=since[0],
                                    part=since[1])

    async def snapshot(self, session: Session, room_id: int) -> table_pb2.TableReply:
        raise AssertionError("no snapshot expected")


async def seated(streams: RoomStreams, room_id: int, n: int) -> list[Session]:
    """``n`` sessions joined at position (1, 0) of the room's stream."""
    sessions = []
    for uid in range(1, n + 1):
        session = Session(user_id=uid, room_id=room_id, seat=uid - 1)
        await streams.open(room_id)
        streams.join(session, room_id, table_pb2.TableReply(
            room_id=room_id, seat=uid - 1, ordered=True, index=1), [])
        await streams.release(room_id)
        sessions.append(session)
    return sessions


def events(room_id: int, index: int, *frames: Any, private: Any = (),
           closed: bool = False) -> bytes:
    return table_pb2.RoomEvents(room_id=room_id, index=index, frames=list(frames),
                                closed=closed, private=[
                                    table_pb2.UserFrame(user_id=u, frame=f) for u, f in private],
                                ).SerializeToString()


async def test_a_rooms_message_is_parsed_once_for_all_its_sessions() -> None:
    streams = RoomStreams(Nats(), NoTable())  # type: ignore[arg-type]
    members = await seated(streams, 600001, 4)
    others = await seated(streams, 600002, 1)
    frame = server_frame(lobby_msgs_pb2.InEntrust(seat=1, count=2), event_uid="600001:1:5")
    await streams._on_events(Msg("room.600001.events", events(600001, 2, frame)))
    await streams._on_events(Msg("room.600001.events", b"\xff\xff"))    # dropped, logged
    await streams._on_events(Msg("room.600001.events", events(600001, 3, frame)))
    items = [await drain(s.outbox) for s in members]
    assert all(len(got) == 2 for got in items)
    assert len({id(got[0]) for got in items}) == 1        # one shared object per message
    assert len(others[0].outbox) == 0
    for session in members:
        # what the session's stream sends: its own gap-free seq on the shared bytes
        wires = [encode_binary(items[0][i], session.next_seq()) for i in range(2)]
        frames = [client_pb2.ServerFrame.FromString(w) for w in wires]
        assert [f.seq for f in frames] == [1, 2]
        assert all(f.in_entrust.count == 2 and f.event_uid == "600001:1:5" for f in frames)
    await streams.stop()


async def test_the_rooms_last_message_closes_it_and_private_frames_reach_their_user_only() -> None:
    streams = RoomStreams(Nats(), NoTable())  # type: ignore[arg-type]
    members = await seated(streams, 600003, 2)
    private = server_frame(lobby_msgs_pb2.InEntrust(seat=0, count=1))
    await streams._on_events(Msg("room.600003.events", events(600003, 2, private=[(2, private)])))
    notice = server_frame(lobby_msgs_pb2.NoticeDismiss(room_id=600003, dismissed=True))
    await streams._on_events(Msg("room.600003.events", events(600003, 3, notice, closed=True)))
    await asyncio.sleep(0)
    assert all(s.room_id == 0 for s in members) and 600003 not in streams.rooms
    got = [await drain(s.outbox) for s in members]
    assert [len(g) for g in got] == [1, 2]                # the notice itself went out
    assert isinstance(got[1][0], Relayed) and got[1][0].frame == private
    await streams.stop()
