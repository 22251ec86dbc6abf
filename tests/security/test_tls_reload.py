"""Issue 24: a service's TLS certificate is renewed under it without a restart. A real arbiter
process with internal mutual TLS; its certificate and key files are replaced, as cert-manager
and the kubelet do (a new file renamed over the old one): the next handshake gets the new
certificate, a stream opened before the swap keeps answering, and
``paiju_tls_certificate_expiry_seconds`` follows. A pair that does not match is refused
and the previous certificate stays served."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import ssl
import time
import urllib.request
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from paiju.v1 import arbiter_pb2, arbiter_pb2_grpc
from services.common import tls
from services.common.natsd import EmbeddedNats, free_port
from tests.support.procs import make_service
from tests.support.waiting import eventually

pytest.importorskip("cryptography")

from cryptography import x509  # noqa: E402 - needs cryptography

from tests.support.certs import Authority, Pem, tls_env  # noqa: E402 - needs cryptography

DAY = 86400.0


def served_certificate(address: str, ca: Authority, client: Pem) -> x509.Certificate:
    """The certificate a new TLS connection to ``address`` is given (a plain ``ssl`` client
    with ALPN h2, as gRPC's, and a client certificate, which the server requires)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(cafile=str(ca.ca_file))
    ctx.load_cert_chain(str(client.cert), str(client.key))
    ctx.set_alpn_protocols(["h2"])
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as raw, \
            ctx.wrap_socket(raw, server_hostname="arbiter") as conn:
        der = conn.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der)


def replace(src: Path, dst: Path) -> None:
    """Write a new file beside ``dst`` and rename it over (the reader sees the old or the new
    file, never half of one)."""
    tmp = dst.with_name(f".{dst.name}.new")
    shutil.copyfile(src, tmp)
    os.replace(tmp, dst)


def expiry_metric(metrics_port: int, use: str) -> float:
    body = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5).read()
    prefix = f'paiju_tls_certificate_expiry_seconds{{use="{use}"}} '
    for line in body.decode().splitlines():
        if line.startswith(prefix):
            return float(line[len(prefix):])
    raise AssertionError(f"no {prefix.strip()} in /metrics")


def reloads_metric(metrics_port: int, result: str) -> float:
    body = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5).read()
    prefix = f'paiju_tls_certificate_reloads_total{{result="{result}",use="server"}} '
    for line in body.decode().splitlines():
        if line.startswith(prefix):
            return float(line[len(prefix):])
    return 0.0


async def test_a_renewed_certificate_is_served_without_a_restart(
        fresh_nats: EmbeddedNats, tmp_path: Path) -> None:
    ca = Authority(tmp_path / "ca")
    first, second = ca.issue("arbiter", days=2), ca.issue("arbiter", days=60)
    caller = ca.issue("table")
    live = tmp_path / "live"
    live.mkdir()
    cert, key = live / "tls.crt", live / "tls.key"
    replace(first.cert, cert)
    replace(first.key, key)
    probe = free_port()
    arbiter = make_service("arbiter", fresh_nats.url, tmp_path,
                           **tls_env(ca, Pem(cert, key), probe))
    arbiter.health_address = f"127.0.0.1:{probe}"
    arbiter.start()
    creds = grpc.ssl_channel_credentials(root_certificates=ca.ca_file.read_bytes(),
                                         private_key=caller.key.read_bytes(),
                                         certificate_chain=caller.cert.read_bytes())
    first_serial = x509.load_pem_x509_certificate(first.cert.read_bytes()).serial_number
    second_serial = x509.load_pem_x509_certificate(second.cert.read_bytes()).serial_number
    try:
        assert served_certificate(arbiter.address, ca, caller).serial_number == first_serial
        assert 1.9 * DAY < expiry_metric(arbiter.metrics_port, "server") <= 2 * DAY

        async with grpc.aio.secure_channel(
                arbiter.address, creds,
                options=[("grpc.ssl_target_name_override", "arbiter")]) as channel:
            # a long-lived stream opened on the first certificate (as a table's Decide stream)
            stream = arbiter_pb2_grpc.ArbiterStub(channel).Decide()
            await stream.write(arbiter_pb2.ResolveRequest(request_id=1))
            reply = await asyncio.wait_for(stream.read(), 10)
            assert reply.request_id == 1

            # renewal: the key first, then the certificate (a reader may see the new key
            # beside the old certificate for a moment: that pair is refused, not served)
            replace(second.key, key)
            await eventually(lambda: asyncio.to_thread(
                lambda: reloads_metric(arbiter.metrics_port, "refused") >= 1),
                "a key that does not match its certificate was not refused", every=0.2)
            assert served_certificate(arbiter.address, ca, caller).serial_number == first_serial
            replace(second.cert, cert)

            await eventually(lambda: asyncio.to_thread(lambda: served_certificate(
                arbiter.address, ca, caller).serial_number == second_serial),
                "the new certificate is not served", every=0.2)
            assert 59 * DAY < expiry_metric(arbiter.metrics_port, "server") <= 60 * DAY
            assert reloads_metric(arbiter.metrics_port, "loaded") == 1

            # the stream and the connection opened before the swap keep working
            await stream.write(arbiter_pb2.ResolveRequest(request_id=2))
            reply = await asyncio.wait_for(stream.read(), 10)
            assert reply.request_id == 2
            await stream.done_writing()
            checked = await health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), timeout=5)
            assert checked.status == health_pb2.HealthCheckResponse.SERVING
        # and a new channel handshakes against the new certificate
        async with grpc.aio.secure_channel(
                arbiter.address, creds,
                options=[("grpc.ssl_target_name_override", "arbiter")]) as channel:
            checked = await health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), timeout=5)
            assert checked.status == health_pb2.HealthCheckResponse.SERVING
        assert arbiter.proc is not None and arbiter.proc.poll() is None   # never restarted
    finally:
        arbiter.stop()


def test_not_after_reads_the_certificate_end_of_validity(tmp_path: Path) -> None:
    """The standard-library DER walk agrees with ``cryptography`` (UTCTime certificates,
    and GeneralizedTime past 2049)."""
    ca = Authority(tmp_path / "ca")
    for days in (1, 90, 365 * 40):
        pem = ca.issue("table", days=days)
        expected = x509.load_pem_x509_certificate(pem.cert.read_bytes()).not_valid_after_utc
        assert tls.not_after(pem.cert.read_bytes()) == expected.timestamp()
    with pytest.raises(ValueError):
        tls.not_after(b"not a certificate")


async def test_the_lobby_websocket_port_serves_a_renewed_public_certificate(
        tmp_path: Path) -> None:
    """The public WebSocket port's context (``ws.server_ssl``) behind a real TLS listener:
    a renewed certificate is given to the next handshake, an open connection keeps its own."""
    from services.common.config import LobbyConfig
    from services.lobby.ws import server_ssl

    ca = Authority(tmp_path / "ca")
    first, second = ca.issue("lobby", days=2), ca.issue("lobby", days=60)
    cert, key = tmp_path / "public.crt", tmp_path / "public.key"
    replace(first.cert, cert)
    replace(first.key, key)
    context = server_ssl(LobbyConfig(public_cert_file=str(cert), public_key_file=str(key)))
    assert context is not None

    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(100):
            writer.write(data)
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(echo, "127.0.0.1", 0, ssl=context)
    port = server.sockets[0].getsockname()[1]
    client_ctx = ssl.create_default_context(cafile=str(ca.ca_file))

    async def connect() -> tuple[asyncio.StreamReader, asyncio.StreamWriter, int]:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=client_ctx,
                                                       server_hostname="lobby")
        der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
        return reader, writer, x509.load_der_x509_certificate(der).serial_number

    serial = {pem: x509.load_pem_x509_certificate(pem.cert.read_bytes()).serial_number
              for pem in (first, second)}
    try:
        reader, writer, got = await connect()
        assert got == serial[first]
        replace(second.key, key)
        replace(second.cert, cert)
        deadline = asyncio.get_running_loop().time() + 10   # files are looked at once a second
        while True:
            _, w2, got = await connect()
            w2.close()
            if got == serial[second] or asyncio.get_running_loop().time() > deadline:
                break
            assert got == serial[first]
            await asyncio.sleep(0.2)
        assert got == serial[second]
        writer.write(b"still here")          # the connection made before the renewal
        assert await asyncio.wait_for(reader.readexactly(10), 5) == b"still here"
        writer.close()
    finally:
        server.close()
        await server.wait_closed()


async def test_a_channel_presents_the_renewed_client_certificate_from_its_next_call(
        tmp_path: Path) -> None:
    """tls.channel (the lobby's to tables and records, the table's to arbiters): after the
    service's own certificate files change, its next call handshakes with the new
    certificate, through the same stub; a stream opened before keeps going on the old one.
    A real mutual-TLS server on loopback tells which client certificate it was shown."""
    from dataclasses import replace as dc_replace

    from services.common.config import load_config

    ca = Authority(tmp_path / "ca")
    server_pem = ca.issue("arbiter")
    first, second = ca.issue("table", days=2), ca.issue("table", days=60)
    cert, key = tmp_path / "client.crt", tmp_path / "client.key"
    replace(first.cert, cert)
    replace(first.key, key)

    async def who(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        (pem,) = context.auth_context()["x509_pem_cert"]
        return str(x509.load_pem_x509_certificate(pem).serial_number).encode()

    async def echo(requests, context):  # noqa: ANN001, ANN202 - a raw bytes stream
        async for item in requests:
            yield item

    server = grpc.aio.server()
    server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler("test.Peer", {
        "Who": grpc.unary_unary_rpc_method_handler(who),
        "Echo": grpc.stream_stream_rpc_method_handler(echo)})])
    port = server.add_secure_port("127.0.0.1:0", grpc.ssl_server_credentials(
        [(server_pem.key.read_bytes(), server_pem.cert.read_bytes())],
        root_certificates=ca.ca_file.read_bytes(), require_client_auth=True))
    await server.start()
    base = load_config("test", environ={})
    cfg = dc_replace(base, tls=dc_replace(base.tls, cert_file=str(cert), key_file=str(key),
                                          ca_file=str(ca.ca_file)))
    serial = {pem: x509.load_pem_x509_certificate(pem.cert.read_bytes()).serial_number
              for pem in (first, second)}
    channel = tls.channel(cfg, f"127.0.0.1:{port}", "arbiter")
    try:
        ask = channel.unary_unary("/test.Peer/Who")          # held once, as a stub holds it
        assert int(await ask(b"", timeout=5)) == serial[first]
        stream = channel.stream_stream("/test.Peer/Echo")()
        await stream.write(b"before")
        assert await asyncio.wait_for(stream.read(), 5) == b"before"

        replace(second.key, key)
        replace(second.cert, cert)
        await asyncio.sleep(tls.RELOAD_CHECK_SECONDS + 0.1)
        assert int(await ask(b"", timeout=5)) == serial[second]
        await stream.write(b"after")                         # the stream opened before
        assert await asyncio.wait_for(stream.read(), 5) == b"after"
        await stream.done_writing()
        from prometheus_client import REGISTRY

        left = REGISTRY.get_sample_value("paiju_tls_certificate_expiry_seconds",
                                         {"use": "client"})
        assert left is not None and 59 * DAY < left <= 60 * DAY
    finally:
        await channel.close()
        await server.stop(0)


def test_a_kubelet_style_secret_update_is_seen(tmp_path: Path) -> None:
    """The kubelet updates a mounted Secret by pointing the ``..data`` symlink at a new
    timestamped directory (the files themselves are symlinks through it): the files'
    targets change, which CertificateFiles notices; a half-written pair never loads."""
    ca = Authority(tmp_path / "ca")
    first, second = ca.issue("table", days=2), ca.issue("table", days=60)
    mount = tmp_path / "mount"
    mount.mkdir()

    def publish(pem: Pem, name: str) -> None:
        version = mount / name
        version.mkdir()
        shutil.copyfile(pem.cert, version / "tls.crt")
        shutil.copyfile(pem.key, version / "tls.key")
        shutil.copyfile(ca.ca_file, version / "ca.crt")
        link = mount / "..data_tmp"
        link.symlink_to(name)
        os.replace(link, mount / "..data")        # the atomic swap the kubelet does

    publish(first, "..2026_12_01")
    for f in ("tls.crt", "tls.key", "ca.crt"):
        (mount / f).symlink_to(Path("..data") / f)
    files = tls.CertificateFiles(str(mount / "tls.crt"), str(mount / "tls.key"),
                                 str(mount / "ca.crt"), use="server", check_seconds=0)
    assert files.cert == first.cert.read_bytes() and not files.refresh()
    publish(second, "..2026_12_02")
    assert files.refresh() and files.cert == second.cert.read_bytes()
    assert 59 * DAY < files.not_after - time.time() <= 60 * DAY
    # a version whose key is not its certificate's is refused, the current pair stays
    version = mount / "..2026_12_03"
    version.mkdir()
    shutil.copyfile(first.cert, version / "tls.crt")
    shutil.copyfile(second.key, version / "tls.key")
    shutil.copyfile(ca.ca_file, version / "ca.crt")
    (mount / "..data_tmp").symlink_to("..2026_12_03")
    os.replace(mount / "..data_tmp", mount / "..data")
    refused = tls.CERT_RELOADS.labels("server", "refused")._value.get()
    assert not files.refresh() and files.cert == second.cert.read_bytes()
    assert not files.refresh()                    # said once per version, not every look
    assert tls.CERT_RELOADS.labels("server", "refused")._value.get() == refused + 1
