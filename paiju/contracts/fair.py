"""The fair-deal record (docs/fairness.md, "The fair-deal record the table emits"): what
the table puts in a fair hand's settlement as ``details.fair`` and records serves as
``Replay.fair_json``, for anyone to check the deal (games/tools/verify_deal.py, the web
client's fair.js).

The table builds it (services/table/fairdeal.py); records checks the one in each settlement
against this type (services/records/settlement.py). The page's key table is this type's
fields (tests/unit/common/test_contracts_settle.py checks it).
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from msgspec import Meta

from paiju.contracts.settle import Game, HandNo, Hex32, RoomId, Seat
from paiju.contracts.typed import BadContract, Contract

ClientSeed = Annotated[str, Meta(pattern="^([0-9a-f]{2}){0,64}$")]  # 0-64 bytes, lowercase hex


class FairRecord(Contract, frozen=True, kw_only=True, omit_defaults=True):
    """One fair hand's reveal, deal layout and engine inputs. Exactly one of ``wall``
    (mahjong) and ``deck`` (the card games) is present; the other is left out of the JSON."""

    fair_version: Annotated[int, Meta(ge=1)]          # games.fair.VERSION
    room_id: RoomId                                   # as committed
    hand_no: HandNo                                   # as committed (first hand: 1)
    commitment: Hex32                                  # as published in HandCommitment
    server_seed: Hex32
    client_seeds: tuple[ClientSeed, ...]               # one per seat, seat 0 first; "" = none
    hand_seed: Hex32
    game: Game                                         # its name in games/registry.py
    options: dict[str, Any]                            # every engine option, defaults filled in
    dealer: Seat
    dealer_from_seed: bool                             # the room's first hand: drawn from the seed
    wall: tuple[str, ...] | None = None                # tile names in draw order
    deck: tuple[str, ...] | None = None                # card names in deal order
    # the engine inputs in order: the room log's act and resolve records without their index
    # and origin (services/table/logrec.py): {"t": "act", "seat", "action", "response"},
    # {"t": "resolve", "decision"}
    actions: tuple[dict[str, Any], ...]

    @classmethod
    def from_object(cls, value: Any) -> FairRecord:
        """The record from decoded JSON (a settlement's ``details.fair``), checked as
        :meth:`decode` checks bytes."""
        try:
            return msgspec.convert(value, cls, strict=True)
        except msgspec.ValidationError as exc:
            raise BadContract(f"{cls.__name__}: {exc}") from None

    def __post_init__(self) -> None:
        # run when the table builds a record and when a reader decodes one
        if (self.wall is None) == (self.deck is None):
            raise ValueError("a fair-deal record holds exactly one of wall and deck")
