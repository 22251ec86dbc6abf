"""Drive a table over its real NATS command subject, as a lobby does, with players that
answer their private Prompts through NATS. Used by the table's service tests."""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass, field
from typing import Any

import nats

from clients.robot.robot import action_frame
from clients.robot.view import choose
from paiju import frames
from paiju.v1 import client_pb2, common_pb2, table_pb2
from paiju.v1 import game_msgs_pb2 as g
from paiju.v1 import lobby_msgs_pb2 as lm
from services.common import bus
from tests.support.waiting import eventually


class LobbyLink:
    """A lobby's link to a table: each command a core NATS request on the table's command
    subject (``table.<address>.commands``), as services/lobby/table_link.py sends it."""

    def __init__(self, address: str, nats_url: str) -> None:
        self.subject = bus.table_commands(address)
        self.nats_url = nats_url
        self._nc: Any = None
        self._ids = itertools.count(1)

    async def send(self, room_id: int, user_id: int, frame: client_pb2.ClientFrame | None = None,
                   kind: str = "", profile: table_pb2.PlayerProfile | None = None,
                   timeout: float = 10) -> table_pb2.TableReply:
        if self._nc is None:
            self._nc = await nats.connect(self.nats_url)
        cmd = table_pb2.TableCommand(request_id=next(self._ids), room_id=room_id,
                                     user_id=user_id, kind=kind, profile=profile, frame=frame)
        msg = await self._nc.request(self.subject, cmd.SerializeToString(), timeout=timeout)
        return table_pb2.TableReply.FromString(msg.data)

    async def close(self) -> None:
        if self._nc is not None:
            await self._nc.close()


def room_frames(data: bytes) -> list[client_pb2.ServerFrame]:
    """Every frame of one ``room.<id>.events`` message (table_pb2.RoomEvents), public
    first, then the private ones (docs/ordered-events.md)."""
    events = table_pb2.RoomEvents.FromString(data)
    return [*events.frames, *(p.frame for p in events.private)]


@dataclass
class Player:
    """A seated user: collects every frame it receives (inbox + room events)."""

    user_id: int
    game: str
    received: list[client_pb2.ServerFrame] = field(default_factory=list)
    prompts: asyncio.Queue[g.Prompt] = field(default_factory=asyncio.Queue)
    auto: bool = True
    errors: list[table_pb2.TableReply] = field(default_factory=list)
    answering: bool = False     # an answer of the play loop is on its way to the table

    def on_frame(self, frame: client_pb2.ServerFrame) -> None:
        self.received.append(frame)
        if frame.WhichOneof("payload") == "prompt":
            self.prompts.put_nowait(frame.prompt)

    def of_kind(self, kind: str) -> list[Any]:
        return [getattr(f, kind) for f in self.received if f.WhichOneof("payload") == kind]


class Table:
    """A room on a table with four players, their NATS subscriptions and a play loop."""

    def __init__(self, nats_url: str, link: LobbyLink, room_id: int, game: str) -> None:
        self.nats_url = nats_url
        self.link = link
        self.room_id = room_id
        self.game = game
        self.players: list[Player] = []
        self.nc: Any = None
        self._tasks: list[asyncio.Task[None]] = []

    async def connect(self) -> None:
        self.nc = await nats.connect(self.nats_url)

    async def seat(self, user_id: int, **profile: Any) -> tuple[Player, table_pb2.TableReply]:
        player = Player(user_id, self.game)
        await self.nc.subscribe(bus.room_events(self.room_id), cb=self._deliver(player))
        await bus.sync(self.nc)  # the subscriptions are live before the join
        reply = await self.link.send(
            self.room_id, user_id, frames.client_frame(lm.JoinRoom(room_id=self.room_id,
                                                                   password=profile.pop("password", ""))),
            profile=table_pb2.PlayerProfile(user_id=user_id, nickname=f"u{user_id}",
                                            coins=profile.pop("coins", 1000), **profile))
        self.players.append(player)
        return player, reply

    @staticmethod
    def _deliver(player: Player) -> Any:
        """What a lobby gives this player of each room message (table_pb2.RoomEvents): the
        public frames and the private ones addressed to him, in arrival order."""
        async def cb(msg: Any) -> None:
            events = table_pb2.RoomEvents.FromString(msg.data)
            for frame in events.frames:
                player.on_frame(frame)
            for private in events.private:
                if private.user_id == player.user_id:
                    player.on_frame(private.frame)
        return cb

    async def ready_all(self) -> None:
        for p in self.players:
            reply = await self.link.send(self.room_id, p.user_id,
                                         frames.client_frame(lm.AskReady(is_ready=True)))
            assert reply.code == 0, reply.message

    def play(self, players: list[Player] | None = None) -> None:
        """Answer the prompts of ``players`` (default: every seat) with the robot's choice."""
        for p in self.players if players is None else players:
            self._tasks.append(asyncio.create_task(self._play_loop(p)))

    async def _play_loop(self, p: Player) -> None:
        while True:
            prompt = await p.prompts.get()
            if not p.auto:
                continue
            p.answering = True
            try:
                action = choose(self.game, prompt)
                reply = await self.link.send(self.room_id, p.user_id, action_frame(
                    self.game, action.to_dict(), prompt.decision))
            finally:
                p.answering = False
            if reply.code:
                p.errors.append(reply)

    async def pause(self, timeout: float = 10.0) -> None:
        """Stop answering prompts and wait until the table has replied to every answer
        already sent: from then on only the table's timers can move the room on."""
        for p in self.players:
            p.auto = False
        await eventually(lambda: not any(p.answering for p in self.players),
                         "answers in flight were never replied to", timeout)

    async def close(self) -> None:
        for t in self._tasks:
            t.cancel()
        if self.nc is not None:
            await self.nc.close()


def hand_overs(player: Player) -> list[Any]:
    """Hands finished, as seen by a player (mahjong and Dadun)."""
    return [f for f in player.received if frames.hand_over_data(f) is not None]


def notice(player: Player) -> list[lm.NoticeDismiss]:
    return player.of_kind("notice_dismiss")


OK = common_pb2.OK


async def log_count(js: Any, room_id: int) -> int:
    """The records in the room's log."""
    subject = bus.room_log(room_id)
    info = await js.stream_info(bus.room_log_stream(room_id), subjects_filter=subject)
    return int((info.state.subjects or {}).get(subject, 0))
