"""docs/fairness.md against the code: the keys of the fair-deal record and their JSON types
(the page's key table) are what the table emits at the end of a hand, the option defaults
the page lists are the engines' and ride in the record, and the page's answers to the
points an independent verifier had to guess (issue 26: the error code, the dealer draw,
``fixed_cw``, out-token numbering, a record without events or deltas) hold.

Rooms are folded from their log records as the table's actor appends them (no NATS)."""

from __future__ import annotations

import json
import re
import secrets
from pathlib import Path
from typing import Any

import pytest

from games import fair, registry
from games.arbitration import resolve
from games.tools.verify_deal import verify
from paiju.v1 import common_pb2
from services.table import checks
from services.table import facts as ft
from services.table import logrec as lr
from services.table.room import Room

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "fairness.md").read_text(encoding="utf-8")


def table(marker: str) -> list[list[str]]:
    """The rows of the Markdown table between ``<!-- marker -->`` and its closing comment."""
    body = DOC.split(f"<!-- {marker} -->", 1)[1].split(f"<!-- /{marker} -->", 1)[0]
    rows = [[c.strip() for c in line.strip().strip("|").split("|")]
            for line in body.strip().splitlines()]
    assert len(rows) > 2, marker
    return rows[2:]   # no header, no rule


def code(cell: str) -> str:
    found = re.findall(r"`([^`]+)`", cell)
    assert found, cell
    return found[0]


KEYS = {code(row[0]): row[1] for row in table("fair-record-keys")}
DEFAULTS = [(row[0], code(row[1]), json.loads(code(row[2]))) for row in table("fair-option-defaults")]


# ---------------------------------------------------------------------- a table's room


class Log:
    def __init__(self, game: str, total_hands: int) -> None:
        first = lr.Create(12345678, game, {}, {"turn_seconds": 20.0}, total_hands=total_hands)
        self.n = 0
        self.room = Room(first)
        self.add(first)

    def add(self, rec: lr.Record) -> list[ft.Fact]:
        rec = lr.stamp(rec, self.n)
        self.n += 1
        return self.room.apply(rec)


def play_fair_hand(log: Log, client_seeds: dict[int, bytes]) -> dict[str, Any]:
    """The fair-deal record of :func:`fair_hand_ended`'s fact, through JSON."""
    ended = fair_hand_ended(log, client_seeds)
    assert ended.fair is not None
    result: dict[str, Any] = json.loads(ended.fair.encode())
    return result


def fair_hand_ended(log: Log, client_seeds: dict[int, bytes]) -> ft.HandEnded:
    """Commit, take client seeds, start as automation.start_hand does, let the greedy bot
    play every seat; the HandEnded fact."""
    room = log.room
    hand_no = room.hand_no + 1
    server_seed = secrets.token_bytes(fair.SEED_BYTES)
    assert checks.needs_commitment(room)
    log.add(lr.Commit(hand_no, server_seed.hex(), fair.commitment(room.room_id, hand_no,
                                                                  server_seed)))
    for seat, seed in client_seeds.items():
        log.add(lr.ClientSeed(seat, hand_no, seed.hex()))
    for seat in range(log.room.spec.seats):
        log.add(lr.Ready(seat, True))
    seed = room.fair.hand_seed(room.room_id, hand_no)
    assert seed is not None
    first = hand_no == 1
    log.add(lr.Start(hand_no, seed.hex(), fair.first_dealer(seed, room.spec.seats) if first else room.dealer,
                     dealer_from_seed=first))
    for _ in range(3000):
        if not room.in_hand():
            break
        assert room.state is not None
        seat = room.to_act()[0]
        response = room.is_response(seat)
        facts = log.add(lr.Act(seat, room.spec.greedy_policy(room.state, seat), "entrust",
                               response))
        window, rules = room.pending_window(), room.arbitration_rules()
        if response and window is not None and rules is not None:
            decision = resolve(window, rules)
            if decision.final:
                facts += log.add(lr.Resolve(decision))
        ended = [f for f in facts if isinstance(f, ft.HandEnded)]
        if ended:
            return ended[0]
    raise AssertionError("the hand did not end")


def json_type_ok(kind: str, value: Any) -> bool:
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "object":
        return isinstance(value, dict)
    if m := re.fullmatch(r"array of (\d+) strings", kind):
        return (isinstance(value, list) and len(value) == int(m.group(1))
                and all(isinstance(x, str) for x in value))
    if kind == "array of strings":
        return isinstance(value, list) and all(isinstance(x, str) for x in value)
    if kind == "array of objects":
        return isinstance(value, list) and all(isinstance(x, dict) for x in value)
    raise AssertionError(f"the page's key table has an unknown JSON type {kind!r}")


GAMES = [spec.name for spec in registry.all()]   # every game of the registry


def _layout(game: str) -> str:
    """What a record stores of the game's shuffle: "wall" or "deck"."""
    (key,) = registry.get(game).deal_layout(0)
    return str(key)


@pytest.fixture(scope="module")
def records() -> dict[str, list[dict[str, Any]]]:
    """Two hands of each game, seat 1 sending a client seed in hand 1 only."""
    out = {}
    for game in GAMES:
        log = Log(game, total_hands=2)
        for uid in range(registry.get(game).seats):
            log.add(lr.Join(uid, 11 + uid, lr.Profile(nickname=f"u{uid}", coins=1000)))
        out[game] = [play_fair_hand(log, {1: b"seat one"}), play_fair_hand(log, {})]
    return out


@pytest.mark.parametrize("game", GAMES)
def test_the_documented_keys_and_types_are_what_the_table_emits(
        records: dict[str, list[dict[str, Any]]], game: str) -> None:
    not_here = "deck" if _layout(game) == "wall" else "wall"
    want = {k for k in KEYS if k != not_here}
    for record in records[game]:
        assert set(record) == want
        wrong = {k: record[k] for k, kind in KEYS.items() if k in record
                 and not json_type_ok(kind, record[k])}
        assert wrong == {}
        assert record["fair_version"] == fair.VERSION == 1
        assert all(re.fullmatch("[0-9a-f]{64}", record[k])
                   for k in ("commitment", "server_seed", "hand_seed"))
    first, second = records[game]
    assert (first["hand_no"], second["hand_no"]) == (1, 2)
    # the first dealer IS drawn (always), later ones follow the rules
    assert first["dealer_from_seed"] is True and second["dealer_from_seed"] is False
    empty = [""] * registry.get(game).seats   # one per seat
    assert first["client_seeds"] == ["", b"seat one".hex(), *empty[2:]]
    assert second["client_seeds"] == empty


@pytest.mark.parametrize("game", GAMES)
def test_a_record_alone_verifies_but_skips_deal_events_and_result_as_the_page_says(
        records: dict[str, list[dict[str, Any]]], game: str) -> None:
    report = verify(records[game][0])
    assert report.ok, report.text()
    status = {c.name: c.status for c in report.checks}
    assert status["commitment"] == status["hand_seed"] == status["dealer"] == "pass"
    assert status[_layout(game)] == "pass"
    assert status["deal"] == status["events"] == status["result"] == "skip"
    assert "no `events` and no `deltas`" in DOC
    forged = {**records[game][0], "server_seed": "00" * 32}
    assert not verify(forged).ok


def test_the_documented_defaults_are_the_engines_and_ride_in_the_record(
        records: dict[str, list[dict[str, Any]]]) -> None:
    assert {g for g, _, _ in DEFAULTS} == {"xuezhan", "changsha"}
    for game, option, default in DEFAULTS:
        assert registry.get(game).parse_options({})[option] == default, (game, option)
        for record in records[game]:   # rooms made without options: the defaults, stated
            assert record["options"][option] == default, (game, option)
        assert f"`{option}`" in DOC


def test_every_option_is_in_the_record(records: dict[str, list[dict[str, Any]]]) -> None:
    for game, hands in records.items():
        defaults = registry.get(game).parse_options({})
        assert set(defaults) <= set(hands[0]["options"]), game


def test_the_exchange_option_values_are_the_engines() -> None:
    values = ("random3", "dice_mod3", "fixed_cw")
    for value in values:
        assert registry.get("xuezhan").parse_options({"exchange_direction": value})
        assert f'`"{value}"`' in DOC
    with pytest.raises(fair.BadInput):
        registry.get("xuezhan").parse_options({"exchange_direction": "cw"})


def test_the_error_code_the_page_names_is_the_tables() -> None:
    assert "`ERR_TOO_LONG` (1021" in DOC and '"bad_input" error' not in DOC
    assert common_pb2.ERR_TOO_LONG == 1021
    source = (ROOT / "services" / "table" / "commands.py").read_text(encoding="utf-8")
    seed_cmd = source.split("async def _c_set_client_seed", 1)[1].split("async def", 1)[0]
    assert "ERR_TOO_LONG" in seed_cmd


def test_out_tokens_count_from_one_per_hand() -> None:
    spec = registry.get("dadun")
    seed = fair.hand_seed(123456, 3, bytes(range(32)), [b"alice", None, b"\x00\xff", b"bob"])
    state = spec.new_hand(spec.parse_options({}), seed, 0)
    tokens = []
    for _ in range(3000):
        if state.is_over():
            break
        seat = state.to_act()[0]
        for e in state.apply(seat, spec.greedy_policy(state, seat)):
            if e.kind == "hint_out" and e.to is None:
                tokens.append(e.data["token"])
    assert state.is_over() and len(tokens) > 20
    prefix = f"t{fair.sub_seed(seed, 'token') & 0xFFFFFF:06x}."
    assert prefix == "t12aaa1." and "`t12aaa1.1`" in DOC    # the worked example's
    assert tokens == [f"{prefix}{k}" for k in range(1, len(tokens) + 1)]
