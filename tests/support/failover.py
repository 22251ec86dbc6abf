"""Failover of tables under a real stack: a table killed (SIGKILL) or frozen (SIGSTOP, then
SIGCONT) while robots play, and what the rooms it owned live through. Used by
tests/system/test_table_frozen_while_playing.py and bench/bench_failover.py.

The stack is tests/system/conftest.py's (one nats-server, records, arbiter, lobby, a table)
plus a second table; an :class:`Observer` timestamps every room's events and every log
append (core NATS subscriptions on ``room.*.events`` and ``room.*.log.*``: the latter sees
refused appends as well as stored ones) with the log's answer to it (stored or refused, read
on the appender's reply subject)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import nats

from clients.robot.robot import Robot, RobotStats, room_of
from paiju.contracts.directory import RoomEntry
from paiju.v1 import records_pb2, records_pb2_grpc, table_pb2
from services.common import bus
from services.common.config import load_config
from tests.support.procs import ServiceProc, make_service
from tests.system.conftest import SECRET, Stack, start_stack, stop_stack

EPSILON = 0.1          # events already in flight when the fault struck (as bench_chaos)
QUIET = 0.25           # a SIGSTOP waits for this long a silence of the table's rooms
RESUME_BOUND = 30.0    # a room with no event this long after the fault counts as stuck
IN_FLIGHT = 1.0        # seconds after SIGCONT within which an append begun before the
                       # stop reaches the log
# what a continued table logs (services/table/lease.py, core.py)
STALLED = "the table did not run for a lease"
DROPPED = "room taken over by another table while this one stalled"
# a room whose check after the stall did not come within a lease (a slow reconnect): it is let
# go as well, and rebuilt only if the directory still names this table
LAPSED = "room held through a stall not confirmed"
# a room the new owner played to its end (and closed) while this table was stopped
CLOSED = "room closed elsewhere while this table stalled"
# an append the table had begun before it was stopped, sent only once it was continued (the
# client's socket write comes a turn of the loop later), and its retry (its try's wait ran
# out during the stop): the log's fence refuses them and the table lets the room go (the
# quotes: the whole message, not DROPPED, which begins alike) ...
FENCED = '"room taken over by another table"'
# ... or, after a stop longer than the append's retry bound (roomlog.APPEND_RETRY_SECONDS),
# no retry: the room lapses, and is rebuilt only if the directory still names this table
UNAVAILABLE = "room log unavailable: the room is rebuilt from its log"


def now() -> float:
    return time.monotonic()


def quantile(values: list[float], q: float) -> float:
    """The ``q`` quantile by the nearest rank (p99 of 20 values is the largest)."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), int(-(-q * len(ordered) // 1))))
    return ordered[rank - 1]


@dataclass
class Trial:
    kind: str                       # "kill" or "stop"
    table: str
    at: float
    rooms: list[int]
    resume: dict[int, float | None] = field(default_factory=dict)
    breaches: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    let_go: int = 0                 # rooms a continued table said it stopped running


Append = tuple[float, str, int, str]   # (when seen, message id, record index, reply subject)


def begun_before_stop(late: list[Append], continued: float,
                      landed: Callable[[str], bool]) -> tuple[list[Append], list[Append]]:
    """A continued table's appends to a room it lost, seen after the new owner's first event,
    split in (excused, breaches). Excused: the first one, if within IN_FLIGHT of SIGCONT,
    with its retries (its message id), when the log stored none of them; taken for an append
    begun before the stop (the watch cannot tell it from one begun just after:
    tests/service/test_table_tenure.py covers that). Anything else is a breach."""
    if not late:
        return [], []
    first = late[0]
    tries = [a for a in late if a[1] == first[1]]
    if first[0] - continued >= IN_FLIGHT or any(landed(a[3]) for a in tries):
        return [], list(late)
    return tries, [a for a in late if a[1] != first[1]]


class Observer:
    """Every room's events and log appends, timestamped here (core NATS subscriptions)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.nc: Any = None
        self.events: dict[int, list[tuple[float, int, int]]] = {}   # room -> (t, index, part)
        # room -> (t, message id, boot, index, reply subject)
        self.appends: dict[int, list[tuple[float, str, str, int, str]]] = {}
        self.answers: dict[str, dict[str, Any]] = {}   # reply subject -> the log's answer
        self.closed: dict[int, float] = {}      # room -> when its last message came

    async def start(self) -> None:
        self.nc = await nats.connect(self.url)
        await self.nc.subscribe("room.*.events", cb=self._on_events)
        await self.nc.subscribe("room.*.log.*", cb=self._on_log)
        # the tables' reply inboxes: the log's answers to their appends
        await self.nc.subscribe(f"{bus.inbox_prefix('table')}.>", cb=self._on_answer)
        await bus.sync(self.nc)

    async def close(self) -> None:
        await self.nc.close()

    async def _on_events(self, msg: Any) -> None:
        ev = table_pb2.RoomEvents.FromString(msg.data)
        self.events.setdefault(int(ev.room_id), []).append((now(), int(ev.index), int(ev.part)))
        if ev.closed:
            self.closed.setdefault(int(ev.room_id), now())

    async def _on_log(self, msg: Any) -> None:
        room = int(msg.subject.split(".")[1])
        # services/table/roomlog.py: "<room>:<index>:<boot>:<digest>"
        msg_id = (msg.headers or {}).get("Nats-Msg-Id", "")
        parts = msg_id.split(":")
        boot = parts[2] if len(parts) == 4 else ""
        index = int(json.loads(msg.data).get("i", -1))
        self.appends.setdefault(room, []).append((now(), msg_id, boot, index, msg.reply or ""))

    async def _on_answer(self, msg: Any) -> None:
        """A reply to a table: kept when it is a JetStream publish's answer."""
        with contextlib.suppress(ValueError):
            answer = json.loads(msg.data)
            if isinstance(answer, dict) and ("seq" in answer or "error" in answer):
                self.answers[msg.subject] = answer

    def landed(self, reply: str) -> bool:
        """The log stored the append (a duplicate of an earlier try is not a new record);
        an append without an answer counts as stored."""
        answer = self.answers.get(reply)
        return answer is None or ("error" not in answer and not answer.get("duplicate"))

    def first_after(self, room: int, t: float) -> tuple[float, int] | None:
        for at, index, _ in self.events.get(room, []):
            if at > t:
                return at, index
        return None

    def last_event(self, room: int) -> float:
        events = self.events.get(room)
        return events[-1][0] if events else 0.0

    def boot_before(self, room: int, t: float) -> str:
        """The boot of the last writer of ``room`` seen before ``t``."""
        boots = [boot for at, _, boot, _, _ in self.appends.get(room, []) if at < t]
        return boots[-1] if boots else ""

    async def owners(self, rooms: list[int]) -> dict[int, str]:
        kv = await self.nc.jetstream().key_value(bus.ROOMS_BUCKET)
        out = {}
        for room in rooms:
            with contextlib.suppress(Exception):
                out[room] = RoomEntry.decode((await kv.get(str(room))).value).owner
        return out


class FailoverBench:
    def __init__(self, tmp: Path, rooms: int, think: float, hands: int) -> None:
        self.tmp = tmp
        self.n_rooms, self.think, self.total_hands = rooms, think, hands
        self.stack: Stack | None = None
        self.tables: dict[str, ServiceProc] = {}
        self.observer: Observer | None = None
        self.robots: list[Robot] = []
        self.tasks: list[asyncio.Task[RobotStats]] = []
        self.room_ids: list[int] = []
        self.lanes: list[asyncio.Task[None]] = []
        self.ttl = float(load_config("test", environ={}).table.lease_ttl_seconds)

    async def start(self) -> None:
        self.stack = stack = await asyncio.to_thread(start_stack, self.tmp)
        env = {k: v for k, v in stack.table.env.items()
               if k.startswith(("PAIJU_RECORDS", "PAIJU_ARB", "PAIJU_LOBBY__TOKEN"))}
        second = make_service("table", stack.nats.url, self.tmp,
                              PAIJU_TABLE__INSTANCE="table-two", **env)
        await asyncio.to_thread(second.start)
        self.tables = {"table-sys": stack.table, "table-two": second}
        self.observer = Observer(stack.nats.url)
        await self.observer.start()

    async def play(self, first_uid: int) -> None:
        """``rooms`` rooms of four robots each, their creators first, one by one (so the
        lobby spreads them over both tables)."""
        assert self.stack is not None
        for t in range(self.n_rooms):
            base = first_uid + t * 4
            creator = Robot(self.stack.lobby_address, base, "xuezhan", SECRET, think=self.think,
                            create={"base_score": 1, "total_hands": self.total_hands})
            task = asyncio.create_task(creator.run())
            room_id = await room_of(creator, task, 30.0)
            others = [Robot(self.stack.lobby_address, base + i, "xuezhan", SECRET,
                            think=self.think, room_id=room_id) for i in (1, 2, 3)]
            self.robots += [creator, *others]
            self.tasks += [task, *(asyncio.create_task(r.run()) for r in others)]
            self.room_ids.append(room_id)

    def play_on(self, first_uid: int) -> None:
        """``rooms`` lanes, each a room after another (a new one as soon as one ends), so
        rooms in play are of every age, as on a real table."""
        self.lanes = [asyncio.create_task(self._lane(first_uid, lane))
                      for lane in range(self.n_rooms)]

    async def _lane(self, first_uid: int, lane: int) -> None:
        assert self.stack is not None
        for n in range(1_000):
            base = first_uid + (n * self.n_rooms + lane) * 4
            creator = Robot(self.stack.lobby_address, base, "xuezhan", SECRET, think=self.think,
                            create={"base_score": 1, "total_hands": self.total_hands})
            task = asyncio.create_task(creator.run())
            self.tasks.append(task)
            try:
                room_id = await room_of(creator, task, 30.0)
            except RuntimeError:
                await asyncio.sleep(1.0)
                continue
            self.room_ids.append(room_id)
            others = [asyncio.create_task(Robot(
                self.stack.lobby_address, base + i, "xuezhan", SECRET, think=self.think,
                room_id=room_id).run()) for i in (1, 2, 3)]
            self.tasks += others
            await asyncio.wait([task, *others])

    def in_play(self, window: float = 3.0) -> list[int]:
        assert self.observer is not None
        t = now()
        return [r for r in self.room_ids if t - self.observer.last_event(r) < window]

    async def victim(self) -> tuple[str, list[int]]:
        """The table owning most rooms in play, and those rooms (waits for rooms in play)."""
        assert self.observer is not None
        for _ in range(100):
            rooms = self.in_play()
            owners = await self.observer.owners(rooms)
            counts = Counter(o for o in owners.values() if o in self.tables)
            if counts:
                table = counts.most_common(1)[0][0]
                return table, [r for r in rooms if owners.get(r) == table]
            await asyncio.sleep(0.2)
        raise RuntimeError("no table owns a room in play")

    async def wait_resumed(self, trial: Trial) -> None:
        assert self.observer is not None
        deadline = trial.at + RESUME_BOUND
        while now() < deadline:
            ended = [r for r in trial.rooms
                     if self.observer.closed.get(r, deadline) <= trial.at + EPSILON]
            for room in ended:   # it had just ended: the fault did not hit it
                trial.rooms.remove(room)
                trial.notes.append(f"room {room} had ended just before")
            for room in trial.rooms:
                if trial.resume.get(room) is None:
                    first = self.observer.first_after(room, trial.at + EPSILON)
                    if first is not None:
                        trial.resume[room] = first[0] - trial.at
            if all(trial.resume.get(r) is not None for r in trial.rooms):
                return
            await asyncio.sleep(0.02)
        for room in trial.rooms:
            trial.resume.setdefault(room, None)

    async def kill(self) -> Trial:
        table, rooms = await self.victim()
        proc = self.tables[table]
        trial = Trial("kill", table, now(), rooms)
        assert proc.proc is not None
        proc.proc.send_signal(signal.SIGKILL)
        await self.wait_resumed(trial)
        await asyncio.to_thread(proc.stop, signal.SIGKILL)   # reaped
        started = now()
        await asyncio.to_thread(proc.start, 60.0, 0)
        trial.notes.append(f"{table} started again in {now() - started:.1f} s")
        return trial

    async def _quiet(self, rooms: list[int], bound: float = 5.0) -> None:
        """Until none of ``rooms`` had an event for QUIET seconds (at most ``bound``)."""
        assert self.observer is not None
        deadline = now() + bound
        while now() < deadline:
            if all(now() - self.observer.last_event(r) >= QUIET for r in rooms):
                return
            await asyncio.sleep(0.01)

    async def freeze(self, seconds: float) -> Trial:
        assert self.observer is not None
        obs = self.observer
        table, rooms = await self.victim()
        proc = self.tables[table]
        assert proc.proc is not None
        pid = proc.proc.pid
        said = proc.log_path.read_text(errors="replace")
        lines = (STALLED, DROPPED, LAPSED, CLOSED, FENCED, UNAVAILABLE)
        before = [said.count(line) for line in lines]
        await self._quiet(rooms)
        trial = Trial("stop", table, now(), rooms)
        os.kill(pid, signal.SIGSTOP)
        try:
            await self.wait_resumed(trial)
            boots = {r: obs.boot_before(r, trial.at) for r in rooms}
            first = {r: obs.first_after(r, trial.at + EPSILON) for r in rooms}
            await asyncio.sleep(max(0.0, trial.at + seconds - now()))
        finally:
            continued = now()
            os.kill(pid, signal.SIGCONT)
        trial.notes.append(f"stopped {continued - trial.at:.1f} s")
        await asyncio.sleep(2 * self.ttl + 1)
        for room in trial.rooms:
            lost_at = first[room]
            if lost_at is None:
                continue
            late = [(at, msg_id, index, reply)
                    for at, msg_id, boot, index, reply in obs.appends.get(room, [])
                    if at > lost_at[0] and boot == boots[room]]
            begun, breaches = begun_before_stop(late, continued, obs.landed)
            trial.notes += [f"room {room}: an append of record {index} begun before the stop "
                            f"reached the log {at - continued:+.2f} s after SIGCONT, not stored "
                            f"(refused or a duplicate)" for at, _, index, _ in begun]
            trial.breaches += [f"room {room}: the continued table appended record {index} "
                               f"{at - continued:+.2f} s after SIGCONT "
                               f"({'stored' if obs.landed(reply) else 'not stored'})"
                               for at, _, index, reply in breaches]
            for at, index, part in obs.events.get(room, []):
                if at > continued and index < lost_at[1]:
                    trial.breaches.append(f"room {room}: a message at ({index}, {part}) "
                                          f"{at - continued:+.2f} s after SIGCONT, before the "
                                          f"new owner's first position {lost_at[1]}")
        said = proc.log_path.read_text(errors="replace")
        stalls, dropped, lapsed, closed, fenced, unavailable = (
            said.count(line) - was for line, was in zip(lines, before, strict=True))
        trial.notes.append(f"{table} said it stalled {stalls} time(s) and dropped {dropped} "
                           f"room(s) taken meanwhile ({lapsed} more let lapse unchecked, "
                           f"{closed} found closed by their new owner, {fenced + unavailable} "
                           f"let go when an append begun before the stop was not stored)")
        trial.let_go = dropped + lapsed + closed + fenced + unavailable
        if proc.proc.poll() is not None:
            trial.breaches.append(f"{table} exited after SIGCONT ({proc.proc.returncode})")
        return trial

    async def finish(self, bound: float) -> list[RobotStats]:
        """The robots' results once their rooms are over (cancelled after ``bound`` s)."""
        done, pending = await asyncio.wait(self.tasks, timeout=bound)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        return [t.result() for t in done if not t.cancelled() and t.exception() is None]

    async def hands(self) -> list[records_pb2.HandRecord]:
        assert self.stack is not None
        async with grpc.aio.insecure_channel(self.stack.records.address) as channel:
            reply = await records_pb2_grpc.RecordsStub(channel).ListHands(
                records_pb2.ListHandsRequest(limit=1000), timeout=5)
        return [h for h in reply.hands if h.room_id in set(self.room_ids)]

    async def stop(self) -> None:
        for lane in self.lanes:
            lane.cancel()
        for task in self.tasks:
            task.cancel()
        if self.tasks:   # a robot may be in a backoff that outlives the cancel: 10 s each
            await asyncio.wait(self.tasks, timeout=10.0)
        if self.observer is not None:
            await self.observer.close()
        for proc in self.tables.values():   # none is left stopped; the second one ends here
            if proc.proc is not None and proc.proc.poll() is None:
                proc.proc.send_signal(signal.SIGCONT)
            if self.stack is None or proc is not self.stack.table:
                await asyncio.to_thread(proc.stop)
        if self.stack is not None:
            await asyncio.to_thread(stop_stack, self.stack)


def doubled(hands: list[records_pb2.HandRecord]) -> list[str]:
    """Hands settled more than once."""
    counts = Counter((h.room_id, h.hand_no) for h in hands if not h.final)
    return [f"room {room} hand {hand} settled {n} times"
            for (room, hand), n in sorted(counts.items()) if n > 1]
