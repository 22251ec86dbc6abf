"""A client session on the lobby's Connect stream: numbered requests with awaited replies,
and every push in one queue. Shared by the robots and the terminal client.

A session may know several lobby addresses (``"a:50051,b:50051"`` or a list). When its
stream ends without a KickOut (the lobby was killed, or it sent a ``Reconnect`` frame because
it is draining), :meth:`LobbySession.reconnect` opens a stream to the next address, after a
pause (the lobby's ``after_ms``, then an exponential backoff with jitter), and logs in again:
the lobby then resumes the seat (LoginOk.room, then the room's snapshot as pushes). It gives
up with :class:`GaveUp` after ``Backoff.give_up`` seconds.

``pushes`` gets every frame that is not the reply to a request, and ``None`` when the current
stream ends; the streams tried during a reconnect that did not get as far as a LoginOk put
nothing there (their failure is the reconnect's business).

A lobby that serves TLS (``lobby.public_cert_file``) is reached with ``ca_file`` (the PEM of
the CA that signed its certificate, e.g. a private one) or ``tls=True`` (the system's CAs);
the certificate must name the host the client dials.

An address ``ws://host:port/ws`` (``wss://`` with TLS) speaks the same protocol over the
lobby's WebSocket instead (clients/ws_edge.py), which costs the lobby less per message.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import itertools
import logging
import random
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf.message import Message

from clients.ws_edge import WsEdge, is_ws, ssl_context
from paiju import frames
from paiju.v1 import client_pb2, common_pb2, lobby_pb2_grpc
from paiju.v1 import lobby_msgs_pb2 as lm

log = logging.getLogger("paiju.client")

# a login refused for these reasons is not retried: the credentials will not get better
FINAL_LOGIN_CODES = frozenset({common_pb2.ERR_BAD_TOKEN, common_pb2.ERR_TOKEN_EXPIRED})
LOGIN_TIMEOUT = 10.0
# the address a client uses when told none: the lobby's WebSocket on this machine (config/dev.toml's
# ws_port), the cheaper of its two front doors per message (bench/reports/capacity_ws.md)
DEFAULT_LOBBY = "ws://127.0.0.1:8080/ws"
# a lobby that vanishes without closing the connection is found out within about 15 s (the
# lobby accepts a ping every 5 s)
KEEPALIVE = (("grpc.keepalive_time_ms", 10_000), ("grpc.keepalive_timeout_ms", 5_000),
             ("grpc.keepalive_permit_without_calls", 1), ("grpc.http2.max_pings_without_data", 0))


def mint_token(user_id: int, secret: str, ttl: int = 86400, gen: int = 0) -> str:
    """A login token in the documented format (docs/services.md), for robots and dev use;
    ``gen`` > 0 gives it a generation (a newer sign-in revokes the lower ones)."""
    body = f"{user_id}.{int(time.time()) + ttl}" + (f".{gen}" if gen else "")
    return f"{body}.{hmac.new(secret.encode(), body.encode(), hashlib.sha256).hexdigest()}"


def channel_credentials(ca_file: str | None = None,
                        tls: bool = False) -> grpc.ChannelCredentials | None:
    """TLS credentials to reach a lobby: trusting the CA in ``ca_file`` (PEM), or with
    ``tls`` the system's CAs; None for plaintext (dev)."""
    if ca_file:
        with open(ca_file, "rb") as f:
            return grpc.ssl_channel_credentials(root_certificates=f.read())
    if tls:
        return grpc.ssl_channel_credentials()
    return None


def lobby_channel(address: str,
                  credentials: grpc.ChannelCredentials | None) -> grpc.aio.Channel:
    if credentials is None:
        return grpc.aio.insecure_channel(address, options=KEEPALIVE)
    return grpc.aio.secure_channel(address, credentials, options=KEEPALIVE)


class GrpcEdge:
    """A lobby's gRPC address: a channel, and Connect streams on it."""

    def __init__(self, address: str, credentials: grpc.ChannelCredentials | None) -> None:
        self.channel = lobby_channel(address, credentials)
        self.stub = lobby_pb2_grpc.LobbyStub(self.channel)

    def connect(self, requests: AsyncIterator[client_pb2.ClientFrame]) -> Any:
        return self.stub.Connect(requests)

    async def close(self) -> None:
        await self.channel.close()


def lobby_edge(address: str, ca_file: str | None = None, tls: bool = False) -> GrpcEdge | WsEdge:
    """The transport to one lobby address: its WebSocket for ``ws://`` and ``wss://`` URLs,
    else its gRPC port (``host:port``)."""
    if is_ws(address):
        return WsEdge(address, ssl_context(ca_file, tls))
    return GrpcEdge(address, channel_credentials(ca_file, tls))


def lobby_addresses(address: str | Sequence[str]) -> list[str]:
    """Lobby addresses from ``"host:port"``, ``"a:1,b:2"`` or a list of either."""
    items = [address] if isinstance(address, str) else list(address)
    out = [a.strip() for item in items for a in item.split(",") if a.strip()]
    if not out:
        raise ValueError("no lobby address given")
    return out


def rotated(addresses: Sequence[str], by: int) -> list[str]:
    """``addresses`` starting at index ``by`` (modulo their number), the others after."""
    n = by % len(addresses)
    return [*addresses[n:], *addresses[:n]]


class SessionClosed(Exception):
    pass


class GaveUp(SessionClosed):
    """No lobby took the session back within the reconnect bound."""


class LoginRefused(SessionClosed):
    """The lobby refused the login itself (a bad or expired token): retrying cannot help."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"login refused: {code} {message}")
        self.code = code


@dataclass(frozen=True)
class Backoff:
    """Pauses between reconnect attempts: ``first`` seconds doubling up to ``longest``,
    each drawn at random between half and all of that (jitter, so clients sent away together
    do not come back together), for at most ``give_up`` seconds in all."""

    first: float = 0.2
    longest: float = 3.0
    give_up: float = 60.0

    def pause(self, attempt: int, rng: random.Random | None = None) -> float:
        """The pause before attempt ``attempt`` (1 = the first retry)."""
        ceiling = min(self.longest, self.first * 2.0 ** min(max(0, attempt - 1), 32))
        factor = rng.uniform(0.5, 1.0) if rng is not None else random.uniform(0.5, 1.0)
        return ceiling * factor


class LobbySession:
    def __init__(self, address: str | Sequence[str], *, backoff: Backoff | None = None,
                 ca_file: str | None = None, tls: bool = False, keep_frames: bool = True,
                 on_frame: Callable[[client_pb2.ServerFrame], None] | None = None,
                 batches: bool = True) -> None:
        self.addresses = lobby_addresses(address)
        self.address = self.addresses[0]
        self.backoff = backoff or Backoff()
        self._index = 0
        self.ca_file, self.tls = ca_file, tls
        self.edge = lobby_edge(self.address, ca_file, tls)
        self._seq = itertools.count(1)
        self._out: asyncio.Queue[client_pb2.ClientFrame | None] = asyncio.Queue()
        self._waiting: dict[int, asyncio.Future[client_pb2.ServerFrame]] = {}
        self.pushes: asyncio.Queue[client_pb2.ServerFrame | None] = asyncio.Queue()
        self._call: Any = None
        self._reader: asyncio.Task[None] | None = None
        self.closed = asyncio.Event()
        self.received: list[client_pb2.ServerFrame] = []
        self.keep_frames = keep_frames      # False: ``received`` stays empty (load tests)
        self.on_frame = on_frame            # called with every frame as it arrives
        self.batches = batches              # ask for ServerFrame.batch (one message, n frames)
        self.kicked = False                 # a KickOut came: another login replaced us
        self.reconnect_after = 0.0          # the lobby's Reconnect.after_ms, in seconds
        self.reconnects = 0                 # streams taken back by reconnect()
        self._attempting = False            # inside reconnect(): streams not yet logged in
        self._stream = 0                    # which stream is current (reopen() moves on)
        self._beat: asyncio.Task[None] | None = None    # the current stream's heartbeat

    async def _requests(self, out: asyncio.Queue[client_pb2.ClientFrame | None],
                        ) -> AsyncIterator[client_pb2.ClientFrame]:
        while (frame := await out.get()) is not None:
            yield frame

    async def open(self) -> None:
        self.closed.clear()
        self._call = self.edge.connect(self._requests(self._out))
        # a stream opened by reconnect() speaks to ``pushes`` only once it is logged in
        self._reader = asyncio.create_task(self._read(self._call, self._waiting,
                                                      announced=not self._attempting,
                                                      stream=self._stream))

    async def _read(self, call: Any, waiting: dict[int, asyncio.Future[Any]], *,
                    announced: bool, stream: int = 0) -> None:
        try:
            async for message in call:
                # a batch (Login.accept_batches) is several frames in one message, in order
                batch = (message.batch.frames if message.WhichOneof("payload") == "batch"
                         else (message,))
                for frame in batch:
                    if self.keep_frames:
                        self.received.append(frame)
                    if self.on_frame is not None:
                        self.on_frame(frame)
                    kind = frame.WhichOneof("payload")
                    if kind == "kick_out":
                        self.kicked = True
                    elif kind == "reconnect":
                        self.reconnect_after = frame.reconnect.after_ms / 1000
                    elif kind == "login_ok":
                        announced = True
                        self._heartbeat(frame.login_ok.heartbeat_seconds, stream)
                    fut = waiting.pop(frame.reply_to, None) if frame.reply_to else None
                    if fut is not None and not fut.done():
                        fut.set_result(frame)
                    elif announced:
                        self.pushes.put_nowait(frame)
        except grpc.aio.AioRpcError:
            pass
        finally:
            self.closed.set()
            for fut in waiting.values():
                if not fut.done():
                    fut.set_exception(SessionClosed("the lobby closed the stream"))
            waiting.clear()
            # the end of a stream that reopen() replaced is no news: only the current
            # stream's end is announced (a stale one would start another reconnect)
            if announced and stream == self._stream:
                await self.pushes.put(None)

    def _heartbeat(self, seconds: float, stream: int) -> None:
        """Beat every ``seconds`` (the LoginOk's ``heartbeat_seconds``) while ``stream`` is
        the current one: the lobby takes a silent connection offline, and a beat it does not
        answer within ``seconds`` means the stream is dead without having ended (a frozen
        or cut-off lobby): it is dropped, and its end comes in ``pushes``."""
        if self._beat is not None:
            self._beat.cancel()
        if seconds > 0:
            self._beat = asyncio.create_task(self._beating(seconds, stream))

    async def _beating(self, seconds: float, stream: int) -> None:
        while stream == self._stream and not self.closed.is_set():
            await asyncio.sleep(seconds)
            if stream != self._stream:
                return
            beat = lm.HeartBeat(client_time_ms=int(time.time() * 1000))
            try:
                await self.request(beat, timeout=seconds)
            except SessionClosed:
                return
            except TimeoutError:
                if stream == self._stream:
                    log.info("heartbeat unanswered for %g s: dropping the stream", seconds)
                    self.drop()
                return

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
        try:
            return await asyncio.wait_for(fut, timeout)
        finally:
            self._waiting.pop(frame.seq, None)

    async def send(self, payload: Message | client_pb2.ClientFrame) -> int:
        frame = payload if isinstance(payload, client_pb2.ClientFrame) else frames.client_frame(payload)
        frame.seq = next(self._seq)
        await self._out.put(frame)
        return frame.seq

    async def login(self, token: str, timeout: float = 15,
                    **fields: Any) -> client_pb2.ServerFrame:
        fields.setdefault("accept_batches", self.batches)
        return await self.request(lm.Login(token=token, **fields), timeout=timeout)

    # ------------------------------------------------------------------ reconnecting
    async def _end_stream(self) -> None:
        await self._out.put(None)
        if self._call is not None:
            self._call.cancel()
        if self._reader is not None:
            # asyncio.wait neither raises the reader's end nor swallows our own cancel
            await asyncio.wait({self._reader}, timeout=2)

    def drop(self) -> None:
        """Give the current stream up (a request it never answered): it ends as if the lobby
        had gone, and its end comes in ``pushes`` (None), so whoever reads them takes the
        session back with :meth:`reconnect` (the seat is resumed from a fresh snapshot)."""
        if self._call is not None:
            self._call.cancel()

    async def reopen(self) -> None:
        """End the current stream and open one to the next lobby address (the same one when
        there is only one)."""
        self._stream += 1
        await self._end_stream()
        self._drop_end_markers()
        self._index = (self._index + 1) % len(self.addresses)
        if self.addresses[self._index] != self.address:
            await self.edge.close()
            self.address = self.addresses[self._index]
            self.edge = lobby_edge(self.address, self.ca_file, self.tls)
        self._out = asyncio.Queue()
        self._waiting = {}
        self.kicked = False
        await self.open()

    def pending(self) -> list[client_pb2.ServerFrame | None]:
        """The pushes received and not read yet, in order (left in ``pushes``)."""
        items = []
        while not self.pushes.empty():
            items.append(self.pushes.get_nowait())
        for item in items:
            self.pushes.put_nowait(item)
        return items

    def _drop_end_markers(self) -> None:
        """Remove end-of-stream markers of earlier streams from ``pushes`` (their frames
        stay, in order): the stream they announce is already being replaced."""
        kept = []
        while not self.pushes.empty():
            item = self.pushes.get_nowait()
            if item is not None:
                kept.append(item)
        for item in kept:
            self.pushes.put_nowait(item)

    async def reconnect(self, token: Callable[[], str], **fields: Any) -> client_pb2.ServerFrame:
        """Take the session back after its stream ended without a kick: wait (the lobby's
        ``after_ms`` first, then the backoff), open a stream to the next address and log in
        again, until a LoginOk (returned; the seat's snapshot follows as pushes). LoginRefused
        when a lobby refuses the token, GaveUp after ``backoff.give_up`` seconds."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.backoff.give_up
        pause = self.reconnect_after
        attempt, last = 0, "no attempt"
        self._attempting = True
        try:
            while True:
                await asyncio.sleep(pause)
                attempt += 1
                self.reconnect_after = 0.0
                await self.reopen()
                try:
                    reply = await self.login(token(), timeout=LOGIN_TIMEOUT, **fields)
                except (SessionClosed, TimeoutError) as exc:
                    last = f"{self.address}: {exc or 'no answer'}"
                else:
                    if reply.WhichOneof("payload") == "login_ok":
                        self.reconnects += 1
                        log.info("reconnected to %s after %d attempt(s)", self.address, attempt)
                        return reply
                    code, message = reply.ret.code, reply.ret.message
                    if code in FINAL_LOGIN_CODES:
                        raise LoginRefused(code, message)
                    last = f"{self.address}: {code} {message}"
                pause = max(self.backoff.pause(attempt), self.reconnect_after)
                if loop.time() + pause > deadline:
                    raise GaveUp(f"no lobby of {','.join(self.addresses)} took the session back "
                                 f"in {self.backoff.give_up:g} s (last: {last})")
                log.info("reconnect attempt %d failed (%s), again in %.2f s", attempt, last, pause)
        except (GaveUp, LoginRefused):
            self.pushes.put_nowait(None)   # the session is over: whoever reads pushes ends
            raise
        finally:
            self._attempting = False

    async def close(self) -> None:
        if self._beat is not None:
            self._beat.cancel()
        await self._end_stream()
        await self.edge.close()
