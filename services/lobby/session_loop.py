"""The life of one client connection, whatever carries it: a ``Lobby.Connect`` gRPC stream
(grpc_front.py) or a WebSocket (ws.py). A reader task hands the decoded client frames to
a task that dispatches them one at a time, in order (commands.py), and answers heartbeats
itself at once; the session's outbound frames are numbered and
encoded by the transport's encoder as they leave.

Client frames are parsed here (not by gRPC) so that undecodable bytes get ERR_BAD_FRAME and
the session goes on. Relayed frames leave as their shared serialization behind the
session's seq field (sessions.Relayed), the lobby's own frames are serialized with their
seq.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass

import grpc
from google.protobuf.message import DecodeError

from paiju.frames import encode_batch, error_frame
from paiju.v1 import client_pb2, common_pb2
from services.common.tasks import cancel_and_wait
from services.lobby import metrics
from services.lobby.app import LobbyApp
from services.lobby.commands import dispatch
from services.lobby.sessions import Outgoing, Relayed, Session


@dataclass(frozen=True)
class BadFrame:
    """A client message that is not a ClientFrame; ``reason`` goes back in ERR_BAD_FRAME."""

    reason: str


Incoming = client_pb2.ClientFrame | BadFrame


def decode_binary(raw: bytes) -> Incoming:
    """One serialized ClientFrame (gRPC message or binary WebSocket message)."""
    frame = client_pb2.ClientFrame()
    try:
        frame.ParseFromString(raw)
    except DecodeError:
        return BadFrame("undecodable frame")
    return frame


def encode_binary(item: Outgoing, seq: int) -> bytes:
    """A serialized ServerFrame with server sequence number ``seq``."""
    if isinstance(item, Relayed):
        return item.wire(seq)
    item.seq = seq
    wire: bytes = item.SerializeToString()
    return wire


# an outbound frame and its seq -> what the transport sends (bytes, or JSON text on ws.py)
Encoder = Callable[[Outgoing, int], bytes | str]

BATCH_MOST = 64   # frames in one batch at most (the rest go in the next)


async def serve_session(app: LobbyApp, session: Session,
                        incoming: AsyncIterator[Incoming],
                        encode: Encoder = encode_binary,
                        batch: Callable[[], bool] | bool = False,
                        ) -> AsyncGenerator[bytes | str, None]:
    """The life of one client connection, whatever carries it (a Connect stream or a
    WebSocket): a reader task dispatches the decoded frames one at a time, in order, and this
    generator yields the session's outbound frames, numbered and encoded, until the session
    closes.

    With ``batch`` (True, or a function saying whether the connection carries binary frames
    now: the Connect stream always, a WebSocket while its client speaks binary) and a client
    that asked for batches (Session.batches), the frames queued at once leave as one message
    (paiju.frames.encode_batch): one write per client for the frames one room message or one
    reply brings, however many."""
    batching = batch if callable(batch) else (lambda: bool(batch))
    session.task = asyncio.current_task()
    app.hub.add(session)
    reader = None
    deadline = None
    if app.draining:   # a lobby that stops takes no one: go elsewhere
        app.tell_reconnect(session, "draining")
    else:
        reader = asyncio.create_task(_read(app, session, incoming))
        if app.lobby.login_deadline_seconds > 0:   # log in by then, whatever is sent meanwhile
            deadline = asyncio.get_running_loop().call_later(
                app.lobby.login_deadline_seconds, app.login_overdue, session)
    try:
        outbox = session.outbox
        while (item := await outbox.next()) is not None:
            metrics.frame_out(item.event_id)
            if not session.batches or not len(outbox) or not batching():
                yield encode(item, session.next_seq())
                continue
            items = outbox.take(BATCH_MOST - 1)
            wires = [encode_binary(item, session.next_seq())]
            for more in items:
                metrics.frame_out(more.event_id)
                wires.append(encode_binary(more, session.next_seq()))
            metrics.BATCHES.inc()
            metrics.BATCHED_FRAMES.inc(len(wires))
            yield encode_batch(wires)
    except asyncio.CancelledError:
        return  # disconnected (a client that does not read) or shutting down
    finally:
        if deadline is not None:
            deadline.cancel()
        await cancel_and_wait(reader)
        await app.session_ended(session)


def refuse_connection(app: LobbyApp, reason: str) -> client_pb2.ServerFrame:
    """The error frame of a connection refused by a cap (limits.Admission)."""
    metrics.REFUSED_CONNECTIONS.labels(reason).inc()
    code = common_pb2.ERR_RATE_LIMITED if reason == "ip" else common_pb2.ERR_UNAVAILABLE
    return error_frame(code, app.admission.message(reason))


async def _read(app: LobbyApp, session: Session, incoming: AsyncIterator[Incoming]) -> None:
    """Read the client's frames: a logged-in session's heartbeats are answered at once, every
    other frame waits its turn in ``commands`` (one at a time, in order: ``_serve``), so a
    command that waits long (its room moving between tables) never holds a heartbeat's
    answer back past the client's deadline. A client that stops sending leaves its commands
    served, then the session closes."""
    commands: asyncio.Queue[client_pb2.ClientFrame | None] = asyncio.Queue(COMMANDS_WAITING)
    worker = asyncio.create_task(_serve(app, session, commands))
    try:
        async for item in incoming:
            session.touch()
            if isinstance(item, BadFrame):
                metrics.FRAMES_IN.labels("0").inc()
                session.send(error_frame(common_pb2.ERR_BAD_FRAME, item.reason))
            elif session.logged_in and item.HasField("heartbeat"):
                await dispatch(app, session, item)
            else:
                await commands.put(item)   # a full queue stops the reading until it drains
            if session.outbox.closed or worker.done():
                return
        await commands.put(None)
        await worker
    except grpc.aio.AioRpcError:
        pass  # the client went away
    finally:
        await cancel_and_wait(worker)
        session.close()


COMMANDS_WAITING = 32   # a session's frames read but not yet served, at most


async def _serve(app: LobbyApp, session: Session,
                 commands: asyncio.Queue[client_pb2.ClientFrame | None]) -> None:
    """Serve a session's commands one at a time, in the order they came."""
    while (frame := await commands.get()) is not None:
        await dispatch(app, session, frame)
        if session.outbox.closed:
            return
