"""The robot program's rounds (clients/robot play_rounds) against a real stack whose lobby
takes one room a minute from a user: the first round plays, the next are refused, and the
robots wait longer after each refused round instead of asking again at once."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from clients.robot.robot import RobotStats, play_rounds, run_tables
from clients.session import Backoff
from tests.system.conftest import SECRET, Stack, start_stack, stop_stack


@pytest.fixture
def one_room_a_minute(tmp_path: Path) -> Iterator[Stack]:
    s = start_stack(tmp_path, PAIJU_LOBBY__CREATES_PER_USER_PER_MINUTE="1")
    try:
        yield s
    finally:
        stop_stack(s)


async def test_refused_rounds_wait_longer_each_time(one_room_a_minute: Stack) -> None:
    rounds: list[list[RobotStats]] = []
    pauses: list[float] = []

    async def play() -> list[RobotStats]:
        stats = await run_tables(one_room_a_minute.lobby_address, "dadun", 1, SECRET, hands=1,
                                 first_uid=71_000, room_wait=20)
        rounds.append(stats)
        return stats

    async def sleep(seconds: float) -> None:   # recorded, not slept: the limit is a minute
        pauses.append(seconds)

    played = await asyncio.wait_for(
        play_rounds(play, 4, "dadun", backoff=Backoff(first=1.0, longest=60.0), sleep=sleep),
        timeout=120)
    assert played == 1                       # rounds in which a hand was played
    assert [sum(s.hands for s in r) // 4 for r in rounds] == [1, 0, 0, 0]
    # (the second round's creator may still find the first room in its seat entry, closed
    # a moment before: the later ones are refused by the limit)
    refused = [e for r in rounds[2:] for s in r for e in s.errors]
    assert refused and all("rooms created" in e for e in refused), refused
    # after rounds 2 and 3 (none after the last): 1 s then 2 s, each jittered down to half
    assert len(pauses) == 2, pauses
    assert 0.5 <= pauses[0] <= 1.0 and 1.0 <= pauses[1] <= 2.0, pauses
