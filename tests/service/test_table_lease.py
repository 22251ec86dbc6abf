"""The table's lease (services/table/lease.py): renewed on a thread of its own, so a busy
event loop (a burst of commands or rebuilds) is not taken for a stalled process, while a
wedged loop still lets its lease go."""

from __future__ import annotations

import asyncio
import time

import pytest
from nats.js.errors import KeyNotFoundError

from paiju.v1 import common_pb2, table_pb2
from services.common.natsd import EmbeddedNats
from services.table import lease as lease_module
from tests.service.test_table_failover import core, settled


async def test_a_busy_loop_keeps_its_lease_and_its_rooms(
        fresh_nats: EmbeddedNats, monkeypatch: pytest.MonkeyPatch) -> None:
    a = core(fresh_nats.url, "table-a", monkeypatch)   # lease 2 s: a stall is 1.5 s unrenewed
    await a.start()
    try:
        room = await a.create_room(table_pb2.CreateRoomRequest(
            game=common_pb2.CHANGSHA, base_score=1, total_hands=1))
        await settled(a, room.room_id)
        before = (await a.kv_tables.get(a.instance)).revision
        # the event loop busy for twice the lease on CPU, as under a burst of commands
        busy_until = time.monotonic() + 4.0
        while time.monotonic() < busy_until:
            pass
        renewed = (await a.kv_tables.get(a.instance)).revision - before
        await asyncio.sleep(a.lease.interval * 2)   # the loop's heartbeat has run since
        assert renewed >= 4, "the entry was not renewed while the loop was busy"
        assert a.lease.epoch == 0, "a busy loop was taken for a stall"
        reply = await a.command(table_pb2.TableCommand(room_id=room.room_id, user_id=5,
                                                       kind="snapshot"))
        assert reply.code == common_pb2.ERR_NOT_IN_ROOM   # the room answers, not "moving"
    finally:
        await a.stop()


async def test_a_wedged_loop_lets_its_lease_go(
        fresh_nats: EmbeddedNats, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lease_module, "LOOP_LATE_TTLS", 2)
    a = core(fresh_nats.url, "table-a", monkeypatch, lease=1)   # wedged after 2 s
    await a.start()
    try:
        time.sleep(3.5)   # the loop does not run at all (nor lets anything else run)
        # read before the loop runs again: the renewals stopped once the loop was 2 s late,
        # so the entry's TTL ran out (its last renewal was sent more than a lease ago)
        assert time.monotonic() - a.lease.renewed_until > 0, "a wedged loop kept its lease"
        for _ in range(40):
            if a.lease.epoch:
                break
            await asyncio.sleep(0.05)
        assert a.lease.epoch == 1   # back, it checks its rooms before they play on
    finally:
        await a.stop()


async def test_a_table_whose_server_is_cut_off_lets_its_lease_go(
        fresh_nats: EmbeddedNats, monkeypatch: pytest.MonkeyPatch) -> None:
    """The lease follows the table's own connection, not the renewal thread's: while the
    server the table works through says it reaches a minority of its cluster (its INFO's
    connect_urls, as a cut-off node of three sends them), the entry is not renewed and
    expires, so other tables adopt the rooms; once the connection has moved on, the table
    renews again and checks its rooms first (a new epoch)."""
    a = core(fresh_nats.url, "table-a", monkeypatch, lease=1)
    await a.start()
    try:
        assert await a.kv_tables.get(a.instance)
        assert a.lease.holding()
        a.nc.cluster_seen, a.nc.cluster_now = 3, 1   # what a cut-off node's INFO says
        assert a.lease.linked() is False
        gone = False
        for _ in range(60):   # the lease is 1 s; the connection moves off after 2 s
            await asyncio.sleep(0.05)
            try:
                await a.kv_tables.get(a.instance)
            except KeyNotFoundError:
                gone = True
                break
        assert gone, "a table cut off from its cluster kept its lease"
        assert not a.lease.holding()   # its readiness says so
        for _ in range(100):   # the connection moved (here: to the same, whole server)
            if a.lease.linked() and a.lease.holding():
                break
            await asyncio.sleep(0.05)
        assert a.lease.holding() and a.lease.epoch == 1
        assert await a.kv_tables.get(a.instance)
    finally:
        await a.stop()
