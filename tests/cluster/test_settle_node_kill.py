"""Settlements reach records promptly when a NATS node dies (issue 22, item 5).

On a three-node JetStream cluster (SETTLE and records' durable consumer at R3), the node
leading the SETTLE stream, or the one leading records' consumer on it, is SIGKILLed, and
the table's outbox goes on publishing hands. A Raft election follows (the stream's or the
consumer's: 4 to 9 s, measured), during which SETTLE takes no publish or delivers nothing;
the prompt copy of each settlement (core NATS, services/table/settlements.py) is written by
records meanwhile, so every hand is written within moments of its publish. Before the
prompt copy, a hand that ended right after the kill waited for the whole election.

The bound on the lag is generous (the election alone is at least 3 s after a kill; with the
prompt copy the lag is tens of milliseconds on an idle machine). Records logs no traceback
through it, only warnings.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

import nats
import pytest

from paiju.contracts import settle as sm
from services.common.bus import SETTLE_STREAM, ensure_streams
from services.common.natsd import EmbeddedNatsCluster, stream_leader
from services.records.consumer import DURABLE, SettleConsumer, consumer_config
from services.records.settlement import Settlement
from services.table.settlements import SettlementOutbox

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(240)]

ROOM = 880001
HANDS_AFTER_KILL = 8           # published every PUBLISH_EVERY seconds from the kill on
PUBLISH_EVERY = 0.25
HEARTBEAT = 0.5                # the table's outbox retry (its heartbeat, with a 2 s lease)
LAG_BOUND = 2.5                # seconds from a hand's publish to its write, at most


class TimedWriter:
    """records' writer, in memory: when each settlement was first written."""

    def __init__(self) -> None:
        self.written: dict[str, float] = {}

    async def write(self, s: Settlement) -> bool:
        if s.key in self.written:
            return False
        self.written[s.key] = time.monotonic()
        return True


def hand(hand_no: int) -> sm.HandSettlement:
    return sm.HandSettlement(
        room_id=ROOM, hand_no=hand_no, game="xuezhan", base_score=1, seats=(11, 12, 13, 14),
        nicknames=("a", "b", "c", "d"), deltas=(3, -3, 0, 0),
        payments=(sm.Payment(reason="hu", payer=1, payee=0, amount=3),),
        details={"winners": [0]}, seed="07" * 32, dealer=0, next_dealer=0, events=())


async def leaders(urls: list[str]) -> tuple[str, str]:
    """The leaders of SETTLE and of records' consumer on it, once both have one."""
    nc = await nats.connect(urls, max_reconnect_attempts=-1, reconnect_time_wait=0.2)
    try:
        js = nc.jetstream(timeout=2)
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(Exception):
                stream = await stream_leader(js, SETTLE_STREAM)
                info = await js.consumer_info(SETTLE_STREAM, DURABLE)
                consumer = info.cluster.leader if info.cluster else None
                if stream and consumer:
                    return stream, consumer
            assert time.monotonic() < deadline, "SETTLE or its consumer has no leader"
            await asyncio.sleep(0.2)
    finally:
        await nc.close()


async def wait_written(writer: TimedWriter, keys: list[str], bound: float) -> None:
    deadline = time.monotonic() + bound
    while not all(k in writer.written for k in keys):
        assert time.monotonic() < deadline, (
            f"not written within {bound:g} s: {[k for k in keys if k not in writer.written]}")
        await asyncio.sleep(0.05)


async def kill_and_settle(cluster: EmbeddedNatsCluster, lead: str) -> dict[str, float]:
    """Kill the node leading ``lead`` (the SETTLE stream or records' consumer) while the
    table publishes hands; the lag of each hand published from the kill on."""
    urls = cluster.url_list
    setup = await nats.connect(urls, max_reconnect_attempts=-1, reconnect_time_wait=0.2)
    try:
        js = setup.jetstream(timeout=2)
        deadline = time.monotonic() + 30
        while True:   # a new cluster's meta leader may still be busy
            try:
                await ensure_streams(js, 3, room_log=False)
                await js.add_consumer(SETTLE_STREAM, consumer_config())
                break
            except Exception:
                assert time.monotonic() < deadline, "SETTLE not created"
                await asyncio.sleep(0.2)
    finally:
        await setup.close()
    stream, consumer = await leaders(urls)
    victim = cluster.index_of(stream if lead == "stream" else consumer)
    # the services stay on the other nodes: what is measured is SETTLE's election, not a
    # client's reconnect
    others = ",".join(u for i, u in enumerate(urls) if i != victim)

    writer = TimedWriter()
    records = SettleConsumer(others, writer, replicas=3)   # type: ignore[arg-type]
    records.start()
    nc = await nats.connect(others.split(","), max_reconnect_attempts=-1,
                            reconnect_time_wait=0.2)
    outbox = SettlementOutbox(nc, nc.jetstream())
    stop = asyncio.Event()

    async def heartbeat() -> None:
        while not stop.is_set():
            await asyncio.sleep(HEARTBEAT)
            await outbox.retry()

    beats = asyncio.create_task(heartbeat())
    published: dict[str, float] = {}
    try:
        first = hand(1)    # records consumes before the fault
        await outbox.publish([first])
        await wait_written(writer, [first.key], 30)
        await asyncio.to_thread(cluster.kill, victim)
        for n in range(2, 2 + HANDS_AFTER_KILL):
            h = hand(n)
            published[h.key] = time.monotonic()
            await outbox.publish([h])
            await asyncio.sleep(PUBLISH_EVERY)
        await wait_written(writer, list(published), 60)
        while outbox.unsent:   # SETTLE takes them too, once it has a leader
            await asyncio.sleep(0.1)
    finally:
        stop.set()
        await asyncio.gather(beats, return_exceptions=True)
        await records.stop()
        await nc.close()
    return {key: writer.written[key] - at for key, at in published.items()}


@pytest.mark.parametrize("lead", ["stream", "consumer"])
async def test_hands_settle_promptly_when_the_node_leading_settle_dies(
        lead: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="paiju.records")
    with EmbeddedNatsCluster(3) as cluster:
        lags = await kill_and_settle(cluster, lead)
    assert len(lags) == HANDS_AFTER_KILL
    assert max(lags.values()) < LAG_BOUND, {k: round(v, 2) for k, v in lags.items()}
    noisy = [r for r in caplog.records if r.name.startswith("paiju.records")
             and (r.exc_info or r.levelno >= logging.ERROR)]
    assert noisy == [], [r.getMessage() for r in noisy]
