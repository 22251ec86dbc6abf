"""``bus.kv_latest``: a KV key's latest entry read from its stream's leader, telling a key that
was never there from one whose latest entry is a delete or purge marker (the room id counter
and the lobby's room lookups rely on it)."""

from __future__ import annotations

import uuid

import nats

from services.common import bus
from services.common.natsd import EmbeddedNats


async def test_the_latest_entry_its_revision_and_the_markers(nats_server: EmbeddedNats) -> None:
    nc = await nats.connect(nats_server.url)
    bucket = f"latest_{uuid.uuid4().hex[:8]}"
    try:
        js = nc.jetstream()
        kv = await bus.ensure_bucket(js, bucket)
        assert await bus.kv_latest(js, bucket, "k") is None            # never there

        first = await kv.put("k", b"one")
        second = await kv.put("k", b"two")
        assert await bus.kv_latest(js, bucket, "k") == bus.LatestEntry(b"two", second)
        assert second > first
        # the revision is what a compare-and-set names as the last
        third = await kv.update("k", b"three", last=second)
        assert await bus.kv_latest(js, bucket, "k") == bus.LatestEntry(b"three", third)

        await kv.put("empty", b"")
        entry = await bus.kv_latest(js, bucket, "empty")
        assert entry is not None and entry.value == b""                 # a value, not a marker

        await kv.delete("k")
        deleted = await bus.kv_latest(js, bucket, "k")
        assert deleted is not None and deleted.value is None and deleted.revision > third

        await kv.put("p", b"x")
        await kv.purge("p")
        purged = await bus.kv_latest(js, bucket, "p")
        assert purged is not None and purged.value is None
        assert await bus.kv_latest(js, bucket, "other") is None
    finally:
        await nc.close()
