"""The lobby's connection to one table instance: player commands as core NATS requests to
the table's command subject (``table.<address>.commands``, services/table/nats_commands.py),
and a gRPC channel for the unary calls (CreateRoom) and for one long-lived
``Table.Session`` stream shared by every session of this lobby, multiplexed by request id.

Commands go over NATS when the link has a NATS connection: at human pace a gRPC message
costs two wake-ups on each side (grpc.aio's poller thread, then the event loop), a NATS
message one, and the reply arrives on the connection that brings the room's events. A
table with nobody on its subject (an older version during a rolling update, or one that just
died) gets the command on the Session stream instead: a dead table's stream then fails at
once, as before. A broken stream fails its pending requests with ``Unavailable`` and is
opened again on the next command."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

import grpc
import nats.errors
from google.protobuf.message import DecodeError

from paiju.v1 import common_pb2, table_pb2, table_pb2_grpc
from services.common import bus
from services.common.tasks import cancel_and_wait
from services.lobby import metrics
from services.lobby.errors import Reject, Unavailable, Unreachable

# A table that vanishes without closing its connections (a killed pod whose address is gone)
# is found out by keepalive pings within about 15 s: its stream breaks, what is pending
# fails, and the commands follow the room to its next owner. Tables accept a ping every 5 s
# (services/common/server.py).
KEEPALIVE = (("grpc.keepalive_time_ms", 10_000), ("grpc.keepalive_timeout_ms", 5_000),
             ("grpc.keepalive_permit_without_calls", 1), ("grpc.http2.max_pings_without_data", 0))


MAX_IN_FLIGHT = 10_000   # commands of one link waiting for their replies


class TableLink:
    """The lobby's connection to one table instance: a channel, the unary stub and one
    bidi Session stream shared by every session of this lobby."""

    def __init__(self, address: str, timeout: float = 5.0,
                 channel: grpc.aio.Channel | None = None, nc: Any = None) -> None:
        self.address = address
        self.timeout = timeout
        self.channel = channel or grpc.aio.insecure_channel(address, options=KEEPALIVE)
        self.stub = table_pb2_grpc.TableStub(self.channel)
        self.nc = nc          # None: commands on the Session stream only
        self.subject = bus.table_commands(address)
        self._next_id = 0
        self._pending: dict[int, asyncio.Future[table_pb2.TableReply]] = {}
        self._outgoing: asyncio.Queue[table_pb2.TableCommand | None] | None = None
        self._reader: asyncio.Task[None] | None = None
        self._busy = 0       # commands and unary calls in flight

    @property
    def idle(self) -> bool:
        """Nothing in flight on this link (it may be closed without failing a request)."""
        return self._busy == 0 and not self._pending

    async def command(self, cmd: table_pb2.TableCommand,
                      timeout: float | None = None) -> table_pb2.TableReply:
        """Send one command and wait for its reply (``timeout`` seconds, default the link's):
        as a NATS request when the link has a connection and the table takes them there,
        else on the Session stream; Unavailable when no answer comes. A command sent to a
        table that died fails fast (no responders, then a refused dial or a broken stream);
        one already on its way over NATS when the table dies waits for ``timeout``."""
        timeout = self.timeout if timeout is None else timeout
        if self.nc is not None:
            reply = await self._request(cmd, timeout)
            if reply is not None:
                return reply
        self._ensure_stream()
        assert self._outgoing is not None
        if len(self._pending) >= MAX_IN_FLIGHT or self._outgoing.full():
            # the table does not keep up (or its stream does not take writes): say so now
            raise Unavailable(f"table {self.address}: {MAX_IN_FLIGHT} commands on their way")
        self._next_id += 1
        cmd.request_id = self._next_id
        future: asyncio.Future[table_pb2.TableReply] = asyncio.get_running_loop().create_future()
        self._pending[cmd.request_id] = future
        started = time.perf_counter()
        self._outgoing.put_nowait(cmd)
        self._busy += 1
        try:
            reply = await asyncio.wait_for(future, timeout)
        except TimeoutError:
            raise Unavailable(f"table {self.address} did not answer in {timeout:g}s") from None
        finally:
            self._busy -= 1
            self._pending.pop(cmd.request_id, None)
        return _answered(cmd, reply, started, "grpc")

    async def _request(self, cmd: table_pb2.TableCommand,
                       timeout: float) -> table_pb2.TableReply | None:
        """The command as a NATS request; None when nobody takes the table's commands there
        (the caller tries the Session stream)."""
        if self._busy >= MAX_IN_FLIGHT:
            raise Unavailable(f"table {self.address}: {MAX_IN_FLIGHT} commands on their way")
        self._next_id += 1
        cmd.request_id = self._next_id
        started = time.perf_counter()
        self._busy += 1
        try:
            msg = await self.nc.request(self.subject, cmd.SerializeToString(), timeout=timeout)
        except nats.errors.NoRespondersError:
            return None
        except (TimeoutError, nats.errors.TimeoutError):
            raise Unavailable(f"table {self.address} did not answer in {timeout:g}s") from None
        except nats.errors.Error as exc:   # the lobby's NATS connection is away
            raise Unavailable(f"table {self.address}: {exc!r}") from None
        finally:
            self._busy -= 1
        try:
            reply = table_pb2.TableReply.FromString(msg.data)
        except DecodeError:
            raise Unavailable(f"table {self.address}: an undecodable reply") from None
        return _answered(cmd, reply, started, "nats")

    async def create_room(self, req: table_pb2.CreateRoomRequest) -> table_pb2.CreateRoomReply:
        self._busy += 1
        try:
            return await self.stub.CreateRoom(req, timeout=self.timeout)
        except grpc.aio.AioRpcError as exc:
            if exc.code() == grpc.StatusCode.INVALID_ARGUMENT:
                raise Reject(common_pb2.ERR_BAD_OPTIONS, exc.details() or "bad options") from None
            problem = f"table {self.address}: {exc.code().name} {exc.details()}"
            if exc.code() == grpc.StatusCode.UNAVAILABLE:
                raise Unreachable(problem) from None
            raise Unavailable(problem) from None
        finally:
            self._busy -= 1

    def _ensure_stream(self) -> None:
        if self._reader is not None and not self._reader.done():
            return
        # bounded: commands beyond MAX_IN_FLIGHT are refused, one place is kept for the end
        queue: asyncio.Queue[table_pb2.TableCommand | None] = asyncio.Queue(MAX_IN_FLIGHT + 1)
        self._outgoing = queue
        call = self.stub.Session(_drain(queue))
        self._reader = asyncio.create_task(self._read(call, queue))

    async def _read(self, call: Any, queue: asyncio.Queue[Any]) -> None:
        reason = "stream ended"
        try:
            async for reply in call:
                future = self._pending.get(reply.request_id)
                if future is not None and not future.done():
                    future.set_result(reply)
        except grpc.aio.AioRpcError as exc:
            reason = f"{exc.code().name} {exc.details()}"
        finally:
            with contextlib.suppress(asyncio.QueueFull):   # cancelling the call ends it too
                queue.put_nowait(None)
            if self._outgoing is queue:
                self._outgoing = None
            self._fail_pending(f"table {self.address} session stream broke: {reason}")
            call.cancel()

    def _fail_pending(self, message: str) -> None:
        for future in list(self._pending.values()):
            if not future.done():
                future.set_exception(Unavailable(message))
        self._pending.clear()

    async def close(self) -> None:
        await cancel_and_wait(self._reader)
        await self.channel.close()


async def _drain(queue: asyncio.Queue[table_pb2.TableCommand | None],
                 ) -> AsyncIterator[table_pb2.TableCommand]:
    while (cmd := await queue.get()) is not None:
        yield cmd


def _answered(cmd: table_pb2.TableCommand, reply: table_pb2.TableReply, started: float,
              transport: str) -> table_pb2.TableReply:
    """``reply``, counted: its round trip by command kind, the command by transport."""
    metrics.FORWARD_SECONDS.labels(cmd.kind or "frame").observe(time.perf_counter() - started)
    metrics.TABLE_COMMANDS.labels(transport).inc()
    return reply
