"""The contract every rule engine in ``games/`` follows.

A game variant is a module with ``new_hand(options, seed, dealer) -> State``, listed once in
:mod:`games.registry` (a ``GameSpec``: engine, options, bots, timers); a ``State`` is a
deterministic state machine in the spirit of OpenSpiel and PokerKit:

* ``to_act()`` - the seats that must act now (several during a response window or a
  simultaneous phase such as exchange-three); empty once the hand is over.
* ``phase()`` - a short name for the current decision ("exchange", "void", "play",
  "window", "alone", "friend", "over", ...). Services map it to a timer length.
* ``legal_actions(seat)`` - every legal action of that seat now (candidates for clients and
  bots). ``verify(seat, action)`` raises a :class:`RuleError` that says why an action is not
  allowed; ``can(seat, action)`` is its boolean form; ``apply(seat, action)`` verifies, then
  mutates and returns the events it caused. A rejected action leaves the state unchanged.
* ``default_action(seat)`` - what a timeout or entrust (托管) plays for that seat.
* ``observation(seat)`` - exactly what that seat may see; ``public_view()`` - what a spectator
  may see. Hidden information leaves the engine only through these two and through events
  addressed to one seat. ``view_and_actions(seat)`` - the observation and the legal actions
  together, as a prompt shows them (:class:`ViewThenActions` asks for the two apart; an engine
  whose observation lists the legal actions, as mahjong's does, computes them once).
* ``is_over()``, ``settlement()`` - the itemised, zero-sum ledger of the hand.
* ``serialize()`` (a JSON string) / ``deserialize(text)`` (class method) / ``clone()``.
* ``deal_events()`` - the events of the deal, right after ``new_hand`` (public "deal", each
  seat's private "hand", and whatever the first decision announces).

Response windows (响应窗口, mahjong only): after a discard or a robbable kong several seats
may answer at once, and who wins is decided by :func:`games.arbitration.resolve` - in the
engine (``apply``) or, at a table, by the arbiter service. For the second way a state offers:

* ``pending_window()`` - the open :class:`~games.arbitration.Window`, or None;
* ``arbitration_rules()`` - the :class:`~games.arbitration.Rules` its windows are decided by
  (multi-win, kong over peng), or None for a game without windows;
* ``record_response(seat, action)`` - record one answer without deciding the window;
* ``verify_decision(decision)`` - RuleError unless a final
  :class:`~games.arbitration.Decision` fits the open window; changes nothing;
* ``resolve_window(decision)`` - the same check, then apply it.

A game without response windows (Dadun) mixes in :class:`NoWindows`: no window is ever
pending and the two mutators raise :class:`StaleRef`.

Engines never read a clock, never touch the network and never draw randomness of their own:
the caller supplies the seed and :mod:`games.rng` turns it into a reproducible stream.
Same seed + same actions => the same events, byte for byte.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

if TYPE_CHECKING:  # games.arbitration imports this module: types only
    from games.arbitration import Decision, Rules, Window


class RuleError(Exception):
    """An action the rules do not allow now.

    ``code`` is a stable snake_case reason (``not_your_turn``, ``illegal_action``,
    ``stale_ref``, ``tile_not_in_hand``, ``bad_input``, ...) that services map to the numeric
    error code of the game's range; ``message`` is for humans.
    """

    code = "illegal_action"

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code

    @property
    def message(self) -> str:
        return str(self)


class NotYourTurn(RuleError):
    code = "not_your_turn"


class IllegalAction(RuleError):
    code = "illegal_action"


class StaleRef(RuleError):
    """The action answers a response window or an out-token that is no longer current."""

    code = "stale_ref"


class BadInput(RuleError):
    """The action is malformed: unknown kind, bad tile or card notation, wrong arity."""

    code = "bad_input"


class HandOver(RuleError):
    code = "hand_over"


@dataclass(frozen=True, slots=True)
class Action:
    """One player decision, in canonical names (``../shared/rules/README.md``).

    ``tiles`` holds mahjong tiles or Dadun cards in notation (``"5m"``, ``"Th"``, ``"SJ"``);
    ``ref`` is the response-window id or out-token the action answers (a string on the wire);
    ``choice`` carries a small enumerated choice (a void suit ``"m"``, ``"yes"``/``"no"``).
    """

    kind: str
    tiles: tuple[str, ...] = ()
    ref: str = ""
    choice: str = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        if self.tiles:
            out["tiles"] = list(self.tiles)
        if self.ref:
            out["ref"] = self.ref
        if self.choice:
            out["choice"] = self.choice
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Action:
        if not isinstance(data, Mapping) or not isinstance(data.get("kind"), str):
            raise BadInput("an action needs a string 'kind'")
        tiles = data.get("tiles", ())
        if isinstance(tiles, str) or not all(isinstance(t, str) for t in tiles):
            raise BadInput("'tiles' must be a list of tile or card names")
        ref = data.get("ref", "")
        choice = data.get("choice", "")
        if not isinstance(ref, str) or not isinstance(choice, str):
            raise BadInput("'ref' and 'choice' must be strings")
        return cls(data["kind"], tuple(tiles), ref, choice)


@dataclass(frozen=True, slots=True)
class Event:
    """Something that happened. ``to is None``: public (every seat and spectators);
    ``to == k``: private to seat k (own tiles, action candidates). ``data`` is JSON-ready."""

    kind: str
    data: Mapping[str, Any] = field(default_factory=dict)
    to: int | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "data": dict(self.data)}
        if self.to is not None:
            out["to"] = self.to
        return out


@dataclass(frozen=True, slots=True)
class Payment:
    """One line of the ledger: ``payer`` pays ``amount`` (> 0) to ``payee`` for ``reason``."""

    reason: str
    payer: int
    payee: int
    amount: int
    ref: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class Settlement:
    """The result of one hand: itemised payments, per-seat deltas (sum zero), the next
    dealer/banker, and game-specific details (winners, patterns, flags) as JSON-ready data."""

    payments: tuple[Payment, ...]
    deltas: tuple[int, ...]
    next_dealer: int
    details: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "payments": [p.to_dict() for p in self.payments],
            "deltas": list(self.deltas),
            "next_dealer": self.next_dealer,
            "details": dict(self.details),
        }


def deltas_from(payments: Sequence[Payment], seats: int) -> tuple[int, ...]:
    """Per-seat net result of a list of payments (zero-sum by construction)."""
    out = [0] * seats
    for p in payments:
        out[p.payer] -= p.amount
        out[p.payee] += p.amount
    return tuple(out)


class Verified:
    """``can`` is ``verify`` as a boolean, for every engine state (verify / can / do)."""

    def verify(self, seat: int, action: Action) -> None:
        raise NotImplementedError

    def can(self, seat: int, action: Action) -> bool:
        try:
            self.verify(seat, action)
        except RuleError:
            return False
        return True


class ViewThenActions:
    """``view_and_actions`` for an engine whose observation does not contain the legal
    actions: the observation, then the legal actions."""

    def observation(self, seat: int) -> dict[str, Any]:
        raise NotImplementedError

    def legal_actions(self, seat: int) -> list[Action]:
        raise NotImplementedError

    def view_and_actions(self, seat: int) -> tuple[dict[str, Any], list[Action]]:
        return self.observation(seat), self.legal_actions(seat)


def check_seat(seat: Any, seats: int, what: str = "seat") -> int:
    """``seat`` if it is a seat number of a table of ``seats`` (a plain int, not a bool),
    else BadInput naming ``what``."""
    if isinstance(seat, bool) or not isinstance(seat, int) or not 0 <= seat < seats:
        raise BadInput(f"{what} must be a seat 0..{seats - 1}, got {seat!r}")
    return seat


class DealBacked(Verified):
    """The part of :class:`State` that the card games share: the state is one ``deal``
    (its ``phase``, ``to_act()``, ``hands``, ``to_json()`` and ``copy()``), and an action is
    checked by its kind's verifier (``verifiers[kind](deal, seat, action)``, raising
    RuleError). ``title`` names the game in messages."""

    num_seats: int
    title: ClassVar[str]
    verifiers: ClassVar[Mapping[str, Callable[[Any, int, Action], object]]]

    def __init__(self, deal: Any) -> None:
        self.deal = deal

    def to_act(self) -> tuple[int, ...]:
        return self.deal.to_act()  # type: ignore[no-any-return]

    def phase(self) -> str:
        return str(self.deal.phase)

    def is_over(self) -> bool:
        return bool(self.deal.phase == "over")

    def check_seat(self, seat: Any) -> int:
        """``seat`` if it is a seat of this game, else BadInput."""
        return check_seat(seat, self.num_seats)

    def verify(self, seat: int, action: Action) -> None:
        if not isinstance(action, Action):
            raise BadInput("an action must be a games.engine.Action")
        self.check_seat(seat)
        verifier = self.verifiers.get(action.kind)
        if verifier is None:
            raise BadInput(f"unknown {self.title} action {action.kind!r}")
        verifier(self.deal, seat, action)

    def serialize(self) -> str:
        return json.dumps(self.deal.to_json(), sort_keys=True, separators=(",", ":"))

    def clone(self) -> Any:
        return type(self)(self.deal.copy())

    def hand_of(self, seat: int) -> list[int]:
        """A copy of a seat's concealed hand (card codes), for tests and tools only."""
        return list(self.deal.hands[seat])


class NoWindows:
    """The response-window part of :class:`State` for a game that has no windows (Dadun):
    nothing is ever pending, and answering or deciding a window is refused."""

    def pending_window(self) -> Window | None:
        return None

    def arbitration_rules(self) -> Rules | None:
        return None

    def record_response(self, seat: int, action: Action) -> list[Event]:
        raise StaleRef("this game has no response windows")

    def verify_decision(self, decision: Decision) -> None:
        raise StaleRef("this game has no response windows")

    def resolve_window(self, decision: Decision) -> list[Event]:
        raise StaleRef("this game has no response windows")


@runtime_checkable
class State(Protocol):
    """What services, bots, tools and the conformance suites rely on."""

    num_seats: int

    def to_act(self) -> tuple[int, ...]: ...

    def phase(self) -> str: ...

    def legal_actions(self, seat: int) -> list[Action]: ...

    def verify(self, seat: int, action: Action) -> None: ...

    def can(self, seat: int, action: Action) -> bool: ...

    def apply(self, seat: int, action: Action) -> list[Event]: ...

    def default_action(self, seat: int) -> Action: ...

    def observation(self, seat: int) -> dict[str, Any]: ...

    def view_and_actions(self, seat: int) -> tuple[dict[str, Any], list[Action]]: ...

    def public_view(self) -> dict[str, Any]: ...

    def is_over(self) -> bool: ...

    def settlement(self) -> Settlement: ...

    def serialize(self) -> str: ...

    def clone(self) -> State: ...

    def deal_events(self) -> list[Event]: ...

    # response windows (see the module doc; NoWindows for games without them)
    def pending_window(self) -> Window | None: ...

    def arbitration_rules(self) -> Rules | None: ...

    def record_response(self, seat: int, action: Action) -> list[Event]: ...

    def verify_decision(self, decision: Decision) -> None: ...

    def resolve_window(self, decision: Decision) -> list[Event]: ...
