"""Dev guest login: ``POST /guest`` on the WebSocket port (docs/services.md, "Guest login").

A JSON body ``{"nickname": "..."}`` gets ``{"token", "user_id", "nickname", "expires_in"}``:
a login token (tokens.py) valid ``lobby.guest_token_seconds`` for a fresh user id of the
guest range (services/common/reserved.py), whose profile records makes now. The page then
logs in with it like with any token (``Login {token, nickname}``). Only where
``lobby.guest_login`` is on (dev and test; refused in prod by the config check) and the
tokens are signed ones (not ``legacy_md5``): elsewhere the path is a 404. Attempts count
against ``lobby.logins_per_ip_per_minute`` of the client's address (HTTP 429 beyond it).
"""

from __future__ import annotations

import logging
import unicodedata
from typing import Any

from aiohttp import web

from services.common import reserved
from services.lobby import limits, tokens
from services.lobby.app import LobbyApp
from services.lobby.errors import Reject

log = logging.getLogger("paiju.lobby.guest")

NICKNAME_MAX = 24
BODY_MAX = 1024


def nickname_of(body: Any) -> str:
    """The nickname asked for, trimmed; ValueError saying what is wrong with it."""
    if not isinstance(body, dict) or not isinstance(body.get("nickname"), str):
        raise ValueError('the body must be {"nickname": "..."}')
    name = " ".join(body["nickname"].split())
    if not name:
        raise ValueError("a nickname is needed")
    if len(name) > NICKNAME_MAX:
        raise ValueError(f"a nickname has at most {NICKNAME_MAX} characters")
    if any(unicodedata.category(ch)[0] == "C" for ch in name):
        raise ValueError("a nickname cannot hold control characters")
    if "robot" in name.lower():
        raise ValueError("robot names are the table's")
    return name


def _error(status: int, error: str, message: str) -> web.Response:
    return web.json_response({"error": error, "message": message}, status=status)


async def guest_login(app: LobbyApp, request: web.Request, ip: str) -> web.Response:
    """The answer to ``POST /guest`` from client address ``ip``."""
    c = app.lobby
    if not c.guest_login or c.legacy_md5:
        return _error(404, "not_found", "guest login is off on this server")
    try:
        limits.take("guest", (app.limits.logins_per_ip, ip))
    except Reject as exc:
        return _error(429, "rate_limited", exc.message)
    if request.content_length is not None and request.content_length > BODY_MAX:
        return _error(400, "bad_request", "the body is too long")
    try:
        body = await request.json()
    except ValueError:
        return _error(400, "bad_request", "the body must be JSON")
    try:
        nickname = nickname_of(body)
    except ValueError as exc:
        return _error(400, "bad_request", str(exc))
    user_id = reserved.new_guest_id()
    try:
        await app.records.profile(user_id, nickname, create=True)
    except Reject as exc:
        return _error(503, "unavailable", exc.message)
    token = tokens.mint(user_id, c.token_secret, ttl=c.guest_token_seconds, key_id=c.token_key_id)
    log.info("guest login", extra={"user": user_id})
    # int64 as a string, as in proto3 JSON: a browser's numbers cannot hold it exactly
    return web.json_response({"token": token, "user_id": str(user_id), "nickname": nickname,
                              "expires_in": c.guest_token_seconds})
