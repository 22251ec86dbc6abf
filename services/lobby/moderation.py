"""Chat mutes set by operators (the console's ``POST /api/users/{uid}/mute``): published on
``lobby.mute`` (:class:`paiju.contracts.lobby.Mute`) so that every lobby
replica refuses that user's chat until then (``ERR_MUTED``). Kept in memory: a lobby started
after a mute does not know it (mutes are short; the audit log in records keeps them all)."""

from __future__ import annotations

import logging
import time
from typing import Any

from nats.aio.client import Client
from nats.aio.msg import Msg

from paiju.contracts.lobby import Mute
from paiju.contracts.typed import BadContract
from services.common import bus

log = logging.getLogger("paiju.lobby.moderation")

MAX_MUTES = 100_000


class Mutes:
    def __init__(self, nc: Client) -> None:
        self.nc = nc
        self._until: dict[int, float] = {}
        self._sub: Any = None

    async def start(self) -> None:
        self._sub = await self.nc.subscribe(bus.LOBBY_MUTE, cb=self._on_mute)

    async def stop(self) -> None:
        if self._sub is not None:
            sub, self._sub = self._sub, None
            try:
                await sub.unsubscribe()
            except Exception:   # the connection is gone: so is the subscription
                pass

    def left(self, user_id: int, now: float | None = None) -> float:
        """Seconds the user's chat stays muted (0: not muted)."""
        now = time.time() if now is None else now
        until = self._until.get(user_id, 0.0)
        if until <= now:
            self._until.pop(user_id, None)
            return 0.0
        return until - now

    def note(self, user_id: int, until: float, now: float | None = None) -> None:
        now = time.time() if now is None else now
        if until <= now:
            self._until.pop(user_id, None)   # a mute of 0 minutes lifts it
            return
        if len(self._until) >= MAX_MUTES:
            for uid in [u for u, t in self._until.items() if t <= now]:
                del self._until[uid]
        self._until[user_id] = until

    async def publish(self, user_id: int, until: float) -> None:
        """Mute ``user_id`` until ``until`` on every lobby (this one included)."""
        self.note(user_id, until)
        await self.nc.publish(bus.LOBBY_MUTE, Mute(user_id=user_id, until=until).encode())

    async def _on_mute(self, msg: Msg) -> None:
        try:
            mute = Mute.decode(msg.data)
        except BadContract as exc:
            log.warning("bad mute message", extra={"error": str(exc)})
            return
        self.note(mute.user_id, mute.until)
