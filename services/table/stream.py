"""One room's ordered event stream: positions, the messages, and a ring of recent ones.

Every message a room sends is a ``RoomEvents`` at a position ``(index, part)``
(docs/ordered-events.md): ``index`` is the room-log record the room stands at, part 0 is
what that record caused (published even when it caused nothing, so the indexes a lobby
sees are contiguous), parts 1, 2, ... are later sends at the same record (prompts). A reply
to a command is stamped with the position the room stood at when it was made, and the
lobby delivers by position. The ring answers a lobby that missed messages
(``events_since``); when it no longer reaches back that far the lobby asks snapshots.

The ring keeps the messages serialized (the bytes that were published): compact, never
walked by the garbage collector, and parsed again only for a refill, which is rare (a lobby
refills a gap it has waited 0.3 s for, so a few dozen records reach back far enough).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from paiju.v1 import client_pb2, table_pb2

RING_SIZE = 64

Position = tuple[int, int]


class Kept:
    """A message in the ring: its position and its serialization."""

    __slots__ = ("index", "part", "data")

    def __init__(self, index: int, part: int, data: bytes) -> None:
        self.index, self.part, self.data = index, part, data


class RoomStream:
    """Positions and recent messages of one room (owned by its actor: one writer)."""

    __slots__ = ("room_id", "index", "part", "ring", "_last")

    def __init__(self, room_id: int, index: int = -1, ring_size: int = RING_SIZE) -> None:
        self.room_id = room_id
        self.index = index      # the last record folded (-1: none yet)
        self.part = 0
        self.ring: deque[Kept] = deque(maxlen=ring_size)
        self._last: tuple[table_pb2.RoomEvents | None, bytes] = (None, b"")

    @property
    def position(self) -> Position:
        return self.index, self.part

    def record(self, index: int, public: Iterable[client_pb2.ServerFrame],
               private: Iterable[tuple[int, client_pb2.ServerFrame]],
               closed: bool = False) -> table_pb2.RoomEvents:
        """The message of record ``index`` (part 0)."""
        if index <= self.index:
            raise ValueError(f"record {index} is not after {self.index}")
        self.index, self.part = index, 0
        return self._message(public, private, closed)

    def follow_up(self, public: Iterable[client_pb2.ServerFrame],
                  private: Iterable[tuple[int, client_pb2.ServerFrame]]) -> table_pb2.RoomEvents:
        """A later send at the record the room stands at (the next part)."""
        self.part += 1
        return self._message(public, private, False)

    def _message(self, public: Iterable[client_pb2.ServerFrame],
                 private: Iterable[tuple[int, client_pb2.ServerFrame]],
                 closed: bool) -> table_pb2.RoomEvents:
        msg = table_pb2.RoomEvents(room_id=self.room_id, index=self.index, part=self.part,
                                   frames=public, closed=closed)
        for user_id, frame in private:
            msg.private.add(user_id=user_id).frame.CopyFrom(frame)
        data = msg.SerializeToString()
        self.ring.append(Kept(self.index, self.part, data))
        self._last = (msg, data)
        return msg

    def data(self, msg: table_pb2.RoomEvents) -> bytes:
        """``msg`` serialized: the bytes the ring keeps when it is the last message made."""
        last, data = self._last
        return data if last is msg else msg.SerializeToString()

    def since(self, index: int, part: int) -> list[table_pb2.RoomEvents] | None:
        """The messages after position ``(index, part)``, oldest first; None when the ring
        does not reach back that far (the caller needs a snapshot instead)."""
        after = (index, part)
        if after >= self.position:
            return []
        if not self.ring:
            return None
        first = self.ring[0]
        if len(self.ring) == self.ring.maxlen:
            # older messages were dropped: only a position the ring still holds is safe
            covered = after >= (first.index, first.part)
        else:
            # the ring holds all this table sent; before it, another owner's records
            covered = after[0] >= first.index - 1
        if not covered:
            return None
        return [table_pb2.RoomEvents.FromString(m.data) for m in self.ring
                if (m.index, m.part) > after]
