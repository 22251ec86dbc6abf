"""Translation between the wire protocol and the engines, for any game: client frames ->
engine actions, engine events -> server frames, engine reasons -> error codes. Each game's
own messages are in its codec module (services/table/variants.py says which); no rule
logic here."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from games.engine import Action, Event
from paiju import frames
from paiju.v1 import client_pb2
from paiju.v1 import game_msgs_pb2 as g
from services.table import variants
from services.table.wire import FrameError, details, seat

__all__ = ["FrameError", "action_from_frame", "event_frame", "rule_error_code"]


def rule_error_code(game: str, reason: str) -> int:
    """The numeric error code (the game's range) for an engine RuleError.code."""
    return variants.get(game).error_code(reason)


def action_from_frame(game: str, frame: client_pb2.ClientFrame) -> Action:
    """The engine action a client frame asks for (no legality check: the engine does it)."""
    action = variants.get(game).codec.action(frame)
    if action is None:
        kind = frame.WhichOneof("payload")
        raise FrameError(f"{kind or 'an empty frame'} is not an action of a {game} room")
    return action


def event_frame(game: str, event: Event, event_uid: str,
                ctx: Mapping[str, Any] | None = None) -> client_pb2.ServerFrame:
    """The server frame for one engine event: its typed message, or GameEvent with JSON.
    ``ctx`` carries room facts the engine does not know (room id, hand number, user ids)."""
    data = event.data
    try:
        typed = variants.get(game).codec.event_message(event.kind, data, event.to, ctx or {})
    except (KeyError, TypeError, ValueError):
        typed = None
    if typed is None:
        at = data.get("seat") if isinstance(data, Mapping) else None
        typed = g.GameEvent(game=game, kind=event.kind, seat=seat(at) if isinstance(at, int) else -1,
                            json=details(data))
    return frames.server_frame(typed, event_uid=event_uid)
