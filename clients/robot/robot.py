"""One robot player: logs in, joins or creates a room, readies, and answers every Prompt
with a bot policy, hand after hand, until its room closes or it has played enough."""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass, field
from typing import Any

from clients.robot.view import choose
from clients.session import LobbySession, mint_token
from games.rng import Stream
from paiju import frames
from paiju.v1 import client_pb2, common_pb2
from paiju.v1 import lobby_msgs_pb2 as lm

log = logging.getLogger("paiju.robot")

ROOM_WAIT_SECONDS = 30.0   # how long run_tables waits for a creator's room before giving up

GAMES = {"xuezhan": common_pb2.XUEZHAN, "changsha": common_pb2.CHANGSHA,
         "dadun": common_pb2.DADUN}


@dataclass
class RobotStats:
    user_id: int = 0
    hands: int = 0
    errors: list[str] = field(default_factory=list)
    frames: int = 0
    rooms: list[int] = field(default_factory=list)
    closed_reason: int | None = None
    received: list[client_pb2.ServerFrame] = field(default_factory=list)


def action_frame(game: str, action: dict[str, Any]) -> client_pb2.ClientFrame:
    """The wire frame of an engine action (canonical names, docs in the protos)."""
    from paiju.v1 import game_msgs_pb2 as g

    kind, tiles = action["kind"], list(action.get("tiles", ()))
    ref, choice = action.get("ref", ""), action.get("choice", "")
    if game != "dadun":
        return frames.client_frame(g.MahjongAction(kind=kind, tiles=tiles, choice=choice,
                                                   window_id=int(ref) if ref else 0))
    if kind == "choose_alone":
        return frames.client_frame(g.DdAskAlone(is_alone=choice == "yes"))
    if kind == "choose_friend_card":
        return frames.client_frame(g.DdChooseFriend(card=tiles[0] if tiles else ""))
    return frames.client_frame(g.DdAskOut(token=ref, cards=tiles, is_skip=kind == "pass"))


class Robot:
    def __init__(self, address: str, user_id: int, game: str, secret: str, *,
                 policy: str = "greedy", room_id: int = 0, create: dict[str, Any] | None = None,
                 seed: int = 0, lat: float = 0.0, lng: float = 0.0) -> None:
        self.address, self.user_id, self.game = address, user_id, game
        self.secret, self.policy = secret, policy
        self.room_id, self.create = room_id, create
        self.stream = Stream(seed or user_id)
        self.lat, self.lng = lat, lng
        self.stats = RobotStats(user_id=user_id)
        self.session: LobbySession | None = None
        self.seated = asyncio.Event()   # set once ``room_id`` is the room this robot sits in

    async def run(self, max_hands: int = 0) -> RobotStats:
        """Play until the room closes (or ``max_hands`` hands); returns what happened."""
        self.session = s = LobbySession(self.address)
        await s.open()
        try:
            reply = await s.login(mint_token(self.user_id, self.secret), nickname=f"robot{self.user_id}",
                                  lat=self.lat, lng=self.lng)
            if reply.WhichOneof("payload") != "login_ok":
                raise RuntimeError(f"login refused: {reply.ret.code} {reply.ret.message}")
            if reply.login_ok.room.room_id:  # still seated from before: resume that room
                self.room_id = reply.login_ok.room.room_id
            elif self.create is not None:
                created = await s.request(lm.CreateRoom(game=GAMES[self.game], **self.create))
                self._check(created, "create room")
                self.room_id = created.room_joined.room.room_id
            else:
                joined = await s.request(lm.JoinRoom(room_id=self.room_id, game=GAMES[self.game]))
                self._check(joined, "join room")
                self.room_id = joined.room_joined.room.room_id
            self.stats.rooms.append(self.room_id)
            self.seated.set()
            await s.request(lm.AskReady(is_ready=True))
            await self._play(max_hands)
        finally:
            await s.close()
            self.stats.received = s.received
        return self.stats

    def _check(self, frame: client_pb2.ServerFrame, what: str) -> None:
        if frame.WhichOneof("payload") == "ret" and frame.ret.code:
            raise RuntimeError(f"{what}: {frame.ret.code} {frame.ret.message}")

    async def _play(self, max_hands: int) -> None:
        s = self.session
        assert s is not None
        while True:
            frame = await s.pushes.get()
            if frame is None:
                return
            self.stats.frames += 1
            kind = frame.WhichOneof("payload")
            if kind == "prompt":
                await self._answer(frame)
            elif kind == "notice_dismiss" and frame.notice_dismiss.dismissed:
                self.stats.closed_reason = frame.notice_dismiss.reason
                return
            elif kind == "kick_out":
                return
            elif self._hand_over(frame):
                self.stats.hands += 1
                if max_hands and self.stats.hands >= max_hands:
                    return
                await s.send(lm.AskReady(is_ready=True))

    @staticmethod
    def _hand_over(frame: client_pb2.ServerFrame) -> bool:
        return frames.hand_over_data(frame) is not None

    async def _answer(self, frame: client_pb2.ServerFrame) -> None:
        s = self.session
        assert s is not None
        action = choose(self.game, frame.prompt, self.policy, self.stream)
        reply = await s.request(action_frame(self.game, action.to_dict()))
        if reply.WhichOneof("payload") == "ret" and reply.ret.code:
            # a stale prompt (the decision moved on) is normal under entrust; record the rest
            self.stats.errors.append(f"{reply.ret.code} {reply.ret.message}")
            log.info("action refused: %s %s (%s)", reply.ret.code, reply.ret.message,
                     json.dumps(action.to_dict()))


async def room_of(creator: Robot, task: asyncio.Task[RobotStats],
                  timeout: float = ROOM_WAIT_SECONDS) -> int:
    """The room ``creator`` (running as ``task``) created or resumed; RuntimeError if it
    ended without one or has none after ``timeout`` seconds (then it is cancelled)."""
    seated = asyncio.ensure_future(creator.seated.wait())
    try:
        await asyncio.wait({seated, task}, timeout=timeout,
                           return_when=asyncio.FIRST_COMPLETED)
    finally:
        seated.cancel()
    if creator.seated.is_set():
        return creator.room_id
    if task.done():
        failure = None if task.cancelled() else task.exception()
        raise RuntimeError(f"robot {creator.user_id} ended without a room: {failure!r}")
    task.cancel()
    raise RuntimeError(f"robot {creator.user_id} had no room after {timeout:g} s")


async def run_tables(address: str, game: str, tables: int, secret: str, *, hands: int,
                     first_uid: int = 900000, policy: str = "greedy",
                     room_wait: float = ROOM_WAIT_SECONDS) -> list[RobotStats]:
    """``tables`` rooms of four robots each: the first robot creates, three join it once it
    has its room. A creator without a room (refused, or none after ``room_wait`` seconds)
    leaves its table unplayed: four results with the error, never robots sent elsewhere."""
    results: list[RobotStats] = []
    tasks: list[asyncio.Task[RobotStats]] = []
    failed: list[RobotStats] = []
    for t in range(tables):
        base = first_uid + t * 4
        creator = Robot(address, base, game, secret, policy=policy,
                        create={"base_score": 1, "total_hands": hands})
        session_task = asyncio.create_task(creator.run())
        tasks.append(session_task)
        try:
            room_id = await room_of(creator, session_task, room_wait)
        except RuntimeError as exc:
            log.error("table of robot %d not played: %s", base, exc)
            failed.extend(RobotStats(user_id=base + i, errors=[f"no room to join: {exc}"])
                          for i in (1, 2, 3))
            continue
        others = [Robot(address, base + i, game, secret, policy=policy, room_id=room_id)
                  for i in (1, 2, 3)]
        tasks.extend(asyncio.create_task(r.run()) for r in others)
    for result in await asyncio.gather(*tasks, return_exceptions=True):
        if isinstance(result, BaseException):
            log.error("robot failed: %r", result)
            results.append(RobotStats(errors=[repr(result)]))
        else:
            results.append(result)
    return results + failed
