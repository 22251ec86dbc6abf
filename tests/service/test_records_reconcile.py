"""``python -m services.records.reconcile`` on a real nats-server and SQLite: it writes the
settlements of SETTLE a database lacks, each once, from the start it is given; refuses a
start the stream no longer holds; skips what can never be written."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import nats
import pytest
from sqlalchemy import func, select

from services.common.bus import SETTLE_STREAM, SETTLE_SUBJECT, ensure_streams
from services.common.natsd import EmbeddedNats, free_port
from services.records.db import make_engine, migrate
from services.records.models import Hand, LedgerEntry, Player
from services.records.reconcile import ReconcileError, reconcile, start_from_manifest
from services.records.settlement import parse_settlement
from services.records.store import START_COINS, SettlementWriter
from tests.service.test_records_support import encode, final_message, hand_message

SEATS = [5001, 5002, 5003, 5004]
DELTAS = [[3, -1, -1, -1], [-2, 2, 0, 0], [0, 0, -4, 4], [1, 1, -1, -1]]


@pytest.fixture
async def js(fresh_nats: EmbeddedNats) -> AsyncIterator[nats.js.JetStreamContext]:
    nc = await nats.connect(fresh_nats.url)
    context = nc.jetstream()
    await ensure_streams(context, room_log=False)
    yield context
    await nc.close()


def messages() -> list[dict]:
    out = [hand_message(77, i + 1, SEATS, d) for i, d in enumerate(DELTAS)]
    totals = [sum(col) for col in zip(*DELTAS, strict=True)]
    return [*out, final_message(77, SEATS, totals, len(DELTAS))]


async def counts(url: str) -> tuple[int, int, dict[int, int]]:
    engine = make_engine(url)
    try:
        async with engine.connect() as conn:
            hands = (await conn.execute(select(func.count()).select_from(Hand))).scalar_one()
            ledger = (await conn.execute(select(func.sum(LedgerEntry.delta)))).scalar_one()
            coins = dict((await conn.execute(select(Player.user_id, Player.coins))).all())
    finally:
        await engine.dispose()
    return hands, ledger or 0, coins


async def test_reconcile_writes_what_the_database_lacks_exactly_once(
        fresh_nats: EmbeddedNats, js: nats.js.JetStreamContext, tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'restored.db'}"
    msgs = messages()
    for m in msgs:
        await js.publish(SETTLE_SUBJECT, encode(m))
    # the "restored" database holds the first two hands (the backup's)
    engine = make_engine(url)
    await migrate(engine)
    writer = SettlementWriter(engine)
    for m in msgs[:2]:
        assert await writer.write(parse_settlement(encode(m)))
    await engine.dispose()
    # from the backup's floor: the three missing settlements
    out = await reconcile(url, fresh_nats.url, 3)
    assert (out.from_seq, out.to_seq, out.written, out.duplicates) == (3, 5, 3, 0)
    hands, ledger_sum, coins = await counts(url)
    assert hands == 5 and ledger_sum == 0
    totals = [sum(col) for col in zip(*DELTAS, strict=True)]
    assert coins == {uid: START_COINS + t for uid, t in zip(SEATS, totals, strict=True)}
    # from the stream's start (no floor known), again: nothing moves
    out = await reconcile(url, fresh_nats.url, None)
    assert (out.from_seq, out.written, out.duplicates) == (1, 0, 5)
    assert await counts(url) == (hands, 0, coins)


async def test_a_start_the_stream_no_longer_holds_is_refused(
        fresh_nats: EmbeddedNats, js: nats.js.JetStreamContext, tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'restored.db'}"
    for m in messages():
        await js.publish(SETTLE_SUBJECT, encode(m))
    await js.purge_stream(SETTLE_STREAM, keep=2)       # as max_age would: seq 1..3 gone
    with pytest.raises(ReconcileError) as caught:
        await reconcile(url, fresh_nats.url, 2, do_migrate=True)
    assert caught.value.code == "RETENTION" and "2..3 are gone" in caught.value.message
    # a schema behind the code is refused too (no --migrate)
    bare = f"sqlite+aiosqlite:///{tmp_path / 'bare.db'}"
    with pytest.raises(ReconcileError) as caught:
        await reconcile(bare, fresh_nats.url, 4)
    assert caught.value.code == "SCHEMA"


async def test_malformed_and_deleted_messages_are_counted_and_skipped(
        fresh_nats: EmbeddedNats, js: nats.js.JetStreamContext, tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'restored.db'}"
    msgs = messages()
    await js.publish(SETTLE_SUBJECT, encode(msgs[0]))
    await js.publish(SETTLE_SUBJECT, b"{not json")
    bad = await js.publish(SETTLE_SUBJECT, encode(msgs[1]))
    await js.publish(SETTLE_SUBJECT, encode(msgs[2]))
    await js.delete_msg(SETTLE_STREAM, bad.seq)
    out = await reconcile(url, fresh_nats.url, 1, do_migrate=True)
    assert (out.written, out.malformed, out.missing, out.duplicates) == (2, 1, 1, 0)


def test_the_start_comes_from_the_manifest_floor(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"settle": {"ack_floor": 41}}), encoding="utf-8")
    assert start_from_manifest(path) == 42
    path.write_text(json.dumps({"settle": None, "settle_error": "NATS_URL not set"}),
                    encoding="utf-8")
    with pytest.raises(ReconcileError) as caught:
        start_from_manifest(path)
    assert caught.value.code == "MANIFEST" and "NATS_URL not set" in caught.value.message
    with pytest.raises(ReconcileError):
        start_from_manifest(tmp_path / "missing.json")


async def test_since_starts_at_the_first_settlement_stored_at_or_after_a_time(
        fresh_nats: EmbeddedNats, js: nats.js.JetStreamContext, tmp_path: Path) -> None:
    """A point-in-time recovery has a time, not a manifest: the start is found from
    JetStream's stored times (deleted sequences skipped)."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'restored.db'}"
    msgs = messages()
    acks = []
    for m in msgs[:3]:
        acks.append(await js.publish(SETTLE_SUBJECT, encode(m)))
    stored = await js.get_msg(SETTLE_STREAM, acks[-1].seq)
    assert stored.time is not None
    await asyncio.sleep(0.05)
    for m in msgs[3:]:
        acks.append(await js.publish(SETTLE_SUBJECT, encode(m)))
    await js.delete_msg(SETTLE_STREAM, acks[3].seq)        # the first one after the time
    after = stored.time + timedelta(milliseconds=1)
    out = await reconcile(url, fresh_nats.url, None, do_migrate=True, since=after)
    assert (out.from_seq, out.written, out.missing) == (4, 1, 1)   # 4 counts as missing
    out = await reconcile(url, fresh_nats.url, None, since=stored.time)
    assert (out.from_seq, out.written, out.duplicates, out.missing) == (3, 1, 1, 1)
    out = await reconcile(url, fresh_nats.url, None, since=stored.time + timedelta(days=1))
    assert (out.from_seq, out.to_seq, out.written) == (6, 5, 0)


async def test_an_unreachable_nats_is_an_error_not_a_wait(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'restored.db'}"
    with pytest.raises(ReconcileError) as caught:
        await reconcile(url, f"nats://127.0.0.1:{free_port()}", 1, do_migrate=True,
                        nats_wait=1.5)
    assert caught.value.code == "NATS_UNREACHABLE"
