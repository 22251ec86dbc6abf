"""The table's per-room event stream (services/table/stream.py): positions and the ring."""

from __future__ import annotations

import pytest

from paiju import frames
from paiju.v1 import lobby_msgs_pb2 as lm
from services.table.stream import RoomStream


def chat(text: str):  # any frame will do: the stream never reads them
    return frames.server_frame(lm.Chat(content=text))


def positions(msgs) -> list[tuple[int, int]]:
    return [(m.index, m.part) for m in msgs]


def test_records_and_follow_ups_take_increasing_positions() -> None:
    s = RoomStream(7)
    a = s.record(0, [chat("a")], [])
    b = s.follow_up([], [(5, chat("prompt"))])
    c = s.follow_up([], [(6, chat("prompt"))])
    d = s.record(1, [], [])
    assert positions([a, b, c, d]) == [(0, 0), (0, 1), (0, 2), (1, 0)]
    assert s.position == (1, 0)
    assert a.room_id == 7 and [f.chat.content for f in a.frames] == ["a"]
    assert [(p.user_id, p.frame.chat.content) for p in b.private] == [(5, "prompt")]
    assert d.frames == [] and not d.closed   # a record that caused nothing is still sent


def test_a_record_must_come_after_the_last() -> None:
    s = RoomStream(1, index=4)
    with pytest.raises(ValueError):
        s.record(4, [], [])


def test_since_gives_the_messages_after_a_position() -> None:
    s = RoomStream(1)
    for i in range(3):
        s.record(i, [chat(str(i))], [])
        s.follow_up([], [(1, chat("p"))])
    assert positions(s.since(0, 1)) == [(1, 0), (1, 1), (2, 0), (2, 1)]
    assert positions(s.since(1, 0)) == [(1, 1), (2, 0), (2, 1)]
    assert s.since(2, 1) == [] and s.since(9, 0) == []


def test_since_after_a_take_over_reaches_back_to_the_old_owners_last_record() -> None:
    s = RoomStream(1, index=9)       # rebuilt: records 0..9 were another table's
    s.record(10, [], [])             # the new owner's record
    s.follow_up([], [(1, chat("p"))])
    assert positions(s.since(9, 3)) == [(10, 0), (10, 1)]
    assert s.since(8, 0) is None     # record 9's messages were never here: snapshot


def test_since_refuses_what_the_ring_dropped() -> None:
    s = RoomStream(1, ring_size=4)
    for i in range(6):
        s.record(i, [], [])
    assert positions(s.ring) == [(2, 0), (3, 0), (4, 0), (5, 0)]
    assert positions(s.since(2, 0)) == [(3, 0), (4, 0), (5, 0)]
    assert s.since(1, 0) is None
    assert RoomStream(1).since(-1, 0) == []   # nothing sent yet, nothing missed
