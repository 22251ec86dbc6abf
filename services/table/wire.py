"""Small helpers every game codec shares: tile and card lists, seats, JSON details, and the
error a client frame that is no game action raises. No game is named here."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from google.protobuf.message import Message

from games.engine import Action
from paiju.v1 import client_pb2

# engine event (kind, data, to, room facts) -> its typed message, or None for GameEvent
EventMessage = Callable[[str, Mapping[str, Any], int | None, Mapping[str, Any]], Message | None]


class FrameError(ValueError):
    """A client frame that is no game action of this room's game."""


@dataclass(frozen=True, slots=True)
class InfoSeats:
    """Room facts a game-info frame shows besides the engine's observation."""

    user_ids: tuple[int, ...]      # per seat, 0 for an empty one
    entrusted: tuple[bool, ...]    # per seat
    cancels_left: int              # the asking seat's cancels of entrust


class GameCodec(Protocol):
    """What a game's codec module offers the table (services/table/codec_<family>.py)."""

    @property
    def ERROR_CODES(self) -> Mapping[str, int]:  # noqa: N802 (a module constant)
        """Engine ``RuleError.code`` -> the game's ErrorCode."""

    @property
    def DEFAULT_ERROR(self) -> int:  # noqa: N802
        """The code of any other rule error."""

    def action(self, frame: client_pb2.ClientFrame) -> Action | None:
        """The engine action a client frame asks for; None if it is no action of this game."""

    def event_message(self, kind: str, data: Mapping[str, Any], to: int | None,
                      ctx: Mapping[str, Any]) -> Message | None:
        """The typed message of an engine event, or None (it travels as GameEvent)."""

    def game_info(self, obs: Mapping[str, Any], at: int, seconds: float,
                  seats: InfoSeats) -> Message:
        """The game-info frame of a snapshot (what a reconnecting seat sees of the hand)."""


def tiles(value: Any) -> list[str]:
    """Engine tile/card lists arrive as lists or as notation strings."""
    if value is None:
        return []
    if isinstance(value, str):
        return value.split() if " " in value or len(value) <= 2 else _split_mahjong(value)
    return [str(v) for v in value]


def _split_mahjong(text: str) -> list[str]:
    out: list[str] = []
    digits: list[str] = []
    for ch in text:
        if ch.isdigit():
            digits.append(ch)
        else:
            out.extend(d + ch for d in digits)
            digits = []
    return out


def seat(value: Any) -> int:
    return -1 if value is None else int(value)


def details(data: Mapping[str, Any]) -> str:
    return json.dumps(dict(data), ensure_ascii=False, sort_keys=True)
