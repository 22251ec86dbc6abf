"""What one room log record caused, as the fold (services/table/room.py) reports it: plain
frozen facts, in order. services/table/views.py turns them into frames, settlements and
directory changes; nothing here knows the wire."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from games.engine import Event, Payment
from paiju.contracts.fair import FairRecord
from services.table.seat import Seat


@dataclass(frozen=True, slots=True)
class HandContext:
    """Room facts the engine does not know, as its events' frames show them."""

    room_id: int
    hand_no: int
    total_hands: int
    base_score: int
    user_ids: tuple[int, ...]
    nicknames: tuple[str, ...]

    def mapping(self) -> dict[str, Any]:
        return {"room_id": self.room_id, "hand_no": self.hand_no,
                "total_hands": self.total_hands, "base_score": self.base_score,
                "user_ids": list(self.user_ids), "nicknames": list(self.nicknames)}


@dataclass(frozen=True, slots=True)
class HandEvent:
    index: int            # within the hand
    event: Event
    ctx: HandContext
    # not part of the fact: what a reader made of this very event, kept for a later reader
    # (views.py: its frame, from the fold of its record until the hand's settlement)
    memo: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Changed:
    """The room's directory entry changed (membership, status, hand)."""


@dataclass(frozen=True, slots=True)
class PlayerChanged:
    """``change``: join, leave, ready, unready, online, offline; ``players``: the seated
    players at that moment (copies)."""

    change: str
    seat: int
    user_id: int
    players: tuple[tuple[int, Seat], ...]


@dataclass(frozen=True, slots=True)
class SeatMoved:
    """A user's seat in the ``seats`` directory: a seat, or None when he left."""

    user_id: int
    seat: int | None


@dataclass(frozen=True, slots=True)
class SatDown:
    """A new player sat down (proximity alerts are due)."""

    seat: int


@dataclass(frozen=True, slots=True)
class Entrusted:
    seat: int
    on: bool
    count: int            # the seat's cancels left


@dataclass(frozen=True, slots=True)
class DismissAsked:
    seconds: int          # left of the vote


@dataclass(frozen=True, slots=True)
class DismissRefused:
    pass


@dataclass(frozen=True, slots=True)
class EngineEvents:
    events: tuple[HandEvent, ...]


@dataclass(frozen=True, slots=True)
class HandEnded:
    hand_no: int
    seed: bytes
    dealer: int
    next_dealer: int
    deltas: tuple[int, ...]
    payments: tuple[Payment, ...]
    details: Mapping[str, Any]
    user_ids: tuple[int, ...]
    nicknames: tuple[str, ...]
    events: tuple[HandEvent, ...]
    fair: FairRecord | None = None   # the deal's check (fairdeal.py); None: not fair


@dataclass(frozen=True, slots=True)
class Committed:
    """The table committed to the server seed of hand ``hand_no`` (public)."""

    hand_no: int
    commitment: str


@dataclass(frozen=True, slots=True)
class Closed:
    reason: int           # NoticeDismiss.Reason
    doc: str
    totals: tuple[int, ...]
    hands_played: int


Fact = (Changed | PlayerChanged | SeatMoved | SatDown | Entrusted | DismissAsked
        | DismissRefused | EngineEvents | HandEnded | Committed | Closed)
