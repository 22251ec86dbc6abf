"""What the settlement consumer does with each delivery: ack after a write or a duplicate,
term for what can never be written, nak (redeliver later) for a failing database."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from nats.errors import TimeoutError as NatsTimeout
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError

from services.records.consumer import (
    FAULT_RETRIES,
    Backoff,
    broker_fault,
    database_fault,
    handle,
)
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
    assert await handle(msg, writer, 0.5) == result
    assert msg.calls == [("ack",)] and writer.written == ["5:2"]


async def test_malformed_message_is_terminated_without_touching_the_database() -> None:
    msg, writer = FakeMsg(b"{oops"), FakeWriter()
    assert await handle(msg, writer, 0.5) == "malformed"
    assert msg.calls == [("term",)] and writer.written == []


async def test_content_rejected_by_the_database_is_terminated() -> None:
    msg = FakeMsg(GOOD)
    rejected = IntegrityError("INSERT", {}, Exception("check failed"))
    assert await handle(msg, FakeWriter(rejected), 0.5) == "malformed"
    assert msg.calls == [("term",)]


async def test_unavailable_database_means_redelivery_later() -> None:
    msg = FakeMsg(GOOD)
    down = OperationalError("connect", {}, Exception("connection refused"))
    assert await handle(msg, FakeWriter(down), 0.5) == "retry"
    assert msg.calls == [("nak", 0.5)]


class AwayServer(Exception):
    """What SQLAlchemy's asyncpg adapter puts in ``orig``: the server's SQLSTATE."""

    def __init__(self, sqlstate: str) -> None:
        super().__init__(sqlstate)
        self.sqlstate = sqlstate


@pytest.mark.parametrize(("exc", "fault"), [
    (OperationalError("connect", {}, Exception("refused")), True),
    (ConnectionRefusedError(111, "Connect call failed"), True),
    (DBAPIError("connect", {}, AwayServer("57P03")), True),     # shutting down / starting up
    (DBAPIError("select", {}, AwayServer("08006")), True),      # connection failure
    (DBAPIError("insert", {}, AwayServer("42P01")), False),     # no such table: a defect
    (KeyError("seats"), False),
])
def test_a_database_away_is_told_from_a_defect(exc: Exception, fault: bool) -> None:
    assert database_fault(exc) is fault


async def test_a_database_away_is_a_counted_warning_not_a_traceback(
        caplog: pytest.LogCaptureFixture) -> None:
    before = FAULT_RETRIES.labels("database")._value.get()
    msg = FakeMsg(GOOD)
    away = DBAPIError("connect", {}, AwayServer("57P03"))
    assert await handle(msg, FakeWriter(away), 0.5) == "retry"
    assert msg.calls == [("nak", 0.5)]
    assert FAULT_RETRIES.labels("database")._value.get() == before + 1
    (record,) = [r for r in caplog.records if r.name == "paiju.records.consumer"]
    assert record.levelname == "WARNING" and record.exc_info is None
    assert "redelivered in 0.5 s" in record.getMessage()


def test_broker_faults_and_backoff() -> None:
    assert broker_fault(NatsTimeout()) and broker_fault(ConnectionResetError())
    assert not broker_fault(ValueError("bad config"))
    backoff = Backoff((0.25, 0.5, 2.0))
    assert [backoff.next() for _ in range(5)] == [0.25, 0.5, 2.0, 2.0, 2.0]
    assert backoff.upcoming() == 2.0
    backoff.reset()
    assert backoff.upcoming() == 0.25 and backoff.next() == 0.25
