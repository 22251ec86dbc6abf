"""Client sessions: a bounded outbound queue, the server sequence, the user and room it is
bound to, and the per-user chat rate limit. No I/O here; the server drives the stream."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import deque
from dataclasses import dataclass, field

from paiju.v1 import client_pb2, table_pb2
from services.lobby import metrics

OUTBOX_LIMIT = 512


class Outbox:
    """A bounded FIFO of frames for one client. ``push`` never blocks: a full queue means the
    client does not read, and the caller disconnects it. After ``close`` the frames already
    queued are still delivered, then ``next`` returns None."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = OUTBOX_LIMIT if limit is None else limit
        self._items: deque[client_pb2.ServerFrame] = deque()
        self._wake = asyncio.Event()
        self.closed = False

    def push(self, frame: client_pb2.ServerFrame, *, final: bool = False) -> bool:
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

    async def next(self) -> client_pb2.ServerFrame | None:
        while not self._items:
            if self.closed:
                return None
            self._wake.clear()
            await self._wake.wait()
        return self._items.popleft()


@dataclass(eq=False)
class Session:
    """One client connection. ``user_id`` is 0 until login succeeds."""

    peer_ip: str = ""
    outbox: Outbox = field(default_factory=Outbox)
    session_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    user_id: int = 0
    profile: table_pb2.PlayerProfile = field(default_factory=table_pb2.PlayerProfile)
    room_id: int = 0
    seat: int = -1
    login_at: float = 0.0
    last_seen: float = field(default_factory=time.monotonic)
    kicked: bool = False
    seq: int = 0
    task: asyncio.Task[object] | None = None

    @property
    def logged_in(self) -> bool:
        return self.user_id != 0

    def touch(self) -> None:
        self.last_seen = time.monotonic()

    def send(self, frame: client_pb2.ServerFrame, *, final: bool = False) -> bool:
        """Queue a frame; a client whose queue is full is disconnected (never blocks)."""
        if self.outbox.push(frame, final=final):
            return True
        if not self.outbox.closed:
            metrics.SLOW_CLIENTS.inc()
            self.disconnect()
        return False

    def stamp(self, frame: client_pb2.ServerFrame) -> client_pb2.ServerFrame:
        """Give an outgoing frame the next server sequence number of this session."""
        self.seq += 1
        frame.seq = self.seq
        return frame

    def close(self) -> None:
        """End the stream after the frames already queued."""
        self.outbox.close()

    def disconnect(self) -> None:
        """Drop everything and cancel the stream (a client that does not read)."""
        self.outbox.close(drop=True)
        if self.task is not None and self.task is not asyncio.current_task():
            self.task.cancel()


class RateLimiter:
    """At most ``limit`` events per ``window`` seconds per key (a sliding window).

    A key is remembered only while it has events inside the window: a key's expired events
    go when it is used again, and once per ``window`` a sweep drops every key whose last
    event has left the window, so the state is bounded by the keys active lately (not by
    every user who ever chatted)."""

    def __init__(self, limit: int, window: float = 60.0) -> None:
        self.limit = limit
        self.window = window
        self._events: dict[int, deque[float]] = {}
        self._next_sweep = float("-inf")

    def __len__(self) -> int:
        """The keys remembered."""
        return len(self._events)

    def allow(self, key: int, now: float | None = None) -> bool:
        now = time.monotonic() if now is None else now
        self.sweep(now)
        times = self._events.get(key)
        if times is not None:
            while times and times[0] <= now - self.window:
                times.popleft()
        if len(times or ()) >= self.limit:
            return False
        if times is None:
            times = self._events[key] = deque()
        times.append(now)
        return True

    def sweep(self, now: float | None = None, *, force: bool = False) -> None:
        """Forget the keys with no event inside the window (at most once per window, unless
        ``force``)."""
        now = time.monotonic() if now is None else now
        if now < self._next_sweep and not force:
            return
        self._next_sweep = now + self.window
        cutoff = now - self.window
        for key in [k for k, times in self._events.items() if not times or times[-1] <= cutoff]:
            del self._events[key]
