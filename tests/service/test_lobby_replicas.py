"""The lobby among replicas:

- a lobby started before any table, on a three-node JetStream cluster with
  ``nats.replicas = 3``, creates the directory buckets (``tables``, ``rooms``, ``seats``)
  with three replicas, not one;
- the records dial address may name several records replicas (a gRPC ``ipv4:`` target, or a
  plain comma-separated list): logins go on while one replica is dead."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import grpc
import nats
import pytest

from paiju.v1 import records_pb2_grpc
from services.common import bus
from services.common.natsd import EmbeddedNats, EmbeddedNatsCluster
from services.lobby.app import LobbyApp
from services.lobby.records_client import RecordsClient, dial_targets
from services.lobby.server import start as start_lobby
from tests.support.lobbykit import lobby_config
from tests.support.lobbyworld import SECRET, FakeRecords, open_world


@pytest.fixture
def cluster() -> Iterator[EmbeddedNatsCluster]:
    c = EmbeddedNatsCluster(3)
    c.start()
    try:
        yield c
    finally:
        c.close()


async def test_a_lobby_started_first_creates_the_directory_with_the_configured_replicas(
        cluster: EmbeddedNatsCluster) -> None:
    cfg = lobby_config(cluster.urls, "127.0.0.1:1", SECRET)
    cfg = replace(cfg, nats=replace(cfg.nats, replicas=3))
    app = await LobbyApp.open(cfg)
    try:
        nc = await nats.connect(cluster.url_list)
        try:
            js = nc.jetstream()
            for bucket in (bus.TABLES_BUCKET, bus.ROOMS_BUCKET, bus.SEATS_BUCKET):
                info = await js.stream_info(f"KV_{bucket}")
                assert info.config.num_replicas == 3, bucket
        finally:
            await nc.close()
    finally:
        await app.close()


class Replica:
    """One in-test records server."""

    def __init__(self) -> None:
        self.records = FakeRecords()
        self.server = grpc.aio.server()
        records_pb2_grpc.add_RecordsServicer_to_server(self.records, self.server)
        self.port = self.server.add_insecure_port("127.0.0.1:0")

    async def start(self) -> Replica:
        await self.server.start()
        return self


def test_dial_targets() -> None:
    assert dial_targets("records:50054") == ["records:50054"]
    assert dial_targets("ipv4:127.0.0.1:1,127.0.0.1:2") == ["ipv4:127.0.0.1:1,127.0.0.1:2"]
    assert dial_targets("dns:///records-headless:50054") == ["dns:///records-headless:50054"]
    assert dial_targets(" a:1, b:2 ,") == ["a:1", "b:2"]
    with pytest.raises(ValueError):
        dial_targets(" , ")


@pytest.mark.parametrize("form", ["ipv4", "list"])
async def test_one_dead_records_replica_fails_no_call(form: str) -> None:
    one, two = await Replica().start(), await Replica().start()
    hosts = f"127.0.0.1:{one.port},127.0.0.1:{two.port}"
    client = RecordsClient(f"ipv4:{hosts}" if form == "ipv4" else hosts, timeout=3)
    try:
        for uid in range(1, 9):   # both replicas serve
            assert (await client.profile(uid, "", create=True)).user_id == uid
        assert one.records.calls and two.records.calls
        await one.server.stop(0)
        for uid in range(11, 31):
            assert (await client.profile(uid, "", create=True)).user_id == uid
        served = [req.user_id for _, req in two.records.calls]
        assert set(range(11, 31)) <= set(served)
    finally:
        await client.close()
        await two.server.stop(0)


async def test_a_lobby_logs_in_through_the_live_records_replica(
        fresh_nats: EmbeddedNats) -> None:
    async with open_world(fresh_nats) as world:
        dead = await Replica().start()
        await dead.server.stop(0)
        records = f"ipv4:127.0.0.1:{dead.port},127.0.0.1:{world.backend_port}"
        host = await start_lobby(lobby_config(world.nats.url, records, SECRET),
                                 port=0, metrics_port=0)
        world.lobbies.append(host)
        for uid in (501, 502, 503):
            c = await world.client(f"127.0.0.1:{host.port}")
            assert (await c.login(uid)).login_ok.player.user_id == uid
