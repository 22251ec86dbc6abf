"""One handler per client frame payload. Each validates, calls one use case and answers
the request: a reply frame or a Return with a code. ``dispatch`` never lets an exception
escape, so nothing a client sends can end its session."""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable
from typing import Any

import nats.errors

from games import registry
from paiju.frames import error_frame, ok_frame, server_frame
from paiju.seated import (  # forwarded unchanged to the table owning the sender's room
    GAME_ACTIONS,
    SEATED,
)
from paiju.v1 import client_pb2, common_pb2, lobby_msgs_pb2, records_pb2, table_pb2
from services.common import bus
from services.lobby import limits, metrics, seating, watching
from services.lobby.app import LobbyApp
from services.lobby.errors import Reject
from services.lobby.login import login
from services.lobby.seating import ask_join, reply_frames, request_event_id
from services.lobby.sessions import Session

log = logging.getLogger("paiju.lobby.commands")

Handler = Callable[[LobbyApp, Session, client_pb2.ClientFrame], Awaitable[None]]

# Table answers after which quick start tries another room once.
RETRY_QUICK = frozenset({common_pb2.ERR_ROOM_FULL, common_pb2.ERR_NO_SUCH_ROOM,
                         common_pb2.ERR_HAND_IN_PROGRESS})
QUICK_ROOM: dict[str, Any] = {"base_score": 1, "total_hands": 8}   # when none is waiting


async def dispatch(app: LobbyApp, session: Session, frame: client_pb2.ClientFrame) -> None:
    name = frame.WhichOneof("payload")
    event_id = request_event_id(frame)
    # a frame without a known payload counts as "0": a client-chosen id must not make series
    metrics.FRAMES_IN.labels(str(event_id) if name is not None else "0").inc()
    try:
        if name is None:
            raise Reject(common_pb2.ERR_BAD_FRAME, "frame has no known payload")
        if name == "login":
            await login(app, session, frame)
        elif not session.logged_in:
            raise Reject(common_pb2.ERR_NOT_LOGGED_IN, "log in first")
        elif name in SEATED:
            await seated(app, session, frame)
        else:
            await HANDLERS[name](app, session, frame)
    except Reject as exc:
        session.send(error_frame(exc.code, exc.message, request_event_id=event_id,
                                 reply_to=frame.seq))
    except (nats.errors.Error, TimeoutError) as exc:
        # the broker or a bucket did not answer (a node lost, an election, a partition):
        # "a moment", which clients send again, not an internal error
        log.warning("command not served: NATS did not answer",
                    extra={"user": session.user_id, "payload": name, "error": repr(exc)})
        session.send(error_frame(common_pb2.ERR_UNAVAILABLE, "a moment: please try again",
                                 request_event_id=event_id, reply_to=frame.seq))
    except Exception:
        log.exception("command failed", extra={"user": session.user_id, "payload": name})
        session.send(error_frame(common_pb2.ERR_INTERNAL, "internal error",
                                 request_event_id=event_id, reply_to=frame.seq))


async def heartbeat(app: LobbyApp, session: Session, frame: client_pb2.ClientFrame) -> None:
    beat = lobby_msgs_pb2.HeartBeat(client_time_ms=frame.heartbeat.client_time_ms)
    session.send(server_frame(beat, reply_to=frame.seq))


async def room_list(app: LobbyApp, session: Session, frame: client_pb2.ClientFrame) -> None:
    rooms = app.cache.room_list(frame.ask_room_list.game)
    session.send(server_frame(rooms, reply_to=frame.seq))


async def seated(app: LobbyApp, session: Session, frame: client_pb2.ClientFrame) -> None:
    if not session.room_id:
        watching.refuse_if_watching(app, session)
        if frame.WhichOneof("payload") in GAME_ACTIONS:
            # an answer to a prompt of an earlier stream, sent before this one's seat was
            # resumed: late, not refused (the resumed seat gets its prompt again)
            session.send(error_frame(common_pb2.ERR_NOT_IN_ROOM, "not in a room (yet)",
                                     request_event_id=request_event_id(frame),
                                     reply_to=frame.seq, overtaken=True))
            return
        raise Reject(common_pb2.ERR_NOT_IN_ROOM, "not in a room")
    await seating.seated_command(app, session, frame)


async def create_room(app: LobbyApp, session: Session, frame: client_pb2.ClientFrame) -> None:
    req = frame.create_room
    app.matchmaking.refuse_if_queued(session)
    _count_create(app, session)
    await watching.stop(app, session)   # sitting down ends a watch
    await _create_and_join(app, session, frame, table_pb2.CreateRoomRequest(
        game=req.game, base_score=req.base_score, total_hands=req.total_hands,
        options_json=req.options_json, password=req.password, min_hands=req.min_hands,
        creator_id=session.user_id))


async def _not_seated_elsewhere(app: LobbyApp, session: Session, room_id: int = 0) -> None:
    """One seat per user: the directory (not only this session) says where the user sits,
    e.g. in a room whose table is being replaced and that could not be resumed yet."""
    if session.room_id and session.room_id != room_id:
        raise Reject(common_pb2.ERR_ALREADY_IN_ROOM, f"already in room {session.room_id}")
    seat = await app.directory.seat(session.user_id)
    other = seat.room_id if seat is not None else 0
    if other and other != room_id and await app.directory.room(other) is not None:
        raise Reject(common_pb2.ERR_ALREADY_IN_ROOM,
                     f"still seated in room {other}: log in again to resume it")


def _count_create(app: LobbyApp, session: Session) -> None:
    """One room creation of this user and address, or ERR_RATE_LIMITED (nothing done)."""
    limits.take("create_room", (app.limits.creates_per_user, session.user_id),
                (app.limits.creates_per_ip, session.peer_ip))


async def _create_and_join(app: LobbyApp, session: Session, frame: client_pb2.ClientFrame,
                           req: table_pb2.CreateRoomRequest) -> None:
    """Place a room on the least-loaded live table (the directory's choice), then seat the
    creator in it."""
    await _not_seated_elsewhere(app, session)
    link, created = await app.directory.create_room(req)
    room_id = created.room.room_id
    await _join(app, session, frame, room_id, req.password, req.game, link.address)


async def _join(app: LobbyApp, session: Session, frame: client_pb2.ClientFrame, room_id: int,
                password: str, game: common_pb2.Game, address: str) -> None:
    reply = await ask_join(app, session, frame, room_id, password, game, address)
    await seating.seat(app, session, room_id, reply, reply_frames(frame, reply))


async def join_room(app: LobbyApp, session: Session, frame: client_pb2.ClientFrame) -> None:
    req = frame.join_room
    app.matchmaking.refuse_if_queued(session)
    limits.take("join_room", (app.limits.joins_per_user, session.user_id))
    await _not_seated_elsewhere(app, session, req.room_id)
    await watching.stop(app, session)   # sitting down ends a watch
    if req.room_id:
        address = await app.owner_address(req.room_id, fresh=True)
        await _join(app, session, frame, req.room_id, req.password, req.game, address)
        return
    await quick_start(app, session, frame)


async def quick_start(app: LobbyApp, session: Session, frame: client_pb2.ClientFrame) -> None:
    """Join a waiting public room of the game with a free seat, else create one; when the
    picked room filled up meanwhile, try once more."""
    game = frame.join_room.game
    if game == common_pb2.GAME_UNSPECIFIED:
        raise Reject(common_pb2.ERR_BAD_OPTIONS, "quick start needs a game")
    tried: set[int] = set()
    for attempt in (1, 2):
        entry = app.cache.quick_pick(game, frozenset(tried))
        if entry is None:
            break
        reply = await ask_join(app, session, frame, entry.room_id, "", game, entry.address)
        if reply.code in RETRY_QUICK and attempt == 1:
            tried.add(entry.room_id)
            await app.streams.release(entry.room_id)
            continue
        await seating.seat(app, session, entry.room_id, reply, reply_frames(frame, reply))
        return
    _count_create(app, session)   # no room to join: a new one is a creation like any other
    await _create_and_join(app, session, frame, table_pb2.CreateRoomRequest(
        game=game, creator_id=session.user_id, options_json="{}", **QUICK_ROOM))


async def chat(app: LobbyApp, session: Session, frame: client_pb2.ClientFrame) -> None:
    req = frame.chat
    if not session.room_id:
        watching.refuse_if_watching(app, session)
        raise Reject(common_pb2.ERR_NOT_IN_ROOM, "chat needs a room")
    if len(req.content) > app.lobby.chat_max_len or len(req.extend) > app.lobby.chat_max_len:
        raise Reject(common_pb2.ERR_TOO_LONG, f"chat longer than {app.lobby.chat_max_len}")
    muted = app.mutes.left(session.user_id)
    if muted:
        raise Reject(common_pb2.ERR_MUTED, f"your chat is muted by an operator for "
                     f"{math.ceil(muted / 60)} more minute(s)")
    if not app.chat_limit.allow(session.user_id):
        metrics.RATE_LIMITED.labels("chat").inc()
        raise Reject(common_pb2.ERR_RATE_LIMITED,
                     f"at most {app.lobby.chat_per_minute} chat messages a minute")
    out = lobby_msgs_pb2.Chat(type=req.type, content=req.content, extend=req.extend,
                              author_id=session.user_id)
    await app.nc.publish(bus.room_chat(session.room_id), server_frame(out).SerializeToString())
    session.send(ok_frame(request_event_id(frame), reply_to=frame.seq))


def _room_or_current(session: Session, room_id: int) -> int:
    room_id = room_id or session.room_id
    if not room_id:
        raise Reject(common_pb2.ERR_NOT_IN_ROOM, "no room given and not in a room")
    return room_id


async def history(app: LobbyApp, session: Session, frame: client_pb2.ClientFrame) -> None:
    room_id = _room_or_current(session, frame.ask_history_score.room_id)
    try:
        scores = await app.records.history(room_id, session.user_id)
    except Reject as exc:
        if exc.code != common_pb2.ERR_NO_SUCH_ROOM:
            raise
        scores = lobby_msgs_pb2.UseHistoryScore(room_id=room_id)  # no hand settled yet
    session.send(server_frame(scores, reply_to=frame.seq))


async def replay(app: LobbyApp, session: Session, frame: client_pb2.ClientFrame) -> None:
    req = frame.ask_replay
    room_id = _room_or_current(session, req.room_id)
    result = await app.records.replay(room_id, req.hand_no, session.user_id)
    session.send(server_frame(result, reply_to=frame.seq))


LEADERBOARD_DEFAULT, LEADERBOARD_MAX = 20, 100
RATED_GAMES = tuple(spec.name for spec in registry.all())


def _rating_scope(game: str, season: int, current: bool) -> records_pb2.RatingScope:
    if game not in RATED_GAMES:
        raise Reject(common_pb2.ERR_BAD_OPTIONS, f"unknown game {game!r}; known: "
                     f"{', '.join(RATED_GAMES)}")
    if season < 0:
        raise Reject(common_pb2.ERR_BAD_FRAME, f"season must not be negative, got {season}")
    return records_pb2.RatingScope(game=game, season=season, current_season=current)


def _rating_info(r: records_pb2.RatingRecord) -> lobby_msgs_pb2.RatingInfo:
    if not r.hands:     # not rated in that game and season yet
        return lobby_msgs_pb2.RatingInfo(user_id=r.user_id, game=r.game, season=r.season)
    return lobby_msgs_pb2.RatingInfo(user_id=r.user_id, game=r.game, season=r.season,
                                     rated=True, mu=r.mu, sigma=r.sigma, score=r.score,
                                     hands=r.hands, rank=r.rank)


async def rating(app: LobbyApp, session: Session, frame: client_pb2.ClientFrame) -> None:
    """The asker's own rating (nobody else's: the leaderboard shows the others)."""
    req = frame.ask_rating
    scope = _rating_scope(req.game, req.season, req.current_season)
    found = await app.records.rating(session.user_id, scope)
    session.send(server_frame(_rating_info(found), reply_to=frame.seq))


async def leaderboard(app: LobbyApp, session: Session, frame: client_pb2.ClientFrame) -> None:
    req = frame.ask_leaderboard
    scope = _rating_scope(req.game, req.season, req.current_season)
    if not 0 <= req.limit <= LEADERBOARD_MAX or req.offset < 0:
        raise Reject(common_pb2.ERR_BAD_FRAME, f"limit is 0..{LEADERBOARD_MAX} and offset "
                     f">= 0, got {req.limit}, {req.offset}")
    board = await app.records.leaderboard(scope, req.limit or LEADERBOARD_DEFAULT, req.offset)
    session.send(server_frame(lobby_msgs_pb2.Leaderboard(
        game=board.game, season=board.season, total=board.total,
        entries=[_rating_info(e) for e in board.entries]), reply_to=frame.seq))


async def ask_match(app: LobbyApp, session: Session, frame: client_pb2.ClientFrame) -> None:
    """A match ticket (matchmaker.py): not for a player who sits in a room."""
    limits.take("join_room", (app.limits.joins_per_user, session.user_id))
    await _not_seated_elsewhere(app, session)
    await app.matchmaking.ask(session, frame)


async def cancel_match(app: LobbyApp, session: Session, frame: client_pb2.ClientFrame) -> None:
    await app.matchmaking.cancel(session, frame)


HANDLERS: dict[str, Handler] = {
    "heartbeat": heartbeat,
    "ask_room_list": room_list,
    "create_room": create_room,
    "join_room": join_room,
    "chat": chat,
    "ask_history_score": history,
    "ask_replay": replay,
    "ask_rating": rating,
    "ask_leaderboard": leaderboard,
    "watch_room": watching.watch_room,
    "stop_watching": watching.stop_watching,
    "ask_match": ask_match,
    "cancel_match": cancel_match,
}
