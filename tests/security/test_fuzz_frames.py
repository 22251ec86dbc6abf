"""Generated frames against the lobby's decoders and the table's command path (issue 9):
nothing a client sends may crash, hang or corrupt a room; every command gets a code.

Frames are built from the protos themselves: any payload of ClientFrame's oneof, every field
filled with arbitrary values of its type (nested messages too), plus raw bytes and text."""

from __future__ import annotations

import asyncio
from typing import Any

from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paiju.v1 import client_pb2, common_pb2, table_pb2
from services.lobby.session_loop import BadFrame, decode_binary
from services.lobby.ws import decode_text
from services.table import logrec as lr
from services.table import views
from services.table.actor import RoomActor
from services.table.creation import create_record
from services.table.room import Room
from tests.unit.services.test_table_actor import FAST, MemoryLog, actor_for, ready_all

T = FieldDescriptor
SCALARS: dict[int, st.SearchStrategy[Any]] = {
    T.TYPE_BOOL: st.booleans(),
    T.TYPE_STRING: st.text(max_size=40),
    T.TYPE_BYTES: st.binary(max_size=40),
    T.TYPE_INT32: st.integers(-2**31, 2**31 - 1), T.TYPE_SINT32: st.integers(-2**31, 2**31 - 1),
    T.TYPE_SFIXED32: st.integers(-2**31, 2**31 - 1),
    T.TYPE_INT64: st.integers(-2**63, 2**63 - 1), T.TYPE_SINT64: st.integers(-2**63, 2**63 - 1),
    T.TYPE_SFIXED64: st.integers(-2**63, 2**63 - 1),
    T.TYPE_UINT32: st.integers(0, 2**32 - 1), T.TYPE_FIXED32: st.integers(0, 2**32 - 1),
    T.TYPE_UINT64: st.integers(0, 2**64 - 1), T.TYPE_FIXED64: st.integers(0, 2**64 - 1),
    T.TYPE_DOUBLE: st.floats(allow_nan=True, allow_infinity=True),
    T.TYPE_FLOAT: st.floats(width=32, allow_nan=True, allow_infinity=True),
    T.TYPE_ENUM: st.integers(-5, 100),   # open enums: unknown numbers arrive too
}
# values a game understands, mixed in so that generated actions reach the rules
TILES = st.sampled_from(["1m", "5p", "9s", "3s3s", "Th", "SJ", "BJ", "", "zz", "1m" * 30])


@st.composite
def message(draw: st.DrawFn, descriptor: Descriptor, depth: int = 0) -> dict[str, Any]:
    """Field values for ``descriptor``: a random subset of its fields."""
    values: dict[str, Any] = {}
    for field in descriptor.fields:
        if not draw(st.booleans()):
            continue
        if field.type == T.TYPE_MESSAGE:
            if depth >= 2:
                continue
            one = message(field.message_type, depth + 1)
        elif field.type == T.TYPE_STRING and field.name in ("tiles", "cards", "card", "token"):
            one = TILES | SCALARS[T.TYPE_STRING]
        else:
            one = SCALARS[field.type]
        values[field.name] = draw(st.lists(one, max_size=4) if repeated(field) else one)
    return values


def repeated(field: FieldDescriptor) -> bool:
    flag = getattr(field, "is_repeated", None)   # protobuf >= 6 (label() is deprecated)
    return bool(flag) if flag is not None else field.label == T.LABEL_REPEATED


PAYLOADS = list(client_pb2.ClientFrame.DESCRIPTOR.oneofs_by_name["payload"].fields)


@st.composite
def client_frames(draw: st.DrawFn) -> client_pb2.ClientFrame:
    field = draw(st.sampled_from(PAYLOADS))
    frame = client_pb2.ClientFrame(seq=draw(st.integers(0, 2**64 - 1)),
                                   event_id=draw(st.integers(-2**31, 2**31 - 1)))
    getattr(frame, field.name).SetInParent()
    fill(getattr(frame, field.name), draw(message(field.message_type)))
    return frame


def fill(msg: Any, values: dict[str, Any]) -> None:
    for name, value in values.items():
        field = msg.DESCRIPTOR.fields_by_name[name]
        if field.type == T.TYPE_MESSAGE:
            items = value if repeated(field) else [value]
            for item in items:
                sub = getattr(msg, name).add() if repeated(field) \
                    else getattr(msg, name)
                sub.SetInParent()
                fill(sub, item)
        elif repeated(field):
            getattr(msg, name).extend(value)
        else:
            setattr(msg, name, value)


@given(st.binary(max_size=300))
@settings(max_examples=400, deadline=None)
def test_any_bytes_decode_to_a_frame_or_a_bad_frame(raw: bytes) -> None:
    assert isinstance(decode_binary(raw), client_pb2.ClientFrame | BadFrame)


@given(st.one_of(st.text(max_size=300), client_frames().map(json_format.MessageToJson)))
@settings(max_examples=300, deadline=None)
def test_any_text_decodes_to_a_frame_or_a_bad_frame(text: str) -> None:
    assert isinstance(decode_text(text), client_pb2.ClientFrame | BadFrame)


async def seated(game: int, name: str) -> tuple[Room, RoomActor, MemoryLog]:
    log = MemoryLog()
    rec = create_record(1234567, table_pb2.CreateRoomRequest(game=game, total_hands=2),
                        name, {}, 3)
    room = Room(rec)
    actor = actor_for(room, log, FAST, entrust_delay=0.01)
    await actor.record(rec)
    actor.start()
    for uid in (1, 2, 3, 4):
        cmd = table_pb2.TableCommand(room_id=1234567, user_id=uid)
        cmd.frame.join_room.room_id = 1234567
        assert (await actor.submit("command", cmd)).code == 0
    await ready_all(actor)
    return room, actor, log


@given(st.lists(st.tuples(st.integers(0, 5), client_frames()), min_size=1, max_size=25),
       st.sampled_from([(common_pb2.XUEZHAN, "xuezhan"), (common_pb2.CHANGSHA, "changsha"),
                        (common_pb2.DADUN, "dadun")]))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_generated_commands_get_a_code_and_leave_the_room_consistent(
        commands: list[tuple[int, client_pb2.ClientFrame]], game: tuple[int, str]) -> None:
    async def run() -> None:
        room, actor, log = await seated(*game)
        try:
            for uid, frame in commands:   # uid 0 and 5 are not seated
                cmd = table_pb2.TableCommand(room_id=1234567, user_id=uid, frame=frame)
                reply = await asyncio.wait_for(actor.submit("command", cmd), 10)
                assert isinstance(reply.code, int)
                assert reply.code != common_pb2.ERR_INTERNAL, reply.message
            # the log still folds into the same room (nothing half-applied), and it plays on
            again = Room(lr.decode(log.records[0]))
            for rec in log.records:
                views.apply(again, lr.decode(rec))
            assert again.hand_no == room.hand_no and again.closed == room.closed
            assert [s and s.user_id for s in again.seats] == [s and s.user_id for s in room.seats]
            if room.state is not None and not room.closed:
                assert again.state is not None
                assert again.state.public_view() == room.state.public_view()
        finally:
            await actor.stop()

    asyncio.run(run())
