"""What the ``flow_*`` roles of :class:`~games.mahjong.flow.MahjongState` share: the fields
of a hand and the calls one role makes on another.

Every role mixin subclasses :class:`HandCore`, so a type checker sees the whole state in
each role. The fields are annotations only (``MahjongState.start`` and ``from_json`` set
them). The abstract methods are declarations: their definitions live in
:mod:`games.mahjong.flow` and the role modules, so ``MahjongState`` cannot be built (nor
type-checked) if one of them is missing.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any

from games.engine import Action, Event, Payment
from games.mahjong import format_counts, tile_name
from games.mahjong.flow_records import (
    Birds,
    HaidiOffer,
    Kong,
    OpeningWins,
    OpenWindow,
    PassBlock,
    TurnContext,
)
from games.mahjong.hooks import VariantRules
from games.mahjong.meld import Meld
from games.mahjong.wall import Wall
from games.rng import Stream


class HandCore(ABC):
    """The state of one mahjong hand and the cross-role interface of its flow."""

    # The variant's hooks (``XueZhanRules`` / ``ChangshaRules``) and validated options.
    rules: VariantRules
    options: dict[str, Any]
    _out: list[Event]

    seed: int | str  # an int seed, or a 32-byte hand seed as hex (games.fair)
    dealer: int
    wall: Wall
    rng: Stream
    stage: str  # "exchange", "void", "opening", "play", "window", "haidi" or "over"
    turn: int
    # Per seat: 27 tile counts, melds, discards, tiles won on (胡), the last drawn tile.
    hands: list[list[int]]
    initial_hands: list[list[int]]
    melds: list[list[Meld]]
    discards: list[list[int]]
    won_tiles: list[list[int]]
    drawn: list[int | None]
    # Exchange three (换三张) and void suit (定缺), per seat.
    exchange_sel: list[list[int] | None]
    exchange_recv: list[list[int] | None]
    exchange_dir: str | None
    voids: list[str | None]
    # Changsha opening and midway wins (起手胡, 中途四喜 / 六六顺), None until there are any.
    opening: OpeningWins | None
    # The open response window (see WindowMixin.open_window), or None.
    window: OpenWindow | None
    window_seq: int
    # Per seat: 0 while playing, else the order in which the seat won.
    win_order: list[int]
    wins: list[dict[str, Any]]
    # 过水不胡 / 过碰 state, per seat.
    pass_block: list[PassBlock | None]
    pass_peng: list[list[int]]
    kongs: list[Kong]
    ledger: list[Payment]
    ctx: TurnContext
    # The Changsha haidi (海底) offer once the wall is down to its last tile.
    haidi: HaidiOffer | None
    locked: list[bool]
    end_reason: str | None
    # Changsha birds (扎鸟) once drawn.
    birds: Birds | None
    extra: dict[str, Any]

    # ------------------------------------------------------------------ MahjongState

    @abstractmethod
    def to_act(self) -> tuple[int, ...]: ...

    @abstractmethod
    def legal_actions(self, seat: int) -> list[Action]: ...

    @abstractmethod
    def verify(self, seat: int, action: Action) -> None: ...

    @abstractmethod
    def parse_tiles(self, action: Action, count: int) -> list[int]: ...

    @abstractmethod
    def emit(self, kind: str, data: dict[str, Any], to: int | None = None) -> None: ...

    @abstractmethod
    def pay(self, reason: str, payer: int, payee: int, amount: int, ref: str = "") -> None: ...

    @abstractmethod
    def base(self) -> int: ...

    @abstractmethod
    def active(self, seat: int) -> bool: ...

    @abstractmethod
    def next_active(self, seat: int) -> int: ...

    # ------------------------------------------------------------------ notation

    @staticmethod
    def name(tile: int) -> str:
        return tile_name(tile)

    @staticmethod
    def names(tiles: Iterable[int]) -> list[str]:
        return [tile_name(t) for t in tiles]

    @staticmethod
    def fmt(counts: list[int]) -> str:
        return format_counts(counts)

    # ------------------------------------------------------------------ SetupMixin

    @abstractmethod
    def _setup_to_act(self) -> tuple[int, ...]: ...

    # ------------------------------------------------------------------ TurnMixin

    @abstractmethod
    def complete_kong(self, seat: int, kind: str, tile: int, source: int | None) -> None: ...

    @abstractmethod
    def next_turn(self, seat: int) -> None: ...

    @abstractmethod
    def draw_for(self, seat: int, replacement: int | None = None) -> int: ...

    @abstractmethod
    def _self_draw_score(self, seat: int) -> dict[str, Any] | None: ...

    # ------------------------------------------------------------------ WindowMixin

    @abstractmethod
    def open_window(self, source: int, tile: int, trigger: str,
                    kong_kind: str | None = None,
                    tiles: list[int] | None = None) -> bool: ...

    @abstractmethod
    def chi_pairs_for(self, seat: int, tile: int) -> list[tuple[int, int]]: ...

    @abstractmethod
    def record_wins(self, trigger: str, source: int, tile: int,
                    results: list[tuple[int, dict[str, Any]]]) -> None: ...

    @abstractmethod
    def end_hand(self, reason: str) -> None: ...

    @abstractmethod
    def offer_haidi(self, seat: int) -> None: ...
