"""While the table decides a join, the room's events wait: an event that arrives even during
the subscription itself is held, then delivered if the table seats the user and dropped if
it refuses. (The hub and the table are stand-ins here, so the event can be made to arrive
at exactly the worst moment; tests/service/test_lobby.py has the real-stack case.)"""

from __future__ import annotations

from typing import Any

from paiju.frames import client_frame, server_frame
from paiju.v1 import common_pb2, lobby_msgs_pb2, table_pb2
from services.lobby.commands import _join
from services.lobby.sessions import Session

SECRET = server_frame(lobby_msgs_pb2.Chat(content="secret VIP chat"))


class Hub:
    """Delivers a room event while the session is being subscribed (the worst moment)."""

    async def enter_room(self, session: Session, room_id: int, seat: int) -> None:
        session.room_id = room_id
        session.relay_room_event(SECRET)

    async def leave_room(self, session: Session) -> None:
        session.room_id = 0


class App:
    def __init__(self, code: int) -> None:
        self.hub = Hub()
        self.code = code

    async def forward(self, session: Session, **_: Any) -> table_pb2.TableReply:
        session.relay_room_event(SECRET)  # and another one while the table decides
        return table_pb2.TableReply(code=self.code, room_id=0 if self.code else 7)


async def joined(code: int) -> list[Any]:
    session = Session()
    frame = client_frame(lobby_msgs_pb2.JoinRoom(room_id=7, password="x"), seq=1)
    reply = await _join(App(code), session, frame, 7, "x", 0, "127.0.0.1:1")  # type: ignore[arg-type]
    assert reply.code == code and session.held is None
    return list(session.outbox._items)


async def test_a_refused_join_shows_nothing_of_the_room() -> None:
    assert await joined(common_pb2.ERR_BAD_PASSWORD) == []


async def test_an_accepted_join_gets_every_event_in_order() -> None:
    assert await joined(0) == [SECRET, SECRET]
