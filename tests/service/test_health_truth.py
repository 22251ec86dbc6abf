"""Readiness and liveness tell the truth: a service cut off from NATS goes NOT_SERVING at
once (readiness), and its ``liveness`` goes NOT_SERVING once that lasts past the bound;
both come back with NATS."""

from __future__ import annotations

import time
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from services.common.natsd import EmbeddedNats
from tests.support.procs import ServiceProc, make_service

SERVING = health_pb2.HealthCheckResponse.SERVING


def status(svc: ServiceProc, name: str = "") -> int:
    with grpc.insecure_channel(svc.address) as channel:
        reply = health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service=name), timeout=2)
        return int(reply.status)


def wait_status(svc: ServiceProc, name: str, want_serving: bool, timeout: float = 15) -> float:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if (status(svc, name) == SERVING) == want_serving:
            return time.monotonic() - started
        time.sleep(0.1)
    raise AssertionError(f"{svc.name} health {name!r} not {'SERVING' if want_serving else 'down'}")


def test_table_and_records_health_follow_their_nats_connection(
        fresh_nats: EmbeddedNats, tmp_path: Path) -> None:
    env = {"PAIJU_NATS__LIVENESS_SECONDS": "3"}
    table = make_service("table", fresh_nats.url, tmp_path, **env).start()
    records = make_service("records", fresh_nats.url, tmp_path, **env).start()
    try:
        for svc in (table, records):
            assert status(svc) == SERVING and status(svc, "liveness") == SERVING
        fresh_nats.stop(kill=True)
        for svc in (table, records):
            wait_status(svc, "", False)               # not ready: no NATS
        assert status(table, "liveness") == SERVING   # not yet past the 3 s bound
        for svc in (table, records):
            wait_status(svc, "liveness", False)       # down past the bound: restart me
            assert status(svc, "paiju.v1.Table" if svc is table else "paiju.v1.Records") != SERVING
        fresh_nats.start()
        for svc in (table, records):
            wait_status(svc, "", True, timeout=30)    # reconnected: ready and live again
            assert status(svc, "liveness") == SERVING
    finally:
        table.stop()
        records.stop()
