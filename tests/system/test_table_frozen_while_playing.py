"""A table frozen mid-hand (SIGSTOP) for longer than its lease loses its rooms to the other
table, which plays them on; continued (SIGCONT), it appends nothing to the rooms it lost
(refused or not) but an append a room may have begun before the stop and sent after it (with
its retries), which the log's fence refuses, and sends nothing to their players; the
robots finish every hand and each hand is settled exactly once (so no action was applied
twice: a doubled action would deal or settle a hand of its own).

Real processes (tests/support/failover.py on tests/system/conftest.py's stack, two tables),
the shipped lease (config/test.toml). The issue's freeze is 20 s (the bench's default,
bench/bench_failover.py); here it is a lease past the room's longest decision timer, so
every timer the frozen table had running is due when it is continued (the path by which a
continued table would act at once), and three leases at least."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

from paiju.v1 import common_pb2, lobby_msgs_pb2
from services.common.config import load_config
from tests.support.failover import FailoverBench, doubled

HANDS = 3
THINK = 0.1            # the robots' think time: hands long enough to freeze one mid-way
EVENTS_BEFORE = 30     # events of every room before the freeze: its first hand is under way


async def test_a_frozen_table_loses_its_rooms_and_stays_silent_when_continued(
        tmp_path: Path) -> None:
    bench = FailoverBench(tmp_path, rooms=2, think=THINK, hands=HANDS)
    ttl = bench.ttl
    table = load_config("test", environ={}).table
    freeze = max(3 * ttl, table.turn_seconds + table.window_seconds + ttl)
    try:
        await bench.start()
        await bench.play(first_uid=66_000)
        assert bench.observer is not None
        for _ in range(600):
            if all(len(bench.observer.events.get(r, [])) >= EVENTS_BEFORE
                   for r in bench.room_ids):
                break
            await asyncio.sleep(0.1)

        trial = await bench.freeze(freeze)

        assert trial.rooms, "the frozen table owned rooms in play"
        assert all(v is not None for v in trial.resume.values()), trial.resume
        # the rooms play on at the other table soon after the lease (generous: a shared,
        # slow machine; the figures are bench/reports/failover.md)
        assert max(v for v in trial.resume.values() if v is not None) < 4 * ttl, trial.resume
        assert trial.breaches == [], trial.breaches
        # the watch behind "no breach" sees the appends of both writers and the log's answers
        for room in trial.rooms:
            writers = {boot for _, _, boot, _, _ in bench.observer.appends.get(room, [])}
            assert len(writers - {""}) >= 2, (room, writers)
        assert any(bench.observer.landed(reply) and reply in bench.observer.answers
                   for appends in bench.observer.appends.values()
                   for _, _, _, _, reply in appends)
        # the continued table said it let the rooms go: dropped after its check, let lapse
        # when the check did not come within a lease (its reconnect was slow), found closed
        # (the other table played the room's last hand while this one was stopped), or
        # dropped when the log refused an append begun before the stop
        assert trial.let_go >= 1, trial.notes

        results = await bench.finish(240)
        assert [r.hands for r in results] == [HANDS] * 8, [r.errors for r in results]
        transient = (str(common_pb2.ERR_ROOM_MOVING), str(common_pb2.ERR_UNAVAILABLE))
        assert all(e.startswith(("969", *transient)) for r in results for e in r.errors), \
            [r.errors for r in results]
        assert all(r.closed_reason == lobby_msgs_pb2.NoticeDismiss.ALL_HANDS_PLAYED
                   for r in results)
        hands = []
        for _ in range(100):
            hands = await bench.hands()
            if len([h for h in hands if not h.final]) >= HANDS * len(bench.room_ids):
                break
            await asyncio.sleep(0.2)
        per_hand = Counter((h.room_id, h.hand_no) for h in hands if not h.final)
        assert sorted(per_hand) == sorted((room, hand) for room in bench.room_ids
                                          for hand in range(1, HANDS + 1)), per_hand
        assert doubled(hands) == [], "every hand is settled exactly once"
        assert all(sum(h.deltas) == 0 for h in hands if not h.final)
    finally:
        await bench.stop()
