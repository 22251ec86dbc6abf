"""The mutable record of one Dadun deal, shared by the phase modules, and its JSON form.

Cards are integer codes of :mod:`games.dadun.cards`; every list is JSON-ready so that
``to_json``/``from_json`` round-trip exactly. Team ids: 0 is the banker's side (or the alone
player), 1 the other side.
"""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass, field, fields
from typing import Any

SEATS = 4
# Fields added after deals were first serialized: a serialized deal may lack them (defaults).
LATER_FIELDS = frozenset({"fry_played"})


@dataclass(slots=True)
class DeskPlay:
    """One play of the current trick; ``combo`` holds the accepted reading's fields (a short
    last-play airplane can be read several ways, so it is kept rather than re-classified)."""

    seat: int
    cards: list[int]
    cls: int
    combo: dict[str, Any]


@dataclass(slots=True)
class Deal:
    options: dict[str, Any]
    seed: int | str  # an int seed, or a 32-byte hand seed as hex (games.fair)
    banker: int
    hands: list[list[int]]
    dealt: list[list[int]]
    phase: str = "alone"
    ask_order: list[int] = field(default_factory=list)
    ask_index: int = 0
    alone_seat: int | None = None
    alone_dark: bool = False
    friend_card: int | None = None
    friend_seat: int | None = None
    friend_public: bool = False
    turn: int | None = None
    must_play: bool = False
    token: str = ""
    token_salt: str = ""
    token_counter: int = 0
    desk: list[DeskPlay] = field(default_factory=list)
    desk_points: int = 0
    last_player: int | None = None
    passed: list[int] = field(default_factory=list)
    round_index: int = 1
    round_serial: int = 0
    catch: list[int] = field(default_factory=lambda: [0] * SEATS)
    over_order: list[int] = field(default_factory=lambda: [0] * SEATS)
    bomb_score: list[int] = field(default_factory=lambda: [0] * SEATS)
    bomb_odds: list[int] = field(default_factory=lambda: [0] * SEATS)
    bomb_types: list[list[int]] = field(default_factory=lambda: [[] for _ in range(SEATS)])
    bomb_payments: list[dict[str, Any]] = field(default_factory=list)
    fry_played: list[int] = field(default_factory=lambda: [0] * SEATS)

    # -- derived facts -------------------------------------------------------------------

    @property
    def is_alone_mode(self) -> bool:
        return self.alone_seat is not None

    def to_act(self) -> tuple[int, ...]:
        if self.phase == "alone":
            return (self.ask_order[self.ask_index],)
        if self.phase == "friend":
            return (self.banker,)
        if self.phase == "play" and self.turn is not None:
            return (self.turn,)
        return ()

    def team_of(self, seat: int) -> int:
        if self.alone_seat is not None:
            return 0 if seat == self.alone_seat else 1
        return 0 if seat in (self.banker, self.friend_seat) else 1

    def partner(self, seat: int) -> int | None:
        """The seat's true teammate in team mode; None in alone mode or before the friend."""
        if self.alone_seat is not None or self.friend_seat is None:
            return None
        return next(s for s in range(SEATS) if s != seat and self.team_of(s) == self.team_of(seat))

    def active(self, seat: int) -> bool:
        """Still holding cards (and the deal running)."""
        return bool(self.hands[seat])

    def next_active(self, seat: int) -> int:
        for step in range(1, SEATS + 1):
            nxt = (seat + step) % SEATS
            if self.hands[nxt]:
                return nxt
        raise AssertionError("no seat holds cards")

    def next_out_order(self) -> int:
        return max(self.over_order) + 1

    def new_token(self) -> str:
        self.token_counter += 1
        self.token = f"{self.token_salt}{self.token_counter}"
        return self.token

    # -- persistence ---------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Deal:
        names = {f.name for f in fields(cls)}
        if set(data) - names or names - set(data) - LATER_FIELDS:
            raise ValueError("not a serialized Dadun deal")
        values = dict(data)
        values["desk"] = [DeskPlay(**d) for d in data["desk"]]
        return cls(**values)

    def copy(self) -> Deal:
        return copy.deepcopy(self)
