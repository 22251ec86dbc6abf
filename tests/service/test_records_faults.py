"""records as a real process through the faults of a running system: its PostgreSQL (a
private one, ``pg_ctl``) stopped and started again, and its nats-server killed with SIGKILL
and started again, while settlements keep coming. Nothing is lost or written twice, the
ledger stays zero-sum, and the faults are warnings that say what is retried: no traceback in
records' log. The settlement delay (publish to SQL) is printed from records' own histogram
(``pytest -s``)."""

from __future__ import annotations

import asyncio
import re
import signal
import time
import urllib.request
from collections import Counter
from pathlib import Path

import asyncpg
import nats

from services.common.bus import SETTLE_SUBJECT, ensure_streams
from services.common.natsd import EmbeddedNats
from services.records.store import START_COINS
from tests.service.test_records_crash import consumer_idle, wait_for
from tests.service.test_records_support import (
    encode,
    payments_for,
    random_settlements,
)
from tests.support.pgctl import PrivatePostgres
from tests.support.procs import ServiceProc, make_service

ROOMS = [720001 + i for i in range(8)]
HANDS_PER_ROOM = 12
USERS = list(range(9101, 9113))
RATE = 15.0                      # settlements published per second
PG_DOWN = (1.0, 3.0)             # seconds after the first publish: stopped, started again
NATS_DOWN = (5.0, 6.0)           # killed with SIGKILL, started again


def settlements() -> list[dict]:
    return random_settlements(ROOMS, HANDS_PER_ROOM, USERS, seed=2027)


async def publish_through_faults(url: str, messages: list[dict], pg: PrivatePostgres,
                                 broker: EmbeddedNats) -> None:
    """Publish at RATE (each one retried with its dedupe id until the broker takes it, as
    the table's outbox does) while the faults happen on schedule."""
    async def quiet(exc: Exception) -> None:   # the broker's kill is the point here
        del exc

    nc = await nats.connect(url, max_reconnect_attempts=-1, reconnect_time_wait=0.2,
                            error_cb=quiet)
    js = nc.jetstream()
    await ensure_streams(js)

    async def faults() -> None:
        await asyncio.sleep(PG_DOWN[0])
        await asyncio.to_thread(pg.halt)
        await asyncio.sleep(PG_DOWN[1] - PG_DOWN[0])
        await asyncio.to_thread(pg.resume)
        await asyncio.sleep(NATS_DOWN[0] - PG_DOWN[1])
        await asyncio.to_thread(broker.stop, True)
        await asyncio.sleep(NATS_DOWN[1] - NATS_DOWN[0])
        await asyncio.to_thread(broker.start)

    schedule = asyncio.create_task(faults())
    try:
        for m in messages:
            key = f"{m['room_id']}:{m['hand_no']}"
            m["settled_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())  # the delay's start
            while True:
                try:
                    await js.publish(SETTLE_SUBJECT, encode(m),
                                     headers={"Nats-Msg-Id": key}, timeout=1)
                    break
                except Exception:  # the broker is down or electing: the same message again
                    await asyncio.sleep(0.1)
            await asyncio.sleep(1 / RATE)
        await schedule
    finally:
        await nc.close()


def metrics(svc: ServiceProc) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{svc.metrics_port}/metrics", timeout=5) as r:
        return str(r.read().decode())


def delay_buckets(text: str) -> dict[float, float]:
    """records' settlement delay histogram: upper bound -> cumulative count."""
    out = {}
    for le, value in re.findall(
            r'^paiju_records_settlement_delay_seconds_bucket\{le="([^"]+)"\} (\S+)$', text, re.M):
        out[float(le)] = float(value)
    return out


async def rows(url: str, sql: str) -> list[tuple]:
    conn = await asyncpg.connect(url)
    try:
        return [tuple(r) for r in await conn.fetch(sql)]
    finally:
        await conn.close()


def test_a_database_restart_and_a_broker_kill_lose_nothing_and_log_no_traceback(
        postgres: PrivatePostgres, tmp_path: Path) -> None:
    messages = settlements()
    db_url = postgres.createdb("records")
    broker = EmbeddedNats(store_dir=str(tmp_path / "nats")).start()
    records = make_service("records", broker.url, tmp_path, DATABASE_URL=db_url,
                           PAIJU_RECORDS__ACK_WAIT_SECONDS="3")
    try:
        records.start()
        started = time.monotonic()
        asyncio.run(publish_through_faults(broker.url, messages, postgres, broker))
        wait_for(lambda: asyncio.run(consumer_idle(broker.url)), 60, "consumer drained")
        drained = time.monotonic() - started
        text = metrics(records)
    finally:
        code = records.stop(signal.SIGTERM)
        broker.close()
    assert code == 0

    log = records.log_path.read_text(errors="replace")
    assert "Traceback" not in log, log[-4000:]
    assert "database unavailable" in log
    retries = re.search(r'^paiju_records_fault_retries_total\{fault="database"\} (\S+)$',
                        text, re.M)
    assert retries and float(retries.group(1)) >= 1

    plain = db_url.replace("postgresql+asyncpg", "postgresql")
    keys = Counter(asyncio.run(rows(plain, "SELECT room_id, hand_no FROM hands")))
    assert keys == Counter((m["room_id"], m["hand_no"]) for m in messages)
    assert asyncio.run(rows(plain, "SELECT room_id, hand_no FROM ledger GROUP BY room_id, "
                                   "hand_no HAVING SUM(delta) <> 0")) == []
    assert asyncio.run(rows(plain, "SELECT COUNT(*) FROM ledger")) == [
        (2 * sum(len(payments_for(m["deltas"])) for m in messages),)]
    totals: Counter[int] = Counter()
    for m in messages:
        for uid, d in zip(m["seats"], m["deltas"], strict=True):
            totals[uid] += d
    coins = dict(asyncio.run(rows(plain, "SELECT user_id, coins FROM players")))
    assert coins == {uid: START_COINS + totals[uid] for uid in USERS}

    buckets = delay_buckets(text)
    total = buckets[float("inf")]
    assert total == len(messages)
    within = {le: n / total for le, n in sorted(buckets.items()) if le <= 10}
    print(f"\n{len(messages)} settlements, database down {PG_DOWN[1] - PG_DOWN[0]:.0f} s, "
          f"broker down {NATS_DOWN[1] - NATS_DOWN[0]:.0f} s, all written {drained:.1f} s "
          f"after the first publish; share written within: "
          + ", ".join(f"{le:g} s {share:.0%}" for le, share in within.items()))
