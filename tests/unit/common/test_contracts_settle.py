"""The settlement message and the fair-deal record (paiju/contracts/settle.py, fair.py):
every game's real settlements, as the table's fold builds them (services/table/views.py),
go through the bytes to records' reader and come back equal; the wire keys are the ones
every release uses, and the release in production reads the new bytes with its own parser;
what the types refuse, they refuse with the place named."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import msgspec
import msgspec.inspect as mi
import pytest

from games import registry
from paiju.contracts import settle as sm
from paiju.contracts.fair import FairRecord
from paiju.contracts.typed import BadContract
from services.records.settlement import MalformedSettlement, parse_settlement
from services.table import facts as ft
from services.table import logrec as lr
from services.table import views
from tests.service.test_records_support import encode, hand_message
from tests.unit.test_fairness_doc import KEYS, Log, fair_hand_ended

ROOT = Path(__file__).resolve().parents[3]
GAMES = [spec.name for spec in registry.all()]   # every game of the registry

HAND_KEYS = {"room_id", "hand_no", "final", "game", "base_score", "seats", "nicknames",
             "deltas", "payments", "details", "seed", "dealer", "next_dealer", "events",
             "settled_at"}
EVENT_KEYS = {"i", "kind", "to", "event_id", "frame", "json"}
PAYMENT_KEYS = {"reason", "payer", "payee", "amount", "ref"}
FINAL_KEYS = {"room_id", "hand_no", "final", "game", "base_score", "seats", "nicknames",
              "totals", "hands_played", "reason", "doc", "settled_at"}


class Fold(Log):
    """A room's records folded with their effects, as the table's actor does."""

    def __init__(self, game: str, total_hands: int) -> None:
        self.fx = views.Effects()
        self.ended: list[ft.HandEnded] = []
        super().__init__(game, total_hands)

    def add(self, rec: lr.Record) -> list[ft.Fact]:
        rec = lr.stamp(rec, self.n)
        self.n += 1
        facts = self.room.apply(rec)
        views.effects(self.room, facts, self.fx)
        self.ended += [f for f in facts if isinstance(f, ft.HandEnded)]
        return facts


@pytest.fixture(scope="module")
def written() -> dict[str, tuple[list[sm.Settlement], list[ft.HandEnded]]]:
    """Per game: the settlements of a two-hand fair room (two hands, then the final one)."""
    out = {}
    for game in GAMES:
        fold = Fold(game, total_hands=2)
        for seat in range(registry.get(game).seats):
            fold.add(lr.Join(seat, 11 + seat, lr.Profile(nickname=f"玩家{seat}", coins=1000)))
        fair_hand_ended(fold, {0: b"seat zero"})
        fair_hand_ended(fold, {})
        out[game] = (list(fold.fx.settle), fold.ended)
    return out


def stamped(msg: sm.Settlement) -> sm.Settlement:
    """As the outbox publishes it (services/table/settlements.py)."""
    assert msg.settled_at is None
    return msg.replace(settled_at=sm.now())


@pytest.mark.parametrize("game", GAMES)
def test_every_games_settlements_go_through_the_bytes_unchanged(written: Any, game: str) -> None:
    messages, ended = written[game]
    assert [type(m) for m in messages] == [sm.HandSettlement, sm.HandSettlement,
                                           sm.FinalSettlement]
    seats = registry.get(game).seats
    for msg, fact in zip(messages[:2], ended, strict=True):
        assert isinstance(msg, sm.HandSettlement)
        sent = stamped(msg)
        data = sent.encode()
        assert sm.decode(data) == sent
        parsed = parse_settlement(data)
        assert (parsed.key, parsed.seats, parsed.deltas) == (msg.key, msg.seats, msg.deltas)
        assert [e.idx for e in parsed.events] == list(range(len(msg.events))) != []
        assert parsed.details == msg.details and parsed.details["fair"]
        # the fair-deal record is typed on both sides and the same
        assert fact.fair is not None and FairRecord.from_object(msg.details["fair"]) == fact.fair
        assert len(fact.fair.client_seeds) == len(msg.seats) == seats
        wire = json.loads(data)
        assert set(wire) == HAND_KEYS
        assert all(set(e) == EVENT_KEYS for e in wire["events"])
        assert all(set(p) == PAYMENT_KEYS for p in wire["payments"])
    final = messages[2]
    assert isinstance(final, sm.FinalSettlement)
    sent = stamped(final)
    assert sm.decode(sent.encode()) == sent and set(json.loads(sent.encode())) == FINAL_KEYS
    parsed = parse_settlement(sent.encode())
    assert parsed.final and parsed.key == f"{final.room_id}:final"
    assert parsed.deltas == tuple(map(sum, zip(messages[0].deltas, messages[1].deltas,
                                               strict=True)))


def released_parser() -> types.ModuleType:
    """records' parser of the release in production (deploy/protos-base.txt), from git."""
    lines = (ROOT / "deploy/protos-base.txt").read_text(encoding="utf-8").splitlines()
    commit = next(line.split()[0] for line in lines if line.strip() and not line.startswith("#"))
    source = subprocess.run(["git", "-C", str(ROOT), "show",
                             f"{commit}:services/records/settlement.py"],
                            capture_output=True, text=True, check=True).stdout
    module = types.ModuleType("released_settlement")
    sys.modules[module.__name__] = module   # its dataclasses look their module up
    try:
        exec(compile(source, "released/services/records/settlement.py", "exec"), module.__dict__)
    finally:
        del sys.modules[module.__name__]
    return module


def test_the_released_records_reads_what_this_table_writes(written: Any) -> None:
    old = released_parser()
    for game in GAMES:
        for msg in written[game][0]:
            sent = stamped(msg)
            mine, theirs = parse_settlement(sent.encode()), old.parse_settlement(sent.encode())
            assert (theirs.key, theirs.seats, theirs.deltas, theirs.details, theirs.settled_at) \
                == (mine.key, mine.seats, mine.deltas, mine.details, mine.settled_at)
            assert [(e.idx, e.to_seat, e.frame, e.json) for e in theirs.events] == [
                (e.idx, e.to_seat, e.frame, e.json) for e in mine.events]
            assert [(x.user_id, x.delta, x.reason) for x in theirs.ledger] == [
                (x.user_id, x.delta, x.reason) for x in mine.ledger]


# ---------------------------------------------------------------------- what the types refuse


def test_keys_the_type_does_not_know_are_ignored() -> None:
    message = hand_message(7, 1, [11, 12, 13, 14], [1, -1, 0, 0]) | {"added_later": [1]}
    assert parse_settlement(encode(message)).key == "7:1"


def test_a_missing_key_or_a_wrong_type_is_named() -> None:
    message = hand_message(7, 1, [11, 12, 13, 14], [1, -1, 0, 0])
    del message["dealer"]
    with pytest.raises(BadContract, match="HandSettlement: Object missing required field `dealer`"):
        sm.decode(encode(message))
    message = hand_message(7, 1, [11, 12, 13, 14], [1, -1, 0, 0]) | {"base_score": 1.5}
    with pytest.raises(BadContract, match=r"Expected `int`, got `float` - at `\$.base_score`"):
        sm.decode(encode(message))


def test_totals_of_a_final_message_must_sum_to_zero() -> None:
    final = sm.FinalSettlement(room_id=7, game="xuezhan", base_score=1, seats=(1, 2, 3, 4),
                               nicknames=("a", "b", "c", "d"), totals=(3, -1, -1, 0),
                               hands_played=1, reason=2, doc="all hands have been played",
                               settled_at=sm.now())
    with pytest.raises(MalformedSettlement, match=r"totals \[3, -1, -1, 0\] do not sum to 0"):
        parse_settlement(final.encode())
    assert parse_settlement(final.replace(totals=(3, -1, -1, -1)).encode()).deltas == (3, -1, -1, -1)


def _fair_hand(written: Any, **changes: Any) -> bytes:
    msg = stamped(written["xuezhan"][0][0])
    return msg.replace(details={**msg.details, "fair": {**msg.details["fair"], **changes}}).encode()


@pytest.mark.parametrize(("changes", "fragment"), [
    ({"server_seed": "00"}, r"FairRecord: Expected `str` matching regex .* `\$.server_seed`"),
    ({"client_seeds": ["zz", "", "", ""]}, r"\$.client_seeds\[0\]"),
    ({"dealer": True}, r"Expected `int`, got `bool` - at `\$.dealer`"),
    ({"deck": ["9c"]}, "exactly one of wall and deck"),
    ({"wall": None}, "exactly one of wall and deck"),
    ({"hand_no": 2}, "the record of room 12345678 hand 2"),
    ({"client_seeds": ["", ""]}, "client_seeds: 2 for 4 seats"),
    ({"actions": None}, r"Expected `array`, got `null` - at `\$.actions`"),
])
def test_a_fair_record_that_does_not_fit_is_refused(written: Any, changes: dict[str, Any],
                                                    fragment: str) -> None:
    with pytest.raises(MalformedSettlement, match=fragment) as refused:
        parse_settlement(_fair_hand(written, **changes))
    assert str(refused.value).startswith("details.fair")


def test_the_fair_record_leaves_out_the_layout_it_does_not_have(written: Any) -> None:
    for game in GAMES:
        fact = written[game][1][0]
        (layout,) = registry.get(game).deal_layout(0)
        other = "deck" if layout == "wall" else "wall"
        data = json.loads(fact.fair.encode())
        assert layout in data and other not in data


# ---------------------------------------------------------------------- the pages


def _json_kind(t: Any) -> str:
    """A field's JSON type in the words of docs/fairness.md's key table."""
    if isinstance(t, mi.UnionType):
        (t,) = [x for x in t.types if not isinstance(x, mi.NoneType)]
    if isinstance(t, mi.VarTupleType | mi.ListType):
        return f"array of {_json_kind(t.item_type)}s"
    kinds = {mi.IntType: "integer", mi.StrType: "string", mi.BoolType: "boolean",
             mi.DictType: "object"}
    return kinds[type(t)]


def test_the_fairness_pages_key_table_is_the_types_fields() -> None:
    info = mi.type_info(FairRecord)
    assert isinstance(info, mi.StructType)
    fields = {f.encode_name: _json_kind(f.type) for f in info.fields}
    documented = {key: re.sub(r" \d+ ", " ", kind) for key, kind in KEYS.items()}
    assert documented == fields


def test_the_services_page_points_to_the_types_and_names_only_their_keys() -> None:
    page = (ROOT / "docs/services.md").read_text(encoding="utf-8")
    section = page.split("A settlement message is", 1)[1].split("## Records", 1)[0]
    assert "`paiju/contracts/settle.py`" in section and "`HandSettlement`" in section
    assert "`FinalSettlement`" in section and '"event_id"' not in page
    keys = {f.encode_name for t in (sm.HandSettlement, sm.FinalSettlement)
            for f in msgspec.structs.fields(t)}
    assert set(re.findall(r"`([a-z_]+)`", section)) - keys == {"fair"}   # a key of details
