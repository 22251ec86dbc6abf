"""Room-list changes for the sessions outside a room, derived from the ``rooms`` bucket
watch (rooms.py, ``RoomCache.apply_kv``) and coalesced over intervals of
``lobby.room_change_seconds``: a change in a quiet moment goes out at once and opens an
interval; the changes during it wait for its end and then go out together, the latest state
of each room winning. So the sessions outside a room get at most one RoomChange per room per
interval (a loop of creating and leaving rooms does not flood every idle client), and all
the rooms' changes of an interval in one go: one message per idle client when it reads
batches (Login.accept_batches), however many rooms changed, so their cost grows with the
number of idle clients and intervals, not with how busy the rooms are."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from paiju.v1 import lobby_msgs_pb2
from services.lobby import metrics


class RoomChanges:
    """Changes go to ``send`` a list at a time: the first of a quiet moment at once, the
    others of its interval (one per room, the latest) at the interval's end."""

    def __init__(self, seconds: float,
                 send: Callable[[list[lobby_msgs_pb2.RoomChange]], None]) -> None:
        self.seconds = seconds
        self.send = send
        self._pending: dict[int, lobby_msgs_pb2.RoomChange] = {}
        self._timer: asyncio.TimerHandle | None = None

    def offer(self, change: lobby_msgs_pb2.RoomChange) -> None:
        if self.seconds <= 0:
            self._send([change])
            return
        if self._timer is None:             # a quiet moment: out at once, an interval opens
            self._send([change])
            self._timer = asyncio.get_running_loop().call_later(self.seconds, self._flush)
            return
        room_id = change.room.room_id
        if room_id in self._pending:        # the latest state wins
            metrics.ROOM_CHANGES.labels("coalesced").inc()
        self._pending[room_id] = change

    def _flush(self) -> None:
        """The end of an interval: what changed meanwhile goes out, and, if anything did,
        the next interval opens (otherwise the next change finds a quiet moment)."""
        self._timer = None
        if not self._pending:
            return
        changes = list(self._pending.values())
        self._pending.clear()
        self._send(changes)
        self._timer = asyncio.get_running_loop().call_later(self.seconds, self._flush)

    def _send(self, changes: list[lobby_msgs_pb2.RoomChange]) -> None:
        metrics.ROOM_CHANGES.labels("relayed").inc(len(changes))
        self.send(changes)

    def __len__(self) -> int:
        return len(self._pending)

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._pending.clear()
