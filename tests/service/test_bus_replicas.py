"""Start-up and the JetStream streams: created with the configured replicas, and an existing
stream is never changed (an operator's replicas and limits stand); several server URLs."""

from __future__ import annotations

import nats
import pytest
from nats.js.api import RetentionPolicy, StorageType, StreamConfig
from prometheus_client import REGISTRY

from services.common import bus
from services.common.natsd import EmbeddedNats, free_port


async def test_an_existing_stream_is_reported_never_updated(fresh_nats: EmbeddedNats) -> None:
    nc = await nats.connect(fresh_nats.url)
    js = nc.jetstream()
    try:
        # an operator's stream: other limits than ours, one replica
        await js.add_stream(StreamConfig(
            name=bus.SETTLE_STREAM, subjects=["settle.*"], storage=StorageType.FILE,
            retention=RetentionPolicy.LIMITS, max_age=3600, num_replicas=1))
        # a single server cannot hold three replicas: an update to 3 would fail here
        await bus.ensure_streams(js, replicas=3, room_log=False)
        info = await js.stream_info(bus.SETTLE_STREAM)
        assert info.config.max_age == 3600 and info.config.num_replicas == 1
        labels = {"stream": bus.SETTLE_STREAM}
        assert REGISTRY.get_sample_value("paiju_stream_replicas", labels) == 1
        assert REGISTRY.get_sample_value("paiju_stream_replicas_target", labels) == 3
        # a missing stream is created with what is configured
        await bus.ensure_streams(js, replicas=1)
        for name in bus.ROOM_LOG_STREAMS:
            assert (await js.stream_info(name)).config.num_replicas == 1
        kv = await bus.ensure_bucket(js, "tables", ttl=5, replicas=1)
        await kv.put("x", b"1")
        assert REGISTRY.get_sample_value("paiju_stream_replicas", {"stream": "KV_tables"}) == 1
    finally:
        await nc.close()


async def test_several_urls_are_accepted_and_a_dead_one_is_skipped(
        fresh_nats: EmbeddedNats) -> None:
    dead = f"nats://127.0.0.1:{free_port()}"
    nc = await bus.connect(f"{dead}, {fresh_nats.url}", "table-test")
    try:
        assert nc.is_connected
        assert nc.connected_url is not None and nc.connected_url.port == fresh_nats.port
    finally:
        await nc.close()
    with pytest.raises(ValueError):
        bus.server_urls(" , ")
