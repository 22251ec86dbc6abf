"""The lobby's connection to one table instance: player commands as core NATS requests to
the table's command subject (``table.<address>.commands``, services/table/nats_commands.py),
the one path for them, and a gRPC channel for the unary calls (CreateRoom).

A NATS message costs one wake-up on each side, and the reply arrives on the connection
that brings the room's events. A table with nobody on its subject (one that died or has
not started) fails the command at once with ``Unreachable``: the command never got there,
and the lobby asks the directory who owns the room now (forwarding.py).

A command or its reply can be lost without a word while a NATS connection moves to another
server (its server stopping in lame-duck mode or dying, of the lobby or of the table: a
message routed by interest a moment old). A command unanswered for ``RESEND_SECONDS`` is
sent again under the same request id (and again after waits doubling each time), and the
first reply to any copy is the answer. A table that answers slowly (a burst: a restarted
lobby's players all asking for their snapshots) stretches that first wait: the link keeps a
smoothed round trip and its variation, as TCP does for its retransmission timeout (RFC
6298), and waits their sum with four variations when that is longer, up to
``MAX_RESEND_SECONDS``: copies go to commands likely lost, not to every command of a busy
table; a copy sent doubles the wait of the other commands until one sent once is answered.
The table answers a command once whatever its copies: it drops a copy while the first is
under way and sends the first's reply again to a later one
(services/table/nats_commands.py). So a lost command costs a player half a second while its
table answers promptly, not the room's turn timer, and a copy to a table busy for longer
than that costs it a lookup, not a second answer. And a command waits no longer for a table
the room has left (its directory entry names another: ``gone``)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

import grpc
import nats.errors
from google.protobuf.message import DecodeError

from paiju.v1 import common_pb2, table_pb2, table_pb2_grpc
from services.common import bus
from services.lobby import metrics
from services.lobby.errors import Reject, Unavailable, Unreachable

# A table that vanishes without closing its connections (a killed pod whose address is gone)
# is found out by keepalive pings within about 15 s. Tables accept a ping every 5 s
# (services/common/server.py).
KEEPALIVE = (("grpc.keepalive_time_ms", 10_000), ("grpc.keepalive_timeout_ms", 5_000),
             ("grpc.keepalive_permit_without_calls", 1), ("grpc.http2.max_pings_without_data", 0))


MAX_IN_FLIGHT = 10_000   # commands of one link waiting for their replies
RESEND_SECONDS = 0.5      # the least wait for a reply before a copy (then waits double)
MAX_RESEND_SECONDS = 4.0  # the longest first wait the link's round trips can stretch it to
NO_RESPONDERS = "503"    # the server's status to the reply subject: nobody on the subject


class TableLink:
    """The lobby's connection to one table instance: its command subject on the lobby's
    NATS connection, and a channel with the unary stub."""

    def __init__(self, address: str, timeout: float = 5.0,
                 channel: grpc.aio.Channel | None = None, nc: Any = None) -> None:
        self.address = address
        self.timeout = timeout
        self.channel = channel or grpc.aio.insecure_channel(address, options=KEEPALIVE)
        self.stub = table_pb2_grpc.TableStub(self.channel)
        self.nc = nc          # the lobby's NATS connection (None: no commands, say tools)
        self.subject = bus.table_commands(address)
        self._next_id = 0
        self._busy = 0       # commands and unary calls in flight
        self._inbox = ""     # replies come to <inbox>.<request id>, on one subscription
        self._replies: Any = None
        self._waiting: dict[int, asyncio.Future[Any]] = {}   # request id -> its reply
        self._resends: set[asyncio.Task[None]] = set()
        self._srtt: float | None = None   # smoothed round trip of its commands, seconds
        self._rttvar = 0.0                # and its mean deviation
        self._copied: set[int] = set()    # commands in flight with a copy sent
        # how long a command waits for its reply before its first copy goes
        self.resend_wait = RESEND_SECONDS
        metrics.RESEND_WAIT.labels(address).set(RESEND_SECONDS)

    def _wait(self, seconds: float) -> None:
        """The link's resend wait from now on (its gauge too, when it changes)."""
        seconds = min(MAX_RESEND_SECONDS, seconds)
        if seconds != self.resend_wait:
            self.resend_wait = seconds
            metrics.RESEND_WAIT.labels(self.address).set(seconds)

    def _observe(self, seconds: float) -> None:
        """The round trip of a command sent once into the smoothed figures, and the wait
        from them (RFC 6298; a command with copies says nothing: which copy was answered is
        not known, Karn's rule)."""
        if self._srtt is None:
            self._srtt, self._rttvar = seconds, seconds / 2
        else:
            self._rttvar += (abs(self._srtt - seconds) - self._rttvar) / 4
            self._srtt += (seconds - self._srtt) / 8
        self._wait(max(RESEND_SECONDS, self._srtt + 4 * self._rttvar))

    @property
    def idle(self) -> bool:
        """Nothing in flight on this link (it may be closed without failing a request)."""
        return self._busy == 0

    async def command(self, cmd: table_pb2.TableCommand, timeout: float | None = None,
                      gone: asyncio.Future[None] | None = None) -> table_pb2.TableReply:
        """Send one command as a NATS request and wait for its reply (``timeout`` seconds,
        default the link's), sending it again after :attr:`resend_wait` (then after waits
        doubling each time) meanwhile.
        Unreachable when nobody takes the table's commands (a dead table: at once),
        Unavailable when no answer comes in time, the lobby's NATS is away, or ``gone`` is
        done first (the room has left this table: rooms.RoomCache.left)."""
        timeout = self.timeout if timeout is None else timeout
        if self.nc is None:
            raise Unavailable(f"table {self.address}: this link has no NATS connection")
        if self._busy >= MAX_IN_FLIGHT:
            # the table does not keep up: say so now
            raise Unavailable(f"table {self.address}: {MAX_IN_FLIGHT} commands on their way")
        if self._replies is None:
            inbox = self.nc.new_inbox()
            replies = await self.nc.subscribe(inbox + ".*", cb=self._on_reply)
            if self._replies is None:
                self._inbox, self._replies = inbox, replies
            else:   # another command subscribed meanwhile
                await replies.unsubscribe()
        self._next_id += 1
        request_id = cmd.request_id = self._next_id
        data = cmd.SerializeToString()
        reply_to = f"{self._inbox}.{request_id}"
        loop = asyncio.get_running_loop()
        answer = self._waiting[request_id] = loop.create_future()
        if gone is not None:
            def left(_: asyncio.Future[None]) -> None:
                if not answer.done():
                    answer.set_exception(Unavailable(
                        f"room {cmd.room_id} left table {self.address} before it answered"))
            gone.add_done_callback(left)
        wait = self.resend_wait
        resend = loop.call_later(wait, self._resend, request_id, data, reply_to, wait)
        started = time.perf_counter()
        self._busy += 1
        try:
            async with asyncio.timeout(timeout):
                await self.nc.publish(self.subject, data, reply=reply_to)
                msg = await answer
        except (TimeoutError, nats.errors.TimeoutError):
            raise Unavailable(f"table {self.address} did not answer in {timeout:g}s") from None
        except nats.errors.Error as exc:   # the lobby's NATS connection is away
            raise Unavailable(f"table {self.address}: {exc!r}") from None
        finally:
            resend.cancel()
            self._waiting.pop(request_id, None)
            copied = request_id in self._copied
            self._copied.discard(request_id)
            self._busy -= 1
        if (msg.headers or {}).get("Status") == NO_RESPONDERS:   # NATS's answer, not the table's
            raise Unreachable(f"table {self.address}: nobody takes its commands")
        if not copied:
            self._observe(time.perf_counter() - started)
        try:
            reply: table_pb2.TableReply = table_pb2.TableReply.FromString(msg.data)
        except DecodeError:
            raise Unavailable(f"table {self.address}: an undecodable reply") from None
        metrics.FORWARD_SECONDS.labels(cmd.kind or "frame").observe(time.perf_counter() - started)
        metrics.TABLE_COMMANDS.inc()
        return reply

    async def _on_reply(self, msg: Any) -> None:
        """The first reply to a command's copies answers it; later ones find nobody."""
        try:
            answer = self._waiting.get(int(msg.subject.rsplit(".", 1)[1]))
        except ValueError:
            return
        if answer is not None and not answer.done():
            answer.set_result(msg)

    def _resend(self, request_id: int, data: bytes, reply_to: str, waited: float) -> None:
        """One more copy, and the next one after twice the wait (a room held up, say by its
        stream's election, gets a few copies, not one every half second). A command whose
        wait is shorter than the link's now (it grew since the command went) waits the
        difference first."""
        if request_id not in self._waiting:
            return
        if waited < self.resend_wait:
            asyncio.get_running_loop().call_later(self.resend_wait - waited, self._resend,
                                                  request_id, data, reply_to, self.resend_wait)
            return
        # a wait that proved too short: the next commands wait twice as long, until a command
        # sent once gives a round trip again (RFC 6298's back-off; a burst's first commands
        # all went out before any reply)
        self._wait(max(self.resend_wait, waited * 2))
        self._copied.add(request_id)
        metrics.COMMANDS_RESENT.inc()
        task = asyncio.ensure_future(self._publish_again(data, reply_to))
        self._resends.add(task)
        task.add_done_callback(self._resends.discard)
        asyncio.get_running_loop().call_later(waited * 2, self._resend, request_id, data,
                                              reply_to, waited * 2)

    async def _publish_again(self, data: bytes, reply_to: str) -> None:
        try:
            await self.nc.publish(self.subject, data, reply=reply_to)
        except nats.errors.Error:   # the connection is away: the next copy, or the timeout
            pass

    async def create_room(self, req: table_pb2.CreateRoomRequest) -> table_pb2.CreateRoomReply:
        self._busy += 1
        try:
            created: table_pb2.CreateRoomReply = await self.stub.CreateRoom(
                req, timeout=self.timeout)
            return created
        except grpc.aio.AioRpcError as exc:
            if exc.code() == grpc.StatusCode.INVALID_ARGUMENT:
                raise Reject(common_pb2.ERR_BAD_OPTIONS, exc.details() or "bad options") from None
            problem = f"table {self.address}: {exc.code().name} {exc.details()}"
            if exc.code() == grpc.StatusCode.UNAVAILABLE:
                raise Unreachable(problem) from None
            raise Unavailable(problem) from None
        finally:
            self._busy -= 1

    async def close(self) -> None:
        with contextlib.suppress(KeyError):   # another link to the table removed it first
            metrics.RESEND_WAIT.remove(self.address)
        if self._replies is not None:
            try:
                await self._replies.unsubscribe()
            except nats.errors.Error:   # the connection is closed already
                pass
            self._replies = None
        await self.channel.close()
