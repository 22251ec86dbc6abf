"""A NATS server stopped in lame-duck mode (SIGUSR2, as a rolling upgrade of the StatefulSet
stops it) tells its clients so, shuts its JetStream down a grace period later and closes
its clients over ``lame_duck_duration``. The services' connection (``bus.connect``) leaves
it as soon as it is told, for another server of the cluster, so its JetStream requests do
not wait on a server whose JetStream is gone."""

from __future__ import annotations

import asyncio
import signal
import time

import pytest
from nats.js.api import StreamConfig
from nats.js.errors import NoStreamResponseError
from prometheus_client import REGISTRY

from services.common import bus
from services.common.natsd import EmbeddedNatsCluster

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]


def moves() -> float:
    return REGISTRY.get_sample_value("paiju_nats_lame_duck_moves_total") or 0.0


async def test_a_client_leaves_a_server_in_lame_duck_mode_at_once() -> None:
    with EmbeddedNatsCluster(3) as cluster:
        nc = await bus.connect(cluster.urls, "lame-duck-test")
        try:
            js = nc.jetstream(timeout=2)
            await js.add_stream(StreamConfig(name="T", subjects=["t.*"], num_replicas=3))
            deadline = time.monotonic() + 20
            while True:   # a new stream answers on every server a moment after its creation
                try:
                    await js.publish("t.1", b"first")
                    break
                except NoStreamResponseError:
                    assert time.monotonic() < deadline, "the new stream never answered"
                    await asyncio.sleep(0.1)
            port = nc.connected_url.port
            node = next(n for n in cluster.nodes if n.port == port)
            assert node.proc is not None
            before = moves()
            node.proc.send_signal(signal.SIGUSR2)
            signalled = time.monotonic()
            while nc.connected_url is None or nc.connected_url.port == port \
                    or not nc.is_connected:
                assert time.monotonic() - signalled < 10, "still on the lame-duck server"
                await asyncio.sleep(0.01)
            moved_after = time.monotonic() - signalled
            assert moves() == before + 1, "moved by the server's close, not by its notice"
            ack = await js.publish("t.1", b"after the move")
            assert ack.seq == 2
            # the server says so at the end of its grace period (1 s), as its JetStream stops
            print(f"moved {moved_after:.3f} s after the lame-duck signal")
        finally:
            await nc.close()
