"""One room's stream of events in position order, for the sessions of this lobby in it.

Pure: no I/O, no asyncio, no protobuf; the caller (streams.py) feeds it messages and
replies and runs its timers and refills. The contract is docs/ordered-events.md.

A table publishes one message per position ``(index, part)`` of a room's stream
(positions order lexicographically; ``part`` 0 of every index is always published, so the
indices are contiguous), and makes each ordered reply at a position. The orderer:

- delivers every message once, in position order: an early message (one after a missing
  position) waits in a bounded buffer, a duplicate or one at or before the position
  delivered so far is dropped;
- sees a gap (a message or a reply ahead of what the stream can deliver) and says since
  when it waits (:attr:`RoomOrderer.waiting`), so the caller can wait a moment for the late
  message and then refill the stream from the table (``events_since``), or take snapshots
  when the table cannot (:meth:`RoomOrderer.resync`);
- hands a reply made at position P to its session after every message up to P and before
  any later one: a reply ahead of the stream waits for it; a session whose command is on
  its way (:meth:`RoomOrderer.begin`) has the room's messages queued until the reply says
  where it stands;
- a session that joins at P (a join or snapshot reply) gets exactly the messages after P:
  those already delivered come from a bounded ring of recent messages;
- ``private`` frames go to the sessions of their user only.

Every collection is bounded: the early buffer, the ring, the held replies and each
session's queue (limits in the constructor).

What positions cannot show: how many parts an index has. A message at ``(i + 1, 0)`` that
arrives right after ``(i, p)`` is taken at once (one publisher's messages arrive in order);
one that arrived early is taken only after a refill says no ``(i, p + 1)`` exists. So a lost
*last* part of an index is not seen as a gap unless a refill comes (after a NATS reconnect,
when a subscription is confirmed, or for any other gap).
"""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

Position = tuple[int, int]          # (log index, part)
Member = TypeVar("Member", bound=Hashable)

BUFFER_LIMIT = 512      # early messages kept while a gap is open
RING_SIZE = 16          # recently delivered messages, for sessions joining behind the stream
#                         (a join answered a few messages behind; further back: a snapshot)
HELD_LIMIT = 1024       # replies waiting for the stream to reach them
QUEUE_LIMIT = 512       # messages queued for one session while its command is on its way


class Message:
    """One message of a room's stream: frames for everyone, frames for one user each
    (``private``: (user id, frame) pairs), ``closed`` on the room's last message."""

    __slots__ = ("position", "frames", "private", "closed")

    def __init__(self, position: Position, frames: Sequence[Any] = (),
                 private: Sequence[tuple[int, Any]] = (), closed: bool = False) -> None:
        self.position = position
        self.frames = frames
        self.private = private
        self.closed = closed

    def for_user(self, user_id: int) -> Sequence[Any]:
        if not self.private:
            return self.frames
        return [*self.frames, *(f for uid, f in self.private if uid == user_id)]


@dataclass
class _Seat(Generic[Member]):
    user_id: int
    since: Position | None        # gets the messages after this; None: waits for a snapshot
    pending: int = 0              # commands on their way (their reply's position unknown)
    queue: list[tuple[Position, Sequence[Any]]] = field(default_factory=list)
    leaving: bool = False


@dataclass(order=True)
class _Held:
    position: Position
    order: int
    member: Any = field(compare=False)
    frames: list[Any] = field(compare=False)
    kind: str = field(compare=False)          # "reply", "join", "leave"
    user_id: int = field(compare=False, default=0)


class RoomOrderer(Generic[Member]):
    """The ordered stream of one room at this lobby. ``send(member, frame)`` puts a frame
    in a session's outbox; ``now()`` is the clock of :attr:`waiting`."""

    def __init__(self, room_id: int, send: Callable[[Member, Any], object], *,
                 now: Callable[[], float], buffer_limit: int = BUFFER_LIMIT,
                 ring_size: int = RING_SIZE, held_limit: int = HELD_LIMIT,
                 queue_limit: int = QUEUE_LIMIT) -> None:
        self.room_id = room_id
        self._send = send
        self._now = now
        self.buffer_limit = buffer_limit
        self.held_limit = held_limit
        self.queue_limit = queue_limit
        self.delivered: Position | None = None     # the stream's position (None: no anchor)
        self._early: dict[Position, Message] = {}
        self._ring: deque[Message] = deque(maxlen=ring_size)
        self._ring_floor: Position | None = None   # the ring holds every message after this
        self._seats: dict[Member, _Seat[Member]] = {}
        self._held: list[_Held] = []
        self._order = 0
        self.waiting: float | None = None          # since when the stream waits for a gap
        self.overflowed = False                    # the buffer overflowed: refill at once
        self.closed = False                        # the room's last message was delivered
        self.dropped = 0                           # duplicates and stale messages
        self.want_snapshot: list[Member] = []      # sessions that need a fresh snapshot

    # -- what the caller asks ---------------------------------------------------------------

    @property
    def members(self) -> list[Member]:
        return list(self._seats)

    def member(self, member: Member) -> bool:
        return member in self._seats

    def involves(self, member: Member) -> bool:
        """A member, or a reply (a join) waits for it."""
        return member in self._seats or any(h.member == member for h in self._held)

    @property
    def empty(self) -> bool:
        """Nobody to deliver to and no reply waiting: the room can be forgotten here."""
        return not self._seats and not self._held

    def buffered(self) -> int:
        return len(self._early)

    def held(self) -> int:
        return len(self._held)

    # -- messages ---------------------------------------------------------------------------

    def offer(self, message: Message) -> None:
        """A message from NATS or from a refill: delivered, buffered or dropped. One
        that comes right after the stream's position is delivered at once. One that came
        early waits; when the gap closes, a waiting message of the same index follows at
        once, but one of the next index only after a refill has said that no later part
        of this index exists (positions alone cannot tell)."""
        pos = message.position
        delivered = self.delivered
        if delivered is not None:
            if pos <= delivered:
                self.dropped += 1
                return
            index, part = delivered
            if pos == (index, part + 1) or pos == (index + 1, 0):   # the usual case
                self._deliver(message)
                if self._early or self._held or self.waiting is not None:
                    self._advance()
                return
        if pos in self._early:
            self.dropped += 1
            return
        if len(self._early) >= self.buffer_limit:
            # the missing message is not coming: start again from a refill (or snapshots)
            self._early.clear()
            self.overflowed = True
        self._early[pos] = message
        self._advance()

    def _advance(self, trusted: bool = False) -> None:
        if self.delivered is None:
            self._note_waiting()
            return
        while self._early:
            first = min(self._early)
            if first <= self.delivered:        # behind an anchor set meanwhile
                del self._early[first]
                self.dropped += 1
                continue
            index, part = self.delivered
            if first != (index, part + 1) and not (trusted and first == (index + 1, 0)):
                break
            self._deliver(self._early.pop(first))
        self._release_held()
        self._note_waiting()

    def _deliver(self, message: Message) -> None:
        pos = self.delivered = message.position
        ring = self._ring
        ring.append(message)
        if self._ring_floor is None:
            self._ring_floor = pos
        elif len(ring) == ring.maxlen:
            self._ring_floor = ring[0].position
        shared = None if message.private else message.frames   # the same for everyone
        send = self._send
        for member, seat in self._seats.items():   # (sending never changes the members)
            since = seat.since
            if since is None or pos <= since:
                continue
            if seat.pending and not seat.leaving:
                self._to_member(member, seat, message)
                continue
            for frame in shared if shared is not None else message.for_user(seat.user_id):
                send(member, frame)
        if self._held:
            self._release_held()
        if message.closed:
            self.closed = True

    def _to_member(self, member: Member, seat: _Seat[Member], message: Message) -> None:
        if seat.since is None or message.position <= seat.since:
            return
        frames = message.for_user(seat.user_id)
        if seat.pending and not seat.leaving:
            if len(seat.queue) < self.queue_limit:
                seat.queue.append((message.position, frames))
                return
            self._flush_queue(member, seat)   # too long a wait: stop holding this one
            seat.pending = 0
        for frame in frames:
            self._send(member, frame)

    def _flush_queue(self, member: Member, seat: _Seat[Member],
                     upto: Position | None = None) -> None:
        keep = []
        for pos, frames in seat.queue:
            if upto is None or pos <= upto:
                for frame in frames:
                    self._send(member, frame)
            else:
                keep.append((pos, frames))
        seat.queue = keep

    def _note_waiting(self) -> None:
        blocked = self.delivered is not None and (bool(self._early) or bool(self._held))
        if blocked and self.waiting is None:
            self.waiting = self._now()
        elif not blocked:
            self.waiting = None

    def progressed(self) -> None:
        """The caller tried a refill: measure the wait again from now."""
        self.waiting = None
        self._note_waiting()

    # -- sessions and replies ---------------------------------------------------------------

    def join(self, member: Member, user_id: int, position: Position,
             frames: Sequence[Any]) -> None:
        """``member`` joined (or took a snapshot) at ``position``: ``frames`` (the reply,
        with the room's state at that position) go out when the stream is there, then
        every message after it."""
        self._anchor(position)
        assert self.delivered is not None
        if position > self.delivered:
            self._hold(position, member, list(frames), "join", user_id)
            self._note_waiting()
            return
        seat = self._seats.get(member)
        pending = seat.pending if seat is not None else 0   # (its queue is in the ring too)
        for frame in frames:
            self._send(member, frame)
        if self._ring_floor is not None and position < self._ring_floor \
                and position < self.delivered:
            # too far behind for the ring: a fresh snapshot (until then nothing)
            self._seats[member] = _Seat(user_id, None, pending)
            self.want_snapshot.append(member)
            return
        seat = self._seats[member] = _Seat(user_id, position, pending)
        for message in self._ring:
            if message.position > position:
                self._to_member(member, seat, message)

    def begin(self, member: Member) -> None:
        """A command of ``member`` is on its way: the room's messages wait for its reply."""
        seat = self._seats.get(member)
        if seat is not None:
            seat.pending += 1

    def reply(self, member: Member, position: Position | None, frames: Sequence[Any], *,
              leave: bool = False) -> None:
        """The reply to ``member``'s command (after :meth:`begin`), made at ``position``
        (None: unordered, delivered at once). ``leave``: the member left the room there."""
        seat = self._seats.get(member)
        if seat is not None and seat.pending:
            seat.pending -= 1
        if seat is None and position is not None and self.involves(member):
            # its join waits for the stream: this answer comes after it, in order
            self._hold(position, member, list(frames), "leave" if leave else "reply")
            return
        if position is None or seat is None:
            if seat is not None:
                self._flush_queue(member, seat)
            for frame in frames:
                self._send(member, frame)
            if leave:
                self._seats.pop(member, None)
            return
        self._anchor(position)
        assert self.delivered is not None
        if position > self.delivered:
            self._flush_queue(member, seat)       # all at or before the stream: before P
            seat.leaving = seat.leaving or leave
            self._hold(position, member, list(frames), "leave" if leave else "reply")
            self._note_waiting()
            return
        self._flush_queue(member, seat, position)
        for frame in frames:
            self._send(member, frame)
        if leave:
            self._seats.pop(member, None)
        elif not seat.pending:
            self._flush_queue(member, seat)

    def cancel(self, member: Member) -> None:
        """``member``'s command got no reply (it failed): stop holding its messages."""
        seat = self._seats.get(member)
        if seat is not None and seat.pending:
            seat.pending -= 1
            if not seat.pending:
                self._flush_queue(member, seat)

    def leave(self, member: Member) -> None:
        """``member`` is gone from the room now (its session ended, or the room is gone)."""
        self._seats.pop(member, None)
        self._held = [h for h in self._held if h.member != member]
        self._note_waiting()

    def _anchor(self, position: Position) -> None:
        if self.delivered is None:
            self.delivered = position
            self._ring_floor = position
            self._advance()

    def _hold(self, position: Position, member: Member, frames: list[Any], kind: str,
              user_id: int = 0) -> None:
        if len(self._held) >= self.held_limit:    # never lose an answer: the oldest goes now
            oldest = self._held.pop(0)
            self._release(oldest)
        self._order += 1
        bisect.insort(self._held, _Held(position, self._order, member, frames, kind, user_id))

    def _release_held(self) -> None:
        while self._held and self.delivered is not None \
                and self._held[0].position <= self.delivered:
            self._release(self._held.pop(0))

    def _release(self, held: _Held) -> None:
        member = held.member
        if held.kind == "join":
            self.join(member, held.user_id, held.position, held.frames)
            return
        seat = self._seats.get(member)
        if seat is not None:
            self._flush_queue(member, seat, held.position)
        for frame in held.frames:
            self._send(member, frame)
        if held.kind == "leave":
            self._seats.pop(member, None)
        elif seat is not None and not seat.pending:
            self._flush_queue(member, seat)

    # -- refills ----------------------------------------------------------------------------

    def refill(self, messages: Sequence[Message]) -> None:
        """The table's messages after :attr:`delivered` (``events_since``), oldest first."""
        for message in messages:         # in order: each comes right after the last
            self.offer(message)
        self._advance(trusted=True)           # the table's stream goes no further here
        self.overflowed = False
        self.progressed()

    def resync(self) -> list[Member]:
        """The table cannot refill (its ring does not reach back): every held reply goes out
        now, the stream starts again from the next anchor, and every member waits for a
        fresh snapshot (the members returned: ask one for each)."""
        held, self._held = self._held, []
        for item in held:
            if item.kind == "join":
                self._seats[item.member] = _Seat(item.user_id, None)
                for frame in item.frames:
                    self._send(item.member, frame)
                continue
            for frame in item.frames:
                self._send(item.member, frame)
            if item.kind == "leave":
                self._seats.pop(item.member, None)
        for member, seat in self._seats.items():
            self._flush_queue(member, seat)
            seat.since, seat.pending = None, 0
        self.delivered = None
        self._ring.clear()
        self._ring_floor = None
        self.overflowed = False
        self.waiting = None
        self.want_snapshot = []
        return list(self._seats)
