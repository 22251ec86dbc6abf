"""Issue 9, TLS outside: with ``lobby.public_cert_file`` / ``public_key_file`` the lobby's
public gRPC port and its WebSocket port speak TLS only. Robots (and the terminal client)
reach it with a CA file; a plaintext client is refused; a browser-style ``wss://``
connection logs in. A throw-away CA, real records and table processes (plaintext inside),
the lobby in this process."""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path

import aiohttp
import grpc
import pytest

from clients.robot.robot import run_tables
from clients.session import LobbySession, mint_token
from paiju.frames import client_frame
from paiju.v1 import client_pb2, lobby_msgs_pb2
from services.common.natsd import EmbeddedNats
from services.lobby.server import start as start_lobby
from tests.support.lobbykit import ConnectStream, lobby_config
from tests.support.lobbyworld import SECRET
from tests.support.procs import make_service

pytest.importorskip("cryptography")

from tests.support.certs import Authority  # noqa: E402 - needs cryptography


async def test_a_tls_lobby_serves_robots_browsers_and_refuses_plaintext(
        fresh_nats: EmbeddedNats, tmp_path: Path) -> None:
    ca = Authority(tmp_path / "ca")
    pem = ca.issue("lobby", "lobby.example.test")
    records = make_service("records", fresh_nats.url, tmp_path).start()
    table = make_service("table", fresh_nats.url, tmp_path).start()
    cfg = lobby_config(fresh_nats.url, records.address, SECRET, ws_port=0,
                       public_cert_file=str(pem.cert), public_key_file=str(pem.key))
    host = await start_lobby(cfg, port=0, metrics_port=0)
    address, ws_port = f"localhost:{host.port}", host.ws_port
    try:
        # four robots play one hand through the TLS port, trusting the CA file
        stats = await asyncio.wait_for(run_tables(address, "xuezhan", 1, SECRET, hands=1,
                                                  first_uid=6001, ca_file=str(ca.ca_file)),
                                       120)
        assert [s.hands for s in stats] == [1, 1, 1, 1], [s.errors for s in stats]

        # a plaintext client gets nothing: the TLS handshake fails
        plain = ConnectStream(f"127.0.0.1:{host.port}")
        try:
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await plain.send(lobby_msgs_pb2.Login(token=mint_token(6010, SECRET)))
                await asyncio.wait_for(plain.call.read(), 10)
            assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
        finally:
            await plain.close()

        # a client that does not trust the CA is refused too
        untrusting = LobbySession(address, tls=True)   # the system's CAs only
        try:
            await untrusting.open()
            with pytest.raises(Exception):  # noqa: B017 - closed or timed out, never logged in
                await untrusting.login(mint_token(6011, SECRET), timeout=5)
        finally:
            await untrusting.close()

        # a browser: wss:// with the CA, one binary frame, LoginOk
        context = ssl.create_default_context(cafile=str(ca.ca_file))
        async with aiohttp.ClientSession() as http:
            async with http.ws_connect(f"wss://localhost:{ws_port}/ws", ssl=context) as ws:
                login = client_frame(lobby_msgs_pb2.Login(token=mint_token(6012, SECRET)), seq=1)
                await ws.send_bytes(login.SerializeToString())
                reply = client_pb2.ServerFrame.FromString((await ws.receive(10)).data)
                assert reply.HasField("login_ok") and reply.reply_to == 1, reply
            async with http.get(f"https://localhost:{ws_port}/healthz", ssl=context) as resp:
                assert resp.status == 200
            # plain HTTP to the TLS port gets no page
            with pytest.raises(aiohttp.ClientError):
                async with http.get(f"http://localhost:{ws_port}/healthz") as resp:
                    await resp.read()
    finally:
        await host.stop(0.5)
        table.stop()
        records.stop()


def test_client_credentials() -> None:
    from clients.session import channel_credentials

    assert channel_credentials() is None
    assert isinstance(channel_credentials(tls=True), grpc.ChannelCredentials)
    with pytest.raises(OSError):
        channel_credentials("/nonexistent/ca.pem")
