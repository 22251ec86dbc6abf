"""The terminal client (clients/cli/app.py) never shows an error for a command answered
"a moment" (ERR_ROOM_MOVING, ERR_UNAVAILABLE: docs/protocol.md §8): it says "a moment" in its
status line, sends the same command again after a short growing pause, and goes on as
usual once it is served; the command counts once.

Real parts: records (SQLite), arbiter, table and lobby in this process on loopback, a real
nats-server, robots as lobby clients. The one fault is in the lobby's link to the table
(services/lobby/table_link.py): for one user's commands of one kind, the first tries are
answered as a table rebuilding a room does (ERR_ROOM_MOVING: the lobby follows the "moving"
room, its bound shortened as in test_lobby_moving.py, then answers ERR_ROOM_MOVING), as a
busy room does (ERR_UNAVAILABLE), or are applied by the table and their reply lost on its
way (the lobby sends the command again itself, forwarding.py: the answer's decision,
Prompt.decision, makes the repeat overtaken, so it counts once).
``Faults`` and ``retry_stack`` are shared with tests/browser/test_web_retry.py."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from clients.cli.app import CliApp, Options
from clients.robot.robot import run_tables
from paiju.v1 import client_pb2, common_pb2, table_pb2
from services.arbiter.server import start as start_arbiter
from services.common.config import load_config
from services.common.natsd import EmbeddedNats
from services.lobby.errors import Unavailable
from services.lobby.server import start as start_lobby
from services.lobby.table_link import TableLink
from services.records.server import start as start_records
from services.table.server import start as start_table
from tests.support.lobbyworld import SECRET

MOVE_SECONDS = 0.3   # the lobby's bound on following a moving room, shortened


def discard(frame: client_pb2.ClientFrame) -> bool:
    """A mahjong turn's discard: the answer only its seat can give, never overtaken."""
    return frame.mahjong_action.kind == "discard"


@dataclass
class Try:
    """One try of a command as the lobby's link saw it: the client's seq, the fault played,
    the client frame without its seq, and the real table's reply codes (none: it never got
    there; several: the lobby sent it again while following the "moving" room)."""
    seq: int
    fault: str
    frame: bytes
    table: list[tuple[int, bool]] = field(default_factory=list)   # (code, overtaken)


class Faults:
    """Faults in the lobby's link to the table for the commands of one user: ``plan[kind]``
    lists, for the next tries (client seqs) of that payload kind, one of "moving" (answered
    ERR_ROOM_MOVING without reaching the table, as a new owner still rebuilding the room),
    "unavailable" (ERR_UNAVAILABLE, as a room whose inbox is full) or "applied" (the table
    gets it and applies it, and its reply is lost: the link raises Unavailable, as after a
    timeout); tries past the plan go through. ``select[kind]``, where set, limits the plan to
    the commands it accepts (the others go through): a turn's discard (打牌), which no other
    seat can overtake while it is tried again, unlike a claim in a response window."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, user_id: int) -> None:
        self.user_id = user_id
        self.plan: dict[str, list[str]] = {}
        self.select: dict[str, Callable[[client_pb2.ClientFrame], bool]] = {}
        self.tries: dict[str, list[Try]] = {}
        real = TableLink.command

        async def command(link: TableLink, cmd: table_pb2.TableCommand,
                          timeout: float | None = None,
                          gone: Any = None) -> table_pb2.TableReply:
            kind = cmd.frame.WhichOneof("payload") if cmd.HasField("frame") else None
            if cmd.user_id != self.user_id or kind is None or kind not in self.plan or (
                    kind in self.select and not self.select[kind](cmd.frame)):
                return await real(link, cmd, timeout, gone)
            tries = self.tries.setdefault(kind, [])
            now = next((t for t in tries if t.seq == cmd.frame.seq), None)
            if now is None:
                plan = self.plan[kind]
                bare = table_pb2.TableCommand()
                bare.CopyFrom(cmd)
                bare.frame.seq = 0
                now = Try(cmd.frame.seq, plan.pop(0) if plan else "ok",
                          bare.frame.SerializeToString())
                tries.append(now)
            if now.fault == "moving":
                return table_pb2.TableReply(request_id=cmd.request_id,
                                            code=common_pb2.ERR_ROOM_MOVING, seat=-1,
                                            message=f"room {cmd.room_id} is being rebuilt")
            if now.fault == "unavailable":
                return table_pb2.TableReply(request_id=cmd.request_id,
                                            code=common_pb2.ERR_UNAVAILABLE, seat=-1,
                                            message="the room is busy, try again")
            reply = await real(link, cmd, timeout, gone)
            now.table.append((reply.code, reply.overtaken))
            if now.fault == "applied":
                # the reply lost on its way: the lobby sends the command again itself
                # (forwarding.py); the answer's decision makes the repeat overtaken
                raise Unavailable(f"table {link.address} did not answer")
            return reply

        monkeypatch.setattr(TableLink, "command", command)

    def logical(self, kind: str) -> list[Try]:
        """The tries of the first command of ``kind``: the same frame sent again."""
        tries = self.tries.get(kind, [])
        return [t for t in tries if tries and t.frame == tries[0].frame]


@dataclass
class Stack:
    address: str      # the lobby's gRPC address
    ws_port: int      # its WebSocket (and web client) port
    lobby: Any        # its LobbyApp


@contextlib.asynccontextmanager
async def retry_stack(nats_url: str, db: Path) -> AsyncIterator[Stack]:
    """Records, arbiter, table and lobby (WebSocket on), all real; long decision timers so
    that a few retries never meet a timeout; the lobby follows a moving room MOVE_SECONDS."""
    env = {"NATS_URL": nats_url, "PAIJU_TABLE__INSTANCE": "table-retry",
           "PAIJU_TABLE__TURN_SECONDS": "60", "PAIJU_TABLE__WINDOW_SECONDS": "30"}
    cfg = load_config("test", environ=env)
    records = await start_records(replace(cfg, records=replace(
        cfg.records, database_url=f"sqlite+aiosqlite:///{db}")), port=0, metrics_port=-1)
    arbiter = await start_arbiter(cfg, port=0, metrics_port=-1)
    cfg = replace(cfg, records=replace(cfg.records, address=f"127.0.0.1:{records.port}"))
    table = await start_table(cfg, port=0, metrics_port=-1)
    lobby = await start_lobby(replace(cfg, lobby=replace(cfg.lobby, token_secret=SECRET,
                                                         ws_port=0)), port=0, metrics_port=-1)
    lobby.app.move_seconds = MOVE_SECONDS
    try:
        yield Stack(f"127.0.0.1:{lobby.port}", lobby.ws_port, lobby.app)  # type: ignore[attr-defined]
    finally:
        await lobby.stop(0.5)
        await table.stop(0)
        await arbiter.stop(0)
        await records.stop(0)


async def test_the_cli_sends_a_command_again_after_a_moment_and_it_counts_once(
        fresh_nats: EmbeddedNats, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    user = 4301
    faults = Faults(monkeypatch, user)
    faults.plan["ask_ready"] = ["moving", "unavailable", "moving"]
    faults.plan["mahjong_action"] = ["moving", "unavailable"]
    faults.select["mahjong_action"] = discard
    async with retry_stack(fresh_nats.url, tmp_path / "records.db") as stack:
        out: list[str] = []
        statuses: list[str] = []
        app = CliApp(Options(lobby=stack.address, user=user, secret=SECRET, auto=True,
                             script=["create changsha 1", "robots", "ready"]),
                     out=out.append, show_prompt=statuses.append)
        app.interactive = True   # the status line is drawn (into ``statuses``)
        assert await asyncio.wait_for(app.run(), 120) == 0
    text = "\n".join(out)
    assert not [line for line in out if line.startswith("error ")], text[-3000:]
    assert "… a moment (reconnecting): 'ready' is sent again" in text
    assert any("reconnecting… a moment" in s for s in statuses)
    assert "=== settlement" in text, text[-3000:]
    assert "closed (解散): all hands played" in text
    # ready: three tries answered "a moment" without reaching the table, the fourth served
    ready = faults.logical("ask_ready")
    assert [t.fault for t in ready] == ["moving", "unavailable", "moving", "ok"]
    assert [t.table for t in ready] == [[], [], [], [(0, False)]]
    # the first discard: two "a moment", then served, once
    act = faults.logical("mahjong_action")
    assert [t.fault for t in act] == ["moving", "unavailable", "ok"], act
    assert [t.table for t in act] == [[], [], [(0, False)]]
    assert not statuses[-1].count("a moment"), "nothing waits at the end"


async def test_a_robot_sends_its_answer_again_after_a_moment_and_it_counts_once(
        fresh_nats: EmbeddedNats, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The robots (clients/robot) too: an answer told "a moment" goes again, no error; one
    whose reply was lost goes again through the lobby and counts once."""
    first_uid = 4400
    faults = Faults(monkeypatch, first_uid)
    faults.plan["mahjong_action"] = ["moving", "unavailable", "ok", "applied"]
    faults.select["mahjong_action"] = discard
    async with retry_stack(fresh_nats.url, tmp_path / "records.db") as stack:
        results = await asyncio.wait_for(run_tables(
            stack.address, "changsha", 1, SECRET, hands=1, first_uid=first_uid), 120)
    assert all(not r.errors for r in results), [r.errors for r in results]
    me = next(r for r in results if r.user_id == first_uid)
    assert me.retried >= 2 and me.hands == 1, me
    tries = faults.tries["mahjong_action"]
    # the first two answers "a moment" without reaching the table, then served once; the
    # answer whose reply was lost is applied once, its repeat by the lobby overtaken
    first = faults.logical("mahjong_action")
    assert [t.fault for t in first] == ["moving", "unavailable", "ok"], first
    assert [t.table for t in first] == [[], [], [(0, False)]]
    lost = next((t for t in tries if t.fault == "applied"), None)
    assert lost is not None, f"the hand ended before the fourth discard: {tries}"
    # a repeat is overtaken, or finds the room closed when the answer was the hand's last
    # (one hand: the room ends with it; the lobby takes that as a late answer, no error)
    closed = [code for code, o in lost.table[1:] if not o]
    assert lost.table[0] == (0, False), lost.table
    assert all(code == common_pb2.ERR_NO_SUCH_ROOM for code in closed), lost.table
    assert not closed or tries[-1] is lost, "a repeat found the room closed before its end"
