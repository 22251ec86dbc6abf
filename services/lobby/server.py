"""gRPC adapter of the lobby service: ``Lobby.Connect``, one bidi stream per client.

Client frames are parsed here (not by gRPC) so that undecodable bytes get ERR_BAD_FRAME and
the session goes on. Each stream has a reader task that handles frames one at a time, in
order, and a writer (this generator) that numbers and sends the session's outbound frames.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

import grpc
from google.protobuf.message import DecodeError

from paiju.frames import error_frame
from paiju.v1 import client_pb2, common_pb2, lobby_pb2
from services.common.config import Config, require_token_secret
from services.common.server import ServiceHost, start_service
from services.lobby import metrics
from services.lobby.app import LobbyApp
from services.lobby.commands import dispatch
from services.lobby.login import peer_ip
from services.lobby.sessions import Session

log = logging.getLogger("paiju.lobby.server")

SERVICE = lobby_pb2.DESCRIPTOR.services_by_name["Lobby"].full_name


class LobbyService:
    def __init__(self, app: LobbyApp) -> None:
        self.app = app

    async def Connect(self, requests: AsyncIterator[bytes],  # noqa: N802 - gRPC method name
                      context: grpc.aio.ServicerContext) -> AsyncIterator[client_pb2.ServerFrame]:
        session = Session(peer_ip=peer_ip(context.peer()))
        session.task = asyncio.current_task()
        self.app.hub.add(session)
        reader = asyncio.create_task(self._read(session, requests))
        try:
            while (frame := await session.outbox.next()) is not None:
                metrics.FRAMES_OUT.labels(str(frame.event_id)).inc()
                yield session.stamp(frame)
        except asyncio.CancelledError:
            return  # disconnected (a client that does not read) or shutting down
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await reader
            await self.app.session_ended(session)

    async def _read(self, session: Session, requests: AsyncIterator[bytes]) -> None:
        try:
            async for raw in requests:
                session.touch()
                frame = client_pb2.ClientFrame()
                try:
                    frame.ParseFromString(raw)
                except DecodeError:
                    metrics.FRAMES_IN.labels("0").inc()
                    session.send(error_frame(common_pb2.ERR_BAD_FRAME, "undecodable frame"))
                    continue
                await dispatch(self.app, session, frame)
                if session.outbox.closed:
                    return
        except grpc.aio.AioRpcError:
            pass  # the client went away
        finally:
            session.close()


def register_lobby(server: grpc.aio.Server, service: LobbyService) -> str:
    handler = grpc.stream_stream_rpc_method_handler(
        service.Connect, request_deserializer=None,
        response_serializer=client_pb2.ServerFrame.SerializeToString)
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(SERVICE, {"Connect": handler}),))
    return SERVICE


async def start(cfg: Config, *, port: int | None = None,
                metrics_port: int | None = None) -> ServiceHost:
    c = cfg.lobby
    require_token_secret(cfg)
    app = await LobbyApp.open(cfg)
    service = LobbyService(app)
    try:
        host = await start_service("lobby", c.host, c.port if port is None else port,
                                   c.metrics_port if metrics_port is None else metrics_port,
                                   lambda server: [register_lobby(server, service)])
    except BaseException:
        await app.close()
        raise
    host.on_stop.append(app.close)
    host.app = app  # type: ignore[attr-defined]
    return host
