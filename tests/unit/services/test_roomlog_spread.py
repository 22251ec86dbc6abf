"""roomlog.spread_leaders on the stream infos JetStream gives (the cluster section of
``$JS.API.STREAM.INFO``): it asks a stream to step down in favour of the node that leads
the fewest, one move at a time, and never in favour of a node cut off from the others, which
JetStream's leader still calls "current" for seconds after the cut (its ``active``, the time
since the leader last heard from it, grows meanwhile). tests/cluster/test_room_log_shards.py
and test_room_log_election.py run it on a real cluster."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

from nats.js.api import ClusterInfo, PeerInfo

from services.common import bus
from services.table.roomlog import HEARD_WITHIN_NS, spread_leaders

NODES = ("n0", "n1", "n2")
FRESH = 200_000_000         # 0.2 s since the leader heard from the replica (in ns)


class FakeJs:
    def __init__(self, leaders: dict[str, str], active: dict[str, int]) -> None:
        self.leaders, self.active = leaders, active

    async def stream_info(self, name: str) -> Any:
        leader = self.leaders[name]
        replicas = [PeerInfo(name=n, current=True, offline=False, active=self.active[n], lag=0)
                    for n in NODES if n != leader]
        return SimpleNamespace(cluster=ClusterInfo(leader=leader, name="paiju",
                                                   replicas=replicas))


class FakeNc:
    def __init__(self) -> None:
        self.asked: list[tuple[str, dict[str, Any]]] = []

    async def request(self, subject: str, payload: bytes, timeout: float) -> Any:
        self.asked.append((subject, json.loads(payload)))
        return SimpleNamespace(data=json.dumps({"success": True}).encode())


GATHERED = dict(zip(bus.ROOM_LOG_STREAMS, ("n1", "n1", "n2"), strict=True))


async def test_a_node_leading_more_than_its_share_hands_one_stream_to_the_idle_node() -> None:
    nc = FakeNc()
    js = FakeJs(GATHERED, {n: FRESH for n in NODES})
    moved, settled = await spread_leaders(nc, js)
    assert moved == bus.ROOM_LOG_STREAMS[0] and not settled
    assert nc.asked == [(f"$JS.API.STREAM.LEADER.STEPDOWN.{moved}",
                         {"placement": {"preferred": "n0"}})]


async def test_a_node_not_heard_from_lately_is_not_given_a_leader() -> None:
    """n0 is cut off: the two others lead the three streams, which is their share of two
    nodes; no step-down (it would only make the stream elect again on the majority), and
    the streams are not settled, so the balancer looks again soon."""
    nc = FakeNc()
    js = FakeJs(GATHERED, {"n0": 5 * HEARD_WITHIN_NS // 3, "n1": FRESH, "n2": FRESH})
    moved, settled = await spread_leaders(nc, js)
    assert moved is None and not settled
    assert nc.asked == []


async def test_balanced_and_all_heard_is_settled() -> None:
    nc = FakeNc()
    spread = dict(zip(bus.ROOM_LOG_STREAMS, NODES, strict=True))
    assert await spread_leaders(nc, FakeJs(spread, {n: FRESH for n in NODES})) == (None, True)
    assert nc.asked == []
