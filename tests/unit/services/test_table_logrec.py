"""The room log's typed records (services/table/logrec.py): every record kind written the
way the table always wrote it reads back to the same bytes (old logs still fold), and a
malformed record is refused with an error that names the record and the field."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from games.arbitration import Decision
from games.engine import Action
from services.table import logrec as lr

# Records exactly as the table wrote them before the typed records (dict literals of the
# old actor.py / create_record, with the index first): the logs in JetStream look like this.
OLD_LOG: list[dict[str, Any]] = [
    {"i": 0, "t": "create", "room_id": 12345678, "game": "xuezhan",
     "options": {"turn_seconds": 9, "exchange_three": True},
     "timers": {"turn_seconds": 15.0, "window_seconds": 8.0, "alone_seconds": 10.0},
     "base_score": 2, "total_hands": 4, "min_hands": 0, "password_hash": "",
     "entrust_cancels": 3, "creator_id": 7,
     "play_desc": json.dumps({"exchange_three": True, "turn_seconds": 9}, sort_keys=True)},
    {"i": 1, "t": "join", "seat": 0, "user_id": 7,
     "profile": {"nickname": "u7", "head_url": "", "sex": 1, "coins": 100, "ip": "10.0.0.1",
                 "lat": 30.1, "lng": 104.2, "login_address": "Chengdu"},
     "session": "s-1", "at": 1700000000.5},
    {"i": 2, "t": "join", "seat": 1, "user_id": 8,
     "profile": {"nickname": "u8", "head_url": "", "sex": 0, "coins": 0, "ip": "",
                 "lat": 0.0, "lng": 0.0, "login_address": ""}},
    {"i": 3, "t": "online", "seat": 0, "session": "s-2", "at": 0.0},
    {"i": 4, "t": "online", "seat": 1},
    {"i": 5, "t": "offline", "seat": 1},
    {"i": 6, "t": "ready", "seat": 0, "ready": True},
    {"i": 7, "t": "ready", "seat": 1, "ready": True, "by": "timeout"},
    {"i": 8, "t": "start", "hand_no": 1, "seed": "5e" * 32, "dealer": 3},
    {"i": 9, "t": "act", "seat": 3, "action": {"kind": "discard", "tiles": ["5m"]},
     "by": "player", "response": False},
    {"i": 10, "t": "act", "seat": 0, "action": {"kind": "peng", "ref": "4"}, "by": "timeout",
     "response": True},
    {"i": 11, "t": "resolve", "decision": Decision(4, True, "peng", (), None, (), ()).to_dict()},
    {"i": 12, "t": "entrust", "seat": 2, "reason": "timeout"},
    {"i": 13, "t": "cancel_entrust", "seat": 2},
    {"i": 14, "t": "dismiss_apply", "seat": 1, "seconds": 60, "until": 1700000060.25},
    {"i": 15, "t": "dismiss_vote", "seat": 2, "agree": False, "seconds": 41},
    {"i": 16, "t": "dismiss_result", "agreed": False},
    {"i": 17, "t": "leave", "seat": 1},
    {"i": 18, "t": "owner", "instance": "table-a-1", "boot": "0a1b2c3d4e5f"},
    {"i": 19, "t": "close", "reason": 3, "doc": "a player left after the minimum number of hands"},
]


# Records of fair deals (docs/fairness.md): a commitment, a client seed, a hand started
# from a 32-byte hand seed whose first dealer was drawn from it.
FAIR_LOG: list[dict[str, Any]] = [
    {"i": 20, "t": "commit", "hand_no": 2, "server_seed": "ab" * 32, "commitment": "cd" * 32},
    {"i": 21, "t": "client_seed", "seat": 1, "hand_no": 2, "seed": "0f" * 32},
    {"i": 22, "t": "start", "hand_no": 2, "seed": "12" * 32, "dealer": 1,
     "dealer_from_seed": True},
]


@pytest.mark.parametrize("rec", FAIR_LOG, ids=lambda r: str(r["t"]))
def test_fair_deal_records_read_back_to_the_same_bytes(rec: dict[str, Any]) -> None:
    typed = lr.decode(json.loads(json.dumps(rec)))
    assert json.dumps(lr.encode(typed)) == json.dumps(rec)


@pytest.mark.parametrize("seed", ["zz" * 32, "ab" * 31, "ab" * 33, "AB" * 32, 42, 1.5])
def test_a_start_seed_is_32_bytes_of_lower_case_hex(seed: object) -> None:
    """The table writes a hand's seed as games.fair.hand_seed(...).hex(): nothing else folds."""
    with pytest.raises(lr.LogRecordError, match="'seed' must be 32 bytes as lower-case hex"):
        lr.decode({"i": 3, "t": "start", "hand_no": 1, "seed": seed, "dealer": 0})


@pytest.mark.parametrize("old", OLD_LOG, ids=lambda r: str(r["t"]))
def test_every_old_record_reads_back_to_the_same_bytes(old: dict[str, Any]) -> None:
    rec = lr.decode(json.loads(json.dumps(old)))
    assert type(rec).KIND == old["t"] and rec.i == old["i"]
    assert json.dumps(lr.encode(rec)) == json.dumps(old)


def test_records_built_by_the_table_are_the_old_objects() -> None:
    join = lr.Join(0, 7, lr.Profile("u7", "", 1, 100, "10.0.0.1", 30.1, 104.2, "Chengdu"),
                   "s-1", 1700000000.5)
    assert json.dumps(lr.encode(lr.stamp(join, 1))) == json.dumps(OLD_LOG[1])
    anonymous = lr.Online(1)   # no session named: neither session nor at is written
    assert lr.encode(lr.stamp(anonymous, 4)) == OLD_LOG[4]
    act = lr.Act(3, Action("discard", ("5m",)))
    assert lr.encode(lr.stamp(act, 9)) == OLD_LOG[9]
    assert lr.encode(lr.stamp(lr.Ready(0, True), 6)) == OLD_LOG[6]


def test_records_are_frozen() -> None:
    create = lr.decode(OLD_LOG[0])
    with pytest.raises(AttributeError):
        create.game = "dadun"  # type: ignore[misc]
    with pytest.raises(TypeError):
        create.options["x"] = 1  # type: ignore[index]


def test_an_older_create_without_the_newer_fields_gets_their_defaults() -> None:
    rec = lr.decode({"i": 0, "t": "create", "room_id": 1, "game": "dadun"})
    assert isinstance(rec, lr.Create)
    assert (rec.timers, rec.base_score, rec.total_hands, rec.entrust_cancels) == ({}, 1, 4, 3)


def test_an_unknown_key_is_ignored() -> None:
    rec = lr.decode({"i": 3, "t": "leave", "seat": 2, "first_dealer": 0})
    assert rec == lr.Leave(2, i=3)


@pytest.mark.parametrize("bad, words", [
    ([1, 2], "a JSON object"),
    ({"i": 0, "t": "teleport"}, "unknown room log record type 'teleport'"),
    ({"t": "leave", "seat": 1}, "'i' must be the record's index"),
    ({"i": -1, "t": "leave", "seat": 1}, "'i' must be the record's index"),
    ({"i": 4, "t": "leave"}, "leave record 4: field 'seat' is missing"),
    ({"i": 4, "t": "leave", "seat": "1"}, "leave record 4: 'seat' must be a whole number"),
    ({"i": 4, "t": "ready", "seat": 1, "ready": 1}, "'ready' must be true or false"),
    ({"i": 4, "t": "leave", "seat": True}, "'seat' must be a whole number"),
    ({"i": 4, "t": "act", "seat": 1, "action": {"tiles": []}}, "'action' must be"),
    ({"i": 4, "t": "resolve", "decision": {"window_id": 1}}, "'decision' must be a window"),
    ({"i": 0, "t": "create", "room_id": 1, "game": "xuezhan", "options": []},
     "'options' must be an object"),
    ({"i": 1, "t": "join", "seat": 0, "user_id": 2, "profile": {"coins": "many"}},
     "'profile' must be an object whose 'coins' is a whole number"),
])
def test_a_malformed_record_is_refused_with_a_clear_error(bad: Any, words: str) -> None:
    with pytest.raises(lr.LogRecordError, match=words.replace("(", r"\(").replace(")", r"\)")):
        lr.decode(bad)


def test_a_record_without_its_index_is_not_written() -> None:
    with pytest.raises(lr.LogRecordError, match="no log index"):
        lr.encode(lr.Leave(1))


def test_every_kind_has_a_record_type() -> None:
    assert set(lr.KINDS) == {
        "create", "owner", "join", "leave", "ready", "online", "offline", "entrust",
        "cancel_entrust", "start", "commit", "client_seed", "act", "resolve", "dismiss_apply",
        "dismiss_vote", "dismiss_result", "close"}


def test_every_field_of_every_record_has_a_decoder() -> None:
    import dataclasses

    for cls in (*lr.KINDS.values(), lr.Profile):
        for f in dataclasses.fields(cls):
            assert f.name == "i" or str(f.type) in lr.DECODERS, (cls.__name__, f.name, f.type)


def test_the_services_doc_lists_exactly_the_record_types() -> None:
    """docs/services.md names the types and points here for their fields: its list is
    KINDS, in KINDS' order."""
    doc = (Path(__file__).parents[3] / "docs" / "services.md").read_text()
    start = doc.index("A room log record:")
    listed = doc[start:doc.index("(tests/unit/services/test_table_logrec.py", start)]
    names = re.findall(r"`([a-z_]+)`", listed.split("the record's keys):", 1)[1])
    assert names == list(lr.KINDS)
