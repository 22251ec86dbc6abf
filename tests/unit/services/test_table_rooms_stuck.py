"""Issue 24: ``paiju_table_rooms_stuck`` counts rooms in a hand that recorded nothing for
longer than their decision timer plus a grace (RoomActor.stuck). Real room actors with a
1-second timer: one whose timer plays goes on and is never stuck; one whose timer is
stopped (as a wedged room's would be) is stuck once its timer and the grace are past."""

from __future__ import annotations

import asyncio
import time

from paiju.v1 import common_pb2
from services.table.actor import STUCK_GRACE_SECONDS
from tests.support.waiting import until
from tests.unit.services.test_table_room_timers import TABLE_NOW, started

GRACE = 1.5   # instead of STUCK_GRACE_SECONDS, to see it on the real clock (a busy machine
#               may delay the 1-second timer by a fraction of a second)


async def test_a_room_whose_timer_plays_is_not_stuck_and_one_whose_timer_died_is() -> None:
    room, actor, _ = await started(common_pb2.DADUN, "dadun", {"alone_seconds": 1})
    try:
        assert room.decision_seconds(TABLE_NOW) == 1.0
        now = time.monotonic()
        assert not actor.stuck(now)
        assert not actor.stuck(now + 1 + STUCK_GRACE_SECONDS - 0.5)
        assert actor.stuck(now + 1 + STUCK_GRACE_SECONDS + 0.5)
        # the timer plays for the late seats (打独 is asked seat by seat, each late seat is
        # entrusted): records keep coming, never stuck. Watched for two plays, not for a
        # fixed time, which a stalled machine can stretch past all four seats' timers (the
        # hand then goes on to phases with the table's 30-second timer)
        def entrusted() -> int:
            return sum(1 for s in room.seats if s is not None and s.entrusted)

        index = actor.next_index
        watched = time.monotonic()
        while entrusted() < 2 and time.monotonic() - watched < 10:
            await asyncio.sleep(0.05)
            assert not actor.stuck(time.monotonic(), GRACE)
        assert entrusted() >= 2 and actor.next_index > index, "the timer played nothing"
        # the timer stops while a seat is still to be asked (1-second decisions):
        # nothing records any more, stuck after timer + grace
        actor.auto.stop_timer()
        assert room.in_hand() and room.decision_seconds(TABLE_NOW) == 1.0
        stopped = time.monotonic()
        while not actor.stuck(time.monotonic(), GRACE) and time.monotonic() - stopped < 10:
            await asyncio.sleep(0.05)
        assert actor.stuck(time.monotonic(), GRACE)
        assert time.monotonic() - actor.progressed > room.decision_seconds(TABLE_NOW) + GRACE
        # a dismiss vote has its own deadline: not stuck meanwhile
        room.dismiss = object()  # type: ignore[assignment]
        assert not actor.stuck(time.monotonic(), GRACE)
        room.dismiss = None
        # a room handed to another table is not this table's to report
        actor.paused = True
        assert not actor.stuck(time.monotonic(), GRACE)
    finally:
        await actor.stop()


async def test_every_heartbeat_sets_the_gauge_from_the_table_s_rooms() -> None:
    """The table's heartbeat (Lease) counts its stuck rooms into paiju_table_rooms_stuck,
    whether or not its directory write succeeds."""
    from types import SimpleNamespace

    from prometheus_client import REGISTRY

    from paiju.contracts.directory import TableEntry
    from services.table.lease import Lease

    class Room:
        def __init__(self, stuck: bool) -> None:
            self.is_stuck = stuck

        def stuck(self, now: float) -> bool:
            return self.is_stuck

    rooms = {1: Room(True), 2: Room(False), 3: Room(True)}
    core = SimpleNamespace(cfg=SimpleNamespace(table=SimpleNamespace(lease_ttl_seconds=1.0),
                                              nats=SimpleNamespace(replicas=1)),
                           rooms=rooms, has_pending=lambda: False, instance="table-t",
                           nc=SimpleNamespace(is_connected=True, isolated=False), js=None)

    async def nothing() -> None:
        return None

    # a heartbeat late by a stall bound (a loaded machine) makes the lease check the rooms
    core.reverify = core.retry_pending = nothing

    async def refused() -> None:
        raise ConnectionError("NATS is away")

    lease = Lease(core, scan=nothing)  # type: ignore[arg-type]
    lease.entry = lambda: TableEntry(  # type: ignore[method-assign]
        instance="table-t", address="", rooms=len(rooms), players=0, started_at=0.0,
        draining=False)
    lease._connect = refused           # type: ignore[method-assign]
    lease.start()
    try:
        def gauge() -> float | None:
            return REGISTRY.get_sample_value("paiju_table_rooms_stuck")

        assert await until(lambda: gauge() == 2)
        rooms[1].is_stuck = False
        del rooms[3]
        assert await until(lambda: gauge() == 0)
    finally:
        await lease.stop()
