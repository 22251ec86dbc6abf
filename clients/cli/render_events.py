"""One line of text per pushed event frame (public game events, own private tiles, room and
platform notices). ``None`` means the frame is not worth a line: the Prompt that follows
already says it (turn hints, claim windows) or the app renders it in full (settlement)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from clients.cli.games import game_ui
from games.dadun.combos import CLASS_NAMES
from paiju.v1 import client_pb2
from paiju.v1 import game_msgs_pb2 as g
from paiju.v1 import lobby_msgs_pb2 as lm

# Action kinds with their Chinese term, for labels.
TERMS = {"discard": "打", "chi": "吃", "peng": "碰", "zhigang": "明杠", "angang": "暗杠",
         "bugang": "补杠", "kaigang": "开杠", "buzhang": "补张", "hu": "胡", "pass": "过",
         "exchange_three": "换三张", "declare_void": "定缺", "opening_hu": "起手胡",
         "midway_hu": "中途胡",
         "haidi_take": "要海底", "haidi_refuse": "不要海底", "choose_friend_card": "叫朋友"}
# Engine events without a typed message that need no line of their own.
QUIET_KINDS = frozenset({"turn", "response", "hand_over", "hint_alone", "hint_out"})
DISMISS_REASONS = {lm.NoticeDismiss.PLAYER_VOTE: "the players voted (玩家解散)",
                   lm.NoticeDismiss.PLAYER_LEFT: "a player left (有玩家退出)",
                   lm.NoticeDismiss.ALL_HANDS_PLAYED: "all hands played (达到最高局数)",
                   lm.NoticeDismiss.NEGATIVE_COINS: "a player ran out of coins",
                   lm.NoticeDismiss.IDLE_TOO_LONG: "idle too long"}
PLAYER_CHANGES = {lm.PlayerChange.JOIN: "joined", lm.PlayerChange.LEAVE: "left",
                  lm.PlayerChange.READY: "ready (准备)", lm.PlayerChange.UNREADY: "not ready",
                  lm.PlayerChange.ONLINE: "back online", lm.PlayerChange.OFFLINE: "offline"}


def seat_name(seat: int, me: int = -1) -> str:
    if seat < 0:
        return "nobody"
    return "you" if seat == me else f"seat {seat}"


def does(seat: int, me: int, verb: str, verb_s: str = "") -> str:
    """Subject and verb that agree: ``you discard`` / ``seat 2 discards``."""
    return f"you {verb}" if seat == me else f"{seat_name(seat)} {verb_s or verb + 's'}"


def payment_text(payer: int, payee: int, amount: Any, reason: str, me: int = -1) -> str:
    return f"{does(payer, me, 'pay', 'pays')} {seat_name(payee, me)} {amount} ({reason})"


def event_line(frame: client_pb2.ServerFrame, me: int = -1) -> str | None:
    """The line for one pushed frame, seen from seat ``me`` (-1: not seated)."""
    name = frame.WhichOneof("payload")
    render = _RENDERERS.get(name or "")
    return render(getattr(frame, name), me) if render and name else None


def _mj_hand(m: g.MjHand, me: int) -> str:
    return "your tiles (手牌): " + " ".join(m.tiles)


def _mj_deal(m: g.MjDeal, me: int) -> str:
    return f"--- new hand: dealer (庄) {seat_name(m.dealer, me)}, wall {m.wall_remaining} tiles"


def _mj_draw(m: g.MjDraw, me: int) -> str | None:
    if not m.tile:
        return None
    back = " from the back (杠后补牌)" if m.from_back else ""
    return f"you draw (摸) {m.tile}{back}, wall {m.wall_remaining}"


def _mj_discard(m: g.MjDiscard, me: int) -> str:
    return f"{does(m.seat, me, 'discard')} {m.tile}"


def _mj_meld(m: g.MjMeld, me: int) -> str:
    source = f" from {seat_name(m.source, me)}" if m.source >= 0 else ""
    shown = f", reveals {' '.join(m.revealed)}" if m.revealed else ""
    tiles = " ".join(m.tiles) or ("(concealed)" if m.kind == "angang" else "(tiles not sent)")
    return f"{seat_name(m.seat, me)} {m.kind} ({TERMS.get(m.kind, m.kind)}) {tiles}{source}{shown}"


def _mj_hu(m: g.MjHu, me: int) -> str:
    how = "self-draw (自摸)" if m.source < 0 else f"on {seat_name(m.source, me)}'s tile"
    score = f"{m.big_hu} big hu" if m.big_hu else f"fan {m.fan}"
    order = f" #{m.order}" if m.order else ""
    return (f"{seat_name(m.seat, me)} HU (胡){order} with {m.tile}, {how}: "
            f"{', '.join(m.patterns) or 'basic'} [{score}]")


def _mj_void(m: g.MjVoid, me: int) -> str:
    return "void suits (定缺): " + ", ".join(f"{seat_name(s, me)} {v or '?'}"
                                            for s, v in enumerate(m.voids))


def _mj_payment(m: g.MjPayment, me: int) -> str:
    p = m.payment
    return "payment: " + payment_text(p.payer, p.payee, p.amount, p.reason, me)


def _mj_opening_hu(m: g.MjOpeningHu, me: int) -> str:
    shown = f": {' '.join(m.shown)}" if m.shown else ""
    return f"{does(m.seat, me, 'show', 'shows')} an opening hu (起手胡) {', '.join(m.types)}{shown}"


def _mj_haidi(m: g.MjHaidi, me: int) -> str:
    tile = f" {m.tile}" if m.tile else ""
    return f"{seat_name(m.seat, me)} last tile (海底) {m.step}{tile}"


def _mj_birds(m: g.MjBirds, me: int) -> str:
    """``hits`` counts the birds on each seat, seat 0 first (not a seat per bird)."""
    drawn = f"dice {' '.join(str(p) for p in m.dice)}" if m.dice else " ".join(m.tiles)
    hits = ", ".join(f"{seat_name(seat, me)} x{n}" for seat, n in enumerate(m.hits) if n)
    return f"birds (扎鸟) {drawn}; hits {hits or '-'}"


def _dd_assign(m: g.DdAssign, me: int) -> str:
    return f"your cards (发牌, {len(m.cards)}): {' '.join(m.cards)}"


def _dd_alone(m: g.DdUseAlone, me: int) -> str:
    return (f"{does(m.seat, me, 'play')} alone (打独)" if m.is_alone
            else f"{does(m.seat, me, 'do', 'does')} not play alone")


def _dd_friend(m: g.DdUseFriend, me: int) -> str:
    return f"the banker ({seat_name(m.seat, me)}) calls the friend card (叫朋友) {m.friend_card}"


def _dd_out(m: g.DdUseOut, me: int) -> str:
    if m.is_skip:
        return f"{does(m.seat, me, 'pass', 'passes')} (不要)"
    cls = CLASS_NAMES.get(m.pai_class, str(m.pai_class))
    extra = []
    if m.contain_friend_card:
        extra.append("friend card!")
    if m.bomb_odds:
        extra.append(f"bomb x{m.bomb_odds}")
    if m.rest_num >= 0:
        extra.append(f"{m.rest_num} left")
    tail = f" [{', '.join(extra)}]" if extra else ""
    return f"{does(m.seat, me, 'play')} {' '.join(m.cards)} ({cls}), desk {m.desktop_score} pts{tail}"


def _dd_clear(m: g.DdClearDesktop, me: int) -> str:
    return (f"{does(m.seat, me, 'win', 'wins')} the trick (收牌), {m.desktop_score} pts; "
            f"caught {' '.join(str(c) for c in m.catch_score)}")


def _dd_tan_pai(m: g.DdTanPai, me: int) -> str:
    shown = "; ".join(f"{seat_name(i.seat, me)}: {' '.join(i.cards) or '-'}" for i in m.items)
    return f"hands shown (摊牌): {shown}"


def _dd_game_info(m: g.DdGameInfo, me: int) -> str:
    """A Dadun snapshot (after 'room' or a reconnect) in one line: cards, desk, turn."""
    desk = "; ".join(f"{seat_name(p.seat, me)}: {' '.join(p.cards)}" for p in m.desktop
                     if not p.is_skip) or "empty"
    return (f"your cards ({len(m.hand)}): {' '.join(m.hand)} | desk {m.desktop_score} pts: "
            f"{desk} | to act: {seat_name(m.cur_out_seat, me)}")


def _game_event(m: g.GameEvent, me: int) -> str | None:
    if m.kind in QUIET_KINDS:
        return None
    data: dict[str, Any] = json.loads(m.json or "{}")
    ui = game_ui(m.game)
    if ui is not None:
        return ui.event_line(m.kind, data, me)
    if m.kind == "payment":
        return "payment: " + payment_text(int(data["payer"]), int(data["payee"]),
                                          data["amount"], data["reason"], me)
    if m.kind == "deal":
        no = f" {data['hand_no']}" if data.get("hand_no") else ""
        return f"--- new hand{no}: dealer (庄) {seat_name(int(data.get('dealer', -1)), me)}"
    if m.kind == "friend_revealed":
        return (f"friend revealed (朋友): {does(int(data['friend_seat']), me, 'hold')} "
                f"{data.get('card')}")
    if m.kind in _OWN_COPY:
        return _own_copy(m.kind, data, me)
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return f"{m.kind}: {text[:100]}"


# Events a seated player also gets privately with its own tiles: one line each, not two.
_OWN_COPY = frozenset({"exchange_committed", "exchange_done", "void_chosen"})


def _own_copy(kind: str, data: dict[str, Any], me: int) -> str | None:
    seat = int(data.get("seat", -1))
    private = "tiles" in data or "suit" in data
    if not private and me >= 0 and (seat == me or kind == "exchange_done"):
        return None  # the private copy of this event says more
    if kind == "exchange_committed":
        mine = f": {' '.join(data['tiles'])}" if private else ""
        return f"{does(seat, me, 'choose', 'chooses')} three tiles to pass (换三张){mine}"
    if kind == "exchange_done":
        got = f"; you receive {' '.join(data['tiles'])}" if private else ""
        return f"exchange three done (换三张), direction {data.get('direction')}{got}"
    suit = f" {data['suit']}" if private else ""
    return f"{does(seat, me, 'choose', 'chooses')} a void suit (定缺){suit}"


def _player_change(m: lm.PlayerChange, me: int) -> str:
    who = next((p.nickname for p in m.players if p.seat == m.seat and p.nickname), "")
    name = f"{seat_name(m.seat, me)} ({who or m.user_id})"
    return f"{name}: {PLAYER_CHANGES.get(m.reason, 'changed')}"


def _chat(m: lm.Chat, me: int) -> str:
    return f"chat [{m.author_id}]: {m.content}"


def _distance_alert(m: lm.DistanceAlert, me: int) -> str:
    return f"geo alert (距离警告): {m.alert}"


def _in_entrust(m: lm.InEntrust, me: int) -> str:
    tail = "; type 'entrust-cancel' to take over" if m.seat == me else ""
    return f"{does(m.seat, me, 'are', 'is')} entrusted (托管), {m.count} cancels left{tail}"


def _entrust_done(m: lm.CancelEntrustDone, me: int) -> str:
    return f"{does(m.seat, me, 'take', 'takes')} the seat back from entrust (取消托管)"


def _query_dismiss(m: lm.QueryDismiss, me: int) -> str:
    marks = {0: "?", 1: "yes", 2: "no"}
    votes = ", ".join(f"{v.nickname or v.user_id} {marks.get(v.vote, '?')}" for v in m.votes)
    return (f"dismiss vote (解散) asked by {m.apply_nickname or m.apply_user_id}: {votes}; "
            f"{m.remaining_seconds} s left, type 'vote yes' or 'vote no'")


def _notice_dismiss(m: lm.NoticeDismiss, me: int) -> str:
    if not m.dismissed:
        return f"dismiss refused: {m.doc or 'not everyone agreed'}"
    return (f"room {m.room_id} closed (解散): {DISMISS_REASONS.get(m.reason, m.reason)}"
            + (f" - {m.doc}" if m.doc else ""))


def _kick_out(m: lm.KickOut, me: int) -> str:
    return f"kicked out (顶号): user {m.user_id} logged in elsewhere"


def _room_change(m: lm.RoomChange, me: int) -> str:
    reason = lm.RoomChange.Reason.Name(m.reason).lower()
    return f"room {m.room.room_id} {reason} ({len(m.room.players)}/4 players)"


def _ret(m: Any, me: int) -> str:
    if m.code:
        return f"error {m.code}: {m.message}"
    return "ok" if m.message in ("", "ok") else f"ok: {m.message}"


# payload field -> its renderer; each takes that field's own message type (the frame's
# oneof picks it), so the value type names none
_RENDERERS: dict[str, Callable[[Any, int], str | None]] = {
    "mj_hand": _mj_hand, "mj_deal": _mj_deal, "mj_draw": _mj_draw, "mj_discard": _mj_discard,
    "mj_meld": _mj_meld, "mj_hu": _mj_hu, "mj_void": _mj_void, "mj_payment": _mj_payment,
    "mj_opening_hu": _mj_opening_hu, "mj_haidi": _mj_haidi, "mj_birds": _mj_birds,
    "dd_assign": _dd_assign, "dd_use_alone": _dd_alone, "dd_use_friend": _dd_friend,
    "dd_use_out": _dd_out, "dd_clear_desktop": _dd_clear, "dd_tan_pai": _dd_tan_pai,
    "dd_game_info": _dd_game_info,
    "game_event": _game_event, "player_change": _player_change, "chat": _chat,
    "distance_alert": _distance_alert, "in_entrust": _in_entrust,
    "cancel_entrust_done": _entrust_done, "query_dismiss": _query_dismiss,
    "notice_dismiss": _notice_dismiss, "kick_out": _kick_out, "room_change": _room_change,
    "ret": _ret,
}
