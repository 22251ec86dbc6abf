"""What the settlement consumer does with each delivery: ack after a write or a duplicate,
term for what can never be written, nak (redeliver later) for a failing database."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from sqlalchemy.exc import IntegrityError, OperationalError

from services.records.consumer import RETRY_DELAY_SECONDS, handle
from tests.service.test_records_support import encode, hand_message


@dataclass
class FakeMsg:
    data: bytes
    subject: str = "settle.1"
    calls: list[tuple] = field(default_factory=list)

    async def ack(self) -> None:
        self.calls.append(("ack",))

    async def term(self) -> None:
        self.calls.append(("term",))

    async def nak(self, delay: float | None = None) -> None:
        self.calls.append(("nak", delay))


class FakeWriter:
    def __init__(self, *outcomes: object) -> None:
        self.outcomes = list(outcomes)
        self.written: list[str] = []

    async def write(self, settlement) -> bool:
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        self.written.append(settlement.key)
        return bool(outcome)


GOOD = encode(hand_message(5, 2, [1, 2, 3, 4], [1, -1, 0, 0]))


@pytest.mark.parametrize(("outcome", "result"), [(True, "written"), (False, "duplicate")])
async def test_written_or_duplicate_is_acked(outcome: bool, result: str) -> None:
    msg, writer = FakeMsg(GOOD), FakeWriter(outcome)
    assert await handle(msg, writer) == result
    assert msg.calls == [("ack",)] and writer.written == ["5:2"]


async def test_malformed_message_is_terminated_without_touching_the_database() -> None:
    msg, writer = FakeMsg(b"{oops"), FakeWriter()
    assert await handle(msg, writer) == "malformed"
    assert msg.calls == [("term",)] and writer.written == []


async def test_content_rejected_by_the_database_is_terminated() -> None:
    msg = FakeMsg(GOOD)
    rejected = IntegrityError("INSERT", {}, Exception("check failed"))
    assert await handle(msg, FakeWriter(rejected)) == "malformed"
    assert msg.calls == [("term",)]


async def test_unavailable_database_means_redelivery_later() -> None:
    msg = FakeMsg(GOOD)
    down = OperationalError("connect", {}, Exception("connection refused"))
    assert await handle(msg, FakeWriter(down)) == "retry"
    assert msg.calls == [("nak", RETRY_DELAY_SECONDS)]
