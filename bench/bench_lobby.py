"""Benchmark of the lobby hop: ``python -m bench.bench_lobby [--quick]``.

In one process: an embedded nats-server, a minimal echo table and records on loopback, and
a real lobby. Measures

1. the round trip of a seated command (AskReady) client -> lobby -> table -> lobby -> client,
   against the baseline of the same command sent straight on a Table.Session stream;
2. the fan-out of room events published on NATS to S sessions of one room, against the
   baseline of S plain NATS subscribers of the same subject.

Writes bench/reports/lobby.md.
"""

from __future__ import annotations

import asyncio
import json
import time

import grpc
import nats

from bench.common import command, machine, parse_options, write_report
from paiju.frames import client_frame, server_frame
from paiju.v1 import (
    client_pb2,
    common_pb2,
    lobby_msgs_pb2,
    records_pb2,
    records_pb2_grpc,
    table_pb2,
    table_pb2_grpc,
)
from services.common import bus
from services.common.natsd import EmbeddedNats
from services.lobby import tokens
from services.lobby.server import start
from tests.support.lobbykit import ConnectStream, lobby_config

REPORT = "lobby.md"
ROOM = 500001
SECRET = "bench"


class EchoTable(table_pb2_grpc.TableServicer):
    async def Session(self, requests, context):  # type: ignore[no-untyped-def]  # noqa: N802
        async for cmd in requests:
            yield table_pb2.TableReply(request_id=cmd.request_id, room_id=ROOM, seat=0)


class Profiles(records_pb2_grpc.RecordsServicer):
    async def EnsurePlayer(self, req, context):  # type: ignore[no-untyped-def]  # noqa: N802
        return records_pb2.PlayerRecord(user_id=req.user_id, nickname="b")


class BenchClient(ConnectStream):
    async def ask(self, payload) -> client_pb2.ServerFrame:  # type: ignore[no-untyped-def]
        seq = await self.send(payload)
        while True:
            frame = await self.call.read()
            if frame.reply_to == seq:
                return frame


async def direct_round_trips(address: str, n: int) -> float:
    queue: asyncio.Queue[table_pb2.TableCommand] = asyncio.Queue()

    async def commands():  # type: ignore[no-untyped-def]
        while True:
            yield await queue.get()

    async with grpc.aio.insecure_channel(address) as channel:
        call = table_pb2_grpc.TableStub(channel).Session(commands())
        frame = client_frame(lobby_msgs_pb2.AskReady(is_ready=True))
        started = time.perf_counter()
        for i in range(n):
            queue.put_nowait(table_pb2.TableCommand(request_id=i + 1, room_id=ROOM, user_id=1,
                                                    frame=frame))
            await call.read()
        elapsed = time.perf_counter() - started
        call.cancel()
    return elapsed


async def lobby_round_trips(client: BenchClient, n: int) -> float:
    started = time.perf_counter()
    for _ in range(n):
        reply = await client.ask(lobby_msgs_pb2.AskReady(is_ready=True))
        assert reply.ret.code == 0, reply
    return time.perf_counter() - started


async def fan_out(nc, readers: list[BenchClient], events: int) -> float:  # type: ignore[no-untyped-def]
    frame = server_frame(lobby_msgs_pb2.InEntrust(seat=1, count=1)).SerializeToString()

    async def drain(client: BenchClient) -> None:
        for _ in range(events):
            await client.call.read()

    tasks = [asyncio.create_task(drain(c)) for c in readers]
    started = time.perf_counter()
    for _ in range(events):
        await nc.publish(bus.room_events(ROOM), frame)
    await asyncio.wait_for(asyncio.gather(*tasks), 120)
    return time.perf_counter() - started


async def plain_fan_out(nc, url: str, sessions: int, events: int) -> float:  # type: ignore[no-untyped-def]
    subscribers = [await nats.connect(url) for _ in range(sessions)]
    done = asyncio.Event()
    remaining = [sessions * events]

    async def on_msg(msg) -> None:  # type: ignore[no-untyped-def]
        remaining[0] -= 1
        if remaining[0] == 0:
            done.set()

    for sub in subscribers:
        await sub.subscribe("bench.plain", cb=on_msg)
        await sub.flush()
    started = time.perf_counter()
    for _ in range(events):
        await nc.publish("bench.plain", b"x" * 20)
    await done.wait()
    elapsed = time.perf_counter() - started
    for sub in subscribers:
        await sub.close()
    return elapsed


async def run(quick: bool) -> list[str]:
    # a burst stays under the session outbox limit: beyond it the lobby disconnects the
    # clients that cannot keep up, by design (services/lobby/sessions.py)
    n, sessions, events = (300, 4, 200) if quick else (3000, 16, 400)
    with EmbeddedNats() as natsd:
        backend = grpc.aio.server()
        table_pb2_grpc.add_TableServicer_to_server(EchoTable(), backend)
        records_pb2_grpc.add_RecordsServicer_to_server(Profiles(), backend)
        port = backend.add_insecure_port("127.0.0.1:0")
        await backend.start()
        address = f"127.0.0.1:{port}"
        nc = await nats.connect(natsd.url)
        js = nc.jetstream()
        rooms = await bus.ensure_bucket(js, "rooms")
        await rooms.put(str(ROOM), json.dumps({"room_id": ROOM, "address": address,
                                               "room": {"room_id": ROOM}}).encode())
        lobby = await start(lobby_config(natsd.url, address, SECRET), port=0, metrics_port=-1)
        clients = []
        for uid in range(1, sessions + 1):
            client = BenchClient(f"127.0.0.1:{lobby.port}")
            await client.ask(lobby_msgs_pb2.Login(token=tokens.mint(uid, SECRET, 600)))
            joined = await client.ask(lobby_msgs_pb2.JoinRoom(room_id=ROOM))
            assert joined.ret.code == common_pb2.OK, joined
            clients.append(client)
        await direct_round_trips(address, n // 10)           # warm-up
        await lobby_round_trips(clients[0], n // 10)
        t_direct = await direct_round_trips(address, n)
        t_lobby = await lobby_round_trips(clients[0], n)
        t_plain = await plain_fan_out(nc, natsd.url, sessions, events)
        t_fan = await fan_out(nc, clients, events)
        await lobby.stop(0.5)
        await nc.close()
        await backend.stop(0)
    deliveries = sessions * events
    return [
        "# Lobby benchmark",
        "",
        f"{command('bench_lobby', quick)} on {machine()}; client, lobby, table and "
        "nats-server on one machine "
        "(the clients and the echo table share the lobby's process and event loop).",
        "",
        "| measure | items | µs per item | ratio |",
        "|---|---|---|---|",
        f"| baseline: command straight on a Table.Session stream | {n} round trips | "
        f"{t_direct / n * 1e6:.0f} | 1.00 |",
        f"| AskReady client -> lobby -> table -> client | {n} round trips | "
        f"{t_lobby / n * 1e6:.0f} | {t_lobby / t_direct:.2f} |",
        f"| baseline: plain NATS subscribers ({sessions}) | {deliveries} deliveries | "
        f"{t_plain / deliveries * 1e6:.1f} | 1.00 |",
        f"| room events NATS -> lobby -> {sessions} client streams | {deliveries} deliveries | "
        f"{t_fan / deliveries * 1e6:.1f} | {t_fan / t_plain:.2f} |",
    ]


def main() -> None:
    options = parse_options(__doc__)
    write_report(options.report(REPORT), asyncio.run(run(options.quick)))


if __name__ == "__main__":
    main()
