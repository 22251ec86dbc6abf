"""Making a room: a CreateRoomRequest checked (the game, its options by its own engine, the
room's timer options) and turned into the room's first log record."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from games.engine import RuleError
from paiju.v1 import common_pb2, table_pb2
from services.table import checks, variants
from services.table import logrec as lr
from services.table.room import Room

MAX_TIMER_SECONDS = 600


def validate(req: table_pb2.CreateRoomRequest) -> tuple[str, dict[str, Any]]:
    """The game's name and the options; ValueError (INVALID_ARGUMENT) with what is wrong."""
    known = variants.by_type(req.game)
    if known is None:
        choose = ", ".join(common_pb2.Game.Name(g.game_type) for g in variants.all_games())
        raise ValueError(f"unknown game: choose {choose}")
    game = known.name
    try:
        options = json.loads(req.options_json) if req.options_json else {}
    except json.JSONDecodeError as exc:
        raise ValueError(f"options_json is not JSON: {exc}") from None
    if not isinstance(options, dict):
        raise ValueError("options_json must be a JSON object")
    if req.total_hands < 0 or req.total_hands > 64 or req.base_score < 0:
        raise ValueError("total_hands must be 1..64 and base_score positive")
    probe = Room(lr.Create(0, game, options))
    try:  # the engine validates its own options
        known.spec.new_hand(probe.engine_options, 0, 0)
    except RuleError as err:
        raise ValueError(str(err)) from None
    for key, value in probe.room_options.items():
        if key == "entrust_cancels":
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 99:
                raise ValueError("entrust_cancels must be a whole number 0..99")
        elif (isinstance(value, bool) or not isinstance(value, int | float)
                or not math.isfinite(value) or not 0 < value <= MAX_TIMER_SECONDS):
            raise ValueError(f"{key} must be a number of seconds in (0, {MAX_TIMER_SECONDS}]")
    return game, options


def create_record(room_id: int, req: table_pb2.CreateRoomRequest, game: str,
                  options: dict[str, Any], entrust_cancels: int,
                  timers: Mapping[str, float] | None = None) -> lr.Create:
    return lr.Create(
        room_id, game, options, dict(timers or {}), base_score=req.base_score or 1,
        total_hands=req.total_hands or 4, min_hands=req.min_hands,
        password_hash=checks.password_hash(room_id, req.password), entrust_cancels=entrust_cancels,
        creator_id=req.creator_id,
        play_desc=describe(game, options, req.total_hands or 4, req.base_score or 1))


def describe(game: str, options: Mapping[str, Any], total_hands: int, base_score: int) -> str:
    """The room's rules for people (RoomInfo.play_desc): "XueZhan (血战到底), 4 hands,
    base 1, exchange three, turn seconds 12"."""
    parts = [variants.get(game).spec.title, f"{total_hands} hands", f"base {base_score}"]
    for key, value in sorted(options.items()):
        name = key.replace("_", " ")
        if value is True:
            parts.append(name)
        elif value is False:
            parts.append(f"no {name}")
        else:
            parts.append(f"{name} {json.dumps(value, ensure_ascii=False)}".replace('"', ""))
    return ", ".join(parts)
