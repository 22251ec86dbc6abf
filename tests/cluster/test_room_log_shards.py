"""The room log over several streams on a three-node JetStream cluster (bus.ROOM_LOG_STREAMS,
services/table/roomlog.spread_leaders): the table spreads the streams' leaders over the
nodes, and a node's SIGKILL stalls only the rooms of the stream it led; the rooms of the
other streams keep every append acknowledged at the first try."""

from __future__ import annotations

import asyncio
import json
import signal
import time
from collections import Counter
from typing import Any

import nats
import pytest
from nats.js.errors import NoStreamResponseError

from services.common import bus
from services.common.natsd import EmbeddedNatsCluster, stream_leader
from services.table.roomlog import spread_leaders
from tests.support.cluster import until

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(240)]


async def leaders(js: Any) -> dict[str, str | None]:
    return {name: await stream_leader(js, name) for name in bus.ROOM_LOG_STREAMS}




async def step_down(nc: Any, stream: str, to: str) -> None:
    reply = await nc.request(f"$JS.API.STREAM.LEADER.STEPDOWN.{stream}",
                             json.dumps({"placement": {"preferred": to}}).encode(), timeout=5)
    assert json.loads(reply.data).get("success"), reply.data


class Appends:
    """A client on ``url`` appending to one room of every log stream every 50 ms: the
    longest gap between two acknowledged appends and the failed appends, per stream."""

    def __init__(self, url: str, rooms: dict[str, int]) -> None:
        self.url, self.rooms = url, rooms
        self.failures: Counter[str] = Counter()
        self.gaps: dict[str, float] = {}
        self.last_ack: dict[str, float] = {}
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    async def __aenter__(self) -> Appends:
        self.nc = await nats.connect(self.url, max_reconnect_attempts=-1)
        js = self.nc.jetstream(timeout=0.5)

        async def append(stream: str, room: int) -> None:
            while not self._stop.is_set():
                try:
                    await js.publish(bus.room_log(room), b"{}", timeout=0.5)
                    now = time.monotonic()
                    if stream in self.last_ack:
                        self.gaps[stream] = max(self.gaps.get(stream, 0.0),
                                                now - self.last_ack[stream])
                    self.last_ack[stream] = now
                except Exception:
                    self.failures[stream] += 1
                await asyncio.sleep(0.05)

        self._tasks = [asyncio.create_task(append(s, r)) for s, r in self.rooms.items()]
        await asyncio.sleep(1.0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._stop.set()
        await asyncio.gather(*self._tasks)
        await self.nc.close()


async def balanced_cluster(cluster: EmbeddedNatsCluster) -> tuple[Any, Any, dict[str, int]]:
    """The room-log streams on ``cluster`` (R3), every leader first gathered on one node,
    then spread by the table's balancer; the connection, its JetStream context and a room
    of each stream."""
    nc = await nats.connect(cluster.url_list, max_reconnect_attempts=-1,
                            reconnect_time_wait=0.2)
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
        moves += (await spread_leaders(nc, js))[0] is not None
        return False

    await until(balanced, "the balancer never spread the leaders", seconds=60)
    assert moves == 2, moves          # two streams moved away from the crowded node
    assert (await spread_leaders(nc, js))[0] is None   # balanced: nothing more to do
    return nc, js, rooms


async def test_leaders_spread_and_a_node_kill_stalls_only_its_stream() -> None:
    with EmbeddedNatsCluster(3) as cluster:
        nc, js, rooms = await balanced_cluster(cluster)
        try:
            stalled = bus.ROOM_LOG_STREAMS[0]
            victim = cluster.index_of(str(await stream_leader(js, stalled)))
            survivor = next(n.url for n in cluster.nodes if n.index != victim)
            async with Appends(survivor, rooms) as appends:
                killed_at = time.monotonic()
                cluster.kill(victim)

                async def led_again() -> bool:
                    return appends.last_ack.get(stalled, 0) > killed_at + 0.1

                await until(led_again, f"{stalled} never took an append again", seconds=60)
                await asyncio.sleep(1.0)
            others = [s for s in bus.ROOM_LOG_STREAMS if s != stalled]
            print(f"kill -9: longest gap between acknowledged appends {appends.gaps}; "
                  f"failed appends {dict(appends.failures)}")
            # the streams the killed node did not lead never missed an append
            assert all(appends.failures[s] == 0 for s in others), appends.failures
            assert appends.gaps[stalled] > max(appends.gaps[s] for s in others), appends.gaps
        finally:
            await nc.close()


async def test_a_node_in_lame_duck_mode_hands_its_leaders_over() -> None:
    """A graceful stop (lame-duck mode, SIGUSR2, as a rolling upgrade of the NATS StatefulSet
    does): the node gives up its leaderships before it goes, every append of every stream is
    acknowledged at the first try or after one short gap (reported)."""
    with EmbeddedNatsCluster(3) as cluster:
        nc, js, rooms = await balanced_cluster(cluster)
        try:
            moved = bus.ROOM_LOG_STREAMS[0]
            leader = str(await stream_leader(js, moved))
            victim = cluster.index_of(leader)
            survivor = next(n.url for n in cluster.nodes if n.index != victim)
            async with Appends(survivor, rooms) as appends:
                proc = cluster.nodes[victim].proc
                assert proc is not None
                proc.send_signal(signal.SIGUSR2)

                async def handed_over() -> bool:
                    try:   # our own connection may be on the node going away
                        now = await stream_leader(js, moved)
                    except Exception:
                        return False
                    return now not in (None, leader)

                await until(handed_over, f"{moved}: its leader never moved", seconds=60)
                await asyncio.sleep(1.0)
            print(f"lame duck: longest gap between acknowledged appends {appends.gaps}; "
                  f"failed appends {dict(appends.failures)}")
            assert set(appends.gaps) == set(bus.ROOM_LOG_STREAMS), appends.gaps
        finally:
            await nc.close()
