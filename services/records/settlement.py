"""SETTLE messages as records writes them.

The message is :mod:`paiju.contracts.settle` (the table writes the same types): decoding
checks every key's type and range. This module adds what spans fields, and refuses with
:class:`MalformedSettlement` what records must never write: values per seat that do not
match the seats, deltas or totals that do not sum to zero, seats that repeat, an event for
no seat or twice, a fair-deal record (``details.fair``, paiju.contracts.fair) that does not
fit its type or belongs to another hand. A malformed message is terminated by the
consumer, never retried. Pure: bytes in, frozen values out.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from paiju.contracts import settle
from paiju.contracts.fair import FairRecord
from paiju.contracts.settle import ReplayEvent
from paiju.contracts.typed import BadContract

__all__ = ["LedgerLine", "MalformedSettlement", "ReplayEvent", "Settlement", "parse_settlement"]


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
class Settlement:
    """What records writes of a hand settlement (``final`` False, ``hand_no`` >= 1) or of a
    room's final message (``final`` True, ``hand_no`` 0, ``deltas`` = the room totals, no
    ledger, no events)."""

    room_id: int
    hand_no: int
    final: bool
    game: str
    base_score: int
    seats: tuple[int, ...]
    nicknames: tuple[str, ...]
    deltas: tuple[int, ...]
    details: dict[str, Any]
    settled_at: datetime       # naive UTC
    ledger: tuple[LedgerLine, ...]
    events: tuple[ReplayEvent, ...]   # by index

    @property
    def key(self) -> str:
        """The dedupe id the table publishes with (``Nats-Msg-Id``)."""
        return f"{self.room_id}:final" if self.final else f"{self.room_id}:{self.hand_no}"


def _payment_ledger(payments: tuple[settle.Payment, ...], seats: tuple[int, ...],
                    deltas: tuple[int, ...]) -> tuple[LedgerLine, ...] | None:
    """Two rows per payment (payer -amount, payee +amount), or None when the payments do
    not net to ``deltas`` (then the ledger falls back to one row per seat)."""
    if not payments:
        return None
    lines: list[LedgerLine] = []
    net = [0] * len(seats)
    for p in payments:
        if p.payer >= len(seats) or p.payee >= len(seats) or p.amount <= 0:
            return None
        reason = p.reason or "payment"
        net[p.payer] -= p.amount
        net[p.payee] += p.amount
        lines.append(LedgerLine(seats[p.payer], p.payer, -p.amount, reason, seats[p.payee]))
        lines.append(LedgerLine(seats[p.payee], p.payee, p.amount, reason, seats[p.payer]))
    return tuple(lines) if tuple(net) == deltas else None


def _ledger(msg: settle.HandSettlement) -> tuple[LedgerLine, ...]:
    lines = _payment_ledger(msg.payments, msg.seats, msg.deltas)
    if lines is not None:
        return lines
    return tuple(LedgerLine(uid, seat, d, "hand", None)
                 for seat, (uid, d) in enumerate(zip(msg.seats, msg.deltas, strict=True)) if d)


def _events(msg: settle.HandSettlement) -> tuple[ReplayEvent, ...]:
    events = tuple(sorted(msg.events, key=lambda e: e.idx))
    for e in events:
        if e.to_seat is not None and e.to_seat >= len(msg.seats):
            raise MalformedSettlement(f"events[{e.idx}].to: {e.to_seat} is not a seat or null")
    if len({e.idx for e in events}) != len(events):
        raise MalformedSettlement("events: duplicate index")
    return events


def _check_fair(msg: settle.HandSettlement) -> None:
    """The fair-deal record, when the hand has one, fits its type and is this hand's."""
    if "fair" not in msg.details:
        return
    try:
        record = FairRecord.from_object(msg.details["fair"])
    except BadContract as exc:
        raise MalformedSettlement(f"details.fair: {exc}") from None
    if (record.room_id, record.hand_no, record.game) != (msg.room_id, msg.hand_no, msg.game):
        raise MalformedSettlement(
            f"details.fair: the record of room {record.room_id} hand {record.hand_no} "
            f"({record.game}) in the settlement of room {msg.room_id} hand {msg.hand_no}")
    if len(record.client_seeds) != len(msg.seats):
        raise MalformedSettlement(f"details.fair.client_seeds: {len(record.client_seeds)} "
                                  f"for {len(msg.seats)} seats")


def _per_seat(name: str, values: tuple[Any, ...], seats: int) -> None:
    if len(values) != seats:
        raise MalformedSettlement(f"{name}: {len(values)} values for {seats} seats")


def _settled_at(msg: settle.Settlement) -> datetime:
    """The message's timestamp as naive UTC (one without an offset is taken as UTC)."""
    when = msg.settled_at
    if when is None:
        raise MalformedSettlement("settled_at: missing")
    if when.tzinfo is not None:
        when = when.astimezone(UTC).replace(tzinfo=None)
    return when


def parse_settlement(payload: bytes) -> Settlement:
    """Decode and validate one SETTLE message."""
    try:
        msg = settle.decode(payload)
    except BadContract as exc:
        raise MalformedSettlement(str(exc)) from None
    seats = msg.seats
    if not seats or len(set(seats)) != len(seats):
        raise MalformedSettlement(f"seats: expected distinct user ids, got {list(seats)}")
    _per_seat("nicknames", msg.nicknames, len(seats))
    if isinstance(msg, settle.FinalSettlement):
        _per_seat("totals", msg.totals, len(seats))
        if sum(msg.totals) != 0:
            raise MalformedSettlement(f"totals {list(msg.totals)} do not sum to 0")
        return Settlement(
            room_id=msg.room_id, hand_no=0, final=True, game=msg.game,
            base_score=msg.base_score, seats=seats, nicknames=msg.nicknames,
            deltas=msg.totals, details={"hands_played": msg.hands_played, "reason": msg.reason},
            settled_at=_settled_at(msg), ledger=(), events=())
    _per_seat("deltas", msg.deltas, len(seats))
    if sum(msg.deltas) != 0:
        raise MalformedSettlement(f"deltas {list(msg.deltas)} do not sum to 0")
    _check_fair(msg)
    return Settlement(
        room_id=msg.room_id, hand_no=msg.hand_no, final=False, game=msg.game,
        base_score=msg.base_score, seats=seats, nicknames=msg.nicknames, deltas=msg.deltas,
        details=msg.details, settled_at=_settled_at(msg), ledger=_ledger(msg),
        events=_events(msg))
