"""The rooms that sessions of this lobby are in: one ordered stream each (ordering.py) fed
by ``room.<id>.events``, its chat from ``room.<id>.chat``, and the refills that close its
gaps. The contract is docs/ordered-events.md.

A room's subscriptions are made when a session is about to join it (before the join goes
to the table, so nothing after the join's position is missed) and undone when nobody here
is in it any more. No barrier waits for a subscription: a message the table publishes
before the subscription is live at NATS is found missing and refilled, like any other
gap. Since that can be a room's last message (no later one shows the gap), a room's
stream is refilled once after its subscription is confirmed by the server, and every room
is refilled after a NATS reconnect.

A room's members (:class:`Member`) are its seated sessions (sessions.Session) and the
sessions' watches (watching.Watcher). Refills and snapshots come from the room's owner
through :class:`TableAccess` (the app). A refill that fails is tried again with a growing
pause; a table that cannot refill (``resync``) gets a snapshot request per member. A
member that cannot be brought back in order, or whose room ended before this lobby delivered
its last messages, is told to log in again (its client learns from the LoginOk whether it
still sits there): a seated client is never left waiting for a room that says nothing more.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from nats.aio.client import Client
from nats.aio.msg import Msg

from paiju.v1 import common_pb2, table_pb2
from services.common import bus
from services.lobby import metrics
from services.lobby.ordering import Position, RoomOrderer
from services.lobby.room_messages import message_of, parse_room_events, position_of, subject_id
from services.lobby.sessions import Outgoing, Relayed, Session, parse_frame

log = logging.getLogger("paiju.lobby.streams")

GAP_WAIT = 0.3          # seconds a gap waits for its late message before a refill
REFILL_LONGEST = 5.0    # the longest pause between two refills that failed
RESYNC_AFTER = 4        # refills failed in a row before the members get snapshots instead
SNAPSHOT_TRIES = 4      # snapshot requests for one member before it is told to reconnect
RECONNECT_CHECK = 0.25  # seconds between two looks at the NATS connection's reconnects


class Member(Hashable, Protocol):
    """A member of a room's stream: a session seated in the room (sessions.Session), or a
    session's watch of it (watching.Watcher)."""

    @property
    def user_id(self) -> int:
        """The room's ``private`` frames of this user id go to it (a watch: -1, none)."""

    @property
    def session(self) -> Session:
        """The client connection it belongs to (its commands to the table go as this
        session's)."""

    @property
    def spectator(self) -> bool:
        """A watch: its fresh view of the room is the public one (``kind="watch"``), and when
        it cannot be brought back in order it just ends (a seated session reconnects)."""

    def send(self, frame: Outgoing) -> bool:
        """A frame of the room's stream, in order (False: its session is gone)."""

    def out_of_room(self, room_id: int) -> None:
        """The room's stream is over for it (the room closed, or it could not be brought
        back in order): no longer seated, or watching, there."""


class TableAccess(Protocol):
    """What the streams ask the room's owner (services/lobby/app.py)."""

    async def events_since(self, room_id: int, since: Position) -> table_pb2.TableReply: ...

    async def snapshot(self, member: Member, room_id: int) -> table_pb2.TableReply:
        """A fresh view of the room for ``member``, at a position of the room's stream."""

    def lost(self, member: Member, room_id: int) -> None:
        """``member`` could not be brought back into the room's order."""


def _send(member: Member, frame: Outgoing) -> bool:
    return member.send(frame)


@dataclass(eq=False)
class RoomStream:
    """One room at this lobby: its orderer, subscriptions and refill state."""

    room_id: int
    orderer: RoomOrderer[Member]
    subs: list[Any] = field(default_factory=list)
    timer: asyncio.TimerHandle | None = None
    refilling: asyncio.Task[None] | None = None
    failures: int = 0
    joining: int = 0             # joins and resumes on their way (see RoomStreams.open)
    # the subscription: "waiting" for the server's confirmation, refill "due" once the
    # stream has a position, "done"
    confirm: str = "waiting"


class RoomStreams:
    def __init__(self, nc: Client, table: TableAccess, *, gap_wait: float = GAP_WAIT) -> None:
        self.nc = nc
        self.table = table
        self.gap_wait = gap_wait
        self.rooms: dict[int, RoomStream] = {}
        self._of: dict[Member, set[int]] = {}     # a member's rooms here
        self._tasks: set[asyncio.Task[Any]] = set()
        self._reconnects = 0

    # -- rooms ------------------------------------------------------------------------------

    async def open(self, room_id: int) -> RoomStream:
        """The room's stream for a join or a resume on its way, subscribed now if it was not
        (no wait for the server); kept until :meth:`release` says the answer is in."""
        room = self.rooms.get(room_id)
        if room is not None:
            room.joining += 1
            return room
        loop = asyncio.get_running_loop()
        orderer: RoomOrderer[Member] = RoomOrderer(room_id, _send, now=loop.time)
        room = self.rooms[room_id] = RoomStream(room_id, orderer, joining=1)
        try:
            room.subs.append(await self.nc.subscribe(bus.room_events(room_id), cb=self._on_events))
            room.subs.append(await self.nc.subscribe(bus.room_chat(room_id), cb=self._on_chat))
        except BaseException:
            await self._drop(room)
            raise
        self._spawn(self._confirm(room))
        return room

    async def _confirm(self, room: RoomStream) -> None:
        """Once the server has the subscription (and a moment for a cluster to spread it),
        refill: a message published before it was live is found even if it was the last."""
        try:
            await bus.sync(self.nc)
            await asyncio.sleep(self.gap_wait)
        except Exception as exc:  # NATS away: the reconnect refill will come
            log.info("subscription not confirmed", extra={"room": room.room_id,
                                                          "error": repr(exc)})
        room.confirm = "due"
        if self.rooms.get(room.room_id) is room:
            self._after(room)

    def table_addresses(self, owner: Callable[[int], str]) -> set[str]:
        """The owners' addresses (``owner(room_id)``, "" unknown) of the rooms here."""
        return {a for a in (owner(r) for r in self.rooms) if a}

    def sessions_in_rooms(self) -> int:
        """The rooms' members here (seated sessions and watches)."""
        return sum(len(r.orderer.members) for r in self.rooms.values())

    # -- members and replies ----------------------------------------------------------------

    def join(self, member: Member, room_id: int, reply: table_pb2.TableReply,
             frames: Sequence[Outgoing]) -> None:
        """``member`` is in the room from the reply's position on (a join, a watch or a
        snapshot): ``frames`` go out at that position, then every later message."""
        room = self.rooms.get(room_id)
        if room is None:      # not opened (a caller error): deliver, nothing to follow
            for frame in frames:
                member.send(frame)
            return
        position = position_of(reply)
        if position is None:   # a table answers every command of the room at a position
            raise ValueError(f"room {room_id}: the table's reply to a join carries no "
                             "position in the room's stream")
        # the rooms it is still in here, and this one (left rooms are forgotten now)
        self._of[member] = {r for r in self._of.get(member, ()) if r in self.rooms
                            and self.rooms[r].orderer.involves(member)} | {room_id}
        room.orderer.join(member, member.user_id, position, list(frames))
        self._after(room)

    def begin(self, session: Session, room_id: int) -> None:
        room = self.rooms.get(room_id)
        if room is not None:
            room.orderer.begin(session)

    def reply(self, session: Session, room_id: int, reply: table_pb2.TableReply | None,
              frames: Sequence[Outgoing], *, leave: bool = False) -> None:
        """The answer to a command of ``session`` about ``room_id`` (after :meth:`begin`):
        at its position in the room's stream, or at once (unordered, or no reply at all);
        ``leave``: the session is no longer in the room from that position on."""
        room = self.rooms.get(room_id)
        if room is None:
            for frame in frames:
                session.send(frame)
            return
        position = position_of(reply) if reply is not None else None
        room.orderer.reply(session, position, list(frames), leave=leave)
        self._after(room)

    def cancel(self, session: Session, room_id: int) -> None:
        room = self.rooms.get(room_id)
        if room is not None:
            room.orderer.cancel(session)

    async def leave(self, member: Member, room_id: int | None = None) -> None:
        """``member`` is out of ``room_id`` now (None: of every room here)."""
        rooms = self._of.pop(member, set()) if room_id is None else {room_id}
        if room_id is not None and member in self._of:
            self._of[member].discard(room_id)
        for rid in rooms:
            room = self.rooms.get(rid)
            if room is not None:
                room.orderer.leave(member)
                await self._close_if_empty(room)

    async def release(self, room_id: int) -> None:
        """The answer to a join or resume (:meth:`open`) is in (after :meth:`join`, or
        without one when refused): a room nobody here is in is forgotten."""
        room = self.rooms.get(room_id)
        if room is not None:
            room.joining = max(0, room.joining - 1)
            await self._close_if_empty(room)

    async def close_if_empty(self, room_id: int) -> None:
        room = self.rooms.get(room_id)
        if room is not None:
            await self._close_if_empty(room)

    async def _close_if_empty(self, room: RoomStream) -> None:
        if room.orderer.empty and not room.joining and self.rooms.get(room.room_id) is room:
            await self._drop(room)

    async def _drop(self, room: RoomStream) -> None:
        if self.rooms.get(room.room_id) is room:
            del self.rooms[room.room_id]
        if room.timer is not None:
            room.timer.cancel()
        if room.refilling is not None:
            room.refilling.cancel()
        for sub in room.subs:
            try:
                await sub.unsubscribe()
            except Exception:  # the connection is gone: so is the subscription
                log.debug("unsubscribe failed", exc_info=True)
        room.subs.clear()

    # -- NATS -----------------------------------------------------------------------------

    async def _on_events(self, msg: Msg) -> None:
        room_id = subject_id(msg.subject, 1)
        room = self.rooms.get(room_id) if room_id is not None else None
        if room is None:
            return
        message = parse_room_events(room.room_id, msg.data)
        if message is None:
            log.warning("bad room events", extra={"subject": msg.subject})
            return
        room.orderer.offer(message)
        self._after(room)

    async def _on_chat(self, msg: Msg) -> None:
        room_id = subject_id(msg.subject, 1)
        room = self.rooms.get(room_id) if room_id is not None else None
        frame = parse_frame(msg.data)
        if frame is None or not frame.HasField("chat"):
            log.warning("bad chat message", extra={"subject": msg.subject})
            return
        if room is not None:
            relayed = Relayed(frame)
            for member in room.orderer.members:
                member.send(relayed)

    # -- after every change: closed rooms, snapshots wanted, gaps -------------------------

    def _after(self, room: RoomStream) -> None:
        orderer = room.orderer
        if orderer.closed:
            self._closed(room)
            return
        if orderer.want_snapshot:
            wanted, orderer.want_snapshot = orderer.want_snapshot, []
            for member in wanted:
                self._spawn(self._snapshot(room, member))
        if room.confirm == "due" and orderer.delivered is not None:
            room.confirm = "done"
            self._refill_now(room)
        elif orderer.overflowed and room.refilling is None:
            self._refill_now(room)
        elif orderer.waiting is not None and room.timer is None and room.refilling is None:
            loop = asyncio.get_running_loop()
            due = orderer.waiting + self.gap_wait
            room.timer = loop.call_at(due, self._gap_due, room)
        if orderer.empty and not room.joining:
            self._spawn(self._close_if_empty(room))

    def _closed(self, room: RoomStream) -> None:
        """The room's last message went out: its members are out of it here."""
        for member in room.orderer.resync():
            self._out(room, member)
        self._spawn(self._drop(room))

    def _gone(self, room: RoomStream) -> None:
        """The room is no more, and this lobby never delivered its last messages (the last
        hand's end, the dismissal): they went while its NATS connection was away (a
        reconnect, a node cut off from its cluster), or they wait behind a gap that no table
        refilled before the room ended (its table cut off, the room adopted and played to
        its end while the refills failed). Its seated members never saw it end, and nothing
        more will come: each is told to log in again (TableAccess.lost), and the LoginOk
        without a room tells its client that the room ended while it was away
        (docs/protocol.md, "Reconnect and snapshots"); a watch just ends."""
        members = room.orderer.resync()
        log.info("room gone before its last messages were delivered here: its members log "
                 "in again", extra={"room": room.room_id, "members": len(members)})
        for member in members:
            self._out(room, member, told=True)
        self._spawn(self._drop(room))

    def _out(self, room: RoomStream, member: Member, *, told: bool = False) -> None:
        """``member`` is out of the room here; ``told``: it did not see the room to its end
        (nor will), so it logs in again (TableAccess.lost)."""
        room.orderer.leave(member)
        member.out_of_room(room.room_id)
        if told:
            self.table.lost(member, room.room_id)

    def _gap_due(self, room: RoomStream) -> None:
        room.timer = None
        if self.rooms.get(room.room_id) is not room:
            return
        waiting = room.orderer.waiting
        if waiting is None:
            return
        if asyncio.get_running_loop().time() - waiting < self.gap_wait:
            self._after(room)   # the wait started again meanwhile
            return
        self._refill_now(room)

    def _refill_now(self, room: RoomStream) -> None:
        if room.refilling is None and room.orderer.delivered is not None:
            room.refilling = self._spawn(self._refill(room))

    async def _refill(self, room: RoomStream) -> None:
        since = room.orderer.delivered
        assert since is not None
        metrics.REFILLS.labels("asked").inc()
        try:
            reply = await self.table.events_since(room.room_id, since)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            reply = None
            log.info("refill failed", extra={"room": room.room_id, "error": repr(exc)})
        room.refilling = None
        if self.rooms.get(room.room_id) is not room:
            return
        if reply is not None and reply.code == common_pb2.ERR_NO_SUCH_ROOM:
            self._gone(room)        # gone, its last messages not delivered here
            return
        if reply is None or reply.code:
            room.failures += 1
            metrics.REFILLS.labels("failed").inc()
            if room.failures >= RESYNC_AFTER:   # held answers wait no longer: snapshots
                self._resync(room)
                return
            room.orderer.progressed()
            if room.timer is not None:
                room.timer.cancel()
            pause = min(REFILL_LONGEST, self.gap_wait * 2 ** room.failures)
            room.timer = asyncio.get_running_loop().call_later(pause, self._retry, room)
            return
        room.failures = 0
        if reply.resync:
            self._resync(room)
            return
        room.orderer.refill([message_of(room.room_id, e) for e in reply.events])
        self._after(room)

    def _retry(self, room: RoomStream) -> None:
        room.timer = None
        if self.rooms.get(room.room_id) is room:
            self._refill_now(room)

    def _resync(self, room: RoomStream) -> None:
        """The stream cannot be refilled: held answers go out, each member gets a fresh
        snapshot, and the stream starts again from it."""
        metrics.REFILLS.labels("resync").inc()
        room.failures = 0
        for member in room.orderer.resync():
            self._spawn(self._snapshot(room, member))
        self._after(room)

    async def _snapshot(self, room: RoomStream, member: Member) -> None:
        """A fresh snapshot for a member whose stream could not be refilled, tried a few
        times; a member it cannot bring back is told to reconnect (and resumes)."""
        for attempt in range(SNAPSHOT_TRIES):
            try:
                reply: table_pb2.TableReply | None = await self.table.snapshot(
                    member, room.room_id)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                reply = None
                log.info("snapshot for a resync failed", extra={"room": room.room_id,
                                                                "error": repr(exc)})
            if self.rooms.get(room.room_id) is not room or member.session.outbox.closed \
                    or not room.orderer.member(member):
                return
            if reply is not None and reply.code == 0 and reply.room_id == room.room_id:
                self.join(member, room.room_id, reply, list(reply.frames))
                return
            if reply is not None and (reply.code in (common_pb2.ERR_NO_SUCH_ROOM,
                                                     common_pb2.ERR_NOT_IN_ROOM)
                                      or reply.code == 0):
                # not in the room any more (it ended, or the seat went, while its messages
                # did not come here): told as well, or its client would wait for ever
                log.info("member no longer in the room it was resynced in: told to "
                         "reconnect", extra={"room": room.room_id,
                                             "user": member.session.user_id,
                                             "code": reply.code})
                break
            await asyncio.sleep(min(REFILL_LONGEST, self.gap_wait * 2 ** attempt))
        else:
            log.warning("member not brought back in order: told to reconnect",
                        extra={"room": room.room_id, "user": member.session.user_id})
        self._out(room, member, told=True)
        await self._close_if_empty(room)

    def entry_deleted(self, room_id: int) -> None:
        """The room's directory entry went while members are still here: a room that
        ends normally has delivered its last message by now (its table publishes it before
        deleting the entry), so the stream is refilled once. A room that ended unheard, or
        that its table took for lost (no log), is then found gone (:meth:`_gone`): its
        members are told, rather than wait for a room that says nothing more."""
        room = self.rooms.get(room_id)
        if room is not None:
            self._refill_now(room)

    def refill_all(self) -> None:
        """Every room's stream refilled (after a NATS reconnect: what was published while
        the connection was down is gone, and a refill asked before may wait for an answer
        that went with the old connection: it is asked again now, not after its bound)."""
        for room in list(self.rooms.values()):
            room.orderer.progressed()
            if room.refilling is not None:
                room.refilling.cancel()
                room.refilling = None
            self._refill_now(room)

    async def follow_reconnects(self) -> None:
        """Refill every room after each NATS reconnect, until cancelled."""
        self._reconnects = int(self.nc.stats.get("reconnects", 0))
        while True:
            await asyncio.sleep(RECONNECT_CHECK)
            count = int(self.nc.stats.get("reconnects", 0))
            if count != self._reconnects and self.nc.is_connected:
                self._reconnects = count
                log.info("nats reconnected: refilling every room",
                         extra={"rooms": len(self.rooms)})
                self.refill_all()

    # -- lifecycle --------------------------------------------------------------------------

    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        task: asyncio.Task[Any] = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def stop(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        for room in list(self.rooms.values()):
            await self._drop(room)
        self._of.clear()
