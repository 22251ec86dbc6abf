"""gRPC adapter of the records service."""

from __future__ import annotations

import grpc

from paiju.v1 import records_pb2_grpc
from services.common.config import Config
from services.common.server import ServiceHost, start_service


class RecordsService(records_pb2_grpc.RecordsServicer):
    pass


async def start(cfg: Config, *, port: int | None = None, metrics_port: int | None = None) -> ServiceHost:
    c = cfg.records

    def register(server: grpc.aio.Server) -> list[str]:
        records_pb2_grpc.add_RecordsServicer_to_server(RecordsService(), server)
        return ["paiju.v1.Records"]

    return await start_service("records", c.host, c.port if port is None else port,
                               c.metrics_port if metrics_port is None else metrics_port, register)
