"""Container health check: the service's standard gRPC health check must answer SERVING.

Used by the Dockerfile's HEALTHCHECK (docker, compose); Kubernetes uses its native gRPC
probes instead. The service is ``$SERVICE``; its port comes from the same configuration the
service loads (``config/<PAIJU_ENV>.toml`` plus ``PAIJU_*`` overrides). Exit 0 = healthy.
"""

from __future__ import annotations

import os
import sys

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from services.common.config import load_config

WILDCARDS = {"", "0.0.0.0", "::", "[::]"}


def target(service: str) -> str:
    """The address to probe: loopback when the service binds every interface."""
    section = load_config().service(service)
    host = "127.0.0.1" if section.host in WILDCARDS else section.host
    return f"{host}:{section.port}"


def probe(address: str, timeout: float = 2.0) -> bool:
    """True when the overall health status ("" service) at ``address`` is SERVING."""
    with grpc.insecure_channel(address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        try:
            reply = stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=timeout)
        except grpc.RpcError:
            return False
    return reply.status == health_pb2.HealthCheckResponse.SERVING


def main() -> int:
    service = os.environ.get("SERVICE", "")
    if service not in ("lobby", "table", "arbiter", "records"):
        print(f"healthcheck: SERVICE={service!r} is not a Paiju service", file=sys.stderr)
        return 2
    address = target(service)
    if probe(address):
        return 0
    print(f"healthcheck: {service} at {address} is not SERVING", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
