"""Player commands over core NATS (services/table/nats_commands.py, services/lobby/table_link.py)
on a real nats-server: the table's subscription answers each command in a task of its own,
the lobby's link sends them as requests (the one path), turns a table nobody answers for into
Unreachable at once, and silence and garbage into Unavailable."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import nats
import pytest
from prometheus_client import REGISTRY

from paiju.v1 import common_pb2, table_pb2
from services.common import bus
from services.common.natsd import EmbeddedNats
from services.lobby import table_link
from services.lobby.errors import Unavailable, Unreachable
from services.lobby.table_link import TableLink
from services.table import nats_commands
from services.table.nats_commands import CommandSubscription
from tests.support.waiting import until

ADDRESS = "127.0.0.1:50999"


class Core:
    """What the subscription needs of a TableCore: a connection, an address, and answers
    (room 2's wait until released; room 8's say the room is moving)."""

    def __init__(self, nc: Any) -> None:
        self.nc = nc
        self.address = ADDRESS
        self.release = asyncio.Event()
        self.seen: list[int] = []

    async def answer(self, cmd: table_pb2.TableCommand,
                     early: Any = None) -> table_pb2.TableReply:
        self.seen.append(cmd.room_id)
        if cmd.room_id == 2:
            await self.release.wait()
        reply = table_pb2.TableReply(request_id=cmd.request_id, room_id=cmd.room_id, seat=1,
                                     message=f"{cmd.kind} for {cmd.user_id}")
        if cmd.room_id == 8:
            reply.code = common_pb2.ERR_ROOM_MOVING
        if early is not None and cmd.room_id == 6:   # sent from the room's task
            await early(reply)
        return reply


class Channel:
    """A gRPC channel for the link's unary calls, never used by commands."""

    def unary_unary(self, *args: Any, **kwargs: Any) -> Any:
        return lambda *a, **kw: None

    async def close(self) -> None:
        pass


@pytest.fixture
async def ncs(nats_server: EmbeddedNats) -> AsyncIterator[tuple[Any, Any]]:
    table = await nats.connect(nats_server.url)
    lobby = await bus.connect(nats_server.url, "lobby-test")   # as the lobby connects
    yield table, lobby
    await table.close()
    await lobby.close()


async def answering(table_nc: Any) -> tuple[Core, CommandSubscription]:
    """A table's command subscription on ``table_nc``, answering with a :class:`Core`."""
    core = Core(table_nc)
    commands = CommandSubscription(core)
    await commands.start()
    await bus.sync(table_nc)
    return core, commands


def sent() -> float:
    return REGISTRY.get_sample_value("paiju_lobby_table_commands_total") or 0.0


async def test_commands_go_over_nats_and_a_slow_room_holds_up_no_other(
        ncs: tuple[Any, Any]) -> None:
    table_nc, lobby_nc = ncs
    core, sub = await answering(table_nc)
    link = TableLink(ADDRESS, 5.0, channel=Channel(), nc=lobby_nc)  # type: ignore[arg-type]
    before = sent()
    slow = asyncio.ensure_future(link.command(table_pb2.TableCommand(room_id=2, kind="ready")))
    await asyncio.sleep(0.05)
    reply = await asyncio.wait_for(
        link.command(table_pb2.TableCommand(room_id=1, user_id=7, kind="game_action")), 5)
    assert (reply.room_id, reply.seat, reply.message) == (1, 1, "game_action for 7")
    assert not slow.done()                       # room 2 still waits; room 1 was answered
    core.release.set()
    assert (await asyncio.wait_for(slow, 5)).room_id == 2
    assert sent() - before == 2
    assert link.idle
    await sub.stop()
    await link.close()


async def test_a_table_nobody_answers_for_is_unreachable_at_once(
        ncs: tuple[Any, Any]) -> None:
    """No responders on the subject (the table died or has not started): the command never
    got there, so the lobby may ask the directory for the room's owner (forwarding.py)."""
    _, lobby_nc = ncs
    link = TableLink(ADDRESS, 5.0, channel=Channel(), nc=lobby_nc)  # type: ignore[arg-type]
    with pytest.raises(Unreachable) as gone:
        await asyncio.wait_for(link.command(table_pb2.TableCommand(room_id=4)), 2)
    assert gone.value.code == common_pb2.ERR_UNAVAILABLE and "nobody" in gone.value.message
    assert link.idle
    await link.close()


async def test_silence_and_garbage_are_unavailable_and_garbage_is_not_answered(
        ncs: tuple[Any, Any]) -> None:
    table_nc, lobby_nc = ncs
    subject = bus.table_commands(ADDRESS)
    link = TableLink(ADDRESS, 5.0, channel=Channel(), nc=lobby_nc)  # type: ignore[arg-type]

    async def garbage(msg: Any) -> None:
        await msg.respond(b"\xff\xff\xff")

    sub = await table_nc.subscribe(subject, cb=garbage)
    await bus.sync(table_nc)
    with pytest.raises(Unavailable) as bad:
        await link.command(table_pb2.TableCommand(room_id=1))
    assert bad.value.code == common_pb2.ERR_UNAVAILABLE and "undecodable" in bad.value.message
    await sub.unsubscribe()

    silent = await table_nc.subscribe(subject)     # takes the requests, never answers
    await bus.sync(table_nc)
    with pytest.raises(Unavailable) as quiet:
        await link.command(table_pb2.TableCommand(room_id=1), timeout=0.3)
    assert "did not answer in 0.3s" in quiet.value.message
    await silent.unsubscribe()

    # the table's side: a payload that is not a TableCommand gets no answer (and no crash)
    core, commands = await answering(table_nc)
    with pytest.raises(nats.errors.TimeoutError):
        await lobby_nc.request(subject, b"\xff\xff\xff", timeout=0.3)
    reply = table_pb2.TableReply.FromString(
        (await lobby_nc.request(subject, table_pb2.TableCommand(room_id=5).SerializeToString(),
                                timeout=5)).data)
    assert reply.room_id == 5 and core.seen == [5]
    # a reply the room's task sent early is not sent again
    replies = await lobby_nc.subscribe("_INBOX.early")
    await bus.sync(lobby_nc)
    await lobby_nc.publish(subject, table_pb2.TableCommand(room_id=6).SerializeToString(),
                           reply="_INBOX.early")
    first = await replies.next_msg(timeout=5)
    assert table_pb2.TableReply.FromString(first.data).room_id == 6
    await bus.sync(table_nc)
    await bus.sync(lobby_nc)
    assert replies.pending_msgs == 0, "the reply went out twice"
    await commands.stop()
    await link.close()


def resent() -> float:
    return REGISTRY.get_sample_value("paiju_lobby_table_commands_resent_total") or 0.0


async def test_a_lost_command_is_sent_again_and_the_first_reply_answers_it(
        ncs: tuple[Any, Any]) -> None:
    """A command lost on its way (a NATS connection moving: its server in lame-duck mode or
    gone) is sent again after RESEND_SECONDS under the same request id, instead of waiting
    out its timeout (60 s here) or the room's turn timer; the reply to the copy answers it."""
    table_nc, lobby_nc = ncs
    copies: Counter[int] = Counter()

    async def lossy(msg: Any) -> None:
        cmd = table_pb2.TableCommand.FromString(msg.data)
        copies[cmd.request_id] += 1
        if copies[cmd.request_id] == 1 and cmd.room_id == 7:
            return    # the first copy never gets there
        await msg.respond(table_pb2.TableReply(
            request_id=cmd.request_id, room_id=cmd.room_id,
            message=f"copy {copies[cmd.request_id]}").SerializeToString())

    sub = await table_nc.subscribe(bus.table_commands(ADDRESS), cb=lossy)
    await bus.sync(table_nc)
    link = TableLink(ADDRESS, 60.0, channel=Channel(), nc=lobby_nc)  # type: ignore[arg-type]
    before = resent()
    reply = await asyncio.wait_for(link.command(table_pb2.TableCommand(room_id=7)), 10)
    assert (reply.room_id, reply.message) == (7, "copy 2")
    assert resent() - before == 1 and list(copies.values()) == [2]
    assert link.idle
    # the copy doubled the link's wait; its answer is no round trip (which copy was it?),
    # the next command's, sent once, is
    assert link.resend_wait == 2 * table_link.RESEND_SECONDS
    await link.command(table_pb2.TableCommand(room_id=8))
    assert link.resend_wait == table_link.RESEND_SECONDS
    await sub.unsubscribe()
    await link.close()


def copies(outcome: str) -> float:
    return REGISTRY.get_sample_value("paiju_table_command_copies_total",
                                     {"outcome": outcome}) or 0.0


async def test_copies_of_a_command_are_answered_once_by_the_first(
        ncs: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """A lobby sends a command again while it has no reply (a lost command or reply, or a
    table busy for more than RESEND_SECONDS). A copy that comes while the first is under way
    is dropped; one that comes after it gets the first's reply bytes again; the core answers
    the command once. After COPY_SECONDS a copy is a new command."""
    table_nc, lobby_nc = ncs
    core, commands = await answering(table_nc)
    subject = bus.table_commands(ADDRESS)
    replies = await lobby_nc.subscribe("_INBOX.copies.*")
    await bus.sync(lobby_nc)
    dropped, again = copies("dropped"), copies("replied_again")
    slow = table_pb2.TableCommand(request_id=1, room_id=2, kind="snapshot").SerializeToString()
    for _ in range(3):   # the first and two copies while room 2 holds the answer
        await lobby_nc.publish(subject, slow, reply="_INBOX.copies.1")
        await bus.sync(lobby_nc)
    await bus.sync(table_nc)
    assert core.seen == [2] and copies("dropped") - dropped == 2
    core.release.set()
    first = await replies.next_msg(timeout=5)
    await lobby_nc.publish(subject, slow, reply="_INBOX.copies.1")   # its reply was lost
    second = await replies.next_msg(timeout=5)
    assert second.data == first.data and core.seen == [2]
    assert copies("replied_again") - again == 1
    await bus.sync(table_nc)
    await bus.sync(lobby_nc)
    assert replies.pending_msgs == 0, "a copy was answered twice"

    # a reply that did nothing and asks to be tried again is not kept: a copy is answered anew
    moving = table_pb2.TableCommand(request_id=3, room_id=8).SerializeToString()
    for _ in range(2):
        await lobby_nc.publish(subject, moving, reply="_INBOX.copies.3")
        assert table_pb2.TableReply.FromString(
            (await replies.next_msg(timeout=5)).data).code == common_pb2.ERR_ROOM_MOVING
    assert core.seen == [2, 8, 8]

    monkeypatch.setattr(nats_commands, "MAX_KEPT_BYTES", len(first.data))   # one reply's room
    other = table_pb2.TableCommand(request_id=2, room_id=5).SerializeToString()
    await lobby_nc.publish(subject, other, reply="_INBOX.copies.2")
    await replies.next_msg(timeout=5)
    await lobby_nc.publish(subject, slow, reply="_INBOX.copies.1")
    await replies.next_msg(timeout=5)
    assert core.seen == [2, 8, 8, 5, 2], "a reply let go for room is answered anew"

    monkeypatch.setattr(nats_commands, "COPY_SECONDS", 0.0)   # kept no longer
    await lobby_nc.publish(subject, slow, reply="_INBOX.copies.1")
    await replies.next_msg(timeout=5)
    assert core.seen == [2, 8, 8, 5, 2, 2], "a copy older than COPY_SECONDS is a new command"
    await commands.stop()


class MovingThenBusy(Core):
    """Room 9's first answer sends ERR_ROOM_MOVING early and ends only when ``finish`` is
    set; its later answers wait for ``release``."""

    def __init__(self, nc: Any) -> None:
        super().__init__(nc)
        self.finish = asyncio.Event()
        self.first_done = False

    async def answer(self, cmd: table_pb2.TableCommand,
                     early: Any = None) -> table_pb2.TableReply:
        self.seen.append(cmd.room_id)
        reply = table_pb2.TableReply(request_id=cmd.request_id, room_id=cmd.room_id)
        if len(self.seen) > 1:
            await self.release.wait()
            return reply
        reply.code = common_pb2.ERR_ROOM_MOVING
        assert early is not None
        await early(reply)
        await self.finish.wait()
        self.first_done = True
        return reply


async def test_an_answer_ending_after_its_again_reply_leaves_the_copy_under_way(
        ncs: tuple[Any, Any]) -> None:
    """An AGAIN reply lets a copy start a second answer while the first is still ending;
    the first's end must not release the second: a third copy is dropped, not answered."""
    table_nc, lobby_nc = ncs
    core = MovingThenBusy(table_nc)
    commands = CommandSubscription(core)
    await commands.start()
    await bus.sync(table_nc)
    subject = bus.table_commands(ADDRESS)
    replies = await lobby_nc.subscribe("_INBOX.again")
    await bus.sync(lobby_nc)
    cmd = table_pb2.TableCommand(request_id=4, room_id=9).SerializeToString()
    await lobby_nc.publish(subject, cmd, reply="_INBOX.again")
    moving = table_pb2.TableReply.FromString((await replies.next_msg(timeout=5)).data)
    assert moving.code == common_pb2.ERR_ROOM_MOVING
    await lobby_nc.publish(subject, cmd, reply="_INBOX.again")    # answered anew
    assert await until(lambda: core.seen == [9, 9])
    core.finish.set()                                             # the first answer ends
    assert await until(lambda: core.first_done)
    dropped = copies("dropped")
    await lobby_nc.publish(subject, cmd, reply="_INBOX.again")    # the second is under way
    await bus.sync(lobby_nc)
    await bus.sync(table_nc)
    assert core.seen == [9, 9] and copies("dropped") - dropped == 1
    core.release.set()
    assert table_pb2.TableReply.FromString(
        (await replies.next_msg(timeout=5)).data).code == common_pb2.OK
    await commands.stop()


async def test_a_table_slower_than_the_resend_answers_each_command_once(
        ncs: tuple[Any, Any]) -> None:
    """A burst (a dead lobby's players all asking for their snapshots) keeps a table busy
    past RESEND_SECONDS: the lobby's copies cost it no second answer."""
    table_nc, lobby_nc = ncs
    core, commands = await answering(table_nc)
    link = TableLink(ADDRESS, 10.0, channel=Channel(), nc=lobby_nc)  # type: ignore[arg-type]
    before = resent()
    answer = asyncio.ensure_future(link.command(table_pb2.TableCommand(room_id=2)))
    assert await until(lambda: resent() - before >= 2)   # sent at 0, 0.5 and 1.5 s
    core.release.set()
    assert (await asyncio.wait_for(answer, 5)).room_id == 2
    assert core.seen == [2]
    await commands.stop()
    await link.close()


async def test_a_slow_table_gets_copies_only_until_the_link_has_learned_its_round_trip(
        ncs: tuple[Any, Any]) -> None:
    """A table answering every command in 0.8 s (a burst) gets a copy of the first one, sent
    after RESEND_SECONDS, which doubles the wait until a command sent once is answered; the
    link then waits longer than the table's round trip before a copy, so the next commands
    go once each. Fast answers bring the wait back to RESEND_SECONDS."""
    table_nc, lobby_nc = ncs
    copies: Counter[int] = Counter()
    delay = 0.8

    async def slow(msg: Any) -> None:
        cmd = table_pb2.TableCommand.FromString(msg.data)
        copies[cmd.request_id] += 1
        if copies[cmd.request_id] == 1:
            await asyncio.sleep(delay)
            await msg.respond(table_pb2.TableReply(request_id=cmd.request_id,
                                                   room_id=cmd.room_id).SerializeToString())

    sub = await table_nc.subscribe(bus.table_commands(ADDRESS), cb=slow)
    await bus.sync(table_nc)
    link = TableLink(ADDRESS, 60.0, channel=Channel(), nc=lobby_nc)  # type: ignore[arg-type]
    assert link.resend_wait == table_link.RESEND_SECONDS
    before = resent()
    first = asyncio.ensure_future(link.command(table_pb2.TableCommand(room_id=0)))
    assert await until(lambda: resent() - before == 1)
    # its copy went before any reply: the commands after it wait twice as long meanwhile
    assert link.resend_wait == 2 * table_link.RESEND_SECONDS
    assert (await first).room_id == 0
    for room in range(1, 5):
        assert (await link.command(table_pb2.TableCommand(room_id=room))).room_id == room
    assert [copies[i] for i in range(1, 6)] == [2, 1, 1, 1, 1]
    assert resent() - before == 1
    assert delay < link.resend_wait <= table_link.MAX_RESEND_SECONDS

    delay = 0.0
    for room in range(30):
        await link.command(table_pb2.TableCommand(room_id=room))
    assert link.resend_wait == table_link.RESEND_SECONDS
    await sub.unsubscribe()
    await link.close()


async def test_a_burst_to_a_slow_table_gets_a_copy_or_two_not_one_per_command(
        ncs: tuple[Any, Any]) -> None:
    """Twenty commands sent at once to a table that answers each after 1.5 s (a restarted
    lobby's players all asking for their snapshots): the first wait to run out doubles the
    link's wait, and the others, sent under the shorter one, wait for the longer one too."""
    table_nc, lobby_nc = ncs
    copies: Counter[int] = Counter()
    answers: set[asyncio.Task[None]] = set()

    async def answer(msg: Any, cmd: table_pb2.TableCommand) -> None:
        await asyncio.sleep(1.5)
        await msg.respond(table_pb2.TableReply(request_id=cmd.request_id,
                                               room_id=cmd.room_id).SerializeToString())

    async def slow(msg: Any) -> None:
        cmd = table_pb2.TableCommand.FromString(msg.data)
        copies[cmd.request_id] += 1
        if copies[cmd.request_id] == 1:
            task = asyncio.ensure_future(answer(msg, cmd))
            answers.add(task)
            task.add_done_callback(answers.discard)

    sub = await table_nc.subscribe(bus.table_commands(ADDRESS), cb=slow)
    await bus.sync(table_nc)
    link = TableLink(ADDRESS, 60.0, channel=Channel(), nc=lobby_nc)  # type: ignore[arg-type]
    before = resent()
    replies = await asyncio.gather(*(link.command(table_pb2.TableCommand(room_id=room))
                                     for room in range(20)))
    assert [r.room_id for r in replies] == list(range(20))
    assert 1 <= resent() - before <= 2, f"{resent() - before:g} copies"
    await sub.unsubscribe()
    await link.close()


def wait_gauge(address: str) -> float | None:
    return REGISTRY.get_sample_value("paiju_lobby_table_resend_wait_seconds",
                                     {"table": address})


async def test_the_resend_wait_follows_the_round_trips_between_its_floor_and_its_cap() -> None:
    """RFC 6298's arithmetic on its own: a table answering in milliseconds keeps the floor,
    round trips of seconds stretch the wait up to MAX_RESEND_SECONDS and no further, and
    prompt answers bring it back to the floor. The link's gauge says the same, and goes
    with the link."""
    address = "10.9.9.9:50052"
    link = TableLink(address, 5.0, channel=Channel(), nc=None)  # type: ignore[arg-type]
    assert wait_gauge(address) == table_link.RESEND_SECONDS
    link._observe(0.01)
    assert link.resend_wait == table_link.RESEND_SECONDS
    link._observe(1.0)
    assert table_link.RESEND_SECONDS < link.resend_wait < table_link.MAX_RESEND_SECONDS
    assert wait_gauge(address) == link.resend_wait
    for _ in range(3):
        link._observe(10.0)
    assert link.resend_wait == wait_gauge(address) == table_link.MAX_RESEND_SECONDS
    for _ in range(60):
        link._observe(0.01)
    assert link.resend_wait == wait_gauge(address) == table_link.RESEND_SECONDS
    await link.close()
    assert wait_gauge(address) is None


def test_the_subject_is_one_token_per_address() -> None:
    """``table.*.commands`` in the NATS permissions must match every address: its dots go."""
    assert bus.table_commands("10.0.0.7:50052") == "table.10_0_0_7:50052.commands"
    assert bus.table_commands("table-0.table.paiju.svc:50052").count(".") == 2
