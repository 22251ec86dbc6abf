"""The lobby's resources and shared use cases: NATS, the directory, the room cache, the
records client, forwarding a command to the owning table, and session lifecycle."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Coroutine
from typing import Any

from nats.aio.client import Client
from nats.js.kv import KV_DEL, KV_PURGE

from paiju.frames import error_frame, event_id_of, ok_frame, payload_of
from paiju.v1 import client_pb2, common_pb2, table_pb2
from services.common import bus
from services.common.config import Config
from services.common.tasks import cancel_and_wait
from services.lobby.directory import Directory, Reject
from services.lobby.hub import Hub
from services.lobby.records_client import RecordsClient
from services.lobby.rooms import RoomCache
from services.lobby.sessions import RateLimiter, Session

log = logging.getLogger("paiju.lobby")


def request_event_id(frame: client_pb2.ClientFrame) -> int:
    payload = payload_of(frame)
    return event_id_of(payload) if payload is not None else frame.event_id


class LobbyApp:
    def __init__(self, cfg: Config, nc: Client, directory: Directory,
                 records: RecordsClient) -> None:
        self.cfg = cfg
        self.lobby = cfg.lobby
        self.nc = nc
        self.directory = directory
        self.records = records
        self.cache = RoomCache()
        self.hub = Hub(nc, self.cache)
        self.chat_limit = RateLimiter(cfg.lobby.chat_per_minute, 60.0)
        self._tasks: set[asyncio.Task[Any]] = set()

    @classmethod
    async def open(cls, cfg: Config) -> LobbyApp:
        nc = await bus.connect(cfg.nats.url, "lobby", cfg.nats.connect_timeout)
        directory = await Directory.open(nc.jetstream())
        records = RecordsClient(cfg.records.dial)
        app = cls(cfg, nc, directory, records)
        await app.hub.start()
        watcher = await directory.rooms.watchall()
        app.spawn(app._watch_rooms(watcher))
        app.spawn(app._sweep())
        return app

    async def close(self) -> None:
        await cancel_and_wait(*self._tasks)
        await self.hub.stop()
        await self.directory.close()
        await self.records.close()
        await self.nc.drain()

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # -- forwarding to tables -------------------------------------------------------------

    async def owner_address(self, room_id: int, *, fresh: bool = False) -> str:
        """The address of the table owning ``room_id``: the cache, else the rooms bucket."""
        entry = None if fresh else self.cache.get(room_id)
        if entry is not None and entry.address:
            return entry.address
        value = await self.directory.room(room_id)
        if not value or not value.get("address"):
            raise Reject(common_pb2.ERR_NO_SUCH_ROOM, f"room {room_id} does not exist")
        return str(value["address"])

    async def forward(self, session: Session, *, frame: client_pb2.ClientFrame | None = None,
                      kind: str = "", room_id: int = 0, address: str = "",
                      with_profile: bool = False) -> table_pb2.TableReply:
        """Send one command for ``session`` to the owning table and, while the session is
        live, track where the user sits from the reply."""
        room_id = room_id or session.room_id
        address = address or await self.owner_address(room_id)
        # the session identity lets the table ignore a late "offline" of a replaced session
        cmd = table_pb2.TableCommand(room_id=room_id, user_id=session.user_id, kind=kind,
                                     session_id=session.session_id, login_at=session.login_at)
        if frame is not None:
            cmd.frame.CopyFrom(frame)
        if with_profile:
            cmd.profile.CopyFrom(session.profile)
        reply = await self.directory.link(address).command(cmd)
        if not session.kicked and not session.outbox.closed:
            if reply.code == 0 and reply.room_id > 0:
                await self.hub.enter_room(session, reply.room_id, reply.seat)
            elif reply.code == 0 and reply.seat == -1:
                await self.hub.leave_room(session)
            elif (reply.code in (common_pb2.ERR_NO_SUCH_ROOM, common_pb2.ERR_NOT_IN_ROOM)
                  and session.room_id == room_id):
                await self.hub.leave_room(session)  # e.g. a dismissal notice we missed
        return reply

    @staticmethod
    def relay(session: Session, request: client_pb2.ClientFrame,
              reply: table_pb2.TableReply) -> None:
        """The table's answer to the client: its frames, or a Return (error or plain ok)."""
        event_id = request_event_id(request)
        if reply.code != 0:
            session.send(error_frame(reply.code, reply.message or "refused by the table",
                                     request_event_id=event_id, reply_to=request.seq))
            return
        if not reply.frames:
            session.send(ok_frame(event_id, reply_to=request.seq))
        for frame in reply.frames:
            frame.reply_to = request.seq
            session.send(frame)

    # -- session lifecycle ----------------------------------------------------------------

    async def session_ended(self, session: Session) -> None:
        """The stream is over: forget the session; a seated user goes offline at the table
        unless a newer login replaced this session."""
        room_id = session.room_id
        await self.hub.remove(session)
        if session.logged_in and room_id and not session.kicked:
            self.spawn(self._offline(session, room_id))

    async def _offline(self, session: Session, room_id: int) -> None:
        try:
            reply = await self.forward(session, kind="offline", room_id=room_id)
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

    async def _watch_rooms(self, watcher: Any) -> None:
        async for entry in watcher:
            if entry is None:  # end of the initial snapshot
                continue
            deleted = entry.operation in (KV_DEL, KV_PURGE)
            self.cache.apply_kv(entry.key, entry.value, deleted)
