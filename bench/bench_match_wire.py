"""Matchmaking over the wire: ``python -m bench.bench_match_wire [--quick]``.

In one process: an embedded nats-server, the real arbiter and table, a records stub on
loopback (profiles with coins; no ratings, so every ticket has the model's start) and two
real lobbies (services/lobby/matchmaker.py with its defaults: a pass a second, one active
matcher per game elected by its lease). Players log in over gRPC ``Lobby.Connect``, spread over both
lobbies, and ask for a XueZhan match as a Poisson stream; a few cancel shortly after. Each
player waits for its ``MatchFound`` and the ``RoomJoined`` after it.

Measured: the AskMatch round trip (to ``MatchQueued``), the time from asking to
``MatchFound`` and to being seated (p50, p99, max), and checked: every player that did not
cancel was matched exactly once, every room has four different players in four seats, no
cancelled ticket was matched, no error frame. Writes bench/reports/match_wire.md.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import time
from collections import defaultdict
from dataclasses import dataclass, field, replace

import grpc

from bench.common import command, machine, parse_options, write_report
from paiju.v1 import client_pb2, lobby_msgs_pb2, records_pb2, records_pb2_grpc
from services.arbiter.server import start as start_arbiter
from services.common.config import load_config
from services.common.natsd import EmbeddedNats
from services.lobby import tokens
from services.lobby.server import start as start_lobby
from services.table.server import start as start_table
from tests.support.lobbykit import ConnectStream

SECRET = "bench-secret"
FIRST_UID = 610_001
CANCEL_SHARE = 0.05
CANCEL_AFTER = 0.3     # seconds after its MatchQueued a cancelling player cancels
SETTLE = 8.0           # after the last arrival: who still waits then (fewer than a table) cancels


class Profiles(records_pb2_grpc.RecordsServicer):
    async def EnsurePlayer(self, req, context):  # type: ignore[no-untyped-def]  # noqa: N802
        return records_pb2.PlayerRecord(user_id=req.user_id, nickname=f"p{req.user_id}",
                                        coins=100_000)

    async def GetPlayer(self, req, context):  # type: ignore[no-untyped-def]  # noqa: N802
        return records_pb2.PlayerRecord(user_id=req.user_id, nickname=f"p{req.user_id}",
                                        coins=100_000)


@dataclass
class Outcome:
    user_id: int
    cancels: bool
    queued_rtt: float = 0.0
    to_found: float | None = None
    to_seated: float | None = None
    room_id: int = 0
    seat: int = -1
    cancelled: bool = False
    leftover: bool = False      # still waiting at the end (fewer than four left): cancelled
    errors: list[str] = field(default_factory=list)


async def pump(stream: ConnectStream, into: asyncio.Queue[client_pb2.ServerFrame | None],
               ) -> None:
    """Every frame of the stream into ``into``, then None (a read is never cancelled: that
    would cancel the call)."""
    try:
        while (frame := await stream.call.read()) is not grpc.aio.EOF:
            into.put_nowait(frame)   # type: ignore[arg-type]
    finally:
        into.put_nowait(None)


async def read(frames: asyncio.Queue[client_pb2.ServerFrame | None],
               timeout: float = 60) -> client_pb2.ServerFrame:
    frame = await asyncio.wait_for(frames.get(), timeout)
    assert frame is not None, "the lobby closed the stream"
    return frame


async def player(address: str, out: Outcome, start_at: float, end: asyncio.Event) -> None:
    await asyncio.sleep(max(0.0, start_at - time.monotonic()))
    stream = ConnectStream(address)     # a player arrives: logs in and asks at once
    frames: asyncio.Queue[client_pb2.ServerFrame | None] = asyncio.Queue()
    reader = asyncio.create_task(pump(stream, frames))
    try:
        await stream.send(lobby_msgs_pb2.Login(token=tokens.mint(out.user_id, SECRET, 3600)))
        while (await read(frames)).WhichOneof("payload") != "login_ok":
            pass
        asked = time.monotonic()
        seq = await stream.send(lobby_msgs_pb2.AskMatch(game="xuezhan"))
        cancel_seq = -1
        beat = time.monotonic()
        while True:
            try:
                frame = await read(frames, 1.0)
            except TimeoutError:
                if time.monotonic() - beat > 10:     # a live client beats (the sweep)
                    beat = time.monotonic()
                    await stream.send(lobby_msgs_pb2.HeartBeat())
                if end.is_set() and cancel_seq < 0:
                    out.leftover = True
                    cancel_seq = await stream.send(lobby_msgs_pb2.CancelMatch())
                continue
            kind = frame.WhichOneof("payload")
            if frame.reply_to == seq and kind == "match_queued":
                out.queued_rtt = time.monotonic() - asked
                if out.cancels:
                    await asyncio.sleep(CANCEL_AFTER)
                    cancel_seq = await stream.send(lobby_msgs_pb2.CancelMatch())
            elif kind == "match_found":
                out.to_found = time.monotonic() - asked
                out.room_id, out.seat = frame.match_found.room_id, frame.match_found.seat
            elif kind == "room_joined" and out.to_found is not None:
                out.to_seated = time.monotonic() - asked
                return
            elif kind == "match_cancelled":
                out.cancelled = True
                return
            elif kind == "ret" and frame.ret.code:
                if frame.reply_to == cancel_seq:
                    continue    # matched before the cancel arrived: the room follows
                out.errors.append(f"{frame.ret.code} {frame.ret.message}")
                return
    finally:
        await stream.close()
        reader.cancel()


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def run(players: int, rate: float) -> list[str]:
    rng = random.Random(23)
    with EmbeddedNats() as natsd:
        records = grpc.aio.server()
        records_pb2_grpc.add_RecordsServicer_to_server(Profiles(), records)
        records_port = records.add_insecure_port("127.0.0.1:0")
        await records.start()
        cfg = load_config("test", environ={"NATS_URL": natsd.url,
                                           "PAIJU_TABLE__INSTANCE": "table-bench"})
        arbiter = await start_arbiter(cfg, port=0, metrics_port=-1)
        table = await start_table(cfg, port=0, metrics_port=-1)
        cfg = replace(cfg, lobby=replace(cfg.lobby, token_secret=SECRET, ws_port=-1,
                                         match_tick_seconds=1.0, match_lease_seconds=5.0),
                      records=replace(cfg.records, address=f"127.0.0.1:{records_port}"))
        lobbies = [await start_lobby(cfg, port=0, metrics_port=-1) for _ in range(2)]
        try:
            await asyncio.sleep(1.5)     # the first lease
            outs = [Outcome(FIRST_UID + i, rng.random() < CANCEL_SHARE) for i in range(players)]
            t0, at = time.monotonic() + 2.0, 0.0
            tasks = []
            end = asyncio.Event()
            for i, out in enumerate(outs):
                at += rng.expovariate(rate)
                address = f"127.0.0.1:{lobbies[i % 2].port}"
                tasks.append(asyncio.create_task(player(address, out, t0 + at, end)))
            asyncio.get_running_loop().call_at(
                asyncio.get_running_loop().time() + (t0 - time.monotonic()) + at + SETTLE,
                end.set)
            started = time.monotonic()
            await asyncio.wait_for(asyncio.gather(*tasks), 120 + players / rate)
            wall = time.monotonic() - started
            matchers = [lobby.app.matchmaking for lobby in lobbies]
            return report(outs, rate, wall, [(m.matches, sum(m.passes.values())) for m in matchers])
        finally:
            for lobby in lobbies:
                await lobby.stop(0.2)
            await table.stop(0)
            await arbiter.stop(0)
            await records.stop(0)


def report(outs: list[Outcome], rate: float, wall: float,
           matchers: list[tuple[int, int]]) -> list[str]:
    matched = [o for o in outs if o.room_id]
    rooms: dict[int, list[Outcome]] = defaultdict(list)
    for o in matched:
        rooms[o.room_id].append(o)
    bad_rooms = [r for r, os_ in rooms.items()
                 if sorted(o.seat for o in os_) != [0, 1, 2, 3]
                 or len({o.user_id for o in os_}) != 4]
    cancelled_matched = [o for o in outs if o.cancelled and o.room_id]
    lost = [o for o in outs if not o.room_id and not o.cancelled]
    leftover = [o for o in outs if o.leftover and not o.room_id]
    errors = [e for o in outs for e in o.errors]
    found = [o.to_found for o in matched if o.to_found is not None]
    seated = [o.to_seated for o in matched if o.to_seated is not None]
    rtts = [o.queued_rtt for o in outs if o.queued_rtt]
    return [
        f"- players: {len(outs)} on two lobbies, asking at {rate:g} a second (Poisson); "
        f"{sum(o.cancels for o in outs)} meant to cancel {CANCEL_AFTER:g} s after queuing; "
        f"run {wall:.1f} s",
        f"- matched: {len(matched)} players in {len(rooms)} rooms; cancelled: "
        f"{sum(o.cancelled for o in outs)} (of them {len(leftover)} left waiting {SETTLE:g} s "
        f"after the last arrival, fewer than a table); rooms made by each lobby's matcher, "
        f"and its passes: {matchers}",
        f"- AskMatch round trip (to MatchQueued): p50 {1000 * statistics.median(rtts):.1f} ms, "
        f"p99 {1000 * pct(rtts, 0.99):.1f} ms",
        f"- ask to MatchFound: p50 {statistics.median(found):.2f} s, p99 "
        f"{pct(found, 0.99):.2f} s, max {max(found):.2f} s (a pass a second: a ticket waits "
        "for the next pass and for three others)",
        f"- ask to seated (RoomJoined): p50 {statistics.median(seated):.2f} s, p99 "
        f"{pct(seated, 0.99):.2f} s, max {max(seated):.2f} s",
        f"- checks (all must be 0): rooms not of four different players in four seats "
        f"{len(bad_rooms)}, cancelled tickets matched {len(cancelled_matched)}, players "
        f"neither matched nor cancelled {len(lost)}, players left waiting beyond three "
        f"{max(0, len(leftover) - 3)}, error frames {len(errors)}"
        + (f" ({errors[:3]})" if errors else ""),
    ]


def main() -> None:
    opts = parse_options(__doc__)
    players, rate = (80, 10.0) if opts.quick else (400, 10.0)
    lines = asyncio.run(run(players, rate))
    write_report(opts.report("match_wire.md"), [
        "# Matchmaking over the wire",
        "",
        (__doc__ or "").split("\n\n", 1)[1].strip(),
        "",
        f"Command: {command('bench_match_wire', opts.quick)}; {machine()}, "
        "two cores shared with the clients.",
        "",
        *lines,
    ])


if __name__ == "__main__":
    main()
