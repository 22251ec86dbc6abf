"""gRPC adapter of the lobby service."""

from __future__ import annotations

import grpc

from paiju.v1 import lobby_pb2_grpc
from services.common.config import Config
from services.common.server import ServiceHost, start_service


class LobbyService(lobby_pb2_grpc.LobbyServicer):
    pass


async def start(cfg: Config, *, port: int | None = None, metrics_port: int | None = None) -> ServiceHost:
    c = cfg.lobby

    def register(server: grpc.aio.Server) -> list[str]:
        lobby_pb2_grpc.add_LobbyServicer_to_server(LobbyService(), server)
        return ["paiju.v1.Lobby"]

    return await start_service("lobby", c.host, c.port if port is None else port,
                               c.metrics_port if metrics_port is None else metrics_port, register)
