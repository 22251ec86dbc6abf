"""The lobby's WebSocket front door (``GET /ws``, services/lobby/ws.py) as the client's
transport: the ``Lobby.Connect`` protocol in binary messages, one serialized ClientFrame or
ServerFrame each (docs/protocol.md). It stands in for the gRPC stub and call that
clients/session.py uses otherwise, with just what the session asks of them:
``connect(requests)`` opens a stream whose ServerFrames are read with ``async for``, and
``cancel()`` ends it.

A lobby address ``ws://host:port/ws`` or ``wss://host:port/ws`` selects it. The lobby's
WebSocket costs it less CPU per message than the gRPC stream (bench/reports/lobby.md:
grpc.aio hands every message to its poller thread and back; aiohttp writes on the loop).
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator

import aiohttp
from google.protobuf.message import DecodeError

from paiju.v1 import client_pb2

MAX_MESSAGE = 16 << 20     # a room list or a snapshot; the lobby's own sends are far smaller


def is_ws(address: str) -> bool:
    return address.startswith(("ws://", "wss://"))


def ssl_context(ca_file: str | None, tls: bool) -> ssl.SSLContext | None:
    """Trust the CA in ``ca_file``, or with ``tls`` the system's CAs (``wss://`` verifies
    with the default CAs anyway); None: aiohttp's default."""
    if ca_file:
        return ssl.create_default_context(cafile=ca_file)
    if tls:
        return ssl.create_default_context()
    return None


class WsEdge:
    """A lobby's WebSocket URL: opens streams (one connection each), like a stub on a
    channel; ``close`` closes the HTTP client they share."""

    def __init__(self, url: str, context: ssl.SSLContext | None = None) -> None:
        self.url = url
        self.context = context
        self._http: aiohttp.ClientSession | None = None

    def connect(self, requests: AsyncIterator[client_pb2.ClientFrame]) -> WsStream:
        if self._http is None or self._http.closed:
            self._http = aiohttp.ClientSession()
        return WsStream(self._http, self.url, self.context, requests)

    async def close(self) -> None:
        if self._http is not None:
            await self._http.close()
            self._http = None


class WsStream:
    """One WebSocket connection: ``requests`` are sent as they come, the lobby's frames are
    read with ``async for`` until the connection ends (closed, refused, or cancelled), which
    ends the iteration; no error is raised for the connection's failure."""

    def __init__(self, http: aiohttp.ClientSession, url: str, context: ssl.SSLContext | None,
                 requests: AsyncIterator[client_pb2.ClientFrame]) -> None:
        self._opened: asyncio.Task[aiohttp.ClientWebSocketResponse] = asyncio.ensure_future(
            # no WebSocket pings: the session's own beats find a lobby that stopped
            # answering (aiohttp's pong deadline runs on the event loop: with pings, sessions
            # resumed under load in bench_capacity, likely dropped by a late pong)
            http.ws_connect(url, ssl=context if context is not None else True,
                            max_msg_size=MAX_MESSAGE))
        self._writer = asyncio.ensure_future(self._write(requests))

    async def _write(self, requests: AsyncIterator[client_pb2.ClientFrame]) -> None:
        try:
            ws = await self._opened
            async for frame in requests:
                await ws.send_bytes(frame.SerializeToString())
        except (aiohttp.ClientError, OSError):
            self.cancel()     # the reader sees the end

    def __aiter__(self) -> AsyncIterator[client_pb2.ServerFrame]:
        return self._frames()

    async def _frames(self) -> AsyncIterator[client_pb2.ServerFrame]:
        try:
            ws = await self._opened
        except (aiohttp.ClientError, OSError):
            self.cancel()
            return
        except asyncio.CancelledError:
            self.cancel()
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise   # the reader itself was cancelled, not only the connection attempt
            return
        try:
            async for msg in ws:
                if msg.type != aiohttp.WSMsgType.BINARY:
                    break     # closing, closed or an error (the lobby answers binary in kind)
                try:
                    yield client_pb2.ServerFrame.FromString(msg.data)
                except DecodeError:
                    break
        except (aiohttp.ClientError, OSError):
            pass
        finally:
            self.cancel()

    def cancel(self) -> None:
        """End the stream: the writer stops, the connection is closed."""
        self._writer.cancel()
        if not self._opened.done():
            self._opened.cancel()
        elif not self._opened.cancelled() and self._opened.exception() is None:
            ws = self._opened.result()
            if not ws.closed:
                task = asyncio.ensure_future(ws.close())
                task.add_done_callback(_quiet)


def _quiet(task: asyncio.Task[bool]) -> None:
    with contextlib.suppress(BaseException):
        task.exception()
