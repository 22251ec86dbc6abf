"""gRPC adapter of the lobby service: ``Lobby.Connect``, one bidi stream per client.

Client frames are parsed here (not by gRPC) so that undecodable bytes get ERR_BAD_FRAME and
the session goes on. Each stream has a reader task that handles frames one at a time, in
order, and a writer (a generator) that numbers and sends the session's outbound frames.
``serve_session`` is that pair for any transport: the WebSocket front door (ws.py) runs its
connections through it too, with its own encoder.

The Connect stream sends bytes (no response serializer): relayed frames leave as their
shared serialization behind the session's seq field (sessions.Relayed), the lobby's own
frames are serialized with their seq.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass

import grpc
from google.protobuf.message import DecodeError
from grpc_health.v1 import health_pb2

from paiju.frames import error_frame
from paiju.v1 import client_pb2, common_pb2, lobby_pb2
from services.common.config import Config, require_console_token, require_token_secret
from services.common.health import LIVENESS, DependencyWatch, nats_connected
from services.common.server import ServiceHost, start_service
from services.common.tasks import cancel_and_wait
from services.lobby import metrics
from services.lobby.app import LobbyApp
from services.lobby.client_ip import METADATA_KEY, client_ip, grpc_peer_ip, parse_networks
from services.lobby.commands import dispatch
from services.lobby.console import start_console
from services.lobby.sessions import Outgoing, Relayed, Session

log = logging.getLogger("paiju.lobby.server")

SERVICE = lobby_pb2.DESCRIPTOR.services_by_name["Lobby"].full_name
HEALTH_PERIOD = 1.0   # seconds between two looks at the lobby's dependencies (NATS)


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
    return item.SerializeToString()


# an outbound frame and its seq -> what the transport sends (bytes, or JSON text on ws.py)
Encoder = Callable[[Outgoing, int], bytes | str]


async def serve_session(app: LobbyApp, session: Session,
                        incoming: AsyncIterator[Incoming],
                        encode: Encoder = encode_binary) -> AsyncGenerator[bytes | str, None]:
    """The life of one client connection, whatever carries it (a Connect stream or a
    WebSocket): a reader task dispatches the decoded frames one at a time, in order, and this
    generator yields the session's outbound frames, numbered and encoded, until the session
    closes."""
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
        while (item := await session.outbox.next()) is not None:
            metrics.frame_out(item.event_id)
            yield encode(item, session.next_seq())
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
    try:
        async for item in incoming:
            session.touch()
            if isinstance(item, BadFrame):
                metrics.FRAMES_IN.labels("0").inc()
                session.send(error_frame(common_pb2.ERR_BAD_FRAME, item.reason))
                continue
            await dispatch(app, session, item)
            if session.outbox.closed:
                return
    except grpc.aio.AioRpcError:
        pass  # the client went away
    finally:
        session.close()


class LobbyService:
    def __init__(self, app: LobbyApp) -> None:
        self.app = app
        self.trusted = parse_networks(app.lobby.trusted_proxies)

    def client_ip(self, context: grpc.aio.ServicerContext) -> str:
        """The peer's IP, or the client a trusted proxy names in ``x-forwarded-for``."""
        forwarded = [str(value) for key, value in context.invocation_metadata() or ()
                     if key == METADATA_KEY]
        return client_ip(grpc_peer_ip(context.peer()), forwarded, self.trusted)

    async def Connect(self, requests: AsyncIterator[bytes],  # noqa: N802 - gRPC method name
                      context: grpc.aio.ServicerContext) -> AsyncIterator[bytes | str]:
        ip = self.client_ip(context)
        refused = self.app.admission.admit(ip)
        if refused is not None:   # one error frame, and the stream ends
            yield encode_binary(refuse_connection(self.app, refused), 1)
            return
        try:
            session = Session(peer_ip=ip)
            incoming = (decode_binary(raw) async for raw in requests)
            async with contextlib.aclosing(serve_session(self.app, session, incoming)) as frames:
                async for frame in frames:
                    yield frame
        finally:
            self.app.admission.release(ip)


def register_lobby(server: grpc.aio.Server, service: LobbyService) -> str:
    # both ways raw bytes: decode_binary parses requests, serve_session serializes replies
    handler = grpc.stream_stream_rpc_method_handler(
        service.Connect, request_deserializer=None, response_serializer=None)
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(SERVICE, {"Connect": handler}),))
    return SERVICE


async def start(cfg: Config, *, port: int | None = None,
                metrics_port: int | None = None) -> ServiceHost:
    c = cfg.lobby
    require_token_secret(cfg)
    require_console_token(cfg)
    # the directory buckets may not be there yet: serve anyway, not ready, until they are
    app = await LobbyApp.open(cfg, wait_directory=False)
    service = LobbyService(app)
    try:
        host = await start_service("lobby", c.host, c.port if port is None else port,
                                   c.metrics_port if metrics_port is None else metrics_port,
                                   lambda server: [register_lobby(server, service)],
                                   serving=False,   # until NATS and the directory are there
                                   cfg=cfg)   # the public certificate, when configured
    except BaseException:
        await app.close()
        raise
    host.on_stop.append(app.close)
    host.app = app  # type: ignore[attr-defined]
    # SIGTERM: health is NOT_SERVING first (ServiceHost.stop), then every client is told to
    # reconnect elsewhere and its stream ends, then the server stops
    host.on_drain.append(app.drain)
    app.spawn(app.directory.prune_forever(app.table_addresses))
    await _start_ws(cfg, app, host)
    try:  # the operator console, on its own port (lobby.console_port; -1 = off)
        console = await start_console(app, cfg)
    except BaseException:
        await host.stop(0)
        raise
    host.console = console  # type: ignore[attr-defined]
    host.on_stop.append(console.close)
    # readiness (gRPC health "" and the Lobby service, WebSocket /healthz) while NATS is up
    # and the directory open, liveness (gRPC health "liveness", /livez) until NATS has been
    # down too long (a directory not open yet is not a reason to restart the lobby)
    try:
        app.watch = await _watch_health(cfg, app, host)
    except BaseException:
        await host.stop(0)
        raise
    return host


async def _watch_health(cfg: Config, app: LobbyApp, host: ServiceHost) -> DependencyWatch:
    """services.common.health.watch_service, with readiness also waiting for the directory
    (LobbyApp.ready)."""

    async def publish(_ready: bool = False, live: bool = True) -> None:
        await host.set_serving(app.ready)
        await host.health.set(LIVENESS, health_pb2.HealthCheckResponse.SERVING
                              if watch.live else health_pb2.HealthCheckResponse.NOT_SERVING)

    watch = DependencyWatch({"nats": nats_connected(app.nc)},
                            liveness_seconds=cfg.nats.liveness_seconds, period=HEALTH_PERIOD,
                            on_change=publish)
    app.watch = watch
    await watch.poll()
    await publish()
    app.on_ready_change = publish
    watch.start()
    host.watch = watch
    host.on_stop.insert(0, watch.stop)  # hooks run in reverse: the watch stops last
    return watch


async def _start_ws(cfg: Config, app: LobbyApp, host: ServiceHost) -> None:
    """The WebSocket front door next to the gRPC port (``lobby.ws_port``; -1 = off): its
    bound port is ``host.ws_port``; it stops (closing its sessions) before the app closes."""
    from services.lobby.ws import WsFront  # ws.py builds on serve_session above

    host.ws_port = -1  # type: ignore[attr-defined]
    if cfg.lobby.ws_port < 0:
        return
    front = WsFront(app)
    try:
        host.ws_port = await front.start(cfg.lobby.host, cfg.lobby.ws_port)  # type: ignore[attr-defined]
    except BaseException:
        await host.stop(0)
        raise
    host.on_stop.append(front.stop)
