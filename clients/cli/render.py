"""Pure text rendering for the terminal client: observations, legal actions, prompts,
settlements and rooms become lines of plain text. No I/O here, so every function is
unit-testable on real engine observations and real protocol messages.

Seats are shown as ``seat N``; the viewer's own seat reads ``you``. Chinese terms follow
in parentheses where a player of the game would look for them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from clients.cli.games import game_ui
from clients.cli.parse import CARD_GAMES
from clients.cli.render_events import TERMS, event_line, payment_text, seat_name
from games import registry
from paiju.v1 import client_pb2, common_pb2
from paiju.v1 import game_msgs_pb2 as g
from paiju.v1 import lobby_msgs_pb2 as lm

__all__ = ["action_label", "action_lines", "error_line", "event_line", "observation_lines",
           "prompt_lines", "room_lines", "room_list_lines", "settlement_lines", "seat_name"]

GAME_TITLES = {spec.name: spec.title for spec in registry.all()}
GAME_OF_ENUM = {spec.game_type: spec.name for spec in registry.all()}
STATUS = {common_pb2.ROOM_WAITING: "waiting", common_pb2.ROOM_PLAYING: "playing",
          common_pb2.ROOM_HAND_OVER: "hand over", common_pb2.ROOM_FINISHED: "finished",
          common_pb2.ROOM_DISMISSING: "dismissing", common_pb2.ROOM_CHOOSING_ALONE: "choosing alone"}
SUITS = {"m": "wan 万", "p": "tong 筒", "s": "tiao 条"}
WIDTH = 78


def _tiles(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return " ".join(str(v) for v in value)


# ---------------------------------------------------------------- observations
def observation_lines(game: str, obs: Mapping[str, Any]) -> list[str]:
    """The viewer's own hand and the table as that seat sees it, plus whose turn it is."""
    if not obs:
        return []
    me = int(obs.get("seat", -1))
    ui = game_ui(game)
    lines = (ui.observation_lines(obs, me) if ui is not None
             else _dadun_lines(obs, me) if game in CARD_GAMES else _mahjong_lines(obs, me))
    to_act = [int(s) for s in obs.get("to_act") or ()]
    phase = obs.get("phase", "")
    who = ", ".join(seat_name(s, me) for s in to_act) or "nobody"
    lines.append(f"phase {phase}; to act: {who}")
    return lines


def _mahjong_lines(obs: Mapping[str, Any], me: int) -> list[str]:
    hand = _tiles(obs.get("hand"))
    drawn = obs.get("drawn")
    lines = [f"your hand (手牌): {hand}" + (f"   drawn (摸到) {drawn}" if drawn else "")]
    voids = obs.get("void") or ()
    won = obs.get("won") or ()
    counts = obs.get("hand_counts") or ()
    for seat, (melds, discards) in enumerate(zip(obs.get("melds") or (), obs.get("discards") or (),
                                                 strict=False)):
        parts = [f"{seat_name(seat, me):>6}"]
        if seat < len(counts) and counts[seat] is not None:
            parts.append(f"{counts[seat]:>2} tiles")
        if seat < len(voids) and voids[seat]:
            parts.append(f"void {voids[seat]}")
        if seat < len(won) and won[seat]:
            parts.append("WON (已胡)")
        if melds:
            parts.append("melds " + " ".join(_meld(m) for m in melds))
        parts.append("discards " + (_tiles(discards) or "-"))
        lines.append(" | ".join(parts))
    window = obs.get("window")
    if isinstance(window, Mapping):
        lines.append(f"claim window {window.get('id')}: {window.get('tile')} from "
                     f"{seat_name(int(window.get('source', -1)), me)} ({window.get('trigger')})")
    lines.append(f"wall (牌墙) {obs.get('wall_remaining', '?')} tiles; dealer (庄) "
                 f"{seat_name(int(obs.get('dealer', -1)), me)}; scores {_ints(obs.get('scores'))}")
    return lines


def _meld(meld: Any) -> str:
    if not isinstance(meld, Mapping):
        return str(meld)
    kind = str(meld.get("kind", ""))
    return f"{kind}({TERMS.get(kind, kind)}):{_tiles(meld.get('tiles')) or '????'}"


def _dadun_lines(obs: Mapping[str, Any], me: int) -> list[str]:
    hand = _tiles(obs.get("hand"))
    lines = [f"your cards (手牌, {len(hand.split())}): {hand}"]
    banker = obs.get("banker")
    if isinstance(banker, int):
        friend = obs.get("friend_card")
        info = f"banker (庄) {seat_name(banker, me)}"
        if obs.get("is_alone"):
            info += " plays alone (打独)"
        elif friend:
            info += f"; friend card (朋友牌) {friend}"
        lines.append(info)
    desk = obs.get("desk") or ()
    if desk:
        plays = "; ".join(f"{seat_name(int(p.get('seat', -1)), me)}: {_tiles(p.get('cards'))}"
                          for p in desk if isinstance(p, Mapping))
        lines.append(f"desk (桌面) {obs.get('desk_points', 0)} pts: {plays}")
    else:
        lines.append("desk (桌面) empty")
    lines.append(f"points caught (抓分) {_ints(obs.get('catch'))}; "
                 f"cards left {_counts(obs.get('hand_counts'))}; scores {_ints(obs.get('scores'))}")
    return lines


def _ints(values: Any) -> str:
    return " ".join(str(v) for v in values or ()) or "-"


def _counts(values: Any) -> str:
    """Dadun shows a seat's card count only once it is small (``None`` = many)."""
    return " ".join("?" if v is None else str(v) for v in values or ()) or "-"


# ---------------------------------------------------------------- actions and prompts
def action_label(spec: g.ActionSpec | Mapping[str, Any]) -> str:
    """One legal action in words, e.g. ``discard 5m``, ``peng (碰) 6m``, ``play 3s 3s``."""
    if isinstance(spec, Mapping):
        kind, tiles = str(spec.get("kind", "")), _tiles(spec.get("tiles"))
        choice = str(spec.get("choice", ""))
    else:
        kind, tiles, choice = spec.kind, _tiles(spec.tiles), spec.choice
    if kind == "choose_alone":
        return "play alone (打独)" if choice == "yes" else "no alone (不打独)"
    if kind == "declare_void":
        return f"void (定缺) {choice} {SUITS.get(choice, '')}".rstrip()
    if kind == "pass" and tiles == "":
        return "pass (过)"
    term = f" ({TERMS[kind]})" if kind in TERMS and kind != "discard" else ""
    rest = " ".join(x for x in (tiles, choice) if x)
    return f"{kind}{term} {rest}".rstrip()


def action_lines(actions: Sequence[g.ActionSpec | Mapping[str, Any]],
                 width: int = WIDTH) -> list[str]:
    """Numbered actions packed into lines: ``1) discard 5m   2) peng (碰) 6m``."""
    items = [f"{i}) {action_label(a)}" for i, a in enumerate(actions, 1)]
    lines: list[str] = []
    current = ""
    for item in items:
        if current and len(current) + 3 + len(item) > width:
            lines.append(current)
            current = ""
        current = f"{current}   {item}" if current else item
    if current:
        lines.append(current)
    return lines


def prompt_lines(prompt: g.Prompt) -> list[str]:
    """Everything a person needs to decide: the table, the countdown and the choices."""
    obs = json.loads(prompt.observation_json or "{}")
    lines = observation_lines(prompt.game, obs)
    lines.append(f">> your decision (seat {prompt.seat}, {prompt.phase}), "
                 f"{prompt.seconds} s left:")
    lines.extend(action_lines(prompt.actions))
    lines.append("type a number or a shorthand (e.g. 'd 5m', 'p', 'h', 'pass')")
    return lines


# ---------------------------------------------------------------- settlement
def settlement_lines(game: str, over: Mapping[str, Any], payments: Iterable[Mapping[str, Any]],
                     me: int = -1, hand_no: int = 0) -> list[str]:
    """The hand's result: per-seat deltas, the ledger, and the revealed hands (mahjong) or
    the per-player score parts (Dadun). ``over`` is the engine's hand_over data."""
    title = f"hand {hand_no} over" if hand_no else "hand over"
    reason = over.get("reason")
    lines = [f"=== settlement (结算): {title}" + (f", {reason}" if reason else "")]
    deltas = list(over.get("deltas") or ())
    lines.append("deltas: " + ", ".join(f"{seat_name(s, me)} {d:+d}" for s, d in enumerate(deltas)))
    paid = list(payments)
    for p in paid:
        lines.append("  " + payment_text(int(p["payer"]), int(p["payee"]), p["amount"],
                                         str(p["reason"]), me))
    if not paid:
        lines.append("  no payments")
    ui = game_ui(game)
    if ui is not None:
        lines.extend(ui.settlement_lines(over, me))
    elif game in CARD_GAMES:
        lines.extend(_dadun_settlement(over, me))
    else:
        hands = over.get("hands") or ()
        if hands:
            lines.append("hands (亮牌):")
        for seat, hand in enumerate(hands):
            lines.append(f"  {seat_name(seat, me)}: {_tiles(hand) or '-'}")
        winners = over.get("winners") or ()
        if winners:
            lines.append("winners (胡): " + ", ".join(seat_name(int(w), me) for w in winners))
    nxt = over.get("next_dealer", over.get("next_banker"))
    if isinstance(nxt, int):
        lines.append(f"next dealer (下局庄): {seat_name(nxt, me)}")
    return lines


def _dadun_settlement(over: Mapping[str, Any], me: int) -> list[str]:
    lines = []
    if over.get("team_points"):
        lines.append(f"team points {_ints(over.get('team_points'))}; "
                     f"multiplier x{over.get('multiplier', 1)}")
    for p in over.get("players") or ():
        order = int(p.get("over_order") or 0)
        lines.append(f"  {seat_name(int(p.get('seat', -1)), me)}: win {p.get('win_score', 0)}, "
                     f"bomb {p.get('bomb_score', 0)}, cards {p.get('card_score', 0)}, "
                     f"caught {p.get('catch_score', 0)}"
                     + (f", out #{order} (出完)" if order else ""))
    return lines


# ---------------------------------------------------------------- rooms and errors
def room_lines(room: common_pb2.RoomInfo, me_uid: int = 0) -> list[str]:
    game = GAME_TITLES.get(GAME_OF_ENUM.get(room.game, ""), "?")
    vip = " VIP" if room.has_password else ""
    lines = [f"room {room.room_id}{vip}: {game}, {STATUS.get(room.status, room.status)}, "
             f"hand {room.cur_hand}/{room.total_hands}, base {room.base_score}"]
    for p in room.players:
        flags = [f for f, on in (("ready", p.ready), ("offline", not p.online),
                                 ("entrust 托管", p.entrusted)) if on]
        you = " (you)" if me_uid and p.user_id == me_uid else ""
        lines.append(f"  seat {p.seat}: {p.nickname or p.user_id}{you} [{p.user_id}] "
                     f"score {p.total_score}" + (f" ({', '.join(flags)})" if flags else ""))
    return lines


def room_list_lines(rooms: Iterable[common_pb2.RoomInfo]) -> list[str]:
    lines = []
    for room in rooms:
        game = GAME_OF_ENUM.get(room.game, "?")
        vip = " VIP" if room.has_password else ""
        lines.append(f"  {room.room_id}{vip} {game:8s} {len(room.players)}/4 players, "
                     f"{STATUS.get(room.status, room.status)}, hands {room.total_hands}")
    return lines or ["  no rooms yet: 'create <game> [hands]' or 'quick <game>'"]


def error_line(ret: common_pb2.Return) -> str:
    return f"error {ret.code}: {ret.message}"


def _season_name(season: int) -> str:
    return "all-time" if season == 0 else f"season {season}"


def match_line(frame: client_pb2.ServerFrame) -> str:
    """What a matchmaking frame says: waiting (how many, the estimate), matched, or not."""
    kind = frame.WhichOneof("payload")
    if kind == "match_queued":
        q = frame.match_queued
        estimate = (f", about {q.estimated_wait_ms / 1000:.0f} s" if q.estimated_wait_ms
                    else "")
        return (f"looking for a {'ranked ' if q.ranked else ''}{q.game} match, stake {q.stake}"
                f": {q.waiting} waiting{estimate} ('cancel' to stop)")
    if kind == "match_found":
        f = frame.match_found
        robots = f", {f.robots} robot{'s' if f.robots != 1 else ''}" if f.robots else ""
        return (f"matched after {f.waited_ms / 1000:.1f} s: room {f.room_id}, seat {f.seat}"
                f"{robots}; type 'ready'")
    c = frame.match_cancelled
    why = {lm.MatchCancelled.CANCELLED: "cancelled", lm.MatchCancelled.TIMEOUT: "timed out",
           lm.MatchCancelled.FAILED: "failed"}.get(c.reason, "ended")
    return f"match request {why}" + (f": {c.message}" if c.message and why != "cancelled" else "")


def rating_line(r: lm.RatingInfo) -> str:
    """``xuezhan, all-time: 27.8 ± 8.3 (score 3.0), rank 1, 5 hands``."""
    where = f"{r.game}, {_season_name(r.season)}"
    if not r.rated:
        return f"{where}: not rated yet (play a hand)"
    return (f"{where}: {r.mu:.1f} ± {r.sigma:.1f} (score {r.score:.1f}), rank {r.rank}, "
            f"{r.hands} hand{'s' if r.hands != 1 else ''}")


def leaderboard_lines(board: lm.Leaderboard) -> list[str]:
    """The title, then one line per player: rank, user id, score, mu ± sigma, hands."""
    lines = [f"{board.game} leaderboard, {_season_name(board.season)} "
             f"({board.total} player{'s' if board.total != 1 else ''}):"]
    for e in board.entries:
        lines.append(f"  {e.rank:>4}. {e.user_id:<12} {e.score:6.1f}  "
                     f"({e.mu:.1f} ± {e.sigma:.1f}, {e.hands} hands)")
    if not board.entries:
        lines.append("  nobody rated yet")
    return lines
