"""Each service boots as a real process, reports SERVING, serves /metrics, answers a
reflection listing, and stops cleanly on SIGTERM."""

from __future__ import annotations

import signal
import urllib.request
from pathlib import Path

import grpc
import pytest
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from services.common.natsd import EmbeddedNats
from tests.support.procs import make_service

SERVICES = ["lobby", "table", "arbiter", "records"]


@pytest.mark.parametrize("name", SERVICES)
def test_service_boots_serves_metrics_and_stops_on_sigterm(
        name: str, nats_server: EmbeddedNats, tmp_path: Path) -> None:
    svc = make_service(name, nats_server.url, tmp_path).start()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{svc.metrics_port}/metrics", timeout=5) as r:
            text = r.read().decode()
        assert r.status == 200
        # the health check made by start() went through the metrics interceptor
        assert 'paiju_grpc_requests_total{code="OK",method="/grpc.health.v1.Health/Check"' in text
        with grpc.insecure_channel(svc.address) as channel:
            stub = reflection_pb2_grpc.ServerReflectionStub(channel)
            replies = stub.ServerReflectionInfo(iter([
                reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=5)
            names = {s.name for reply in replies for s in reply.list_services_response.service}
        assert f"paiju.v1.{name.capitalize()}" in names
        assert "grpc.health.v1.Health" in names
    finally:
        code = svc.stop(signal.SIGTERM)
    assert code == 0, svc.log_path.read_text()
    assert '"msg": "stopped"' in svc.log_path.read_text()
