"""Issue 24 (SLO "hands settle within 5 s of their end", docs/slo.md): records measures
each written settlement from the hand's end, ``paiju_records_settlement_delay_seconds``.
A real nats-server and records in-process: a settlement published now lands in the lowest
buckets; one that waited 20 s in a table's outbox (its ``settled_at``) is counted as late,
although JetStream received it just now."""

from __future__ import annotations

import time

import nats
from prometheus_client import REGISTRY

from services.common.server import ServiceHost
from tests.service.test_records import (  # noqa: F401 - js and service are fixtures
    SEATS,
    js,
    publish,
    service,
)
from tests.service.test_records_support import hand_message
from tests.support.waiting import eventually

NAME = "paiju_records_settlement_delay_seconds"


def sample(suffix: str, le: str | None = None) -> float:
    labels = {"le": le} if le is not None else {}
    return REGISTRY.get_sample_value(f"{NAME}{suffix}", labels) or 0.0


def stamp(seconds_ago: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - seconds_ago))


async def test_settlement_delay_runs_from_the_end_of_the_hand(
        service: ServiceHost, js: nats.js.JetStreamContext) -> None:  # noqa: F811
    before = {le: sample("_bucket", le) for le in ("1.0", "5.0", "30.0")}
    count, total = sample("_count"), sample("_sum")

    async def counted(n: int) -> bool:
        return sample("_count") - count >= n

    fresh = hand_message(410001, 1, SEATS, [1, -1, 0, 0]) | {"settled_at": stamp(0)}
    await publish(js, fresh, "410001:1")
    await eventually(lambda: counted(1), seconds=20)
    assert sample("_bucket", "1.0") - before["1.0"] == 1      # written within a second

    late = hand_message(410002, 1, SEATS, [1, -1, 0, 0]) | {"settled_at": stamp(20)}
    await publish(js, late, "410002:1")
    await eventually(lambda: counted(2), seconds=20)
    assert sample("_bucket", "5.0") - before["5.0"] == 1      # the late one is not within 5 s
    assert sample("_bucket", "30.0") - before["30.0"] == 2
    assert 19 <= sample("_sum") - total < 25
