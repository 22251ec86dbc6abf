"""Container health check: the service must say it is healthy (readiness). Exit 0 = healthy.

Used by the Dockerfile's HEALTHCHECK (docker, compose); Kubernetes uses its own probes
instead. The service is ``$SERVICE``; its ports come from the same configuration the
service loads (``config/<PAIJU_ENV>.toml`` plus ``PAIJU_*`` overrides). What is asked:

- plaintext (dev, compose): the standard gRPC health check ("" service) on the gRPC port;
- internal mutual TLS on (``tls.ca_file``, table, records and arbiter): the same check on
  the plaintext health-only port ``tls.probe_port`` when it is open, else on the gRPC port
  with this service's own certificate (the health service answers any certificate of the
  internal CA);
- the lobby with public TLS (``lobby.public_cert_file``): ``GET /healthz`` over HTTPS on
  its WebSocket port, the certificate not verified (it is the lobby's own, on loopback).
"""

from __future__ import annotations

import os
import ssl
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import NamedTuple

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from services.common.config import Config, load_config
from services.common.tls import CALLERS, internal_enabled

WILDCARDS = {"", "0.0.0.0", "::", "[::]"}
SERVICES = ("lobby", "table", "arbiter", "records")


class Check(NamedTuple):
    """How to ask: ``grpc`` (plaintext gRPC health), ``mtls`` (gRPC health with this
    service's certificate, the peer checked as ``service``), ``https`` (GET /healthz), or
    ``none`` (nothing can be asked; ``why`` says so)."""

    kind: str
    address: str
    service: str = ""
    why: str = ""


def _loopback(host: str) -> str:
    return "127.0.0.1" if host in WILDCARDS else host


def plan(service: str, cfg: Config | None = None) -> Check:
    """Where and how to check ``service``'s health with its configuration."""
    cfg = cfg if cfg is not None else load_config()
    section = cfg.service(service)
    host = _loopback(section.host)
    if service in CALLERS and internal_enabled(cfg):
        if cfg.tls.probe_port >= 0:   # the server opens it exactly in this case
            return Check("grpc", f"{host}:{cfg.tls.probe_port}")
        return Check("mtls", f"{host}:{section.port}", service)
    if service == "lobby" and cfg.lobby.public_cert_file:
        if cfg.lobby.ws_port >= 0:
            return Check("https", f"{host}:{cfg.lobby.ws_port}")
        return Check("none", f"{host}:{section.port}",
                     why="public TLS with lobby.ws_port off: no port a health check can ask")
    return Check("grpc", f"{host}:{section.port}")


def target(service: str) -> str:
    """The address the check asks (loopback when the service binds every interface)."""
    return plan(service).address


def _health(channel: grpc.Channel, timeout: float) -> bool:
    stub = health_pb2_grpc.HealthStub(channel)
    try:
        reply = stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=timeout)
    except grpc.RpcError:
        return False
    return reply.status == health_pb2.HealthCheckResponse.SERVING


def probe(address: str, timeout: float = 2.0) -> bool:
    """True when the overall health status ("" service) at ``address`` is SERVING."""
    with grpc.insecure_channel(address) as channel:
        return _health(channel, timeout)


def probe_mtls(address: str, service: str, cfg: Config, timeout: float = 2.0) -> bool:
    """The gRPC health check over mutual TLS with this service's own certificate."""
    try:
        ca, key, cert = (Path(p).read_bytes()
                         for p in (cfg.tls.ca_file, cfg.tls.key_file, cfg.tls.cert_file))
    except OSError as exc:
        print(f"healthcheck: cannot read the TLS files: {exc}", file=sys.stderr)
        return False
    creds = grpc.ssl_channel_credentials(root_certificates=ca, private_key=key,
                                         certificate_chain=cert)
    options = [("grpc.ssl_target_name_override", service)]
    with grpc.secure_channel(address, creds, options=options) as channel:
        return _health(channel, timeout)


def probe_https(address: str, timeout: float = 2.0) -> bool:
    """True when ``GET https://<address>/healthz`` answers 200 (certificate not verified,
    no proxy from the environment)."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}),
                                         urllib.request.HTTPSHandler(context=context))
    try:
        with opener.open(f"https://{address}/healthz", timeout=timeout) as reply:
            return reply.status == 200
    except (urllib.error.URLError, OSError):   # HTTPError (503) is a URLError
        return False


def main() -> int:
    service = os.environ.get("SERVICE", "")
    if service not in SERVICES:
        print(f"healthcheck: SERVICE={service!r} is not a Paiju service", file=sys.stderr)
        return 2
    cfg = load_config()
    check = plan(service, cfg)
    if check.kind == "none":
        print(f"healthcheck: {service}: {check.why}", file=sys.stderr)
        return 1
    healthy = {"grpc": lambda: probe(check.address),
               "mtls": lambda: probe_mtls(check.address, check.service, cfg),
               "https": lambda: probe_https(check.address)}[check.kind]()
    if healthy:
        return 0
    print(f"healthcheck: {service} at {check.address} ({check.kind}) is not healthy",
          file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
