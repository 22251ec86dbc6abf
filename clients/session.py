"""A client session on the lobby's Connect stream: numbered requests with awaited replies,
and every push in one queue. Shared by the robots and the terminal client."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import itertools
import time
from collections.abc import AsyncIterator
from typing import Any

import grpc
from google.protobuf.message import Message

from paiju import frames
from paiju.v1 import client_pb2, lobby_pb2_grpc
from paiju.v1 import lobby_msgs_pb2 as lm


def mint_token(user_id: int, secret: str, ttl: int = 86400) -> str:
    """A login token in the documented format (docs/services.md), for robots and dev use."""
    body = f"{user_id}.{int(time.time()) + ttl}"
    return f"{body}.{hmac.new(secret.encode(), body.encode(), hashlib.sha256).hexdigest()}"


class SessionClosed(Exception):
    pass


class LobbySession:
    def __init__(self, address: str) -> None:
        self.address = address
        self.channel = grpc.aio.insecure_channel(address)
        self.stub = lobby_pb2_grpc.LobbyStub(self.channel)
        self._seq = itertools.count(1)
        self._out: asyncio.Queue[client_pb2.ClientFrame | None] = asyncio.Queue()
        self._waiting: dict[int, asyncio.Future[client_pb2.ServerFrame]] = {}
        self.pushes: asyncio.Queue[client_pb2.ServerFrame | None] = asyncio.Queue()
        self._call: Any = None
        self._reader: asyncio.Task[None] | None = None
        self.closed = asyncio.Event()
        self.received: list[client_pb2.ServerFrame] = []

    async def _requests(self) -> AsyncIterator[client_pb2.ClientFrame]:
        while (frame := await self._out.get()) is not None:
            yield frame

    async def open(self) -> None:
        self._call = self.stub.Connect(self._requests())
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        try:
            async for frame in self._call:
                self.received.append(frame)
                fut = self._waiting.pop(frame.reply_to, None) if frame.reply_to else None
                if fut is not None and not fut.done():
                    fut.set_result(frame)
                else:
                    await self.pushes.put(frame)
        except grpc.aio.AioRpcError:
            pass
        finally:
            self.closed.set()
            for fut in self._waiting.values():
                if not fut.done():
                    fut.set_exception(SessionClosed("the lobby closed the stream"))
            await self.pushes.put(None)

    async def request(self, payload: Message | client_pb2.ClientFrame,
                      timeout: float = 15) -> client_pb2.ServerFrame:
        """Send a request and wait for the frame that answers it (reply_to == its seq)."""
        frame = payload if isinstance(payload, client_pb2.ClientFrame) else frames.client_frame(payload)
        frame.seq = next(self._seq)
        if self.closed.is_set():
            raise SessionClosed("the stream is closed")
        fut: asyncio.Future[client_pb2.ServerFrame] = asyncio.get_running_loop().create_future()
        self._waiting[frame.seq] = fut
        await self._out.put(frame)
        return await asyncio.wait_for(fut, timeout)

    async def send(self, payload: Message | client_pb2.ClientFrame) -> int:
        frame = payload if isinstance(payload, client_pb2.ClientFrame) else frames.client_frame(payload)
        frame.seq = next(self._seq)
        await self._out.put(frame)
        return frame.seq

    async def login(self, token: str, **fields: Any) -> client_pb2.ServerFrame:
        return await self.request(lm.Login(token=token, **fields))

    async def close(self) -> None:
        await self._out.put(None)
        if self._call is not None:
            self._call.cancel()
        if self._reader is not None:
            try:
                await asyncio.wait_for(self._reader, 2)
            except (TimeoutError, asyncio.CancelledError):
                pass
        await self.channel.close()
