"""Parsing and validation of SETTLE messages (paiju/contracts/settle.py): what records
writes and what it terminates, with the reason it gives."""

from __future__ import annotations

import json
from datetime import datetime

import pytest

from services.records.settlement import LedgerLine, MalformedSettlement, parse_settlement
from tests.service.test_records_support import encode, event, final_message, hand_message

SEATS = [11, 12, 13, 14]


def test_hand_message_parses_with_a_two_rows_per_payment_ledger() -> None:
    payments = [{"reason": "zimo", "payer": 1, "payee": 0, "amount": 4, "ref": "r"},
                {"reason": "gang", "payer": 3, "payee": 2, "amount": 1}]
    s = parse_settlement(encode(hand_message(123456, 3, SEATS, [4, -4, 1, -1],
                                             payments=payments)))
    assert (s.room_id, s.hand_no, s.final, s.key) == (123456, 3, False, "123456:3")
    assert s.deltas == (4, -4, 1, -1) and s.seats == tuple(SEATS)
    assert s.ledger == (LedgerLine(12, 1, -4, "zimo", 11), LedgerLine(11, 0, 4, "zimo", 12),
                        LedgerLine(14, 3, -1, "gang", 13), LedgerLine(13, 2, 1, "gang", 14))


def test_payments_that_do_not_net_to_the_deltas_give_one_row_per_seat() -> None:
    payments = [{"reason": "hu", "payer": 1, "payee": 0, "amount": 9}]
    s = parse_settlement(encode(hand_message(1, 1, SEATS, [3, -3, 0, 0], payments=payments)))
    assert s.ledger == (LedgerLine(11, 0, 3, "hand", None), LedgerLine(12, 1, -3, "hand", None))


def test_events_are_sorted_and_frames_decoded() -> None:
    events = [event(2, None, b"\x02"), event(0, 1, b"\x00\xff"), event(1, None, b"")]
    s = parse_settlement(encode(hand_message(1, 1, SEATS, [0, 0, 0, 0], events=events)))
    assert [(e.idx, e.to_seat, e.frame) for e in s.events] == [
        (0, 1, b"\x00\xff"), (1, None, b""), (2, None, b"\x02")]


def test_settled_at_is_stored_as_naive_utc() -> None:
    message = hand_message(1, 1, SEATS, [0, 0, 0, 0])
    message["settled_at"] = "2026-11-30T11:04:05+08:00"
    assert parse_settlement(encode(message)).settled_at == datetime(2026, 11, 30, 3, 4, 5)


def test_final_message_keeps_totals_and_has_no_ledger() -> None:
    s = parse_settlement(encode(final_message(654321, SEATS, [5, -5, 2, -2], 8)))
    assert (s.final, s.hand_no, s.key, s.deltas) == (True, 0, "654321:final", (5, -5, 2, -2))
    assert s.ledger == () and s.events == ()
    assert s.details == {"hands_played": 8, "reason": 2}


def _broken(**changes: object) -> bytes:
    message = hand_message(1, 1, SEATS, [2, -2, 0, 0], events=[event(0, None, b"x")])
    message.update(changes)
    return encode(message)


def _without(name: str) -> bytes:
    message = hand_message(1, 1, SEATS, [2, -2, 0, 0])
    del message[name]
    return encode(message)


@pytest.mark.parametrize(("payload", "fragment"), [
    (b"{not json", "JSON is malformed"),
    (b"\xff\xfe", "JSON is malformed"),
    (b"[1, 2]", "Expected `object`, got `array`"),
    (b"{}", "missing required field `final`"),
    (_broken(final="no"), r"Expected `bool`, got `str` - at `\$.final`"),
    (_broken(deltas=[2, -1, 0, 0]), "do not sum to 0"),
    (_broken(deltas=[2, -2, 0]), "3 values for 4 seats"),
    (_broken(deltas=[2, -2, True, False]), r"Expected `int`, got `bool` - at `\$.deltas\[2\]`"),
    (_broken(deltas=[2**62, -(2**62), 0, 0]), r"deltas\[0\]"),
    (_broken(seats=[11, 11, 13, 14]), "distinct"),
    (_broken(seats=[]), "seats"),
    (_broken(seats=[11, 0, 13, 14]), r"Expected `int` >= 1 - at `\$.seats\[1\]`"),
    (_broken(nicknames=["a"]), "nicknames: 1 values for 4 seats"),
    (_broken(room_id=0), r"\$.room_id"),
    (_broken(room_id="123456"), r"Expected `int`, got `str` - at `\$.room_id`"),
    (_broken(hand_no=0), r"Expected `int` >= 1 - at `\$.hand_no`"),
    (_broken(final=True), r"FinalSettlement: Invalid enum value 1 - at `\$.hand_no`"),
    (_broken(game=""), r"\$.game"),
    (_broken(base_score=None), r"\$.base_score"),
    (_broken(settled_at="yesterday"), r"RFC3339 .* at `\$.settled_at`"),
    (_without("settled_at"), "settled_at: missing"),
    (_without("next_dealer"), "missing required field `next_dealer`"),
    (_without("payments"), "missing required field `payments`"),
    (_broken(payments=[{"reason": "hu", "payer": 0, "payee": "1", "amount": 2}]),
     r"\$.payments\[0\].payee"),
    (_broken(seed=[1]), r"\$.seed"),
    (_broken(events=[event(0, 4, b"")]), "is not a seat"),
    (_broken(events=[event(0, None, b""), event(0, 1, b"")]), "duplicate index"),
    (_broken(events=[{**event(0, None, b""), "frame": "***"}]), "Invalid base64"),
    (_broken(events=[{**event(0, None, b""), "event_id": 2**40}]), r"\$.events\[0\].event_id"),
    (_broken(events=[{k: v for k, v in event(0, None, b"").items() if k != "to"}]),
     r"missing required field `to` - at `\$.events\[0\]`"),
    (_broken(details=[1]), r"Expected `object`, got `array` - at `\$.details`"),
])
def test_malformed_messages_are_rejected_with_a_reason(payload: bytes, fragment: str) -> None:
    with pytest.raises(MalformedSettlement, match=fragment):
        parse_settlement(payload)


def test_final_totals_must_sum_to_zero() -> None:
    with pytest.raises(MalformedSettlement, match="totals"):
        parse_settlement(json.dumps(final_message(1, SEATS, [1, 0, 0, 0], 1)).encode())


def test_user_ids_may_use_the_whole_int64_range_amounts_may_not() -> None:
    # guests and the table's robots have ids high in the int64 range (services/table)
    seats = [9_000_000_000_000_000_001, 8_000_000_000_000_000_002, 3, 4]
    parsed = parse_settlement(encode(hand_message(5, 1, seats, [2, -2, 0, 0])))
    assert parsed.seats == tuple(seats)
    with pytest.raises(MalformedSettlement, match="seats"):
        parse_settlement(encode(hand_message(5, 1, [2**63, 2, 3, 4], [2, -2, 0, 0])))
    with pytest.raises(MalformedSettlement, match="deltas"):
        parse_settlement(encode(hand_message(5, 1, [1, 2, 3, 4], [2**62, -2**62, 0, 0])))
