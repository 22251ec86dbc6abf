"""While the table decides a join, the room talks: a message that arrives even during the
subscription itself, before the answer, reaches the joiner only if the table seats him, and
then only the messages after his join's position, after his answer and in order; a refused
join (a wrong VIP password) sees nothing of the room. (The table and NATS are stand-ins
here, so the messages can be made to arrive at exactly the worst moments;
tests/service/test_lobby.py has the real-stack case.)"""

from __future__ import annotations

import asyncio
from typing import Any

from paiju.frames import client_frame, server_frame
from paiju.v1 import common_pb2, lobby_msgs_pb2, table_pb2
from services.lobby.seating import ask_join, reply_frames, seat
from services.lobby.sessions import Session
from services.lobby.streams import RoomStreams
from tests.support import lobbykit
from tests.support.waiting import until

ROOM = 7


def secret(n: int) -> Any:
    return server_frame(lobby_msgs_pb2.Chat(content=f"secret VIP chat {n}"))


class Nats(lobbykit.Nats):
    """A message arrives during the subscription itself."""

    async def subscribe(self, subject: str, cb: Any) -> Any:
        await super().subscribe(subject, cb)
        if subject.endswith(".events"):
            await publish(self, 1)          # the join's own record, before the answer
        return self


async def publish(nats: Nats, index: int) -> None:
    data = table_pb2.RoomEvents(room_id=ROOM, index=index, frames=[secret(index)])
    await nats.deliver(f"room.{ROOM}.events", data.SerializeToString())


class App:
    def __init__(self, code: int) -> None:
        self.nats = Nats()
        self.streams = RoomStreams(self.nats, self)  # type: ignore[arg-type]
        self.code = code

    async def forward(self, session: Session, **_: Any) -> table_pb2.TableReply:
        await publish(self.nats, 2)   # and another one while the answer is on its way
        return table_pb2.TableReply(code=self.code, room_id=0 if self.code else ROOM, seat=0,
                                    ordered=True, index=1)

    async def events_since(self, room_id: int, since: Any) -> table_pb2.TableReply:
        """Only the table can say that no later part of index 1 came before index 2."""
        assert since == (1, 0)
        return table_pb2.TableReply(ordered=True, index=2, events=[
            table_pb2.RoomEvents(room_id=ROOM, index=2, frames=[secret(2)])])

    async def snapshot(self, session: Session, room_id: int) -> table_pb2.TableReply:
        raise AssertionError("no snapshot expected")


async def joined(code: int) -> list[Any]:
    session = Session(user_id=5)
    app = App(code)
    frame = client_frame(lobby_msgs_pb2.JoinRoom(room_id=ROOM, password="x"), seq=1)
    reply = await ask_join(app, session, frame, ROOM, "x", 0, "127.0.0.1:1")  # type: ignore[arg-type]
    await seat(app, session, ROOM, reply, reply_frames(frame, reply))  # type: ignore[arg-type]
    assert reply.code == code
    assert (ROOM in app.streams.rooms) == (code == 0)   # a refused join leaves no subscription
    if code == 0:   # the early message's wait, then the refill that brings it
        assert await until(lambda: len(session.outbox._items) >= 2)
    # and then the time anything more would take to come (nothing should)
    await asyncio.sleep(app.streams.gap_wait + 0.2)
    out = [getattr(item, "frame", item) for item in session.outbox._items]
    await app.streams.stop()
    return out


async def test_a_refused_join_shows_nothing_of_the_room() -> None:
    got = await joined(common_pb2.ERR_BAD_PASSWORD)
    assert [f.WhichOneof("payload") for f in got] == ["ret"]
    assert got[0].ret.code == common_pb2.ERR_BAD_PASSWORD


async def test_an_accepted_join_gets_its_answer_then_every_later_event_in_order() -> None:
    got = await joined(0)
    assert [f.WhichOneof("payload") for f in got] == ["ret", "chat"]
    assert got[0].ret.code == common_pb2.OK and got[0].reply_to == 1
    assert got[1].chat.content == "secret VIP chat 2"


def test_a_late_answer_keeps_its_overtaken_flag_on_the_way_to_the_client() -> None:
    from paiju import frames as pf
    from paiju.v1 import common_pb2, table_pb2
    from paiju.v1 import game_msgs_pb2 as g
    from services.lobby.seating import reply_frames

    request = pf.client_frame(g.MahjongAction(kind="pass", window_id=3))
    request.seq = 7
    late, wrong = (reply_frames(request, table_pb2.TableReply(
        code=common_pb2.MJ_STALE_WINDOW, message="window 3 is closed", overtaken=flag))[0]
        for flag in (True, False))
    assert late.ret.overtaken and late.reply_to == 7 and late.ret.code == common_pb2.MJ_STALE_WINDOW
    assert not wrong.ret.overtaken
