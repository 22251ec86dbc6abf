"""The lobby as a caller of services that require mutual TLS (services/common/tls.py): with
its certificate it logs players in through records and seats them at a table; with internal
TLS off it cannot reach them (a backend error, nothing else). Real records and table
processes with a throw-away CA, the lobby in this process."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from paiju.v1 import common_pb2, lobby_msgs_pb2
from services.common.natsd import EmbeddedNats, free_port
from services.lobby import tokens
from services.lobby.server import start as start_lobby
from tests.support.lobbykit import lobby_config
from tests.support.lobbyworld import SECRET, Client
from tests.support.procs import ServiceProc, make_service

pytest.importorskip("cryptography")

from tests.support.certs import Authority, tls_env  # noqa: E402 - needs cryptography


def start(name: str, nats: EmbeddedNats, tmp: Path, ca: Authority, **extra: str) -> ServiceProc:
    probe = free_port()
    svc = make_service(name, nats.url, tmp, **tls_env(ca, ca.issue(name), probe),
                       PAIJU_LOBBY__TOKEN_SECRET=SECRET, **extra)
    svc.health_address = f"127.0.0.1:{probe}"
    return svc.start(port_retries=0)


async def test_the_lobby_reaches_records_and_tables_over_mutual_tls(
        fresh_nats: EmbeddedNats, tmp_path: Path) -> None:
    ca = Authority(tmp_path / "ca")
    records = start("records", fresh_nats, tmp_path, ca)
    table = start("table", fresh_nats, tmp_path, ca)
    pem = ca.issue("lobby")
    base = lobby_config(fresh_nats.url, records.address, SECRET)
    with_cert = replace(base, tls=replace(base.tls, ca_file=str(ca.ca_file),
                                          cert_file=str(pem.cert), key_file=str(pem.key)))
    hosts = []
    clients: list[Client] = []
    try:
        hosts.append(await start_lobby(with_cert, port=0, metrics_port=0))
        c = Client(f"127.0.0.1:{hosts[-1].port}")
        clients.append(c)
        await c.login(901)
        created = await c.request(lobby_msgs_pb2.CreateRoom(
            game=common_pb2.XUEZHAN, base_score=1, total_hands=1))
        assert created.WhichOneof("payload") == "room_joined", created
        assert (await c.request(lobby_msgs_pb2.AskReady(is_ready=True))).ret.code == 0

        hosts.append(await start_lobby(base, port=0, metrics_port=0))   # no certificate
        plain = Client(f"127.0.0.1:{hosts[-1].port}")
        clients.append(plain)
        refused = await plain.request(lobby_msgs_pb2.Login(token=tokens.mint(902, SECRET, 60)))
        assert refused.ret.code == common_pb2.ERR_UNAVAILABLE
    finally:
        for client in clients:
            await client.close()
        for host in hosts:
            await host.stop(0.5)
        table.stop()
        records.stop()
