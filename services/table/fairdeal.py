"""A room's fair deals (docs/fairness.md, games/fair.py): the commitment to the next hand's
server seed, the seats' client seeds for it, and at the hand's end what lets anyone check
its deal (:class:`~paiju.contracts.fair.FairRecord`: the reveal, the wall or deck, the
actions). Folded from the room's log records (commit, client_seed, start, act, resolve);
the server seed never leaves the table before the hand it seeds is over."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from games import fair, registry
from games.tools.verify_deal import deal_layout
from paiju.contracts.fair import FairRecord
from services.table import logrec as lr


@dataclass
class Pending:
    """The commitment for the next hand and the client seeds taken for it so far."""

    hand_no: int
    server_seed: bytes
    commitment: str
    client_seeds: list[bytes | None]


@dataclass(frozen=True)
class Started:
    """The running hand's reveal and engine inputs: its :class:`FairRecord` but the layout,
    laid out at the hand's end (``FairDeals.record``), when it is published. So a room
    rebuilt mid-hand (one of a thousand a table adopts) shuffles its wall once, not twice."""

    commitment: str
    fields: dict[str, Any]   # FairRecord's, without wall, deck and actions


@dataclass
class FairDeals:
    seats: int
    next: Pending | None = None
    current: Started | None = None   # the running hand's, its actions not yet in
    actions: list[dict[str, Any]] = field(default_factory=list)

    def commit(self, rec: lr.Commit) -> None:
        self.next = Pending(rec.hand_no, bytes.fromhex(rec.server_seed), rec.commitment,
                            [None] * self.seats)

    def client_seed(self, rec: lr.ClientSeed) -> None:
        if self.next is not None and self.next.hand_no == rec.hand_no:
            self.next.client_seeds[rec.seat] = bytes.fromhex(rec.seed)

    def hand_seed(self, room_id: int, hand_no: int) -> bytes | None:
        """The seed of hand ``hand_no`` from its committed server seed and the client seeds
        (None when no commitment was made for it)."""
        p = self.next
        if p is None or p.hand_no != hand_no:
            return None
        return fair.hand_seed(room_id, hand_no, p.server_seed, p.client_seeds)

    def started(self, rec: lr.Start, room_id: int, game: str, options: dict[str, Any]) -> None:
        p, self.next, self.actions = self.next, None, []
        self.current = None
        if p is None or p.hand_no != rec.hand_no:
            return   # no commitment for this hand: the table never starts one so (tests do)
        reveal = fair.reveal(room_id, rec.hand_no, p.server_seed, p.client_seeds)
        self.current = Started(reveal["commitment"], dict(
            fair_version=reveal["fair_version"], room_id=room_id, hand_no=rec.hand_no,
            commitment=reveal["commitment"], server_seed=reveal["server_seed"],
            client_seeds=tuple(reveal["client_seeds"]), hand_seed=rec.seed, game=game,
            # every option, defaults filled in: a verifier never guesses one
            options=registry.get(game).parse_options(options), dealer=rec.dealer,
            dealer_from_seed=rec.dealer_from_seed))

    def acted(self, rec: lr.Act | lr.Resolve) -> None:
        if self.current is not None:
            data = lr.encode(rec)
            data.pop("i")
            data.pop("by", None)
            self.actions.append(data)

    def record(self) -> FairRecord | None:
        """At the hand's end: everything games.tools.verify_deal checks (its replay form)."""
        if self.current is None:
            return None
        fields = self.current.fields
        layout = deal_layout(fields["game"], bytes.fromhex(fields["hand_seed"]))
        return FairRecord(**fields, wall=_names(layout.get("wall")),
                          deck=_names(layout.get("deck")), actions=tuple(self.actions))


def _names(names: list[str] | None) -> tuple[str, ...] | None:
    return None if names is None else tuple(names)
