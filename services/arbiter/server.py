"""The arbiter: :func:`games.arbitration.resolve` for the tables, every window validated and
decided, a malformed one answered with ``error``.

Tables ask over NATS: one request per window on ``arbiter.decide``, which every arbiter
replica answers in the queue group ``arbiter`` (each request reaches one of them). The gRPC
``Arbiter.Decide`` stream answers the previous release's tables, which ask there, for as long
as a rolling release mixes them with this one's (protos/paiju/v1/arbiter.proto says when it
goes). Ready while the NATS connection is up."""

from __future__ import annotations

import functools
import logging
from collections.abc import AsyncIterator

import grpc
from google.protobuf.message import DecodeError
from nats.aio.client import Client
from nats.aio.msg import Msg
from prometheus_client import Counter

from games.arbitration import InvalidWindow, resolve
from paiju.v1 import arbiter_pb2, arbiter_pb2_grpc
from services.common import bus
from services.common.arbwire import decision_to_pb, window_from_pb
from services.common.config import Config
from services.common.health import nats_connected, watch_service
from services.common.server import ServiceHost, start_service

log = logging.getLogger("paiju.arbiter")

DECISIONS = Counter("paiju_arbiter_decisions_total", "Decisions by outcome",
                    ["action", "final"])


def decide(request: arbiter_pb2.ResolveRequest) -> arbiter_pb2.ResolveReply:
    """The reply to one request: the decision, or ``error`` for a malformed window; the
    request's ``request_id`` echoed."""
    try:
        window, rules = window_from_pb(request)
        decision = resolve(window, rules)
    except InvalidWindow as exc:
        reply = arbiter_pb2.ResolveReply(window_id=request.window.id, error=str(exc))
    else:
        DECISIONS.labels(decision.action, str(decision.final).lower()).inc()
        reply = decision_to_pb(decision)
    reply.request_id = request.request_id
    return reply


async def serve(nc: Client) -> None:
    """Answer ``arbiter.decide`` on ``nc`` (queue group ``arbiter``) until it drains."""

    async def on_request(msg: Msg) -> None:
        if not msg.reply:
            return   # nobody waits for an answer
        try:
            request = arbiter_pb2.ResolveRequest.FromString(msg.data)
        except DecodeError:
            reply = arbiter_pb2.ResolveReply(error="undecodable ResolveRequest")
        else:
            try:
                reply = decide(request)
            except Exception:   # a bug: the table decides this window itself after its wait
                log.exception("arbiter failed on a window")
                return
        await nc.publish(msg.reply, reply.SerializeToString())

    await nc.subscribe(bus.ARBITER_DECIDE, queue=bus.ARBITER_QUEUE, cb=on_request)
    await bus.sync(nc)   # in the queue group (the server has the subscription) before ready


class ArbiterService(arbiter_pb2_grpc.ArbiterServicer):
    async def Decide(self, requests: AsyncIterator[arbiter_pb2.ResolveRequest],  # noqa: N802
                     context: grpc.aio.ServicerContext,
                     ) -> AsyncIterator[arbiter_pb2.ResolveReply]:
        """One table's stream (the previous release's tables): a reply per request, in
        order; a bad window is answered with ``error`` and the stream goes on."""
        async for request in requests:
            yield decide(request)


async def start(cfg: Config, *, port: int | None = None, metrics_port: int | None = None) -> ServiceHost:
    c = cfg.arbiter
    nc = await bus.connect(cfg.nats, "arbiter")
    try:
        await serve(nc)

        def register(server: grpc.aio.Server) -> list[str]:
            arbiter_pb2_grpc.add_ArbiterServicer_to_server(ArbiterService(), server)
            return ["paiju.v1.Arbiter"]

        svc = await start_service("arbiter", c.host, c.port if port is None else port,
                                  c.metrics_port if metrics_port is None else metrics_port,
                                  register, cfg=cfg)
    except BaseException:
        await nc.close()
        raise
    # SIGTERM: unready first, then the subscription drains (requests already taken are
    # answered; new ones go to the other replicas); the connection is closed in any case
    # (a drain fails on a connection that is reconnecting or closed)
    svc.on_drain.append(functools.partial(bus.drain, nc))
    svc.on_stop.append(nc.close)
    try:
        await watch_service(svc, {"nats": nats_connected(nc)}, cfg.nats.liveness_seconds)
    except BaseException:
        await svc.stop(0)
        raise
    return svc
