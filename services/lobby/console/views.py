"""What the operator console shows, read through the lobby's own state: the room cache
(fed by the ``rooms`` bucket watch), the table cache (the ``tables`` watch), the sessions
here, a ``seats`` or ``rooms`` entry read by key, and records. No request opens a KV
consumer of its own.

Every answer is built field by field: a room's players through the room cache's public
copy (rooms.py's allow-list, the same as the room list's: never an IP), the seats of a room
with :data:`SEAT_FIELDS`, a subset of it; rule options without keys naming a password.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections import Counter
from datetime import UTC, datetime
from typing import Any

from paiju.v1 import common_pb2
from services.lobby.app import LobbyApp
from services.lobby.errors import Reject, Unavailable
from services.lobby.rooms import PLAYER_FIELDS, RoomEntry, room_entry

PROFILE_TIMEOUT = 3.0        # the records profile in /api/users (optional part of the answer)
MAX_ID = 2**63 - 1
# the games, by the proto enum (the lobby ships without the engines: games/ is the tables')
GAMES = {common_pb2.Game.Name(v).lower() for v in common_pb2.Game.values()
         if v != common_pb2.GAME_UNSPECIFIED}
STATUSES = {common_pb2.RoomStatus.Name(v)[len("ROOM_"):].lower(): v
            for v in common_pb2.RoomStatus.values()}
# what /api/rooms/{id} shows of each seated player: from the public allow-list only
SEAT_FIELDS = ("seat", "user_id", "nickname", "online", "ready", "entrusted", "total_score",
               "coins")
assert set(SEAT_FIELDS) <= set(PLAYER_FIELDS)


class ApiError(Exception):
    """An answer other than 200: HTTP status, a short error name and a message."""

    def __init__(self, status: int, error: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.error = error
        self.message = message


def parse_id(text: str, what: str) -> int:
    """A positive decimal id that fits an int64; ApiError 400 otherwise."""
    if not (text.isascii() and text.isdigit()) or len(text) > 19 or not 0 < int(text) <= MAX_ID:
        shown = text if len(text) <= 40 else text[:40] + "..."
        raise ApiError(400, "bad_request",
                       f"{what} must be a positive integer, got {shown!r}")
    return int(text)


def iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="seconds")


def status_name(status: int) -> str:
    name = common_pb2.RoomStatus.Name(status) if status in common_pb2.RoomStatus.values() \
        else ""
    return name[len("ROOM_"):].lower() if name else str(status)


def game_name(entry: RoomEntry) -> str:
    if entry.game in GAMES:
        return entry.game
    if entry.info.game != common_pb2.GAME_UNSPECIFIED:
        name: str = common_pb2.Game.Name(entry.info.game)
        return name.lower()
    return "unknown"


def room_summary(entry: RoomEntry) -> dict[str, Any]:
    """One line of the room list (a room cache entry)."""
    info = entry.info
    return {
        "room_id": entry.room_id,
        "game": game_name(entry),
        "status": status_name(entry.status),
        "hand": info.cur_hand,
        "total_hands": info.total_hands,
        "base_score": info.base_score,
        "players": sum(1 for p in info.players if p.user_id),
        "free_seats": entry.free_seats,
        "has_password": info.has_password,
        "owner": entry.owner,
        "address": entry.address,
    }


def options(text: str) -> Any:
    """A room's rule options (JSON text) as an object, keys naming a password left out."""
    if not text:
        return {}
    try:
        parsed = json.loads(text)
    except ValueError:
        return {"unparsed": text[:2000]}
    if isinstance(parsed, dict):
        return {k: v for k, v in parsed.items() if "password" not in str(k).lower()}
    return parsed


class Views:
    """The JSON answers of the console API for one lobby."""

    def __init__(self, app: LobbyApp, instance: str, version: str) -> None:
        self.app = app
        self.instance = instance
        self.version = version
        self.started = time.time()

    def need_nats(self) -> None:
        if not self.app.nc.is_connected:
            raise ApiError(503, "unavailable", "NATS is not connected (the lobby is reconnecting)")
        if not self.app.directory.opened:
            raise ApiError(503, "unavailable", "the directory buckets are not open yet")

    def rooms(self, game: str = "", status: str = "") -> list[dict[str, Any]]:
        self.need_nats()
        if game and game not in GAMES:
            raise ApiError(400, "bad_request",
                           f"game must be one of {', '.join(sorted(GAMES))}, got {game[:40]!r}")
        if status and status not in STATUSES:
            raise ApiError(400, "bad_request", f"status must be one of "
                           f"{', '.join(STATUSES)}, got {status[:40]!r}")
        rooms = [room_summary(e) for e in self.app.cache.entries()]
        return [r for r in rooms if (not game or r["game"] == game)
                and (not status or r["status"] == status)]

    def tables(self) -> list[dict[str, Any]]:
        self.need_nats()
        now, mono = time.time(), time.monotonic()
        linked = self.app.directory.addresses
        out: list[dict[str, Any]] = []
        for key, value, written in self.app.directory.table_cache.entries():
            address = value.address
            started = value.started_at or None
            out.append({
                "instance": value.instance or key,
                "address": address,
                "rooms": value.rooms,
                "players": value.players,
                "started_at": iso(started) if started else None,
                "uptime_seconds": round(now - started, 1) if started else None,
                "heartbeat_age_seconds": round(max(0.0, mono - written), 1),
                "linked_here": address in linked,
            })
        out.sort(key=lambda t: str(t["instance"]))
        return out

    def overview(self) -> dict[str, Any]:
        tables = self.tables()
        rooms = self.rooms()
        by_game: dict[str, Counter[str]] = {}
        for room in rooms:
            by_game.setdefault(room["game"], Counter())[room["status"]] += 1
        hub = self.app.hub
        now = time.time()
        return {
            "lobby": {"instance": self.instance, "pid": os.getpid(), "version": self.version,
                      "started_at": iso(self.started),
                      "uptime_seconds": round(now - self.started, 1),
                      "nats_connected": self.app.nc.is_connected},
            "sessions": {"connections": len(hub.sessions), "logged_in": len(hub.by_user),
                         "in_rooms": self.app.streams.sessions_in_rooms()},
            "tables": {"live": len(tables), "rooms": sum(t["rooms"] for t in tables),
                       "players": sum(t["players"] for t in tables)},
            "rooms": {"total": len(rooms),
                      "by_status": dict(sorted(Counter(r["status"] for r in rooms).items())),
                      "by_game": {game: dict(sorted(c.items()))
                                  for game, c in sorted(by_game.items())}},
        }

    async def room(self, room_id: int) -> dict[str, Any]:
        self.need_nats()
        entry = self.app.cache.get(room_id)
        if entry is None:     # not heard of yet (just created): its entry, read by key
            value = await self.app.directory.room(room_id)
            entry = room_entry(value) if value is not None else None
        if entry is None:
            raise ApiError(404, "not_found", f"room {room_id} is not in the directory")
        info = entry.info
        here = self.app.hub.by_user
        seats = [{**{name: getattr(p, name) for name in SEAT_FIELDS},
                  "session_here": p.user_id in here}
                 for p in sorted(info.players, key=lambda p: p.seat) if p.user_id]
        return {**room_summary(entry), "room_id": room_id, "play_desc": info.play_desc,
                "min_hands": info.min_hands, "options": options(info.options_json),
                "seats": seats}

    async def user(self, user_id: int) -> dict[str, Any]:
        self.need_nats()
        entry = await self.app.directory.seat(user_id)
        seat = None if entry is None else {
            "room_id": entry.room_id, "seat": entry.seat, "owner": entry.owner,
            "address": entry.address}
        live = self.app.hub.by_user.get(user_id)
        now = time.monotonic()
        session = None if live is None else {
            "session_id": live.session_id, "room_id": live.room_id, "seat": live.seat,
            "logged_in_at": iso(live.login_at) if live.login_at else None,
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

    async def history(self, room_id: int) -> dict[str, Any]:
        scores = await self.app.records.history(room_id, 0)   # user 0: the operator
        return {"room_id": room_id, "players": [
            {"user_id": item.user_id, "scores": list(item.scores), "total": sum(item.scores)}
            for item in scores.items]}
