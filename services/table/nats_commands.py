"""Player commands from the lobbies over core NATS, their one path: request/reply on
``table.<address>.commands`` (bus.table_commands), a ``TableCommand`` in and one
``TableReply`` out, answered by :meth:`TableCore.answer`.

Why NATS and not a gRPC stream: at human pace every gRPC message costs a wake-up of
grpc.aio's poller thread and then of the event loop, on both sides; the lobby and the table
already hold a NATS connection, on which a command arrives with the room messages and its
reply leaves in the same write as the events it caused (bench/reports/capacity.md).

Each command is answered in a task of its own, so a room busy with a slow command never
holds up another room's. A reply goes only to the asking lobby's inbox (NATS permissions:
``allow_responses``); a payload that is not a ``TableCommand`` is logged and dropped.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from google.protobuf.message import DecodeError
from nats.aio.msg import Msg

from paiju.v1 import table_pb2
from services.common import bus

log = logging.getLogger("paiju.table.commands")

STOP_SECONDS = 5.0


SendReply = Callable[[table_pb2.TableReply], Awaitable[None]]


class Answers(Protocol):
    nc: Any
    address: str

    async def answer(self, cmd: table_pb2.TableCommand,
                     early: SendReply | None = None) -> table_pb2.TableReply: ...


class CommandSubscription:
    """The table's subscription to its command subject and the answers under way."""

    def __init__(self, core: Answers) -> None:
        self.core = core
        self._sub: Any = None
        self._answering: set[asyncio.Task[None]] = set()

    @property
    def subject(self) -> str:
        return bus.table_commands(self.core.address)

    async def start(self) -> None:
        self._sub = await self.core.nc.subscribe(self.subject, cb=self._on_command)

    async def stop(self) -> None:
        """No more commands; those under way are answered (their rooms stop after), for up
        to ``STOP_SECONDS``."""
        if self._sub is not None:
            sub, self._sub = self._sub, None
            try:
                await sub.unsubscribe()
            except Exception:  # the connection is gone: so is the subscription
                log.debug("unsubscribe failed", exc_info=True)
        if self._answering:
            await asyncio.wait(set(self._answering), timeout=STOP_SECONDS)

    async def _on_command(self, msg: Msg) -> None:
        if not msg.reply:
            log.warning("command without a reply subject dropped")
            return
        try:
            cmd = table_pb2.TableCommand.FromString(msg.data)
        except DecodeError:
            log.warning("undecodable command dropped", extra={"bytes": len(msg.data)})
            return
        task = asyncio.create_task(self._answer(cmd, msg.reply))
        self._answering.add(task)
        task.add_done_callback(self._answering.discard)

    async def _answer(self, cmd: table_pb2.TableCommand, reply_to: str) -> None:
        sent = False

        async def send(reply: table_pb2.TableReply) -> None:
            nonlocal sent
            sent = True
            try:
                await self.core.nc.publish(reply_to, reply.SerializeToString())
            except Exception as exc:  # NATS away: the lobby's request times out and retries
                log.warning("command reply not sent",
                            extra={"room": cmd.room_id, "error": repr(exc)})

        # sent from the room's task where it can be (with the events it caused), else here
        reply = await self.core.answer(cmd, send)
        if not sent:
            await send(reply)
