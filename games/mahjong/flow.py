"""The shared mahjong hand state machine (one flow for XueZhan and Changsha).

A variant module supplies a small ``rules`` object (the hooks of
:class:`games.mahjong.hooks.VariantRules`: which phases exist, which kongs and claims are
allowed, how a win is scored and paid); everything else - deal, turn order,
draws, response windows, kongs, the ledger, serialization, redaction - lives here and in
the ``flow_*`` role modules mixed into :class:`MahjongState`:

* :mod:`games.mahjong.flow_setup` - exchange three (换三张), void (定缺), opening wins (起手胡)
* :mod:`games.mahjong.flow_turn` - the player to act: self-draw win, kongs, discard
* :mod:`games.mahjong.flow_window` - response windows (claims, wins, 过水), haidi (海底)
* :mod:`games.mahjong.flow_view` - observation / public view / events redaction
* :mod:`games.mahjong.flow_records` - the records a hand keeps (window, turn context, kongs,
  pass blocks, opening wins, haidi, birds) and their JSON form

Concealed hands are 27 tile counts. Draws are automatic: the seat to act in "play" always
holds 3n+2 tiles. Every money movement is a :class:`~games.engine.Payment` in ``ledger``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

from games.engine import (
    Action,
    BadInput,
    Event,
    HandOver,
    NotYourTurn,
    Payment,
    RuleError,
    Settlement,
    StaleRef,
    Verified,
    deltas_from,
)
from games.fair import Seed, seed_from_json, seed_to_json, stream
from games.mahjong import tile_index, tile_name
from games.mahjong.flow_records import (
    Birds,
    HaidiOffer,
    Kong,
    OpeningWins,
    OpenWindow,
    PassBlock,
    TurnContext,
    optional_dict,
)
from games.mahjong.flow_setup import SetupMixin
from games.mahjong.flow_turn import TurnMixin
from games.mahjong.flow_view import ViewMixin
from games.mahjong.flow_window import WindowMixin
from games.mahjong.hooks import VariantRules
from games.mahjong.meld import Meld
from games.mahjong.wall import Wall, deal

SEATS = 4
R = TypeVar("R")
ACTION_KINDS = frozenset(
    {"exchange_three", "declare_void", "hu", "pass", "discard", "angang", "bugang", "zhigang",
     "peng", "chi", "kaigang", "buzhang", "haidi", "midway_hu"}
)
_TILE_NAMES = frozenset(tile_name(t) for t in range(27))
# Fields serialized as they are (JSON-ready already); the records of flow_records go
# through their to_dict / from_dict.
_PLAIN = (
    "seed", "dealer", "hands", "discards", "won_tiles", "drawn", "stage", "turn",
    "exchange_sel", "exchange_recv", "exchange_dir", "voids", "window_seq",
    "win_order", "wins", "pass_peng", "locked",
    "end_reason", "initial_hands", "extra",
)


class MahjongState(SetupMixin, TurnMixin, WindowMixin, ViewMixin, Verified):
    """One hand. Build with :meth:`start`; see the module doc for the parts."""

    num_seats = SEATS

    def __init__(self, rules: VariantRules, options: dict[str, Any]) -> None:
        self.rules = rules
        self.options = options
        self._out: list[Event] = []

    # ------------------------------------------------------------------ construction

    @classmethod
    def start(
        cls, rules: VariantRules, options: dict[str, Any], seed: Seed, dealer: int, wall: list[int]
    ) -> MahjongState:
        if isinstance(dealer, bool) or not isinstance(dealer, int) or not 0 <= dealer < SEATS:
            raise BadInput(f"dealer must be a seat 0..3, got {dealer!r}")
        s = cls(rules, options)
        s.seed, s.dealer = seed_to_json(seed), dealer  # a 32-byte seed is kept as hex
        s.wall = Wall(wall)
        dealt = deal(s.wall, dealer)
        s.hands = [[0] * 27 for _ in range(SEATS)]
        for seat, tiles in enumerate(dealt):
            for t in tiles:
                s.hands[seat][t] += 1
        s.initial_hands = [list(h) for h in s.hands]
        s.melds = [[] for _ in range(SEATS)]
        s.discards = [[] for _ in range(SEATS)]
        s.won_tiles = [[] for _ in range(SEATS)]
        s.drawn = [None] * SEATS
        s.drawn[dealer] = dealt[dealer][-1]
        s.turn = dealer
        s.exchange_sel = [None] * SEATS
        s.exchange_recv = [None] * SEATS
        s.exchange_dir = None
        s.voids = [None] * SEATS
        s.opening = None
        s.window = None
        s.window_seq = 0
        s.win_order = [0] * SEATS
        s.wins = []
        s.pass_block = [None] * SEATS
        s.pass_peng = [[] for _ in range(SEATS)]
        s.kongs = []
        s.ledger = []
        s.ctx = TurnContext([True] * SEATS)
        s.haidi = None
        s.locked = [False] * SEATS
        s.end_reason = None
        s.birds = None
        s.extra = {}
        s.rng = stream(seed, "dice")  # every die of the hand (docs/fairness.md)
        s.stage = "setup"
        s._enter_first_phase()
        s.ctx.start_stage = s.stage
        s._out = []
        return s

    def deal_events(self) -> list[Event]:
        """The events of the deal: public "deal" and each seat's private "hand"."""
        events = [Event("deal", {"dealer": self.dealer, "wall_remaining": 55})]
        for seat in range(SEATS):
            events.append(Event("hand", {"tiles": self.fmt(self.initial_hands[seat])}, to=seat))
        if self.ctx.start_stage == "play":
            events.append(Event("turn", {"seat": self.dealer}))
        return events

    # ------------------------------------------------------------------ protocol

    def to_act(self) -> tuple[int, ...]:
        stage = self.stage
        if stage == "over":
            return ()
        if stage in ("play", "haidi"):
            return (self.turn,)
        if stage == "window":
            w = self._window_now()
            return tuple(s for s in sorted(w.candidates) if s not in w.responses)
        return self._setup_to_act()

    def phase(self) -> str:
        return self.stage

    def is_over(self) -> bool:
        return self.stage == "over"

    def legal_actions(self, seat: int) -> list[Action]:
        if self.stage == "over" or seat not in self.to_act():
            return []
        if self.stage == "play":
            return self._turn_actions(seat)
        if self.stage == "window":
            return self._window_actions(seat)
        if self.stage == "haidi":
            return self._haidi_actions(seat)
        return self._setup_actions(seat)

    def verify(self, seat: int, action: Action) -> None:
        self._check_seat_and_kind(seat, action)
        if self.stage == "over":
            raise HandOver("the hand is over")
        if self.stage == "window":
            self._verify_response(seat, action)
            return
        if action.ref:
            raise StaleRef(f"window {action.ref!r} is closed; no window is open now")
        if seat not in self.to_act():
            raise NotYourTurn(f"seat {seat} is not to act now (phase {self.stage})")
        if self.stage == "play":
            self._verify_turn(seat, action)
        elif self.stage == "haidi":
            self._verify_haidi(seat, action)
        else:
            self._verify_setup(seat, action)

    def apply(self, seat: int, action: Action) -> list[Event]:
        self.verify(seat, action)
        self._out = []
        if self.stage == "window":
            self._record(seat, action)
            self._auto_resolve()
        elif self.stage == "play":
            self._do_turn(seat, action)
        elif self.stage == "haidi":
            self._do_haidi(seat, action)
        else:
            self._do_setup(seat, action)
        out, self._out = self._out, []
        return out

    def default_action(self, seat: int) -> Action:
        if seat not in self.to_act():
            raise NotYourTurn(f"seat {seat} is not to act now (phase {self.stage})")
        if self.stage == "play":
            return self._default_turn(seat)
        if self.stage == "window":
            return self._default_response(seat)
        if self.stage == "haidi":
            return Action("haidi", choice="yes" if self._haidi_must_take(seat) else "no")
        return self._default_setup(seat)

    def settlement(self) -> Settlement:
        if self.stage != "over":
            raise RuleError("the hand is not over yet", code="hand_not_over")
        deltas = deltas_from(self.ledger, SEATS)
        details = {
            "end": self.end_reason,
            "winners": [w["seat"] for w in self.wins],
            "wins": list(self.wins),
            "birds": optional_dict(self.birds),
            **self.extra,
        }
        return Settlement(tuple(self.ledger), deltas, self.rules.next_dealer(self), details)

    # ------------------------------------------------------------------ shared helpers

    def _check_seat_and_kind(self, seat: int, action: Action) -> None:
        if isinstance(seat, bool) or not isinstance(seat, int) or not 0 <= seat < SEATS:
            raise BadInput(f"seat must be 0..3, got {seat!r}")
        if not isinstance(action, Action) or action.kind not in ACTION_KINDS:
            kind = getattr(action, "kind", action)
            raise BadInput(f"unknown action kind {kind!r}")
        for name in action.tiles:
            if not isinstance(name, str) or name not in _TILE_NAMES:
                raise BadInput(f"bad tile name {name!r}")

    def parse_tiles(self, action: Action, count: int) -> list[int]:
        """The action's tile names as indices; exactly ``count`` of them."""
        if len(action.tiles) != count:
            raise BadInput(f"{action.kind} needs {count} tile(s), got {len(action.tiles)}")
        out = []
        for name in action.tiles:
            try:
                out.append(tile_index(name))
            except (ValueError, KeyError, TypeError, RuleError):
                raise BadInput(f"bad tile name {name!r}") from None
        return out

    def emit(self, kind: str, data: dict[str, Any], to: int | None = None) -> None:
        self._out.append(Event(kind, data, to))

    def pay(self, reason: str, payer: int, payee: int, amount: int, ref: str = "") -> None:
        if amount <= 0 or payer == payee:
            return
        self.ledger.append(Payment(reason, payer, payee, amount, ref))
        self.emit("payment", {"reason": reason, "payer": payer, "payee": payee,
                              "amount": amount, "ref": ref})

    def active(self, seat: int) -> bool:
        return self.win_order[seat] == 0

    def next_active(self, seat: int) -> int:
        for d in range(1, SEATS + 1):
            s = (seat + d) % SEATS
            if self.active(s):
                return s
        return seat

    def base(self) -> int:
        base: int = self.options["base"]
        return base

    # ------------------------------------------------------------------ serialization

    def serialize(self) -> str:
        data = {name: getattr(self, name) for name in _PLAIN}
        data["opening"] = {} if self.opening is None else self.opening.to_dict()
        data["window"] = optional_dict(self.window)
        data["pass_block"] = [optional_dict(b) for b in self.pass_block]
        data["kongs"] = [k.to_dict() for k in self.kongs]
        data["ctx"] = self.ctx.to_dict()
        data["haidi"] = optional_dict(self.haidi)
        data["birds"] = optional_dict(self.birds)
        data["variant"] = self.rules.name
        data["options"] = self.options
        data["wall"] = self.wall.to_dict()
        data["melds"] = [[_meld_dict(m) for m in ms] for ms in self.melds]
        data["ledger"] = [p.to_dict() for p in self.ledger]
        data["rng"] = self.rng.state
        return json.dumps(data, sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, rules: VariantRules, text: str) -> MahjongState:
        try:
            data = json.loads(text)
            if data.get("variant") != rules.name:
                raise BadInput(f"not a {rules.name} hand: {data.get('variant')!r}")
            s = cls(rules, data["options"])
            for name in _PLAIN:
                setattr(s, name, data[name])
            s.opening = OpeningWins.from_dict(data["opening"]) if data["opening"] else None
            s.window = _record(OpenWindow.from_dict, data["window"])
            s.pass_block = [_record(PassBlock.from_dict, b) for b in data["pass_block"]]
            s.kongs = [Kong.from_dict(k) for k in data["kongs"]]
            s.ctx = TurnContext.from_dict(data["ctx"])
            s.haidi = _record(HaidiOffer.from_dict, data["haidi"])
            s.birds = _record(Birds.from_dict, data["birds"])
            s.wall = Wall.from_dict(data["wall"])
            s.melds = [[_meld_from(m) for m in ms] for ms in data["melds"]]
            s.ledger = [Payment(**p) for p in data["ledger"]]
            s.rng = stream(seed_from_json(s.seed), "dice")
            s.rng.state = data["rng"]
        except (ValueError, KeyError, TypeError) as exc:
            raise BadInput(f"cannot deserialize a {rules.name} hand: {exc!r}") from None
        return s

    def clone(self) -> MahjongState:
        return type(self).from_json(self.rules, self.serialize())


def _record(read: Callable[[dict[str, Any]], R], data: dict[str, Any] | None) -> R | None:
    return None if data is None else read(data)


def _meld_dict(m: Meld) -> dict[str, Any]:
    return {"kind": m.kind, "tiles": list(m.tiles), "source": m.source, "concealed": m.concealed}


def _meld_from(d: dict[str, Any]) -> Meld:
    return Meld(d["kind"], tuple(d["tiles"]), d["source"], d["concealed"])
