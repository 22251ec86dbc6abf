"""Parsing and validation of SETTLE messages (docs/services.md, "A settlement message").

Pure: bytes in, frozen values out, :class:`MalformedSettlement` for anything records must
not write (bad JSON, wrong lengths, deltas that do not sum to zero). A malformed message is
terminated by the consumer, never retried.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeGuard

INT32 = 2**31 - 1
INT63 = 2**63 - 1


class MalformedSettlement(ValueError):
    """A settlement message that can never be written."""


@dataclass(frozen=True, slots=True)
class LedgerLine:
    """One ledger row: ``user_id`` (in ``seat``) gains ``delta`` (negative: pays)."""

    user_id: int
    seat: int
    delta: int
    reason: str
    counterparty_user_id: int | None


@dataclass(frozen=True, slots=True)
class ReplayEvent:
    """One event of a hand's replay; ``to_seat`` None means public."""

    idx: int
    kind: str
    to_seat: int | None
    event_id: int
    frame: bytes
    json: str


@dataclass(frozen=True, slots=True)
class Settlement:
    """A hand settlement (``final`` False, ``hand_no`` >= 1) or a room's final message
    (``final`` True, ``hand_no`` 0, ``deltas`` = the room totals, no ledger, no events)."""

    room_id: int
    hand_no: int
    final: bool
    game: str
    base_score: int
    seats: tuple[int, ...]
    nicknames: tuple[str, ...]
    deltas: tuple[int, ...]
    details: dict[str, Any]
    settled_at: datetime
    ledger: tuple[LedgerLine, ...]
    events: tuple[ReplayEvent, ...]

    @property
    def key(self) -> str:
        """The dedupe id the table publishes with (``Nats-Msg-Id``)."""
        return f"{self.room_id}:final" if self.final else f"{self.room_id}:{self.hand_no}"


def _is_int(value: Any, bound: int) -> TypeGuard[int]:
    """An integer (not a bool) that fits the column: |value| <= bound."""
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) <= bound


def _int(data: dict[str, Any], name: str, *, minimum: int | None = None,
         bound: int = INT32) -> int:
    value = data.get(name)
    if not _is_int(value, bound):
        raise MalformedSettlement(f"{name}: expected an integer up to {bound}, got {value!r}")
    if minimum is not None and value < minimum:
        raise MalformedSettlement(f"{name}: {value} is below {minimum}")
    return value


def _int_list(data: dict[str, Any], name: str, length: int | None = None, *,
              bound: int = INT63 // 4) -> tuple[int, ...]:
    """A list of whole numbers within ``bound``: amounts a quarter of int63 (four of them
    never overflow a sum), user ids the whole int64 range the protos give them."""
    value = data.get(name)
    if not isinstance(value, list) or not all(_is_int(v, bound) for v in value):
        raise MalformedSettlement(f"{name}: expected a list of integers, got {value!r}")
    if length is not None and len(value) != length:
        raise MalformedSettlement(f"{name}: {len(value)} values for {length} seats")
    return tuple(value)


def _settled_at(data: dict[str, Any]) -> datetime:
    """ISO 8601 timestamp; stored as naive UTC."""
    text = data.get("settled_at")
    if not isinstance(text, str):
        raise MalformedSettlement(f"settled_at: expected an ISO timestamp, got {text!r}")
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise MalformedSettlement(f"settled_at: {text!r} is not an ISO timestamp") from None
    if when.tzinfo is not None:
        when = when.astimezone(UTC).replace(tzinfo=None)
    return when


def _nicknames(data: dict[str, Any], seats: int) -> tuple[str, ...]:
    names = data.get("nicknames") or [""] * seats
    if not isinstance(names, list) or len(names) != seats or not all(
            isinstance(n, str) for n in names):
        raise MalformedSettlement(f"nicknames: expected {seats} strings, got {names!r}")
    return tuple(names)


def _payment_ledger(payments: Any, seats: tuple[int, ...],
                    deltas: tuple[int, ...]) -> tuple[LedgerLine, ...] | None:
    """Two rows per payment (payer -amount, payee +amount), or None when the payments do
    not net to ``deltas`` (then the ledger falls back to one row per seat)."""
    if not isinstance(payments, list) or not payments:
        return None
    lines: list[LedgerLine] = []
    net = [0] * len(seats)
    for p in payments:
        if not isinstance(p, dict):
            return None
        payer, payee, amount = p.get("payer"), p.get("payee"), p.get("amount")
        bound = INT63 // 4
        if not (_is_int(payer, bound) and _is_int(payee, bound) and _is_int(amount, bound)):
            return None
        if not (0 <= payer < len(seats) and 0 <= payee < len(seats)) or amount <= 0:
            return None
        reason = str(p.get("reason") or "payment")
        net[payer] -= amount
        net[payee] += amount
        lines.append(LedgerLine(seats[payer], payer, -amount, reason, seats[payee]))
        lines.append(LedgerLine(seats[payee], payee, amount, reason, seats[payer]))
    return tuple(lines) if tuple(net) == deltas else None


def _ledger(data: dict[str, Any], seats: tuple[int, ...],
            deltas: tuple[int, ...]) -> tuple[LedgerLine, ...]:
    lines = _payment_ledger(data.get("payments"), seats, deltas)
    if lines is not None:
        return lines
    return tuple(LedgerLine(uid, seat, d, "hand", None)
                 for seat, (uid, d) in enumerate(zip(seats, deltas, strict=True)) if d)


def _event(raw: Any, seats: int) -> ReplayEvent:
    if not isinstance(raw, dict):
        raise MalformedSettlement(f"events: expected objects, got {raw!r}")
    idx = _int(raw, "i", minimum=0)
    to = raw.get("to")
    if to is not None and (not _is_int(to, seats) or not 0 <= to < seats):
        raise MalformedSettlement(f"events[{idx}].to: {to!r} is not a seat or null")
    kind, frame, text = raw.get("kind"), raw.get("frame", ""), raw.get("json", "")
    if not isinstance(kind, str) or not isinstance(frame, str) or not isinstance(text, str):
        raise MalformedSettlement(f"events[{idx}]: kind, frame and json must be strings")
    try:
        data = base64.b64decode(frame, validate=True)
    except (binascii.Error, ValueError):
        raise MalformedSettlement(f"events[{idx}].frame: not base64") from None
    return ReplayEvent(idx, kind, to, _int(raw, "event_id"), data, text)


def _events(data: dict[str, Any], seats: int) -> tuple[ReplayEvent, ...]:
    raw = data.get("events") or []
    if not isinstance(raw, list):
        raise MalformedSettlement("events: expected a list")
    events = tuple(sorted((_event(e, seats) for e in raw), key=lambda e: e.idx))
    if len({e.idx for e in events}) != len(events):
        raise MalformedSettlement("events: duplicate index")
    return events


def parse_settlement(payload: bytes) -> Settlement:
    """Decode and validate one SETTLE message."""
    try:
        data = json.loads(payload)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MalformedSettlement(f"not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise MalformedSettlement("expected a JSON object")
    final = data.get("final", False)
    if not isinstance(final, bool):
        raise MalformedSettlement(f"final: expected a boolean, got {final!r}")
    room_id = _int(data, "room_id", minimum=1, bound=INT63)
    hand_no = _int(data, "hand_no", minimum=0)
    if final != (hand_no == 0):
        raise MalformedSettlement("hand_no must be 0 exactly for the final message")
    game = data.get("game")
    if not isinstance(game, str) or not game:
        raise MalformedSettlement(f"game: expected a name, got {game!r}")
    seats = _int_list(data, "seats", bound=INT63)
    if not seats or any(uid <= 0 for uid in seats) or len(set(seats)) != len(seats):
        raise MalformedSettlement(f"seats: expected distinct positive user ids, got {seats!r}")
    deltas = _int_list(data, "totals" if final else "deltas", len(seats))
    if sum(deltas) != 0:
        raise MalformedSettlement(f"{'totals' if final else 'deltas'} {deltas} do not sum to 0")
    details = data.get("details") or {}
    if final:
        details = {"hands_played": data.get("hands_played"), "reason": data.get("reason")}
    if not isinstance(details, dict):
        raise MalformedSettlement("details: expected an object")
    base = data.get("base_score", 0) if final else _int(data, "base_score")
    return Settlement(
        room_id=room_id, hand_no=hand_no, final=final, game=game,
        base_score=base if isinstance(base, int) else 0, seats=seats,
        nicknames=_nicknames(data, len(seats)), deltas=deltas, details=details,
        settled_at=_settled_at(data),
        ledger=() if final else _ledger(data, seats, deltas),
        events=() if final else _events(data, len(seats)))
