"""Dadun's codec (崇仁打盾): Dd* frames -> engine actions, engine events -> Dd* messages (the
seed's wire names: ``DdUseOut`` is a play or a pass, ``is_skip`` a pass, ``pai_class`` the
combination class), rule errors -> the DD_ range, DdGameInfo snapshots."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from google.protobuf.message import Message

from games.engine import Action
from paiju.v1 import client_pb2, common_pb2
from paiju.v1 import game_msgs_pb2 as g
from services.table.wire import InfoSeats, details, seat, tiles

ERROR_CODES: dict[str, int] = {"not_your_turn": common_pb2.DD_NOT_YOUR_TURN,
               "illegal_action": common_pb2.DD_ILLEGAL_PLAY,
               "stale_ref": common_pb2.DD_STALE_TOKEN,
               "card_not_in_hand": common_pb2.DD_CARD_NOT_IN_HAND,
               "bad_input": common_pb2.DD_BAD_INPUT,
               "hand_over": common_pb2.DD_HAND_OVER,
               "friend_card_rejected": common_pb2.DD_FRIEND_CARD_REJECTED}
DEFAULT_ERROR: int = common_pb2.DD_ILLEGAL_PLAY


def action(frame: client_pb2.ClientFrame) -> Action | None:
    kind = frame.WhichOneof("payload")
    if kind == "dd_ask_alone":
        return Action("choose_alone", choice="yes" if frame.dd_ask_alone.is_alone else "no")
    if kind == "dd_choose_friend":
        return Action("choose_friend_card", tiles=(frame.dd_choose_friend.card,))
    if kind == "dd_ask_out":
        out = frame.dd_ask_out
        if out.is_skip:
            return Action("pass", ref=out.token)
        return Action("play", tiles=tuple(out.cards), ref=out.token)
    return None


def _ints(values: Any) -> list[int]:
    return [int(x) for x in values or ()]


def event_message(kind: str, d: Mapping[str, Any], to: int | None,
                  ctx: Mapping[str, Any]) -> Message | None:
    if kind == "hand" and to is not None:
        return g.DdAssign(cards=tiles(d.get("cards")))
    if kind == "hint_alone":
        return g.DdHintAlone(seat=seat(d.get("seat")), can_alone=bool(d.get("can_alone")),
                             countdown=int(d.get("countdown") or 0))
    if kind == "alone":
        hands = d.get("all_hands") or []
        return g.DdUseAlone(is_alone=bool(d.get("is_alone")), seat=seat(d.get("seat")),
                            all_hands=[g.DdHandCards(cards=tiles(h)) for h in hands])
    if kind == "friend_card":
        return g.DdUseFriend(seat=seat(d.get("banker")), friend_card=str(d.get("card", "")))
    if kind == "hint_out":
        return g.DdHintOut(token=str(d.get("token", "")), seat=seat(d.get("seat")),
                           is_force=bool(d.get("must_play")), countdown=int(d.get("countdown") or 0))
    if kind in ("play", "pass"):
        rest = d.get("rest_num")
        return g.DdUseOut(
            seat=seat(d.get("seat")), cards=tiles(d.get("cards")),
            contain_friend_card=bool(d.get("contains_friend_card")),
            desktop_score=int(d.get("desk_points") or 0), pai_class=int(d.get("class") or 0),
            over_order=int(d.get("over_order") or 0), bomb_score=_ints(d.get("bomb_score")),
            round_index=int(d.get("round_index") or 0), round_serial=int(d.get("round_serial") or 0),
            friend_ship=_ints(d.get("friendship")),
            is_skip=kind == "pass", bomb_odds=int(d.get("bomb_odds") or 0),
            rest_num=-1 if rest is None else int(rest),
            sum_bomb_odds=_ints(d.get("sum_bomb_odds")))
    if kind == "clear_desk":
        return g.DdClearDesktop(seat=seat(d.get("seat")), desktop_score=int(d.get("desk_points") or 0),
                                catch_score=_ints(d.get("catch")),
                                round_index=int(d.get("round") or 0))
    if kind == "show_hands":
        users = ctx.get("user_ids", ())
        return g.DdTanPai(items=[g.DdTanPaiItem(
            seat=seat(h.get("seat")), cards=tiles(h.get("cards")),
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
        at = int(p["seat"])
        players.append(g.DdSmallMeta(
            user_id=users[at] if at < len(users) else 0,
            nickname=names[at] if at < len(names) else "",
            win_score=int(p.get("win_score", 0)), bomb_score=int(p.get("bomb_score", 0)),
            over_order=int(p.get("over_order", 0)), is_double=bool(p.get("is_double")),
            is_alone=bool(p.get("is_alone")), bomb_odds=int(p.get("bomb_odds", 0)),
            is_banker=bool(p.get("is_banker")), friend_seat=seat(p.get("friend_seat")),
            fry_state=int(p.get("fry_state", 0)), catch_score=int(p.get("catch_score", 0)),
            card_score=int(p.get("card_score", 0)), is_bully=bool(p.get("is_bully"))))
    return g.DdSmallSettlement(
        room_id=int(ctx.get("room_id", 0)), status=common_pb2.ROOM_HAND_OVER, now=hand_no,
        next=hand_no + 1 if hand_no < total else 0, total=total, name="dadun",
        players=players, is_alone=bool(d.get("is_alone")), data_valid=True,
        base_score=int(d.get("base_score", ctx.get("base_score", 1))), details_json=details(d),
        deltas=[int(x) for x in d.get("deltas") or ()])


def game_info(obs: Mapping[str, Any], at: int, seconds: float, seats: InfoSeats) -> Message:
    def ints(key: str) -> list[int]:
        return [int(x or 0) for x in obs.get(key) or ()]

    banker = obs.get("banker")
    all_hands = obs.get("all_hands") or []
    return g.DdGameInfo(
        is_alone=bool(obs.get("is_alone")), friend_card=str(obs.get("friend_card") or ""),
        friend_show=bool(obs.get("friend_public")), friend_ship=ints("friendship"),
        banker_user_id=seats.user_ids[banker] if isinstance(banker, int) else 0,
        banker_seat=banker if isinstance(banker, int) else -1,
        desktop=[g.DdUseOut(seat=int(p["seat"]), cards=str(p["cards"]).split(),
                            pai_class=int(p.get("class") or 0)) for p in obs.get("desk") or ()],
        desktop_score=int(obs.get("desk_points") or 0),
        hand=str(obs.get("hand") or "").split(), catch_score=ints("catch"),
        bomb_score=ints("bomb_score"), can_out=at in tuple(obs.get("to_act") or ()),
        must_out=bool(obs.get("must_play")), out_token=str(obs.get("token") or ""),
        cur_out_seat=(list(obs.get("to_act") or [-1]) or [-1])[0],
        is_choice_alone=obs.get("phase") == "alone",
        choice_seat=obs.get("asking_seat") if isinstance(obs.get("asking_seat"), int) else -1,
        over_order=ints("over_order"),
        rest_num=[-1 if x is None else int(x) for x in obs.get("hand_counts") or ()],
        bomb_odds=ints("bomb_odds"), remain_out_time=int(seconds),
        remain_alone_time=int(seconds) if obs.get("phase") == "alone" else 0,
        is_entrust=list(seats.entrusted), cancel_entrust_count=seats.cancels_left,
        all_hands=[g.DdHandCards(cards=str(h).split()) for h in all_hands])
