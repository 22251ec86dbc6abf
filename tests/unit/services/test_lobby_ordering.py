"""The lobby's per-room orderer (services/lobby/ordering.py, docs/ordered-events.md): a
room's messages reach each session in position order, each once, whatever order, delay,
duplication or loss the network adds, with replies at their positions and joins getting
exactly the messages after theirs."""

from __future__ import annotations

import random

import pytest

from services.lobby.ordering import Message, Position, RoomOrderer


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def stream(n: int, rng: random.Random, users: tuple[int, ...] = (1, 2)) -> list[Message]:
    """A table's stream of ``n`` messages: indices 1.., up to three parts each, some with
    a private frame."""
    out: list[Message] = []
    index = 0
    while len(out) < n:
        index += 1
        for part in range(rng.choice((1, 1, 1, 2, 3))):
            private = [(u, f"p{u}@{index}.{part}") for u in users if rng.random() < 0.2]
            out.append(Message((index, part), (f"{index}.{part}",), tuple(private)))
    return out[:n]


def expected(messages: list[Message], user: int, after: Position) -> list[str]:
    return [f for m in messages if m.position > after for f in m.for_user(user)]


class Harness:
    """An orderer, its sessions' outboxes, and a table's ring to refill from."""

    def __init__(self, table: list[Message]) -> None:
        self.clock = Clock()
        self.table = table
        self.got: dict[str, list[str]] = {}
        self.o: RoomOrderer[str] = RoomOrderer(7, self.send, now=self.clock,
                                              buffer_limit=64, ring_size=16)
        self.refills = 0

    def send(self, member: str, frame: str) -> None:
        self.got.setdefault(member, []).append(frame)

    def refill_if_stuck(self, wait: float = 0.3) -> None:
        if self.o.waiting is not None and self.clock.t - self.o.waiting >= wait \
                or self.o.overflowed:
            since = self.o.delivered
            assert since is not None
            self.refills += 1
            self.o.refill([m for m in self.table if m.position > since])


@pytest.mark.parametrize("seed", range(20))
def test_shuffled_late_duplicated_and_lost_messages_come_out_in_order_once(seed: int) -> None:
    rng = random.Random(seed)
    table = stream(300, rng)
    h = Harness(table)
    h.o.join("a", 1, (0, 0), ["joined-a"])
    # the network, per log record (its parts travel together, in order, as NATS keeps one
    # publisher's messages in order): every record once or twice, some never, shuffled
    # within a window, some very late (after a hundred others). A lost *last part* of a
    # record cannot be seen from positions alone (the contract has no part count): see
    # test_a_lost_first_part_is_a_gap for what is seen inside a record.
    records: list[list[Message]] = []
    for m in table:
        if m.position[1] == 0:
            records.append([])
        records[-1].append(m)
    sent: list[list[Message]] = []
    for group in records:
        if rng.random() < 0.05:
            continue                      # lost
        sent.append(group)
        if rng.random() < 0.1:
            sent.append(group)            # duplicated
    for i in range(len(sent) - 1):
        if rng.random() < 0.3:
            j = min(len(sent) - 1, i + rng.randint(1, 5))
            sent[i], sent[j] = sent[j], sent[i]
    late = [g for g in sent if rng.random() < 0.03]
    wire = [m for g in sent if g not in late for m in g]
    late_msgs = [m for g in late for m in g]
    joined_b = False
    for n, m in enumerate(wire):
        h.clock.t += 0.01
        h.o.offer(m)
        h.refill_if_stuck()
        if n == 120:                      # a second session joins mid-stream
            assert h.o.delivered is not None
            at = h.o.delivered
            h.o.join("b", 2, at, ["joined-b"])
            joined_b, b_at = True, at
        if n % 50 == 0:
            for old in late_msgs:
                h.o.offer(old)            # arrives long after its time: dropped
    h.clock.t += 1.0
    h.refill_if_stuck()
    assert h.o.delivered == table[-1].position
    assert h.got["a"] == ["joined-a", *expected(table, 1, (0, 0))]
    assert joined_b
    assert h.got["b"] == ["joined-b", *expected(table, 2, b_at)]
    assert h.o.buffered() == 0 and h.o.held() == 0


def test_a_lost_first_part_is_a_gap() -> None:
    table = [Message((1, 0), ("a",)), Message((1, 1), ("b",)), Message((2, 0), ("c",)),
             Message((2, 1), ("d",)), Message((2, 2), ("e",))]
    h = Harness(table)
    h.o.join("a", 1, (0, 0), [])
    for m in (table[1], table[0], table[3], table[4]):     # (2, 0) lost, (1, 1) early
        h.o.offer(m)
    assert h.got["a"] == ["a", "b"] and h.o.waiting is not None
    h.clock.t = 1.0
    h.refill_if_stuck()
    assert h.got["a"] == ["a", "b", "c", "d", "e"]


def test_a_gap_waits_then_refills_and_the_early_message_follows() -> None:
    table = [Message((i, 0), (f"e{i}",)) for i in range(1, 6)]
    h = Harness(table)
    h.o.join("a", 1, (0, 0), [])
    h.o.offer(table[0])
    h.o.offer(table[2])                   # e2 is late
    assert h.got["a"] == ["e1"] and h.o.waiting == 0.0
    h.clock.t = 0.1
    h.refill_if_stuck()
    assert h.refills == 0                 # still within the wait
    h.o.offer(table[1])                   # the late one comes: delivered at once
    # e3 came early: is there a (2, 1) before it? Only the table can say: after the wait
    assert h.got["a"] == ["e1", "e2"]
    h.clock.t = 0.5
    h.refill_if_stuck()
    assert h.refills == 1 and h.o.waiting is None
    assert h.got["a"] == ["e1", "e2", "e3", "e4", "e5"]     # the table's ring had e4, e5
    h.o.offer(table[3])                   # arriving now: duplicates, dropped
    h.o.offer(Message((6, 0), ("e6",)))   # in order again: at once
    assert h.got["a"] == ["e1", "e2", "e3", "e4", "e5", "e6"] and h.o.dropped == 2   # e3 in the refill, e4 now


def test_a_reply_waits_for_the_stream_and_goes_before_later_messages() -> None:
    table = [Message((i, 0), (f"e{i}",)) for i in range(1, 5)]
    h = Harness(table)
    h.o.join("a", 1, (0, 0), [])
    h.o.begin("a")
    h.o.offer(table[0])
    h.o.reply("a", (2, 0), ["reply@2"])   # ahead of the stream: held
    assert h.got["a"] == ["e1"] and h.o.waiting is not None
    h.o.offer(table[1])
    assert h.got["a"] == ["e1", "e2", "reply@2"] and h.o.waiting is None
    h.o.begin("a")
    h.o.reply("a", (4, 0), ["reply@4"])
    h.o.offer(table[3])                   # e4 before e3: buffered
    h.clock.t = 1.0
    h.refill_if_stuck()
    assert h.got["a"] == ["e1", "e2", "reply@2", "e3", "e4", "reply@4"]


def test_messages_wait_while_the_sessions_command_is_on_its_way() -> None:
    table = [Message((i, 0), (f"e{i}",)) for i in range(1, 5)]
    h = Harness(table)
    h.o.join("a", 1, (0, 0), [])
    h.o.join("b", 2, (0, 0), [])
    h.o.begin("a")
    for m in table[:3]:                   # the events arrive before a's reply at (1, 0)
        h.o.offer(m)
    assert "a" not in h.got and h.got["b"] == ["e1", "e2", "e3"]
    h.o.reply("a", (1, 0), ["reply@1"])
    assert h.got["a"] == ["e1", "reply@1", "e2", "e3"]
    h.o.begin("a")
    h.o.offer(table[3])
    h.o.cancel("a")                       # the command failed: nothing held any more
    assert h.got["a"][-1] == "e4"


def test_a_join_gets_exactly_the_messages_after_its_position() -> None:
    table = [Message((i, 0), (f"e{i}",)) for i in range(1, 8)]
    h = Harness(table)
    h.o.join("a", 1, (0, 0), ["a-in"])
    for m in table[:5]:
        h.o.offer(m)
    h.o.join("late", 2, (2, 0), ["late-in@2"])    # behind the stream: caught up by the ring
    h.o.join("early", 3, (6, 0), ["early-in@6"])  # ahead: held until the stream is there
    assert h.got["late"] == ["late-in@2", "e3", "e4", "e5"]
    assert "early" not in h.got
    h.o.offer(table[5])
    h.o.offer(table[6])
    assert h.got["early"] == ["early-in@6", "e7"]
    assert h.got["a"] == ["a-in", *[f"e{i}" for i in range(1, 8)]]


def test_a_join_behind_the_ring_asks_a_snapshot() -> None:
    table = [Message((i, 0), (f"e{i}",)) for i in range(1, 40)]
    h = Harness(table)
    h.o.join("a", 1, (0, 0), [])
    for m in table:
        h.o.offer(m)
    h.o.join("b", 2, (1, 0), ["old snapshot"])
    assert h.o.want_snapshot == ["b"] and h.got["b"] == ["old snapshot"]
    h.o.offer(Message((40, 0), ("e40",)))
    assert h.got["b"] == ["old snapshot"]         # nothing until the new snapshot
    h.o.join("b", 2, (40, 0), ["snapshot@40"])
    h.o.offer(Message((41, 0), ("e41",)))
    assert h.got["b"] == ["old snapshot", "snapshot@40", "e41"]


def test_private_frames_reach_their_user_only() -> None:
    h = Harness([])
    h.o.join("a", 1, (0, 0), [])
    h.o.join("b", 2, (0, 0), [])
    h.o.offer(Message((1, 0), ("all",), ((2, "for b"),)))
    assert h.got == {"a": ["all"], "b": ["all", "for b"]}


def test_a_refused_session_sees_nothing_and_a_leaver_nothing_after_its_position() -> None:
    h = Harness([])
    h.o.join("a", 1, (0, 0), [])
    h.o.reply("x", (0, 0), ["refused"])           # not a member: its answer only
    h.o.begin("a")
    h.o.reply("a", (2, 0), ["left@2"], leave=True)
    for i in (1, 2, 3):
        h.o.offer(Message((i, 0), (f"e{i}",)))
    assert h.got == {"x": ["refused"], "a": ["e1", "e2", "left@2"]}
    assert h.o.empty


def test_resync_sends_the_held_replies_and_waits_for_snapshots() -> None:
    h = Harness([])
    h.o.join("a", 1, (0, 0), [])
    h.o.begin("a")
    h.o.reply("a", (5, 0), ["reply@5"])
    assert h.o.resync() == ["a"] and h.got["a"] == ["reply@5"]
    h.o.offer(Message((9, 0), ("old owner",)))   # before the anchor: dropped at the snapshot
    h.o.join("a", 1, (10, 0), ["snapshot@10"])
    h.o.offer(Message((11, 0), ("e11",)))
    assert h.got["a"] == ["reply@5", "snapshot@10", "e11"]


def test_memory_stays_bounded_whatever_arrives() -> None:
    h = Harness([])
    h.o.join("a", 1, (0, 0), [])
    for i in range(2, 1000):                      # (1, 0) never comes
        h.o.offer(Message((i, 0), (f"e{i}",)))
    assert h.o.buffered() <= 64 and h.o.overflowed
    h.o.begin("a")
    for i in range(2000):
        h.o.reply("a", (10_000 + i, 0), [i])
    assert h.o.held() <= 1024
    assert len(h.o._ring) <= 16


def test_a_session_gone_before_its_join_came_due_is_forgotten() -> None:
    h = Harness([])
    h.o.join("a", 1, (0, 0), [])
    h.o.join("b", 2, (3, 0), ["b-in"])            # ahead of the stream: waits
    assert h.o.involves("b") and not h.o.member("b")
    h.o.leave("b")                                # its session ended meanwhile
    for i in (1, 2, 3, 4):
        h.o.offer(Message((i, 0), (f"e{i}",)))
    assert "b" not in h.got and not h.o.involves("b") and h.o.held() == 0
    h.o.leave("a")
    assert h.o.empty


def test_an_answer_after_a_join_still_waiting_comes_after_the_join() -> None:
    h = Harness([])
    h.o.join("a", 1, (0, 0), [])
    h.o.join("b", 2, (2, 0), ["b-in@2"])          # ahead of the stream
    h.o.reply("b", (3, 0), ["b-ready@3"])         # a command sent right after the join
    for i in (1, 2, 3):
        h.o.offer(Message((i, 0), (f"e{i}",)))
    assert h.got["b"] == ["b-in@2", "e3", "b-ready@3"]
