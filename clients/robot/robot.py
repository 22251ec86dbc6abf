"""One robot player: logs in, joins or creates a room, readies, and answers every Prompt
with a bot policy, hand after hand, until its room closes or it has played enough."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from clients.robot.view import choose
from clients.session import (
    Backoff,
    LobbySession,
    SessionClosed,
    lobby_addresses,
    mint_token,
    rotated,
)
from games import fair, registry
from games.rng import Stream
from paiju import frames
from paiju.v1 import client_pb2, common_pb2
from paiju.v1 import lobby_msgs_pb2 as lm

log = logging.getLogger("paiju.robot")

ROOM_WAIT_SECONDS = 30.0   # how long run_tables waits for a creator's room before giving up
# longer than the lobby's bound on following a room between tables (services/lobby/app.py)
REQUEST_TIMEOUT = 30.0
READY_TRIES = 40           # a ready refused as "a moment" is asked again (about a minute)
# "a moment": the room is moving between tables, or a backend did not answer
TRANSIENT = frozenset({common_pb2.ERR_ROOM_MOVING, common_pb2.ERR_UNAVAILABLE})
# room statuses between two hands (the next one waits for every seat's ready)
BETWEEN_HANDS = frozenset({common_pb2.ROOM_WAITING, common_pb2.ROOM_HAND_OVER})

# game name -> paiju.v1.Game, from the one registry of games (which holds the enum numbers
# as plain ints: games/ never imports protobuf)
GAMES = {spec.name: cast(common_pb2.Game, spec.game_type) for spec in registry.all()}


@dataclass
class RobotStats:
    user_id: int = 0
    hands: int = 0
    errors: list[str] = field(default_factory=list)
    frames: int = 0
    rooms: list[int] = field(default_factory=list)
    closed_reason: int | None = None
    # the room ended while the robot was away (its stream ended, and the login that took the
    # session back had no seat to resume): it never saw the room's last frames
    ended_away: bool = False
    received: list[client_pb2.ServerFrame] = field(default_factory=list, repr=False)
    reconnects: int = 0     # times the robot logged in again after its stream ended
    fair_checked: int = 0   # hands whose revealed seeds matched the commitment we saw
    fair_failed: list[str] = field(default_factory=list)
    overtaken: int = 0      # answers refused only for coming too late (Return.overtaken)
    retried: int = 0        # answers sent again after "a moment" (ERR_ROOM_MOVING, ERR_UNAVAILABLE)


class Unanswered(SessionClosed):
    """A request the stream did not answer in REQUEST_TIMEOUT: the stream is given up."""


def action_frame(game: str, action: dict[str, Any], decision: int = 0) -> client_pb2.ClientFrame:
    """The wire frame of an engine action (canonical names, docs in the protos), answering
    the prompt whose ``decision`` it names (Prompt.decision: a resent answer never counts
    twice)."""
    frame = _action_payload(game, action)
    frame.decision = decision
    return frame


def _action_payload(game: str, action: dict[str, Any]) -> client_pb2.ClientFrame:
    from paiju.v1 import game_msgs_pb2 as g

    kind, tiles = action["kind"], list(action.get("tiles", ()))
    ref, choice = action.get("ref", ""), action.get("choice", "")
    family = registry.get(game).family
    if family not in ("mahjong", "dadun"):   # a game without typed actions of its own
        return frames.client_frame(g.GameAction(kind=kind, cards=tiles, ref=ref, choice=choice))
    if family == "mahjong":
        return frames.client_frame(g.MahjongAction(kind=kind, tiles=tiles, choice=choice,
                                                   window_id=int(ref) if ref else 0))
    if kind == "choose_alone":
        return frames.client_frame(g.DdAskAlone(is_alone=choice == "yes"))
    if kind == "choose_friend_card":
        return frames.client_frame(g.DdChooseFriend(card=tiles[0] if tiles else ""))
    return frames.client_frame(g.DdAskOut(token=ref, cards=tiles, is_skip=kind == "pass"))


class Robot:
    """``address``: one lobby address, several comma-separated, or a list; when the stream
    ends without a KickOut (a lobby killed, or draining) the robot logs in again on the next
    one (clients/session.py), resumes its seat from the snapshot and plays on."""

    def __init__(self, address: str | Sequence[str], user_id: int, game: str, secret: str, *,
                 policy: str = "greedy", room_id: int = 0, create: dict[str, Any] | None = None,
                 match: dict[str, Any] | None = None,
                 seed: int = 0, lat: float = 0.0, lng: float = 0.0,
                 backoff: Backoff | None = None, ca_file: str | None = None,
                 tls: bool = False, think: float = 0.0, keep_frames: bool = True,
                 on_frame: Callable[[client_pb2.ServerFrame], None] | None = None,
                 on_send: Callable[[], None] | None = None,
                 on_action: Callable[[float], None] | None = None) -> None:
        self.addresses = lobby_addresses(address)
        self.ca_file, self.tls = ca_file, tls     # a TLS lobby (clients/session.py)
        self.address = self.addresses[0]
        self.user_id, self.game = user_id, game
        self.secret, self.policy = secret, policy
        self.room_id, self.create = room_id, create
        self.match = match      # AskMatch fields: seated by matchmaking (docs/protocol.md)
        self.stream = Stream(seed or user_id)
        self.lat, self.lng = lat, lng
        self.backoff = backoff
        self.stats = RobotStats(user_id=user_id)
        # load tests (bench/bench_capacity.py): a person's think time before each answer
        # (uniform in [0.5, 1.5] x ``think``), frames not kept, arrivals and each action's
        # round trip (send to answer) reported
        self.think = think
        self.keep_frames, self.on_frame = keep_frames, on_frame
        self.on_send, self.on_action = on_send, on_action
        self.session: LobbySession | None = None
        self.seated = asyncio.Event()   # set once ``room_id`` is the room this robot sits in
        self.hands_over: set[int] = set()   # hand numbers seen over (counted once each)
        self._readying: asyncio.Task[None] | None = None
        self._cancelling: asyncio.Task[None] | None = None
        self.seat = -1          # this robot's seat in its room (RoomJoined.seat)
        self._max_hands = 0
        self.commitments: dict[int, str] = {}   # hand -> the commitment published for it
        self.my_seeds: dict[int, bytes] = {}    # hand -> the client seed this robot sent

    def _login_fields(self) -> dict[str, Any]:
        return {"nickname": f"robot{self.user_id}", "lat": self.lat, "lng": self.lng}

    def _token(self) -> str:
        return mint_token(self.user_id, self.secret)

    async def run(self, max_hands: int = 0) -> RobotStats:
        """Play until the room closes (or ``max_hands`` hands); returns what happened."""
        self._max_hands = max_hands
        self.session = s = LobbySession(self.addresses, backoff=self.backoff,
                                        ca_file=self.ca_file, tls=self.tls,
                                        keep_frames=self.keep_frames, on_frame=self.on_frame)
        await s.open()
        try:
            try:
                reply = await s.login(self._token(), **self._login_fields())
            except SessionClosed:   # the lobby went away before it answered the login
                reply = await self._reconnect()
            if reply.WhichOneof("payload") == "ret" and reply.ret.code in TRANSIENT:
                reply = await self._reconnect()   # "a moment": log in again, as after a drop
            if reply.WhichOneof("payload") != "login_ok":
                raise RuntimeError(f"login refused: {reply.ret.code} {reply.ret.message}")
            while True:
                try:
                    await self._take_seat(reply)
                    break
                except SessionClosed:   # the lobby went away before the robot sat down
                    if s.kicked:
                        raise
                    reply = await self._reconnect()
            await self._play(max_hands)
        finally:
            for task in (self._readying, self._cancelling):
                if task is not None:
                    task.cancel()
            self.stats.reconnects = s.reconnects
            await s.close()
            self.stats.received = s.received
        return self.stats

    async def _take_seat(self, reply: client_pb2.ServerFrame) -> None:
        """Resume the seat LoginOk names, else create or join the room; then ready."""
        s = self.session
        assert s is not None
        if reply.login_ok.room.room_id:  # still seated from before: resume that room
            self.room_id = reply.login_ok.room.room_id
            self.seat = reply.login_ok.player.seat
        elif self.match is not None and not self.seated.is_set():
            self.room_id = await self._matched()
        elif self.create is not None and not self.seated.is_set():
            # a room made by a try whose answer was lost has no player and closes when idle
            created = await self._settled(lm.CreateRoom(game=GAMES[self.game], **self.create))
            self._resume_if_seated(created)
            self._check(created, "create room")
            self.room_id = created.room_joined.room.room_id
            self.seat = created.room_joined.seat
        else:
            joined = await self._settled(lm.JoinRoom(room_id=self.room_id,
                                                     game=GAMES[self.game]))
            self._resume_if_seated(joined)
            self._check(joined, "join room")
            self.room_id = joined.room_joined.room.room_id
            self.seat = joined.room_joined.seat
        if not self.stats.rooms or self.stats.rooms[-1] != self.room_id:
            self.stats.rooms.append(self.room_id)
        self.seated.set()
        self._start_ready()

    def _resume_if_seated(self, reply: client_pb2.ServerFrame) -> None:
        """A create or join refused because the user already sits in a room (a try whose
        answer was lost seated him): log in again, as the refusal says, and play that seat
        (LoginOk names its room); SessionClosed after giving the stream up."""
        if reply.WhichOneof("payload") == "ret" and \
                reply.ret.code == common_pb2.ERR_ALREADY_IN_ROOM:
            assert self.session is not None
            self.session.drop()
            raise SessionClosed(f"already seated: {reply.ret.message}")

    async def _matched(self) -> int:
        """Ask for a match (a request still waiting after a reconnect is kept) and wait for
        the room it seats this robot in; RuntimeError if it is cancelled or refused."""
        s = self.session
        assert s is not None and self.match is not None
        asked = await s.request(lm.AskMatch(game=self.game, **self.match))
        if asked.WhichOneof("payload") == "ret" and asked.ret.code != common_pb2.ERR_ALREADY_QUEUED:
            self._check(asked, "ask for a match")
        while True:
            frame = await s.pushes.get()
            if frame is None:
                raise SessionClosed("the stream ended while waiting for a match")
            kind = frame.WhichOneof("payload")
            if kind == "match_found":
                self.seat = frame.match_found.seat
                return frame.match_found.room_id
            if kind == "match_cancelled":
                c = frame.match_cancelled
                raise RuntimeError(f"match request ended: {c.reason} {c.message}")

    async def _reconnect(self) -> client_pb2.ServerFrame:
        s = self.session
        assert s is not None
        log.info("robot %d: stream ended, reconnecting", self.user_id)
        return await s.reconnect(self._token, **self._login_fields())

    def _check(self, frame: client_pb2.ServerFrame, what: str) -> None:
        if frame.WhichOneof("payload") == "ret" and frame.ret.code:
            raise RuntimeError(f"{what}: {frame.ret.code} {frame.ret.message}")

    async def _play(self, max_hands: int) -> bool:
        """Answer prompts and ready after each hand until the room closes, a kick, or
        ``max_hands``; a stream that ends otherwise is taken back (reconnect and resume).
        True when it stopped at ``max_hands``."""
        s = self.session
        assert s is not None
        while True:
            frame = await s.pushes.get()
            if frame is None:
                if s.kicked:
                    return False
                reply = await self._reconnect()
                if not reply.login_ok.room.room_id:   # the room ended while we were away
                    log.info("robot %d: room %d ended while away", self.user_id, self.room_id)
                    self.stats.ended_away = True
                    return False
                self.room_id = reply.login_ok.room.room_id
                continue
            self.stats.frames += 1
            kind = frame.WhichOneof("payload")
            if kind == "prompt":
                await self._answer(frame)
            elif kind == "notice_dismiss" and frame.notice_dismiss.dismissed:
                self.stats.closed_reason = frame.notice_dismiss.reason
                return False
            elif kind == "kick_out":
                return False
            elif kind == "room_joined":
                self._resumed(frame.room_joined)
            elif kind == "in_entrust":
                if frame.in_entrust.seat == self.seat and frame.in_entrust.count > 0:
                    self._start_cancel_entrust()
            elif kind == "hand_commitment":
                self.commitments[frame.hand_commitment.hand_no] = frame.hand_commitment.commitment
            elif kind == "fair_reveal":
                self._check_reveal(frame.fair_reveal)
            elif self._hand_over(frame):
                if self._count_hand(frame) and max_hands and self.stats.hands >= max_hands:
                    return True
                self._start_ready()

    @staticmethod
    def _hand_over(frame: client_pb2.ServerFrame) -> bool:
        return frames.hand_over_data(frame) is not None

    def _count_hand(self, frame: client_pb2.ServerFrame) -> bool:
        """Count a hand once, however often its end is seen (a resume may show it again);
        True when it is new."""
        hand = hand_number(frame)
        if hand is None:  # no number to tell it by: count it
            self.stats.hands += 1
            return True
        if hand in self.hands_over:
            return False
        self.hands_over.add(hand)
        self.stats.hands = len(self.hands_over)
        return True

    def _resumed(self, joined: Any) -> None:
        """A snapshot after a reconnect: the hands over meanwhile count, between hands the
        robot readies again (the room waits for every seat's ready), and in a hand a seat
        that entrust took over while the robot was away is taken back (as a player back at
        the table does), so its prompts come again before the hand ends."""
        room = joined.room
        if room.room_id != self.room_id:
            return
        if joined.seat >= 0:
            self.seat = joined.seat
        between = room.status in BETWEEN_HANDS
        for hand in range(1, room.cur_hand + (1 if between else 0)):
            self.hands_over.add(hand)
        if self.hands_over:
            self.stats.hands = len(self.hands_over)
        me = next((p for p in room.players if p.user_id == self.user_id), None)
        more = not self._max_hands or self.stats.hands < self._max_hands
        if between and more and (me is None or not me.ready):
            self._start_ready()
        if not between and me is not None and me.entrusted and not me.robot:
            self._start_cancel_entrust()

    async def _ask(self, payload: Any) -> client_pb2.ServerFrame:
        """The answer to one request; a stream that answers nothing within REQUEST_TIMEOUT
        (a lobby stuck on the room, or cut off from it) is given up (LobbySession.drop):
        Unanswered, and the robot logs in again and resumes its seat from a fresh snapshot,
        which shows what is still to do (the open prompt, a ready)."""
        s = self.session
        assert s is not None
        try:
            return await s.request(payload, timeout=REQUEST_TIMEOUT)
        except TimeoutError:
            s.drop()
            raise Unanswered(f"no answer in {REQUEST_TIMEOUT:g} s") from None

    async def _settled(self, payload: Any) -> client_pb2.ServerFrame:
        """The answer to a request asked again while it is "a moment" (a room moving
        between tables, a table or the directory not answering), for about a minute."""
        for attempt in range(READY_TRIES):
            reply = await self._ask(payload)
            code = reply.ret.code if reply.WhichOneof("payload") == "ret" else 0
            if code not in TRANSIENT:
                break
            await asyncio.sleep(min(2.0, 0.25 * (attempt + 1)))
        return reply

    def _start_cancel_entrust(self) -> None:
        if self._cancelling is None or self._cancelling.done():
            self._cancelling = asyncio.create_task(self._cancel_entrust())

    async def _cancel_entrust(self) -> None:
        """Take the seat back from entrust (CancelEntrust). A refusal (no cancels left, not
        entrusted any more, the hand over) or a lost stream leaves entrust playing: nothing
        to redo."""
        try:
            await self._ask(lm.CancelEntrust())
        except SessionClosed:
            return

    def _start_ready(self) -> None:
        if self._readying is not None and not self._readying.done():
            return
        self._readying = asyncio.create_task(self._ready())

    async def _ready(self) -> None:
        """Ready for the next hand; a room moving between tables (or a table that did not
        answer) is asked again in a moment. A stream that ends meanwhile leaves it to the
        resume after the reconnect."""
        try:
            await self._send_seed()
            # ok; or a hand already running, or the room gone: nothing to redo
            await self._settled(lm.AskReady(is_ready=True))
        except SessionClosed:
            return

    async def _send_seed(self) -> None:
        """Our entropy for the next hand's deal (docs/fairness.md): 32 random bytes. A
        refusal (a hand already running) or a lost stream only means the hand goes on
        without it. SessionClosed when the stream ended (or was given up)."""
        seed = os.urandom(32)
        reply = await self._ask(lm.SetClientSeed(client_seed=seed))
        if self.commitments and (reply.WhichOneof("payload") != "ret" or not reply.ret.code):
            # for the hand of the newest commitment seen (a stale guess only skips a check)
            self.my_seeds[max(self.commitments)] = seed

    def _check_reveal(self, reveal: Any) -> None:
        """A hand is over: its revealed server seed must give the commitment published
        before the deal, and our own client seed must be among those it mixed in."""
        hand = reveal.hand_no
        try:
            made = fair.commitment(self.room_id, hand, bytes.fromhex(reveal.server_seed))
        except (ValueError, fair.FairError) as exc:
            self.stats.fair_failed.append(f"hand {hand}: bad reveal: {exc}")
            return
        seen = self.commitments.get(hand, reveal.commitment)
        mine = self.my_seeds.get(hand)
        if made != seen or made != reveal.commitment:
            self.stats.fair_failed.append(f"hand {hand}: the server seed does not match "
                                          f"the commitment {seen}")
        elif mine is not None and mine.hex() not in reveal.client_seeds:
            self.stats.fair_failed.append(f"hand {hand}: our client seed was not used")
        else:
            self.stats.fair_checked += 1

    async def _answer(self, frame: client_pb2.ServerFrame) -> None:
        s = self.session
        assert s is not None
        action = choose(self.game, frame.prompt, self.policy, self.stream)
        if self.think > 0:
            await asyncio.sleep(self.think * (0.5 + self.stream.below(1001) / 1000))
        sent = time.monotonic()
        if self.on_send is not None:
            self.on_send()
        wire = action_frame(self.game, action.to_dict(), frame.prompt.decision)
        for attempt in range(READY_TRIES):
            try:
                reply = await self._ask(wire)
            except Unanswered:   # resumed, the snapshot carries the prompt if still open
                self.stats.errors.append(f"timeout: no answer to {action.kind}")
                return
            except SessionClosed:
                return   # the stream ended: the reconnect resumes, a new prompt follows
            code = reply.ret.code if reply.WhichOneof("payload") == "ret" else 0
            if code not in TRANSIENT:
                break
            # "a moment": the same answer again (its decision makes a repeat of one that
            # did count overtaken), until a new prompt replaces it
            self.stats.retried += 1
            await asyncio.sleep(min(2.0, 0.25 * (attempt + 1)))
            if any(f is not None and f.WhichOneof("payload") == "prompt"
                   for f in s.pending()):
                return
        if self.on_action is not None:
            self.on_action(time.monotonic() - sent)
        if reply.WhichOneof("payload") == "ret" and reply.ret.code:
            if reply.ret.overtaken:
                # the decision moved on (a timer, entrust, a faster seat): normal, counted
                self.stats.overtaken += 1
                return
            self.stats.errors.append(f"{reply.ret.code} {reply.ret.message}")
            log.info("action refused: %s %s (%s)", reply.ret.code, reply.ret.message,
                     json.dumps(action.to_dict()))


def hand_number(frame: client_pb2.ServerFrame) -> int | None:
    """The hand a hand-over frame ends: from its event_uid ("room:hand:index"), else its
    payload; None when neither says."""
    parts = frame.event_uid.split(":")
    if len(parts) == 3 and parts[1].isascii() and parts[1].isdigit() and int(parts[1]) > 0:
        return int(parts[1])
    kind = frame.WhichOneof("payload")
    if kind == "mj_hand_over" and frame.mj_hand_over.hand_no:
        return frame.mj_hand_over.hand_no
    if kind == "dd_small_settlement" and frame.dd_small_settlement.now:
        return frame.dd_small_settlement.now
    return None


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


async def run_tables(address: str | Sequence[str], game: str, tables: int, secret: str, *,
                     hands: int, first_uid: int = 900000, policy: str = "greedy",
                     room_wait: float = ROOM_WAIT_SECONDS, ca_file: str | None = None,
                     tls: bool = False) -> list[RobotStats]:
    """``tables`` rooms of robots, one per seat of the game (its registry entry): the first
    robot creates, the others join it once it has its room. A creator without a room
    (refused, or none after ``room_wait`` seconds) leaves its table unplayed: a result with
    the error per seat, never robots sent elsewhere.

    ``address`` may name several lobbies (a list, or comma-separated): robot ``i`` (counted
    over all tables) starts on the ``i``-th lobby (modulo their number) and fails over to the
    others in order, so the robots are spread over the lobbies. ``ca_file`` / ``tls``: the
    lobbies serve TLS (clients/session.py)."""
    addresses = lobby_addresses(address)
    results: list[RobotStats] = []
    tasks: list[asyncio.Task[RobotStats]] = []
    failed: list[RobotStats] = []
    joiners = range(1, registry.get(game).seats)
    for t in range(tables):
        base = first_uid + t * 4
        creator = Robot(rotated(addresses, t * 4), base, game, secret, policy=policy,
                        create={"base_score": 1, "total_hands": hands}, ca_file=ca_file, tls=tls)
        session_task = asyncio.create_task(creator.run())
        tasks.append(session_task)
        try:
            room_id = await room_of(creator, session_task, room_wait)
        except RuntimeError as exc:
            log.error("table of robot %d not played: %s", base, exc)
            failed.extend(RobotStats(user_id=base + i, errors=[f"no room to join: {exc}"])
                          for i in joiners)
            continue
        others = [Robot(rotated(addresses, t * 4 + i), base + i, game, secret, policy=policy,
                        room_id=room_id, ca_file=ca_file, tls=tls)
                  for i in joiners]
        tasks.extend(asyncio.create_task(r.run()) for r in others)
    for result in await asyncio.gather(*tasks, return_exceptions=True):
        if isinstance(result, BaseException):
            log.error("robot failed: %r", result)
            results.append(RobotStats(errors=[repr(result)]))
        else:
            results.append(result)
    return results + failed


# a round that played no hand (every table refused: the lobby's limit on rooms created a
# minute, a lobby away) waits before the next: 1 s, doubling up to a minute
ROUND_BACKOFF = Backoff(first=1.0, longest=60.0)


async def play_rounds(play: Callable[[], Awaitable[list[RobotStats]]], rounds: int, game: str,
                      *, backoff: Backoff = ROUND_BACKOFF,
                      sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> int:
    """``play`` a round of ``game`` robots ``rounds`` times (0: for ever), one after another;
    the number of rounds in which a robot saw a hand end. Robots never hammer a lobby that
    refuses them: after a round with no hand the next waits (``backoff``), and a round with
    hands resets the wait."""
    played = idle = n = 0
    while rounds == 0 or n < rounds:
        stats = await play()
        rooms = {room for s in stats for room in s.rooms}
        errors = sum(len(s.errors) for s in stats)
        log.info("%s: %d robots in %d rooms saw %d hand ends (%d errors)", game, len(stats),
                 len(rooms), sum(s.hands for s in stats), errors)
        n += 1
        if any(s.hands for s in stats):
            played, idle = played + 1, 0
        else:
            idle += 1
        if idle and (rounds == 0 or n < rounds):
            pause = backoff.pause(idle)
            log.warning("%s: a round played no hand; the next in %.1f s", game, pause)
            await sleep(pause)
    return played


async def run_matched(address: str | Sequence[str], game: str, players: int, secret: str, *,
                      hands: int = 0, first_uid: int = 900000, policy: str = "greedy",
                      match: dict[str, Any] | None = None, ca_file: str | None = None,
                      tls: bool = False) -> list[RobotStats]:
    """``players`` robots that each ask for a match (``match``: AskMatch fields besides the
    game) and play the room matchmaking seats them in, up to ``hands`` hands (0: the room's
    end); spread over the lobbies as in :func:`run_tables`."""
    addresses = lobby_addresses(address)
    robots = [Robot(rotated(addresses, i), first_uid + i, game, secret, policy=policy,
                    match=dict(match or {}), ca_file=ca_file, tls=tls) for i in range(players)]
    results: list[RobotStats] = []
    for result in await asyncio.gather(*(r.run(max_hands=hands) for r in robots),
                                       return_exceptions=True):
        if isinstance(result, BaseException):
            log.error("robot failed: %r", result)
            results.append(RobotStats(errors=[repr(result)]))
        else:
            results.append(result)
    return results
