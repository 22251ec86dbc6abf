"""records as a real process: killed with SIGKILL in the middle of a stream of settlements,
given more (and republished ones without a dedupe id, as a table retrying after the
JetStream duplicate window), restarted: every settlement is in the database exactly once
and the coin totals are right.

Messages delivered to the killed process and not acknowledged come back after the
consumer's ack_wait, shortened here (records.ack_wait_seconds) to keep the test quick.
"""

from __future__ import annotations

import asyncio
import signal
import sqlite3
import time
import urllib.request
from collections import Counter
from pathlib import Path

import nats
from nats.js.errors import NotFoundError

from services.common.bus import SETTLE_STREAM, SETTLE_SUBJECT, ensure_streams
from services.common.natsd import EmbeddedNats
from services.records.consumer import DURABLE
from services.records.store import START_COINS
from tests.service.test_records_support import (
    encode,
    payments_for,
    random_settlements,
)
from tests.support.procs import ServiceProc, make_service

FAST_REDELIVERY = {"PAIJU_RECORDS__ACK_WAIT_SECONDS": "3"}

ROOMS = [710001, 710002, 710003, 710004, 710005, 710006]
HANDS_PER_ROOM = 10
USERS = list(range(9001, 9013))


def settlements() -> list[dict]:
    return random_settlements(ROOMS, HANDS_PER_ROOM, USERS, seed=2026)


async def publish(url: str, messages: list[dict], with_id: bool) -> None:
    nc = await nats.connect(url)
    js = nc.jetstream()
    await ensure_streams(js)
    for m in messages:
        headers = {"Nats-Msg-Id": f"{m['room_id']}:{m['hand_no']}"} if with_id else None
        await js.publish(SETTLE_SUBJECT, encode(m), headers=headers)
    await nc.close()


async def consumer_idle(url: str) -> bool:
    nc = await nats.connect(url)
    try:
        info = await nc.jetstream().consumer_info(SETTLE_STREAM, DURABLE)
        return info.num_pending == 0 and info.num_ack_pending == 0
    except NotFoundError:
        return False
    finally:
        await nc.close()


def query(db: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(db, timeout=30) as conn:
        try:
            return conn.execute(sql).fetchall()
        except sqlite3.OperationalError:  # schema not created yet
            return []


def hand_count(db: Path) -> int:
    rows = query(db, "SELECT COUNT(*) FROM hands")
    return rows[0][0] if rows else 0


def wait_for(check, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not reached within {timeout}s")
        time.sleep(0.02)


def scrape(svc: ServiceProc, name: str) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{svc.metrics_port}/metrics", timeout=5) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
    return 0.0


def test_kill_9_and_republish_leave_every_settlement_written_once(
        fresh_nats: EmbeddedNats, tmp_path: Path) -> None:
    messages = settlements()
    first, second = messages[:30], messages[30:]
    db = tmp_path / "records.db"
    records = make_service("records", fresh_nats.url, tmp_path, **FAST_REDELIVERY).start()
    try:
        asyncio.run(publish(fresh_nats.url, first, with_id=True))
        wait_for(lambda: hand_count(db) >= 3, 30, "first settlements written")
        records.kill()
        written_at_kill = hand_count(db)

        asyncio.run(publish(fresh_nats.url, second, with_id=True))
        asyncio.run(publish(fresh_nats.url, first[:10], with_id=True))  # JetStream dedupes
        asyncio.run(publish(fresh_nats.url, first[:10], with_id=False))  # records dedupes

        records = make_service("records", fresh_nats.url, tmp_path, **FAST_REDELIVERY).start()
        wait_for(lambda: asyncio.run(consumer_idle(fresh_nats.url)), 50, "consumer drained")
        duplicates = scrape(records, "paiju_records_duplicates_ignored_total")
    finally:
        code = records.stop(signal.SIGTERM)
    assert code == 0

    print(f"written before the kill: {written_at_kill} of {len(first)}")
    keys = Counter(query(db, "SELECT room_id, hand_no FROM hands"))
    assert keys == Counter((m["room_id"], m["hand_no"]) for m in messages)
    assert duplicates >= 10
    assert query(db, "SELECT room_id, hand_no FROM ledger GROUP BY room_id, hand_no "
                     "HAVING SUM(delta) <> 0") == []
    assert query(db, "SELECT COUNT(*) FROM ledger") == [
        (2 * sum(len(payments_for(m["deltas"])) for m in messages),)]
    assert query(db, "SELECT COUNT(*) FROM hand_events") == [(2 * len(messages),)]
    totals = Counter()
    for m in messages:
        for uid, d in zip(m["seats"], m["deltas"], strict=True):
            totals[uid] += d
    coins = dict(query(db, "SELECT user_id, coins FROM players"))
    assert coins == {uid: START_COINS + totals[uid] for uid in USERS}
