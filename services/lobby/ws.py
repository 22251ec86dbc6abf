"""The lobby's WebSocket front door (aiohttp) and the static browser client.

``GET /ws`` upgrades to a WebSocket that carries exactly the ``Lobby.Connect`` protocol, one
connection = one Session through the same login, dispatch and outbox code
(``session_loop.serve_session``):

- a binary message is one serialized ClientFrame; a text message is one ClientFrame in
  proto3 JSON (field names as in the .proto, e.g. ``{"seq": 1, "login": {"token": "..."}}``);
- replies and pushes use the format of the client's latest message (binary until a text
  message arrives; ``/ws?format=json`` starts in JSON): binary ServerFrames (the frames
  queued at once as one ``batch`` ServerFrame to a client that asked for batches at login,
  ``Login.accept_batches``, as on the Connect stream), or ServerFrame
  JSON with the .proto field names (int64 values are strings, defaults are omitted); a frame
  relayed from NATS is turned into JSON once for all the sessions it goes to, each session
  putting its own ``"seq"`` first (where the JSON printer puts field 1);
- a message that is not a ClientFrame gets ERR_BAD_FRAME and the session goes on;
- closing the socket ends the session like a closed stream (offline to the table).

The client IP (geo, same-IP alerts) is the socket's peer address, or, when that peer is one
of ``lobby.trusted_proxies``, the client named by its ``X-Forwarded-For`` (client_ip.py).

Limits (limits.py): an upgrade beyond ``lobby.max_connections_per_ip`` is answered HTTP 429,
beyond ``lobby.max_connections`` HTTP 503, before it becomes a WebSocket; an HTTP request
(the upgrade included) must be complete within ``lobby.login_deadline_seconds`` of the
connection opening (aiohttp's keep-alive timer also runs from the connection's start), with
request lines and header fields of at most 8 KiB and at most 64 headers; and the WebSocket
itself has the login deadline of every connection (session_loop.serve_session).

TLS: with ``lobby.public_cert_file`` and ``lobby.public_key_file`` set the port speaks HTTPS
and ``wss://`` only, with the same certificate as the gRPC port.
``GET /`` is ``clients/web/index.html``, ``GET /static/*`` the rest of ``clients/web/``.
``GET /healthz`` (readiness) answers 200 while the lobby takes clients and 503 while its NATS
connection is down or it is draining; ``GET /livez`` (liveness) answers 503 once NATS has
been down for longer than ``nats.liveness_seconds``: the same as the gRPC health service.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from aiohttp import WSMsgType, web
from aiohttp.http_exceptions import HttpProcessingError
from google.protobuf import json_format

from paiju.v1 import client_pb2
from services.common import tls
from services.common.config import ConfigError, LobbyConfig
from services.lobby import metrics
from services.lobby.app import LobbyApp
from services.lobby.client_ip import HEADER, client_ip, parse_networks
from services.lobby.guest import guest_login
from services.lobby.session_loop import (
    BadFrame,
    Incoming,
    decode_binary,
    encode_binary,
    serve_session,
)
from services.lobby.sessions import Outgoing, Relayed, Session

log = logging.getLogger("paiju.lobby.ws")

WEB_ROOT = Path(__file__).resolve().parents[2] / "clients" / "web"
MAX_MESSAGE = 1 << 20        # a client frame is small; refuse (close) anything above 1 MiB
SHUTDOWN_SECONDS = 2.0       # handlers still running this long after stop are cancelled
CLOSE_SECONDS = 2.0          # the closing handshake with a client that does not answer
MAX_LINE = 8190              # request line (aiohttp's default, stated)
MAX_FIELD = 8190             # one header field
MAX_HEADERS = 64             # header fields of one request
# The listen queue. aiohttp's default (128) overflows when thousands of players come back at
# once (a restarted lobby): the kernel drops the connections beyond it, and their clients'
# kernels retry only after 1, 3 and 7 s (bench/reports/cold.md). Asked for as long as the
# kernel allows: it cuts this to net.core.somaxconn (4096 by default since Linux 5.4), as it
# does gRPC's port's.
LISTEN_BACKLOG = 65535


class _ClientFaults(logging.Filter):
    """aiohttp logs every malformed request (a bad request line, too many or too long
    headers) as an ERROR with a traceback: anyone could fill the log with them. They are the
    client's fault; one line at INFO says enough."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, HttpProcessingError):
            record.levelno, record.levelname = logging.INFO, "INFO"
            record.msg, record.args, record.exc_info = "bad HTTP request: %s", (exc.message,), None
            return log.isEnabledFor(logging.INFO)
        return True


HTTP_LOG = logging.getLogger("paiju.lobby.http")
HTTP_LOG.addFilter(_ClientFaults())


def server_ssl(c: LobbyConfig) -> ssl.SSLContext | None:
    """The TLS context of the public WebSocket port (``lobby.public_cert_file`` and
    ``public_key_file``); None (plaintext) when no certificate is configured. A renewed
    certificate is picked up at the next handshake (``tls.CertificateFiles``)."""
    if not c.public_cert_file:
        return None
    if not c.public_key_file:
        raise ConfigError("lobby.public_key_file: required with lobby.public_cert_file")
    current: ssl.SSLContext          # the context new handshakes get, and its generation
    generation: int

    def load() -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(c.public_cert_file, c.public_key_file)
        context.sni_callback = renew
        return context

    def renew(conn: ssl.SSLObject | ssl.SSLSocket, server_name: str | None,
              _: ssl.SSLContext) -> None:
        # called at each ClientHello: a renewed certificate (files changed and the pair
        # loads) serves this handshake and the next ones; open connections keep theirs
        nonlocal current, generation
        if files.refresh() or generation != files.generation:
            try:
                current, generation = load(), files.generation
            except (OSError, ssl.SSLError) as exc:
                log.warning("renewed public certificate not loaded", extra={"error": str(exc)})
        conn.context = current

    try:
        files = tls.CertificateFiles(c.public_cert_file, c.public_key_file, use="public")
        current, generation = load(), files.generation
    except (OSError, ssl.SSLError, ConfigError) as exc:
        raise ConfigError(f"lobby.public_cert_file / public_key_file: cannot load "
                          f"{c.public_cert_file!r}: {exc}") from None
    files.export_expiry()
    return current


def decode_text(text: str) -> Incoming:
    """One ClientFrame in proto3 JSON; unknown fields and bad JSON are a BadFrame."""
    try:
        frame: client_pb2.ClientFrame = json_format.Parse(text, client_pb2.ClientFrame())
        return frame
    except json_format.ParseError as exc:
        return BadFrame(f"bad JSON frame: {str(exc)[:200]}")


def to_json(frame: client_pb2.ServerFrame) -> str:
    """A ServerFrame as one line of proto3 JSON with the .proto field names."""
    text: str = json_format.MessageToJson(frame, preserving_proto_field_name=True, indent=None)
    return text


def encode_json(item: Outgoing, seq: int) -> str:
    """``to_json`` of the frame with server sequence number ``seq``; a relayed frame is
    printed once (without seq) and the seq is put in front, as the printer would put it."""
    if not isinstance(item, Relayed):
        item.seq = seq
        return to_json(item)
    body = item.json_body
    if body is None:
        body = item.json_body = to_json(item.frame)
    if seq <= 0:
        return body
    if body == "{}":
        return f'{{"seq": "{seq}"}}'
    return f'{{"seq": "{seq}", {body[1:]}'


@dataclass
class Wire:
    """The reply format of one connection: JSON text or protobuf binary."""

    json: bool = False


async def incoming(ws: web.WebSocketResponse, wire: Wire) -> AsyncIterator[Incoming]:
    """The decoded client messages of one socket until it closes or fails."""
    async for msg in ws:
        if msg.type == WSMsgType.BINARY:
            wire.json = False
            yield decode_binary(msg.data)
        elif msg.type == WSMsgType.TEXT:
            wire.json = True
            yield decode_text(msg.data)
        else:  # ERROR (e.g. a message above MAX_MESSAGE): the socket is unusable
            log.info("websocket error", extra={"error": str(ws.exception())})
            return


class WsFront:
    """The aiohttp server: ``start`` binds and returns the port, ``stop`` closes the live
    sessions (their queued frames still go out) and then the server."""

    def __init__(self, app: LobbyApp, web_root: Path = WEB_ROOT) -> None:
        self.app = app
        self.web_root = web_root
        self.sessions: set[Session] = set()
        self.trusted = parse_networks(app.lobby.trusted_proxies)
        self._runner: web.AppRunner | None = None

    def routes(self) -> web.Application:
        webapp = web.Application()
        webapp.router.add_get("/ws", self.connect)
        webapp.router.add_get("/healthz", self.healthz)
        webapp.router.add_get("/livez", self.livez)
        webapp.router.add_post("/guest", self.guest)
        if self.web_root.is_dir():
            webapp.router.add_get("/", self.index)
            webapp.router.add_static("/static/", self.web_root)
        else:
            log.warning("no web client to serve", extra={"path": str(self.web_root)})
        return webapp

    async def start(self, host: str, port: int) -> int:
        c = self.app.lobby
        context = server_ssl(c)
        # aiohttp's keep-alive timer starts with the connection: one whose request (headers)
        # is not complete by then is closed, so slow or endless headers hold nothing for long
        header_seconds = c.login_deadline_seconds if c.login_deadline_seconds > 0 else 75.0
        self._runner = web.AppRunner(self.routes(), access_log=None,
                                     shutdown_timeout=SHUTDOWN_SECONDS,
                                     keepalive_timeout=header_seconds, max_line_size=MAX_LINE,
                                     max_field_size=MAX_FIELD, max_headers=MAX_HEADERS,
                                     logger=HTTP_LOG)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port, ssl_context=context,
                           backlog=LISTEN_BACKLOG)
        await site.start()
        bound = int(self._runner.addresses[0][1])
        log.info("websocket front door started", extra={"ws_port": bound,
                                                        "tls": context is not None})
        return bound

    async def stop(self) -> None:
        for session in list(self.sessions):
            session.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def healthz(self, request: web.Request) -> web.Response:
        if self.app.ready:
            return web.Response(text="ok\n")
        reason = "draining" if self.app.draining else "nats unreachable"
        return web.Response(status=503, text=f"not ready: {reason}\n")

    async def livez(self, request: web.Request) -> web.Response:
        if self.app.live:
            return web.Response(text="ok\n")
        return web.Response(status=503, text="not live: nats unreachable for too long\n")

    async def guest(self, request: web.Request) -> web.Response:
        """Dev guest login (guest.py): a token for a nickname, 404 where it is off."""
        ip = client_ip(request.remote or "", request.headers.getall(HEADER, ()), self.trusted)
        return await guest_login(self.app, request, ip)

    async def index(self, request: web.Request) -> web.FileResponse:
        return web.FileResponse(self.web_root / "index.html")

    async def connect(self, request: web.Request) -> web.StreamResponse:
        ip = client_ip(request.remote or "", request.headers.getall(HEADER, ()), self.trusted)
        refused = self.app.admission.admit(ip)
        if refused is not None:   # before the upgrade: a plain HTTP answer, then closed
            metrics.REFUSED_CONNECTIONS.labels(refused).inc()
            return web.Response(status=429 if refused == "ip" else 503,
                                text=self.app.admission.message(refused) + "\n",
                                headers={"Retry-After": "5", "Connection": "close"})
        try:
            return await self._serve(request, ip)
        finally:
            self.app.admission.release(ip)

    async def _serve(self, request: web.Request, ip: str) -> web.StreamResponse:
        ws = web.WebSocketResponse(max_msg_size=MAX_MESSAGE)
        try:
            await ws.prepare(request)
        except ConnectionError:
            # the client gave up before its upgrade was answered: a plain response, whose
            # own write fails quietly in aiohttp (a half-prepared socket would not)
            log.debug("client gone before the upgrade", extra={"ip": ip})
            return web.Response(status=400)
        wire = Wire(json=request.query.get("format") == "json")
        session = Session(peer_ip=ip)
        self.sessions.add(session)

        def encoder(item: Outgoing, seq: int) -> str | bytes:
            return encode_json(item, seq) if wire.json else encode_binary(item, seq)

        try:
            # a client that asked for batches (Login.accept_batches) gets them while it
            # speaks binary: one WebSocket message, one write, for the frames queued at once
            frames = serve_session(self.app, session, incoming(ws, wire), encoder,
                                   batch=lambda: not wire.json)
            async with contextlib.aclosing(frames):
                async for data in frames:
                    if isinstance(data, str):
                        await ws.send_str(data)
                    else:
                        await ws.send_bytes(data)
        except ConnectionError:
            pass  # the peer went away while we were sending
        finally:
            self.sessions.discard(session)
        with contextlib.suppress(TimeoutError, ConnectionError):
            async with asyncio.timeout(CLOSE_SECONDS):   # a client that does not read
                await ws.close()
        return ws
