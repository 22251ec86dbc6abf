"""gRPC adapter over :func:`games.arbitration.resolve`."""

from __future__ import annotations

import grpc

from paiju.v1 import arbiter_pb2_grpc
from services.common.config import Config
from services.common.server import ServiceHost, start_service


class ArbiterService(arbiter_pb2_grpc.ArbiterServicer):
    pass


async def start(cfg: Config, *, port: int | None = None, metrics_port: int | None = None) -> ServiceHost:
    c = cfg.arbiter

    def register(server: grpc.aio.Server) -> list[str]:
        arbiter_pb2_grpc.add_ArbiterServicer_to_server(ArbiterService(), server)
        return ["paiju.v1.Arbiter"]

    return await start_service("arbiter", c.host, c.port if port is None else port,
                               c.metrics_port if metrics_port is None else metrics_port, register)
