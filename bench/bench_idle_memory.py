"""The lobby's memory per connected idle player: ``python -m bench.bench_idle_memory [--quick]``.

Starts the stack as processes (embedded nats-server, records, arbiter, table, lobby, as the
system tests do), then, in this process, logs N players in over gRPC (one Connect stream
each, each on a channel of its own, as separate devices are) and N more over the binary
WebSocket, and reads the lobby process's resident memory (VmRSS) before and after each
batch, once the lobby has settled (a few seconds without traffic). The players only stay
connected: no room, no heartbeat inside the window. The figure is the growth of the lobby's
RSS divided by the players of the batch: what one more waiting player costs the lobby.

Writes bench/reports/idle_memory.md.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path

import aiohttp

from bench.bench_capacity import rss_mib
from bench.common import command, machine, parse_options, write_report
from clients.session import LobbySession, mint_token
from paiju.frames import client_frame
from paiju.v1 import client_pb2
from paiju.v1 import lobby_msgs_pb2 as lm
from services.common.natsd import free_port

SETTLE_SECONDS = 3.0
GOAL_KIB = 120.0


async def settled_rss(pid: int) -> float:
    await asyncio.sleep(SETTLE_SECONDS)
    return rss_mib(pid)


async def grpc_players(address: str, secret: str, first_uid: int, n: int) -> list[LobbySession]:
    out = []
    for i in range(n):
        s = LobbySession(address, keep_frames=False)
        await s.open()
        reply = await s.login(mint_token(first_uid + i, secret), nickname=f"g{i}")
        if reply.WhichOneof("payload") != "login_ok":
            raise RuntimeError(f"login refused: {reply}")
        out.append(s)
    return out


async def ws_players(http: aiohttp.ClientSession, port: int, secret: str, first_uid: int,
                     n: int) -> list[aiohttp.ClientWebSocketResponse]:
    out = []
    for i in range(n):
        ws = await http.ws_connect(f"http://127.0.0.1:{port}/ws")
        login = client_frame(lm.Login(token=mint_token(first_uid + i, secret)), seq=1)
        await ws.send_bytes(login.SerializeToString())
        while True:
            reply = client_pb2.ServerFrame.FromString((await ws.receive()).data)
            if reply.reply_to == 1:
                break
        if reply.WhichOneof("payload") != "login_ok":
            raise RuntimeError(f"login refused: {reply}")
        out.append(ws)
    return out


async def measure(pid: int, address: str, ws_port: int, secret: str,
                  n: int) -> list[tuple[str, float, float]]:
    """(edge, RSS before MiB, RSS after MiB) for a batch of ``n`` on each edge."""
    rows = []
    before = await settled_rss(pid)
    sessions = await grpc_players(address, secret, 100_000, n)
    after = await settled_rss(pid)
    rows.append(("gRPC Connect stream", before, after))
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http:
        sockets = await ws_players(http, ws_port, secret, 300_000, n)
        rows.append(("binary WebSocket", after, await settled_rss(pid)))
        for ws in sockets:
            await ws.close()
    for s in sessions:
        await s.close()
    return rows


def main() -> None:
    opts = parse_options(__doc__)
    n = 300 if opts.quick else 2000
    from tests.system.conftest import SECRET, start_stack, stop_stack
    limits = {f"PAIJU_LOBBY__{k}": "1000000" for k in (
        "LOGINS_PER_IP_PER_MINUTE", "MAX_CONNECTIONS_PER_IP", "MAX_CONNECTIONS")}
    ws_port = free_port()
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        stack = start_stack(Path(tmp), **limits, PAIJU_LOBBY__WS_PORT=str(ws_port),
                            PAIJU_LOG__LEVEL="WARNING")
        try:
            assert stack.lobby.proc is not None
            rows = asyncio.run(measure(stack.lobby.proc.pid, stack.lobby_address, ws_port,
                                       SECRET, n))
        finally:
            stop_stack(stack)
    lines = [
        "# Lobby memory per connected idle player", "",
        f"{command('bench_idle_memory', opts.quick)} on {machine()}; the stack as processes, "
        f"the players in the bench's process; {n} players per edge, logged in and idle; RSS "
        f"read {SETTLE_SECONDS:.0f} s after the last login. Goal: at most {GOAL_KIB:.0f} KiB "
        f"per idle player (issue 25). Run took {time.monotonic() - started:.0f} s.", "",
        "| edge | players | lobby RSS before MiB | after MiB | KiB per player | of the goal |",
        "|---|---|---|---|---|---|"]
    for edge, before, after in rows:
        per = (after - before) * 1024 / n
        lines.append(f"| {edge} | {n} | {before:.1f} | {after:.1f} | {per:.1f} | "
                     f"{per / GOAL_KIB:.0%} |")
    write_report(opts.report("idle_memory.md"), lines)


if __name__ == "__main__":
    main()
