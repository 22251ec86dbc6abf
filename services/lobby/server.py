"""The lobby process: its resources (app.py), its front doors, gRPC ``Lobby.Connect``
(grpc_front.py) and the WebSocket (ws.py), both running sessions through session_loop.py,
the operator console (console/), health and the drain, wired into one :class:`LobbyHost`."""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass

from grpc_health.v1 import health_pb2

from services.common.config import Config, require_console_token, require_token_secret
from services.common.health import LIVENESS, DependencyWatch, nats_connected
from services.common.server import ServiceHost, start_service
from services.lobby import seating
from services.lobby.app import LobbyApp
from services.lobby.console.http import Console, start_console
from services.lobby.grpc_front import LobbyService, register_lobby
from services.lobby.ws import WsFront

log = logging.getLogger("paiju.lobby.server")

HEALTH_PERIOD = 1.0   # seconds between two looks at the lobby's dependencies (NATS)


@dataclass(kw_only=True)
class LobbyHost(ServiceHost):
    """A running lobby: the gRPC service host with the lobby's parts."""

    app: LobbyApp
    console: Console
    ws_port: int = -1        # the WebSocket front door's bound port (-1: off)


async def start(cfg: Config, *, port: int | None = None,
                metrics_port: int | None = None) -> LobbyHost:
    c = cfg.lobby
    require_token_secret(cfg)
    require_console_token(cfg)
    # the directory buckets may not be there yet: serve anyway, not ready, until they are
    app = await LobbyApp.open(cfg, wait_directory=False, seat_matched=seating.seat_matched)
    service = LobbyService(app)
    try:
        started = await start_service("lobby", c.host, c.port if port is None else port,
                                      c.metrics_port if metrics_port is None else metrics_port,
                                      lambda server: [register_lobby(server, service)],
                                      serving=False,   # until NATS and the directory are there
                                      cfg=cfg)   # the public certificate, when configured
    except BaseException:
        await app.close()
        raise
    try:  # the operator console, on its own port (lobby.console_port; -1 = off)
        console = await start_console(app, cfg)
    except BaseException:
        await started.stop(0)
        await app.close()
        raise
    host = LobbyHost(**{f.name: getattr(started, f.name)
                        for f in dataclasses.fields(ServiceHost) if f.init},
                     app=app, console=console)
    host.on_stop.append(app.close)
    host.on_stop.append(console.close)
    # SIGTERM: health is NOT_SERVING first (ServiceHost.stop), then every client is told to
    # reconnect elsewhere and its stream ends, then the server stops
    host.on_drain.append(app.drain)
    app.spawn(app.directory.prune_forever(app.table_addresses))
    await _start_ws(cfg, app, host)
    # readiness (gRPC health "" and the Lobby service, WebSocket /healthz) while NATS is up
    # and the directory open, liveness (gRPC health "liveness", /livez) until NATS has been
    # down too long (a directory not open yet is not a reason to restart the lobby)
    try:
        app.watch = await _watch_health(cfg, app, host)
    except BaseException:
        await host.stop(0)
        raise
    return host


async def _watch_health(cfg: Config, app: LobbyApp, host: ServiceHost) -> DependencyWatch:
    """services.common.health.watch_service, with readiness also waiting for the directory
    (LobbyApp.ready)."""

    async def publish(_ready: bool = False, live: bool = True) -> None:
        await host.set_serving(app.ready)
        await host.health.set(LIVENESS, health_pb2.HealthCheckResponse.SERVING
                              if watch.live else health_pb2.HealthCheckResponse.NOT_SERVING)

    watch = DependencyWatch({"nats": nats_connected(app.nc)},
                            liveness_seconds=cfg.nats.liveness_seconds, period=HEALTH_PERIOD,
                            on_change=publish)
    app.watch = watch
    await watch.poll()
    await publish()
    app.on_ready_change = publish
    watch.start()
    host.watch = watch
    host.on_stop.insert(0, watch.stop)  # hooks run in reverse: the watch stops last
    return watch


async def _start_ws(cfg: Config, app: LobbyApp, host: LobbyHost) -> None:
    """The WebSocket front door next to the gRPC port (``lobby.ws_port``; -1 = off): its
    bound port is ``host.ws_port``; it stops (closing its sessions) before the app closes."""
    if cfg.lobby.ws_port < 0:
        return
    front = WsFront(app)
    try:
        host.ws_port = await front.start(cfg.lobby.host, cfg.lobby.ws_port)
    except BaseException:
        await host.stop(0)
        raise
    host.on_stop.append(front.stop)
