"""The lobby's resources and their lifecycle: NATS, the directory and its room cache, the
records client, the room streams, the sessions (health, drain, silence, login deadline),
and sending one command of a session to the owning table (forwarding.py)."""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from nats.aio.client import Client
from nats.js.kv import KV_DEL, KV_PURGE

from paiju.frames import error_frame, server_frame
from paiju.seated import LobbyKind
from paiju.v1 import client_pb2, common_pb2, lobby_msgs_pb2, table_pb2
from services.common import bus, tls
from services.common.config import Config
from services.common.tasks import cancel_and_wait
from services.lobby import metrics, watching
from services.lobby.directory import Directory
from services.lobby.errors import Reject
from services.lobby.forwarding import Forwarder
from services.lobby.hub import Hub
from services.lobby.limits import Admission, Limits, RateLimiter
from services.lobby.matchmaker import Matchmaking, SeatMatched
from services.lobby.moderation import Mutes
from services.lobby.records_client import RecordsClient
from services.lobby.room_changes import RoomChanges
from services.lobby.rooms import RoomCache
from services.lobby.sessions import Relayed, Session
from services.lobby.streams import Member, RoomStreams
from services.lobby.table_link import KEEPALIVE

log = logging.getLogger("paiju.lobby")

RECONNECT_SPREAD_MS = 1000   # clients told to reconnect wait a random 0..this many ms
RESUME_AGAIN_MS = 500        # a client whose room is still moving logs in again after this
CLOSE_GRACE = 2.0            # a closed session whose stream is still there this long is cut
# The directory buckets may not exist yet when the lobby starts (a fresh namespace whose
# tables have not created them, and a lobby whose NATS user may not): the lobby serves, not
# ready, and opens them again after OPEN_FIRST seconds, doubling up to OPEN_LONGEST.
OPEN_FIRST = 0.5
OPEN_LONGEST = 5.0


class LobbyApp:
    def __init__(self, cfg: Config, nc: Client, directory: Directory,
                 records: RecordsClient, seat_matched: SeatMatched | None = None) -> None:
        self.cfg = cfg
        self.lobby = cfg.lobby
        self.nc = nc
        self.directory = directory
        self.records = records
        self.cache = RoomCache()
        self.rooms_watch: Any = None   # the rooms bucket's watch now open (_watch_rooms)
        self.hub = Hub(nc)
        self.mutes = Mutes(nc)   # operators' chat mutes (moderation.py)
        # match tickets and the matcher (matchmaker.py); seat_matched seats a matched session
        self.matchmaking = Matchmaking(self, seat_matched)
        self.streams = RoomStreams(nc, self)
        self.watches = watching.Watches(self.streams)   # the sessions' watches (spectators)
        self.forwarder = Forwarder(directory, self.cache)
        self.room_changes = RoomChanges(cfg.lobby.room_change_seconds, self._relay_room_change)
        self.chat_limit = RateLimiter(cfg.lobby.chat_per_minute, 60.0)
        self.limits = Limits(cfg.lobby)
        self.admission = Admission(cfg.lobby.max_connections_per_ip, cfg.lobby.max_connections)
        self.directory_open = asyncio.Event()   # the buckets are open and followed
        self.draining = False      # stopping: no new session, every client told to reconnect
        # user -> (room, when), oldest first: a seat's room its snapshot found closed after
        # LoginOk had named it; the user's next LoginOk leaves it out (login.py)
        self.gone_seats: OrderedDict[int, tuple[int, float]] = OrderedDict()
        self.watch: Any = None     # services.common.health.DependencyWatch, once serving
        self.on_ready_change: Callable[[], Awaitable[None]] | None = None   # health, once serving
        self._tasks: set[asyncio.Task[Any]] = set()
        self._offlines: set[asyncio.Task[Any]] = set()  # "offline" notices on their way

    @classmethod
    async def open(cls, cfg: Config, *, wait_directory: bool = True,
                   seat_matched: SeatMatched | None = None) -> LobbyApp:
        """Connect to NATS and open the directory. ``wait_directory=False`` returns after
        the first try even when the directory buckets could not be opened (the lobby is then
        not ready, and keeps trying with a backoff: :meth:`_open_directory`)."""
        nc = await bus.connect(cfg.nats, "lobby")   # URL and credentials (files)
        # mutual TLS as the lobby to tables and records when internal TLS is on
        directory = Directory(ttl=cfg.table.lease_ttl_seconds,
                              dial=lambda address: tls.channel(cfg, address, "table", KEEPALIVE),
                              nc=nc)
        records = RecordsClient(cfg.records.dial, cfg=cfg)
        app = cls(cfg, nc, directory, records, seat_matched)
        try:
            await app.hub.start()
            await app.mutes.start()
        except BaseException:
            await app.close()
            raise
        app.spawn(app._sweep())
        app.spawn(app.streams.follow_reconnects())
        tried = asyncio.Event()
        opening = app.spawn(app._open_directory(tried))
        try:
            await (opening if wait_directory else tried.wait())
        except BaseException:
            await app.close()
            raise
        return app

    async def _open_directory(self, tried: asyncio.Event) -> None:
        """Open the directory buckets, again and again with a backoff until it works
        (``tried`` is set after the first try), then follow the ``rooms`` and ``tables``
        buckets."""
        pause = OPEN_FIRST
        while True:
            try:
                await self.directory.attach(self.nc.jetstream(), replicas=self.cfg.nats.replicas)
                break
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("directory buckets not available yet, trying again",
                            extra={"error": repr(exc), "seconds": pause})
            tried.set()
            await asyncio.sleep(pause)
            pause = min(pause * 2, OPEN_LONGEST)
        self.spawn(self._watch_rooms())
        self.spawn(self.directory.follow_tables())
        await self._open_matchmaking()
        self.directory_open.set()
        tried.set()
        log.info("directory open")
        if self.on_ready_change is not None:
            await self.on_ready_change()

    async def _open_matchmaking(self) -> None:
        try:
            await self.matchmaking.attach(self.nc.jetstream(), replicas=self.cfg.nats.replicas)
        except Exception as exc:   # the rest of the lobby serves; AskMatch is ERR_UNAVAILABLE
            log.warning("match bucket not available", extra={"error": repr(exc)})

    async def close(self) -> None:
        await self.matchmaking.resign()
        await cancel_and_wait(*self._tasks)
        self.room_changes.close()
        await self.streams.stop()
        await self.hub.stop()
        await self.mutes.stop()
        await self.directory.close()
        await self.records.close()
        await bus.drain(self.nc)

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # -- health and drain -----------------------------------------------------------------

    @property
    def ready(self) -> bool:
        """Takes new clients: not draining, every dependency (NATS) reachable now, and the
        directory open."""
        return (not self.draining and (self.watch is None or self.watch.ready)
                and self.directory_open.is_set())

    @property
    def live(self) -> bool:
        """No dependency down for longer than ``nats.liveness_seconds``."""
        return self.watch is None or self.watch.live

    def tell_reconnect(self, session: Session, reason: str, *, least_ms: int = 0) -> None:
        """A final Reconnect frame (after a random spread, so clients do not all come back
        at once), then the session's stream ends."""
        after = least_ms + random.randint(0, RECONNECT_SPREAD_MS)
        session.sent_away = True
        session.send(server_frame(lobby_msgs_pb2.Reconnect(reason=reason, after_ms=after)),
                     final=True)
        session.close()

    async def drain(self, seconds: float | None = None) -> None:
        """Stop taking clients and send each live one away (a lobby that stops): every
        session gets a Reconnect frame and its stream ends; wait up to ``seconds``
        (``lobby.drain_seconds``) for the streams to end and for the "offline" notices of
        their seated users to reach the tables (a user who is back on another lobby first is
        safe: the table ignores an offline of an older session)."""
        self.draining = True
        seconds = self.lobby.drain_seconds if seconds is None else seconds
        deadline = asyncio.get_running_loop().time() + seconds
        sessions = [s for s in self.hub.sessions if not s.outbox.closed]
        for session in sessions:
            self.tell_reconnect(session, "draining")
        log.info("draining", extra={"sessions": len(sessions), "seconds": seconds})
        while self.hub.sessions and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.02)
        left = deadline - asyncio.get_running_loop().time()
        if self._offlines:
            await asyncio.wait(set(self._offlines), timeout=max(0.5, left))
        if self.hub.sessions:
            log.warning("sessions still open after the drain",
                        extra={"sessions": len(self.hub.sessions)})

    # -- forwarding to tables -------------------------------------------------------------

    @property
    def move_seconds(self) -> float:
        """How long a command follows a moving room (forwarding.py)."""
        return self.forwarder.move_seconds

    @move_seconds.setter
    def move_seconds(self, seconds: float) -> None:
        self.forwarder.move_seconds = seconds

    async def owner_address(self, room_id: int, *, fresh: bool = False) -> str:
        return await self.forwarder.owner_address(room_id, fresh=fresh)

    async def forward(self, session: Session, *, frame: client_pb2.ClientFrame | None = None,
                      kind: LobbyKind | None = None, room_id: int = 0, address: str = "",
                      with_profile: bool = False) -> table_pb2.TableReply:
        """The owning table's reply to one command of ``session`` (following the room while
        it moves between tables). Where the session is (its room, its stream) is the
        caller's to update from the reply (seating.py)."""
        room_id = room_id or session.room_id
        # the session identity lets the table ignore a late "offline" of a replaced session
        cmd = table_pb2.TableCommand(room_id=room_id, user_id=session.user_id, kind=kind or "",
                                     session_id=session.session_id, login_at=session.login_at)
        if frame is not None:
            cmd.frame.CopyFrom(frame)
        if with_profile:
            cmd.profile.CopyFrom(session.profile)
        return await self.forwarder.command(room_id, cmd, address)

    # -- what the room streams ask the tables (streams.TableAccess) -----------------------

    async def events_since(self, room_id: int, since: tuple[int, int]) -> table_pb2.TableReply:
        cmd = table_pb2.TableCommand(room_id=room_id, kind=LobbyKind.EVENTS_SINCE,
                                     since_index=since[0], since_part=since[1])
        return await self.forwarder.command(room_id, cmd)

    async def snapshot(self, member: Member, room_id: int) -> table_pb2.TableReply:
        """The seat's view of the room, or a spectator's public view (another watch)."""
        kind = LobbyKind.WATCH if member.spectator else LobbyKind.SNAPSHOT
        return await self.forward(member.session, kind=kind, room_id=room_id)

    def lost(self, member: Member, room_id: int) -> None:
        """A seated session whose room's stream could not be restored, or whose room ended
        before this lobby delivered its last messages, logs in again: it resumes its seat (as
        when its room is still moving at login), or its LoginOk without a room says the room
        ended while it was away. A spectator's watch just ends (Member.out_of_room)."""
        if not member.spectator:
            self.tell_reconnect(member.session, "room_moving", least_ms=RESUME_AGAIN_MS)

    def table_addresses(self) -> set[str]:
        """The owners' addresses of the rooms this lobby's sessions are in (as far as the
        room cache knows): the table links these sessions still need."""
        def owner(room_id: int) -> str:
            entry = self.cache.get(room_id)
            return entry.address if entry is not None else ""
        return self.streams.table_addresses(owner)

    # -- session lifecycle ----------------------------------------------------------------

    async def session_ended(self, session: Session) -> None:
        """The stream is over: forget the session; a seated user goes offline at the table
        unless a newer login replaced this session."""
        room_id = session.room_id
        self.hub.remove(session)
        await self.streams.leave(session)
        if session in self.watches:   # the table counts one watcher less
            self.spawn(watching.stop(self, session))
        if session.logged_in and not room_id and not session.kicked and not session.sent_away:
            self.spawn(self.matchmaking.session_gone(session))
        if session.logged_in and room_id and not session.kicked and not session.sent_away:
            task = self.spawn(self._offline(session, room_id))
            self._offlines.add(task)
            task.add_done_callback(self._offlines.discard)

    async def _offline(self, session: Session, room_id: int) -> None:
        try:
            reply = await self.forward(session, kind=LobbyKind.OFFLINE, room_id=room_id)
            if reply.code:
                log.info("table refused offline", extra={"user": session.user_id,
                                                         "code": reply.code})
        except Reject as exc:
            log.warning("offline not delivered", extra={"user": session.user_id,
                                                        "room": room_id, "error": exc.message})

    async def _sweep(self) -> None:
        """Close sessions silent for longer than ``offline_after_seconds``."""
        limit = self.lobby.offline_after_seconds
        period = max(0.05, min(1.0, limit / 4))
        while True:
            await asyncio.sleep(period)
            now = time.monotonic()
            for session in list(self.hub.sessions):
                if now - session.last_seen > limit and not session.outbox.closed:
                    log.info("session silent, closing", extra={"user": session.user_id})
                    session.close()

    async def _watch_rooms(self) -> None:
        """Follow the ``rooms`` bucket into the room cache, and its changes to the idle
        sessions (room_changes.py); a watch that fails or ends is opened again. A watch
        starts with every key's last value: a cached room that is not among them closed
        while no watch ran, and its delete marker may be gone (services/table/markers.py),
        so it is dropped then."""
        assert self.directory.rooms is not None
        while True:
            try:
                async with bus.KeyWatch.opened(self.directory.rooms) as watcher:
                    self.rooms_watch = watcher
                    snapshot: set[str] | None = set()   # its keys, until the first None
                    async for entry in watcher:
                        if entry is None:  # end of the initial snapshot
                            for key in self.cache.absent(snapshot or set()):
                                self._fold_room(key, None, deleted=True)
                            snapshot = None
                            continue
                        if snapshot is not None:
                            snapshot.add(entry.key)
                        self._fold_room(entry.key, entry.value,
                                        deleted=entry.operation in (KV_DEL, KV_PURGE))
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("rooms watch failed, opening it again", extra={"error": repr(exc)})
            await asyncio.sleep(1.0)

    def _fold_room(self, key: str, value: bytes | None, deleted: bool) -> None:
        change = self.cache.apply_kv(key, value, deleted)
        if change is not None:
            self.room_changes.offer(change)
        if deleted and key.isdigit():
            self.streams.entry_deleted(int(key))

    def _relay_room_change(self, changes: list[lobby_msgs_pb2.RoomChange]) -> None:
        # serialized once for all sessions; queued together, so a batching client gets them
        # in one message
        relays = [Relayed(self.cache.relay_frame(change)) for change in changes]
        for session in self.hub.idle():
            for relay in relays:
                session.send(relay)

    # -- connections ------------------------------------------------------------------------

    def login_overdue(self, session: Session) -> None:
        """The login deadline of a connection: one that has not logged in is told why and
        closed, whatever it sent meanwhile; if its stream is still there CLOSE_GRACE seconds
        later (a client that does not read), it is cut."""
        if session.logged_in or session.outbox.closed:
            return
        seconds = self.lobby.login_deadline_seconds
        log.info("no login in time, closing", extra={"ip": session.peer_ip, "seconds": seconds})
        metrics.LOGIN_DEADLINES.inc()
        session.send(error_frame(common_pb2.ERR_NOT_LOGGED_IN,
                                 f"no login within {seconds:g} s: closing"), final=True)
        session.close()
        asyncio.get_running_loop().call_later(CLOSE_GRACE, session.disconnect)
