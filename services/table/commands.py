"""A room's commands: what a player (or his lobby) asks of the room, checked and turned
into log records through the actor (actor.py). One instance per room, used only from the
room's task."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable

from games import fair
from games.engine import RuleError
from paiju import frames, seated
from paiju.v1 import client_pb2, common_pb2, table_pb2
from paiju.v1 import lobby_msgs_pb2 as lm
from services.common import reserved
from services.common.geo import blur, has_position
from services.table import checks, views
from services.table import logrec as lr
from services.table import metrics as m
from services.table.automation import Automation, Timer
from services.table.codec import FrameError, action_from_frame, rule_error_code
from services.table.guards import PasswordLockout, RateLimit
from services.table.parts import Actor, Reply
from services.table.room import Room, RoomError
from services.table.views import Effects
from services.table.watchers import Watchers

log = logging.getLogger("paiju.table.room")

GEO_QUERY_SECONDS = 2.0     # one distance query per seat this often
ROBOT_COINS = 100_000_000   # a robot never runs out of coins (which would close the room)
ROBOT_NAMES = ("阿福", "小满", "老周", "春妮", "大壮", "阿秀", "小七", "老马", "阿珍", "石头")


def robot_profile(seat: int) -> lr.Profile:
    return lr.Profile(nickname=f"{ROBOT_NAMES[seat % len(ROBOT_NAMES)]} (robot)",
                      coins=ROBOT_COINS)


class Commands:
    def __init__(self, actor: Actor, auto: Automation, *, robots_allowed: bool = False) -> None:
        self.actor = actor
        self.auto = auto
        self.robots_allowed = robots_allowed   # table.robots_allowed
        self.watchers = Watchers()
        self.passwords = PasswordLockout()      # wrong VIP passwords per user
        self.geo: RateLimit[int] = RateLimit(GEO_QUERY_SECONDS, "distances")   # per seat

    @property
    def room(self) -> Room:
        return self.actor.room

    async def handle(self, cmd: table_pb2.TableCommand) -> Reply:
        room = self.room
        try:
            if cmd.kind:
                return await self._lobby_command(cmd)
            frame = cmd.frame
            what = frame.WhichOneof("payload")
            if what == "join_room":
                return await self._join(cmd)
            seat = checks.require_seat(room, cmd.user_id)
            handler = ROOM_HANDLERS.get(what or "")
            if handler is not None:
                return await handler(self, seat, frame)
            return await self._game_action(seat, frame)   # refuses what is no game action
        except RoomError as err:
            return Reply(err.code, str(err))

    async def _lobby_command(self, cmd: table_pb2.TableCommand) -> Reply:
        try:
            kind = seated.lobby_kind(cmd.kind)
        except ValueError as err:
            raise RoomError(common_pb2.ERR_BAD_FRAME, str(err)) from None
        handler = KIND_HANDLERS.get(kind)
        if handler is None:   # a stream kind: the table answers it without the room (core.py)
            raise RoomError(common_pb2.ERR_BAD_FRAME, f"table command kind {kind!r} is not "
                            "answered by the room")
        return await handler(self, cmd)

    async def _k_op_add_robots(self, cmd: table_pb2.TableCommand) -> Reply:
        """An operator (the console) seats robots: no seat, any room."""
        await self._seat_robots(cmd.frame.add_robots.count)
        return Reply()

    async def _k_op_dismiss(self, cmd: table_pb2.TableCommand) -> Reply:
        room = self.room
        if room.closed:
            raise RoomError(common_pb2.ERR_NO_SUCH_ROOM, f"room {room.room_id} is closed")
        doc = "dismissed by an operator" + (f": {cmd.note[:200]}" if cmd.note else "")
        await self.actor.record(lr.Close(lm.NoticeDismiss.OPERATOR, doc))
        return Reply()

    async def _k_online(self, cmd: table_pb2.TableCommand) -> Reply:
        room = self.room
        seat = checks.require_seat(room, cmd.user_id)
        s = room.seats[seat]
        assert s is not None
        session, at = cmd.session_id, cmd.login_at
        # a session named by the lobby is recorded, so a late offline of an older session
        # (another lobby replica still tearing it down) is told apart; an online of an
        # older session than the recorded one changes nothing
        if not room.session_is_current(seat, session, at):
            return Reply()
        if not s.online or (session and s.session != session):
            await self.actor.record(lr.Online(seat, session, at if session else 0.0))
        return Reply()

    async def _k_offline(self, cmd: table_pb2.TableCommand) -> Reply:
        room = self.room
        seat = checks.require_seat(room, cmd.user_id)
        s = room.seats[seat]
        assert s is not None
        if not room.session_is_current(seat, cmd.session_id, cmd.login_at):
            log.info("offline of a replaced session ignored",
                     extra={"room": room.room_id, "seat": seat})
            return Reply()
        if s.online:
            await self.actor.record(lr.Offline(seat))
        return Reply()

    async def _k_snapshot(self, cmd: table_pb2.TableCommand) -> Reply:
        seat = checks.require_seat(self.room, cmd.user_id)
        return Reply(frames_=views.snapshot(self.room, seat, self.auto.seconds_left()))

    async def _k_watch(self, cmd: table_pb2.TableCommand) -> Reply:
        return await self._watch(cmd, watching=True)

    async def _k_unwatch(self, cmd: table_pb2.TableCommand) -> Reply:
        return await self._watch(cmd, watching=False)

    async def _watch(self, cmd: table_pb2.TableCommand, *, watching: bool) -> Reply:
        """A lobby session starts (again: a resync) or stops watching the room. The count
        goes to the room's directory entry (RoomInfo.spectators); the reply to a watch is
        the public snapshot, made at the position the watcher's stream starts after."""
        room = self.room
        if not watching:
            changed = self.watchers.unwatch(cmd.session_id, cmd.user_id)
        else:
            if room.seat_of(cmd.user_id) is not None:
                raise RoomError(common_pb2.ERR_ALREADY_IN_ROOM, "you are seated in this room")
            changed = self.watchers.watch(cmd.session_id, cmd.user_id)
        if changed:
            room.spectators = len(self.watchers)
            await self.actor.publish(Effects(changed=True), self.actor.stream.follow_up((), ()))
        if not watching:
            return Reply()
        return Reply(frames_=views.watch_snapshot(room, self.auto.seconds_left()))

    async def _join(self, cmd: table_pb2.TableCommand) -> Reply:
        room = self.room
        seat = self._check_password(cmd)
        p = cmd.profile
        lat, lng = p.lat, p.lng
        if cmd.user_id in room.positions:   # where he first sat down here, blurred then
            lat, lng = room.positions[cmd.user_id]
        elif has_position(lat, lng):
            lat, lng = blur(lat, lng)   # only the blurred point is ever stored or used
        profile = lr.Profile(p.nickname, p.head_url, p.sex, p.coins, p.ip, lat, lng,
                             p.login_address)
        session = cmd.session_id
        fx = await self.actor.record(lr.Join(seat, cmd.user_id, profile, session,
                                             cmd.login_at if session else 0.0))
        # the joiner's stream starts after the join's position: the alerts his arrival
        # raised (public, in the join's own message) come to him with the reply
        alerts = [f for f in fx.public if f.WhichOneof("payload") == "distance_alert"]
        return Reply(frames_=[*views.snapshot(room, seat, self.auto.seconds_left()), *alerts])

    def _check_password(self, cmd: table_pb2.TableCommand) -> int:
        """``checks.check_join``, with wrong VIP passwords limited per user (brute force)."""
        uid, now = cmd.user_id, time.monotonic()
        self.passwords.check(uid, now)
        try:
            seat = checks.check_join(self.room, uid, cmd.frame.join_room.password)
        except RoomError as err:
            if err.code == common_pb2.ERR_BAD_PASSWORD:
                self.passwords.wrong(uid, now)
            raise
        self.passwords.right(uid)
        return seat

    async def _c_ask_ready(self, seat: int, frame: client_pb2.ClientFrame) -> Reply:
        room = self.room
        if room.in_hand() or room.closed:
            raise RoomError(common_pb2.ERR_HAND_IN_PROGRESS, "ready is only between hands")
        want = frame.ask_ready.is_ready
        s = room.seats[seat]
        assert s is not None
        if s.ready != want:
            await self.actor.record(lr.Ready(seat, want))
        return Reply(frames_=[frames.ok_frame(frame.event_id)])

    async def _c_ask_exit(self, seat: int, frame: client_pb2.ClientFrame) -> Reply:
        room = self.room
        if room.dismiss is not None:  # votes are counted by seat: nobody leaves mid-vote
            raise RoomError(common_pb2.ERR_HAND_IN_PROGRESS, "a dismiss vote is open")
        if room.in_hand():
            s = room.seats[seat]
            assert s is not None
            if not s.entrusted:
                await self.actor.record(lr.Entrust(seat, "exit"))
            raise RoomError(common_pb2.ERR_HAND_IN_PROGRESS,
                            "a hand is in progress: you stay seated and entrust plays for you")
        if room.hand_no and room.hand_no < room.min_hands:
            raise RoomError(common_pb2.ERR_HAND_IN_PROGRESS,
                            f"the room must play {room.min_hands} hands; apply to dismiss instead")
        if room.hand_no:
            await self.actor.record(lr.Close(lm.NoticeDismiss.PLAYER_LEFT,
                                       "a player left after the minimum number of hands"))
        else:
            await self.actor.record(lr.Leave(seat))
            self.geo.forget(seat)
            if not room.players():   # nobody (robots aside) in a room that never started
                await self.actor.record(lr.Close(lm.NoticeDismiss.IDLE_TOO_LONG,
                                           "the last player left before the first hand"))
        return Reply(frames_=[frames.ok_frame(frame.event_id)])

    async def _c_add_robots(self, seat: int, frame: client_pb2.ClientFrame) -> Reply:
        """The room's creator seats robots in free seats (0 = all), between hands."""
        room = self.room
        if not self.robots_allowed:
            raise RoomError(common_pb2.ERR_DISABLED, "robots are not allowed on this server")
        s = room.seats[seat]
        assert s is not None
        if not room.creator_id or s.user_id != room.creator_id:
            raise RoomError(common_pb2.ERR_NOT_ROOM_OWNER,
                            "only the room's creator may add robots")
        await self._seat_robots(frame.add_robots.count)
        return Reply(frames_=[frames.ok_frame(frame.event_id)])

    async def _seat_robots(self, count: int) -> None:
        room = self.room
        if room.in_hand() or room.closed or room.dismiss is not None:
            raise RoomError(common_pb2.ERR_HAND_IN_PROGRESS, "robots are added between hands")
        if count < 0:
            raise RoomError(common_pb2.ERR_BAD_FRAME, "count must be 0 (every free seat) or more")
        free = [i for i, x in enumerate(room.seats) if x is None]
        if not free:
            raise RoomError(common_pb2.ERR_ROOM_FULL, f"room {room.room_id} is full")
        for i in free[:count or len(free)]:
            await self.actor.record(lr.Join(i, reserved.robot_id(room.room_id, i),
                                            robot_profile(i), robot=True))

    async def _c_set_client_seed(self, seat: int, frame: client_pb2.ClientFrame) -> Reply:
        """The seat's entropy for the next hand's deal (docs/fairness.md)."""
        hand_no = checks.next_hand_seedable(self.room)
        try:
            seed = fair.check_client_seed(frame.set_client_seed.client_seed)
        except fair.FairError as err:
            raise RoomError(common_pb2.ERR_TOO_LONG, str(err)) from None
        await self.actor.record(lr.ClientSeed(seat, hand_no, seed.hex()))
        return Reply(frames_=[frames.ok_frame(frame.event_id)])

    async def _c_refresh_room(self, seat: int, frame: client_pb2.ClientFrame) -> Reply:
        return Reply(frames_=views.snapshot(self.room, seat, self.auto.seconds_left()))

    async def _c_ask_geo(self, seat: int, frame: client_pb2.ClientFrame) -> Reply:
        self.geo.take(seat, time.monotonic())
        return Reply(frames_=[frames.server_frame(views.distances(self.room))])

    async def _c_cancel_entrust(self, seat: int, frame: client_pb2.ClientFrame) -> Reply:
        s = self.room.seats[seat]
        assert s is not None
        if not s.entrusted:
            raise RoomError(common_pb2.ERR_NOT_ENTRUSTED, "you are not entrusted")
        if s.cancels_left <= 0:
            raise RoomError(common_pb2.ERR_NO_ENTRUST_CANCELS,
                            "no cancels left: entrust plays until the hand ends")
        await self.actor.record(lr.CancelEntrust(seat))
        return Reply(frames_=[frames.ok_frame(frame.event_id)])

    async def _c_ask_dismiss(self, seat: int, frame: client_pb2.ClientFrame) -> Reply:
        room = self.room
        if room.dismiss is not None:
            raise RoomError(common_pb2.ERR_ALREADY_VOTED, "a dismiss vote is already open")
        await self.actor.record(lr.DismissApply(seat, int(self.auto.dismiss_seconds),
                                          time.time() + self.auto.dismiss_seconds))
        self.auto.deadlines.set(Timer.DISMISS, time.monotonic() + self.auto.dismiss_seconds)
        await self.auto.dismiss_check(timed_out=False)
        return Reply(frames_=[frames.ok_frame(frame.event_id)])

    async def _c_report_dismiss(self, seat: int, frame: client_pb2.ClientFrame) -> Reply:
        room = self.room
        if room.dismiss is None:
            raise RoomError(common_pb2.ERR_NO_DISMISS_VOTE, "no dismiss vote is open")
        if seat in room.dismiss.votes:
            raise RoomError(common_pb2.ERR_ALREADY_VOTED, "you have already voted")
        left = int(self.auto.deadlines.left(Timer.DISMISS, time.monotonic()))
        await self.actor.record(lr.DismissVote(seat, frame.report_dismiss.agree, left))
        await self.auto.dismiss_check(timed_out=False)
        return Reply(frames_=[frames.ok_frame(frame.event_id)])

    def _overtaken(self, seat: int, reason: str) -> bool:
        """A refusal that only says the answer came too late: the window or token it names
        is gone, the hand is over, or the seat's turn was played (timer, entrust) after it
        was prompted for it."""
        if reason in ("stale_ref", "hand_over"):
            return True
        prompted = self.auto.prompted_at.get(seat)
        return (reason == "not_your_turn" and prompted is not None
                and prompted < self.room.decision and seat not in self.room.to_act())

    async def _game_action(self, seat: int, frame: client_pb2.ClientFrame) -> Reply:
        room = self.room
        code_of = rule_error_code
        try:
            action = action_from_frame(room.game, frame)
        except FrameError as exc:
            return Reply(common_pb2.ERR_BAD_FRAME, str(exc))
        if not room.in_hand():
            return Reply(code_of(room.game, "hand_over"), "no hand is being played",
                         overtaken=True)
        if frame.decision and frame.decision != room.timer_key():
            # an answer to a decision that is over: sent again after it counted (a lost
            # reply, a failover), or too late; it never counts for a later decision
            return Reply(code_of(room.game, "stale_ref"),
                         f"decision {frame.decision} is over (now {room.timer_key()})",
                         overtaken=True)
        started = time.perf_counter()
        try:
            await self.auto.act(seat, action, "player")
        except RuleError as err:
            return Reply(code_of(room.game, err.code), str(err),
                         overtaken=self._overtaken(seat, err.code))
        m.ACTION_SECONDS.labels(room.game).observe(time.perf_counter() - started)
        return Reply(frames_=[frames.ok_frame(frame.event_id)])


RoomHandler = Callable[[Commands, int, client_pb2.ClientFrame], Awaitable[Reply]]
# the room commands of paiju.seated, each with its handler: an import error if one lacks it
ROOM_HANDLERS: dict[str, RoomHandler] = seated.room_handlers({
    "ask_ready": Commands._c_ask_ready,
    "ask_exit": Commands._c_ask_exit,
    "add_robots": Commands._c_add_robots,
    "set_client_seed": Commands._c_set_client_seed,
    "refresh_room": Commands._c_refresh_room,
    "ask_geo": Commands._c_ask_geo,
    "cancel_entrust": Commands._c_cancel_entrust,
    "ask_dismiss": Commands._c_ask_dismiss,
    "report_dismiss": Commands._c_report_dismiss,
})
KindHandler = Callable[[Commands, table_pb2.TableCommand], Awaitable[Reply]]
# the lobby's command kinds the room answers (paiju.seated.ROOM_KINDS), each with its
# handler: an import error if one lacks it
KIND_HANDLERS: dict[seated.LobbyKind, KindHandler] = seated.kind_handlers({
    seated.LobbyKind.WATCH: Commands._k_watch,
    seated.LobbyKind.UNWATCH: Commands._k_unwatch,
    seated.LobbyKind.SNAPSHOT: Commands._k_snapshot,
    seated.LobbyKind.ONLINE: Commands._k_online,
    seated.LobbyKind.OFFLINE: Commands._k_offline,
    seated.LobbyKind.OP_ADD_ROBOTS: Commands._k_op_add_robots,
    seated.LobbyKind.OP_DISMISS: Commands._k_op_dismiss,
})
