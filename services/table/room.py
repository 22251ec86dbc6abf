"""A room as a fold of its log records: seats, ready state, hands, entrust, dismiss votes.

``Room.apply(record, fx)`` is the only way a room changes, live and when a restarted table
replays the log; it is deterministic (no clock, no randomness: the seed of a hand and every
timeout's action are in the records). Rule decisions stay in the engines; this module only
sequences them and turns their events into frames (``Effects``) for the runtime to publish.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import import_module
from typing import Any

from games.arbitration import Decision
from games.engine import Action, State
from paiju import frames
from paiju.v1 import client_pb2, common_pb2
from paiju.v1 import lobby_msgs_pb2 as lm
from services.common.geo import band, describe, has_position, haversine_m
from services.table.codec import GAME_ENUMS, MAHJONG, event_frame

SEATS = 4
VARIANT_MODULES = {"xuezhan": "games.mahjong.xuezhan", "changsha": "games.mahjong.changsha",
                   "dadun": "games.dadun.game"}
TIMER_KEYS = ("turn_seconds", "window_seconds", "alone_seconds")
# Room options the table keeps for itself (never passed to the engine).
ROOM_OPTION_KEYS = (*TIMER_KEYS, "entrust_cancels")
# A game's own names for the table's timers (Dadun's play and alone countdowns): a room that
# sets them gets them as its real timers, and the engine's countdowns show the real timer.
GAME_TIMER_KEYS = {"dadun": {"turn_seconds": "play_timeout_s", "alone_seconds": "alone_timeout_s"}}
# engine phases in which every listed seat answers at once (XueZhan 换三张 and 定缺, Changsha
# 起手胡): one answer does not start a new decision for the seats still pending. Dadun asks
# one seat at a time in every phase; a mahjong response window is answered without engine
# steps (record_response), so it keeps one timer too.
SIMULTANEOUS = frozenset({"exchange", "void", "opening"})


def variant(game: str) -> Any:
    return import_module(VARIANT_MODULES[game])


def password_hash(room_id: int, password: str) -> str:
    return "" if not password else hashlib.sha256(f"{room_id}:{password}".encode()).hexdigest()


@dataclass
class Seat:
    user_id: int
    profile: dict[str, Any]
    cancels_left: int
    ready: bool = False
    online: bool = True
    entrusted: bool = False
    entrust_offline: bool = False  # entrusted because the connection went away
    total: int = 0
    session: str = ""              # the lobby session that last came online here ("" unknown)
    session_at: float = 0.0        # its login time (wall clock), orders sessions of one user

    @property
    def nickname(self) -> str:
        return str(self.profile.get("nickname") or f"player{self.user_id}")


@dataclass
class Effects:
    """What one record caused, for the runtime to send (in this order)."""

    public: list[client_pb2.ServerFrame] = field(default_factory=list)
    private: list[tuple[int, client_pb2.ServerFrame]] = field(default_factory=list)
    lobby: list[client_pb2.ServerFrame] = field(default_factory=list)
    settle: list[dict[str, Any]] = field(default_factory=list)
    seats: dict[int, int | None] = field(default_factory=dict)
    changed: bool = False
    closed: bool = False


@dataclass
class Dismiss:
    applicant: int
    votes: dict[int, bool]


class RoomError(Exception):
    """A command the room refuses: ``code`` is an ErrorCode."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


class Room:
    def __init__(self, record: Mapping[str, Any]) -> None:
        self.room_id = int(record["room_id"])
        self.game = str(record["game"])
        self.options: dict[str, Any] = dict(record.get("options") or {})
        self.room_options = {k: self.options.pop(k) for k in ROOM_OPTION_KEYS if k in self.options}
        aliases = GAME_TIMER_KEYS.get(self.game, {})
        for key, name in aliases.items():
            if key not in self.room_options and name in self.options:
                self.room_options[key] = self.options[name]
        # the table's timers when the room was created: a later config change or another
        # table adopting the room does not change the rules of a room in play
        self.timer_defaults = {k: float(v) for k, v in (record.get("timers") or {}).items()}
        self.base_score = int(record.get("base_score") or 1)
        self.total_hands = int(record.get("total_hands") or 4)
        self.min_hands = int(record.get("min_hands") or 0)
        self.password = str(record.get("password_hash") or "")
        self.entrust_cancels = int(self.room_options.get("entrust_cancels",
                                                         record.get("entrust_cancels", 3)))
        self.play_desc = str(record.get("play_desc") or self.game)
        self.seats: list[Seat | None] = [None] * SEATS
        # the position each user first sat down with in this room: it stays his for the
        # room's life, even after leaving and joining again (probing from made-up places)
        self.positions: dict[int, tuple[float, float]] = {}
        self.status = common_pb2.ROOM_WAITING
        self.hand_no = 0
        self.dealer = int(record.get("first_dealer", 0))
        self.seed = 0
        self.state: State | None = None
        self.decision = 0              # bumps on every engine step except a window answer
        self.phase_decision = 0        # the decision at which the current phase began
        self.event_index = 0
        self.hand_events: list[dict[str, Any]] = []
        self.history: list[list[int]] = []
        self.dismiss: Dismiss | None = None
        self.dismiss_until = 0.0       # wall-clock end of the open vote (from its record)
        self.closed = False
        self.settled: list[dict[str, Any]] = []   # settlement messages, for re-publishing
        self.engine_options = {**self.options, "base": self.base_score}
        for key, name in aliases.items():  # countdowns shown = the timers that run
            seconds = self.room_options.get(key, self.timer_defaults.get(key))
            if isinstance(seconds, int | float) and not isinstance(seconds, bool):
                self.engine_options[name] = max(1, math.ceil(seconds))

    # ------------------------------------------------------------------ views
    def seat_of(self, user_id: int) -> int | None:
        for i, s in enumerate(self.seats):
            if s is not None and s.user_id == user_id:
                return i
        return None

    def seated(self) -> list[tuple[int, Seat]]:
        return [(i, s) for i, s in enumerate(self.seats) if s is not None]

    def free_seats(self) -> int:
        return sum(1 for s in self.seats if s is None)

    def in_hand(self) -> bool:
        return self.state is not None and not self.state.is_over()

    def player_info(self, seat: int, for_user: int | None = None) -> common_pb2.PlayerInfo:
        s = self.seats[seat]
        assert s is not None
        p = s.profile
        return common_pb2.PlayerInfo(
            user_id=s.user_id, online=s.online, ready=s.ready,
            coins=int(p.get("coins", 0)) + s.total, seat=seat, nickname=s.nickname,
            head_url=str(p.get("head_url", "")), sex=int(p.get("sex", 0)),
            total_score=s.total, login_address=str(p.get("login_address", "")),
            entrusted=s.entrusted, ip=str(p.get("ip", "")) if for_user == s.user_id else "")

    def room_info(self, for_user: int | None = None) -> common_pb2.RoomInfo:
        return common_pb2.RoomInfo(
            room_id=self.room_id, status=self.status, cur_hand=self.hand_no,
            total_hands=self.total_hands, base_score=self.base_score, play_desc=self.play_desc,
            players=[self.player_info(i, for_user) for i, _ in self.seated()],
            min_hands=self.min_hands, has_password=bool(self.password),
            game=GAME_ENUMS[self.game],
            options_json=json.dumps({**self.options, **self.room_options}, sort_keys=True))

    def to_act(self) -> tuple[int, ...]:
        return self.state.to_act() if self.in_hand() else ()

    def phase(self) -> str:
        return self.state.phase() if self.state is not None else "waiting"

    def decision_seconds(self, defaults: Mapping[str, float]) -> float:
        """Timer length of the current decision: the room's option, else the table's timers
        when the room was created, else the table's current default."""
        key = {"window": "window_seconds", "alone": "alone_seconds"}.get(self.phase(), "turn_seconds")
        return float(self.room_options.get(key, self.timer_defaults.get(key, defaults[key])))

    def timer_key(self) -> int:
        """Which decision timer runs now: a new turn or a new phase starts a fresh one, but in
        a simultaneous phase one seat's answer keeps the others' deadline."""
        return self.phase_decision if self.phase() in SIMULTANEOUS else self.decision

    def session_is_current(self, seat: int, session: str, at: float) -> bool:
        """Whether a lobby session may speak for the seat's connection: no session named
        (older lobbies), no session recorded yet, the recorded one, or a later login."""
        s = self.seats[seat]
        assert s is not None
        return not session or not s.session or s.session == session or at > s.session_at

    def pending_window(self) -> Any:
        """The open response window (mahjong), or None."""
        pending = getattr(self.state, "pending_window", None)
        return pending() if pending is not None and self.in_hand() else None

    def arbitration_rules(self) -> Any:
        """The response-window rules of the running mahjong hand (multi-win, gang vs peng)."""
        assert self.state is not None
        return self.state.rules.arbitration(self.state.options)  # type: ignore[attr-defined]

    def is_response(self, seat: int) -> bool:
        window = self.pending_window()
        return window is not None and seat in window.candidates

    # ------------------------------------------------------------------ checks (no mutation)
    def check_join(self, user_id: int, password: str) -> int:
        """The seat a join takes (the current one for a rejoin); RoomError if refused."""
        if self.closed:
            raise RoomError(common_pb2.ERR_NO_SUCH_ROOM, f"room {self.room_id} is closed")
        seat = self.seat_of(user_id)
        if seat is not None:
            return seat
        if self.password and password_hash(self.room_id, password) != self.password:
            raise RoomError(common_pb2.ERR_BAD_PASSWORD, "wrong room password")
        if self.status not in (common_pb2.ROOM_WAITING, common_pb2.ROOM_HAND_OVER):
            raise RoomError(common_pb2.ERR_HAND_IN_PROGRESS, "the room is playing a hand")
        for i, s in enumerate(self.seats):
            if s is None:
                return i
        raise RoomError(common_pb2.ERR_ROOM_FULL, f"room {self.room_id} is full")

    def require_seat(self, user_id: int) -> int:
        seat = self.seat_of(user_id)
        if seat is None:
            raise RoomError(common_pb2.ERR_NOT_IN_ROOM, f"you are not in room {self.room_id}")
        return seat

    def can_start(self) -> bool:
        return (not self.closed and self.dismiss is None and not self.in_hand()
                and self.hand_no < self.total_hands
                and all(s is not None and s.ready for s in self.seats))

    # ------------------------------------------------------------------ the fold
    def apply(self, rec: Mapping[str, Any], fx: Effects) -> None:
        handler = getattr(self, f"_on_{rec['t']}", None)
        if handler is None:
            raise ValueError(f"unknown room log record type {rec['t']!r}")
        handler(rec, fx)

    def _on_create(self, rec: Mapping[str, Any], fx: Effects) -> None:
        fx.changed = True
        fx.lobby.append(self._room_change(lm.RoomChange.CREATED))

    def _on_owner(self, rec: Mapping[str, Any], fx: Effects) -> None:
        """A table took the room over (adoption, restart, hand-over): nothing changes."""

    def _on_join(self, rec: Mapping[str, Any], fx: Effects) -> None:
        seat, uid = int(rec["seat"]), int(rec["user_id"])
        existing = self.seats[seat]
        if existing is not None and existing.user_id == uid:
            profile = dict(rec.get("profile") or {})
            if has_position(float(existing.profile.get("lat", 0)),
                            float(existing.profile.get("lng", 0))):
                profile.pop("lat", None)  # the position of the first join stays: re-joining
                profile.pop("lng", None)  # from made-up places must not locate the others
            existing.profile.update(profile)
            existing.online = True
        else:
            profile = dict(rec.get("profile") or {})
            lat, lng = float(profile.get("lat", 0)), float(profile.get("lng", 0))
            if has_position(lat, lng):
                self.positions.setdefault(uid, (lat, lng))
            self.seats[seat] = Seat(uid, profile, self.entrust_cancels)
            self._player_change(lm.PlayerChange.JOIN, seat, fx)
            self._proximity_alert(seat, fx)
        self._set_session(seat, rec)
        fx.seats[uid] = seat
        fx.changed = True
        fx.lobby.append(self._room_change(lm.RoomChange.UPDATED))

    def _on_leave(self, rec: Mapping[str, Any], fx: Effects) -> None:
        seat = int(rec["seat"])
        s = self.seats[seat]
        assert s is not None
        self._player_change(lm.PlayerChange.LEAVE, seat, fx)
        self.seats[seat] = None
        fx.seats[s.user_id] = None
        fx.changed = True
        fx.lobby.append(self._room_change(lm.RoomChange.UPDATED))

    def _on_ready(self, rec: Mapping[str, Any], fx: Effects) -> None:
        seat, ready = int(rec["seat"]), bool(rec["ready"])
        s = self.seats[seat]
        assert s is not None
        s.ready = ready
        self._player_change(lm.PlayerChange.READY if ready else lm.PlayerChange.UNREADY, seat, fx)

    def _on_online(self, rec: Mapping[str, Any], fx: Effects) -> None:
        seat = int(rec["seat"])
        s = self.seats[seat]
        assert s is not None
        self._set_session(seat, rec)
        if s.online:  # only a new session of a seat that never looked offline
            return
        s.online = True
        if s.entrusted and s.entrust_offline:
            s.entrusted = s.entrust_offline = False
            fx.public.append(frames.server_frame(lm.CancelEntrustDone(seat=seat)))
        self._player_change(lm.PlayerChange.ONLINE, seat, fx)

    def _set_session(self, seat: int, rec: Mapping[str, Any]) -> None:
        """Record the session a join or online came from; a record without one (an older
        lobby, an older log) leaves the seat with no known session: any offline counts."""
        s = self.seats[seat]
        assert s is not None
        session, at = str(rec.get("session") or ""), float(rec.get("at") or 0.0)
        if not session:
            s.session, s.session_at = "", 0.0
        elif self.session_is_current(seat, session, at):
            s.session, s.session_at = session, max(at, s.session_at)

    def _on_offline(self, rec: Mapping[str, Any], fx: Effects) -> None:
        seat = int(rec["seat"])
        s = self.seats[seat]
        assert s is not None
        s.online = False
        self._player_change(lm.PlayerChange.OFFLINE, seat, fx)
        if self.in_hand() and not s.entrusted:
            s.entrusted = s.entrust_offline = True
            fx.public.append(frames.server_frame(lm.InEntrust(seat=seat, count=s.cancels_left)))

    def _on_entrust(self, rec: Mapping[str, Any], fx: Effects) -> None:
        seat = int(rec["seat"])
        s = self.seats[seat]
        assert s is not None
        if not s.entrusted:
            s.entrusted = True
            s.entrust_offline = rec.get("reason") == "offline"
            fx.public.append(frames.server_frame(lm.InEntrust(seat=seat, count=s.cancels_left)))

    def _on_cancel_entrust(self, rec: Mapping[str, Any], fx: Effects) -> None:
        seat = int(rec["seat"])
        s = self.seats[seat]
        assert s is not None
        s.entrusted = s.entrust_offline = False
        s.cancels_left -= 1
        fx.public.append(frames.server_frame(lm.CancelEntrustDone(seat=seat)))

    def _on_start(self, rec: Mapping[str, Any], fx: Effects) -> None:
        self.hand_no = int(rec["hand_no"])
        self.seed = int(rec["seed"])
        self.dealer = int(rec["dealer"])
        self.state = variant(self.game).new_hand(self.engine_options, self.seed, self.dealer)
        self.status = self._current_status()
        self.hand_events = []
        self.event_index = 0
        self.decision += 1
        self.phase_decision = self.decision
        for _, s in self.seated():
            s.ready = False
        fx.lobby.append(self._room_change(lm.RoomChange.STARTED))
        fx.changed = True
        self._emit(self.state.deal_events(), fx)  # type: ignore[attr-defined]

    def _on_act(self, rec: Mapping[str, Any], fx: Effects) -> None:
        assert self.state is not None
        seat, action = int(rec["seat"]), Action.from_dict(rec["action"])
        if rec.get("response"):
            events = self.state.record_response(seat, action)  # type: ignore[attr-defined]
        else:
            phase = self.phase()
            events = self.state.apply(seat, action)
            self._stepped(phase)
        self._emit(events, fx)
        self._after_step(fx)

    def _on_resolve(self, rec: Mapping[str, Any], fx: Effects) -> None:
        assert self.state is not None
        phase = self.phase()
        events = self.state.resolve_window(Decision.from_dict(rec["decision"]))  # type: ignore[attr-defined]
        self._stepped(phase)
        self._emit(events, fx)
        self._after_step(fx)

    def _on_dismiss_apply(self, rec: Mapping[str, Any], fx: Effects) -> None:
        seat = int(rec["seat"])
        self.dismiss = Dismiss(seat, {seat: True})
        self.dismiss_until = float(rec.get("until", 0.0))
        self.status = common_pb2.ROOM_DISMISSING
        fx.public.append(self._query_dismiss(int(rec.get("seconds", 0))))

    def _on_dismiss_vote(self, rec: Mapping[str, Any], fx: Effects) -> None:
        assert self.dismiss is not None
        self.dismiss.votes[int(rec["seat"])] = bool(rec["agree"])
        fx.public.append(self._query_dismiss(int(rec.get("seconds", 0))))

    def _on_dismiss_result(self, rec: Mapping[str, Any], fx: Effects) -> None:
        agreed = bool(rec["agreed"])
        assert self.dismiss is not None
        self.dismiss = None
        self.status = self._current_status()
        if agreed:
            self._close(lm.NoticeDismiss.PLAYER_VOTE, "the players voted to dismiss the room", fx)
        else:
            fx.public.append(frames.server_frame(lm.NoticeDismiss(
                dismissed=False, reason=lm.NoticeDismiss.PLAYER_VOTE,
                doc="the dismiss request was refused", room_id=self.room_id)))

    def _on_close(self, rec: Mapping[str, Any], fx: Effects) -> None:
        reason = int(rec["reason"])
        self._close(reason, str(rec.get("doc", "")), fx)

    # ------------------------------------------------------------------ helpers
    def _stepped(self, phase_before: str) -> None:
        self.decision += 1
        if self.phase() != phase_before:
            self.phase_decision = self.decision

    def dismiss_outcome(self, timed_out: bool = False) -> bool | None:
        """True: dismissed (a strict majority agrees; at the countdown's end silent players
        count as agreeing); False: refused (a majority can no longer be reached); None: open."""
        assert self.dismiss is not None
        n = len(self.seated())
        need = n // 2 + 1
        votes = self.dismiss.votes
        agree = sum(1 for v in votes.values() if v)
        refuse = sum(1 for v in votes.values() if not v)
        if timed_out:
            agree += n - len(votes)
        if agree >= need:
            return True
        if n - refuse < need or timed_out:
            return False
        return None

    def _current_status(self) -> int:
        if self.closed:
            return common_pb2.ROOM_FINISHED
        if self.in_hand():
            assert self.state is not None
            return (common_pb2.ROOM_CHOOSING_ALONE if self.state.phase() == "alone"
                    else common_pb2.ROOM_PLAYING)
        return common_pb2.ROOM_HAND_OVER if self.hand_no else common_pb2.ROOM_WAITING

    def _query_dismiss(self, seconds: int) -> client_pb2.ServerFrame:
        assert self.dismiss is not None
        applicant = self.seats[self.dismiss.applicant]
        votes = []
        for i, s in self.seated():
            v = self.dismiss.votes.get(i)
            votes.append(lm.PlayerVote(user_id=s.user_id, nickname=s.nickname,
                                       vote=0 if v is None else (1 if v else 2)))
        return frames.server_frame(lm.QueryDismiss(
            apply_user_id=applicant.user_id if applicant else 0,
            apply_nickname=applicant.nickname if applicant else "", votes=votes,
            remaining_seconds=seconds))

    def _emit(self, events: list[Any], fx: Effects) -> None:
        ctx = {"room_id": self.room_id, "hand_no": self.hand_no, "total_hands": self.total_hands,
               "base_score": self.base_score,
               "user_ids": [s.user_id if s else 0 for s in self.seats],
               "nicknames": [s.nickname if s else "" for s in self.seats]}
        for event in events:
            uid = f"{self.room_id}:{self.hand_no}:{self.event_index}"
            frame = event_frame(self.game, event, uid, ctx)
            self.hand_events.append({
                "i": self.event_index, "kind": event.kind, "to": event.to,
                "event_id": frame.event_id,
                "frame": base64.b64encode(frame.SerializeToString()).decode(),
                "json": json.dumps(event.to_dict(), ensure_ascii=False, sort_keys=True)})
            self.event_index += 1
            if event.to is None:
                fx.public.append(frame)
            else:
                s = self.seats[event.to]
                if s is not None:
                    fx.private.append((s.user_id, frame))

    def _after_step(self, fx: Effects) -> None:
        assert self.state is not None
        if self.dismiss is None:
            self.status = self._current_status()
        if self.state.is_over():
            self._end_hand(fx)

    def _end_hand(self, fx: Effects) -> None:
        assert self.state is not None
        result = self.state.settlement()
        deltas = list(result.deltas)
        for i, s in self.seated():
            s.total += deltas[i]
            # entrust lasts until the end of the deal; an absent player is entrusted again
            # as soon as the next hand needs him (offline)
            if s.entrusted and s.online:
                s.entrusted = s.entrust_offline = False
        self.history.append(deltas)
        hand_dealer = self.dealer
        self.dealer = result.next_dealer
        if self.dismiss is None:
            self.status = common_pb2.ROOM_HAND_OVER
        msg = {
            "room_id": self.room_id, "hand_no": self.hand_no, "final": False,
            "game": self.game, "base_score": self.base_score,
            "seats": [s.user_id if s else 0 for s in self.seats],
            "nicknames": [s.nickname if s else "" for s in self.seats],
            "deltas": deltas, "payments": [p.to_dict() for p in result.payments],
            "details": json.loads(json.dumps(dict(result.details), default=str)),
            "seed": self.seed, "dealer": hand_dealer, "next_dealer": self.dealer,
            "events": self.hand_events,
        }
        fx.settle.append(msg)
        self.settled.append(msg)
        fx.changed = True
        fx.lobby.append(self._room_change(lm.RoomChange.UPDATED))
        broke = [s for _, s in self.seated() if int(s.profile.get("coins", 0)) + s.total < 0]
        if self.hand_no >= self.total_hands:
            self._close(lm.NoticeDismiss.ALL_HANDS_PLAYED, "all hands have been played", fx)
        elif broke:
            self._close(lm.NoticeDismiss.NEGATIVE_COINS,
                        f"{broke[0].nickname} has run out of coins", fx)

    def _close(self, reason: int, doc: str, fx: Effects) -> None:
        if self.closed:
            return
        self.closed = True
        self.status = common_pb2.ROOM_FINISHED
        fx.public.append(frames.server_frame(lm.NoticeDismiss(
            dismissed=True, reason=reason, doc=doc, room_id=self.room_id)))
        if self.hand_no > 0:
            final = {
                "room_id": self.room_id, "hand_no": 0, "final": True, "game": self.game,
                "base_score": self.base_score,
                "seats": [s.user_id if s else 0 for s in self.seats],
                "nicknames": [s.nickname if s else "" for s in self.seats],
                "totals": [s.total if s else 0 for s in self.seats],
                "hands_played": len(self.history), "reason": int(reason), "doc": doc,
            }
            fx.settle.append(final)
            self.settled.append(final)
        for _, s in self.seated():
            fx.seats[s.user_id] = None
        fx.lobby.append(self._room_change(lm.RoomChange.DISMISSED))
        fx.changed = True
        fx.closed = True

    def _player_change(self, reason: int, seat: int, fx: Effects) -> None:
        s = self.seats[seat]
        assert s is not None
        fx.public.append(frames.server_frame(lm.PlayerChange(
            reason=reason, seat=seat, user_id=s.user_id,
            players=[self.player_info(i) for i, _ in self.seated()])))

    def _room_change(self, reason: int) -> client_pb2.ServerFrame:
        return frames.server_frame(lm.RoomChange(reason=reason, room=self.room_info()))

    def geo(self) -> lm.UseGeo:
        items = []
        seated = self.seated()
        for a in range(len(seated)):
            for b in range(a + 1, len(seated)):
                items.append(self._geo_item(seated[a][1], seated[b][1])[0])
        return lm.UseGeo(uids=[s.user_id for _, s in seated], items=items)

    @staticmethod
    def _geo_item(x: Seat, y: Seat) -> tuple[lm.GeoItem, float]:
        """What players see of a pair (a distance band, never exact meters) and the exact
        distance for the alert (-1 when a position is missing)."""
        px, py = x.profile, y.profile
        same_ip = bool(px.get("ip")) and px.get("ip") == py.get("ip")
        lat1, lng1 = float(px.get("lat", 0)), float(px.get("lng", 0))
        lat2, lng2 = float(py.get("lat", 0)), float(py.get("lng", 0))
        if has_position(lat1, lng1) and has_position(lat2, lng2):
            meters = haversine_m(lat1, lng1, lat2, lng2)
            low, label = band(meters)
            return lm.GeoItem(src_uid=x.user_id, dest_uid=y.user_id, distance=label,
                              gap=low, same_ip=same_ip), meters
        return lm.GeoItem(src_uid=x.user_id, dest_uid=y.user_id, distance="unknown", gap=-1,
                          same_ip=same_ip), -1.0

    def _proximity_alert(self, seat: int, fx: Effects) -> None:
        limit = float(self.room_options.get("geo_alert_meters", self.geo_alert_meters))
        new = self.seats[seat]
        assert new is not None
        for i, other in self.seated():
            if i == seat:
                continue
            item, meters = self._geo_item(new, other)
            why = []
            if item.same_ip:
                why.append("share an IP address")
            if 0 <= meters < limit:
                why.append(f"sit less than {describe(limit)} apart")
            if why:
                fx.public.append(frames.server_frame(lm.DistanceAlert(
                    alert=f"{new.nickname} and {other.nickname} " + " and ".join(why),
                    user_ids=[new.user_id, other.user_id])))

    geo_alert_meters = 100.0

    # ------------------------------------------------------------------ snapshots
    def observation(self, seat: int) -> dict[str, Any] | None:
        return self.state.observation(seat) if self.state is not None else None

    def prompt(self, seat: int, seconds: float) -> client_pb2.ServerFrame:
        from paiju.v1 import game_msgs_pb2 as g

        assert self.state is not None
        actions = [g.ActionSpec(kind=a.kind, tiles=list(a.tiles), ref=a.ref, choice=a.choice)
                   for a in self.state.legal_actions(seat)]
        return frames.server_frame(g.Prompt(
            game=self.game, phase=self.state.phase(), actions=actions,
            observation_json=json.dumps(self.state.observation(seat), ensure_ascii=False),
            seconds=int(seconds), seat=seat, hand_no=self.hand_no, room_id=self.room_id))

    def snapshot(self, seat: int, seconds_left: float) -> list[client_pb2.ServerFrame]:
        """Frames a reconnecting player gets: the room, the hand as it sees it, its prompt."""
        from paiju.v1 import game_msgs_pb2 as g

        s = self.seats[seat]
        assert s is not None
        out = [frames.server_frame(lm.RoomJoined(room=self.room_info(s.user_id), seat=seat))]
        if self.state is None:
            return out
        obs = self.state.observation(seat)
        entrusted = [bool(x and x.entrusted) for x in self.seats]
        if self.game in MAHJONG:
            out.append(frames.server_frame(g.MjGameInfo(
                observation_json=json.dumps(obs, ensure_ascii=False),
                to_act_seconds=int(seconds_left), entrusted=entrusted,
                cancel_entrust_count=s.cancels_left)))
        else:
            out.append(frames.server_frame(self._dd_game_info(obs, seat, seconds_left, entrusted)))
        if self.in_hand() and seat in self.to_act():
            out.append(self.prompt(seat, seconds_left))
        return out

    def _dd_game_info(self, obs: Mapping[str, Any], seat: int, seconds: float,
                      entrusted: list[bool]) -> Any:
        from paiju.v1 import game_msgs_pb2 as g

        def ints(key: str) -> list[int]:
            return [int(x or 0) for x in obs.get(key) or ()]

        banker = obs.get("banker")
        banker_seat = self.seats[banker] if isinstance(banker, int) else None
        s = self.seats[seat]
        assert s is not None
        all_hands = obs.get("all_hands") or []
        return g.DdGameInfo(
            is_alone=bool(obs.get("is_alone")), friend_card=str(obs.get("friend_card") or ""),
            friend_show=bool(obs.get("friend_public")), friend_ship=ints("friendship"),
            banker_user_id=banker_seat.user_id if banker_seat else 0,
            banker_seat=banker if isinstance(banker, int) else -1,
            desktop_score=int(obs.get("desk_points") or 0),
            hand=str(obs.get("hand") or "").split(), catch_score=ints("catch"),
            bomb_score=ints("bomb_score"), can_out=seat in tuple(obs.get("to_act") or ()),
            must_out=bool(obs.get("must_play")), out_token=str(obs.get("token") or ""),
            cur_out_seat=(list(obs.get("to_act") or [-1]) or [-1])[0],
            is_choice_alone=obs.get("phase") == "alone",
            choice_seat=obs.get("asking_seat") if isinstance(obs.get("asking_seat"), int) else -1,
            over_order=ints("over_order"),
            rest_num=[-1 if x is None else int(x) for x in obs.get("hand_counts") or ()],
            bomb_odds=ints("bomb_odds"), remain_out_time=int(seconds),
            remain_alone_time=int(seconds) if obs.get("phase") == "alone" else 0,
            is_entrust=entrusted, cancel_entrust_count=s.cancels_left,
            all_hands=[g.DdHandCards(cards=str(h).split()) for h in all_hands])
