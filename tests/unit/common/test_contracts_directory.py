"""The directory's contracts (paiju/contracts/directory.py): what the tables write into the
``rooms``, ``seats`` and ``tables`` buckets and the adoption messages decode into the same
type; the bytes keep the keys the released version writes and reads; a bad entry is a
BadContract naming the type and the place, never another exception."""

from __future__ import annotations

import json
import re
from pathlib import Path

import msgspec
import pytest

from paiju.contracts.directory import (
    AdoptAnswer,
    AdoptRequest,
    RoomEntry,
    SeatEntry,
    TableEntry,
)
from paiju.contracts.typed import BadContract, Contract

ROOT = Path(__file__).resolve().parents[3]

ROOM = RoomEntry(room_id=100001, owner="table-a", address="10.0.0.5:7000", game="xuezhan",
                 status=1, free_seats=3, has_password=False,
                 room={"room_id": "100001", "players": [{"user_id": "7", "seat": 0}]})
SEAT = SeatEntry(room_id=100001, owner="table-a", address="10.0.0.5:7000", seat=2)
TABLE = TableEntry(instance="table-a", address="10.0.0.5:7000", rooms=4, players=9,
                   started_at=1_700_000_000.25, draining=False)
VALUES: list[Contract] = [ROOM, SEAT, TABLE, AdoptRequest(room_id=100001), AdoptAnswer(ok=True)]


@pytest.mark.parametrize("value", VALUES, ids=lambda v: type(v).__name__)
def test_each_value_decodes_back_to_itself(value: Contract) -> None:
    assert type(value).decode(value.encode()) == value


@pytest.mark.parametrize("value", VALUES, ids=lambda v: type(v).__name__)
def test_every_field_is_written(value: Contract) -> None:
    """Readers of other versions look keys up by name: none is left out (not even one at
    its default)."""
    assert set(json.loads(value.encode())) == set(type(value).__struct_fields__)


# What the released tables wrote (json.dumps of dicts, with its spaces): the same values.
RELEASED = [
    (RoomEntry, {"room_id": 100001, "owner": "table-a", "address": "10.0.0.5:7000",
                 "game": "xuezhan", "status": 1, "free_seats": 3, "has_password": False,
                 "room": {"room_id": "100001", "players": [{"user_id": "7", "seat": 0}]}}, ROOM),
    (SeatEntry, {"room_id": 100001, "owner": "table-a", "address": "10.0.0.5:7000",
                 "seat": 2}, SEAT),
    (TableEntry, {"instance": "table-a", "address": "10.0.0.5:7000", "rooms": 4,
                  "players": 9, "started_at": 1_700_000_000.25, "draining": False}, TABLE),
    (AdoptRequest, {"room_id": 100001}, AdoptRequest(room_id=100001)),
    (AdoptAnswer, {"ok": False}, AdoptAnswer(ok=False)),
]


@pytest.mark.parametrize(("kind", "old", "value"), RELEASED, ids=lambda x: getattr(x, "__name__", ""))
def test_the_released_bytes_decode_and_the_new_bytes_read_as_before(
        kind: type[Contract], old: dict, value: Contract) -> None:
    assert kind.decode(json.dumps(old).encode()) == value
    assert json.loads(value.encode()) == old


def test_a_whole_started_at_is_a_float() -> None:
    # json.dumps writes time.time() as a float, a test's 0 as an int: both read
    raw = json.dumps({"instance": "t", "address": "a:1", "rooms": 0, "players": 0,
                      "started_at": 0, "draining": True})
    assert TableEntry.decode(raw).started_at == 0.0


def test_unknown_keys_are_ignored() -> None:
    """A newer writer may add a key while older readers run."""
    raw = json.dumps({**json.loads(SEAT.encode()), "since": 12.5, "extra": {"a": [1]}})
    assert SeatEntry.decode(raw) == SEAT


@pytest.mark.parametrize("kind, value", [(type(v), v) for v in VALUES],
                         ids=lambda x: getattr(x, "__name__", ""))
def test_a_missing_field_is_named(kind: type[Contract], value: Contract) -> None:
    for name in kind.__struct_fields__:
        fields = json.loads(value.encode())
        del fields[name]
        with pytest.raises(BadContract, match=rf"{kind.__name__}: .*`{name}`"):
            kind.decode(json.dumps(fields))


@pytest.mark.parametrize(("kind", "key", "bad"), [
    (RoomEntry, "room_id", "100001"),          # a string for a number
    (RoomEntry, "status", True),               # a boolean for a number
    (RoomEntry, "has_password", 1),            # a number for a boolean
    (RoomEntry, "room", [1, 2]),               # a list for the RoomInfo object
    (RoomEntry, "owner", None),
    (SeatEntry, "seat", 1.5),
    (TableEntry, "rooms", "4"),
    (TableEntry, "draining", "false"),
    (TableEntry, "started_at", None),
    (AdoptRequest, "room_id", None),
    (AdoptAnswer, "ok", "yes"),
])
def test_a_wrong_typed_field_is_named(kind: type[Contract], key: str, bad: object) -> None:
    value = next(v for v in VALUES if type(v) is kind)
    fields = {**json.loads(value.encode()), key: bad}
    with pytest.raises(BadContract, match=rf"{kind.__name__}: .*\$\.{key}"):
        kind.decode(json.dumps(fields))


@pytest.mark.parametrize("raw", [b"", b"{", b"not json", b"[1]", b"null", b"7", b'"x"'])
def test_what_is_not_an_object_is_a_bad_contract(raw: bytes) -> None:
    for kind in (RoomEntry, SeatEntry, TableEntry, AdoptRequest, AdoptAnswer):
        with pytest.raises(BadContract, match=kind.__name__):
            kind.decode(raw)


def test_values_are_frozen_and_a_move_is_a_copy() -> None:
    with pytest.raises(AttributeError):
        ROOM.owner = "table-b"  # type: ignore[misc]
    moved = ROOM.moved_to("table-b", "10.0.0.6:7000")
    assert (moved.owner, moved.address) == ("table-b", "10.0.0.6:7000")
    assert msgspec.structs.replace(moved, owner="table-a", address="10.0.0.5:7000") == ROOM
    assert ROOM.owner == "table-a"


# docs/services.md lists each entry's keys in its "Directory (NATS KV)" table: the same keys
# as the type, so the page cannot drift from the contract.
DOC_ROWS = {"tables": TableEntry, "rooms": RoomEntry, "seats": SeatEntry}


@pytest.mark.parametrize("bucket", sorted(DOC_ROWS))
def test_the_documented_keys_are_the_types_fields(bucket: str) -> None:
    text = (ROOT / "docs/services.md").read_text(encoding="utf-8")
    row = next(line for line in text.splitlines() if line.startswith(f"| `{bucket}` |"))
    kind = DOC_ROWS[bucket]
    assert f"`{kind.__name__}`" in row, f"the {bucket} row names {kind.__name__}"
    listed = re.search(r"\{([^}]*)\}", row)
    assert listed is not None, row
    assert re.findall(r'"(\w+)"', listed.group(1)) == list(kind.__struct_fields__)
