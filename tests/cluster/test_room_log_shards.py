"""The room log over several streams on a three-node JetStream cluster (bus.ROOM_LOG_STREAMS,
services/table/roomlog.balance_leaders): the table spreads the streams' leaders over the
nodes, and a node's SIGKILL stalls only the rooms of the stream it led; the rooms of the
other streams keep every append acknowledged at the first try."""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from typing import Any

import nats
import pytest
from nats.js.errors import NoStreamResponseError

from services.common import bus
from services.common.natsd import EmbeddedNatsCluster, stream_leader
from services.table.roomlog import balance_leaders

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(240)]


async def leaders(js: Any) -> dict[str, str | None]:
    return {name: await stream_leader(js, name) for name in bus.ROOM_LOG_STREAMS}


async def until(check: Any, what: str, seconds: float = 30.0) -> Any:
    deadline = time.monotonic() + seconds
    while True:
        with_value = await check()
        if with_value:
            return with_value
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.2)


async def step_down(nc: Any, stream: str, to: str) -> None:
    reply = await nc.request(f"$JS.API.STREAM.LEADER.STEPDOWN.{stream}",
                             json.dumps({"placement": {"preferred": to}}).encode(), timeout=5)
    assert json.loads(reply.data).get("success"), reply.data


async def test_leaders_spread_and_a_node_loss_stalls_only_its_stream() -> None:
    cluster = EmbeddedNatsCluster(3)
    with cluster:
        nc = await nats.connect(cluster.url_list, max_reconnect_attempts=-1,
                                reconnect_time_wait=0.2)
        try:
            js = nc.jetstream(timeout=2)
            await bus.ensure_streams(js, 3)
            rooms = {bus.room_log_stream(room): room for room in range(100, 100 + 3)}
            assert sorted(rooms) == sorted(bus.ROOM_LOG_STREAMS)

            async def answering() -> bool:
                try:
                    for room in rooms.values():
                        await js.publish(bus.room_log(room), b"{}")
                except NoStreamResponseError:   # the new streams reach every server soon
                    return False
                return True

            await until(answering, "the room-log streams never answered")
            # every leader on one node: what a fresh cluster may well do by chance
            first = cluster.server_names[0]
            for name in bus.ROOM_LOG_STREAMS:
                await until(lambda name=name: stream_leader(js, name), f"{name}: no leader")
                if await stream_leader(js, name) != first:
                    await step_down(nc, name, first)

            async def all_on_first() -> bool:
                return set((await leaders(js)).values()) == {first}

            await until(all_on_first, "the leaders never gathered on one node")

            # the table's balancer, called as its resync does: one move per call
            moves = 0

            async def balanced() -> bool:
                nonlocal moves
                led = Counter((await leaders(js)).values())
                if None not in led and len(led) == 3:
                    return True
                moves += await balance_leaders(nc, js) is not None
                return False

            await until(balanced, "the balancer never spread the leaders", seconds=60)
            assert moves == 2, moves          # two streams moved away from the crowded node
            assert await balance_leaders(nc, js) is None   # balanced: nothing more to do
            placed = await leaders(js)

            # SIGKILL the node leading ROOMLOG_0; a client on a surviving node appends to a
            # room of every stream every 50 ms
            victim = cluster.index_of(str(placed[bus.ROOM_LOG_STREAMS[0]]))
            survivor = next(n.url for n in cluster.nodes if n.index != victim)
            writer = await nats.connect(survivor, max_reconnect_attempts=-1)
            wjs = writer.jetstream(timeout=0.5)
            failures: Counter[str] = Counter()
            last_ack: dict[str, float] = {}
            gaps: Counter[str] = Counter()
            stop = asyncio.Event()

            async def append(stream: str, room: int) -> None:
                while not stop.is_set():
                    try:
                        await wjs.publish(bus.room_log(room), b"{}", timeout=0.5)
                        now = time.monotonic()
                        if stream in last_ack:
                            gaps[stream] = max(gaps[stream], now - last_ack[stream])
                        last_ack[stream] = now
                    except Exception:
                        failures[stream] += 1
                    await asyncio.sleep(0.05)

            writers = [asyncio.create_task(append(s, r)) for s, r in rooms.items()]
            await asyncio.sleep(1.0)
            killed_at = time.monotonic()
            cluster.kill(victim)

            async def led_again() -> bool:
                return last_ack.get(bus.ROOM_LOG_STREAMS[0], 0) > killed_at + 0.1

            await until(led_again, "ROOMLOG_0 never took an append again", seconds=60)
            await asyncio.sleep(1.0)
            stop.set()
            await asyncio.gather(*writers)
            await writer.close()
            stalled = bus.ROOM_LOG_STREAMS[0]
            others = [s for s in bus.ROOM_LOG_STREAMS if s != stalled]
            print(f"longest gap between acknowledged appends: {dict(gaps)}; "
                  f"failed appends: {dict(failures)}")
            # the streams the killed node did not lead never missed an append
            assert all(failures[s] == 0 for s in others), failures
            assert gaps[stalled] > max(gaps[s] for s in others), gaps
        finally:
            await nc.close()
