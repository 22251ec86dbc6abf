"""A room's NATS messages as the orderer (ordering.py) takes them: a ``RoomEvents`` payload
parsed once, each frame made ready to relay to every session it is for (sessions.Relayed),
and where a table reply stands in the room's stream."""

from __future__ import annotations

from google.protobuf.message import DecodeError

from paiju.v1 import table_pb2
from services.lobby.ordering import Message, Position
from services.lobby.sessions import Relayed


def parse_room_events(room_id: int, data: bytes) -> Message | None:
    """A ``room.<id>.events`` payload as a message of the room's stream (each frame made
    ready to relay once for all sessions); None when it is not a RoomEvents of this room."""
    events = table_pb2.RoomEvents()
    try:
        events.ParseFromString(data)
    except DecodeError:
        return None
    if events.room_id not in (0, room_id):
        return None
    return message_of(room_id, events)


def message_of(room_id: int, events: table_pb2.RoomEvents) -> Message:
    private = [(p.user_id, Relayed(p.frame)) for p in events.private] if events.private else ()
    return Message((events.index, events.part), [Relayed(f) for f in events.frames], private,
                   events.closed)


def position_of(reply: table_pb2.TableReply) -> Position | None:
    """Where an ordered reply was made; None for one to deliver at once."""
    return (reply.index, reply.part) if reply.ordered else None


def subject_id(subject: str, index: int) -> int | None:
    parts = subject.split(".")
    if len(parts) <= index or not (parts[index].isascii() and parts[index].isdigit()):
        return None
    return int(parts[index])
