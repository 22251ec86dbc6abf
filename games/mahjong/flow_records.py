"""The small records a mahjong hand keeps besides tiles and melds: the open response window,
the turn context, kongs and their money, a seat's pass block (过水), the Changsha opening
and midway wins, haidi offer and birds.

Each has ``to_dict``/``from_dict`` giving exactly the JSON the hand serialized before these
were classes (seat keys as strings), so a serialized hand reads and writes the same bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from games.arbitration import Response


@dataclass(slots=True)
class OpenWindow:
    """A response window (响应窗口) on ``tile`` discarded or shown by ``source``.

    ``trigger``: discard, rob_kong (抢杠胡), kaigang_reveal (开杠, any of ``tiles``) or haidi.
    ``candidates``: per eligible seat, the kinds it may answer (``pass`` included);
    ``responses``: the answers so far; ``hu_tiles``: per seat that may win, the tile its best
    win takes; ``kong_kind``: for rob_kong, the kind of the kong being robbed.
    """

    id: int
    source: int
    tile: int
    trigger: str
    tiles: list[int]
    candidates: dict[int, list[str]]
    hu_tiles: dict[int, int]
    responses: dict[int, Response] = field(default_factory=dict)
    kong_kind: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "source": self.source, "tile": self.tile,
                "trigger": self.trigger, "tiles": list(self.tiles),
                "candidates": {str(s): list(k) for s, k in self.candidates.items()},
                "responses": {str(s): r.to_dict() for s, r in self.responses.items()},
                "hu_tiles": {str(s): t for s, t in self.hu_tiles.items()},
                "extra": {} if self.kong_kind is None else {"kind": self.kong_kind}}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> OpenWindow:
        return cls(
            data["id"], data["source"], data["tile"], data["trigger"], list(data["tiles"]),
            {int(s): list(k) for s, k in data["candidates"].items()},
            {int(s): t for s, t in data["hu_tiles"].items()},
            {int(s): Response(r["kind"], tuple(r["tiles"])) for s, r in data["responses"].items()},
            data["extra"].get("kind"),
        )


@dataclass(slots=True)
class TurnContext:
    """What the current turn and the hand so far mean for win flags and kong money.

    ``kong``: id of the kong whose replacement the seat to act just drew (杠上开花);
    ``shot``: id of the kong whose replacement was the last discard (杠上炮, 呼叫转移);
    ``first``: per seat, no discard made yet (天胡 / 地胡); ``claimed``: a claim or kong
    happened; ``discards_made``: discards so far; ``start_stage``: the first phase of the
    hand; ``haidi_draw``: the seat to act drew the Changsha 海底 tile.
    """

    first: list[bool]
    kong: int | None = None
    shot: int | None = None
    claimed: bool = False
    discards_made: int = 0
    start_stage: str = ""
    haidi_draw: bool = False

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kong": self.kong, "shot": self.shot, "first": list(self.first),
                               "claimed": self.claimed, "discards_made": self.discards_made,
                               "start_stage": self.start_stage}
        if self.haidi_draw:  # absent until the haidi tile is drawn, as it always was
            out["haidi_draw"] = True
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TurnContext:
        return cls(list(data["first"]), data["kong"], data["shot"], data["claimed"],
                   data["discards_made"], data["start_stage"], bool(data.get("haidi_draw")))


@dataclass(slots=True)
class Kong:
    """A kong (杠) as the ledger needs it: ``id`` (its index in the hand's kongs), the ``seat``
    that made it, its ``kind`` (the action) and ``tile``; ``source`` the seat whose discard it
    took (None otherwise); ``origin`` "claimed", "concealed" or "added" (onto a peng);
    ``fresh`` the fourth tile was just drawn; ``payments`` the ledger indices of the money it
    earned; ``transferred`` that money went on to a winner by 呼叫转移."""

    id: int
    seat: int
    kind: str
    tile: int
    source: int | None
    origin: str
    fresh: bool
    payments: list[int] = field(default_factory=list)
    transferred: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "seat": self.seat, "kind": self.kind, "tile": self.tile,
                "source": self.source, "origin": self.origin, "fresh": self.fresh,
                "payments": list(self.payments), "transferred": self.transferred}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Kong:
        return cls(data["id"], data["seat"], data["kind"], data["tile"], data["source"],
                   data["origin"], data["fresh"], list(data["payments"]), data["transferred"])


@dataclass(frozen=True, slots=True)
class PassBlock:
    """What a seat that let a win pass (过水不胡) may not win on until its next draw:
    ``mode`` "all" (nothing), "tile" (the passed ``tiles``), or "value" (nothing worth
    ``worth`` or less)."""

    mode: str
    tiles: tuple[int, ...] = ()
    worth: int = 0

    def blocks(self, tile: int, worth: int) -> bool:
        """Whether a win on ``tile`` worth ``worth`` is blocked."""
        if self.mode == "all":
            return True
        if self.mode == "tile":
            return tile in self.tiles
        return worth <= self.worth

    def to_dict(self) -> dict[str, Any]:
        if self.mode == "tile":
            return {"mode": "tile", "tiles": list(self.tiles)}
        if self.mode == "value":
            return {"mode": "value", "worth": self.worth}
        return {"mode": self.mode}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PassBlock:
        return cls(data["mode"], tuple(data.get("tiles", ())), data.get("worth", 0))


@dataclass(frozen=True, slots=True)
class MidwayWin:
    """A Changsha midway win (中途四喜 ``midway_four``, 中途六六顺 ``midway_two_triplets``) and
    the tiles (names) that made it: the quad's tile, or the two triplets' tiles."""

    kind: str
    tiles: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.kind, "tiles": list(self.tiles)}


@dataclass(slots=True)
class OpeningWins:
    """Changsha opening wins (起手胡) once there are any: ``pending`` per seat still to answer,
    the types its dealt hand shows; ``declared`` per seat, the types it declared; ``midway``
    per seat, the midway wins it declared during play."""

    pending: dict[int, list[str]] = field(default_factory=dict)
    declared: dict[int, list[str]] = field(default_factory=dict)
    midway: dict[int, list[MidwayWin]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"pending": {str(s): t for s, t in self.pending.items()},
                               "declared": {str(s): t for s, t in self.declared.items()}}
        if self.midway:  # absent until the first midway win, as it always was
            out["midway"] = {str(s): [w.to_dict() for w in ws] for s, ws in self.midway.items()}
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> OpeningWins:
        return cls({int(s): list(t) for s, t in data["pending"].items()},
                   {int(s): list(t) for s, t in data["declared"].items()},
                   {int(s): [MidwayWin(w["type"], tuple(w["tiles"])) for w in ws]
                    for s, ws in data.get("midway", {}).items()})


@dataclass(slots=True)
class HaidiOffer:
    """The Changsha last tile (海底) offered seat by seat from ``first``: ``offered`` seats
    asked so far (1..4), ``taker`` the seat that took it (None while nobody has)."""

    first: int
    offered: int = 1
    taker: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"first": self.first, "offered": self.offered, "taker": self.taker}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> HaidiOffer:
        return cls(data["first"], data["offered"], data["taker"])


@dataclass(frozen=True, slots=True)
class Birds:
    """Changsha birds (扎鸟) drawn for a win: the tiles (names), the seat they are counted
    from, the number of birds on each seat, and whether they came from the wall (else the
    海底 tile itself stood in as the only bird)."""

    tiles: tuple[str, ...]
    origin: int
    hits: tuple[int, ...]
    from_wall: bool

    def to_dict(self) -> dict[str, Any]:
        return {"tiles": list(self.tiles), "origin": self.origin, "hits": list(self.hits),
                "from_wall": self.from_wall}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Birds:
        return cls(tuple(data["tiles"]), data["origin"], tuple(data["hits"]), data["from_wall"])


def optional_dict(record: OpenWindow | PassBlock | HaidiOffer | Birds | None
                  ) -> dict[str, Any] | None:
    """A record's JSON form, None for none."""
    return None if record is None else record.to_dict()
