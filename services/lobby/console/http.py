"""The operator console: a read-only view of the platform for support staff, served by each
lobby replica on a port of its own (``lobby.console_port``; -1 = off, 0 = a free port), never
on the public WebSocket port.

``GET /`` is ``clients/web/console.html`` (with ``/console.js`` and ``/console.css``); the page
asks for the console token and keeps it in sessionStorage. The JSON API needs
``Authorization: Bearer <lobby.console_token>`` (401 otherwise) and only reads:

- ``/api/overview``: this lobby replica (instance, version, uptime, its sessions), live tables,
  rooms by game and by status;
- ``/api/tables``: the ``tables`` bucket with each heartbeat's age;
- ``/api/rooms`` (``?game=xuezhan&status=playing`` to filter): the ``rooms`` bucket;
- ``/api/rooms/{id}``: one room with its seats (user, nickname, online, ready, entrusted);
- ``/api/users/{uid}``: the user's ``seats`` entry, his session on this replica, his profile
  from records;
- ``/api/history/{room_id}``: the room's history scores from records.

Every answer is built field by field from the directory entries (a whitelist): a VIP room's
password and players' IP addresses are never part of it, whatever a writer put in the bucket.
Errors are JSON ``{"error", "message"}``: 400 bad id or filter, 401 no or wrong token, 404
unknown, 503 NATS or records unreachable, 500 anything else (details in the lobby log only).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import importlib.metadata
import json
import logging
import os
import socket
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import nats.errors
from aiohttp import web
from google.protobuf import json_format
from nats.js.kv import KeyValue

from paiju.v1 import common_pb2
from services.common.config import Config, require_console_token
from services.lobby.app import LobbyApp
from services.lobby.directory import Reject, Unavailable

log = logging.getLogger("paiju.lobby.console")

WEB_ROOT = Path(__file__).resolve().parents[2] / "clients" / "web"
PAGES = {"/": ("console.html", "text/html"),
         "/console.js": ("console.js", "text/javascript"),
         "/console.css": ("console.css", "text/css")}
API_TIMEOUT = 10.0           # one API request, NATS and records calls included
PROFILE_TIMEOUT = 3.0        # the records profile in /api/users (optional part of the answer)
WATCH_INACTIVE = 10.0        # seconds before NATS drops a snapshot's ephemeral consumer
MAX_ID = 2**63 - 1
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
_GAMES = {"xuezhan", "changsha", "dadun"}
_STATUSES = {common_pb2.RoomStatus.Name(v)[len("ROOM_"):].lower(): v
             for v in common_pb2.RoomStatus.values()}


class ApiError(Exception):
    """An answer other than 200: HTTP status, a short error name and a message."""

    def __init__(self, status: int, error: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.error = error
        self.message = message


def _error(status: int, error: str, message: str) -> web.Response:
    headers = {"Cache-Control": "no-store"}
    if status == 401:
        headers["WWW-Authenticate"] = 'Bearer realm="paiju-console"'
    return web.json_response({"error": error, "message": message}, status=status,
                             headers=headers)


def parse_id(text: str, what: str) -> int:
    """A positive decimal id that fits an int64; ApiError 400 otherwise."""
    if not (text.isascii() and text.isdigit()) or len(text) > 19 or not 0 < int(text) <= MAX_ID:
        shown = text if len(text) <= 40 else text[:40] + "..."
        raise ApiError(400, "bad_request",
                       f"{what} must be a positive integer, got {shown!r}")
    return int(text)


def _version() -> str:
    try:
        return importlib.metadata.version("paiju")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="seconds")


def _number(value: Any, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def status_name(status: int) -> str:
    name = common_pb2.RoomStatus.Name(status) if status in common_pb2.RoomStatus.values() \
        else ""
    return name[len("ROOM_"):].lower() if name else str(status)


def game_name(value: dict[str, Any], info: common_pb2.RoomInfo) -> str:
    game = value.get("game")
    if isinstance(game, str) and game.lower() in _GAMES:
        return game.lower()
    if info.game != common_pb2.GAME_UNSPECIFIED:
        return common_pb2.Game.Name(info.game).lower()
    return "unknown"


def _room_info(value: dict[str, Any]) -> common_pb2.RoomInfo:
    """The RoomInfo of a rooms entry; its fields only (a RoomInfo has no password field)."""
    info = common_pb2.RoomInfo()
    raw = value.get("room")
    if isinstance(raw, dict):
        try:
            json_format.ParseDict(raw, info, ignore_unknown_fields=True)
        except (json_format.ParseError, ValueError, TypeError, AttributeError):
            info = common_pb2.RoomInfo()
    return info


def room_summary(value: dict[str, Any]) -> dict[str, Any]:
    """One line of the room list from a ``rooms`` bucket value (docs/services.md)."""
    info = _room_info(value)
    status = value.get("status")
    status = status if isinstance(status, int) and not isinstance(status, bool) else info.status
    seated = [p for p in info.players if p.user_id]
    free = value.get("free_seats")
    return {
        "room_id": _number(value.get("room_id")) or info.room_id,
        "game": game_name(value, info),
        "status": status_name(status),
        "hand": info.cur_hand,
        "total_hands": info.total_hands,
        "base_score": info.base_score,
        "players": len(seated),
        "free_seats": _number(free, max(0, 4 - len(seated))),
        "has_password": bool(value.get("has_password")) or info.has_password,
        "owner": _text(value.get("owner")) or info.table_id,
        "address": _text(value.get("address")),
    }


def _options(text: str) -> Any:
    """A room's rule options (JSON text) as an object, keys naming a password left out."""
    if not text:
        return {}
    try:
        options = json.loads(text)
    except ValueError:
        return {"unparsed": text[:2000]}
    if isinstance(options, dict):
        return {k: v for k, v in options.items() if "password" not in str(k).lower()}
    return options


class Console:
    """The console's aiohttp server. ``port`` is the bound port (-1 while off or closed)."""

    def __init__(self, app: LobbyApp, token: str, web_root: Path = WEB_ROOT) -> None:
        self.app = app
        self.web_root = web_root
        self.port = -1
        self.started = time.time()
        self.instance = socket.gethostname()
        self.version = _version()
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
        for path, handler in api.items():
            webapp.router.add_get(path, self._json(handler))
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
        if not self.authorized(request.headers.get("Authorization", "")):
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

    # -- reading the directory --------------------------------------------------------------

    def _need_nats(self) -> None:
        if not self.app.nc.is_connected:
            raise ApiError(503, "unavailable", "NATS is not connected (the lobby is reconnecting)")
        if not self.app.directory.opened:
            raise ApiError(503, "unavailable", "the directory buckets are not open yet")

    async def _snapshot(self, kv: KeyValue | None,
                        ) -> list[tuple[str, dict[str, Any], float | None]]:
        """Every live key of a bucket with its JSON value and the time of its last write
        (one ordered consumer, not a get per key); unusable values are skipped."""
        self._need_nats()
        assert kv is not None   # the directory is open
        watcher = await kv.watchall(ignore_deletes=True, inactive_threshold=WATCH_INACTIVE)
        out = []
        try:
            async for entry in watcher:
                if entry is None:   # the end of the current values
                    break
                try:
                    value = json.loads(entry.value or b"")
                except ValueError:
                    continue
                if isinstance(value, dict):
                    created = entry.created.timestamp() if entry.created is not None else None
                    out.append((entry.key, value, created))
        finally:
            await watcher.stop()
        return out

    async def _room_values(self) -> list[dict[str, Any]]:
        return [value for _, value, _ in await self._snapshot(self.app.directory.rooms)]

    # -- handlers -------------------------------------------------------------------------

    async def overview(self, request: web.Request) -> dict[str, Any]:
        tables = await self.tables(request)
        rooms = [room_summary(v) for v in await self._room_values()]
        by_game: dict[str, Counter[str]] = {}
        for room in rooms:
            by_game.setdefault(room["game"], Counter())[room["status"]] += 1
        hub = self.app.hub
        now = time.time()
        return {
            "lobby": {"instance": self.instance, "pid": os.getpid(), "version": self.version,
                      "started_at": _iso(self.started),
                      "uptime_seconds": round(now - self.started, 1),
                      "nats_connected": self.app.nc.is_connected},
            "sessions": {"connections": len(hub.sessions), "logged_in": len(hub.by_user),
                         "in_rooms": self.app.streams.sessions_in_rooms()},
            "tables": {"live": len(tables["tables"]),
                       "rooms": sum(t["rooms"] for t in tables["tables"]),
                       "players": sum(t["players"] for t in tables["tables"])},
            "rooms": {"total": len(rooms),
                      "by_status": dict(sorted(Counter(r["status"] for r in rooms).items())),
                      "by_game": {game: dict(sorted(c.items()))
                                  for game, c in sorted(by_game.items())}},
        }

    async def tables(self, request: web.Request) -> dict[str, Any]:
        now = time.time()
        linked = self.app.directory.addresses
        out: list[dict[str, Any]] = []
        for key, value, written in await self._snapshot(self.app.directory.tables):
            address = _text(value.get("address"))
            started = value.get("started_at")
            started = float(started) if isinstance(started, int | float) \
                and not isinstance(started, bool) else None
            out.append({
                "instance": _text(value.get("instance")) or key,
                "address": address,
                "rooms": _number(value.get("rooms")),
                "players": _number(value.get("players")),
                "started_at": _iso(started) if started else None,
                "uptime_seconds": round(now - started, 1) if started else None,
                "heartbeat_age_seconds": round(max(0.0, now - written), 1)
                if written is not None else None,
                "linked_here": address in linked,
            })
        out.sort(key=lambda t: str(t["instance"]))
        return {"tables": out}

    async def rooms(self, request: web.Request) -> dict[str, Any]:
        game = request.query.get("game", "").strip().lower()
        status = request.query.get("status", "").strip().lower()
        if game and game not in _GAMES:
            raise ApiError(400, "bad_request",
                           f"game must be one of {', '.join(sorted(_GAMES))}, got {game[:40]!r}")
        if status and status not in _STATUSES:
            raise ApiError(400, "bad_request", f"status must be one of "
                           f"{', '.join(_STATUSES)}, got {status[:40]!r}")
        rooms = [room_summary(v) for v in await self._room_values()]
        rooms = [r for r in rooms if (not game or r["game"] == game)
                 and (not status or r["status"] == status)]
        rooms.sort(key=lambda r: r["room_id"])
        return {"rooms": rooms}

    async def room(self, request: web.Request) -> dict[str, Any]:
        room_id = parse_id(request.match_info["room_id"], "room id")
        self._need_nats()
        value = await self.app.directory.room(room_id)
        if value is None:
            raise ApiError(404, "not_found", f"room {room_id} is not in the directory")
        info = _room_info(value)
        here = self.app.hub.by_user
        seats = [{
            "seat": p.seat, "user_id": p.user_id, "nickname": p.nickname,
            "online": p.online, "ready": p.ready, "entrusted": p.entrusted,
            "total_score": p.total_score, "coins": p.coins,
            "session_here": p.user_id in here,
        } for p in sorted(info.players, key=lambda p: p.seat) if p.user_id]
        return {**room_summary(value), "room_id": room_id, "play_desc": info.play_desc,
                "min_hands": info.min_hands, "options": _options(info.options_json),
                "seats": seats}

    async def user(self, request: web.Request) -> dict[str, Any]:
        user_id = parse_id(request.match_info["user_id"], "user id")
        self._need_nats()
        entry = await self.app.directory.seat(user_id)
        seat = None if entry is None else {
            "room_id": _number(entry.get("room_id")), "seat": _number(entry.get("seat"), -1),
            "owner": _text(entry.get("owner")), "address": _text(entry.get("address"))}
        live = self.app.hub.by_user.get(user_id)
        now = time.monotonic()
        session = None if live is None else {
            "session_id": live.session_id, "room_id": live.room_id, "seat": live.seat,
            "logged_in_at": _iso(live.login_at) if live.login_at else None,
            "idle_seconds": round(max(0.0, now - live.last_seen), 1),
            "closing": live.outbox.closed}
        profile, profile_error = await self._profile(user_id)
        if seat is None and session is None and profile is None and not profile_error:
            raise ApiError(404, "not_found", f"user {user_id}: no seat, no session on this "
                           "lobby and no player record")
        out: dict[str, Any] = {"user_id": user_id, "seat": seat, "session_here": session,
                               "profile": profile}
        if profile_error:
            out["profile_error"] = profile_error
        return out

    async def _profile(self, user_id: int) -> tuple[dict[str, Any] | None, str]:
        """The player's record from records: (profile, "") or (None, why not); a player
        records does not know is (None, "")."""
        try:
            async with asyncio.timeout(PROFILE_TIMEOUT):
                record = await self.app.records.profile(user_id, "", create=False)
        except Unavailable as exc:
            return None, exc.message
        except Reject:
            return None, ""
        except TimeoutError:
            return None, f"records did not answer within {PROFILE_TIMEOUT:g} s"
        return {"nickname": record.nickname, "coins": record.coins, "sex": record.sex}, ""

    async def history(self, request: web.Request) -> dict[str, Any]:
        room_id = parse_id(request.match_info["room_id"], "room id")
        scores = await self.app.records.history(room_id, 0)   # user 0: the operator
        return {"room_id": room_id, "players": [
            {"user_id": item.user_id, "scores": list(item.scores), "total": sum(item.scores)}
            for item in scores.items]}


async def start_console(app: LobbyApp, cfg: Config) -> Console:
    """Start the operator console of this lobby on ``lobby.host``:``lobby.console_port``
    (0 = a free port); with ``console_port`` -1 the console stays off (``port`` -1,
    ``close`` does nothing). ConfigError, before anything binds, when it is on without a
    usable ``lobby.console_token``."""
    require_console_token(cfg)
    console = Console(app, cfg.lobby.console_token)
    if cfg.lobby.console_port >= 0:
        await console.start(cfg.lobby.host, cfg.lobby.console_port)
    return console
