"""The mahjong games' codec (XueZhan, Changsha): MahjongAction frames -> engine actions,
engine events -> Mj* messages, rule errors -> the MJ_ range, MjGameInfo snapshots."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from google.protobuf.message import Message

from games.engine import Action
from paiju.v1 import client_pb2, common_pb2
from paiju.v1 import game_msgs_pb2 as g
from services.table.wire import InfoSeats, details, seat, tiles

ERROR_CODES: dict[str, int] = {"not_your_turn": common_pb2.MJ_NOT_YOUR_TURN,
               "illegal_action": common_pb2.MJ_ILLEGAL_ACTION,
               "stale_ref": common_pb2.MJ_STALE_WINDOW,
               "tile_not_in_hand": common_pb2.MJ_TILE_NOT_IN_HAND,
               "bad_input": common_pb2.MJ_BAD_INPUT,
               "hand_over": common_pb2.MJ_HAND_OVER}
DEFAULT_ERROR: int = common_pb2.MJ_ILLEGAL_ACTION
MELDS = ("chi", "peng", "zhigang", "angang", "bugang", "kaigang", "buzhang")


def action(frame: client_pb2.ClientFrame) -> Action | None:
    if frame.WhichOneof("payload") != "mahjong_action":
        return None
    m = frame.mahjong_action
    return Action(m.kind, tuple(m.tiles), str(m.window_id) if m.window_id else "", m.choice)


def event_message(kind: str, d: Mapping[str, Any], to: int | None,
                  ctx: Mapping[str, Any]) -> Message | None:
    if kind == "hand" and to is not None:
        return g.MjHand(tiles=tiles(d.get("tiles")))
    if kind == "deal":
        return g.MjDeal(dealer=seat(d.get("dealer")), wall_remaining=int(d.get("wall_remaining", 0)),
                        hand_no=int(ctx.get("hand_no", 0)))
    if kind == "draw":
        return g.MjDraw(seat=seat(d.get("seat")), tile=str(d.get("tile") or ""),
                        wall_remaining=int(d.get("wall_remaining", 0)),
                        from_back=d.get("from") == "back")
    if kind == "discard":
        return g.MjDiscard(seat=seat(d.get("seat")), tile=str(d.get("tile", "")))
    if kind == "window_opened":
        return g.MjWindowOpened(window_id=int(d["window"]), source=seat(d.get("source")),
                                tile=str(d.get("tile", "")), trigger=str(d.get("trigger", "")))
    if kind == "candidates" and to is not None:
        return g.MjCandidates(window_id=int(d.get("window") or 0), actions=[
            g.MahjongAction(kind=a["kind"], tiles=tiles(a.get("tiles")),
                            window_id=int(a["ref"]) if a.get("ref") else 0,
                            choice=a.get("choice", "")) for a in d.get("actions", ())])
    if kind == "window_closed":
        return g.MjWindowClosed(window_id=int(d["window"]), action=str(d.get("action", "")),
                                winners=[int(w) for w in d.get("winners", ())])
    if kind in MELDS:
        shown = tiles(d.get("tiles"))
        if not shown and d.get("tile"):  # kong events name their one tile
            shown = [str(d["tile"])] * 4
        return g.MjMeld(seat=seat(d.get("seat")), kind=kind, tiles=shown,
                        source=seat(d.get("from")), revealed=tiles(d.get("reveals")))
    if kind == "hu":
        return g.MjHu(seat=seat(d.get("seat")), tile=str(d.get("tile", "")),
                      source=seat(d.get("from")), patterns=list(d.get("patterns", ())),
                      fan=int(d.get("fan") or 0), big_hu=int(d.get("big_hu") or 0),
                      order=int(d.get("order") or 0), hand=tiles(d.get("hand")))
    if kind == "payment":
        return g.MjPayment(payment=common_pb2.Payment(
            reason=str(d["reason"]), payer=int(d["payer"]), payee=int(d["payee"]),
            amount=int(d["amount"]), ref=str(d.get("ref", ""))))
    if kind == "void_declared":
        return g.MjVoid(voids=[v or "" for v in d.get("voids", ())])
    if kind in ("opening_hu", "midway_hu"):  # a midway win (中途四喜/六六顺) names its type
        return g.MjOpeningHu(seat=seat(d.get("seat")), types=list(d.get("types", ())),
                             shown=tiles(d.get("tiles") or d.get("shown")))
    if kind == "birds":
        return g.MjBirds(tiles=tiles(d.get("tiles")), hits=[int(h) for h in d.get("hits", ())],
                         dice=[int(p) for p in d.get("dice", ())])
    if kind == "hand_over":
        return g.MjHandOver(
            hand_no=int(ctx.get("hand_no", 0)), deltas=[int(x) for x in d.get("deltas", ())],
            hands=[str(h) for h in d.get("hands", ())], next_dealer=seat(d.get("next_dealer")),
            details_json=details(d), draw_game=not d.get("winners"))
    return None


def game_info(obs: Mapping[str, Any], at: int, seconds: float, seats: InfoSeats) -> Message:
    return g.MjGameInfo(observation_json=json.dumps(obs, ensure_ascii=False),
                        to_act_seconds=int(seconds), entrusted=list(seats.entrusted),
                        cancel_entrust_count=seats.cancels_left)
