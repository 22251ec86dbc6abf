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

A lobby sends a command again, under the same reply subject, while it has no reply
(services/lobby/table_link.py: after 0.5 s, then after waits doubling), in case the command or its
reply was lost while a NATS connection moved. A copy is answered once, by the first: a copy
that comes while the first is under way is dropped (its reply answers the lobby), and one
that comes after it gets the same reply bytes again for ``COPY_SECONDS``. So a burst that
keeps the table busy for more than half a second (every player of a dead lobby asking for
their room's snapshot at once) costs one answer per command, not up to four, and a move
whose reply was lost is answered with its own reply, not refused as overtaken. A reply that
did nothing and asks to be tried again (``AGAIN``: the room moving, busy, not here, an
internal error) is not kept: a later copy is answered anew.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from google.protobuf.message import DecodeError
from nats.aio.msg import Msg

from paiju.v1 import common_pb2, table_pb2
from services.common import bus
from services.table import metrics

log = logging.getLogger("paiju.table.commands")

STOP_SECONDS = 5.0
# How long a reply is kept for the copies of its command: longer than a lobby waits for one
# (table_link's timeout, 5 s, and forwarding.py never asks for longer).
COPY_SECONDS = 10.0
MAX_KEPT = 100_000             # replies kept at most (the oldest go first),
MAX_KEPT_BYTES = 64 * 2**20    # and bytes of them (snapshots are a few KiB each)
# replies that changed nothing and ask the lobby to try again: a copy is answered anew
AGAIN = frozenset({common_pb2.ERR_ROOM_MOVING, common_pb2.ERR_NO_SUCH_ROOM,
                   common_pb2.ERR_UNAVAILABLE, common_pb2.ERR_INTERNAL})


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
        # reply subject of a command being answered -> the answer's token, so that an
        # answer ending late never releases a later copy's answer
        self._under_way: dict[str, object] = {}
        # reply subject -> (when, the reply sent to it), oldest first; their bytes in all
        self._sent: OrderedDict[str, tuple[float, bytes]] = OrderedDict()
        self._sent_bytes = 0

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
        reply_to = msg.reply
        if not reply_to:
            log.warning("command without a reply subject dropped")
            return
        if reply_to in self._under_way:
            metrics.COMMAND_COPIES.labels("dropped").inc()
            return
        self._forget_old(time.monotonic())
        kept = self._sent.get(reply_to)
        if kept is not None:
            metrics.COMMAND_COPIES.labels("replied_again").inc()
            await self._publish(reply_to, kept[1], 0)
            return
        try:
            cmd = table_pb2.TableCommand.FromString(msg.data)
        except DecodeError:
            log.warning("undecodable command dropped", extra={"bytes": len(msg.data)})
            return
        token = self._under_way[reply_to] = object()
        task = asyncio.create_task(self._answer(cmd, reply_to, token))
        self._answering.add(task)
        task.add_done_callback(self._answering.discard)

    async def _answer(self, cmd: table_pb2.TableCommand, reply_to: str,
                      token: object) -> None:
        sent = False

        async def send(reply: table_pb2.TableReply) -> None:
            nonlocal sent
            sent = True
            data = reply.SerializeToString()
            if reply.code not in AGAIN:
                self._keep(reply_to, data)
            self._release(reply_to, token)
            await self._publish(reply_to, data, cmd.room_id)

        try:
            # sent from the room's task where it can be (with the events it caused), else here
            reply = await self.core.answer(cmd, send)
            if not sent:
                await send(reply)
        finally:
            self._release(reply_to, token)   # unsent (a bug): a copy is answered anew

    def _release(self, reply_to: str, token: object) -> None:
        """The answer ``token`` is no longer under way (a no-op once a later copy's answer
        holds the subject: an AGAIN reply lets a copy start one while this one ends)."""
        if self._under_way.get(reply_to) is token:
            del self._under_way[reply_to]

    def _keep(self, reply_to: str, data: bytes) -> None:
        """The reply for the command's copies."""
        now = time.monotonic()
        self._forget(reply_to)
        self._forget_old(now, len(data))
        self._sent[reply_to] = (now, data)
        self._sent_bytes += len(data)

    def _forget(self, reply_to: str) -> None:
        kept = self._sent.pop(reply_to, None)
        if kept is not None:
            self._sent_bytes -= len(kept[1])

    def _forget_old(self, now: float, room: int = 0) -> None:
        """Let go of the replies older than COPY_SECONDS, and of the oldest while more than
        MAX_KEPT replies or MAX_KEPT_BYTES would be kept with ``room`` more bytes."""
        sent = self._sent
        while sent:
            oldest, (at, _) = next(iter(sent.items()))
            if at >= now - COPY_SECONDS and len(sent) < MAX_KEPT \
                    and self._sent_bytes + room <= MAX_KEPT_BYTES:
                return
            self._forget(oldest)

    async def _publish(self, reply_to: str, data: bytes, room_id: int) -> None:
        try:
            await self.core.nc.publish(reply_to, data)
        except Exception as exc:  # NATS away: the lobby sends the command again
            log.warning("command reply not sent", extra={"room": room_id, "error": repr(exc)})
