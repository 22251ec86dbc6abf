"""Helpers over the generated client protocol: event ids, frame building, JSON views.

Event ids live in the protos as the ``(paiju.v1.event_id)`` message option, so the numbering
table has one source of truth; this module reads them once from the descriptors.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cache
from typing import Any

from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from paiju.v1 import client_pb2, common_pb2


def event_id_of(message: Message) -> int:
    """The seed-style event id declared on a message type (0 if none)."""
    return _event_id(message.DESCRIPTOR)


@cache
def _event_id(descriptor: Descriptor) -> int:
    return int(descriptor.GetOptions().Extensions[common_pb2.event_id])


@cache
def _payload_field(frame_type: str, full_name: str) -> str:
    frame = client_pb2.ServerFrame if frame_type == "server" else client_pb2.ClientFrame
    for field in frame.DESCRIPTOR.oneofs_by_name["payload"].fields:
        if field.message_type.full_name == full_name:
            name: str = field.name
            return name
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


def hand_over_data(frame: client_pb2.ServerFrame) -> dict[str, Any] | None:
    """The engine's hand-over record carried by a hand's final frame (any game), else None."""
    kind = frame.WhichOneof("payload")
    if kind == "mj_hand_over":
        text = frame.mj_hand_over.details_json
    elif kind == "dd_small_settlement":
        text = frame.dd_small_settlement.details_json
    elif kind == "game_event" and frame.game_event.kind == "hand_over":   # a game without typed
        text = frame.game_event.json                                     # frames (Dou Dizhu)
    else:
        return None
    data: dict[str, Any] = json.loads(text or "{}")
    return data


def to_json(message: Message) -> dict[str, Any]:
    data: dict[str, Any] = json_format.MessageToDict(message, preserving_proto_field_name=True)
    return data


def all_event_ids() -> dict[str, int]:
    """Every client-protocol message name -> its event id (for docs and the uniqueness test)."""
    out: dict[str, int] = {}
    for frame in (client_pb2.ClientFrame, client_pb2.ServerFrame):
        for field in frame.DESCRIPTOR.oneofs_by_name["payload"].fields:
            out[field.message_type.full_name] = _event_id(field.message_type)
    return out


# -- ServerFrame bytes written by hand where the lobby sends them -----------------------------
# Two speed tricks of the lobby's session loop: a frame relayed to many sessions is serialized
# once, each session's bytes being its seq field and then that serialization
# (services/lobby/sessions.py Relayed), and a batch is written around its frames'
# serializations, nothing parsed or copied (services/lobby/session_loop.py). Both are byte
# for byte what protobuf writes (tests/unit/common/test_frames_wire.py); the field numbers
# and the batch's event id come from the generated descriptors, and a change of the protos
# that breaks what the tricks rely on stops the import here.

_VARINT, _LENGTH_DELIMITED = 0, 2        # protobuf wire types
_SERVER_FIELDS = client_pb2.ServerFrame.DESCRIPTOR.fields_by_name
_SEQ = _SERVER_FIELDS["seq"]
_EVENT_ID = _SERVER_FIELDS["event_id"]
_BATCH = _SERVER_FIELDS["batch"]
_FRAMES = client_pb2.ServerFrames.DESCRIPTOR.fields_by_name["frames"]


def _tag(field: FieldDescriptor, wire_type: int) -> bytes:
    return _varint(field.number << 3 | wire_type)


def _varint(n: int) -> bytes:
    """A non-negative integer as a protobuf varint."""
    if n < 0x80:
        return _SMALL[n]
    if n < 0x4000:      # most frames' lengths
        return bytes(((n & 0x7F) | 0x80, n >> 7))
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


_SMALL = [bytes((n,)) for n in range(0x80)]   # the one-byte varints, made once

# seq is written in front of a serialization without it: it must be the first field written
if _SEQ.type != FieldDescriptor.TYPE_UINT64 \
        or _SEQ.number != min(f.number for f in client_pb2.ServerFrame.DESCRIPTOR.fields):
    raise ImportError("ServerFrame.seq is no longer the uint64 field written first")
# a batch frame is its event id (written by protobuf) and then the batch field
if _BATCH.message_type is not client_pb2.ServerFrames.DESCRIPTOR \
        or _EVENT_ID.number > _BATCH.number or not _FRAMES.is_repeated \
        or _FRAMES.message_type is not client_pb2.ServerFrame.DESCRIPTOR:
    raise ImportError("ServerFrame.batch no longer follows event_id with repeated ServerFrame")

_SEQ_TAG = _tag(_SEQ, _VARINT)
_SEQ_SMALL = [b""] + [_SEQ_TAG + _SMALL[n] for n in range(1, 0x80)]
_BATCH_HEAD = client_pb2.ServerFrame(
    event_id=_event_id(client_pb2.ServerFrames.DESCRIPTOR)).SerializeToString() \
    + _tag(_BATCH, _LENGTH_DELIMITED)
_FRAME_TAG = _tag(_FRAMES, _LENGTH_DELIMITED)


def seq_field(seq: int) -> bytes:
    """``ServerFrame.seq = seq`` as protobuf writes it (nothing for 0, as proto3): put in
    front of a frame serialized without seq, it gives the frame's serialization with it."""
    if seq < 0x80:
        return _SEQ_SMALL[seq]
    return _SEQ_TAG + _varint(seq)


def encode_batch(wires: Sequence[bytes]) -> bytes:
    """The serialization of one ``ServerFrame`` whose ``batch`` holds the frames serialized
    as ``wires`` (each with its seq), in that order: what protobuf writes for it."""
    parts: list[bytes] = []
    for wire in wires:
        parts += (_FRAME_TAG, _varint(len(wire)), wire)
    inner = b"".join(parts)
    return b"".join((_BATCH_HEAD, _varint(len(inner)), inner))
