"""Room-list changes for the sessions outside a room, derived from the ``rooms`` bucket
watch (rooms.py, ``RoomCache.apply_kv``) and coalesced: the sessions outside a room get at
most one RoomChange per room per ``lobby.room_change_seconds``, the latest state winning, so
a loop of creating and leaving rooms does not flood every idle client."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from paiju.v1 import lobby_msgs_pb2
from services.lobby import metrics


class RoomChanges:
    """At most one RoomChange per room per ``seconds`` goes to ``send``: the first at once,
    the later ones of the same interval replaced by the latest and sent at its end."""

    def __init__(self, seconds: float,
                 send: Callable[[lobby_msgs_pb2.RoomChange], None]) -> None:
        self.seconds = seconds
        self.send = send
        self._last: dict[int, float] = {}           # room -> when its last change went out
        self._pending: dict[int, lobby_msgs_pb2.RoomChange] = {}
        self._timers: dict[int, asyncio.TimerHandle] = {}
        self._next_sweep = 0.0

    def offer(self, change: lobby_msgs_pb2.RoomChange) -> None:
        room_id = change.room.room_id
        if self.seconds <= 0:
            self._send(change)
            return
        loop = asyncio.get_running_loop()
        now = loop.time()
        if room_id in self._pending:        # one is waiting: the latest state wins
            self._pending[room_id] = change
            metrics.ROOM_CHANGES.labels("coalesced").inc()
            return
        last = self._last.get(room_id)
        if last is None or now - last >= self.seconds:
            self._last[room_id] = now
            self._sweep(now)
            self._send(change)
            return
        self._pending[room_id] = change
        self._timers[room_id] = loop.call_at(last + self.seconds, self._flush, room_id)

    def _flush(self, room_id: int) -> None:
        self._timers.pop(room_id, None)
        change = self._pending.pop(room_id, None)
        if change is not None:
            self._last[room_id] = asyncio.get_running_loop().time()
            self._send(change)

    def _send(self, change: lobby_msgs_pb2.RoomChange) -> None:
        metrics.ROOM_CHANGES.labels("relayed").inc()
        self.send(change)

    def _sweep(self, now: float) -> None:
        """Forget the rooms whose last change is older than the interval (once per one)."""
        if now < self._next_sweep:
            return
        self._next_sweep = now + self.seconds
        for room_id in [r for r, at in self._last.items()
                        if now - at >= self.seconds and r not in self._pending]:
            del self._last[room_id]

    def __len__(self) -> int:
        return len(self._last)

    def close(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        self._pending.clear()
