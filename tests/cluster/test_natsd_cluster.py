"""EmbeddedNatsCluster: three nats-servers routed as one JetStream cluster on loopback. An R3
stream keeps taking acknowledged publishes when its leader is SIGKILLed (a new leader is
elected), and the killed node comes back on its ports and store and catches up."""

from __future__ import annotations

import asyncio
import time

import nats
import pytest
from nats.js.api import StreamConfig
from nats.js.errors import NoStreamResponseError

from services.common.natsd import EmbeddedNatsCluster, stream_leader

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(240)]


async def test_r3_stream_survives_its_leader_killed_and_the_node_rejoins() -> None:
    cluster = EmbeddedNatsCluster(3)
    with cluster:
        assert len(set(cluster.url_list)) == 3 and cluster.urls.count(",") == 2
        nc = await nats.connect(cluster.url_list, max_reconnect_attempts=-1,
                                reconnect_time_wait=0.2)
        try:
            js = nc.jetstream(timeout=2)
            await js.add_stream(StreamConfig(name="T", subjects=["t.*"], num_replicas=3))
            # a new stream's subjects reach every server of the cluster a moment after it
            # is created: until then a publish has no responder
            deadline = time.monotonic() + 20
            while True:
                try:
                    await js.publish("t.1", b"m0")
                    break
                except NoStreamResponseError:
                    assert time.monotonic() < deadline, "the new stream never answered"
                    await asyncio.sleep(0.1)
            for i in range(1, 5):
                await js.publish("t.1", f"m{i}".encode())
            leader = await stream_leader(js, "T")
            assert leader in cluster.server_names
            victim = cluster.index_of(leader)
            cluster.kill(victim)
            assert not cluster.running(victim)
            deadline = time.monotonic() + 60
            while True:  # acknowledged again once a new leader is elected
                try:
                    await js.publish("t.1", b"after", timeout=1)
                    break
                except Exception:
                    assert time.monotonic() < deadline, "no new leader within 60 s"
                    await asyncio.sleep(0.2)
            new_leader = await stream_leader(js, "T")
            assert new_leader not in (None, leader)

            port = cluster.nodes[victim].port
            cluster.start_node(victim)
            assert cluster.nodes[victim].port == port
            await cluster.wait_healthy(victim, timeout=60)
            deadline = time.monotonic() + 60
            while True:  # the restarted node is a current replica again
                info = await js.stream_info("T")
                peers = {p.name: p.current for p in info.cluster.replicas or []}
                if peers.get(leader):
                    break
                assert time.monotonic() < deadline, f"{leader} not current: {info.cluster}"
                await asyncio.sleep(0.2)
            assert info.state.messages == 6 and info.config.num_replicas == 3
        finally:
            await nc.close()
    assert all(not cluster.running(i) for i in range(3))
