"""Health that tells the truth: readiness and liveness from the service's dependencies.

A service is *ready* while every dependency check passes now (its NATS connection is up;
records also needs its database). It is *live* while no check has been failing for longer
than ``liveness_seconds``: a pod cut off from NATS for that long is better restarted.

The gRPC health service says both: the overall name ``""`` and the service's own names are
SERVING only while ready (Kubernetes readiness probe, and what a client's health check sees);
the name ``liveness`` is SERVING while live (Kubernetes liveness probe: ``service: liveness``).
A draining service is never ready again (:meth:`DependencyWatch.drain`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from grpc_health.v1 import health_pb2
from prometheus_client import Gauge

from services.common.tasks import cancel_and_wait

log = logging.getLogger("paiju.health")

Check = Callable[[], Awaitable[bool]]
LIVENESS = "liveness"

READY = Gauge("paiju_ready", "1 while every dependency of this service is reachable")
DEPENDENCY_UP = Gauge("paiju_dependency_up", "1 while the dependency answers", ["dependency"])


def nats_connected(nc: Any) -> Check:
    """The NATS client's connection is up (not closed, not reconnecting)."""

    async def check() -> bool:
        return bool(nc.is_connected)

    return check


class DependencyWatch:
    """Polls ``checks`` every ``period`` seconds; ``on_change(ready, live)`` runs when either
    flips. A check that raises or takes longer than ``period`` counts as failing."""

    def __init__(self, checks: dict[str, Check], *, liveness_seconds: float,
                 period: float = 1.0,
                 on_change: Callable[[bool, bool], Awaitable[None]] | None = None) -> None:
        self.checks = checks
        self.liveness_seconds = liveness_seconds
        self.period = period
        self.on_change = on_change
        self.failing_since: dict[str, float] = {}
        self.draining = False
        self._ready = True
        self._live = True
        self._task: asyncio.Task[None] | None = None

    @property
    def ready(self) -> bool:
        return self._ready and not self.draining

    @property
    def live(self) -> bool:
        return self._live

    def down_for(self) -> float:
        """Seconds since the oldest failing check started failing (0 when all pass)."""
        if not self.failing_since:
            return 0.0
        return time.monotonic() - min(self.failing_since.values())

    async def poll(self) -> None:
        now = time.monotonic()
        for name, check in self.checks.items():
            try:
                ok = await asyncio.wait_for(check(), timeout=self.period)
            except Exception:  # a check that cannot tell counts as down
                ok = False
            DEPENDENCY_UP.labels(name).set(1 if ok else 0)
            if ok:
                if self.failing_since.pop(name, None) is not None:
                    log.info("dependency back", extra={"dependency": name})
            elif name not in self.failing_since:
                log.warning("dependency down", extra={"dependency": name})
                self.failing_since[name] = now
        ready = not self.failing_since
        live = self.down_for() <= self.liveness_seconds
        if not live and self._live:
            log.error("dependency down past the liveness bound",
                      extra={"seconds": round(self.down_for(), 1)})
        changed = (ready, live) != (self._ready, self._live)
        self._ready, self._live = ready, live
        READY.set(1 if self.ready else 0)
        if changed and self.on_change is not None:
            await self.on_change(self.ready, live)

    async def _loop(self) -> None:
        while True:
            with contextlib.suppress(Exception):  # a failing callback must not end the watch
                await self.poll()
            await asyncio.sleep(self.period)

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name="dependency-watch")

    async def drain(self) -> None:
        """Never ready again: the service is stopping."""
        self.draining = True
        READY.set(0)
        if self.on_change is not None:
            await self.on_change(False, self._live)

    async def stop(self) -> None:
        await cancel_and_wait(self._task)


async def watch_service(svc: Any, checks: dict[str, Check], liveness_seconds: float,
                        period: float = 1.0) -> DependencyWatch:
    """Drive ``svc``'s gRPC health from ``checks`` (see the module doc); the watch stops
    with the service, and a stopping service goes NOT_SERVING before its drain."""

    async def on_change(ready: bool, live: bool) -> None:
        await svc.set_serving(ready)
        await svc.health.set(LIVENESS, health_pb2.HealthCheckResponse.SERVING if live
                             else health_pb2.HealthCheckResponse.NOT_SERVING)

    watch = DependencyWatch(checks, liveness_seconds=liveness_seconds, period=period,
                            on_change=on_change)
    await watch.poll()
    await on_change(watch.ready, watch.live)
    watch.start()
    svc.watch = watch
    svc.on_stop.insert(0, watch.stop)  # hooks run in reverse: the watch stops last
    return watch
