"""The operator console's write actions (docs/services.md, "Operator actions"), behind a
token of their own (``lobby.console_admin_token``; empty = none: the console stays
read-only), each written to the audit log in records (who, what, when, target, result):

- ``POST /api/rooms/{id}/robots`` ``{"operator", "count"}``: seat robots in free seats
  (0 = all) between hands, whoever created the room (``kind="op_add_robots"`` to its table);
- ``POST /api/rooms/{id}/dismiss`` ``{"operator", "reason"}``: close the room now
  (``kind="op_dismiss"``: ``NoticeDismiss`` reason ``OPERATOR``, the hands played settled);
- ``POST /api/users/{uid}/kick`` ``{"operator", "reason"}``: end the user's sessions on every
  lobby (``session.kick.<uid>``: a ``KickOut``; he may log in again, his seat is played by
  entrust while he is away);
- ``POST /api/users/{uid}/mute`` ``{"operator", "minutes"}``: his chat is refused
  (``ERR_MUTED``) on every lobby for that long (0 lifts a mute; at most 7 days);
- ``POST /api/games/{game}/season`` ``{"operator"}``: start the game's next rating season
  (records' ``StartSeason``: the seasonal ratings start afresh; all-time ones stay), audited
  on target ``game`` with the game's ``paiju.v1.Game`` number;
- ``GET /api/audit[?limit=&target=room|user|game&id=]``: the audit log, newest first (read token
  or admin token).

An action is done first, then audited with its outcome; when records cannot take the entry
the answer is 503 saying the action was done, and the entry goes to the lobby's log at ERROR.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import secrets
import time
import unicodedata
from typing import Any

from aiohttp import web

from games import registry
from paiju.contracts.lobby import SessionKick
from paiju.frames import client_frame
from paiju.seated import LobbyKind
from paiju.v1 import common_pb2, lobby_msgs_pb2, records_pb2, table_pb2
from services.common import bus
from services.lobby.app import LobbyApp
from services.lobby.console.views import ApiError, parse_id
from services.lobby.errors import Reject

log = logging.getLogger("paiju.lobby.console.actions")

BODY_MAX = 4096
NAME_MAX = 64
REASON_MAX = 200
MUTE_MAX_MINUTES = 7 * 24 * 60
KICK_GENERATION = 2 ** 62   # above any token's: the kick reaches every session of the user


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogateescape")).digest()


def _text(value: Any, what: str, limit: int, *, required: bool) -> str:
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise ApiError(400, "bad_request", f"{what} must be a string")
    text = " ".join(value.split())
    if required and not text:
        raise ApiError(400, "bad_request", f"{what} is required")
    if len(text) > limit or any(unicodedata.category(c)[0] == "C" for c in text):
        raise ApiError(400, "bad_request", f"{what}: at most {limit} printable characters")
    return text


def _int(value: Any, what: str, low: int, high: int, default: int | None = None) -> int:
    if value is None and default is not None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ApiError(400, "bad_request", f"{what} must be a whole number {low}..{high}")
    return value


class Actions:
    """The console's write actions of one lobby replica."""

    def __init__(self, app: LobbyApp, admin_token: str, instance: str) -> None:
        self.app = app
        self.instance = instance
        self._digest = _digest(admin_token) if admin_token.strip() else None

    @property
    def enabled(self) -> bool:
        return self._digest is not None

    def authorized(self, header: str) -> bool:
        """``Bearer <admin token>``, compared in constant time; never without a token."""
        if self._digest is None:
            return False
        scheme, _, given = header.strip().partition(" ")
        if scheme.lower() != "bearer" or not given.strip():
            return False
        return hmac.compare_digest(_digest(given.strip()), self._digest)

    async def _body(self, request: web.Request) -> tuple[dict[str, Any], str]:
        if not self.authorized(request.headers.get("Authorization", "")):
            if not self.enabled:
                raise ApiError(403, "forbidden", "the console is read-only here "
                               "(no lobby.console_admin_token)")
            raise ApiError(403, "forbidden", "write actions need the operator (admin) token")
        if request.content_length is not None and request.content_length > BODY_MAX:
            raise ApiError(400, "bad_request", "the body is too long")
        try:
            body = await request.json()
        except ValueError:
            raise ApiError(400, "bad_request", "the body must be a JSON object") from None
        if not isinstance(body, dict):
            raise ApiError(400, "bad_request", "the body must be a JSON object")
        return body, _text(body.get("operator"), "operator", NAME_MAX, required=True)

    async def _audit(self, request: web.Request, operator: str, action: str, kind: str,
                     target: int, detail: dict[str, Any], result: str) -> int:
        entry = records_pb2.AuditRecord(
            operator=operator, action=action, target_kind=kind, target_id=target,
            detail_json=json.dumps(detail, ensure_ascii=False, sort_keys=True), result=result,
            source=f"{self.instance} {request.remote or ''}".strip())
        try:
            written = await self.app.records.append_audit(entry)
        except Reject as exc:
            log.error("operator action not audited", extra={
                "operator": operator, "action": action, "target": f"{kind}:{target}",
                "detail": entry.detail_json, "result": result, "error": exc.message})
            raise ApiError(503, "unavailable", f"the action was done ({result}) but the audit "
                           f"log could not be written: {exc.message}") from None
        return int(written.id)

    async def _table(self, room_id: int, kind: LobbyKind, **fields: Any) -> table_pb2.TableReply:
        cmd = table_pb2.TableCommand(room_id=room_id, kind=kind, **fields)
        return await self.app.forwarder.command(room_id, cmd)

    async def _room_action(self, request: web.Request, action: str, kind: LobbyKind,
                           detail: dict[str, Any], operator: str, room_id: int,
                           **fields: Any) -> dict[str, Any]:
        reply = await self._table(room_id, kind, **fields)
        if reply.code == common_pb2.ERR_NO_SUCH_ROOM:
            raise ApiError(404, "not_found", reply.message or f"no room {room_id}")
        result = "ok" if reply.code == 0 else \
            f"refused: {common_pb2.ErrorCode.Name(reply.code)} {reply.message}"
        audit = await self._audit(request, operator, action, "room", room_id, detail, result)
        if reply.code:
            raise ApiError(409, "refused", f"{reply.message} (audit entry {audit})")
        return {"ok": True, "audit_id": audit}

    # -- the actions -------------------------------------------------------------------------

    async def add_robots(self, request: web.Request) -> dict[str, Any]:
        room_id = parse_id(request.match_info["room_id"], "room id")
        body, operator = await self._body(request)
        count = _int(body.get("count"), "count", 0, 9, default=0)
        frame = client_frame(lobby_msgs_pb2.AddRobots(count=count))
        return await self._room_action(request, "add_robots", LobbyKind.OP_ADD_ROBOTS,
                                       {"count": count}, operator, room_id, frame=frame)

    async def dismiss(self, request: web.Request) -> dict[str, Any]:
        room_id = parse_id(request.match_info["room_id"], "room id")
        body, operator = await self._body(request)
        reason = _text(body.get("reason"), "reason", REASON_MAX, required=False)
        return await self._room_action(request, "dismiss_room", LobbyKind.OP_DISMISS,
                                       {"reason": reason}, operator, room_id, note=reason)

    async def kick(self, request: web.Request) -> dict[str, Any]:
        user_id = parse_id(request.match_info["user_id"], "user id")
        body, operator = await self._body(request)
        reason = _text(body.get("reason"), "reason", REASON_MAX, required=False)
        here = self.app.hub.by_user.get(user_id) is not None
        payload = SessionKick(session_id=f"operator-{secrets.token_hex(6)}",
                              login_at=time.time(), gen=KICK_GENERATION, expiry=0.0)
        await self.app.nc.publish(bus.session_kick(user_id), payload.encode())
        audit = await self._audit(request, operator, "kick_user", "user", user_id,
                                  {"reason": reason}, "ok")
        return {"ok": True, "audit_id": audit, "session_here": here}

    async def mute(self, request: web.Request) -> dict[str, Any]:
        user_id = parse_id(request.match_info["user_id"], "user id")
        body, operator = await self._body(request)
        minutes = _int(body.get("minutes"), "minutes", 0, MUTE_MAX_MINUTES)
        until = time.time() + minutes * 60
        await self.app.mutes.publish(user_id, until)
        audit = await self._audit(request, operator, "mute_user", "user", user_id,
                                  {"minutes": minutes}, "ok")
        return {"ok": True, "audit_id": audit, "until": int(until) if minutes else 0}

    async def start_season(self, request: web.Request) -> dict[str, Any]:
        name = request.match_info["game"]
        spec = next((s for s in registry.all() if s.name == name), None)
        if spec is None:
            raise ApiError(404, "not_found", f"no game {name[:40]!r}; known: "
                           f"{', '.join(s.name for s in registry.all())}")
        _, operator = await self._body(request)
        season = await self.app.records.start_season(spec.name, operator)
        audit = await self._audit(request, operator, "start_season", "game", spec.game_type,
                                  {"game": spec.name, "season": season.season}, "ok")
        return {"ok": True, "audit_id": audit, "game": spec.name, "season": season.season,
                "started_at": season.started_at}

    async def audit_log(self, request: web.Request) -> dict[str, Any]:
        """Readable with either token (the middleware checked one)."""
        query = request.query
        limit = query.get("limit", "100")
        if not (limit.isascii() and limit.isdigit()) or not 1 <= int(limit) <= 1000:
            raise ApiError(400, "bad_request", "limit must be 1..1000")
        target = query.get("target", "")
        if target not in ("", "room", "user", "game"):
            raise ApiError(400, "bad_request", "target must be room, user or game")
        target_id = parse_id(query["id"], "id") if query.get("id") else 0
        reply = await self.app.records.list_audit(records_pb2.ListAuditRequest(
            limit=int(limit), target_kind=target, target_id=target_id))
        return {"entries": [{
            "id": e.id, "at": e.at, "operator": e.operator, "action": e.action,
            "target": e.target_kind, "target_id": str(e.target_id),
            "detail": json.loads(e.detail_json or "{}"), "result": e.result,
            "source": e.source} for e in reply.entries]}
