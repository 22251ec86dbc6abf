"""Where a session sits, from the table's answers: a join or a snapshot puts it in a room's
stream at the answer's position, a seated command's answer goes out at its position (and
may take the session out of the room), a refusal shows nothing of the room. Every answer
goes through the room's stream (streams.py), so it reaches the client in the room's order:
after the events up to its position and before any later one."""

from __future__ import annotations

from games import registry
from paiju.contracts.lobby import MatchTicket
from paiju.frames import client_frame, error_frame, event_id_of, ok_frame, payload_of, server_frame
from paiju.seated import GAME_ACTIONS
from paiju.v1 import client_pb2, common_pb2, lobby_msgs_pb2, table_pb2
from services.lobby import watching
from services.lobby.app import LobbyApp
from services.lobby.errors import Reject
from services.lobby.sessions import Session

Cancelled = lobby_msgs_pb2.MatchCancelled

# answers after which the session is no longer in the room it asked about
GONE = frozenset({common_pb2.ERR_NO_SUCH_ROOM, common_pb2.ERR_NOT_IN_ROOM})


def request_event_id(frame: client_pb2.ClientFrame) -> int:
    payload = payload_of(frame)
    return event_id_of(payload) if payload is not None else frame.event_id


def reply_frames(request: client_pb2.ClientFrame,
                 reply: table_pb2.TableReply) -> list[client_pb2.ServerFrame]:
    """The table's answer for the client: its frames, or a Return (error or plain ok)."""
    event_id = request_event_id(request)
    if reply.code != 0:
        # an answer to a prompt whose room has closed meanwhile (its last hand ended, the
        # timer or entrust played the last decision) only came too late
        late = (reply.code == common_pb2.ERR_NO_SUCH_ROOM
                and request.WhichOneof("payload") in GAME_ACTIONS)
        return [error_frame(reply.code, reply.message or "refused by the table",
                            request_event_id=event_id, reply_to=request.seq,
                            overtaken=reply.overtaken or late)]
    if not reply.frames:
        return [ok_frame(event_id, reply_to=request.seq)]
    out = list(reply.frames)
    for frame in out:
        frame.reply_to = request.seq
    return out


def live(session: Session) -> bool:
    return not session.kicked and not session.outbox.closed


async def seated_command(app: LobbyApp, session: Session,
                         request: client_pb2.ClientFrame) -> None:
    """A command of a seated player: to the owning table, and its answer back at its
    position; the room is left when the table says he is not in it any more."""
    room_id = session.room_id
    app.streams.begin(session, room_id)
    try:
        reply = await app.forward(session, frame=request)
    except BaseException:
        app.streams.cancel(session, room_id)
        raise
    gone = reply.code in GONE or (reply.code == 0 and reply.seat == -1)
    if live(session) and session.room_id == room_id:
        if gone:
            session.room_id, session.seat = 0, -1
        elif reply.code == 0 and reply.room_id == room_id:
            session.seat = reply.seat
    app.streams.reply(session, room_id, reply, reply_frames(request, reply), leave=gone)
    if gone:
        await app.streams.close_if_empty(room_id)


async def ask_join(app: LobbyApp, session: Session, request: client_pb2.ClientFrame,
                   room_id: int, password: str, game: common_pb2.Game,
                   address: str) -> table_pb2.TableReply:
    """Forward a join; the caller then :func:`seat` s the session (or not) from the reply.
    The room's subscriptions are made first, so that nothing after the join's position is
    missed; nothing of the room reaches the session before the table has seated it."""
    join = lobby_msgs_pb2.JoinRoom(room_id=room_id, password=password, game=game)
    await app.streams.open(room_id)
    try:
        return await app.forward(session, frame=client_frame(join, seq=request.seq),
                                 room_id=room_id, address=address, with_profile=True)
    except BaseException:
        await app.streams.release(room_id)
        raise


async def seat(app: LobbyApp, session: Session, room_id: int, reply: table_pb2.TableReply,
               frames: list[client_pb2.ServerFrame]) -> None:
    """The answer to a join or a snapshot of ``room_id`` (after ``streams.open``): seated,
    the session is in the room's stream from the answer's position on, ``frames`` first;
    refused, it gets ``frames`` only."""
    if reply.code == 0 and reply.room_id == room_id and live(session):
        if session.room_id and session.room_id != room_id:
            await leave(app, session)
        session.room_id, session.seat = room_id, reply.seat
        app.streams.join(session, room_id, reply, frames)
    else:
        for frame in frames:
            session.send(frame)
    await app.streams.release(room_id)


async def leave(app: LobbyApp, session: Session) -> None:
    """Out of its room now (the room is gone, or nothing to resume)."""
    room_id, session.room_id, session.seat = session.room_id, 0, -1
    if room_id:
        await app.streams.leave(session, room_id)


async def seat_matched(app: LobbyApp, session: Session, value: MatchTicket) -> None:
    """A match ticket's outcome MATCHED (services/lobby/matchmaker.py) for a session of this
    lobby: join the room the matcher made, as a JoinRoom would, and say MatchFound (or why
    not); the room's creator adds the robots the matcher assigned."""
    room_id, password, ticket_id = value.room_id, value.password, value.ticket_id
    if room_id is None or password is None:
        raise ValueError(f"ticket {ticket_id} is matched without its room or password")
    spec = registry.get(value.game)
    if session.room_id and session.room_id != room_id:    # sat down elsewhere meanwhile
        session.send(server_frame(Cancelled(
            ticket_id=ticket_id, reason=Cancelled.FAILED,
            message=f"you sit in room {session.room_id}: room {room_id} goes on without you")))
        return
    request = client_frame(lobby_msgs_pb2.JoinRoom(room_id=room_id), seq=0)
    try:
        await watching.stop(app, session)
        address = await app.owner_address(room_id, fresh=True)
        reply = await ask_join(app, session, request, room_id, password,
                               common_pb2.Game.ValueType(spec.game_type), address)
    except Reject as exc:
        session.send(server_frame(Cancelled(ticket_id=ticket_id, reason=Cancelled.FAILED,
                                            message=f"room {room_id}: {exc.message}")))
        return
    if reply.code == 0:
        waited = max(0.0, (value.matched_at or 0.0) - value.enqueued_at)
        session.send(server_frame(lobby_msgs_pb2.MatchFound(
            ticket_id=ticket_id, room_id=room_id, seat=reply.seat,
            robots=value.robots or 0, waited_ms=int(waited * 1000))))
    else:
        session.send(server_frame(Cancelled(
            ticket_id=ticket_id, reason=Cancelled.FAILED,
            message=f"room {room_id}: {reply.message or 'refused'}")))
    await seat(app, session, room_id, reply, reply_frames(request, reply))
    robots = value.robots or 0
    if reply.code == 0 and robots and value.creator == session.user_id:
        await seated_command(app, session, client_frame(
            lobby_msgs_pb2.AddRobots(count=robots), seq=0))
