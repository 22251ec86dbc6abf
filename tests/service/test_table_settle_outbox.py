"""The table's settlement outbox on a real nats-server: a message is stamped with
``settled_at`` at its first attempt, a failed publish waits (once) with that stamp and is
sent by the retry with it, and the bytes in SETTLE decode into the very value (records'
reader takes them)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import nats
import nats.errors
import pytest
from prometheus_client import REGISTRY

from paiju.contracts import settle as sm
from services.common.bus import (
    SETTLE_PROMPT,
    SETTLE_STREAM,
    SETTLE_SUBJECT,
    ensure_streams,
    sync,
)
from services.common.natsd import EmbeddedNats
from services.records.settlement import parse_settlement
from services.table.settlements import SettlementOutbox


class Unanswered:
    """A JetStream context whose ``publish`` gets no answer while ``broken`` is set: not
    stored (a NATS hiccup), or, ``stored``, stored with its answer lost (a connection moving
    off a lame-duck server)."""

    def __init__(self, inner: object, *, stored: bool = False) -> None:
        self.inner, self.stored, self.broken, self.failures = inner, stored, True, 0

    async def publish(self, *args: object, **kwargs: object) -> object:
        if not self.broken:
            return await self.inner.publish(*args, **kwargs)   # type: ignore[attr-defined]
        self.failures += 1
        if self.stored:
            await self.inner.publish(*args, **kwargs)   # type: ignore[attr-defined]
        raise nats.errors.TimeoutError


@pytest.fixture
async def nats_js(fresh_nats: EmbeddedNats) -> AsyncIterator[tuple[Any, Any]]:
    """A connection and its JetStream context, with the project's streams."""
    nc = await nats.connect(fresh_nats.url)
    try:
        js = nc.jetstream()
        await ensure_streams(js)
        yield nc, js
    finally:
        await nc.close()


def counted() -> tuple[float, float]:
    return (REGISTRY.get_sample_value("paiju_table_hands_total", {"game": "xuezhan"}) or 0,
            REGISTRY.get_sample_value("paiju_table_settlements_total", {"final": "false"}) or 0)


def hand(room_id: int) -> sm.HandSettlement:
    return sm.HandSettlement(
        room_id=room_id, hand_no=1, game="xuezhan", base_score=1, seats=(11, 12, 13, 14),
        nicknames=("a", "b", "c", "d"), deltas=(3, -3, 0, 0),
        payments=(sm.Payment(reason="hu", payer=1, payee=0, amount=3),),
        details={"winners": [0]}, seed="07" * 32, dealer=0, next_dealer=0,
        events=(sm.ReplayEvent(idx=0, kind="deal", to_seat=None, event_id=9602,
                               frame=b"\x08\x01", json='{"kind": "deal"}'),))


async def test_a_failed_settlement_waits_with_its_first_stamp_and_goes_out_once(
        nats_js: tuple[Any, Any]) -> None:
    nc, js = nats_js
    broken = Unanswered(js)
    outbox = SettlementOutbox(nc, broken)
    await outbox.publish([hand(777001)])
    await outbox.publish([hand(777001)])   # the same hand again (a rebuild): one waits
    assert broken.failures == 2 and len(outbox.unsent) == 1 and outbox.holds(777001)
    (waiting,) = outbox.unsent
    assert waiting.settled_at is not None and waiting.settled_at.tzinfo is not None
    await asyncio.sleep(1.1)   # a retry later keeps the first attempt's stamp
    broken.broken = False
    await outbox.retry()
    assert outbox.unsent == [] and not outbox.holds(777001)
    stored = await js.get_last_msg(SETTLE_STREAM, SETTLE_SUBJECT)
    assert stored.headers is not None and stored.headers["Nats-Msg-Id"] == "777001:1"
    assert sm.decode(stored.data or b"") == waiting
    written = parse_settlement(stored.data or b"")
    assert written.settled_at == waiting.settled_at.replace(tzinfo=None)
    assert [(e.idx, e.frame) for e in written.events] == [(0, b"\x08\x01")]


async def test_a_rebuilt_rooms_hands_published_again_are_counted_once(
        nats_js: tuple[Any, Any]) -> None:
    """A rebuild publishes the room's settled hands again, without prompt copies (records
    has them); JetStream drops them by their dedupe id, and the table's hand and settlement
    counters count each hand once."""
    nc, js = nats_js
    copies = []

    async def copied(msg: object) -> None:
        copies.append(msg)

    await nc.subscribe(SETTLE_PROMPT, cb=copied)
    outbox = SettlementOutbox(nc, js)
    hands, settlements = counted()
    await outbox.publish([hand(777002)])
    assert counted() == (hands + 1, settlements + 1)
    await outbox.publish([hand(777002)], prompt=False)   # the rebuilt room's hand, again
    assert counted() == (hands + 1, settlements + 1)
    assert (await js.stream_info(SETTLE_STREAM)).state.messages == 1
    await sync(nc)
    for _ in range(50):   # delivered to the callback after the flush's answer
        if copies:
            break
        await asyncio.sleep(0.02)
    await asyncio.sleep(0.1)
    assert len(copies) == 1


async def test_a_settlement_stored_with_its_answer_lost_is_counted_once_by_its_retry(
        nats_js: tuple[Any, Any]) -> None:
    """The first try lands but its answer never comes: the hand waits in the outbox, and
    the retry, answered "duplicate", counts it (once)."""
    nc, js = nats_js
    lossy = Unanswered(js, stored=True)
    outbox = SettlementOutbox(nc, lossy)
    hands, settlements = counted()
    await outbox.publish([hand(777003)])
    assert outbox.holds(777003) and counted() == (hands, settlements)
    lossy.broken = False
    await outbox.retry()
    await outbox.retry()
    assert not outbox.holds(777003) and counted() == (hands + 1, settlements + 1)
    assert (await js.stream_info(SETTLE_STREAM)).state.messages == 1


async def test_every_rooms_settlements_share_one_subject(nats_js: tuple[Any, Any]) -> None:
    """SETTLE keeps 30 days of settlements, and NATS keeps each subject's state in memory
    while it holds a message on it: the rooms' settlements go to one subject, however many
    rooms there are (bench/reports/kv_markers.md)."""
    nc, js = nats_js
    outbox = SettlementOutbox(nc, js)
    rooms = range(777100, 777140)
    await outbox.publish([hand(room) for room in rooms])
    assert outbox.unsent == []
    state = (await js.stream_info(SETTLE_STREAM, subjects_filter=">")).state
    assert state.messages == len(rooms)
    assert state.subjects == {SETTLE_SUBJECT: len(rooms)}
