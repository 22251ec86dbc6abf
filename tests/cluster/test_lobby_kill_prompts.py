"""A lobby killed (SIGKILL) at any moment of a hand: every player it served gets its next
prompt within a bound.

Real processes as in the chaos runs (tests/support/cluster.py: three NATS nodes at R3,
records on PostgreSQL, an arbiter, two tables, two lobbies) and robots in this process
playing a room of every game, their seats spread over both lobbies.
The lobby that serves the most robots is killed again and again, each time at another
moment: right after one of its robots got a prompt, right after one sent its answer (the
reply not in yet), right after a hand ended (readies on their way), or at a random moment;
it is started again a moment later on the same port. For every robot that was on the
killed lobby, the time from the kill to its next prompt is measured (its stream ends, it
logs in on the other lobby, its seat is resumed from the snapshot, which carries the prompt
when the seat is to act).

``PAIJU_TEST_LOBBY_KILLS`` sets the number of kills (default 4, about half
a minute in `make test`; 30 or more to hunt a rare long wait)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import random
import signal
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from clients.robot.robot import Robot, room_of
from clients.session import Backoff
from games import registry
from paiju import frames
from paiju.v1 import client_pb2
from tests.support.cluster import (
    SECRET,
    ClusterStack,
    PostgresUnavailable,
    StackSpec,
    create_database,
    drop_database,
)

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(900)]

KILLS = int(os.environ.get("PAIJU_TEST_LOBBY_KILLS", "4"))
BOUND = 10.0          # seconds from a kill to each of its players' next prompt, at most
GIVE_UP = 60.0        # the harness waits this long for a prompt before calling it lost
MOMENTS = ("prompt", "answer", "hand_over", "random")
# the stack of the chaos runs (tests/support/cluster.py), smaller: three NATS nodes at R3,
# records on PostgreSQL, an arbiter, two tables, two lobbies
SPEC = StackSpec(records=1, arbiters=1, tables=2, lobbies=2)
ROOM = {"base_score": 1, "total_hands": 64,
        # the test config's short timers (turn 5 s, window 3 s); ready stays at its default
        "options_json": json.dumps({})}


def now() -> float:
    return time.monotonic()


class ClockedRobot(Robot):
    """A robot that notes when each prompt came, when it sent each answer and when a hand
    ended, and tells the harness (``moment``) so a kill can follow such a moment."""

    def __init__(self, *args: Any, moment: Any, **kwargs: Any) -> None:
        super().__init__(*args, backoff=Backoff(), **kwargs)
        self.prompts: list[float] = []
        self.moment = moment

    async def _answer(self, frame: client_pb2.ServerFrame) -> None:
        self.prompts.append(now())
        self.moment("prompt", self)
        await super()._answer(frame)

    @property
    def lobby(self) -> str:
        return self.session.address if self.session is not None else ""


@dataclass
class Kill:
    moment: str
    lobby: str
    at: float
    robots: list[ClockedRobot]
    waits: dict[int, float | None] = field(default_factory=dict)   # user -> seconds


@pytest.fixture
async def stack(tmp_path: Path) -> AsyncIterator[ClusterStack]:
    try:
        db = await create_database()
    except PostgresUnavailable as exc:
        pytest.skip(str(exc))
    s = ClusterStack(tmp_path, db, SPEC)
    # the robots' own log (reconnects, refusals) beside the services' logs
    handler = logging.FileHandler(tmp_path / "robots.log")
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    paiju_log = logging.getLogger("paiju")
    level = paiju_log.level
    paiju_log.addHandler(handler)
    paiju_log.setLevel(logging.INFO)
    try:
        await s.start()
        yield s
    finally:
        await s.stop()
        await drop_database(db)
        paiju_log.removeHandler(handler)
        paiju_log.setLevel(level)
        handler.close()


class Harness:
    def __init__(self, stack: ClusterStack) -> None:
        self.stack = stack
        self.robots: list[ClockedRobot] = []
        self.tasks: list[asyncio.Task[Any]] = []
        self.wanted: str | None = None          # the moment a kill waits for
        self.lobby: str = ""                    # ... on this lobby
        self.hit = asyncio.Event()
        self.stop = asyncio.Event()
        self.failures: list[str] = []

    def moment(self, kind: str, robot: ClockedRobot) -> None:
        if self.wanted == kind and robot.lobby == self.lobby:
            self.hit.set()

    def robot(self, address: list[str], uid: int, game: str, **kw: Any) -> ClockedRobot:
        r = ClockedRobot(address, uid, game, SECRET, moment=self.moment, **kw)

        def sent() -> None:   # the moment after an answer went out (its reply not in yet)
            asyncio.get_running_loop().call_soon(self.moment, "answer", r)
        r.on_send = sent
        r.on_frame = lambda f: self._frame(f, r)   # ... and after a hand ended
        self.robots.append(r)
        return r

    def _frame(self, frame: client_pb2.ServerFrame, robot: ClockedRobot) -> None:
        if frames.hand_over_data(frame) is not None:
            self.moment("hand_over", robot)

    async def lane(self, game: str, lane: int) -> None:
        seats = registry.get(game).seats
        addresses = self.stack.lobby_addresses
        n = 0
        while not self.stop.is_set():
            base = 300_000 + lane * 10_000 + n * 4
            n += 1

            def home(i: int) -> list[str]:
                k = (lane + i) % len(addresses)
                return addresses[k:] + addresses[:k]
            creator = self.robot(home(0), base, game, create=ROOM)
            first = asyncio.create_task(creator.run())
            try:
                room = await room_of(creator, first, 30)
            except RuntimeError as exc:
                self.failures.append(f"{game}: no room: {exc}")
                await asyncio.sleep(1)
                continue
            others = [self.robot(home(i), base + i, game, room_id=room) for i in range(1, seats)]
            tasks = [first, *(asyncio.create_task(r.run()) for r in others)]
            self.tasks.extend(tasks)
            results = await asyncio.gather(*tasks, return_exceptions=True)
            for r in results:
                if isinstance(r, BaseException) and not isinstance(r, asyncio.CancelledError):
                    self.failures.append(f"{game}: robot failed: {r!r}")

    def serving(self, address: str) -> list[ClockedRobot]:
        return [r for r in self.robots if r.lobby == address and r.seated.is_set()
                and r.session is not None and not r.session.closed.is_set()
                and r.stats.closed_reason is None]

    async def kill(self, moment: str) -> Kill:
        labels = {self.stack.procs[x].address: x for x in self.stack.of("lobby")}
        counts = {a: len(self.serving(a)) for a in labels}
        address = max(counts, key=lambda a: counts[a])
        self.wanted, self.lobby = moment, address
        self.hit.clear()
        if moment == "random":
            await asyncio.sleep(random.uniform(0.0, 1.5))
        else:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.hit.wait(), 20)
        self.wanted = None
        proc = self.stack.procs[labels[address]]
        assert proc.proc is not None
        proc.proc.send_signal(signal.SIGKILL)   # at once: the moment is now
        at = now()
        robots = self.serving(address)
        await asyncio.to_thread(proc.proc.wait)
        proc.proc = None
        await asyncio.sleep(0.5)
        await self.stack.restart(labels[address])
        kill = Kill(moment, address, at, robots)
        deadline = at + GIVE_UP
        while now() < deadline:
            for r in robots:
                if r.user_id not in kill.waits or kill.waits[r.user_id] is None:
                    later = [t for t in r.prompts if t > at]
                    ended = r.stats.closed_reason is not None
                    kill.waits[r.user_id] = (later[0] - at) if later else (
                        0.0 if ended else None)
            if all(w is not None for w in kill.waits.values()):
                break
            await asyncio.sleep(0.1)
        return kill


async def test_every_player_of_a_killed_lobby_is_prompted_again_within_the_bound(
        stack: ClusterStack) -> None:
    h = Harness(stack)
    lanes = [asyncio.create_task(h.lane(spec.name, i)) for i, spec in enumerate(registry.all())]
    kills: list[Kill] = []
    try:
        await asyncio.sleep(4.0)   # every room dealt and playing
        for k in range(KILLS):
            kill = await h.kill(MOMENTS[k % len(MOMENTS)])
            kills.append(kill)
            shown = {u: (None if w is None else round(w, 2)) for u, w in kill.waits.items()}
            print(f"kill {k + 1} ({kill.moment}) of {kill.lobby}: {len(kill.robots)} robots, "
                  f"waits {shown}", flush=True)
            await asyncio.sleep(random.uniform(1.0, 2.5))
    finally:
        h.stop.set()
        # cancelled again and again (a cancellation can land in code that swallows it), for
        # at most 10 s: a robot that still runs then is left behind, never waited for
        pending = {t for t in [*h.tasks, *lanes] if not t.done()}
        deadline = now() + 10.0
        while pending and now() < deadline:
            for t in pending:
                t.cancel()
            _, pending = await asyncio.wait(pending, timeout=0.2)
    waits = sorted(w if w is not None else float("inf")
                   for k in kills for w in k.waits.values())
    assert waits, f"no robot was on a killed lobby: {h.failures[:5]}"
    p50 = waits[len(waits) // 2]
    print(f"\n{len(kills)} lobby kills, {len(waits)} players cut off: time to the next prompt "
          f"p50 {p50:.2f} s, max {waits[-1]:.2f} s")
    slow = [(k.moment, u, w) for k in kills for u, w in k.waits.items()
            if w is None or w > BOUND]
    assert not slow, f"players prompted again later than {BOUND:g} s: {slow}"
    assert not h.failures, h.failures

