"""The settlement message (JetStream ``SETTLE``, subject ``settle.all``): one per finished
hand (:class:`HandSettlement`) and one when a room with hands played closes
(:class:`FinalSettlement`), told apart by ``final``.

The table builds them (services/table/views.py) and publishes :meth:`encode`'s bytes
(services/table/settlements.py, which stamps ``settled_at`` at the first attempt); records
reads them with :func:`decode` and adds the checks that span fields: lengths per seat,
deltas summing to zero, distinct seats, event indexes (services/records/settlement.py).
The JSON keys are the wire names below (``i`` and ``to`` for an event's ``idx`` and
``to_seat``); a change of a key or of its meaning is not compatible with the other
versions running during a rolling release (tests/system/test_mixed_versions.py).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from paiju.contracts.typed import Contract

INT32 = 2**31 - 1
INT63 = 2**63 - 1
# points: a quarter of int63, so that four of them never overflow a sum
AMOUNT_BOUND = INT63 // 4

RoomId = Annotated[int, Meta(ge=1, le=INT63)]
UserId = Annotated[int, Meta(ge=1, le=INT63)]   # guests' and robots' ids are high in int64
HandNo = Annotated[int, Meta(ge=1, le=INT32)]
Seat = Annotated[int, Meta(ge=0, le=INT32)]
Amount = Annotated[int, Meta(ge=-AMOUNT_BOUND, le=AMOUNT_BOUND)]
Int32 = Annotated[int, Meta(ge=-INT32 - 1, le=INT32)]
Game = Annotated[str, Meta(min_length=1)]       # a name of games/registry.py
Hex32 = Annotated[str, Meta(pattern="^[0-9a-f]{64}$")]   # 32 bytes (a seed), lowercase hex


class Payment(Contract, frozen=True, kw_only=True):
    """One line of a hand's ledger: seat ``payer`` pays ``amount`` to seat ``payee``
    (games.engine.Payment). Amounts already include the base score."""

    reason: str
    payer: Seat
    payee: Seat
    amount: Amount
    ref: str = ""


class ReplayEvent(Contract, frozen=True, kw_only=True):
    """One engine event of the hand, as players saw it: the replay."""

    idx: Annotated[int, Meta(ge=0, le=INT32)] = msgspec.field(name="i")  # its index in the hand
    kind: str
    to_seat: Seat | None = msgspec.field(name="to")   # None: public
    event_id: Annotated[int, Meta(ge=0, le=INT32)]    # the frame's ServerFrame event id
    frame: bytes                                      # the ServerFrame (base64 in JSON)
    json: str                                         # the engine event as JSON text


class HandSettlement(Contract, frozen=True, kw_only=True):
    """A finished hand: per-seat ``deltas`` (sum zero), the payments that make them up, the
    engine's details (for a fair hand with ``fair``, the fair-deal record:
    :class:`paiju.contracts.fair.FairRecord`'s JSON) and the events."""

    room_id: RoomId
    hand_no: HandNo
    final: Literal[False] = False
    game: Game
    base_score: Int32
    seats: tuple[UserId, ...]                 # user ids, seat 0 first
    nicknames: tuple[str, ...]                # per seat
    deltas: tuple[Amount, ...]                # per seat; a player's coins move by as much
    payments: tuple[Payment, ...]
    details: dict[str, Any]                   # the engine's settlement details (JSON)
    seed: Hex32                               # the hand seed (docs/fairness.md)
    dealer: Seat
    next_dealer: Seat
    events: tuple[ReplayEvent, ...]
    settled_at: datetime | None = None        # set when first published (always on the wire)

    @property
    def key(self) -> str:
        """The dedupe id (``Nats-Msg-Id``); records writes each key once."""
        return f"{self.room_id}:{self.hand_no}"


class FinalSettlement(Contract, frozen=True, kw_only=True):
    """A room's end: every seat's ``totals`` over its hands (sum zero)."""

    room_id: RoomId
    hand_no: Literal[0] = 0
    final: Literal[True] = True
    game: Game
    base_score: Int32
    seats: tuple[UserId, ...]
    nicknames: tuple[str, ...]
    totals: tuple[Amount, ...]
    hands_played: Annotated[int, Meta(ge=0, le=INT32)]
    reason: Int32                             # paiju.v1 NoticeDismiss.Reason
    doc: str                                  # the reason in words
    settled_at: datetime | None = None

    @property
    def key(self) -> str:
        return f"{self.room_id}:final"


Settlement = HandSettlement | FinalSettlement


class SettleKind(Contract, frozen=True, kw_only=True):
    """Which of the two a message is (the rest of it not read)."""

    final: bool


def decode(raw: bytes | str) -> Settlement:
    """The message in ``raw``, of the type its ``final`` names; BadContract (a ValueError
    naming the type and the place) when it is not JSON or does not fit the type."""
    kind = HandSettlement if not SettleKind.decode(raw).final else FinalSettlement
    return kind.decode(raw)


def plain(value: dict[str, Any]) -> dict[str, Any]:
    """``value`` as a reader decodes it (tuples as lists, keys as text, a contract as its
    object): what a message's ``details`` holds, so that the writer's value equals the
    reader's. The engines' details are JSON-ready (games.engine.Settlement); anything else
    is written as its text rather than failing the hand's settlement."""
    out: dict[str, Any] = msgspec.json.decode(msgspec.json.encode(value, enc_hook=str))
    return out


def now() -> datetime:
    """A ``settled_at``: now, UTC, to the second."""
    return datetime.now(UTC).replace(microsecond=0)
