"""The gRPC front door of the lobby: ``Lobby.Connect``, one bidi stream per client, both
ways raw bytes (session_loop.py decodes the client's frames and encodes the server's)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import grpc

from paiju.v1 import lobby_pb2
from services.lobby.app import LobbyApp
from services.lobby.client_ip import METADATA_KEY, client_ip, grpc_peer_ip, parse_networks
from services.lobby.session_loop import (
    decode_binary,
    encode_binary,
    refuse_connection,
    serve_session,
)
from services.lobby.sessions import Session

SERVICE: str = lobby_pb2.DESCRIPTOR.services_by_name["Lobby"].full_name
# How long a refused stream stays open after its refusal, for the client's first message.
# A stream ended at once fails the write a client makes on connecting (its login), and
# grpc then reports INTERNAL on the call instead of the refusal frame it holds. At most
# REFUSED_LINGERING streams wait so at once (a flood is what the caps refuse): past that a
# refused stream ends at once.
REFUSED_LINGER_SECONDS = 1.0
REFUSED_LINGERING = 1000


class LobbyService:
    def __init__(self, app: LobbyApp) -> None:
        self.app = app
        self.trusted = parse_networks(app.lobby.trusted_proxies)
        self.lingering = 0   # refused streams waiting for their client's first message

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
            linger = self.lingering < REFUSED_LINGERING   # counted before the frame leaves
            if linger:
                self.lingering += 1
            try:
                yield encode_binary(refuse_connection(self.app, refused), 1)
                if linger:
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(REFUSED_LINGER_SECONDS):
                            async for _ in requests:   # the first message, or the end
                                break
            finally:
                if linger:
                    self.lingering -= 1
            return
        try:
            session = Session(peer_ip=ip)
            incoming = (decode_binary(raw) async for raw in requests)
            async with contextlib.aclosing(serve_session(self.app, session, incoming,
                                                            batch=True)) as frames:
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
