"""The operator console: a read-only view of the platform for support staff, served by each
lobby replica on a port of its own (``lobby.console_port``; -1 = off, 0 = a free port), never
on the public WebSocket port.

``GET /`` is ``clients/web/console.html`` (with ``/console.js`` and ``/console.css``); the page
asks for the console token and keeps it in sessionStorage. The JSON API needs
``Authorization: Bearer <lobby.console_token>`` (401 otherwise) and only reads (the write
actions, behind ``lobby.console_admin_token`` and audited, are actions.py's):

- ``/api/overview``: this lobby replica (instance, version, uptime, its sessions), live tables,
  rooms by game and by status;
- ``/api/tables``: the ``tables`` bucket with each heartbeat's age;
- ``/api/rooms`` (``?game=xuezhan&status=playing`` to filter): the ``rooms`` bucket;
- ``/api/rooms/{id}``: one room with its seats (user, nickname, online, ready, entrusted);
- ``/api/users/{uid}``: the user's ``seats`` entry, his session on this replica, his profile
  from records;
- ``/api/history/{room_id}``: the room's history scores from records.

Every answer is built field by field (views.py) from the lobby's room and table caches and
the directory: a VIP room's password and players' IP addresses are never part of it,
whatever a writer put in the bucket.
Errors are JSON ``{"error", "message"}``: 400 bad id or filter, 401 no or wrong token, 404
unknown, 503 NATS or records unreachable, 500 anything else (details in the lobby log only).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import importlib.metadata
import logging
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import nats.errors
from aiohttp import web

from paiju.v1 import common_pb2
from services.common.config import Config, require_console_token
from services.lobby.app import LobbyApp
from services.lobby.console.actions import Actions
from services.lobby.console.views import ApiError, Views, parse_id
from services.lobby.errors import Reject, Unavailable

log = logging.getLogger("paiju.lobby.console")

WEB_ROOT = Path(__file__).resolve().parents[3] / "clients" / "web"
PAGES = {"/": ("console.html", "text/html"),
         "/console.js": ("console.js", "text/javascript"),
         "/console.css": ("console.css", "text/css")}
API_TIMEOUT = 10.0           # one API request, NATS and records calls included
SHUTDOWN_SECONDS = 1.0
# nothing from elsewhere: no inline script, no framing, no third-party requests
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
                               "connect-src 'self'; img-src 'self'; base-uri 'none'; "
                               "form-action 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
}


def _error(status: int, error: str, message: str) -> web.Response:
    headers = {"Cache-Control": "no-store"}
    if status == 401:
        headers["WWW-Authenticate"] = 'Bearer realm="paiju-console"'
    return web.json_response({"error": error, "message": message}, status=status,
                             headers=headers)


def _version() -> str:
    try:
        return importlib.metadata.version("paiju")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


class Console:
    """The console's aiohttp server. ``port`` is the bound port (-1 while off or closed)."""

    def __init__(self, app: LobbyApp, token: str, web_root: Path = WEB_ROOT,
                 admin_token: str = "") -> None:
        self.app = app
        self.web_root = web_root
        self.port = -1
        self.views = Views(app, socket.gethostname(), _version())
        # write actions (actions.py): only with the admin token, each audited in records
        self.actions = Actions(app, admin_token, socket.gethostname())
        self._digest = hashlib.sha256(token.encode()).digest()
        self._runner: web.AppRunner | None = None

    # -- server ---------------------------------------------------------------------------

    def routes(self) -> web.Application:
        webapp = web.Application(middlewares=[self._middleware])
        for path, (name, ctype) in PAGES.items():
            webapp.router.add_get(path, self._page(name, ctype))
        api: dict[str, Callable[[web.Request], Awaitable[dict[str, Any]]]] = {
            "/api/overview": self.overview, "/api/tables": self.tables,
            "/api/rooms": self.rooms, "/api/rooms/{room_id}": self.room,
            "/api/users/{user_id}": self.user, "/api/history/{room_id}": self.history}
        api["/api/audit"] = self.actions.audit_log
        for path, handler in api.items():
            webapp.router.add_get(path, self._json(handler))
        writes: dict[str, Callable[[web.Request], Awaitable[dict[str, Any]]]] = {
            "/api/rooms/{room_id}/robots": self.actions.add_robots,
            "/api/rooms/{room_id}/dismiss": self.actions.dismiss,
            "/api/users/{user_id}/kick": self.actions.kick,
            "/api/users/{user_id}/mute": self.actions.mute,
            "/api/games/{game}/season": self.actions.start_season}
        for path, handler in writes.items():
            webapp.router.add_post(path, self._json(handler))
        return webapp

    async def start(self, host: str, port: int) -> int:
        missing = [name for name, _ in PAGES.values() if not (self.web_root / name).is_file()]
        if missing:
            log.warning("console page files missing", extra={"missing": missing,
                                                             "path": str(self.web_root)})
        runner = web.AppRunner(self.routes(), access_log=None, shutdown_timeout=SHUTDOWN_SECONDS)
        await runner.setup()
        try:
            await web.TCPSite(runner, host, port).start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        self.port = int(runner.addresses[0][1])
        log.info("operator console started", extra={"console_port": self.port})
        return self.port

    async def close(self) -> None:
        if self._runner is not None:
            runner, self._runner = self._runner, None
            self.port = -1
            await runner.cleanup()

    @web.middleware
    async def _middleware(self, request: web.Request,
                          handler: Callable[[web.Request], Awaitable[web.StreamResponse]],
                          ) -> web.StreamResponse:
        if request.path.startswith("/api/") or request.path == "/api":
            response = await self._api(request, handler)
        else:
            try:
                response = await handler(request)
            except web.HTTPException as exc:
                response = web.Response(status=exc.status, text=f"{exc.reason}\n")
        response.headers.update(SECURITY_HEADERS)
        return response

    async def _api(self, request: web.Request,
                   handler: Callable[[web.Request], Awaitable[web.StreamResponse]],
                   ) -> web.StreamResponse:
        header = request.headers.get("Authorization", "")
        if not self.authorized(header) and not self.actions.authorized(header):
            log.info("console request refused", extra={"path": request.path,
                                                        "peer": request.remote or ""})
            return _error(401, "unauthorized",
                          "send the console token as 'Authorization: Bearer <token>'")
        try:
            async with asyncio.timeout(API_TIMEOUT):
                return await handler(request)
        except ApiError as exc:
            return _error(exc.status, exc.error, exc.message)
        except web.HTTPException as exc:   # no such route, or not a GET
            return _error(exc.status, "not_found" if exc.status == 404 else "bad_request",
                          f"{request.method} {request.path}: {exc.reason}")
        except Unavailable as exc:
            return _error(503, "unavailable", exc.message)
        except Reject as exc:
            if exc.code == common_pb2.ERR_NO_SUCH_ROOM:
                return _error(404, "not_found", exc.message)
            return _error(400, "bad_request", exc.message)
        except TimeoutError:
            return _error(503, "unavailable",
                          f"NATS or records did not answer within {API_TIMEOUT:g} s")
        except nats.errors.Error as exc:
            return _error(503, "unavailable", f"NATS: {type(exc).__name__}")
        except Exception:
            log.exception("console request failed", extra={"path": request.path})
            return _error(500, "internal", "internal error (details in the lobby log)")

    def authorized(self, header: str) -> bool:
        """``Bearer <token>``, compared in constant time (digests of equal length)."""
        scheme, _, given = header.strip().partition(" ")
        if scheme.lower() != "bearer" or not given.strip():
            return False
        digest = hashlib.sha256(given.strip().encode("utf-8", "surrogateescape")).digest()
        return hmac.compare_digest(digest, self._digest)

    def _page(self, name: str, ctype: str) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
        async def page(request: web.Request) -> web.StreamResponse:
            path = self.web_root / name
            if not path.is_file():
                return web.Response(status=404, text=f"{name} is not installed\n")
            return web.FileResponse(path, headers={"Content-Type": f"{ctype}; charset=utf-8",
                                                   "Cache-Control": "no-cache"})
        return page

    @staticmethod
    def _json(handler: Callable[[web.Request], Awaitable[dict[str, Any]]],
              ) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
        async def answer(request: web.Request) -> web.StreamResponse:
            body = await handler(request)
            return web.json_response(body, headers={"Cache-Control": "no-store"})
        return answer

    # -- handlers -------------------------------------------------------------------------

    async def overview(self, request: web.Request) -> dict[str, Any]:
        return self.views.overview()

    async def tables(self, request: web.Request) -> dict[str, Any]:
        return {"tables": self.views.tables()}

    async def rooms(self, request: web.Request) -> dict[str, Any]:
        game = request.query.get("game", "").strip().lower()
        status = request.query.get("status", "").strip().lower()
        return {"rooms": self.views.rooms(game, status)}

    async def room(self, request: web.Request) -> dict[str, Any]:
        return await self.views.room(parse_id(request.match_info["room_id"], "room id"))

    async def user(self, request: web.Request) -> dict[str, Any]:
        return await self.views.user(parse_id(request.match_info["user_id"], "user id"))

    async def history(self, request: web.Request) -> dict[str, Any]:
        return await self.views.history(parse_id(request.match_info["room_id"], "room id"))


async def start_console(app: LobbyApp, cfg: Config) -> Console:
    """Start the operator console of this lobby on ``lobby.host``:``lobby.console_port``
    (0 = a free port); with ``console_port`` -1 the console stays off (``port`` -1,
    ``close`` does nothing). ConfigError, before anything binds, when it is on without a
    usable ``lobby.console_token``."""
    require_console_token(cfg)
    console = Console(app, cfg.lobby.console_token,
                      admin_token=cfg.lobby.console_admin_token)
    if cfg.lobby.console_port >= 0:
        await console.start(cfg.lobby.host, cfg.lobby.console_port)
    return console
