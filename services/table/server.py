"""The table service's gRPC adapter: CreateRoom, GetRoom, ListRooms (unary, rare), in front
of :class:`services.table.core.TableCore`; player commands come over NATS
(services/table/nats_commands.py). ``start`` wires the process. The contract is in
docs/services.md and docs/ordered-events.md; the whole picture in docs/architecture.md.
"""

from __future__ import annotations

import logging
import socket

import grpc

from paiju.v1 import common_pb2, table_pb2, table_pb2_grpc
from services.common.aborting import abort
from services.common.config import Config
from services.common.health import nats_connected, watch_service
from services.common.server import ServiceHost, start_service
from services.table import variants, views
from services.table.core import TableCore, Unavailable
from services.table.room_ids import RoomIdsUnusable

log = logging.getLogger("paiju.table")


class TableService(table_pb2_grpc.TableServicer):
    def __init__(self, core: TableCore) -> None:
        self.core = core

    async def CreateRoom(self, request: table_pb2.CreateRoomRequest,  # noqa: N802
                         context: grpc.aio.ServicerContext) -> table_pb2.CreateRoomReply:
        if self.core.rooms.draining:
            await context.abort(grpc.StatusCode.UNAVAILABLE, "this table is draining")
        try:
            room = await self.core.create_room(request)
        except Unavailable as exc:
            await context.abort(grpc.StatusCode.UNAVAILABLE, str(exc))
        except RoomIdsUnusable as exc:   # an operator's to mend (docs/runbooks.md)
            log.error("room not created", extra={"error": str(exc)})
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(exc))
        except ValueError as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        return table_pb2.CreateRoomReply(room=views.room_info(room))

    async def GetRoom(self, request: table_pb2.GetRoomRequest,  # noqa: N802
                      context: grpc.aio.ServicerContext) -> common_pb2.RoomInfo:
        actor = self.core.rooms.get(request.room_id)
        if actor is None:
            await abort(context, grpc.StatusCode.NOT_FOUND, f"room {request.room_id} is not here")
        return views.room_info(actor.room)

    async def ListRooms(self, request: table_pb2.ListRoomsRequest,  # noqa: N802
                        context: grpc.aio.ServicerContext) -> table_pb2.ListRoomsReply:
        known = variants.by_type(request.game)
        want = known.name if known is not None else None
        rooms = [a.room for a in self.core.rooms.values() if want is None or a.room.game == want]
        started = sum(1 for r in rooms if r.hand_no > 0)
        return table_pb2.ListRoomsReply(rooms=[views.room_info(r) for r in rooms],
                                        started_room_num=started)


def instance_name(cfg: Config, port: int) -> str:
    return cfg.table.instance or f"table-{socket.gethostname()}-{port}"


async def start(cfg: Config, *, port: int | None = None, metrics_port: int | None = None) -> ServiceHost:
    c = cfg.table
    holder: dict[str, TableService] = {}

    def register(server: grpc.aio.Server) -> list[str]:
        holder["svc"] = TableService(None)  # type: ignore[arg-type]
        table_pb2_grpc.add_TableServicer_to_server(holder["svc"], server)
        return ["paiju.v1.Table"]

    svc = await start_service("table", c.host, c.port if port is None else port,
                              c.metrics_port if metrics_port is None else metrics_port, register,
                              serving=False, cfg=cfg)
    address = c.advertise or f"{c.host}:{svc.port}"
    core = TableCore(cfg, instance_name(cfg, svc.port), address)
    holder["svc"].core = core
    try:
        await core.start()
    except Exception:
        await svc.stop(0)
        raise
    svc.on_stop.append(core.stop)
    svc.on_drain.append(core.drain)
    async def lease_held() -> bool:
        return core.lease.holding()

    await watch_service(svc, {"nats": nats_connected(core.nc), "lease": lease_held},
                        cfg.nats.liveness_seconds)
    return svc
