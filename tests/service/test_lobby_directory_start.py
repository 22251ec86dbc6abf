"""A lobby started before the directory exists. Its NATS user may not create the directory
buckets (deploy/k8s/nats/values-auth.yaml, on purpose: only tables write them), so on a
fresh namespace it used to time out in ``Directory.open`` and exit, in a crash loop until a
table had made them. Now it serves, not ready (gRPC health NOT_SERVING, ``/healthz`` 503,
but live), opens the buckets again with a backoff, and becomes ready once they are there.

A real nats-server with the production users and permissions (the fixture of
tests/unit/deploy/test_deploy_nats.py), the lobby in this process."""

from __future__ import annotations

import asyncio

import nats
import pytest

from paiju.contracts.directory import TableEntry
from paiju.v1 import lobby_msgs_pb2
from services.common import bus
from services.lobby.grpc_front import SERVICE
from services.lobby.server import start as start_lobby
from tests.service.test_lobby_health import (
    NOT_SERVING,
    SERVING,
    grpc_health,
    http_status,
)
from tests.support.lobbykit import lobby_config
from tests.support.lobbyworld import SECRET, Client, E, code_of
from tests.support.waiting import eventually

pytest.importorskip("yaml")

from tests.unit.deploy.test_deploy_nats import AuthedNats, authed_nats  # noqa: E402,F401


async def test_a_lobby_starts_not_ready_without_its_buckets_and_is_ready_once_they_exist(
        authed_nats: AuthedNats) -> None:  # noqa: F811 - the imported fixture
    cfg = lobby_config(authed_nats.url("lobby"), "127.0.0.1:1", SECRET, ws_port=0)
    host = await asyncio.wait_for(start_lobby(cfg, port=0, metrics_port=0), 30)
    address, ws = f"127.0.0.1:{host.port}", host.ws_port
    admin = await nats.connect(authed_nats.url("admin"))
    client = Client(address)
    try:
        assert not host.app.directory.opened
        for name in ("", SERVICE):
            assert await grpc_health(address, name) == NOT_SERVING
        assert await grpc_health(address, "liveness") == SERVING     # not restarted for it
        assert await http_status(ws, "/healthz") == 503
        assert await http_status(ws, "/livez") == 200
        # a client that comes anyway is told the lobby cannot serve yet, nothing breaks
        early = await client.request(lobby_msgs_pb2.HeartBeat(client_time_ms=1))
        assert code_of(early) == E.ERR_NOT_LOGGED_IN
        refused = await client.request(lobby_msgs_pb2.Login(token="1.2.3"))
        assert code_of(refused) == E.ERR_BAD_TOKEN

        # a table (here the admin) creates the buckets: the lobby opens them and is ready
        js = admin.jetstream()
        tables = await bus.ensure_bucket(js, bus.TABLES_BUCKET, ttl=10)
        await bus.ensure_bucket(js, bus.ROOMS_BUCKET)
        await bus.ensure_bucket(js, bus.SEATS_BUCKET)
        async def serving() -> bool:
            return await grpc_health(address) == SERVING
        await eventually(serving, "the lobby never became ready", seconds=30, every=0.1)
        assert await http_status(ws, "/healthz") == 200
        # and it follows the directory as the lobby user may: a table entry reaches it
        await tables.put("table-x", TableEntry(instance="table-x", address="127.0.0.1:1",
                                               rooms=0, players=0, started_at=0.0,
                                               draining=False).encode())

        async def seen() -> bool:
            return [t.instance for t in
                    host.app.directory.table_cache.live()] == ["table-x"]
        await eventually(seen, "the table entry never reached the lobby", seconds=10, every=0.1)
        # the only thing refused to the lobby: creating the buckets
        violations = authed_nats.violations()
        assert violations and all("$JS.API.STREAM.CREATE.KV_" in line for line in violations), \
            violations
    finally:
        await client.close()
        await admin.close()
        await host.stop(0.5)
