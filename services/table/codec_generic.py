"""The codec parts of a game without typed frames of its own (Dou Dizhu): a ``GameAction``
frame is the engine action, every engine event travels as ``GameEvent`` (its canonical kind
and data as JSON, public or addressed to one seat as the engine said), and the snapshot is
``GameInfo`` (the seat's observation as JSON). A game's codec module imports these and adds
its own ``ERROR_CODES`` and ``DEFAULT_ERROR`` (services/table/wire.py, ``GameCodec``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from google.protobuf.message import Message

from games.engine import Action
from paiju.v1 import client_pb2
from paiju.v1 import game_msgs_pb2 as g
from services.table.wire import InfoSeats


def action(frame: client_pb2.ClientFrame) -> Action | None:
    if frame.WhichOneof("payload") != "game_action":
        return None
    a = frame.game_action
    return Action(a.kind, tuple(a.cards), a.ref, a.choice)


def event_message(kind: str, d: Mapping[str, Any], to: int | None,
                  ctx: Mapping[str, Any]) -> Message | None:
    return None   # every event is a GameEvent (services/table/codec.py)


def game_info(obs: Mapping[str, Any], at: int, seconds: float, seats: InfoSeats) -> Message:
    return g.GameInfo(game=str(obs.get("variant") or ""),
                      observation_json=json.dumps(obs, ensure_ascii=False, sort_keys=True),
                      seconds=int(seconds), entrusted=list(seats.entrusted),
                      cancel_entrust_count=seats.cancels_left)
