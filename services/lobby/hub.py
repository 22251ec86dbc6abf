"""The sessions of this lobby, by user and by room, and the NATS fan-out to them.

One subscription per room with local sessions (ref-counted) to ``room.<id>.events``, one per
logged-in user to ``user.<uid>.inbox``, and lobby-wide ``session.kick.*`` (one live session
per user across replicas) and ``lobby.rooms`` (room list changes).

A NATS message is parsed once (a payload that is not a ServerFrame is logged and dropped),
and the same ``Relayed`` object goes to every session it is for (sessions.py): no copy and
no serialization per session.
"""

from __future__ import annotations

import json
import logging
import time
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


class Hub:
    def __init__(self, nc: Client, cache: RoomCache) -> None:
        self.nc = nc
        self.cache = cache
        self.sessions: set[Session] = set()
        self.by_user: dict[int, Session] = {}
        self.by_room: dict[int, set[Session]] = {}
        self._room_subs: dict[int, Any] = {}
        self._inbox_subs: dict[int, Any] = {}
        self._subs: list[Any] = []

    async def start(self) -> None:
        self._subs.append(await self.nc.subscribe(KICK_ALL, cb=self._on_kick))
        self._subs.append(await self.nc.subscribe(bus.LOBBY_ROOMS, cb=self._on_room_change))

    async def stop(self) -> None:
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
        older = self.by_user.get(uid)
        if older is not None and older is not session:
            self.kick(older, "local")
        self.by_user[uid] = session
        if uid not in self._inbox_subs:
            self._inbox_subs[uid] = await self.nc.subscribe(bus.user_inbox(uid),
                                                            cb=self._on_inbox)
            await bus.sync(self.nc)  # live at the server before the user can act
        payload = {"session_id": session.session_id, "login_at": session.login_at}
        await self.nc.publish(bus.session_kick(uid), json.dumps(payload).encode())

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
        except (ValueError, KeyError, TypeError):
            log.warning("bad kick message", extra={"subject": msg.subject})
            return
        session = self.by_user.get(uid) if uid is not None else None
        if session is not None and session.session_id != newer_id \
                and session.login_at <= newer_at:
            self.kick(session, "remote")

    async def _on_room_change(self, msg: Msg) -> None:
        frame = parse_frame(msg.data)
        if frame is None or not frame.HasField("room_change"):
            log.warning("bad lobby.rooms message")
            return
        change = frame.room_change
        self.cache.apply_change(change)
        relay = Relayed(self.cache.relay_frame(change))   # serialized once for all sessions
        for session in list(self.sessions):
            if session.logged_in and not session.room_id:
                session.send(relay)


def _subject_id(subject: str, index: int) -> int | None:
    parts = subject.split(".")
    if len(parts) <= index or not (parts[index].isascii() and parts[index].isdigit()):
        return None
    return int(parts[index])
