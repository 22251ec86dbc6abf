"""The room log's append (services/table/roomlog.py) on a real nats-server: JetStream's
duplicate detection matches only a retry of the same record, and an append ends in its
sequence, LogFenced or LogUnavailable, never in an error after which its record may land.

Found by the partition test: an append refused with 409 "duplicate message id is in process"
(a retry while the first try was being stored) escaped as a plain APIError; the first try
landed, the room went on in memory, and its next record at the same index, carrying the same
message id, was taken by JetStream for that stored one. Memory and log then differed, and no
table could rebuild the room from its log (its replay refused a move: NotYourTurn) for 40 s."""

from __future__ import annotations

import asyncio
from typing import Any

import nats
import nats.js.errors
import pytest

from services.common import bus
from services.common.natsd import EmbeddedNats
from services.table import roomlog
from services.table.roomlog import LogFenced, LogUnavailable, RoomLog

ROOM = 424242


@pytest.fixture
async def js(fresh_nats: EmbeddedNats) -> Any:
    nc = await nats.connect(fresh_nats.url)
    js = nc.jetstream()
    await bus.ensure_streams(js)
    try:
        yield js
    finally:
        await nc.close()


async def test_another_record_at_an_index_already_stored_is_fenced_not_taken_for_it(
        js: Any) -> None:
    log = RoomLog(js, "boot1")
    first = await log.append(ROOM, 0, {"i": 0, "t": "create"}, 0)
    landed = await log.append(ROOM, 1, {"i": 1, "t": "act", "seat": 2, "tile": "1W"}, first)
    # the same record again (a retry whose first try landed): its sequence
    assert await log.append(ROOM, 1, {"i": 1, "t": "act", "seat": 2, "tile": "1W"},
                            first) == landed
    # another record at that index by the same process (its memory thought index 1 free):
    # the fence refuses it; it is never answered with the stored record's sequence
    with pytest.raises(LogFenced):
        await log.append(ROOM, 1, {"i": 1, "t": "act", "seat": 2, "tile": "9T"}, first)
    records, last = await log.read(ROOM)
    assert [r.get("tile") for r in records] == [None, "1W"] and last == landed


class Ack:
    def __init__(self, seq: int) -> None:
        self.seq = seq


class FlakyJs:
    """A JetStream context whose publishes fail with ``errors`` first, then succeed."""

    def __init__(self, *errors: Exception) -> None:
        self.errors = list(errors)
        self.ids: list[str] = []

    async def publish(self, subject: str, data: bytes, timeout: float,
                      headers: dict[str, str]) -> Ack:
        self.ids.append(headers["Nats-Msg-Id"])
        if self.errors:
            raise self.errors.pop(0)
        return Ack(7)

    async def get_last_msg(self, stream: str, subject: str) -> Any:
        raise nats.js.errors.NotFoundError


def api_error(code: int, err_code: int, description: str) -> nats.js.errors.APIError:
    return nats.js.errors.APIError(code=code, err_code=err_code, description=description)


async def test_a_try_still_being_stored_is_asked_again_with_the_same_id() -> None:
    fake = FlakyJs(api_error(409, 10158, "duplicate message id is in process"))
    log = RoomLog(fake, "boot1", retry_seconds=5)
    assert await log.append(ROOM, 3, {"i": 3}, 2) == 7
    assert len(fake.ids) == 2 and fake.ids[0] == fake.ids[1]


async def test_an_append_refused_otherwise_is_unavailable_not_a_raw_error() -> None:
    fake = FlakyJs(api_error(400, 10999, "something else"))
    log = RoomLog(fake, "boot1", retry_seconds=5)
    with pytest.raises(LogUnavailable):
        await log.append(ROOM, 3, {"i": 3}, 2)


class DroppedAckJs(FlakyJs):
    """Its first publish is never acknowledged (lost as the stream's leader stepped down, or
    as the connection moved): it times out; the next ones are acknowledged."""

    def __init__(self) -> None:
        super().__init__()
        self.timeouts: list[float] = []

    async def publish(self, subject: str, data: bytes, timeout: float,
                      headers: dict[str, str]) -> Ack:
        self.ids.append(headers["Nats-Msg-Id"])
        self.timeouts.append(timeout)
        if len(self.ids) == 1:
            await asyncio.sleep(timeout)
            raise nats.errors.TimeoutError
        return Ack(9)


async def test_an_unacknowledged_append_is_tried_again_soon_with_the_same_id() -> None:
    """After APPEND_TRY_SECONDS (an acknowledgement takes milliseconds), not after a longer
    timeout: a room waits no longer than that for a lost acknowledgement, and the same
    message id lets at most one copy land."""
    fake = DroppedAckJs()
    log = RoomLog(fake, "boot1", retry_seconds=120)
    assert await asyncio.wait_for(log.append(ROOM, 3, {"i": 3}, 2), 10) == 9
    assert len(fake.ids) == 2 and fake.ids[0] == fake.ids[1]
    assert fake.timeouts == [roomlog.APPEND_TRY_SECONDS] * 2 and roomlog.APPEND_TRY_SECONDS <= 0.5


async def test_a_read_unanswered_by_a_leaderless_stream_fails_soon(
        js: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A read's step sent while the stream elects a leader is never answered: the read
    fails after one try (the adoption scan reads again), not after the client's 5 s or
    never."""
    log = RoomLog(js, "boot1")
    await log.append(ROOM, 0, {"i": 0, "t": "create"}, 0)

    async def unanswered(*args: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(3600)

    monkeypatch.setattr(js, "stream_info", unanswered)
    async with asyncio.timeout(30) as bound:
        with pytest.raises(TimeoutError):
            await log.read(ROOM)
    assert not bound.expired()
