"""The mutable record of one Dou Dizhu hand, shared by the phase modules, and its JSON form.

Cards are codes of :mod:`games.doudizhu.cards`; every field is JSON-ready, so that
``to_json``/``from_json`` round-trip exactly. Seats are 0..2 and play goes 0 -> 1 -> 2 -> 0.
"""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass, field, fields
from typing import Any

SEATS = 3
HAND_SIZE = 17
BOTTOM_SIZE = 3


@dataclass(slots=True)
class TopPlay:
    """The play that leads the current trick: who played it, its cards and its reading."""

    seat: int
    cards: list[int]
    kind: str
    length: int
    key: int


@dataclass(slots=True)
class Deal:
    """One hand. ``phase``: "call" (叫地主), "rob" (抢地主), "play", "over".

    * ``first_caller`` - the seat asked first (``new_hand``'s dealer); ``deal_no`` counts the
      redeals after three passes (0 for the first deal).
    * ``asking`` - the seats still to be asked in this bidding round, next first;
      ``caller`` - who called; ``final_ask`` - the caller's last word after a rob is on.
    * ``landlord`` - the current bidder during bidding, then the landlord (地主).
    * ``bid_mult`` - the bidding multiplier; ``bombs``/``rockets`` - played so far.
    * ``plays`` - plays made per seat (for spring / anti-spring); ``passes`` - passes since
      the top play; ``winner`` - the seat that went out; ``void`` - a 流局 (all passed).
    """

    options: dict[str, Any]
    seed: int | str  # an int seed, or a 32-byte hand seed as hex (games.fair)
    first_caller: int
    hands: list[list[int]]
    dealt: list[list[int]]
    bottom: list[int]
    deal_no: int = 0
    phase: str = "call"
    asking: list[int] = field(default_factory=list)
    caller: int | None = None
    final_ask: bool = False
    bids: list[list[Any]] = field(default_factory=list)  # [seat, kind, "yes"/"no"]
    landlord: int | None = None
    bid_mult: int = 1
    turn: int | None = None
    top: TopPlay | None = None
    passes: int = 0
    trick: list[list[Any]] = field(default_factory=list)  # [seat, cards] ([] for a pass)
    played: list[list[int]] = field(default_factory=lambda: [[] for _ in range(SEATS)])
    plays: list[int] = field(default_factory=lambda: [0] * SEATS)
    bombs: int = 0
    rockets: int = 0
    winner: int | None = None
    void: bool = False

    def to_act(self) -> tuple[int, ...]:
        if self.phase in ("call", "rob"):
            return (self.asking[0],)
        if self.phase == "play" and self.turn is not None:
            return (self.turn,)
        return ()

    def is_farmer(self, seat: int) -> bool:
        return self.landlord is not None and seat != self.landlord

    # -- persistence ---------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Deal:
        if not isinstance(data, dict) or set(data) != {f.name for f in fields(cls)}:
            raise ValueError("not a serialized Dou Dizhu hand")
        values = dict(data)
        if data["top"] is not None:
            values["top"] = TopPlay(**data["top"])
        return cls(**values)

    def copy(self) -> Deal:
        return copy.deepcopy(self)
