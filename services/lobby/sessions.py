"""Client sessions: a bounded outbound queue, the server sequence, the user and room it is
bound to. No I/O here; the session loop (session_loop.py) drives the stream.

An outbox holds the lobby's own frames (``ServerFrame`` objects) and frames relayed from
NATS (``Relayed``): those are parsed once per NATS message, whatever the number of sessions
they go to, and each session's bytes are its ``seq`` field followed by the frame's
serialization without seq (``ServerFrame.seq`` is the field a serializer writes first:
paiju.frames.seq_field), so a relayed frame is never copied, parsed or serialized per
session.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from typing import ClassVar, TypeAlias

from google.protobuf.message import DecodeError

from paiju.frames import seq_field
from paiju.v1 import client_pb2, table_pb2
from services.lobby import metrics

OUTBOX_LIMIT = 512


class Relayed:
    """A frame relayed from NATS to one or more sessions, shared by their outboxes.

    ``frame`` is the parsed frame (read-only, seq 0), ``body`` its serialization without
    seq; ``wire(seq)`` is what serializing the frame with that seq gives, byte for byte.
    ``json_body`` is a slot for the JSON WebSocket sessions: the frame's proto3 JSON without
    seq, made once by the first JSON session that sends it (services/lobby/ws.py)."""

    __slots__ = ("frame", "body", "event_id", "json_body")

    def __init__(self, frame: client_pb2.ServerFrame) -> None:
        if frame.seq:  # a frame never carries a session's seq into another session
            frame = _copy(frame)
            frame.seq = 0
        self.frame = frame
        # serialized once here, and not taken as received: this is canonical (seq absent,
        # fields in number order) whatever the publisher wrote
        self.body: bytes = frame.SerializeToString()
        self.event_id = frame.event_id
        self.json_body: str | None = None

    @classmethod
    def parse(cls, data: bytes) -> Relayed | None:
        """The relayed frame of a NATS payload, None if it is not a ServerFrame."""
        frame = parse_frame(data)
        return None if frame is None else cls(frame)

    def wire(self, seq: int) -> bytes:
        return seq_field(seq) + self.body


def parse_frame(data: bytes) -> client_pb2.ServerFrame | None:
    """A serialized ServerFrame (from NATS), None if it is not one."""
    frame = client_pb2.ServerFrame()
    try:
        frame.ParseFromString(data)
    except DecodeError:
        return None
    return frame


def _copy(frame: client_pb2.ServerFrame) -> client_pb2.ServerFrame:
    out = client_pb2.ServerFrame()
    out.CopyFrom(frame)
    return out


# an outbox item: the lobby's own frame (stamped in place when sent) or a shared relayed one
Outgoing: TypeAlias = client_pb2.ServerFrame | Relayed


class Outbox:
    """A bounded FIFO of frames for one client. ``push`` never blocks: a full queue means the
    client does not read, and the caller disconnects it. After ``close`` the frames already
    queued are still delivered, then ``next`` returns None."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = OUTBOX_LIMIT if limit is None else limit
        self._items: deque[Outgoing] = deque()
        self._wake = asyncio.Event()
        self.closed = False

    def push(self, frame: Outgoing, *, final: bool = False) -> bool:
        """Queue a frame; False if closed or full. ``final`` frames (a last error, a KickOut)
        may exceed the limit by design: they precede a close."""
        if self.closed or (len(self._items) >= self.limit and not final):
            return False
        self._items.append(frame)
        self._wake.set()
        return True

    def close(self, *, drop: bool = False) -> None:
        self.closed = True
        if drop:
            self._items.clear()
        self._wake.set()

    def __len__(self) -> int:
        return len(self._items)

    async def next(self) -> Outgoing | None:
        while not self._items:
            if self.closed:
                return None
            self._wake.clear()
            await self._wake.wait()
        return self._items.popleft()

    def take(self, most: int) -> list[Outgoing]:
        """Up to ``most`` frames already queued, without waiting (a batch's rest)."""
        items = self._items
        return [items.popleft() for _ in range(min(most, len(items)))]


@dataclass(eq=False)
class Session:
    """One client connection. ``user_id`` is 0 until login succeeds. Seated in a room, it is
    a member of the room's stream (streams.Member): its user's frames, in order."""

    spectator: ClassVar[bool] = False

    peer_ip: str = ""
    outbox: Outbox = field(default_factory=Outbox)
    session_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    user_id: int = 0
    profile: table_pb2.PlayerProfile = field(default_factory=table_pb2.PlayerProfile)
    room_id: int = 0
    seat: int = -1
    login_at: float = 0.0
    gen: int = 0                  # the login token's generation (tokens.py; 0: none)
    token_expiry: float = 0.0     # the login token's expiry (wall-clock seconds)
    token_id: str = ""            # tokens.token_id of the login token ("": legacy md5 login)
    last_seen: float = field(default_factory=time.monotonic)
    kicked: bool = False
    # told to reconnect (a drain, a room still moving): the player is coming back, so his
    # seat does not go offline (entrust would play his turns meanwhile); if he does not,
    # his turn timer runs out as for any slow player
    sent_away: bool = False
    seq: int = 0
    task: asyncio.Task[object] | None = None
    # the client reads ServerFrame.batch (Login.accept_batches): frames queued together
    # leave as one stream message
    batches: bool = False

    @property
    def logged_in(self) -> bool:
        return self.user_id != 0

    @property
    def session(self) -> Session:
        """The connection of this member of a room's stream: itself."""
        return self

    def out_of_room(self, room_id: int) -> None:
        """The room's stream is over for this session (the room closed, or the session could
        not be brought back in order): seated nowhere, if that was its room."""
        if self.room_id == room_id:
            self.room_id, self.seat = 0, -1

    def touch(self) -> None:
        self.last_seen = time.monotonic()

    def send(self, frame: Outgoing, *, final: bool = False) -> bool:
        """Queue a frame; a client whose queue is full is disconnected (never blocks)."""
        if self.outbox.push(frame, final=final):
            return True
        if not self.outbox.closed:
            metrics.SLOW_CLIENTS.inc()
            self.disconnect()
        return False

    def next_seq(self) -> int:
        """The next server sequence number of this session (one per frame sent)."""
        self.seq += 1
        return self.seq

    def close(self) -> None:
        """End the stream after the frames already queued."""
        self.outbox.close()

    def disconnect(self) -> None:
        """Drop everything and cancel the stream (a client that does not read)."""
        self.outbox.close(drop=True)
        if self.task is not None and self.task is not asyncio.current_task():
            self.task.cancel()
