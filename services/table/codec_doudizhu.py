"""Dou Dizhu's codec (斗地主): the generic frames (services/table/codec_generic.py) -
``GameAction`` in, ``GameEvent`` out, ``GameInfo`` snapshots - and its rule errors in the
DZ_ range of doudizhu.proto (9990-9999)."""

from __future__ import annotations

from paiju.v1 import doudizhu_pb2 as dz
from services.table.codec_generic import action, event_message, game_info

__all__ = ["DEFAULT_ERROR", "ERROR_CODES", "action", "event_message", "game_info"]

ERROR_CODES: dict[str, int] = {
    "not_your_turn": dz.DZ_NOT_YOUR_TURN,
    "illegal_action": dz.DZ_ILLEGAL_ACTION,
    "stale_ref": dz.DZ_STALE,
    "card_not_in_hand": dz.DZ_CARD_NOT_IN_HAND,
    "bad_input": dz.DZ_BAD_INPUT,
    "hand_over": dz.DZ_HAND_OVER,
    "does_not_beat": dz.DZ_DOES_NOT_BEAT,
    "not_a_combination": dz.DZ_NOT_A_COMBINATION,
    "wrong_phase": dz.DZ_WRONG_PHASE,
    "leader_must_play": dz.DZ_LEADER_MUST_PLAY,
}
DEFAULT_ERROR: int = dz.DZ_ILLEGAL_ACTION
