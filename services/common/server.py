"""The gRPC (grpc.aio) bootstrap every service uses.

Standard health service, reflection, the Prometheus interceptor, ``/metrics`` on its own
port, and a graceful shutdown on SIGTERM/SIGINT: health goes NOT_SERVING, in-flight calls
get ``grace`` seconds, then the service's own ``on_stop`` hooks run.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from prometheus_client import start_http_server

from services.common import tls
from services.common.config import Config, require_internal_tls
from services.common.metrics import MetricsInterceptor

log = logging.getLogger("paiju.server")

Hook = Callable[[], Awaitable[None]]


@dataclass
class ServiceHost:
    """A running service: its gRPC server, health servicer and shutdown hooks."""

    name: str
    server: grpc.aio.Server
    health: health.aio.HealthServicer
    port: int
    metrics_port: int
    service_names: tuple[str, ...]
    on_stop: list[Hook] = field(default_factory=list)
    on_drain: list[Hook] = field(default_factory=list)
    watch: Any = None       # services.common.health.DependencyWatch, when the service has one
    _metrics_server: tuple[Any, threading.Thread] | None = None  # (WSGI server, its thread)

    async def set_serving(self, serving: bool) -> None:
        status = (health_pb2.HealthCheckResponse.SERVING if serving
                  else health_pb2.HealthCheckResponse.NOT_SERVING)
        for name in ("",) + self.service_names:
            await self.health.set(name, status)

    async def stop(self, grace: float = 5.0) -> None:
        if self.watch is not None:
            await self.watch.drain()
        await self.set_serving(False)
        for hook in self.on_drain:
            try:
                await hook()
            except Exception:  # a failed drain still stops the service
                log.exception("drain hook failed")
        await self.server.stop(grace)
        for hook in reversed(self.on_stop):
            try:
                await hook()
            except Exception:  # a failing hook must not block the others
                log.exception("shutdown hook failed")
        if self._metrics_server is not None:
            server, thread = self._metrics_server
            server.shutdown()
            thread.join(timeout=2)


async def start_service(
    name: str,
    host: str,
    port: int,
    metrics_port: int,
    register: Callable[[grpc.aio.Server], Iterable[str]],
    *,
    serving: bool = True,
    cfg: Config | None = None,
) -> ServiceHost:
    """Create, register and start a gRPC server. ``register`` adds the servicers and returns
    their full service names (for health and reflection). Port 0 picks a free port.
    ``serving=False`` leaves health NOT_SERVING until the caller has finished starting.
    In prod, refuses (ConfigError) to start without internal TLS unless explicitly allowed."""
    if cfg is not None and require_internal_tls(cfg):
        log.warning("internal TLS is OFF in prod: inter-service calls are plaintext and "
                    "unauthenticated (explicit opt-out tls.allow_plaintext_in_prod)",
                    extra={"service": name, "opt_out": "PAIJU_TLS__ALLOW_PLAINTEXT_IN_PROD"})
    credentials = tls.server_credentials(cfg, name) if cfg is not None else None
    checks = tls.interceptors(cfg, name) if cfg is not None else []
    server = grpc.aio.server(
        interceptors=[MetricsInterceptor(name), *checks],
        options=[("grpc.so_reuseport", 0), ("grpc.max_receive_message_length", 8 << 20),
                 # find and close streams of clients that went away without a FIN
                 ("grpc.keepalive_time_ms", 20_000), ("grpc.keepalive_timeout_ms", 10_000),
                 ("grpc.keepalive_permit_without_calls", 1),
                 ("grpc.http2.min_ping_interval_without_data_ms", 5_000),
                 # a connection that never finishes its handshake, or that holds no call,
                 # is not kept (a player could otherwise pin sockets on the public port)
                 ("grpc.server_handshake_timeout_ms", 10_000),
                 ("grpc.max_connection_idle_ms", 120_000)],
    )
    names = tuple(register(server))
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection(
        names + (health_pb2.DESCRIPTOR.services_by_name["Health"].full_name,
                 reflection.SERVICE_NAME), server)
    if credentials is None:
        bound = server.add_insecure_port(f"{host}:{port}")
    else:
        bound = server.add_secure_port(f"{host}:{port}", credentials)
    if bound == 0:
        raise OSError(f"{name}: cannot bind gRPC port {host}:{port}")
    if cfg is not None and checks and cfg.tls.probe_port >= 0:
        # health checks only: every other call has no identity here and is refused
        if server.add_insecure_port(f"{host}:{cfg.tls.probe_port}") == 0:
            raise OSError(f"{name}: cannot bind the probe port {host}:{cfg.tls.probe_port}")
    metrics_server = None
    actual_metrics = metrics_port
    if metrics_port >= 0:
        metrics_server = start_http_server(metrics_port, addr=host)
        actual_metrics = metrics_server[0].server_port
    await server.start()
    svc = ServiceHost(name, server, health_servicer, bound, actual_metrics, names,
                      _metrics_server=metrics_server)
    await svc.set_serving(serving)
    await health_servicer.set("liveness", health_pb2.HealthCheckResponse.SERVING)
    log.info("service started", extra={"grpc_port": bound, "metrics_port": actual_metrics,
                                       "services": list(names)})
    return svc


async def run_until_signalled(svc: ServiceHost, grace: float = 5.0) -> None:
    """Serve until SIGTERM or SIGINT, then shut down gracefully."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log.info("stopping", extra={"grace": grace})
    await svc.stop(grace)
    log.info("stopped")
