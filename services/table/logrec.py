"""The room log's records: one frozen dataclass per kind, and their JSON form.

A room's JetStream log (subject ``room.<id>.log.<id % 3>``: services/common/bus.py
``room_log``) holds one JSON object per accepted command, ``{"i": index, "t": kind, ...}``
(docs/services.md), which :func:`encode` writes (same keys, same order every time) and
:func:`decode` reads back. :func:`decode` refuses a malformed
record with a :class:`LogRecordError` naming the record and the field; keys it does not know
are ignored.

A record is built without its index; :func:`stamp` gives it the index the room's log
appends it at.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar, TypeAlias, TypeVar

from games.arbitration import Decision
from games.engine import Action, RuleError
from games.fair import SEED_BYTES


class LogRecordError(ValueError):
    """A room log record that is not one this table can fold."""


# a hand seed: its SEED_BYTES bytes as lower-case hex (games.fair.hand_seed, docs/fairness.md)
HexSeed: TypeAlias = str


def _omit_empty() -> Any:
    return field(default="", metadata={"omit": "empty"})


def _with_session() -> Any:
    """The login time of a named session: written only with the session."""
    return field(default=0.0, metadata={"omit": "session"})


@dataclass(frozen=True, slots=True)
class Record:
    """Base of every record; ``i`` is its index in the room's log (-1: not appended yet)."""

    KIND: ClassVar[str] = ""
    i: int = field(default=-1, kw_only=True)


@dataclass(frozen=True, slots=True)
class Profile:
    """What a player brings to a seat (from the lobby's login; lat/lng already blurred)."""

    nickname: str = ""
    head_url: str = ""
    sex: int = 0
    coins: int = 0
    ip: str = ""
    lat: float = 0.0
    lng: float = 0.0
    login_address: str = ""


@dataclass(frozen=True, slots=True)
class Create(Record):
    """A room is made: its game, options and rules (always the log's first record)."""

    KIND: ClassVar[str] = "create"
    room_id: int
    game: str
    options: Mapping[str, Any] = field(default_factory=dict)
    timers: Mapping[str, float] = field(default_factory=dict)  # the table's at creation
    base_score: int = 1
    total_hands: int = 4
    min_hands: int = 0
    password_hash: str = ""
    entrust_cancels: int = 3
    creator_id: int = 0
    play_desc: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", MappingProxyType(dict(self.options)))
        object.__setattr__(self, "timers", MappingProxyType(dict(self.timers)))


@dataclass(frozen=True, slots=True)
class Owner(Record):
    """A table took the room over (adoption, restart, drain hand-over); no game change."""

    KIND: ClassVar[str] = "owner"
    instance: str
    boot: str


@dataclass(frozen=True, slots=True)
class Join(Record):
    KIND: ClassVar[str] = "join"
    seat: int
    user_id: int
    profile: Profile = Profile()
    session: str = _omit_empty()       # the lobby session it came from ("" unnamed)
    at: float = _with_session()        # that session's login time (wall clock)
    # a robot the table seated (AddRobots): always ready, entrusted for good; written only
    # when set, so joins of players keep their bytes
    robot: bool = field(default=False, metadata={"omit": "empty"})


@dataclass(frozen=True, slots=True)
class Leave(Record):
    KIND: ClassVar[str] = "leave"
    seat: int


@dataclass(frozen=True, slots=True)
class Ready(Record):
    KIND: ClassVar[str] = "ready"
    seat: int
    ready: bool
    by: str = _omit_empty()            # "timeout" when the table readied the seat


@dataclass(frozen=True, slots=True)
class Online(Record):
    KIND: ClassVar[str] = "online"
    seat: int
    session: str = _omit_empty()
    at: float = _with_session()


@dataclass(frozen=True, slots=True)
class Offline(Record):
    KIND: ClassVar[str] = "offline"
    seat: int


@dataclass(frozen=True, slots=True)
class Entrust(Record):
    """Auto-play (托管) takes a seat over; ``reason``: "timeout", "exit", "offline"."""

    KIND: ClassVar[str] = "entrust"
    seat: int
    reason: str = ""


@dataclass(frozen=True, slots=True)
class CancelEntrust(Record):
    KIND: ClassVar[str] = "cancel_entrust"
    seat: int


@dataclass(frozen=True, slots=True)
class Start(Record):
    """A hand starts: everything the engine's deal depends on. ``seed``: the hand seed of
    its fair deal (docs/fairness.md); ``dealer_from_seed``: the first hand's dealer was
    drawn from the seed."""

    KIND: ClassVar[str] = "start"
    hand_no: int
    seed: HexSeed
    dealer: int
    dealer_from_seed: bool = field(default=False, metadata={"omit": "empty"})


@dataclass(frozen=True, slots=True)
class Commit(Record):
    """The table's commitment to the server seed of hand ``hand_no``, made before any
    client seed for that hand is taken. The seed (hex) stays in the log, which only
    tables read; players see the commitment now and the seed when the hand is over."""

    KIND: ClassVar[str] = "commit"
    hand_no: int
    server_seed: str
    commitment: str


@dataclass(frozen=True, slots=True)
class ClientSeed(Record):
    """A seat's client seed (hex) for hand ``hand_no``; the last one before the hand counts."""

    KIND: ClassVar[str] = "client_seed"
    seat: int
    hand_no: int
    seed: str


@dataclass(frozen=True, slots=True)
class Act(Record):
    """A seat's action; ``by``: "player", "timeout" or "entrust"; ``response``: it answers
    a response window (recorded, not applied, until the window is resolved)."""

    KIND: ClassVar[str] = "act"
    seat: int
    action: Action
    by: str = "player"
    response: bool = False


@dataclass(frozen=True, slots=True)
class Resolve(Record):
    """The decision of a response window (the arbiter's, or local arbitration's)."""

    KIND: ClassVar[str] = "resolve"
    decision: Decision


@dataclass(frozen=True, slots=True)
class DismissApply(Record):
    KIND: ClassVar[str] = "dismiss_apply"
    seat: int
    seconds: int = 0
    until: float = 0.0                 # wall-clock end of the vote


@dataclass(frozen=True, slots=True)
class DismissVote(Record):
    KIND: ClassVar[str] = "dismiss_vote"
    seat: int
    agree: bool
    seconds: int = 0                   # left of the vote when it was cast


@dataclass(frozen=True, slots=True)
class DismissResult(Record):
    KIND: ClassVar[str] = "dismiss_result"
    agreed: bool


@dataclass(frozen=True, slots=True)
class Close(Record):
    """The room closes; ``reason`` is a ``NoticeDismiss.Reason``."""

    KIND: ClassVar[str] = "close"
    reason: int
    doc: str = ""


KINDS: dict[str, type[Record]] = {cls.KIND: cls for cls in (
    Create, Owner, Join, Leave, Ready, Online, Offline, Entrust, CancelEntrust, Start, Commit,
    ClientSeed, Act, Resolve, DismissApply, DismissVote, DismissResult, Close)}


R = TypeVar("R", bound=Record)


def stamp(rec: R, index: int) -> R:
    """The record as appended at ``index`` of its room's log."""
    return dataclasses.replace(rec, i=index)


# ---------------------------------------------------------------------- encode
def _value(value: Any) -> Any:
    if isinstance(value, Action | Decision):
        return value.to_dict()
    if isinstance(value, Profile):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(Profile)}
    if isinstance(value, Mapping):
        return dict(value)
    return value


_PLAIN = (int, float, str, bool)
# a record type -> (name, omit rule) of its fields but ``i``, in declaration order
_FIELDS: dict[type[Record], tuple[tuple[str, str | None], ...]] = {}


def _fields(cls: type[Record]) -> tuple[tuple[str, str | None], ...]:
    spec = _FIELDS.get(cls)
    if spec is None:
        spec = _FIELDS[cls] = tuple((f.name, f.metadata.get("omit"))
                                    for f in dataclasses.fields(cls) if f.name != "i")
    return spec


def encode(rec: Record) -> dict[str, Any]:
    """The JSON object of a record, as written to the room log (``i`` and ``t`` first)."""
    if rec.i < 0:
        raise LogRecordError(f"a {rec.KIND} record has no log index yet (logrec.stamp)")
    out: dict[str, Any] = {"i": rec.i, "t": rec.KIND}
    for name, omit in _fields(type(rec)):
        value = getattr(rec, name)
        if omit is not None and ((omit == "empty" and not value) or (
                omit == "session" and not getattr(rec, "session", ""))):
            continue
        out[name] = value if type(value) in _PLAIN else _value(value)
    return out


# ---------------------------------------------------------------------- decode
def _int(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError("a whole number")
    return v


def _float(v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise TypeError("a number")
    return float(v)


def _str(v: Any) -> str:
    if not isinstance(v, str):
        raise TypeError("a string")
    return v


def _bool(v: Any) -> bool:
    if not isinstance(v, bool):
        raise TypeError("true or false")
    return v


def _hex_seed(v: Any) -> HexSeed:
    if not isinstance(v, str) or len(v) != 2 * SEED_BYTES or v != v.lower():
        raise TypeError(f"{SEED_BYTES} bytes as lower-case hex")
    try:
        bytes.fromhex(v)
    except ValueError:
        raise TypeError(f"{SEED_BYTES} bytes as lower-case hex") from None
    return v


def _object(v: Any) -> dict[str, Any]:
    if not isinstance(v, Mapping):
        raise TypeError("an object")
    return dict(v)


def _timers(v: Any) -> dict[str, float]:
    return {str(k): _float(x) for k, x in _object(v).items()}


def _profile(v: Any) -> Profile:
    data = _object(v)
    kw = {}
    for f in dataclasses.fields(Profile):
        if data.get(f.name) is not None:
            try:
                kw[f.name] = DECODERS[str(f.type)](data[f.name])
            except TypeError as err:
                raise TypeError(f"an object whose {f.name!r} is {err}") from None
    return Profile(**kw)


def _action(v: Any) -> Action:
    try:
        return Action.from_dict(_object(v))
    except RuleError as err:
        raise TypeError(str(err)) from None


def _decision(v: Any) -> Decision:
    try:
        return Decision.from_dict(_object(v))
    except (KeyError, RuleError, ValueError) as err:
        raise TypeError(f"a window decision ({err})") from None


# a field's annotation -> how its JSON value is checked and read
DECODERS: dict[str, Callable[[Any], Any]] = {
    "int": _int, "float": _float, "str": _str, "bool": _bool, "HexSeed": _hex_seed,
    "Profile": _profile,
    "Action": _action, "Decision": _decision, "Mapping[str, Any]": _object,
    "Mapping[str, float]": _timers}


def decode(data: Any) -> Record:
    """The typed record of one log object; :class:`LogRecordError` if it is malformed."""
    if not isinstance(data, Mapping):
        raise LogRecordError(f"a room log record is a JSON object, not {type(data).__name__}")
    kind = data.get("t")
    cls = KINDS.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise LogRecordError(f"unknown room log record type {kind!r}")
    index = data.get("i")
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise LogRecordError(f"{kind} record: 'i' must be the record's index, got {index!r}")
    kw: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name == "i":
            continue
        if f.name not in data or data[f.name] is None:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise LogRecordError(f"{kind} record {index}: field {f.name!r} is missing")
            continue
        try:
            kw[f.name] = DECODERS[str(f.type)](data[f.name])
        except TypeError as err:
            raise LogRecordError(f"{kind} record {index}: {f.name!r} must be {err}, "
                                 f"got {data[f.name]!r}") from None
    return cls(**kw, i=index)
