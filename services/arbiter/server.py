"""gRPC adapter over :func:`games.arbitration.resolve`: ``Arbiter.Decide``, one long-lived
stream per table process; every request validated and resolved, a malformed window answered
with ``error``."""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
from prometheus_client import Counter

from games.arbitration import InvalidWindow, resolve
from paiju.v1 import arbiter_pb2, arbiter_pb2_grpc
from services.common.arbwire import decision_to_pb, window_from_pb
from services.common.config import Config
from services.common.server import ServiceHost, start_service

DECISIONS = Counter("paiju_arbiter_decisions_total", "Decisions by outcome",
                    ["action", "final"])


def decide(request: arbiter_pb2.ResolveRequest) -> arbiter_pb2.ResolveReply:
    """The decision for one request (InvalidWindow for a malformed one)."""
    window, rules = window_from_pb(request)
    decision = resolve(window, rules)
    DECISIONS.labels(decision.action, str(decision.final).lower()).inc()
    return decision_to_pb(decision)


class ArbiterService(arbiter_pb2_grpc.ArbiterServicer):
    async def Decide(self, requests: AsyncIterator[arbiter_pb2.ResolveRequest],  # noqa: N802
                     context: grpc.aio.ServicerContext,
                     ) -> AsyncIterator[arbiter_pb2.ResolveReply]:
        """One table's stream: a reply per request, in order; a bad window is answered
        with ``error`` and the stream goes on."""
        async for request in requests:
            try:
                reply = decide(request)
            except InvalidWindow as exc:
                reply = arbiter_pb2.ResolveReply(window_id=request.window.id, error=str(exc))
            reply.request_id = request.request_id
            yield reply


async def start(cfg: Config, *, port: int | None = None, metrics_port: int | None = None) -> ServiceHost:
    c = cfg.arbiter

    def register(server: grpc.aio.Server) -> list[str]:
        arbiter_pb2_grpc.add_ArbiterServicer_to_server(ArbiterService(), server)
        return ["paiju.v1.Arbiter"]

    return await start_service("arbiter", c.host, c.port if port is None else port,
                               c.metrics_port if metrics_port is None else metrics_port, register, cfg=cfg)
