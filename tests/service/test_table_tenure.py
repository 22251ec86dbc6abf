"""The table's tenure (services/table/lease.py, "Fencing") on a real table and nats-server:
once the lease's renewals stop for longer than ``stall_after`` (as in a process stopped, or
cut off from its cluster) a room's tenure is no longer current. Its commands are answered
"moving" and append nothing until the room's check after the stall confirms it; what its
timers would append meanwhile waits for that check, and when the check does not come
within a lease the room is let go without a record, rebuilt from its log, and plays on.

The log's fence (tests/service/test_room_log_append.py) refuses the append of a table whose
room another table wrote to; these tests show the table holds its own appends before the
log is asked.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest

from paiju import frames
from paiju.v1 import common_pb2, table_pb2, table_pb2_grpc
from paiju.v1 import lobby_msgs_pb2 as lm
from services.common.config import load_config
from services.common.natsd import EmbeddedNats
from services.table.core import TableCore
from services.table.server import start as start_table
from tests.support.tablekit import LobbyLink, Table, log_count
from tests.support.waiting import eventually

TTL = 3    # seconds: renewals every 0.75 s, a stall after 2.25 s, a held append waits 3 s
TURN = 2 * TTL   # seconds: a seat that does not act is played by its timer, after a stall


@pytest.fixture
async def stack(fresh_nats: EmbeddedNats,
                monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[dict[str, Any]]:
    cfg = load_config("test", environ={
        "NATS_URL": fresh_nats.url,
        "PAIJU_TABLE__LEASE_TTL_SECONDS": str(TTL), "PAIJU_TABLE__INSTANCE": "table-tenure",
        "PAIJU_TABLE__TURN_SECONDS": str(TURN), "PAIJU_TABLE__WINDOW_SECONDS": str(TURN)})
    table = await start_table(cfg, port=0, metrics_port=-1)
    core = next(hook.__self__ for hook in table.on_stop  # type: ignore[attr-defined]
                if isinstance(getattr(hook, "__self__", None), TableCore))
    # the renewal thread renews (and ticks) only while the table's connection can do its
    # work (Lease.linked): "cut" stops the renewals as a stopped process or a cut-off server
    # would
    link_state = {"cut": False}
    linked = core.lease.linked
    monkeypatch.setattr(core.lease, "linked", lambda: not link_state["cut"] and linked())
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{table.port}")
    link = LobbyLink(f"127.0.0.1:{table.port}", fresh_nats.url)
    t: Table | None = None
    try:
        reply = await table_pb2_grpc.TableStub(channel).CreateRoom(table_pb2.CreateRoomRequest(
            game=common_pb2.XUEZHAN, base_score=1, total_hands=4))
        t = Table(fresh_nats.url, link, reply.room.room_id, "xuezhan")
        await t.connect()
        for uid in (51, 52, 53, 54):
            _, joined = await t.seat(uid)
            assert joined.code == 0, joined.message
        yield {"core": core, "table": t, "link": link_state, "js": core.js}
    finally:
        if t is not None:
            await t.close()
        await link.close()
        await channel.close()
        await table.stop(0)


async def stalled(core: TableCore, room: int, link: dict[str, bool]) -> int:
    """Stop the renewals until the room's tenure is stale; the lease's epoch then."""
    link["cut"] = True
    await eventually(lambda: not core.lease.current(core.tenure.get(room)),
                     "the tenure stayed current", 3 * TTL)
    return core.lease.epoch


def ready(t: Table, uid: int) -> asyncio.Task[table_pb2.TableReply]:
    return asyncio.create_task(
        t.link.send(t.room_id, uid, frames.client_frame(lm.AskReady(is_ready=True))))


async def test_a_command_after_a_stall_is_taken_only_once_the_room_is_checked(
        stack: dict[str, Any]) -> None:
    core, t, js = stack["core"], stack["table"], stack["js"]
    room = t.room_id
    epoch = await stalled(core, room, stack["link"])
    before = await log_count(js, room)
    refused = await ready(t, 51)
    assert refused.code == common_pb2.ERR_ROOM_MOVING, refused
    assert await log_count(js, room) == before, "written while stale"
    stack["link"]["cut"] = False   # renewals again: the stall is seen, the room checked

    async def taken() -> bool:
        return (await ready(t, 51)).code == 0

    await eventually(taken, "the room was never checked", 5 * TTL)
    assert core.lease.epoch > epoch and core.tenure[room] == core.lease.epoch
    assert await log_count(js, room) == before + 1


async def test_what_the_timers_do_after_a_stall_is_held_and_dropped_unchecked(
        stack: dict[str, Any], caplog: pytest.LogCaptureFixture) -> None:
    core, t, js = stack["core"], stack["table"], stack["js"]
    room = t.room_id
    await t.ready_all()   # a hand: nobody acts, so the turn timer plays it, after the stall
    actor = core.writers[room]
    await stalled(core, room, stack["link"])
    assert actor.room.in_hand()
    await asyncio.sleep(0.2)   # an append begun while current lands meanwhile
    before = await log_count(js, room)
    # a timer's record waits for the room's check, which cannot come (no renewals): after a
    # lease the room is let go
    await eventually(lambda: core.writers.get(room) is not actor, "never let go", TURN + 2 * TTL)
    assert await log_count(js, room) == before, "a room held through a stall appended"
    assert "room held through a stall not confirmed" in caplog.text   # by the tenure's wait
    stack["link"]["cut"] = False
    # the scan rebuilds it from its log (the directory still names this table), and its
    # timers play on
    await eventually(lambda: core.writers.get(room) not in (None, actor), "never rebuilt",
                     5 * TTL)
    assert core.tenure[room] == core.lease.epoch

    async def played_on() -> bool:
        return await log_count(js, room) > before + 1   # its owner record, then a move

    await eventually(played_on, "the rebuilt room did not play on", TURN + 2 * TTL)
