"""Response-window arbitration (响应裁决) as one pure function.

After a discard (or a robbable added kong, a Changsha open-kong reveal, a haidi tile) every
eligible seat answers once. :func:`resolve` turns the answers collected so far into a
:class:`Decision`:

* Priority classes: ``hu`` > kongs (``zhigang``/``kaigang``/``buzhang``) > ``peng`` > ``chi`` >
  ``pass`` (XueZhan). With ``Rules(gang_over_peng=False)`` kongs and peng share one class
  (Changsha: 胡 > 杠/补张 = 碰 > 吃).
* Ties go to the nearest seat after the source in turn order (source+1, +2, ...).
* Several ``hu`` answers all win (一炮多响 / 通炮) when ``multi_win``; otherwise only the nearest
  (截胡).
* ``pass`` only gives up this window. Seats that could have won but did not answer ``hu`` are
  listed in ``passed_win`` so the engine can apply 过水不胡 / 漏胡.
* The decision is ``final`` as soon as no seat still to answer could change the outcome.

The arbiter service, the table's local arbitration (when no arbiter answers) and the mahjong
engines all call this; ``to_dict``/``from_dict`` give the JSON-ready wire form.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from games.engine import BadInput

KINDS = ("hu", "zhigang", "kaigang", "buzhang", "peng", "chi", "pass")
KONG_KINDS = frozenset({"zhigang", "kaigang", "buzhang"})
TRIGGERS = ("discard", "rob_kong", "kaigang_reveal", "haidi")
# Windows other than a plain discard only let a seat win or pass (抢杠胡, 杠上炮, 海底炮).
_WIN_ONLY = frozenset({"hu", "pass"})


class InvalidWindow(BadInput, ValueError):
    """A malformed window or a response the window does not allow.

    Both a :class:`~games.engine.RuleError` (code ``bad_input``) for engines and a
    ``ValueError`` for the arbiter service, which maps it to INVALID_ARGUMENT.
    """


@dataclass(frozen=True)
class Response:
    """One seat's answer; ``chi`` carries the two hand tiles (tile indices)."""

    kind: str
    tiles: tuple[int, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "tiles": list(self.tiles)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Response:
        if not isinstance(data, Mapping) or not isinstance(data.get("kind"), str):
            raise InvalidWindow("a response needs a string 'kind'")
        return cls(data["kind"], _int_tuple(data.get("tiles", ()), "response tiles"))


@dataclass(frozen=True)
class Window:
    """A response window: ``candidates`` maps each eligible seat to the kinds it may answer
    (``pass`` is always allowed); ``responses`` holds the answers received so far."""

    id: int
    source_seat: int
    tile: int
    trigger: str
    candidates: Mapping[int, frozenset[str]]
    responses: Mapping[int, Response] = field(default_factory=dict)
    num_seats: int = 4

    def answer(self, seat: int, response: Response) -> Window:
        """A copy of this window with ``seat``'s answer added (validated)."""
        if seat in self.responses:
            raise InvalidWindow(f"seat {seat} already answered window {self.id}")
        window = Window(
            self.id, self.source_seat, self.tile, self.trigger, self.candidates,
            {**self.responses, seat: response}, self.num_seats,
        )
        validate(window)
        return window

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "source_seat": self.source_seat,
            "tile": self.tile,
            "trigger": self.trigger,
            "candidates": {str(s): sorted(k) for s, k in sorted(self.candidates.items())},
            "responses": {str(s): r.to_dict() for s, r in sorted(self.responses.items())},
            "num_seats": self.num_seats,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Window:
        if not isinstance(data, Mapping):
            raise InvalidWindow("a window must be a JSON object")
        try:
            candidates = {
                _seat_key(s): frozenset(_str_list(kinds, "candidate kinds"))
                for s, kinds in dict(data["candidates"]).items()
            }
            responses = {
                _seat_key(s): Response.from_dict(r)
                for s, r in dict(data.get("responses", {})).items()
            }
            window = cls(
                _int(data["id"], "id"), _int(data["source_seat"], "source_seat"),
                _int(data["tile"], "tile"), str(data["trigger"]), candidates, responses,
                _int(data.get("num_seats", 4), "num_seats"),
            )
        except (KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, InvalidWindow):
                raise
            raise InvalidWindow(f"malformed window: {exc!r}") from None
        validate(window)
        return window


@dataclass(frozen=True)
class Rules:
    """``multi_win``: every hu answer wins (一炮多响); off: only the nearest (截胡).
    ``gang_over_peng``: kongs outrank peng (XueZhan); off: equal class (Changsha)."""

    multi_win: bool = True
    gang_over_peng: bool = True


@dataclass(frozen=True)
class Decision:
    """The outcome so far. ``action`` is ``hu``, a claim kind, or ``pass`` (nobody claims);
    ``winners`` are ordered from the source's next seat on; ``claim`` is the winning answer
    (None when all passed); ``passed_win`` lists seats that could win but answered something
    else; ``pending`` lists eligible seats that have not answered yet (turn order). When
    ``final`` is True no pending answer can change ``action``/``winners``/``claim``."""

    window_id: int
    final: bool
    action: str
    winners: tuple[int, ...]
    claim: Response | None
    passed_win: tuple[int, ...]
    pending: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "window_id": self.window_id,
            "final": self.final,
            "action": self.action,
            "winners": list(self.winners),
            "claim": None if self.claim is None else self.claim.to_dict(),
            "passed_win": list(self.passed_win),
            "pending": list(self.pending),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Decision:
        if not isinstance(data, Mapping):
            raise InvalidWindow("a decision must be a JSON object")
        try:
            claim = data.get("claim")
            return cls(
                _int(data["window_id"], "window_id"), bool(data["final"]), str(data["action"]),
                _int_tuple(data["winners"], "winners"),
                None if claim is None else Response.from_dict(claim),
                _int_tuple(data["passed_win"], "passed_win"),
                _int_tuple(data["pending"], "pending"),
            )
        except KeyError as exc:
            raise InvalidWindow(f"a decision needs {exc}") from None


def resolve(window: Window, rules: Rules = Rules()) -> Decision:  # noqa: B008 (frozen default)
    """Decide a response window from the answers received so far (see the module doc)."""
    validate(window)
    order = _turn_order(window)
    pending = tuple(s for s in order if s in window.candidates and s not in window.responses)
    winners, claim = _outcome(window, order, rules)
    final = not any(
        _would_win(window, rules, seat, kind, winners, claim)
        for seat in pending
        for kind in window.candidates[seat]
        if kind != "pass"
    )
    passed_win = tuple(
        s for s in order
        if s in window.responses
        and "hu" in window.candidates[s]
        and window.responses[s].kind != "hu"
    )
    action = claim.kind if claim is not None else "pass"
    return Decision(window.id, final, action, winners, claim, passed_win, pending)


# The most seats a mahjong table has: a window's seats are bounded, so a malformed request
# (the arbiter takes windows off the wire) cannot make the turn order ask for unbounded memory.
MAX_SEATS = 4


def validate(window: Window) -> None:
    """Raise :class:`InvalidWindow` unless the window and its responses are consistent."""
    n = window.num_seats
    if not isinstance(n, int) or not 2 <= n <= MAX_SEATS:
        raise InvalidWindow(f"num_seats must be an integer in 2..{MAX_SEATS}, got {n!r}")
    if not isinstance(window.id, int) or window.id < 0:
        raise InvalidWindow(f"window id must be a non-negative integer, got {window.id!r}")
    if not isinstance(window.source_seat, int) or not 0 <= window.source_seat < n:
        raise InvalidWindow(f"source seat {window.source_seat!r} is not in 0..{n - 1}")
    if window.trigger not in TRIGGERS:
        raise InvalidWindow(f"unknown trigger {window.trigger!r}")
    for seat, kinds in window.candidates.items():
        if not isinstance(seat, int) or not 0 <= seat < n:
            raise InvalidWindow(f"candidate seat {seat!r} is not in 0..{n - 1}")
        if seat == window.source_seat:
            raise InvalidWindow(f"seat {seat} cannot answer its own tile")
        unknown = set(kinds) - set(KINDS)
        if unknown:
            raise InvalidWindow(f"unknown kinds {sorted(unknown)} for seat {seat}")
        if window.trigger != "discard" and not set(kinds) <= _WIN_ONLY:
            raise InvalidWindow(f"a {window.trigger} window only allows hu or pass")
    for seat, response in window.responses.items():
        _validate_response(window, seat, response)


def _validate_response(window: Window, seat: int, response: Response) -> None:
    if seat not in window.candidates:
        raise InvalidWindow(f"seat {seat!r} is not eligible in window {window.id}")
    if response.kind != "pass" and response.kind not in window.candidates[seat]:
        raise InvalidWindow(f"seat {seat} may not answer {response.kind!r} in window {window.id}")
    if response.kind == "chi" and len(response.tiles) != 2:
        raise InvalidWindow("a chi answer carries exactly two hand tiles")


def _turn_order(window: Window) -> tuple[int, ...]:
    """Seats after the source, nearest first (source+1, source+2, ...)."""
    return tuple((window.source_seat + d) % window.num_seats for d in range(1, window.num_seats))


def _rank(kind: str, rules: Rules) -> int:
    if kind == "hu":
        return 4
    if kind in KONG_KINDS:
        return 3 if rules.gang_over_peng else 2
    return {"peng": 2, "chi": 1}.get(kind, 0)


def _outcome(
    window: Window, order: tuple[int, ...], rules: Rules
) -> tuple[tuple[int, ...], Response | None]:
    """Winners and winning answer among the responses received (pending seats count as pass)."""
    answered = [(s, window.responses[s]) for s in order if s in window.responses]
    hu = tuple(s for s, r in answered if r.kind == "hu")
    if hu:
        return (hu if rules.multi_win else hu[:1]), Response("hu")
    best: tuple[int, Response] | None = None
    for seat, response in answered:  # nearest first, so only a strictly higher class wins
        if _rank(response.kind, rules) > (0 if best is None else _rank(best[1].kind, rules)):
            best = seat, response
    return ((), None) if best is None else ((best[0],), best[1])


def _would_win(
    window: Window, rules: Rules, seat: int, kind: str,
    winners: tuple[int, ...], claim: Response | None,
) -> bool:
    """Would ``seat`` answering ``kind`` become (one of) the winners of the current outcome?"""
    if claim is None:
        return True
    mine, theirs = _rank(kind, rules), _rank(claim.kind, rules)
    if mine != theirs:
        return mine > theirs
    if kind == "hu" and rules.multi_win:
        return True
    dist = (seat - window.source_seat) % window.num_seats
    return dist < (winners[0] - window.source_seat) % window.num_seats


def _seat_key(key: Any) -> int:
    return _int(int(key) if isinstance(key, str) else key, "seat")


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidWindow(f"{what} must be an integer, got {value!r}")
    return value


def _int_tuple(values: Any, what: str) -> tuple[int, ...]:
    if isinstance(values, (str, bytes, Mapping)):
        raise InvalidWindow(f"{what} must be a list of integers")
    return tuple(_int(v, what) for v in values)


def _str_list(values: Any, what: str) -> list[str]:
    if isinstance(values, (str, bytes, Mapping)) or not all(isinstance(v, str) for v in values):
        raise InvalidWindow(f"{what} must be a list of strings")
    return list(values)
