"""Translation between the wire protocol and the engines: client frames -> engine actions,
engine events -> server frames, engine reasons -> error codes. No rule logic here."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from google.protobuf.message import Message

from games.engine import Action, Event
from paiju import frames
from paiju.v1 import client_pb2, common_pb2
from paiju.v1 import game_msgs_pb2 as g

GAME_NAMES = {common_pb2.XUEZHAN: "xuezhan", common_pb2.CHANGSHA: "changsha",
              common_pb2.DADUN: "dadun"}
GAME_ENUMS = {v: k for k, v in GAME_NAMES.items()}
MAHJONG = ("xuezhan", "changsha")

_MJ_CODES = {"not_your_turn": common_pb2.MJ_NOT_YOUR_TURN,
             "illegal_action": common_pb2.MJ_ILLEGAL_ACTION,
             "stale_ref": common_pb2.MJ_STALE_WINDOW,
             "tile_not_in_hand": common_pb2.MJ_TILE_NOT_IN_HAND,
             "bad_input": common_pb2.MJ_BAD_INPUT,
             "hand_over": common_pb2.MJ_HAND_OVER}
_DD_CODES = {"not_your_turn": common_pb2.DD_NOT_YOUR_TURN,
             "illegal_action": common_pb2.DD_ILLEGAL_PLAY,
             "stale_ref": common_pb2.DD_STALE_TOKEN,
             "card_not_in_hand": common_pb2.DD_CARD_NOT_IN_HAND,
             "bad_input": common_pb2.DD_BAD_INPUT,
             "hand_over": common_pb2.DD_HAND_OVER,
             "friend_card_rejected": common_pb2.DD_FRIEND_CARD_REJECTED}


def rule_error_code(game: str, reason: str) -> int:
    """The numeric error code (the game's range) for an engine RuleError.code."""
    if game == "dadun":
        return _DD_CODES.get(reason, common_pb2.DD_ILLEGAL_PLAY)
    return _MJ_CODES.get(reason, common_pb2.MJ_ILLEGAL_ACTION)


class FrameError(ValueError):
    """A client frame that is no game action of this room's game."""


def action_from_frame(game: str, frame: client_pb2.ClientFrame) -> Action:
    """The engine action a client frame asks for (no legality check: the engine does it)."""
    kind = frame.WhichOneof("payload")
    if game in MAHJONG and kind == "mahjong_action":
        m = frame.mahjong_action
        return Action(m.kind, tuple(m.tiles), str(m.window_id) if m.window_id else "", m.choice)
    if game == "dadun":
        if kind == "dd_ask_alone":
            return Action("choose_alone", choice="yes" if frame.dd_ask_alone.is_alone else "no")
        if kind == "dd_choose_friend":
            return Action("choose_friend_card", tiles=(frame.dd_choose_friend.card,))
        if kind == "dd_ask_out":
            out = frame.dd_ask_out
            if out.is_skip:
                return Action("pass", ref=out.token)
            return Action("play", tiles=tuple(out.cards), ref=out.token)
    raise FrameError(f"{kind or 'an empty frame'} is not an action of a {game} room")


def _tiles(value: Any) -> list[str]:
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


def _seat(value: Any) -> int:
    return -1 if value is None else int(value)


# Typed messages for the engine events that have one; everything else travels as GameEvent.
def _json(data: Mapping[str, Any]) -> str:
    return json.dumps(dict(data), ensure_ascii=False, sort_keys=True)


def _mj(kind: str, d: Mapping[str, Any], to: int | None, ctx: Mapping[str, Any]) -> Message | None:
    if kind in ("hand",) and to is not None:
        return g.MjHand(tiles=_tiles(d.get("tiles")))
    if kind == "deal":
        return g.MjDeal(dealer=_seat(d.get("dealer")), wall_remaining=int(d.get("wall_remaining", 0)),
                        hand_no=int(ctx.get("hand_no", 0)))
    if kind == "draw":
        return g.MjDraw(seat=_seat(d.get("seat")), tile=str(d.get("tile") or ""),
                        wall_remaining=int(d.get("wall_remaining", 0)),
                        from_back=d.get("from") == "back")
    if kind == "discard":
        return g.MjDiscard(seat=_seat(d.get("seat")), tile=str(d.get("tile", "")))
    if kind == "window_opened":
        return g.MjWindowOpened(window_id=int(d["window"]), source=_seat(d.get("source")),
                                tile=str(d.get("tile", "")), trigger=str(d.get("trigger", "")))
    if kind == "candidates" and to is not None:
        return g.MjCandidates(window_id=int(d.get("window") or 0), actions=[
            g.MahjongAction(kind=a["kind"], tiles=_tiles(a.get("tiles")),
                            window_id=int(a["ref"]) if a.get("ref") else 0,
                            choice=a.get("choice", "")) for a in d.get("actions", ())])
    if kind == "window_closed":
        return g.MjWindowClosed(window_id=int(d["window"]), action=str(d.get("action", "")),
                                winners=[int(w) for w in d.get("winners", ())])
    if kind in ("chi", "peng", "zhigang", "angang", "bugang", "kaigang", "buzhang"):
        tiles = _tiles(d.get("tiles"))
        if not tiles and d.get("tile"):  # kong events name their one tile
            tiles = [str(d["tile"])] * 4
        return g.MjMeld(seat=_seat(d.get("seat")), kind=kind, tiles=tiles,
                        source=_seat(d.get("from")), revealed=_tiles(d.get("reveals")))
    if kind == "hu":
        return g.MjHu(seat=_seat(d.get("seat")), tile=str(d.get("tile", "")),
                      source=_seat(d.get("from")), patterns=list(d.get("patterns", ())),
                      fan=int(d.get("fan") or 0), big_hu=int(d.get("big_hu") or 0),
                      order=int(d.get("order") or 0), hand=_tiles(d.get("hand")))
    if kind == "payment":
        return g.MjPayment(payment=common_pb2.Payment(
            reason=str(d["reason"]), payer=int(d["payer"]), payee=int(d["payee"]),
            amount=int(d["amount"]), ref=str(d.get("ref", ""))))
    if kind == "void_declared":
        return g.MjVoid(voids=[v or "" for v in d.get("voids", ())])
    if kind in ("opening_hu", "midway_hu"):  # a midway win (中途四喜/六六顺) names its type
        return g.MjOpeningHu(seat=_seat(d.get("seat")), types=list(d.get("types", ())),
                             shown=_tiles(d.get("tiles") or d.get("shown")))
    if kind == "birds":
        return g.MjBirds(tiles=_tiles(d.get("tiles")), hits=[int(h) for h in d.get("hits", ())])
    if kind == "hand_over":
        return g.MjHandOver(
            hand_no=int(ctx.get("hand_no", 0)), deltas=[int(x) for x in d.get("deltas", ())],
            hands=[str(h) for h in d.get("hands", ())], next_dealer=_seat(d.get("next_dealer")),
            details_json=_json(d), draw_game=not d.get("winners"))
    return None


def _dd(kind: str, d: Mapping[str, Any], to: int | None, ctx: Mapping[str, Any]) -> Message | None:
    if kind == "hand" and to is not None:
        return g.DdAssign(cards=_tiles(d.get("cards")))
    if kind == "hint_alone":
        return g.DdHintAlone(seat=_seat(d.get("seat")), can_alone=bool(d.get("can_alone")),
                             countdown=int(d.get("countdown") or 0))
    if kind == "alone":
        hands = d.get("all_hands") or []
        return g.DdUseAlone(is_alone=bool(d.get("is_alone")), seat=_seat(d.get("seat")),
                            all_hands=[g.DdHandCards(cards=_tiles(h)) for h in hands])
    if kind == "friend_card":
        return g.DdUseFriend(seat=_seat(d.get("banker")), friend_card=str(d.get("card", "")))
    if kind == "hint_out":
        return g.DdHintOut(token=str(d.get("token", "")), seat=_seat(d.get("seat")),
                           is_force=bool(d.get("must_play")), countdown=int(d.get("countdown") or 0))
    if kind in ("play", "pass"):
        rest = d.get("rest_num")
        return g.DdUseOut(
            seat=_seat(d.get("seat")), cards=_tiles(d.get("cards")),
            contain_friend_card=bool(d.get("contains_friend_card")),
            desktop_score=int(d.get("desk_points") or 0), pai_class=int(d.get("class") or 0),
            over_order=int(d.get("over_order") or 0),
            bomb_score=[int(x) for x in d.get("bomb_score") or ()],
            round_index=int(d.get("round_index") or 0), round_serial=int(d.get("round_serial") or 0),
            friend_ship=[int(x) for x in d.get("friendship") or ()],
            is_skip=kind == "pass", bomb_odds=int(d.get("bomb_odds") or 0),
            rest_num=-1 if rest is None else int(rest),
            sum_bomb_odds=[int(x) for x in d.get("sum_bomb_odds") or ()])
    if kind == "clear_desk":
        return g.DdClearDesktop(seat=_seat(d.get("seat")), desktop_score=int(d.get("desk_points") or 0),
                                catch_score=[int(x) for x in d.get("catch") or ()],
                                round_index=int(d.get("round") or 0))
    if kind == "show_hands":
        users = ctx.get("user_ids", ())
        return g.DdTanPai(items=[g.DdTanPaiItem(
            seat=_seat(h.get("seat")), cards=_tiles(h.get("cards")),
            user_id=users[h["seat"]] if h.get("seat") is not None and h["seat"] < len(users) else 0)
            for h in d.get("hands", ())])
    if kind == "hand_over":
        return _small_settlement(d, ctx)
    return None


def _small_settlement(d: Mapping[str, Any], ctx: Mapping[str, Any]) -> g.DdSmallSettlement:
    """PBSmallSettlement: the per-seat result of a Dadun deal."""
    users, names = ctx.get("user_ids", ()), ctx.get("nicknames", ())
    hand_no, total = int(ctx.get("hand_no", 0)), int(ctx.get("total_hands", 0))
    players = []
    for p in d.get("players", ()):
        seat = int(p["seat"])
        players.append(g.DdSmallMeta(
            user_id=users[seat] if seat < len(users) else 0,
            nickname=names[seat] if seat < len(names) else "",
            win_score=int(p.get("win_score", 0)), bomb_score=int(p.get("bomb_score", 0)),
            over_order=int(p.get("over_order", 0)), is_double=bool(p.get("is_double")),
            is_alone=bool(p.get("is_alone")), bomb_odds=int(p.get("bomb_odds", 0)),
            is_banker=bool(p.get("is_banker")), friend_seat=_seat(p.get("friend_seat")),
            fry_state=int(p.get("fry_state", 0)), catch_score=int(p.get("catch_score", 0)),
            card_score=int(p.get("card_score", 0)), is_bully=bool(p.get("is_bully"))))
    return g.DdSmallSettlement(
        room_id=int(ctx.get("room_id", 0)), status=common_pb2.ROOM_HAND_OVER, now=hand_no,
        next=hand_no + 1 if hand_no < total else 0, total=total, name="dadun",
        players=players, is_alone=bool(d.get("is_alone")), data_valid=True,
        base_score=int(d.get("base_score", ctx.get("base_score", 1))), details_json=_json(d))


_TYPED: dict[str, Callable[[str, Mapping[str, Any], int | None, Mapping[str, Any]],
                           Message | None]] = {
    "xuezhan": _mj, "changsha": _mj, "dadun": _dd}


def event_frame(game: str, event: Event, event_uid: str,
                ctx: Mapping[str, Any] | None = None) -> client_pb2.ServerFrame:
    """The server frame for one engine event: its typed message, or GameEvent with JSON.
    ``ctx`` carries room facts the engine does not know (room id, hand number, user ids)."""
    data = event.data
    try:
        typed = _TYPED[game](event.kind, data, event.to, ctx or {})
    except (KeyError, TypeError, ValueError):
        typed = None
    if typed is None:
        seat = data.get("seat") if isinstance(data, Mapping) else None
        typed = g.GameEvent(game=game, kind=event.kind, seat=_seat(seat) if isinstance(seat, int) else -1,
                            json=_json(data))
    return frames.server_frame(typed, event_uid=event_uid)
