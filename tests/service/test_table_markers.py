"""The sweep of old delete markers in the directory buckets (services/table/markers.py), on
a real nats-server: old markers go, young ones, live entries and a value written after a
marker stay, and a late compare-and-set still cannot bring a swept room back."""

from __future__ import annotations

import nats
import nats.js.errors
import pytest
from nats.js.errors import KeyNotFoundError, NotFoundError

from services.common import bus
from services.common.natsd import EmbeddedNats
from services.table.markers import old_markers, purge, sweep


async def subjects(js: nats.js.JetStreamContext, bucket: str) -> set[str]:
    info = await js.stream_info(f"KV_{bucket}", subjects_filter=">")
    return set(info.state.subjects or {})


async def test_old_markers_are_purged_and_nothing_else(fresh_nats: EmbeddedNats) -> None:
    nc = await nats.connect(fresh_nats.url)
    try:
        js = nc.jetstream()
        rooms = await bus.ensure_bucket(js, bus.ROOMS_BUCKET)
        seats = await bus.ensure_bucket(js, bus.SEATS_BUCKET)
        live_rev = await rooms.put("10000001", b"live")
        closed_rev = await rooms.put("10000002", b"closed")
        await rooms.delete("10000002")
        await seats.put("7", b"room 10000002")
        await seats.delete("7")
        await seats.put("8", b"room 10000002")
        await seats.delete("8")
        await seats.put("8", b"room 10000001")      # user 8 sat again after the marker

        # a young marker stays
        assert await sweep(js, bus.ROOMS_BUCKET, older_than=3600) == 0
        assert await subjects(js, bus.ROOMS_BUCKET) == {"$KV.rooms.10000001",
                                                        "$KV.rooms.10000002"}

        assert await sweep(js, bus.ROOMS_BUCKET, older_than=0) == 1
        assert await sweep(js, bus.SEATS_BUCKET, older_than=0) == 1
        assert await subjects(js, bus.ROOMS_BUCKET) == {"$KV.rooms.10000001"}
        assert await subjects(js, bus.SEATS_BUCKET) == {"$KV.seats.8"}
        assert (await rooms.get("10000001")).value == b"live"
        assert (await seats.get("8")).value == b"room 10000001"
        with pytest.raises(KeyNotFoundError):
            await rooms.get("10000002")
        with pytest.raises((KeyNotFoundError, NotFoundError)):
            await seats.get("7")
        # a late write of the swept room, compare-and-set on its last revision, fails
        with pytest.raises(nats.js.errors.KeyWrongLastSequenceError):
            await rooms.update("10000002", b"back", last=closed_rev)
        assert live_rev == (await rooms.get("10000001")).revision
        # nothing left to sweep, and an empty sweep ends
        assert await sweep(js, bus.ROOMS_BUCKET, older_than=0) == 0

        # a user who sits again between the sweep's read and its purge keeps his seat
        await seats.delete("8")
        markers = await old_markers(js, bus.SEATS_BUCKET, older_than=0)
        assert [key for key, _ in markers] == ["8"]
        await seats.put("8", b"room 10000003")
        await purge(js, bus.SEATS_BUCKET, markers)
        assert (await seats.get("8")).value == b"room 10000003"
    finally:
        await nc.close()
