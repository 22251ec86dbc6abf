"""Helpers over the generated client protocol: event ids, frame building, JSON views.

Event ids live in the protos as the ``(paiju.v1.event_id)`` message option, so the numbering
table has one source of truth; this module reads them once from the descriptors.
"""

from __future__ import annotations

import json
from functools import cache

from google.protobuf import json_format
from google.protobuf.message import Message

from paiju.v1 import client_pb2, common_pb2


def event_id_of(message: Message) -> int:
    """The seed-style event id declared on a message type (0 if none)."""
    return _event_id(message.DESCRIPTOR)


@cache
def _event_id(descriptor) -> int:  # type: ignore[no-untyped-def]
    return int(descriptor.GetOptions().Extensions[common_pb2.event_id])


@cache
def _payload_field(frame_type: str, full_name: str) -> str:
    frame = client_pb2.ServerFrame if frame_type == "server" else client_pb2.ClientFrame
    for field in frame.DESCRIPTOR.oneofs_by_name["payload"].fields:
        if field.message_type.full_name == full_name:
            return field.name
    raise KeyError(f"{full_name} is not a {frame_type} frame payload")


def server_frame(payload: Message, *, reply_to: int = 0, event_uid: str = "") -> client_pb2.ServerFrame:
    """Wrap a payload message in a ServerFrame (seq is set by the session that sends it)."""
    frame = client_pb2.ServerFrame(reply_to=reply_to, event_id=event_id_of(payload),
                                   event_uid=event_uid)
    getattr(frame, _payload_field("server", payload.DESCRIPTOR.full_name)).CopyFrom(payload)
    return frame


def client_frame(payload: Message, *, seq: int = 0) -> client_pb2.ClientFrame:
    frame = client_pb2.ClientFrame(seq=seq, event_id=event_id_of(payload))
    getattr(frame, _payload_field("client", payload.DESCRIPTOR.full_name)).CopyFrom(payload)
    return frame


def payload_of(frame: client_pb2.ServerFrame | client_pb2.ClientFrame) -> Message | None:
    name = frame.WhichOneof("payload")
    return getattr(frame, name) if name else None


def error_frame(code: int, message: str, *, request_event_id: int = 0,
                reply_to: int = 0, overtaken: bool = False) -> client_pb2.ServerFrame:
    """A Return frame with a non-zero code: the protocol's error reply (``overtaken``: it
    only came too late, the game moved on)."""
    return server_frame(common_pb2.Return(event_id=request_event_id, code=code, message=message,
                                          overtaken=overtaken), reply_to=reply_to)


def ok_frame(request_event_id: int, *, reply_to: int = 0, message: str = "ok") -> client_pb2.ServerFrame:
    return server_frame(common_pb2.Return(event_id=request_event_id, code=0, message=message),
                        reply_to=reply_to)


def hand_over_data(frame: client_pb2.ServerFrame) -> dict | None:
    """The engine's hand-over record carried by a hand's final frame (any game), else None."""
    kind = frame.WhichOneof("payload")
    if kind == "mj_hand_over":
        return json.loads(frame.mj_hand_over.details_json or "{}")
    if kind == "dd_small_settlement":
        return json.loads(frame.dd_small_settlement.details_json or "{}")
    if kind == "game_event" and frame.game_event.kind == "hand_over":   # a game without typed
        return json.loads(frame.game_event.json or "{}")               # frames (Dou Dizhu)
    return None


def to_json(message: Message) -> dict:
    return json_format.MessageToDict(message, preserving_proto_field_name=True)


def all_event_ids() -> dict[str, int]:
    """Every client-protocol message name -> its event id (for docs and the uniqueness test)."""
    out: dict[str, int] = {}
    for frame in (client_pb2.ClientFrame, client_pb2.ServerFrame):
        for field in frame.DESCRIPTOR.oneofs_by_name["payload"].fields:
            out[field.message_type.full_name] = _event_id(field.message_type)
    return out
