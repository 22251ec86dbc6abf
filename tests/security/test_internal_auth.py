"""Authenticated calls between services (issue 9): with internal TLS on, every service
accepts only the callers that should call it. A caller with no certificate, a certificate
from another CA, or the wrong service's certificate is refused; health checks stay open on
the plaintext probe port, and nothing else is served there."""

from __future__ import annotations

import contextlib
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from paiju.v1 import (
    arbiter_pb2,
    arbiter_pb2_grpc,
    common_pb2,
    records_pb2,
    records_pb2_grpc,
    table_pb2,
    table_pb2_grpc,
)
from services.common.natsd import EmbeddedNats, free_port
from tests.support.certs import Authority, Pem, tls_env
from tests.support.procs import ServiceProc, make_service

pytest.importorskip("cryptography")


def secure(address: str, ca: Authority, pem: Pem | None, name: str) -> grpc.aio.Channel:
    creds = grpc.ssl_channel_credentials(
        root_certificates=ca.ca_file.read_bytes(),
        private_key=pem.key.read_bytes() if pem else None,
        certificate_chain=pem.cert.read_bytes() if pem else None)
    return grpc.aio.secure_channel(address, creds,
                                   options=[("grpc.ssl_target_name_override", name)])


def start(name: str, nats: EmbeddedNats, tmp: Path, ca: Authority, **extra: str) -> ServiceProc:
    probe = free_port()
    svc = make_service(name, nats.url, tmp, **tls_env(ca, ca.issue(name), probe), **extra)
    svc.health_address = f"127.0.0.1:{probe}"
    return svc.start(port_retries=0)


async def code_of(call) -> grpc.StatusCode:  # noqa: ANN001 - an awaitable gRPC call
    try:
        await call
    except grpc.aio.AioRpcError as exc:
        return exc.code()
    return grpc.StatusCode.OK


async def decide_code(channel: grpc.aio.Channel, *, window: bool) -> grpc.StatusCode:
    """The status the server ends a Decide stream with (``call.code()``). With ``window``, one
    (empty) window is sent and the stream half-closed. Without, nothing is sent and the
    answer is read: a refusal comes as the call starts (a stream let in waits out its
    deadline). A write or a half-close that meets the refusal could be reported by grpcio as
    INTERNAL in place of the server's status (its ``_write`` sets an internal error when the
    stream has closed: grpc/grpc#36066)."""
    call = arbiter_pb2_grpc.ArbiterStub(channel).Decide(timeout=5)
    with contextlib.suppress(grpc.aio.AioRpcError):
        if window:
            await call.write(arbiter_pb2.ResolveRequest(request_id=1))
            await call.done_writing()
        while await call.read() is not grpc.aio.EOF:
            pass
    code: grpc.StatusCode = await call.code()
    return code


async def test_each_service_accepts_only_its_callers(fresh_nats: EmbeddedNats,
                                                     tmp_path: Path) -> None:
    ca = Authority(tmp_path / "ca")
    rogue = Authority(tmp_path / "rogue", name="someone-else")
    arbiter = start("arbiter", fresh_nats, tmp_path, ca)
    records = start("records", fresh_nats, tmp_path, ca)
    table = start("table", fresh_nats, tmp_path, ca,
                  PAIJU_ARBITER__ADDRESS=arbiter.address)
    lobby_pem, table_pem, arbiter_pem = ca.issue("lobby"), ca.issue("table"), ca.issue("arbiter")
    create = table_pb2.CreateRoomRequest(game=common_pb2.DADUN, base_score=1, total_hands=1)
    try:
        # the table serves the lobby, and nobody else
        async with secure(table.address, ca, lobby_pem, "table") as ch:
            created = await table_pb2_grpc.TableStub(ch).CreateRoom(create, timeout=10)
            assert created.room.room_id > 0
        async with secure(table.address, ca, arbiter_pem, "table") as ch:
            assert await code_of(table_pb2_grpc.TableStub(ch).CreateRoom(create, timeout=5)) \
                == grpc.StatusCode.PERMISSION_DENIED
        for pem, authority in ((None, ca), (rogue.issue("lobby"), rogue)):
            # no certificate, or one of another CA: the handshake itself fails
            async with secure(table.address, authority if pem else ca, pem, "table") as ch:
                got = await code_of(table_pb2_grpc.TableStub(ch).CreateRoom(create, timeout=5))
                assert got == grpc.StatusCode.UNAVAILABLE
        async with grpc.aio.insecure_channel(table.address) as ch:   # plaintext to TLS
            got = await code_of(table_pb2_grpc.TableStub(ch).CreateRoom(create, timeout=5))
            assert got == grpc.StatusCode.UNAVAILABLE
        # the probe port answers health checks, and refuses everything else
        async with grpc.aio.insecure_channel(table.health_address) as ch:
            health = await health_pb2_grpc.HealthStub(ch).Check(
                health_pb2.HealthCheckRequest(service=""), timeout=5)
            assert health.status == health_pb2.HealthCheckResponse.SERVING
            got = await code_of(table_pb2_grpc.TableStub(ch).CreateRoom(create, timeout=5))
            assert got == grpc.StatusCode.PERMISSION_DENIED
        # records: replays and profiles for the lobby only (a table may not read hands)
        ask = records_pb2.ReplayRequest(room_id=1, hand_no=1, user_id=1)
        async with secure(records.address, ca, lobby_pem, "records") as ch:
            assert await code_of(records_pb2_grpc.RecordsStub(ch).GetReplay(ask, timeout=5)) \
                == grpc.StatusCode.NOT_FOUND
        async with secure(records.address, ca, table_pem, "records") as ch:
            assert await code_of(records_pb2_grpc.RecordsStub(ch).GetReplay(ask, timeout=5)) \
                == grpc.StatusCode.PERMISSION_DENIED
        # the arbiter answers tables only
        async with secure(arbiter.address, ca, table_pem, "arbiter") as ch:
            assert await decide_code(ch, window=True) == grpc.StatusCode.OK   # judged on its content
        async with secure(arbiter.address, ca, lobby_pem, "arbiter") as ch:
            assert await decide_code(ch, window=False) == grpc.StatusCode.PERMISSION_DENIED
    finally:
        for svc in (table, records, arbiter):
            svc.stop()
