"""The sessions of this lobby, by user and by room, and the NATS fan-out to them.

One subscription per room with local sessions (ref-counted) to ``room.<id>.events``, one per
logged-in user to ``user.<uid>.inbox``, and lobby-wide ``session.kick.*`` (one live session
per user across replicas) and ``lobby.rooms`` (room list changes).

A NATS message is parsed once (a payload that is not a ServerFrame is logged and dropped),
and the same ``Relayed`` object goes to every session it is for (sessions.py): no copy and
no serialization per session.

Room-list changes are coalesced (:class:`RoomChanges`): the sessions outside a room get at
most one RoomChange per room per ``lobby.room_change_seconds``, the latest state winning, so
a loop of creating and leaving rooms does not flood every idle client.

A login names its token's generation (tokens.py, 0 without one) in ``session.kick.<uid>``;
every lobby remembers the newest generation of each user it heard of (:class:`Generations`),
refuses a login with an older one, and a session of a newer generation is never kicked by
an older one: its lobby announces it again, which kicks the older session wherever it is.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from typing import Any

from nats.aio.client import Client
from nats.aio.msg import Msg

from paiju.frames import server_frame
from paiju.v1 import lobby_msgs_pb2
from services.common import bus
from services.lobby import metrics
from services.lobby.rooms import RoomCache
from services.lobby.sessions import Relayed, Session, parse_frame

log = logging.getLogger("paiju.lobby.hub")

KICK_ALL = "session.kick.*"


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


class Generations:
    """The newest token generation of each user this lobby heard of (its logins and every
    lobby's ``session.kick``), kept until that token expires."""

    def __init__(self) -> None:
        self._newest: dict[int, tuple[int, float]] = {}   # uid -> (generation, expiry)
        self._next_sweep = 0.0

    def newest(self, user_id: int, now: float | None = None) -> int:
        now = time.time() if now is None else now
        known = self._newest.get(user_id)
        if known is None:
            return 0
        if known[1] <= now:
            del self._newest[user_id]
            return 0
        return known[0]

    def note(self, user_id: int, gen: int, expiry: float, now: float | None = None) -> None:
        now = time.time() if now is None else now
        self._sweep(now)
        if gen <= 0 or expiry <= now:
            return
        known = self._newest.get(user_id)
        if known is None or gen > known[0]:
            self._newest[user_id] = (gen, expiry)
        elif gen == known[0] and expiry > known[1]:
            self._newest[user_id] = (gen, expiry)

    def _sweep(self, now: float) -> None:
        if now < self._next_sweep:
            return
        self._next_sweep = now + 60.0
        for uid in [u for u, (_, expiry) in self._newest.items() if expiry <= now]:
            del self._newest[uid]

    def __len__(self) -> int:
        return len(self._newest)


class Hub:
    def __init__(self, nc: Client, cache: RoomCache, *, room_change_seconds: float = 1.0) -> None:
        self.nc = nc
        self.cache = cache
        self.sessions: set[Session] = set()
        self.by_user: dict[int, Session] = {}
        self.by_room: dict[int, set[Session]] = {}
        self.generations = Generations()
        self.room_changes = RoomChanges(room_change_seconds, self._relay_room_change)
        self._room_subs: dict[int, Any] = {}
        self._inbox_subs: dict[int, Any] = {}
        self._subs: list[Any] = []

    async def start(self) -> None:
        self._subs.append(await self.nc.subscribe(KICK_ALL, cb=self._on_kick))
        self._subs.append(await self.nc.subscribe(bus.LOBBY_ROOMS, cb=self._on_room_change))

    async def stop(self) -> None:
        self.room_changes.close()
        for sub in [*self._subs, *self._room_subs.values(), *self._inbox_subs.values()]:
            await sub.unsubscribe()
        self._subs.clear()
        self._room_subs.clear()
        self._inbox_subs.clear()

    # -- sessions -------------------------------------------------------------------------

    def add(self, session: Session) -> None:
        self.sessions.add(session)
        metrics.SESSIONS.set(len(self.sessions))

    async def bind(self, session: Session) -> None:
        """Make ``session`` the user's live session here and everywhere: kick the older local
        one, subscribe the user's inbox, tell the other lobbies."""
        uid = session.user_id
        self.generations.note(uid, session.gen, session.token_expiry)
        older = self.by_user.get(uid)
        if older is not None and older is not session:
            self.kick(older, "local")
        self.by_user[uid] = session
        if uid not in self._inbox_subs:
            self._inbox_subs[uid] = await self.nc.subscribe(bus.user_inbox(uid),
                                                            cb=self._on_inbox)
            await bus.sync(self.nc)  # live at the server before the user can act
        await self.announce(session)

    async def announce(self, session: Session) -> None:
        """Tell every lobby that ``session`` is the user's newest (session.kick.<uid>)."""
        payload = {"session_id": session.session_id, "login_at": session.login_at,
                   "gen": session.gen, "expiry": session.token_expiry}
        await self.nc.publish(bus.session_kick(session.user_id), json.dumps(payload).encode())

    async def remove(self, session: Session) -> None:
        """Forget a finished session: its user binding, room and inbox subscriptions."""
        self.sessions.discard(session)
        metrics.SESSIONS.set(len(self.sessions))
        await self.leave_room(session)
        uid = session.user_id
        if uid and self.by_user.get(uid) is session:
            del self.by_user[uid]
            sub = self._inbox_subs.pop(uid, None)
            if sub is not None:
                await sub.unsubscribe()

    def kick(self, session: Session, origin: str) -> None:
        """Close a session replaced by a newer login (顶号): KickOut, then end the stream."""
        if session.kicked:
            return
        session.kicked = True
        metrics.KICKS.labels(origin).inc()
        session.send(server_frame(lobby_msgs_pb2.KickOut(user_id=session.user_id)), final=True)
        session.close()

    # -- rooms ----------------------------------------------------------------------------

    async def enter_room(self, session: Session, room_id: int, seat: int) -> None:
        if session.room_id == room_id:
            session.seat = seat
            return
        await self.leave_room(session)
        session.room_id, session.seat = room_id, seat
        members = self.by_room.setdefault(room_id, set())
        members.add(session)
        if room_id not in self._room_subs:
            self._room_subs[room_id] = await self.nc.subscribe(bus.room_events(room_id),
                                                               cb=self._on_room_event)
            await bus.sync(self.nc)  # live at the server before the next command reaches a table

    async def leave_room(self, session: Session) -> None:
        room_id = session.room_id
        if not room_id:
            return
        session.room_id, session.seat = 0, -1
        members = self.by_room.get(room_id)
        if members is not None:
            members.discard(session)
            if not members:
                del self.by_room[room_id]
                sub = self._room_subs.pop(room_id, None)
                if sub is not None:
                    await sub.unsubscribe()

    def table_addresses(self) -> set[str]:
        """The owners' addresses of the rooms this lobby's sessions are in (as far as the
        room cache knows): the table links these sessions still need."""
        out = set()
        for room_id in self.by_room:
            entry = self.cache.get(room_id)
            if entry is not None and entry.address:
                out.add(entry.address)
        return out

    # -- NATS callbacks -------------------------------------------------------------------

    async def _on_room_event(self, msg: Msg) -> None:
        relayed = Relayed.parse(msg.data)
        room_id = _subject_id(msg.subject, 1)
        if relayed is None or room_id is None:
            log.warning("bad room event", extra={"subject": msg.subject})
            return
        members = list(self.by_room.get(room_id, ()))
        for session in members:
            session.relay_room_event(relayed)
        frame = relayed.frame
        notice = frame.notice_dismiss if frame.HasField("notice_dismiss") else None
        if notice is not None and notice.dismissed and notice.room_id in (0, room_id):
            for session in members:
                await self.leave_room(session)

    async def _on_inbox(self, msg: Msg) -> None:
        relayed = Relayed.parse(msg.data)
        uid = _subject_id(msg.subject, 1)
        session = self.by_user.get(uid) if uid is not None else None
        if relayed is None:
            log.warning("bad inbox event", extra={"subject": msg.subject})
        elif session is not None:
            session.send(relayed)

    async def _on_kick(self, msg: Msg) -> None:
        uid = _subject_id(msg.subject, 2)
        try:
            data = json.loads(msg.data)
            newer_id = str(data["session_id"])
            newer_at = float(data.get("login_at", time.time()))
            newer_gen = int(data.get("gen") or 0)
            expiry = float(data.get("expiry") or 0)
        except (ValueError, KeyError, TypeError, AttributeError):
            log.warning("bad kick message", extra={"subject": msg.subject})
            return
        if uid is None:
            return
        self.generations.note(uid, newer_gen, expiry)
        session = self.by_user.get(uid)
        if session is None or session.session_id == newer_id or session.kicked:
            return
        if newer_gen < session.gen:
            # a login with an older token got in somewhere (a lobby that had not heard of
            # ours): this session stands, and saying so again kicks the other one
            log.info("older token generation logged in elsewhere: announcing the newer",
                     extra={"user": uid, "gen": session.gen, "other_gen": newer_gen})
            await self.announce(session)
        elif newer_gen > session.gen or session.login_at <= newer_at:
            self.kick(session, "remote")

    async def _on_room_change(self, msg: Msg) -> None:
        frame = parse_frame(msg.data)
        if frame is None or not frame.HasField("room_change"):
            log.warning("bad lobby.rooms message")
            return
        change = frame.room_change
        self.cache.apply_change(change)
        self.room_changes.offer(change)

    def _relay_room_change(self, change: lobby_msgs_pb2.RoomChange) -> None:
        relay = Relayed(self.cache.relay_frame(change))   # serialized once for all sessions
        for session in list(self.sessions):
            if session.logged_in and not session.room_id:
                session.send(relay)


def _subject_id(subject: str, index: int) -> int | None:
    parts = subject.split(".")
    if len(parts) <= index or not (parts[index].isascii() and parts[index].isdigit()):
        return None
    return int(parts[index])
