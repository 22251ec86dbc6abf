"""The restore drill (docs/runbooks.md, "Restore the records database"), on real parts: a
private PostgreSQL (initdb + pg_ctl on a free port), the embedded nats-server, the four
services as processes and robots playing through the lobby.

Robots play; the records database is backed up (deploy/db_backup.py: pg_dump and its
manifest with the SETTLE floor); robots play more; records is stopped and the dump restored
into a fresh database of the same server; ``python -m services.records.reconcile`` replays
what the backup lacks; records starts on the restored database. Then every hand a robot saw
end is stored exactly once with the deltas it was shown, each hand's ledger sums to zero,
and each player's coins and ledger agree with what the robots saw."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import grpc
import nats
import pytest

from clients.robot.robot import RobotStats, hand_number, run_tables
from paiju.v1 import records_pb2, records_pb2_grpc
from services.common.bus import SETTLE_STREAM
from tests.support.pgctl import PrivatePostgres, private_postgres
from tests.support.waiting import eventually
from tests.system.conftest import SECRET, start_stack, stop_stack

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(240)]

ROOT = Path(__file__).resolve().parents[2]
ROOMS, HANDS = 2, 3            # per phase; each room also ends with a final record
HANDS_DURING = 14              # hands of the phase played while the database is restored
FIRST_UID = 61_000
START_COINS = 100_000
TIMINGS: dict[str, float] = {}   # printed at the end (pytest -s): the runbook's figures
COUNTS: dict[str, int] = {}


@pytest.fixture
def postgres() -> Iterator[PrivatePostgres]:
    started = time.monotonic()
    with private_postgres() as pg:
        TIMINGS["postgres start"] = time.monotonic() - started
        yield pg


def run_tool(args: list[str], env: dict[str, str], step: str) -> str:
    started = time.monotonic()
    run = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=120, check=False)
    TIMINGS[step] = time.monotonic() - started
    assert run.returncode == 0, f"{step}: exit {run.returncode}\n{run.stderr[-3000:]}"
    return run.stdout


async def list_hands(address: str) -> list[records_pb2.HandRecord]:
    async with grpc.aio.insecure_channel(address) as channel:
        reply = await records_pb2_grpc.RecordsStub(channel).ListHands(
            records_pb2.ListHandsRequest(limit=1000), timeout=5)
    return list(reply.hands)


async def wait_stored(address: str, count: int, timeout: float = 30) -> None:
    async def stored() -> bool:
        return len(await list_hands(address)) >= count
    await eventually(stored, f"records never stored {count} settlements", timeout, every=0.2)


async def play(address: str, hands: int = HANDS) -> list[RobotStats]:
    results = await asyncio.wait_for(
        run_tables(address, "xuezhan", ROOMS, SECRET, hands=hands, first_uid=FIRST_UID), 120)
    assert sum(r.hands for r in results) == ROOMS * hands * 4, [r.errors for r in results]
    return results


async def published_beyond(nats_url: str, seq: int, players: asyncio.Task) -> None:
    nc = await nats.connect(nats_url)
    try:
        js = nc.jetstream()
        for _ in range(300):
            if (await js.stream_info(SETTLE_STREAM)).state.last_seq > seq:
                return
            assert not players.done(), "the robots finished before reconcile did: raise " \
                                       "HANDS_DURING"
            await asyncio.sleep(0.05)
    finally:
        await nc.close()
    raise AssertionError(f"no settlement published after sequence {seq}")


def seen_hands(results: list[RobotStats]) -> dict[tuple[int, int], tuple[int, ...]]:
    """(room, hand) -> the deltas the robots were shown at its end (all four agree)."""
    seen: dict[tuple[int, int], tuple[int, ...]] = {}
    for robot in results:
        for frame in robot.received:
            if frame.WhichOneof("payload") != "mj_hand_over":
                continue
            hand = hand_number(frame)
            assert hand is not None and frame.event_uid, frame
            key = (int(frame.event_uid.split(":")[0]), hand)
            deltas = tuple(frame.mj_hand_over.deltas)
            assert seen.setdefault(key, deltas) == deltas, f"robots disagree on {key}"
    return seen


async def test_restore_drill_replays_what_the_backup_lacks_exactly_once(
        tmp_path: Path, postgres: PrivatePostgres) -> None:
    drill = time.monotonic()
    live_url = postgres.createdb("records")
    stack = start_stack(tmp_path, DATABASE_URL=live_url, PAIJU_RECORDS__ACK_WAIT_SECONDS="2")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PAIJU_")},
           "PAIJU_ENV": "test", "NATS_URL": stack.nats.url, "PYTHONUNBUFFERED": "1"}
    phase = ROOMS * (HANDS + 1)          # settlements of one phase of play
    total = 2 * phase + ROOMS * (HANDS_DURING + 1)
    try:
        started = time.monotonic()
        first = await play(stack.lobby_address)
        await wait_stored(stack.records.address, phase)
        TIMINGS["phase 1 play"] = time.monotonic() - started

        # back up the live database
        out = run_tool(["deploy/db_backup.py", "backup", "--out", str(tmp_path / "backups")],
                       {**env, "DATABASE_URL": live_url}, "backup")
        manifest = json.loads(out)
        assert manifest["row_counts"]["hands"] == phase
        # every settlement up to the consumer's floor is in the dump (the last ones may be
        # committed but not yet acknowledged: then they are above the floor)
        floor = manifest["settle"]["ack_floor"]
        assert 0 < floor <= phase, manifest["settle"]
        dump = tmp_path / "backups" / manifest["dump"]

        # more hands after the backup, stored in the live database only
        started = time.monotonic()
        second = await play(stack.lobby_address)
        await wait_stored(stack.records.address, 2 * phase)
        TIMINGS["phase 2 play"] = time.monotonic() - started

        # robots go on playing through the restore: what is published before reconcile starts
        # is replayed by it, the rest comes through records' durable consumer afterwards
        third = asyncio.create_task(play(stack.lobby_address, HANDS_DURING))
        await wait_stored(stack.records.address, 2 * phase + 1)
        # the live database is lost: records stops, the dump goes into a fresh database
        stack.records.stop()
        restored_url = postgres.url("restored")
        out = run_tool(["deploy/db_backup.py", "restore", str(dump), "--create"],
                       {**env, "DATABASE_URL": restored_url}, "restore")
        assert json.loads(out)["row_counts"]["hands"] == phase
        manifest_path = dump.with_suffix(".json")
        out = run_tool(["-m", "services.records.reconcile", "--manifest", str(manifest_path)],
                       {**env, "DATABASE_URL": restored_url}, "reconcile")
        outcome = json.loads(out)
        assert outcome["from_seq"] == floor + 1
        # phase 2 with its finals, and at least the phase-3 hand the live records had stored
        assert outcome["written"] == outcome["to_seq"] - phase > phase, outcome
        assert outcome["duplicates"] == phase - floor, outcome
        assert outcome["malformed"] == outcome["missing"] == 0

        # and more settlements are published after reconcile read the stream's end, for
        # records' durable consumer to write into the restored database
        await published_beyond(stack.nats.url, outcome["to_seq"], third)
        started = time.monotonic()
        stack.records.env["DATABASE_URL"] = restored_url
        stack.records.start(port_retries=0)   # the table and lobby dial its port
        TIMINGS["records restart"] = time.monotonic() - started
        third_results = await asyncio.wait_for(third, 120)
        await wait_stored(stack.records.address, total)
        # an operator's second run from the stream's start writes nothing again
        again = json.loads(run_tool(["-m", "services.records.reconcile"],
                                    {**env, "DATABASE_URL": restored_url}, "reconcile again"))
        assert again["from_seq"] == 1 and again["written"] == 0, again
        assert again["duplicates"] == again["to_seq"] == total, again
        hands = await list_hands(stack.records.address)
        COUNTS["settlements replayed"] = outcome["written"]
        COUNTS["written by the consumer after"] = total - outcome["to_seq"]
    finally:
        stop_stack(stack)
    TIMINGS["drill total"] = time.monotonic() - drill

    # every hand a robot saw end is stored exactly once, with the deltas it was shown
    seen = seen_hands(first + second + third_results)
    assert len(seen) == ROOMS * (2 * HANDS + HANDS_DURING)
    keys = Counter((h.room_id, h.hand_no) for h in hands)
    assert len(hands) == total and set(keys.values()) == {1}, "a hand stored twice"
    stored = {(h.room_id, h.hand_no): tuple(h.deltas) for h in hands if not h.final}
    assert stored == seen
    assert len([h for h in hands if h.final]) == 3 * ROOMS
    # the ledger: zero-sum per hand, and per player equal to the deltas shown and the coins
    shown: dict[int, int] = defaultdict(int)
    for h in hands:
        if not h.final:
            for uid, delta in zip(h.user_ids, seen[(h.room_id, h.hand_no)], strict=True):
                shown[uid] += delta
    conn = await asyncpg.connect(restored_url.replace("postgresql+asyncpg", "postgresql"))
    try:
        per_hand = await conn.fetch("SELECT room_id, hand_no, sum(delta) AS s, count(*) AS n "
                                    "FROM ledger GROUP BY room_id, hand_no")
        per_user = dict(await conn.fetch("SELECT user_id, sum(delta) FROM ledger "
                                         "GROUP BY user_id"))
        coins = dict(await conn.fetch("SELECT user_id, coins FROM players"))
    finally:
        await conn.close()
    assert {(r["room_id"], r["hand_no"]) for r in per_hand if r["n"]} <= set(seen)
    assert all(r["s"] == 0 for r in per_hand), "a hand's ledger does not sum to zero"
    assert set(shown) == set(range(FIRST_UID, FIRST_UID + 4 * ROOMS))
    for uid, total in shown.items():
        assert per_user.get(uid, 0) == total, uid
        assert coins[uid] == START_COINS + total, uid
    print("\nrestore drill timings (s): "
          + ", ".join(f"{k} {v:.2f}" for k, v in TIMINGS.items())
          + "; " + ", ".join(f"{k} {v}" for k, v in COUNTS.items()))
