"""Network partitions: one NATS node cut off from the other two (its routes reset and
refused through the proxies of tests/support/partition.py) while its clients stay connected
to it.

First the cut itself, on a bare cluster: the two others elect leaders without the cut node
and go on taking acknowledged publishes; a plain client of the cut node stays connected but
its JetStream calls fail, while a service's connection (services.common.bus.connect) there
moves to the majority within seconds and one on the majority stays where it is; healed, the
node rejoins and catches up.

Then the whole stack as processes (tests/support/cluster.py: three tables, two lobbies, a
records on PostgreSQL, an arbiter; robots playing a room of every game): mid-hand, the node
that a table owning rooms in play is connected to (and a lobby, when one is) is cut off.
No room's stored log has a record of a second writer (each table holds a room from its
``owner`` record until another's); the cut-off table's rooms play on at the majority;
the services connected to the cut node move to the others; robots end every room, every hand
is settled exactly once and zero-sum, nothing refused but overtaken answers; healed, the
node's store catches up with the others'.
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request
from pathlib import Path
from typing import Any

import nats
import pytest
from nats.js.api import StreamConfig
from nats.js.errors import NoStreamResponseError

from services.common import bus
from services.common.natsd import EmbeddedNatsCluster, stream_leader
from tests.support.cluster import (
    ChaosPlan,
    PostgresUnavailable,
    StackSpec,
    create_database,
    describe,
    drop_database,
    quantile,
    until,
)
from tests.support.partition import PartitionResult, RouteProxies, run_partition

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(480)]   # two runs of the stack at most

PLAN = ChaosPlan(faults=("partition",), lanes_per_game=1, hands_per_room=2,
                 warmup_seconds=3.0, settle_seconds=0.5, recovery_bound=30.0,
                 finish_bound=90.0, room_bound=150.0,
                 stack=StackSpec(records=1, arbiters=1, tables=3, lobbies=2,
                                 fronted_routes=True))


def port_of(nc: Any) -> int | None:
    url = nc.connected_url
    return None if url is None else int(url.port)


def stream_messages(cluster: EmbeddedNatsCluster, i: int, stream: str) -> int:
    """The messages of ``stream`` in node ``i``'s own store (its monitor's /jsz)."""
    node = cluster.nodes[i]
    url = f"http://{node.host}:{node.monitor_port}/jsz?accounts=true&streams=true"
    with urllib.request.urlopen(url, timeout=2) as reply:
        jsz = json.loads(reply.read())
    for account in jsz.get("account_details") or ():
        for detail in account.get("stream_detail") or ():
            if detail["name"] == stream:
                return int(detail["state"]["messages"])
    return -1


async def test_a_cut_node_is_isolated_while_its_clients_stay_and_rejoins_when_healed() -> None:
    cluster = EmbeddedNatsCluster(3, fronted_routes=True)
    proxies = RouteProxies(cluster).start()
    conns: list[Any] = []
    try:
        cluster.start()
        nc = await nats.connect(cluster.url_list, max_reconnect_attempts=-1,
                                reconnect_time_wait=0.2)
        conns.append(nc)
        js = nc.jetstream(timeout=2)
        await js.add_stream(StreamConfig(name="P", subjects=["p.*"], num_replicas=3))

        async def published() -> bool:
            try:
                await js.publish("p.1", b"m0", timeout=1)
                return True
            except NoStreamResponseError:
                return False
        await until(published, "the new stream never answered")
        leader = await stream_leader(js, "P")
        assert leader is not None
        cut = cluster.index_of(leader)
        majority = [i for i in range(3) if i != cut]
        # a client of the node to be cut, and one of the majority, each pinned to its node
        inside = await nats.connect([cluster.nodes[cut].url], max_reconnect_attempts=-1,
                                    reconnect_time_wait=0.2)
        outside = await nats.connect([cluster.nodes[majority[0]].url],
                                     max_reconnect_attempts=-1, reconnect_time_wait=0.2)
        conns += [inside, outside]
        js_in, js_out = inside.jetstream(timeout=1), outside.jetstream(timeout=2)
        await js_in.account_info()
        # services' connections: one given the node to be cut (it learns the others from the
        # server), one given a majority node
        mover = await bus.connect(cluster.nodes[cut].url, "table-mover")
        stayer = await bus.connect(cluster.nodes[majority[0]].url, "table-stayer")
        conns += [mover, stayer]
        assert port_of(mover) == cluster.nodes[cut].port
        assert all(proxies.connected(cut, j) for j in majority)

        proxies.cut(cut)
        cut_at = time.monotonic()
        assert not any(proxies.connected(cut, j) for j in majority)

        async def moved() -> bool:
            return bool(mover.is_connected
                        and port_of(mover) != cluster.nodes[cut].port)
        await until(moved, "the service's connection stayed on the cut node", 15)
        moved_in = time.monotonic() - cut_at
        # the majority elects a new leader of P without the cut node and takes publishes
        async def majority_publishes() -> bool:
            await js_out.publish("p.1", b"after", timeout=1)
            return True
        await until(majority_publishes, "the majority took no publish after the cut")

        await until(lambda: mover.jetstream(timeout=2).account_info(),
                    "JetStream never answered the moved connection", 15)
        new_leader = await until(lambda: stream_leader(js_out, "P"), "no leader of P")
        assert new_leader != leader
        elected = time.monotonic() - cut_at
        for k in range(5):
            await js_out.publish("p.1", f"m{k}".encode(), timeout=2)

        # the cut node's client is still connected, but JetStream takes nothing from it (its
        # account info may still come from a meta leader that does not know it lost)
        failures = 0
        for _ in range(4):
            try:
                await js_in.publish("p.1", b"inside", timeout=1)
            except Exception:
                failures += 1
        assert failures == 4, "JetStream took a publish through the cut node"
        assert inside.is_connected and port_of(inside) == cluster.nodes[cut].port
        # a connection to the majority never moved, through the elections either
        assert port_of(stayer) == cluster.nodes[majority[0]].port
        assert stayer.stats["reconnects"] == 0
        assert not any(proxies.connected(cut, j) for j in majority), "a route came back"
        assert proxies.refused > 0, "the cut node never tried its routes again"
        assert proxies.unknown == 0, "a route connection whose dialler was not found"

        proxies.heal(cut)
        healed = time.monotonic()
        await until(lambda: asyncio.to_thread(cluster.healthy, cut),
                    "the healed node never became healthy again", 60)
        await until(lambda: js_in.account_info(), "JetStream never answered the healed node", 30)
        total = (await js_out.stream_info("P")).state.messages
        await until(lambda: asyncio.to_thread(
            lambda: stream_messages(cluster, cut, "P") == total),
            "the healed node's store never caught up", 30)
        print(f"\npartition of a bare cluster: new leader of P {elected:.2f} s after the cut; "
              f"a service's connection left the cut node {moved_in:.2f} s after the cut; "
              f"the cut node current again {time.monotonic() - healed:.2f} s after healing")
    finally:
        for c in conns:
            await c.close()
        cluster.stop()
        proxies.stop()
        cluster.close()


def report(result: PartitionResult) -> str:
    lines = [describe(result.outcome)]
    lines.append(f"  room logs read {result.rooms_logged}; second writers {len(result.breaches)}"
                 f"{': ' + '; '.join(result.breaches[:8]) if result.breaches else ''}; gaps "
                 f"{len(result.gaps)}{': ' + '; '.join(result.gaps[:8]) if result.gaps else ''}")
    if result.behind:
        lines.append("  healed node behind: " + "; ".join(result.behind[:8]))
    return "\n".join(lines)


def lively(result: PartitionResult) -> bool:
    """The liveness this test asks of a run (below); the data promises are asked of every
    run."""
    faults = {f.kind: f for f in result.outcome.faults}
    cut, lobby, v = faults.get("partition"), faults.get("partition-lobby"), result.outcome.verdict
    return (cut is not None and not cut.error and bool(cut.rooms)
            and all(t is not None for t in cut.recovery.values())
            and result.run is not None and bool(result.run.left)
            and all(t is not None for t in result.run.left.values())
            and (lobby is None or not lobby.players_lost)
            and v.rooms >= 3 and v.rooms_finished == v.rooms and not v.gave_up
            and not v.refused and not v.create_failures and result.run.healed_in is not None)


async def test_a_partition_moves_rooms_and_clients_to_the_majority_with_one_writer(
        tmp_path: Path) -> None:
    """As the compact chaos run (tests/cluster/test_chaos.py): one writer per room, each hand
    settled once and zero-sum, nothing leaked and the healed node current, in every run;
    the liveness (rooms and players back, every room finished, nothing refused) of the last
    run, one more run being made when the first misses it (a robot's timing on the loaded
    2-core CI box; the closing notes say how often)."""
    try:
        db = await create_database()
    except PostgresUnavailable as exc:
        pytest.skip(str(exc))
    try:
        for attempt in (1, 2):
            (tmp_path / f"run{attempt}").mkdir()
            result = await run_partition(tmp_path / f"run{attempt}", PLAN, db)
            text = report(result)
            print(f"\npartition run {attempt} (logs in {tmp_path / f'run{attempt}'}):\n{text}")
            v = result.outcome.verdict
            assert not result.breaches, text
            assert not v.lost and not v.doubled and not v.not_zero_sum, text
            assert not v.leaks and not result.behind, text
            if lively(result):
                break
    finally:
        await drop_database(db)
    faults = {f.kind: f for f in result.outcome.faults}
    cut = faults.get("partition")
    assert cut is not None and not cut.error, text
    assert cut.rooms, f"the cut node's tables owned no room in play\n{text}"
    took = [t for t in cut.recovery.values() if t is not None]
    print(f"cut -> the cut-off table's rooms playing again on the majority: p50 "
          f"{quantile(took, 0.5):.2f} s, max {max(took, default=float('nan')):.2f} s "
          f"({len(took)} rooms); services off the cut node: "
          f"{ {k: v for k, v in sorted(result.run.left.items())} if result.run else {} }")
    # one writer per room, always
    assert result.rooms_logged >= len(cut.rooms), text
    assert not result.breaches, text
    # the rooms of the cut-off table played on at the majority
    assert len(took) == len(cut.rooms), f"rooms that never played again\n{text}"
    # every service that was on the cut node moved to the majority
    assert result.run is not None and result.run.left, text
    assert all(v is not None for v in result.run.left.values()), text
    lobby = faults.get("partition-lobby")
    if lobby is not None:
        assert not lobby.players_lost, text
    # the hands: each settled once, zero-sum; every room ended; nothing refused
    v = result.outcome.verdict
    assert v.hands_settled >= 3, text
    assert not v.lost and not v.doubled and not v.not_zero_sum, text
    assert v.rooms >= 3 and v.rooms_finished == v.rooms and not v.gave_up, text
    # no move refused, no room never created (the refusals this run used to see were the
    # room log's append escaping as an internal error: services/table/roomlog.py)
    assert not v.refused and not v.create_failures, text
    assert not v.leaks, text
    # healed: the node's store is the others'
    assert result.run.healed_in is not None, text
    assert not result.behind, text
