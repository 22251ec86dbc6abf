"""gRPC adapter over :func:`games.arbitration.resolve`: validate, resolve, map errors."""

from __future__ import annotations

import grpc
from prometheus_client import Counter

from games.arbitration import InvalidWindow, resolve
from paiju.v1 import arbiter_pb2, arbiter_pb2_grpc
from services.common.arbwire import decision_to_pb, window_from_pb
from services.common.config import Config
from services.common.server import ServiceHost, start_service

DECISIONS = Counter("paiju_arbiter_decisions_total", "Resolve answers by outcome",
                    ["action", "final"])


class ArbiterService(arbiter_pb2_grpc.ArbiterServicer):
    async def Resolve(self, request: arbiter_pb2.ResolveRequest,  # noqa: N802 (gRPC name)
                      context: grpc.aio.ServicerContext) -> arbiter_pb2.ResolveReply:
        try:
            window, rules = window_from_pb(request)
            decision = resolve(window, rules)
        except InvalidWindow as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        DECISIONS.labels(decision.action, str(decision.final).lower()).inc()
        return decision_to_pb(decision)


async def start(cfg: Config, *, port: int | None = None, metrics_port: int | None = None) -> ServiceHost:
    c = cfg.arbiter

    def register(server: grpc.aio.Server) -> list[str]:
        arbiter_pb2_grpc.add_ArbiterServicer_to_server(ArbiterService(), server)
        return ["paiju.v1.Arbiter"]

    return await start_service("arbiter", c.host, c.port if port is None else port,
                               c.metrics_port if metrics_port is None else metrics_port, register, cfg=cfg)
