"""What a room's parts (commands.py, automation.py) see of the room's actor (actor.py):
the reply to a command, and the actor as a protocol, so the parts need not import it."""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

from paiju.v1 import client_pb2, table_pb2
from services.table import logrec as lr
from services.table.room import Room
from services.table.stream import Position, RoomStream
from services.table.views import Effects


class Reply:
    """What a command answers to its sender."""

    __slots__ = ("code", "message", "frames", "position", "overtaken")

    def __init__(self, code: int = 0, message: str = "ok",
                 frames_: list[client_pb2.ServerFrame] | None = None, *,
                 overtaken: bool = False) -> None:
        self.code, self.message, self.frames = code, message, frames_ or []
        self.overtaken = overtaken   # refused only because the game moved on
        # where the room's stream stood when the reply was made (None: not made by the
        # room, e.g. it had moved away): the lobby delivers it after the messages up to there
        self.position: Position | None = None


Inbox = asyncio.Queue[tuple[str, Any, "asyncio.Future[Reply] | None"]]


class Actor(Protocol):
    """The room's single writer: its state, its stream and inbox, and the one way to change
    the room (a record: appended, folded, published)."""

    room: Room
    stream: RoomStream
    inbox: Inbox

    async def record(self, rec: lr.Record) -> Effects: ...

    async def publish(self, fx: Effects, msg: table_pb2.RoomEvents) -> None: ...
