"""services/table/logmigrate: room logs written into the single stream ``ROOMLOG`` (subjects
``room.<id>.log``) are moved to their shards on a real nats-server, where the table's
RoomLog reads them back whole and in order; a room copied in part by an interrupted run is
copied again, a second run changes nothing, --delete removes the old stream."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import nats
import pytest
from nats.js.api import StreamConfig
from nats.js.errors import NotFoundError

from services.common import bus
from services.common.natsd import EmbeddedNats
from services.table.logmigrate import SINGLE_STREAM, migrate
from services.table.roomlog import RoomLog

ROOMS = {3001: 5, 3002: 3, 3003: 1, 3004: 7}   # room -> records; ids on every shard


@pytest.fixture
async def js(fresh_nats: EmbeddedNats) -> AsyncIterator[Any]:
    nc = await nats.connect(fresh_nats.url)
    try:
        yield nc.jetstream()
    finally:
        await nc.close()


def record(room: int, i: int) -> dict[str, Any]:
    return {"i": i, "t": "create" if i == 0 else "act", "room": room, "n": i * 7}


async def test_single_stream_logs_move_to_their_shards(js: Any) -> None:
    assert {bus.room_log_stream(r) for r in ROOMS} == set(bus.ROOM_LOG_STREAMS)
    await js.add_stream(StreamConfig(name=SINGLE_STREAM, subjects=["room.*.log"]))
    for room, count in ROOMS.items():
        for i in range(count):
            await js.publish(f"room.{room}.log", json.dumps(record(room, i)).encode())
    # an earlier run stopped inside room 3004: two of its records are already there
    await bus.ensure_streams(js)
    for i in range(2):
        await js.publish(bus.room_log(3004), json.dumps(record(3004, i)).encode())

    moved = await migrate(js)
    assert (moved.rooms, moved.records, moved.in_place, moved.deleted) == (4, 16, 0, False)
    log = RoomLog(js, "test")
    for room, count in ROOMS.items():
        records, last = await log.read(room)
        assert records == [record(room, i) for i in range(count)], room
        # the table appends after the copy, fenced on the copy's last record
        await log.append(room, count, record(room, count), last)

    again = await migrate(js, delete=True)
    assert (again.rooms, again.records, again.in_place, again.deleted) == (0, 0, 4, True)
    with pytest.raises(NotFoundError):
        await js.stream_info(SINGLE_STREAM)
    for room, count in ROOMS.items():
        records, _ = await log.read(room)
        assert len(records) == count + 1
    assert (await migrate(js)).rooms == 0      # no single stream: nothing to do
