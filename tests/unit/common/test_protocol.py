"""The generated protocol: every frame kind round-trips, event ids follow the numbering
table, and nothing that must stay private has a field in a public message."""

from __future__ import annotations

import pytest
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from paiju import frames
from paiju.v1 import client_pb2, common_pb2

CLIENT_FIELDS = list(client_pb2.ClientFrame.DESCRIPTOR.oneofs_by_name["payload"].fields)
SERVER_FIELDS = list(client_pb2.ServerFrame.DESCRIPTOR.oneofs_by_name["payload"].fields)


def fill(message: Message, depth: int = 0) -> Message:
    """Give every field of a message a non-default value (recursively, lists of two)."""
    for field in message.DESCRIPTOR.fields:
        repeated = field.is_repeated
        if field.type == FieldDescriptor.TYPE_MESSAGE:
            if depth > 2:
                continue
            if repeated:
                for _ in range(2):
                    fill(getattr(message, field.name).add(), depth + 1)
            else:
                fill(getattr(message, field.name), depth + 1)
            continue
        if field.type == FieldDescriptor.TYPE_ENUM:
            value = field.enum_type.values[-1].number
        elif field.type in (FieldDescriptor.TYPE_STRING,):
            value = f"{field.name}-值"
        elif field.type == FieldDescriptor.TYPE_BYTES:
            value = b"\x00\x01"
        elif field.type == FieldDescriptor.TYPE_BOOL:
            value = True
        elif field.type in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
            value = 28.5
        else:
            value = -3 if field.type in (FieldDescriptor.TYPE_INT32, FieldDescriptor.TYPE_INT64) else 7
        if repeated:
            getattr(message, field.name).extend([value, value])
        else:
            setattr(message, field.name, value)
    return message


@pytest.mark.parametrize("field", CLIENT_FIELDS, ids=lambda f: f.name)
def test_client_frame_round_trip(field: FieldDescriptor) -> None:
    payload = fill(getattr(client_pb2.ClientFrame(), field.name).__class__())
    frame = frames.client_frame(payload, seq=41)
    back = client_pb2.ClientFrame.FromString(frame.SerializeToString())
    assert back == frame
    assert back.WhichOneof("payload") == field.name
    assert back.event_id == frames.event_id_of(payload) > 0
    assert frames.payload_of(back) == payload


@pytest.mark.parametrize("field", SERVER_FIELDS, ids=lambda f: f.name)
def test_server_frame_round_trip(field: FieldDescriptor) -> None:
    payload = fill(getattr(client_pb2.ServerFrame(), field.name).__class__())
    frame = frames.server_frame(payload, reply_to=9, event_uid="7:1:3")
    back = client_pb2.ServerFrame.FromString(frame.SerializeToString())
    assert back == frame
    assert back.WhichOneof("payload") == field.name
    assert back.reply_to == 9 and back.event_uid == "7:1:3"
    assert back.event_id == frames.event_id_of(payload) > 0


def test_event_ids_are_unique_and_in_their_game_range() -> None:
    ids = frames.all_event_ids()
    by_id: dict[int, str] = {}
    for name, event_id in ids.items():
        assert event_id not in by_id, f"{name} and {by_id.get(event_id)} share {event_id}"
        by_id[event_id] = name
        short = name.split(".")[-1]
        if short.startswith("Dd"):
            assert 9800 <= event_id <= 9889, name
        elif short.startswith("Mj") or short == "MahjongAction":
            assert 9600 <= event_id <= 9789, name
        else:
            assert 1000 <= event_id <= 1999, name


def test_seed_event_ids_are_kept() -> None:
    from paiju.v1 import game_msgs_pb2 as g
    assert frames.event_id_of(g.DdGameInfo()) == 9810
    assert frames.event_id_of(g.DdUseAlone()) == 9834
    assert frames.event_id_of(g.DdReplayGame()) == 9842


def test_error_codes_follow_the_game_ranges() -> None:
    for value in common_pb2.ErrorCode.DESCRIPTOR.values:
        if value.name.startswith("DD_"):
            assert 9890 <= value.number <= 9899
        elif value.name.startswith("MJ_"):
            assert 9690 <= value.number <= 9699
        elif value.name.startswith("CS_"):
            assert 9790 <= value.number <= 9799
        elif value.name != "OK":
            assert 1000 <= value.number <= 1099


def test_room_info_cannot_carry_a_password_or_coordinates() -> None:
    room_fields = set(common_pb2.RoomInfo.DESCRIPTOR.fields_by_name)
    assert not room_fields & {"pwd", "password"}
    player_fields = set(common_pb2.PlayerInfo.DESCRIPTOR.fields_by_name)
    assert not player_fields & {"lat", "lng", "latitude", "longitude"}


def test_error_frame_carries_code_and_message() -> None:
    frame = frames.error_frame(common_pb2.ERR_BAD_TOKEN, "bad token", request_event_id=1002,
                               reply_to=1)
    assert frame.ret.code == 1003 and frame.ret.message == "bad token"
    assert frame.ret.event_id == 1002 and frame.reply_to == 1
