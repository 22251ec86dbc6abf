"""The sessions of this lobby by user, and one live session per user across replicas
(``session.kick.<uid>``, subscribed lobby-wide as ``session.kick.*``). The rooms they are in
are streams.py's.

A login names its token's generation (tokens.py, 0 without one) in ``session.kick.<uid>``;
every lobby remembers the newest generation of each user it heard of (:class:`Generations`),
refuses a login with an older one, and a session of a newer generation is never kicked by
an older one: its lobby announces it again, which kicks the older session wherever it is.

The announcement also names the token (a digest, ``tokens.token_id``). When a user's session
is replaced by a login with another token, every lobby that heard both revokes the older
token until it expires (:class:`Revocations`): a kicked session's token, captured or not,
no longer logs in anywhere, whatever its generation. A login with the same token (a
reconnect) revokes nothing. A lobby started after the replacement did not hear it: if it
lets the revoked token in, the announcement of that login is refused by the lobbies that
know, which announce the current session again (as for an older generation), so the
late one kicks it and learns.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from nats.aio.client import Client
from nats.aio.msg import Msg

from paiju.contracts.lobby import SessionKick
from paiju.contracts.typed import BadContract
from paiju.frames import server_frame
from paiju.v1 import lobby_msgs_pb2
from services.common import bus
from services.lobby import metrics
from services.lobby.room_messages import subject_id
from services.lobby.sessions import Session

log = logging.getLogger("paiju.lobby.hub")

KICK_ALL = "session.kick.*"


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


class Revocations:
    """Tokens replaced by a newer login of their user with another token, by token id, kept
    until they expire; and the token of each user's newest login this lobby heard of."""

    def __init__(self) -> None:
        self._current: dict[int, tuple[str, float]] = {}   # uid -> (token id, expiry)
        self._revoked: dict[str, float] = {}               # token id -> its expiry
        self._next_sweep = 0.0

    def revoked(self, token_id: str, now: float | None = None) -> bool:
        now = time.time() if now is None else now
        expiry = self._revoked.get(token_id)
        return expiry is not None and expiry > now

    def note(self, user_id: int, token_id: str, expiry: float,
             now: float | None = None) -> None:
        """``token_id`` is the user's newest login: the token of the login before it, if
        another one, is revoked until its own expiry."""
        now = time.time() if now is None else now
        self._sweep(now)
        if not token_id or expiry <= now or self.revoked(token_id, now):
            return
        known = self._current.get(user_id)
        if known is not None and known[0] != token_id and known[1] > now:
            self._revoked[known[0]] = known[1]
        self._current[user_id] = (token_id, expiry)

    def _sweep(self, now: float) -> None:
        if now < self._next_sweep:
            return
        self._next_sweep = now + 60.0
        for uid in [u for u, (_, expiry) in self._current.items() if expiry <= now]:
            del self._current[uid]
        for tid in [t for t, expiry in self._revoked.items() if expiry <= now]:
            del self._revoked[tid]

    def __len__(self) -> int:
        return len(self._revoked)


class Hub:
    def __init__(self, nc: Client) -> None:
        self.nc = nc
        self.sessions: set[Session] = set()
        self.by_user: dict[int, Session] = {}
        self.generations = Generations()
        self.revocations = Revocations()
        self._subs: list[Any] = []

    async def start(self) -> None:
        self._subs.append(await self.nc.subscribe(KICK_ALL, cb=self._on_kick))

    async def stop(self) -> None:
        for sub in self._subs:
            await sub.unsubscribe()
        self._subs.clear()

    def add(self, session: Session) -> None:
        self.sessions.add(session)
        metrics.SESSIONS.set(len(self.sessions))

    def bind(self, session: Session) -> None:
        """Make ``session`` the user's live session here (the older local one is kicked);
        :meth:`announce` then tells the other lobbies."""
        uid = session.user_id
        self.generations.note(uid, session.gen, session.token_expiry)
        self.revocations.note(uid, session.token_id, session.token_expiry)
        older = self.by_user.get(uid)
        if older is not None and older is not session:
            self.kick(older, "local")
        self.by_user[uid] = session

    async def announce(self, session: Session) -> None:
        """Tell every lobby that ``session`` is the user's newest (session.kick.<uid>)."""
        payload = SessionKick(session_id=session.session_id, login_at=session.login_at,
                              gen=session.gen, expiry=session.token_expiry,
                              token_id=session.token_id)
        await self.nc.publish(bus.session_kick(session.user_id), payload.encode())

    def remove(self, session: Session) -> None:
        """Forget a finished session and its user binding."""
        self.sessions.discard(session)
        metrics.SESSIONS.set(len(self.sessions))
        uid = session.user_id
        if uid and self.by_user.get(uid) is session:
            del self.by_user[uid]

    def kick(self, session: Session, origin: str) -> None:
        """Close a session replaced by a newer login (顶号): KickOut, then end the stream."""
        if session.kicked:
            return
        session.kicked = True
        metrics.KICKS.labels(origin).inc()
        session.send(server_frame(lobby_msgs_pb2.KickOut(user_id=session.user_id)), final=True)
        session.close()

    def idle(self) -> list[Session]:
        """The logged-in sessions outside any room (they get the room list's changes)."""
        return [s for s in self.sessions if s.logged_in and not s.room_id]

    async def _on_kick(self, msg: Msg) -> None:
        uid = subject_id(msg.subject, 2)
        try:
            kick = SessionKick.decode(msg.data)
        except BadContract as exc:
            log.warning("bad kick message", extra={"subject": msg.subject, "error": str(exc)})
            return
        newer_id, newer_at, newer_gen = kick.session_id, kick.login_at, kick.gen
        expiry, newer_token = kick.expiry, kick.token_id
        if uid is None:
            return
        self.generations.note(uid, newer_gen, expiry)
        stale = bool(newer_token) and self.revocations.revoked(newer_token)
        self.revocations.note(uid, newer_token, expiry)   # nothing if the token is revoked
        session = self.by_user.get(uid)
        if session is None or session.session_id == newer_id or session.kicked:
            return
        if stale and session.token_id != newer_token:
            # a revoked token got in on a lobby that had not heard of its replacement:
            # this session stands, and saying so again kicks that one there
            log.info("revoked token logged in elsewhere: announcing the current session",
                     extra={"user": uid})
            await self.announce(session)
        elif newer_gen < session.gen:
            # a login with an older token got in somewhere (a lobby that had not heard of
            # ours): this session stands, and saying so again kicks the other one
            log.info("older token generation logged in elsewhere: announcing the newer",
                     extra={"user": uid, "gen": session.gen, "other_gen": newer_gen})
            await self.announce(session)
        elif (newer_gen > session.gen or session.login_at <= newer_at
              or self.revocations.revoked(session.token_id)):
            # a newer generation, a later login, or a login that revoked this session's
            # token (even one that logged in before it, on a lobby that knew)
            self.kick(session, "remote")
