"""gRPC adapter of the table service."""

from __future__ import annotations

import grpc

from paiju.v1 import table_pb2_grpc
from services.common.config import Config
from services.common.server import ServiceHost, start_service


class TableService(table_pb2_grpc.TableServicer):
    pass


async def start(cfg: Config, *, port: int | None = None, metrics_port: int | None = None) -> ServiceHost:
    c = cfg.table

    def register(server: grpc.aio.Server) -> list[str]:
        table_pb2_grpc.add_TableServicer_to_server(TableService(), server)
        return ["paiju.v1.Table"]

    return await start_service("table", c.host, c.port if port is None else port,
                               c.metrics_port if metrics_port is None else metrics_port, register)
