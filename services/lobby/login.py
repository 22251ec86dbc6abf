"""Login: check the token, load the profile, bind the session (kicking older ones), reply
LoginOk, and on a reconnect resume the seat (snapshot and online at the owning table)."""

from __future__ import annotations

import logging
import time

import nats.errors

from paiju.contracts.directory import SeatEntry
from paiju.frames import error_frame, server_frame
from paiju.seated import LobbyKind
from paiju.v1 import client_pb2, common_pb2, lobby_msgs_pb2, table_pb2
from services.common import reserved
from services.common.config import LobbyConfig
from services.lobby import limits, metrics, seating, tokens
from services.lobby.app import RESUME_AGAIN_MS, LobbyApp
from services.lobby.errors import Reject
from services.lobby.rooms import room_entry
from services.lobby.sessions import Session

log = logging.getLogger("paiju.lobby.login")



def keyring(c: LobbyConfig) -> tokens.Keyring:
    """The signing keys this lobby accepts (lobby.token_*: the current key and, during a
    rotation, the previous one until token_previous_until)."""
    return tokens.Keyring(c.token_secret, c.token_key_id, c.token_previous_secret,
                          c.token_previous_key_id, c.token_previous_until)


class Superseded(tokens.BadToken):
    """A token of an older generation than the newest sign-in of its user."""


def check_token(app: LobbyApp, login: lobby_msgs_pb2.Login) -> tokens.Claims:
    """What a login proves; TokenError when it proves nothing, or when a newer sign-in of the
    same user (a token of a higher generation) has revoked this token."""
    secret = app.lobby.token_secret
    if app.lobby.legacy_md5:
        user_id = tokens.verify_legacy(login.token, login.secret_string, secret)
        if reserved.is_robot(user_id):
            raise tokens.BadToken("robot user ids cannot log in")
        return tokens.Claims(user_id, 0)
    claims = tokens.claims(login.token, keyring(app.lobby))
    if reserved.is_robot(claims.user_id):   # a table's robots never log in
        raise tokens.BadToken("robot user ids cannot log in")
    if app.hub.revocations.revoked(tokens.token_id(login.token)):
        raise Superseded("token revoked by a newer sign-in (its session was replaced by "
                         "one with another token): sign in again")
    newest = app.hub.generations.newest(claims.user_id)
    if claims.gen < newest:
        raise Superseded(f"token revoked by a newer sign-in (generation {claims.gen} < "
                         f"{newest}): sign in again")
    return claims


async def login(app: LobbyApp, session: Session, frame: client_pb2.ClientFrame) -> None:
    req = frame.login
    if session.logged_in:
        raise Reject(common_pb2.ERR_BAD_FRAME, "already logged in on this stream")
    try:
        limits.take("login", (app.limits.logins_per_ip, session.peer_ip))
    except Reject as exc:   # said once, then the connection closes (it may come back later)
        metrics.LOGINS.labels("rate_limited").inc()
        session.send(error_frame(exc.code, exc.message, request_event_id=frame.event_id or 1002,
                                 reply_to=frame.seq), final=True)
        session.close()
        return
    try:
        claims = check_token(app, req)
    except tokens.TokenError as exc:
        metrics.LOGINS.labels("expired" if isinstance(exc, tokens.TokenExpired)
                              else "superseded" if isinstance(exc, Superseded)
                              else "bad_token").inc()
        session.send(error_frame(exc.code, str(exc), request_event_id=frame.event_id or 1002,
                                 reply_to=frame.seq), final=True)
        session.close()
        return
    user_id = claims.user_id
    try:
        record = await app.records.profile(user_id, req.nickname, create=app.lobby.dev_profiles)
    except Reject as exc:
        metrics.LOGINS.labels("unavailable" if exc.code == common_pb2.ERR_UNAVAILABLE
                              else "refused").inc()
        raise
    session.profile = table_pb2.PlayerProfile(
        user_id=user_id, nickname=record.nickname, head_url=record.head_url, sex=record.sex,
        coins=record.coins, ip=session.peer_ip, lat=req.lat, lng=req.lng,
        login_address=req.login_address)
    token_id = "" if app.lobby.legacy_md5 else tokens.token_id(req.token)
    if claims.gen < app.hub.generations.newest(user_id) \
            or app.hub.revocations.revoked(token_id):   # a newer sign-in meanwhile
        metrics.LOGINS.labels("superseded").inc()
        session.send(error_frame(common_pb2.ERR_BAD_TOKEN, "token revoked by a newer sign-in: "
                                 "sign in again", request_event_id=frame.event_id or 1002,
                                 reply_to=frame.seq), final=True)
        session.close()
        return
    # where the user sits, read before the session is bound: a directory that does not
    # answer leaves this stream logged out, and the login may simply be sent again
    seat = await app.directory.seat(user_id)
    session.user_id = user_id
    session.login_at = time.time()
    session.gen, session.token_expiry = claims.gen, float(claims.expiry)
    session.token_id = token_id
    app.hub.bind(session)
    metrics.LOGINS.labels("ok").inc()
    try:
        room_id = seat.room_id if seat is not None else 0
        ok = lobby_msgs_pb2.LoginOk(player=_own_info(session, seat),
                                    heartbeat_seconds=app.lobby.heartbeat_seconds,
                                    session_id=session.session_id)
        room = await _room_info(app, room_id) if room_id and not _found_gone(
            app, user_id, room_id) else None
        if room is not None:
            ok.room.CopyFrom(room)
        session.batches = req.accept_batches   # from here on frames may leave batched
        session.send(server_frame(ok, reply_to=frame.seq))
    finally:
        # the other lobbies hear of this session once its LoginOk is on its way: a kick
        # that this causes (an older token, a newer session elsewhere) comes after it
        await app.hub.announce(session)
    if seat is not None and room_id:
        await _resume(app, session, frame, room_id, seat, named=room is not None)
    else:
        await app.matchmaking.resume(session)   # a match ticket follows the new session


def _own_info(session: Session, seat: SeatEntry | None) -> common_pb2.PlayerInfo:
    p = session.profile
    return common_pb2.PlayerInfo(
        user_id=p.user_id, online=True, coins=p.coins, nickname=p.nickname,
        head_url=p.head_url, ip=p.ip, sex=p.sex, login_address=p.login_address,
        seat=seat.seat if seat is not None else -1)


async def _room_info(app: LobbyApp, room_id: int) -> common_pb2.RoomInfo | None:
    entry = app.cache.get(room_id)
    if entry is not None:
        return entry.info
    value = await app.directory.room(room_id)
    if value is None:
        return None
    entry = room_entry(value)
    return entry.info if entry else None


# the snapshot's answers that say there is no seat to resume (the room closed, or the user
# left it meanwhile): the session simply stays outside any room
GONE = frozenset({common_pb2.ERR_NO_SUCH_ROOM, common_pb2.ERR_NOT_IN_ROOM})
# how long a room found gone at a login is left out of the user's next LoginOk
GONE_SEAT_SECONDS = 60.0


def _found_gone(app: LobbyApp, user_id: int, room_id: int, now: float | None = None) -> bool:
    """Whether this lobby found ``room_id`` gone at a login of ``user_id`` a moment ago (its
    room cache, or a replica of the directory, may still have it)."""
    now = time.monotonic() if now is None else now
    gone = app.gone_seats.get(user_id)
    return gone is not None and gone[0] == room_id and now - gone[1] < GONE_SEAT_SECONDS


def _remember_gone(app: LobbyApp, user_id: int, room_id: int, now: float | None = None) -> None:
    """Record it (oldest first: the expired ones are dropped from the front)."""
    now = time.monotonic() if now is None else now
    gone = app.gone_seats
    while gone and now - next(iter(gone.values()))[1] >= GONE_SEAT_SECONDS:
        gone.popitem(last=False)
    gone[user_id] = (room_id, now)
    gone.move_to_end(user_id)


async def _resume(app: LobbyApp, session: Session, frame: client_pb2.ClientFrame,
                  room_id: int, seat: SeatEntry, *, named: bool) -> None:
    """Reconnect into a seat: the room's stream from the snapshot's position on, then online
    at the table. A seat that is there but cannot be resumed now (its room moving, a table or
    NATS not answering, any refusal but "gone") never leaves the session logged in outside
    its room, waiting for prompts that go elsewhere: the client is told to log in again in a
    moment, and the resume is tried again then. A seat gone from a room that LoginOk
    ``named`` sends the client to log in again too. The room closed while the client
    reconnected, before its entries were deleted (the forwarder answers "no such room" only
    once the directory has none): this lobby leaves the room out of the user's LoginOk for
    a minute, whatever its room cache still holds, which says the room ended while he was
    away. Or the user had left the room, which is still there: the table clears his stale
    seat entry as it answers "not in this room", and the next login finds no seat."""
    address = seat.address
    try:
        await app.streams.open(room_id)
    except (nats.errors.Error, TimeoutError) as exc:
        _again(app, session, frame, room_id, common_pb2.ERR_UNAVAILABLE, repr(exc))
        return
    try:
        snapshot = await app.forward(session, kind=LobbyKind.SNAPSHOT, room_id=room_id,
                                     address=address, with_profile=True)
    except Reject as exc:
        await app.streams.release(room_id)
        _again(app, session, frame, room_id, exc.code, exc.message)
        return
    except (nats.errors.Error, TimeoutError) as exc:
        await app.streams.release(room_id)
        _again(app, session, frame, room_id, common_pb2.ERR_UNAVAILABLE, repr(exc))
        return
    except BaseException:
        await app.streams.release(room_id)
        raise
    if snapshot.code in GONE or (snapshot.code == 0 and snapshot.room_id == 0):
        await app.streams.release(room_id)   # the room closed meanwhile: nothing to resume
        log.info("seat not resumed: gone", extra={"user": session.user_id, "room": room_id,
                                                  "code": snapshot.code, "named": named})
        if named and snapshot.code in GONE:
            if snapshot.code == common_pb2.ERR_NO_SUCH_ROOM:   # for good: no room id comes back
                _remember_gone(app, session.user_id, room_id)
            app.tell_reconnect(session, "room_moving", least_ms=RESUME_AGAIN_MS)
        return
    if snapshot.code:
        # still moving after the lobby's bound, or refused for now: the seat is there
        await app.streams.release(room_id)
        _again(app, session, frame, room_id, snapshot.code, snapshot.message)
        return
    frames = list(snapshot.frames)
    for out in frames:
        out.reply_to = frame.seq
    await seating.seat(app, session, room_id, snapshot, frames)
    if session.kicked or session.outbox.closed:
        return  # replaced or gone meanwhile: the seat's connection is not this session's
    try:
        await app.forward(session, kind=LobbyKind.ONLINE, room_id=room_id, address=address)
    except Reject as exc:
        log.warning("online not delivered", extra={"user": session.user_id, "error": exc.message})


def _again(app: LobbyApp, session: Session, frame: client_pb2.ClientFrame, room_id: int,
           code: int, message: str) -> None:
    """The seat could not be resumed now: say why, and have the client log in again in a
    moment (:func:`_resume` is tried again then)."""
    session.send(error_frame(code, f"could not resume room {room_id}: {message}",
                             request_event_id=frame.event_id or 1002, reply_to=frame.seq))
    app.tell_reconnect(session, "room_moving", least_ms=RESUME_AGAIN_MS)
    log.info("seat not resumed yet: the client logs in again in a moment",
             extra={"user": session.user_id, "room": room_id, "code": code,
                    "error": message})
