"""Spectators (观战): a session watching a room it does not sit in (docs/services.md,
"Spectators").

``WatchRoom {room_id}`` asks the owning table for a ``kind="watch"`` command: the table
counts the watcher (``RoomInfo.spectators`` in the room list) and answers the public view
(``RoomJoined`` with seat -1, the hand's public ``MjGameInfo``/``DdGameInfo``), made at a
position of the room's stream. The session then follows the room's stream (streams.py) as a
:class:`Watcher`: a member of the stream (streams.Member) of its own whose user id is -1, so
the orderer gives it the ``frames`` every session gets and never a ``private`` one (no user
id is negative). The app's :class:`Watches` holds each session's watch. With
``lobby.spectator_delay`` = N > 0 each frame is held until the room's stream is N log
positions further on (at most ``MAX_HOLD_SECONDS``; all at once when the room has closed):
a watcher cannot relay a live game.

A watcher sits nowhere (``session.room_id`` stays 0): every seated command is refused
``ERR_SPECTATOR``. ``StopWatching``, joining or creating a room, a new watch, or the end of the
session stop it (``kind="unwatch"`` to the table). One room at a time. A watch whose room's
stream cannot be brought back in order (no snapshot after a resync) ends; a watch whose room
closes ends after the room's last frames (the held ones go at once).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from paiju.frames import error_frame, event_id_of, ok_frame, payload_of
from paiju.seated import LobbyKind
from paiju.v1 import client_pb2, common_pb2
from services.lobby.errors import Reject
from services.lobby.sessions import Outgoing, Session
from services.lobby.streams import RoomStreams

# services.lobby.app.LobbyApp (which imports this module: no import back, not even for types)
LobbyApp = Any

log = logging.getLogger("paiju.lobby.watching")

MAX_HOLD_SECONDS = 30.0     # a delayed frame waits at most this long (a quiet room)
TICK_SECONDS = 1.0          # how often held frames are looked at while some wait

Position = tuple[int, int]


class Watcher:
    """One session's membership of a watched room's stream (a streams.Member): public
    frames only (user id -1), sent to the session at once or ``delay`` log positions late.
    ``position`` and ``closed`` read the room's stream."""

    spectator = True

    def __init__(self, session: Session, room_id: int, delay: int,
                 position: Callable[[], Position | None],
                 closed: Callable[[], bool] = lambda: False) -> None:
        self.session = session
        self.watching = room_id
        self.user_id = -1           # private frames are for user ids; none is negative
        self.delay = delay
        self._position = position
        self._closed = closed       # the room's last message went out: nothing to hide
        self.held: deque[tuple[int, float, Outgoing]] = deque()
        self._timer: asyncio.TimerHandle | None = None

    def _index(self) -> int:
        position = self._position()
        return position[0] if position is not None else 0

    def send(self, frame: Outgoing) -> bool:
        """A frame of the room's stream for this watcher (from the orderer)."""
        if self.delay <= 0:
            return self.session.send(frame)
        self.held.append((self._index(), time.monotonic(), frame))
        self.release()
        return True

    def release(self, now: float | None = None) -> None:
        """Send the held frames the stream has left ``delay`` positions behind, or that
        waited ``MAX_HOLD_SECONDS``."""
        now = time.monotonic() if now is None else now
        current = self._index()
        held = self.held
        over = self._closed()
        while held and (over or held[0][0] + self.delay <= current
                        or now - held[0][1] >= MAX_HOLD_SECONDS):
            self.session.send(held.popleft()[2])
        if held and self._timer is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                return
            self._timer = loop.call_later(TICK_SECONDS, self._tick)

    def _tick(self) -> None:
        self._timer = None
        if not self.session.outbox.closed:
            self.release()

    def out_of_room(self, room_id: int) -> None:
        """The room's stream is over for this watch: after the room's last frames (all of
        them now), or at once when the stream could not bring it back in order."""
        if self._closed():
            self.release()
        self.end()

    def end(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.held.clear()


class Watches:
    """The watches of one lobby's sessions, one each (the app's, so that two lobbies in one
    process keep theirs apart). A watch is kept until :func:`stop` forgets it, at the latest
    when its session ends, even after its room's stream ended it (the table is told then)."""

    def __init__(self, streams: RoomStreams) -> None:
        self._streams = streams
        self._of: dict[Session, Watcher] = {}

    def __contains__(self, session: Session) -> bool:
        return session in self._of

    def add(self, watcher: Watcher) -> None:
        self._of[watcher.session] = watcher

    def pop(self, session: Session) -> Watcher | None:
        return self._of.pop(session, None)

    def live(self, session: Session) -> Watcher | None:
        """The session's live watch: kept and still in its room's stream (a room that
        closed meanwhile ended it)."""
        watcher = self._of.get(session)
        if watcher is None:
            return None
        room = self._streams.rooms.get(watcher.watching)
        if room is None or not room.orderer.involves(watcher):
            return None
        return watcher


def request_event_id(frame: client_pb2.ClientFrame) -> int:
    payload = payload_of(frame)
    return event_id_of(payload) if payload is not None else frame.event_id


def refuse_if_watching(app: LobbyApp, session: Session) -> None:
    """A command of a seated player from a watcher: ERR_SPECTATOR."""
    if app.watches.live(session) is not None:
        raise Reject(common_pb2.ERR_SPECTATOR, "spectators cannot act: join the room first")


async def watch_room(app: LobbyApp, session: Session, frame: client_pb2.ClientFrame) -> None:
    room_id = frame.watch_room.room_id
    if room_id <= 0:
        raise Reject(common_pb2.ERR_BAD_FRAME, "room_id is required")
    if session.room_id:
        raise Reject(common_pb2.ERR_ALREADY_IN_ROOM,
                     f"seated in room {session.room_id}: leave it to watch another")
    await stop(app, session)
    address = await app.owner_address(room_id, fresh=True)
    room = await app.streams.open(room_id)
    watcher = Watcher(session, room_id, app.lobby.spectator_delay,
                      lambda: room.orderer.delivered, lambda: room.orderer.closed)
    try:
        reply = await app.forward(session, kind=LobbyKind.WATCH, room_id=room_id, address=address)
    except BaseException:
        await app.streams.release(room_id)
        raise
    if reply.code or reply.room_id != room_id or not session.logged_in \
            or session.outbox.closed:
        await app.streams.release(room_id)
        session.send(error_frame(reply.code or common_pb2.ERR_NO_SUCH_ROOM,
                                 reply.message or f"room {room_id} cannot be watched",
                                 request_event_id=request_event_id(frame), reply_to=frame.seq))
        return
    frames = list(reply.frames)
    for out in frames:
        out.reply_to = frame.seq
    # the room as it stands goes at once; the hand's view waits like every later frame
    for out in frames:
        if out.HasField("room_joined"):
            session.send(out)
    app.watches.add(watcher)
    app.streams.join(watcher, room_id, reply,
                     [f for f in frames if not f.HasField("room_joined")])
    await app.streams.release(room_id)


async def stop_watching(app: LobbyApp, session: Session,
                        frame: client_pb2.ClientFrame) -> None:
    await stop(app, session)
    session.send(ok_frame(request_event_id(frame), reply_to=frame.seq))


async def stop(app: LobbyApp, session: Session, *, tell: bool = True) -> bool:
    """End the session's watch, if any (the table is told unless ``tell`` is off)."""
    watcher = app.watches.pop(session)
    if watcher is None:
        return False
    watcher.end()
    await app.streams.leave(watcher)   # out of its room, forgotten
    if tell:
        try:
            await app.forward(session, kind=LobbyKind.UNWATCH, room_id=watcher.watching)
        except Reject as exc:
            log.info("unwatch not delivered", extra={"room": watcher.watching,
                                                     "error": exc.message})
    return True

