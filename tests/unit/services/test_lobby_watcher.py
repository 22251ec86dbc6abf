"""A spectator's membership of a room's stream (services/lobby/watching.py): its user id is -1,
so the orderer gives it public frames only; with a delay of N positions each frame waits until the
stream is N log positions further on, or MAX_HOLD_SECONDS at most."""

from __future__ import annotations

from typing import Any

from services.lobby import watching
from services.lobby.ordering import Message, RoomOrderer


class FakeOutbox:
    closed = False


class FakeSession:
    def __init__(self) -> None:
        self.sent: list[Any] = []
        self.outbox = FakeOutbox()

    def send(self, frame: Any) -> bool:
        self.sent.append(frame)
        return True


def test_a_watcher_gets_public_frames_only() -> None:
    session = FakeSession()
    orderer: RoomOrderer[Any] = RoomOrderer(1, lambda m, f: m.send(f), now=lambda: 0.0)
    watcher = watching.Watcher(session, 1, 0, lambda: orderer.delivered)  # type: ignore[arg-type]
    orderer.join(watcher, watcher.user_id, (1, 0), ["joined"])
    orderer.offer(Message((2, 0), ["public"], [(7, "private to 7"), (0, "never")]))
    assert session.sent == ["joined", "public"]


def test_a_delayed_watcher_gets_each_frame_n_positions_late() -> None:
    session = FakeSession()
    orderer: RoomOrderer[Any] = RoomOrderer(1, lambda m, f: m.send(f), now=lambda: 0.0)
    watcher = watching.Watcher(session, 1, 2, lambda: orderer.delivered)  # type: ignore[arg-type]
    orderer.join(watcher, watcher.user_id, (1, 0), [])
    for index in range(2, 7):
        orderer.offer(Message((index, 0), [f"e{index}"]))
    assert session.sent == ["e2", "e3", "e4"]          # the stream is at 6: up to 4 out
    watcher.release(now=10 ** 9)                       # a quiet room: out after the bound
    assert session.sent == ["e2", "e3", "e4", "e5", "e6"]
    watcher.end()
    assert not watcher.held


def test_a_closed_room_lets_every_held_frame_go() -> None:
    session = FakeSession()
    closed = [False]
    watcher = watching.Watcher(session, 1, 5, lambda: (3, 0),  # type: ignore[arg-type]
                               lambda: closed[0])
    watcher.send("last")
    assert session.sent == []
    closed[0] = True
    watcher.release()
    assert session.sent == ["last"]
