"""A room as a fold of its log records: seats, ready state, hands, entrust, dismiss votes.

``Room.apply(record)`` is the only way a room changes, live and when a restarted table
replays the log; it is deterministic (no clock, no randomness: the seed of a hand and every
timeout's action are in the records). Rule decisions stay in the engines; this module only
sequences them. What a record caused comes back as facts (:data:`Fact`); turning facts and
state into frames is :mod:`services.table.views`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from games.arbitration import Rules, Window
from games.engine import Event, State
from games.registry import TIMERS
from paiju.v1 import common_pb2
from paiju.v1 import lobby_msgs_pb2 as lm
from services.common.geo import has_position
from services.table import facts as ft
from services.table import logrec as lr
from services.table import variants
from services.table.fairdeal import FairDeals
from services.table.seat import Seat

# Room options the table keeps for itself (never passed to the engine).
ROOM_OPTION_KEYS = (*TIMERS, "entrust_cancels")


@dataclass(frozen=True, slots=True)
class RoomSettings:
    """The table's configuration a room needs (passed in, never set from outside)."""

    geo_alert_meters: float = 100.0   # proximity alert below this distance


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
    """One room's state; built from its ``create`` record, changed only by :meth:`apply`."""

    def __init__(self, create: lr.Create, settings: RoomSettings | None = None) -> None:
        self.settings = settings or RoomSettings()
        self.room_id = create.room_id
        self.game = create.game
        self.spec = variants.get(self.game).spec
        self.options: dict[str, Any] = dict(create.options)
        self.room_options = {k: self.options.pop(k) for k in ROOM_OPTION_KEYS if k in self.options}
        aliases = self.spec.option_timers
        for key, name in aliases.items():
            if key not in self.room_options and name in self.options:
                self.room_options[key] = self.options[name]
        # the table's timers when the room was created: a later config change or another
        # table adopting the room does not change the rules of a room in play
        self.timer_defaults = {k: float(v) for k, v in create.timers.items()}
        self.base_score = create.base_score or 1
        self.total_hands = create.total_hands or 4
        self.min_hands = create.min_hands
        self.creator_id = create.creator_id   # who may add robots (0: nobody)
        # watchers (观战) as the room's commands count them: not in the log (a rebuilt room
        # counts again as the lobbies' watchers come back)
        self.spectators = 0
        self.password = create.password_hash
        self.entrust_cancels = int(self.room_options.get("entrust_cancels", create.entrust_cancels))
        self.play_desc = create.play_desc or self.game
        self.seats: list[Seat | None] = [None] * self.spec.seats
        # the position each user first sat down with in this room: it stays his for the
        # room's life, even after leaving and joining again (probing from made-up places)
        self.positions: dict[int, tuple[float, float]] = {}
        self.status: common_pb2.RoomStatus = common_pb2.ROOM_WAITING
        self.hand_no = 0
        self.dealer = 0
        self.seed = b""
        self.fair = FairDeals(self.spec.seats)
        self.state: State | None = None
        self.decision = 0              # bumps on every engine step except a window answer
        self.phase_decision = 0        # the decision at which the current phase began
        self.hand_events: list[ft.HandEvent] = []
        self.history: list[list[int]] = []
        self.dismiss: Dismiss | None = None
        self.dismiss_until = 0.0       # wall-clock end of the open vote (from its record)
        self.closed = False
        self.engine_options = {**self.options, "base": self.base_score}
        for key, name in aliases.items():  # countdowns shown = the timers that run
            seconds = self.room_options.get(key, self.timer_defaults.get(key))
            if isinstance(seconds, int | float) and not isinstance(seconds, bool):
                self.engine_options[name] = max(1, math.ceil(seconds))

    # ------------------------------------------------------------------ queries
    def seat_of(self, user_id: int) -> int | None:
        for i, s in enumerate(self.seats):
            if s is not None and s.user_id == user_id:
                return i
        return None

    def seated(self) -> list[tuple[int, Seat]]:
        return [(i, s) for i, s in enumerate(self.seats) if s is not None]

    def free_seats(self) -> int:
        return sum(1 for s in self.seats if s is None)

    def players(self) -> list[tuple[int, Seat]]:
        """The seats of people (not robots)."""
        return [(i, s) for i, s in self.seated() if not s.robot]

    def in_hand(self) -> bool:
        return self.state is not None and not self.state.is_over()

    def to_act(self) -> tuple[int, ...]:
        return self.state.to_act() if self.state is not None and self.in_hand() else ()

    def phase(self) -> str:
        return self.state.phase() if self.state is not None else "waiting"

    def decision_seconds(self, defaults: Mapping[str, float]) -> float:
        """Timer length of the current decision: the room's option, else the table's timers
        when the room was created, else the table's current default."""
        key = self.spec.timer_of(self.phase())
        return float(self.room_options.get(key, self.timer_defaults.get(key, defaults[key])))

    def simultaneous(self) -> bool:
        """Whether every listed seat answers the current phase at once (XueZhan 换三张 and
        定缺, Changsha 起手胡): one answer does not start a new decision for the others."""
        return self.phase() in self.spec.simultaneous

    def timer_key(self) -> int:
        """Which decision timer runs now: a new turn or a new phase starts a fresh one, but in
        a simultaneous phase one seat's answer keeps the others' deadline."""
        return self.phase_decision if self.simultaneous() else self.decision

    def session_is_current(self, seat: int, session: str, at: float) -> bool:
        """Whether a lobby session may speak for the seat's connection: no session named
        (a tool or a test kit: lobbies always name theirs), no session recorded yet, the
        recorded one, or a later login."""
        s = self.seats[seat]
        assert s is not None
        return not session or not s.session or s.session == session or at > s.session_at

    def pending_window(self) -> Window | None:
        """The open response window (mahjong), or None."""
        return self.state.pending_window() if self.state is not None and self.in_hand() else None

    def arbitration_rules(self) -> Rules | None:
        """The response-window rules of the running hand (multi-win, gang vs peng)."""
        return self.state.arbitration_rules() if self.state is not None else None

    def is_response(self, seat: int) -> bool:
        window = self.pending_window()
        return window is not None and seat in window.candidates

    def hand_context(self) -> ft.HandContext:
        return ft.HandContext(self.room_id, self.hand_no, self.total_hands, self.base_score,
                              tuple(s.user_id if s else 0 for s in self.seats),
                              tuple(s.nickname if s else "" for s in self.seats))

    # ------------------------------------------------------------------ the fold
    def apply(self, rec: lr.Record) -> list[ft.Fact]:
        """Fold one record; what it caused, in order."""
        out: list[ft.Fact] = []
        _FOLD[type(rec)](self, rec, out)
        return out

    def _create(self, rec: lr.Create, out: list[ft.Fact]) -> None:
        out.append(ft.Changed())

    def _owner(self, rec: lr.Owner, out: list[ft.Fact]) -> None:
        """A table took the room over (adoption, restart, hand-over): nothing changes."""

    def _join(self, rec: lr.Join, out: list[ft.Fact]) -> None:
        seat, uid, profile = rec.seat, rec.user_id, rec.profile
        existing = self.seats[seat]
        if existing is not None and existing.user_id == uid:
            if has_position(existing.lat, existing.lng):
                # the position of the first join stays: re-joining from made-up places
                # must not locate the others
                profile = dataclasses.replace(profile, lat=existing.lat, lng=existing.lng)
            existing.profile = profile
            existing.online = True
        else:
            if has_position(profile.lat, profile.lng):
                self.positions.setdefault(uid, (profile.lat, profile.lng))
            self.seats[seat] = Seat(uid, profile, self.entrust_cancels)
            if rec.robot:   # always ready, played by entrust for good
                self.seats[seat] = Seat(uid, profile, 0, ready=True, entrusted=True, robot=True)
            self._player_changed("join", seat, out)
            out.append(ft.SatDown(seat))
        self._set_session(seat, rec.session, rec.at)
        out += [ft.SeatMoved(uid, seat), ft.Changed()]

    def _leave(self, rec: lr.Leave, out: list[ft.Fact]) -> None:
        s = self.seats[rec.seat]
        assert s is not None
        self._player_changed("leave", rec.seat, out)
        self.seats[rec.seat] = None
        out += [ft.SeatMoved(s.user_id, None), ft.Changed()]

    def _ready(self, rec: lr.Ready, out: list[ft.Fact]) -> None:
        s = self.seats[rec.seat]
        assert s is not None
        s.ready = rec.ready
        self._player_changed("ready" if rec.ready else "unready", rec.seat, out)

    def _online(self, rec: lr.Online, out: list[ft.Fact]) -> None:
        s = self.seats[rec.seat]
        assert s is not None
        self._set_session(rec.seat, rec.session, rec.at)
        if s.online:  # only a new session of a seat that never looked offline
            return
        s.online = True
        if s.entrusted and s.entrust_offline:
            s.entrusted = s.entrust_offline = False
            out.append(ft.Entrusted(rec.seat, False, s.cancels_left))
        self._player_changed("online", rec.seat, out)

    def _set_session(self, seat: int, session: str, at: float) -> None:
        """Record the session a join or online came from; a record without one (a tool or
        a test kit) leaves the seat with no known session: any offline counts."""
        s = self.seats[seat]
        assert s is not None
        if not session:
            s.session, s.session_at = "", 0.0
        elif self.session_is_current(seat, session, at):
            s.session, s.session_at = session, max(at, s.session_at)

    def _offline(self, rec: lr.Offline, out: list[ft.Fact]) -> None:
        s = self.seats[rec.seat]
        assert s is not None
        s.online = False
        self._player_changed("offline", rec.seat, out)
        if self.in_hand() and not s.entrusted:
            s.entrusted = s.entrust_offline = True
            out.append(ft.Entrusted(rec.seat, True, s.cancels_left))

    def _entrust(self, rec: lr.Entrust, out: list[ft.Fact]) -> None:
        s = self.seats[rec.seat]
        assert s is not None
        if not s.entrusted:
            s.entrusted = True
            s.entrust_offline = rec.reason == "offline"
            out.append(ft.Entrusted(rec.seat, True, s.cancels_left))

    def _cancel_entrust(self, rec: lr.CancelEntrust, out: list[ft.Fact]) -> None:
        s = self.seats[rec.seat]
        assert s is not None
        s.entrusted = s.entrust_offline = False
        s.cancels_left -= 1
        out.append(ft.Entrusted(rec.seat, False, s.cancels_left))

    def _commit(self, rec: lr.Commit, out: list[ft.Fact]) -> None:
        self.fair.commit(rec)
        out.append(ft.Committed(rec.hand_no, rec.commitment))

    def _client_seed(self, rec: lr.ClientSeed, out: list[ft.Fact]) -> None:
        self.fair.client_seed(rec)

    def _start(self, rec: lr.Start, out: list[ft.Fact]) -> None:
        self.hand_no, self.seed, self.dealer = rec.hand_no, bytes.fromhex(rec.seed), rec.dealer
        self.fair.started(rec, self.room_id, self.game, self.engine_options)
        self.state = self.spec.new_hand(self.engine_options, self.seed, self.dealer)
        self.status = self._current_status()
        self.hand_events = []
        self.decision += 1
        self.phase_decision = self.decision
        for _, s in self.seated():
            s.ready = s.robot
        out.append(ft.Changed())
        self._events(self.state.deal_events(), out)

    def _act(self, rec: lr.Act, out: list[ft.Fact]) -> None:
        assert self.state is not None
        self.fair.acted(rec)
        if rec.response:
            events = self.state.record_response(rec.seat, rec.action)
        else:
            phase = self.phase()
            events = self.state.apply(rec.seat, rec.action)
            self._stepped(phase)
        self._events(events, out)
        self._after_step(out)

    def _resolve(self, rec: lr.Resolve, out: list[ft.Fact]) -> None:
        assert self.state is not None
        self.fair.acted(rec)
        phase = self.phase()
        events = self.state.resolve_window(rec.decision)
        self._stepped(phase)
        self._events(events, out)
        self._after_step(out)

    def _dismiss_apply(self, rec: lr.DismissApply, out: list[ft.Fact]) -> None:
        self.dismiss = Dismiss(rec.seat, {rec.seat: True})
        self.dismiss_until = rec.until
        self.status = common_pb2.ROOM_DISMISSING
        out.append(ft.DismissAsked(rec.seconds))

    def _dismiss_vote(self, rec: lr.DismissVote, out: list[ft.Fact]) -> None:
        assert self.dismiss is not None
        self.dismiss.votes[rec.seat] = rec.agree
        out.append(ft.DismissAsked(rec.seconds))

    def _dismiss_result(self, rec: lr.DismissResult, out: list[ft.Fact]) -> None:
        assert self.dismiss is not None
        self.dismiss = None
        self.status = self._current_status()
        if rec.agreed:
            self._close(lm.NoticeDismiss.PLAYER_VOTE, "the players voted to dismiss the room", out)
        else:
            out.append(ft.DismissRefused())

    def _close_rec(self, rec: lr.Close, out: list[ft.Fact]) -> None:
        self._close(rec.reason, rec.doc, out)

    # ------------------------------------------------------------------ helpers
    def _player_changed(self, change: str, seat: int, out: list[ft.Fact]) -> None:
        s = self.seats[seat]
        assert s is not None
        players = tuple((i, dataclasses.replace(x)) for i, x in self.seated())
        out.append(ft.PlayerChanged(change, seat, s.user_id, players))

    def _events(self, events: list[Event], out: list[ft.Fact]) -> None:
        ctx = self.hand_context()
        first = len(self.hand_events)
        batch = tuple(ft.HandEvent(first + k, e, ctx) for k, e in enumerate(events))
        self.hand_events.extend(batch)
        out.append(ft.EngineEvents(batch))

    def _stepped(self, phase_before: str) -> None:
        self.decision += 1
        if self.phase() != phase_before:
            self.phase_decision = self.decision

    def _current_status(self) -> common_pb2.RoomStatus:
        if self.closed:
            return common_pb2.ROOM_FINISHED
        if self.in_hand():
            return (common_pb2.ROOM_CHOOSING_ALONE if self.phase() == "alone"
                    else common_pb2.ROOM_PLAYING)
        return common_pb2.ROOM_HAND_OVER if self.hand_no else common_pb2.ROOM_WAITING

    def _after_step(self, out: list[ft.Fact]) -> None:
        assert self.state is not None
        if self.dismiss is None:
            self.status = self._current_status()
        if self.state.is_over():
            self._end_hand(out)

    def _end_hand(self, out: list[ft.Fact]) -> None:
        assert self.state is not None
        result = self.state.settlement()
        deltas = list(result.deltas)
        for i, s in self.seated():
            s.total += deltas[i]
            # entrust lasts until the end of the deal; an absent player is entrusted again
            # as soon as the next hand needs him (offline)
            if s.entrusted and s.online and not s.robot:
                s.entrusted = s.entrust_offline = False
        self.history.append(deltas)
        hand_dealer = self.dealer
        self.dealer = result.next_dealer
        if self.dismiss is None:
            self.status = common_pb2.ROOM_HAND_OVER
        ctx = self.hand_context()
        out += [ft.HandEnded(self.hand_no, self.seed, hand_dealer, self.dealer, tuple(deltas),
                             tuple(result.payments), result.details, ctx.user_ids,
                             ctx.nicknames, tuple(self.hand_events), self.fair.record()),
                ft.Changed()]
        broke = [s for _, s in self.seated() if s.profile.coins + s.total < 0]
        if self.hand_no >= self.total_hands:
            self._close(lm.NoticeDismiss.ALL_HANDS_PLAYED, "all hands have been played", out)
        elif broke:
            self._close(lm.NoticeDismiss.NEGATIVE_COINS, f"{broke[0].nickname} has run out of coins", out)

    def _close(self, reason: int, doc: str, out: list[ft.Fact]) -> None:
        if self.closed:
            return
        self.closed = True
        self.status = common_pb2.ROOM_FINISHED
        out.append(ft.Closed(reason, doc, tuple(s.total if s else 0 for s in self.seats),
                             len(self.history)))
        out += [ft.SeatMoved(s.user_id, None) for _, s in self.seated()]
        out.append(ft.Changed())


_FOLD: dict[type, Callable[[Room, Any, list[ft.Fact]], None]] = {
    lr.Create: Room._create, lr.Owner: Room._owner, lr.Join: Room._join, lr.Leave: Room._leave,
    lr.Ready: Room._ready, lr.Online: Room._online, lr.Offline: Room._offline,
    lr.Entrust: Room._entrust, lr.CancelEntrust: Room._cancel_entrust, lr.Start: Room._start,
    lr.Commit: Room._commit, lr.ClientSeed: Room._client_seed,
    lr.Act: Room._act, lr.Resolve: Room._resolve, lr.DismissApply: Room._dismiss_apply,
    lr.DismissVote: Room._dismiss_vote, lr.DismissResult: Room._dismiss_result,
    lr.Close: Room._close_rec}
