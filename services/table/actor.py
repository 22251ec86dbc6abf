"""One asyncio task per room (single writer) with a bounded inbox.

Every accepted command becomes a log record: appended to the room's JetStream log first,
then folded into the :class:`Room`, then its effects are published. Timers (decision
deadlines, entrust moves, the dismiss countdown, idle rooms) post ticks into the same inbox,
so the room never changes from two places at once.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from games.arbitration import Decision, resolve
from games.engine import Action, RuleError
from paiju import frames
from paiju.v1 import client_pb2, common_pb2, table_pb2
from paiju.v1 import lobby_msgs_pb2 as lm
from services.common.geo import blur, has_position
from services.common.tasks import cancel_and_wait
from services.table import checks, views
from services.table import logrec as lr
from services.table import metrics as m
from services.table.codec import FrameError, action_from_frame, rule_error_code
from services.table.room import Room, RoomError
from services.table.stream import Position, RoomStream
from services.table.views import Effects

log = logging.getLogger("paiju.table.room")

Append = Callable[[int, int, dict[str, Any], int], Awaitable[int]]
Publish = Callable[["RoomActor", Effects, table_pb2.RoomEvents], Awaitable[None]]
Arbiter = Callable[[Any, Any], Awaitable[Decision | None]]

INBOX_SIZE = 256
MAX_AUTO_STEPS = 2000
# VIP passwords: a user who guessed wrong this many times in a row waits, twice as long
# each time it happens again (up to the cap); the room forgets the oldest guessers first
PASSWORD_TRIES = 5
PASSWORD_LOCK_SECONDS = 60.0
PASSWORD_LOCK_MAX_SECONDS = 3600.0
PASSWORD_GUESSERS = 1000
GEO_QUERY_SECONDS = 2.0     # one distance query per seat this often


class Reply:
    """What a command answers to its sender."""

    __slots__ = ("code", "message", "frames", "position")

    def __init__(self, code: int = 0, message: str = "ok",
                 frames_: list[client_pb2.ServerFrame] | None = None) -> None:
        self.code, self.message, self.frames = code, message, frames_ or []
        # where the room's stream stood when the reply was made (None: not made by the
        # room, e.g. it had moved away): the lobby delivers it after the messages up to there
        self.position: Position | None = None


class RoomActor:
    def __init__(self, room: Room, *, next_index: int, log_seq: int, append: Append, publish: Publish,
                 arbiter: Arbiter, bots: Callable[[str, Any, int], Action],
                 timers: dict[str, float], dismiss_seconds: float, idle_seconds: float,
                 entrust_delay: float, ready_seconds: float = 0.0) -> None:
        self.room = room
        self.next_index = next_index
        self.log_seq = log_seq          # stream sequence of this room's last log record
        self.stream = RoomStream(room.room_id, next_index - 1)
        self._append = append
        self._publish = publish
        self._arbiter = arbiter
        self._bot = bots
        self.timers = timers
        self.dismiss_seconds = dismiss_seconds
        self.idle_seconds = idle_seconds
        self.entrust_delay = entrust_delay
        self.inbox: asyncio.Queue[tuple[str, Any, asyncio.Future[Reply] | None]] = \
            asyncio.Queue(INBOX_SIZE)
        self.prompted: dict[int, tuple[Any, ...]] = {}
        self.acted: dict[int, int] = {}
        self.deadline: float | None = None
        self.deadline_key = -1          # room.timer_key() the deadline belongs to
        self.entrust_decision = -1      # room.decision the entrust delay was armed for
        self.entrust_due: float | None = None
        self.dismiss_deadline: float | None = None
        self.retry_due: float | None = None
        # between hands, seats still not ready this long after a hand ended are readied (a
        # player who missed the hand's end, say while his lobby or table moved, must not
        # hold the room for ever); 0 = never
        self.ready_seconds = ready_seconds
        self.ready_deadline: float | None = None
        self.idle_seconds = idle_seconds
        self.idle_deadline = time.monotonic() + idle_seconds
        self._wake = asyncio.Event()
        self.paused = False             # handed over (drain): nothing more is applied here
        # user -> (wrong guesses in a row, times locked out, locked until) for VIP passwords
        self.guesses: dict[int, tuple[int, int, float]] = {}
        self.geo_asked: dict[int, float] = {}   # seat -> when it last asked for distances
        self._task: asyncio.Task[None] | None = None
        self._timer: asyncio.Task[None] | None = None

    # ------------------------------------------------------------------ life cycle
    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"room-{self.room.room_id}")
        self._timer = asyncio.create_task(self._timer_loop(), name=f"timer-{self.room.room_id}")

    async def stop(self) -> None:
        for task in (self._timer, self._task):
            if task is not None:
                task.cancel()
        while not self.inbox.empty():  # every command gets exactly one reply
            _, _, fut = self.inbox.get_nowait()
            if fut is not None and not fut.done():
                fut.set_result(self._gone())
        # a cancel lost inside a NATS request would leave the loop reading its inbox forever
        await cancel_and_wait(self._timer, self._task)

    def _gone(self) -> Reply:
        if self.paused:  # handed to another table: the lobby retries there
            return Reply(common_pb2.ERR_ROOM_MOVING,
                         f"room {self.room.room_id} is moving to another table, a moment")
        return Reply(common_pb2.ERR_NO_SUCH_ROOM,
                     f"room {self.room.room_id} is no longer on this table")

    async def pause(self, timeout: float = 5.0) -> bool:
        """Stop applying anything, between two inbox items (a drain hands the room over:
        its log must not grow meanwhile). The timers stop; commands queued behind are
        answered ERR_ROOM_MOVING. False if the item in hand did not finish in ``timeout``."""
        await cancel_and_wait(self._timer)
        fut: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        try:
            await asyncio.wait_for(self.inbox.put(("pause", None, fut)), timeout)
            await asyncio.wait_for(asyncio.shield(fut), timeout)
        except TimeoutError:
            return False
        return True

    async def submit(self, kind: str, payload: Any) -> Reply:
        fut: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        try:
            self.inbox.put_nowait((kind, payload, fut))
        except asyncio.QueueFull:
            return Reply(common_pb2.ERR_UNAVAILABLE, "the room is busy, try again")
        return await fut

    async def _run(self) -> None:
        await self._follow_up()
        while True:
            kind, payload, fut = await self.inbox.get()
            if kind == "pause":
                self.paused = True
            if self.paused:
                if fut is not None and not fut.done():
                    fut.set_result(Reply() if kind == "pause" else self._gone())
                continue
            try:
                reply = await self._handle(kind, payload)
            except RoomError as err:
                reply = Reply(err.code, str(err))
            except Exception:  # a bug or a NATS failure must not kill the room's task
                log.exception("room command failed", extra={"room": self.room.room_id})
                reply = Reply(common_pb2.ERR_INTERNAL, "internal error; please retry")
            reply.position = self.stream.position
            if fut is not None and not fut.done():
                fut.set_result(reply)
            await self._follow_up()

    async def _follow_up(self) -> None:
        """Automation after every item; a failure here is retried on the next tick."""
        try:
            await self._after()
        except Exception:
            log.exception("room automation failed", extra={"room": self.room.room_id})
            self.deadline_key = self.entrust_decision = -1   # re-arm the timers on the next pass
            self.retry_due = time.monotonic() + 1.0
            self._wake.set()

    # ------------------------------------------------------------------ records
    async def record(self, rec: lr.Record) -> Effects:
        """Append to the log (durable first), fold into the room, publish the effects."""
        rec = lr.stamp(rec, self.next_index)
        started = time.perf_counter()
        # single writer: the append names the last record we know; if another table took
        # the room over meanwhile, JetStream refuses it and this actor stands down
        self.log_seq = await self._append(self.room.room_id, self.next_index, lr.encode(rec),
                                          self.log_seq)
        m.LOG_APPEND.observe(time.perf_counter() - started)
        self.next_index += 1
        fx = views.apply(self.room, rec)
        await self._publish(self, fx, self.stream.record(rec.i, fx.public, fx.private,
                                                         fx.closed))
        return fx

    # ------------------------------------------------------------------ commands
    async def _handle(self, kind: str, payload: Any) -> Reply:
        if kind == "tick":
            await self._tick()
            return Reply()
        if kind == "command":
            return await self._command(payload)
        raise ValueError(f"unknown inbox item {kind}")

    async def _command(self, cmd: table_pb2.TableCommand) -> Reply:
        room = self.room
        try:
            if cmd.kind:
                return await self._lobby_command(cmd)
            frame = cmd.frame
            what = frame.WhichOneof("payload")
            if what == "join_room":
                return await self._join(cmd)
            seat = checks.require_seat(room, cmd.user_id)
            handler = getattr(self, f"_c_{what}", None)
            if handler is not None:
                return await handler(seat, frame)
            return await self._game_action(seat, frame)
        except RoomError as err:
            return Reply(err.code, str(err))

    async def _lobby_command(self, cmd: table_pb2.TableCommand) -> Reply:
        room = self.room
        seat = checks.require_seat(room, cmd.user_id)
        s = room.seats[seat]
        assert s is not None
        session, at = cmd.session_id, cmd.login_at
        if cmd.kind == "online":
            # a session named by the lobby is recorded, so a late offline of an older session
            # (another lobby replica still tearing it down) is told apart; an online of an
            # older session than the recorded one changes nothing
            if not room.session_is_current(seat, session, at):
                return Reply()
            if not s.online or (session and s.session != session):
                await self.record(lr.Online(seat, session, at if session else 0.0))
            return Reply()
        if cmd.kind == "offline":
            if not room.session_is_current(seat, session, at):
                log.info("offline of a replaced session ignored",
                         extra={"room": room.room_id, "seat": seat})
                return Reply()
            if s.online:
                await self.record(lr.Offline(seat))
            return Reply()
        if cmd.kind == "snapshot":
            return Reply(frames_=views.snapshot(room, seat, self.seconds_left()))
        raise RoomError(common_pb2.ERR_BAD_FRAME, f"unknown table command kind {cmd.kind!r}")

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
        await self.record(lr.Join(seat, cmd.user_id, profile, session,
                                  cmd.login_at if session else 0.0))
        return Reply(frames_=views.snapshot(room, seat, self.seconds_left()))

    def _check_password(self, cmd: table_pb2.TableCommand) -> int:
        """``checks.check_join``, with wrong VIP passwords limited per user (brute force)."""
        uid, now = cmd.user_id, time.monotonic()
        wrong, locks, until = self.guesses.get(uid, (0, 0, 0.0))
        if until > now:
            raise RoomError(common_pb2.ERR_RATE_LIMITED, "too many wrong passwords: try again "
                            f"in {math.ceil(until - now)} s")
        try:
            seat = checks.check_join(self.room, uid, cmd.frame.join_room.password)
        except RoomError as err:
            if err.code != common_pb2.ERR_BAD_PASSWORD:
                raise
            wrong += 1
            if wrong >= PASSWORD_TRIES:
                until = now + min(PASSWORD_LOCK_MAX_SECONDS, PASSWORD_LOCK_SECONDS * 2 ** locks)
                wrong, locks = 0, locks + 1
            self.guesses.pop(uid, None)   # re-inserted last: the oldest guessers go first
            self.guesses[uid] = (wrong, locks, until)
            while len(self.guesses) > PASSWORD_GUESSERS:
                del self.guesses[next(iter(self.guesses))]
            raise
        self.guesses.pop(uid, None)
        return seat

    async def _c_ask_ready(self, seat: int, frame: client_pb2.ClientFrame) -> Reply:
        room = self.room
        if room.in_hand() or room.closed:
            raise RoomError(common_pb2.ERR_HAND_IN_PROGRESS, "ready is only between hands")
        want = frame.ask_ready.is_ready
        s = room.seats[seat]
        assert s is not None
        if s.ready != want:
            await self.record(lr.Ready(seat, want))
        return Reply(frames_=[frames.ok_frame(frame.event_id)])

    async def _c_ask_exit(self, seat: int, frame: client_pb2.ClientFrame) -> Reply:
        room = self.room
        if room.dismiss is not None:  # votes are counted by seat: nobody leaves mid-vote
            raise RoomError(common_pb2.ERR_HAND_IN_PROGRESS, "a dismiss vote is open")
        if room.in_hand():
            s = room.seats[seat]
            assert s is not None
            if not s.entrusted:
                await self.record(lr.Entrust(seat, "exit"))
            raise RoomError(common_pb2.ERR_HAND_IN_PROGRESS,
                            "a hand is in progress: you stay seated and entrust plays for you")
        if room.hand_no and room.hand_no < room.min_hands:
            raise RoomError(common_pb2.ERR_HAND_IN_PROGRESS,
                            f"the room must play {room.min_hands} hands; apply to dismiss instead")
        if room.hand_no:
            await self.record(lr.Close(lm.NoticeDismiss.PLAYER_LEFT,
                                       "a player left after the minimum number of hands"))
        else:
            await self.record(lr.Leave(seat))
            self.geo_asked.pop(seat, None)
            if not room.seated():   # nobody left in a room that never started: close it now
                await self.record(lr.Close(lm.NoticeDismiss.IDLE_TOO_LONG,
                                           "the last player left before the first hand"))
        return Reply(frames_=[frames.ok_frame(frame.event_id)])

    async def _c_refresh_room(self, seat: int, frame: client_pb2.ClientFrame) -> Reply:
        return Reply(frames_=views.snapshot(self.room, seat, self.seconds_left()))

    async def _c_ask_geo(self, seat: int, frame: client_pb2.ClientFrame) -> Reply:
        now = time.monotonic()
        if now - self.geo_asked.get(seat, -GEO_QUERY_SECONDS) < GEO_QUERY_SECONDS:
            raise RoomError(common_pb2.ERR_RATE_LIMITED,
                            f"distances at most once every {GEO_QUERY_SECONDS:g} s")
        self.geo_asked[seat] = now
        return Reply(frames_=[frames.server_frame(views.distances(self.room))])

    async def _c_cancel_entrust(self, seat: int, frame: client_pb2.ClientFrame) -> Reply:
        s = self.room.seats[seat]
        assert s is not None
        if not s.entrusted:
            raise RoomError(common_pb2.ERR_NOT_ENTRUSTED, "you are not entrusted")
        if s.cancels_left <= 0:
            raise RoomError(common_pb2.ERR_NO_ENTRUST_CANCELS,
                            "no cancels left: entrust plays until the hand ends")
        await self.record(lr.CancelEntrust(seat))
        return Reply(frames_=[frames.ok_frame(frame.event_id)])

    async def _c_ask_dismiss(self, seat: int, frame: client_pb2.ClientFrame) -> Reply:
        room = self.room
        if room.dismiss is not None:
            raise RoomError(common_pb2.ERR_ALREADY_VOTED, "a dismiss vote is already open")
        await self.record(lr.DismissApply(seat, int(self.dismiss_seconds),
                                          time.time() + self.dismiss_seconds))
        self.dismiss_deadline = time.monotonic() + self.dismiss_seconds
        await self._dismiss_check(timed_out=False)
        return Reply(frames_=[frames.ok_frame(frame.event_id)])

    async def _c_report_dismiss(self, seat: int, frame: client_pb2.ClientFrame) -> Reply:
        room = self.room
        if room.dismiss is None:
            raise RoomError(common_pb2.ERR_NO_DISMISS_VOTE, "no dismiss vote is open")
        if seat in room.dismiss.votes:
            raise RoomError(common_pb2.ERR_ALREADY_VOTED, "you have already voted")
        left = max(0, int((self.dismiss_deadline or time.monotonic()) - time.monotonic()))
        await self.record(lr.DismissVote(seat, frame.report_dismiss.agree, left))
        await self._dismiss_check(timed_out=False)
        return Reply(frames_=[frames.ok_frame(frame.event_id)])

    async def _dismiss_check(self, timed_out: bool) -> None:
        if self.room.dismiss is None:
            return
        outcome = checks.dismiss_outcome(self.room, timed_out)
        if outcome is not None:
            self.dismiss_deadline = None
            await self.record(lr.DismissResult(outcome))

    async def _game_action(self, seat: int, frame: client_pb2.ClientFrame) -> Reply:
        room = self.room
        code_of = rule_error_code
        try:
            action = action_from_frame(room.game, frame)
        except FrameError as exc:
            return Reply(common_pb2.ERR_BAD_FRAME, str(exc))
        if not room.in_hand():
            return Reply(code_of(room.game, "hand_over"), "no hand is being played")
        started = time.perf_counter()
        try:
            await self.act(seat, action, "player")
        except RuleError as err:
            return Reply(code_of(room.game, err.code), str(err))
        m.ACTION_SECONDS.labels(room.game).observe(time.perf_counter() - started)
        return Reply(frames_=[frames.ok_frame(frame.event_id)])

    async def act(self, seat: int, action: Action, by: str) -> None:
        """Verify (RuleError leaves everything unchanged), log, apply, resolve a window."""
        state = self.room.state
        assert state is not None
        response = self.room.is_response(seat)
        state.verify(seat, action)
        await self.record(lr.Act(seat, action, by, response))
        self.acted[seat] = self.acted.get(seat, 0) + 1
        if response:
            await self._resolve_window()

    async def _resolve_window(self) -> None:
        state = self.room.state
        if state is None or state.is_over():
            return
        window = state.pending_window()
        rules = state.arbitration_rules()
        if window is None or rules is None:
            return
        decision = await self._arbiter(window, rules)
        if decision is not None and decision.final:
            try:  # never log a decision the engine would refuse (e.g. a skewed arbiter)
                state.clone().resolve_window(decision)
            except RuleError as err:
                log.warning("arbiter decision refused", extra={"room": self.room.room_id,
                                                              "error": str(err)})
                decision = None
        if decision is None:  # no (usable) answer in time: the same pure function, here
            m.ARBITER_FALLBACK.inc()
            decision = resolve(window, rules)
        if decision.final:
            await self.record(lr.Resolve(decision))

    # ------------------------------------------------------------------ automation
    async def _after(self) -> None:
        """After every inbox item: a window every answer is in for gets decided, a room
        whose seats are all ready starts (also after a rebuild), new decisions get their
        prompts and timers, entrusted seats play."""
        room = self.room
        self.retry_due = None
        if room.closed:
            return
        if room.dismiss is not None and self.dismiss_deadline is None:
            left = max(0.0, room.dismiss_until - time.time()) if room.dismiss_until else 0.0
            self.dismiss_deadline = time.monotonic() + left   # e.g. restored after a rebuild
        window, rules = room.pending_window(), room.arbitration_rules()
        if window is not None and rules is not None and resolve(window, rules).final:
            await self._resolve_window()  # every answer is in (e.g. after a failure or a rebuild)
        if checks.can_start(room):
            await self._start_hand()
        self._arm_ready_timeout()
        if room.in_hand():
            self.idle_deadline = time.monotonic() + self.idle_seconds  # idle counts between hands
            # the deadline belongs to the timer key: a new turn or phase, not every answer in
            # a simultaneous phase (that would give the slowest seat more time per answer)
            if self.deadline_key != room.timer_key():
                self.deadline_key = room.timer_key()
                self.deadline = time.monotonic() + room.decision_seconds(self.timers)
            new_decision = self.entrust_decision != room.decision
            self.entrust_decision = room.decision
            if self.entrust_delay <= 0:
                await self._auto_play()
            elif new_decision or self.entrust_due is None:
                due = [s for s in room.to_act() if self._entrusted(s)]
                self.entrust_due = time.monotonic() + self.entrust_delay if due else None
            await self._send_prompts()
        else:
            self.deadline = self.entrust_due = None
        self._wake.set()

    def _arm_ready_timeout(self) -> None:
        room = self.room
        between = (not room.closed and not room.in_hand() and room.dismiss is None
                   and 0 < room.hand_no < room.total_hands)
        if not between or self.ready_seconds <= 0:
            self.ready_deadline = None
        elif self.ready_deadline is None:
            self.ready_deadline = time.monotonic() + self.ready_seconds

    async def _ready_timeout(self) -> None:
        """Ready every seat that is not (the room goes on; entrust plays for whoever is
        away)."""
        self.ready_deadline = None
        for seat, s in enumerate(self.room.seats):
            if s is not None and not s.ready and not self.room.in_hand():
                await self.record(lr.Ready(seat, True, "timeout"))

    async def _start_hand(self) -> None:
        room = self.room
        dealer = room.dealer if room.hand_no else secrets.randbelow(4)
        await self.record(lr.Start(room.hand_no + 1, secrets.randbits(63), dealer))

    async def _send_prompts(self) -> None:
        room = self.room
        if not room.in_hand():
            return
        fx = Effects()
        seconds = self.seconds_left()
        to_act = room.to_act()
        window = room.pending_window()
        for seat in to_act:
            s = room.seats[seat]
            if s is None:
                continue
            # one prompt per decision: a seat's own moves, the phase, and the window id or
            # the engine step (turn phases) tell a new decision from one still pending
            phase = room.phase()
            step = window.id if window is not None else (0 if room.simultaneous() else room.decision)
            key = (self.acted.get(seat, 0), phase, step)
            if self.prompted.get(seat) == key:
                continue
            self.prompted[seat] = key
            fx.private.append((s.user_id, views.prompt(room, seat, seconds)))
        if fx.private:
            await self._publish(self, fx, self.stream.follow_up((), fx.private))

    async def _auto_play(self, late: set[int] | None = None) -> None:
        """Entrusted seats act now, and so do the ``late`` seats whose timer ran out: a late
        seat on its own turn is entrusted from then on; a late answer to a response window
        is just the bot's answer (usually pass)."""
        room = self.room
        late = set(late or ())
        for _ in range(MAX_AUTO_STEPS):
            if not room.in_hand():
                return
            seat = next((x for x in room.to_act() if x in late or self._entrusted(x)), None)
            if seat is None:
                return
            late.discard(seat)
            assert room.state is not None
            by = "entrust" if self._entrusted(seat) else "timeout"
            if by == "timeout" and not room.is_response(seat):
                await self.record(lr.Entrust(seat, "timeout"))
            action = self._bot(room.game, room.state, seat)
            try:
                await self.act(seat, action, by)
            except RuleError:  # a policy bug must not stall the room: the engine's default
                await self.act(seat, room.state.default_action(seat), by)
        log.error("auto-play did not settle", extra={"room": room.room_id})

    def _entrusted(self, seat: int) -> bool:
        s = self.room.seats[seat]
        return s is not None and s.entrusted

    async def _tick(self) -> None:
        now = time.monotonic()
        room = self.room
        if self.dismiss_deadline is not None and now >= self.dismiss_deadline:
            self.dismiss_deadline = None
            await self._dismiss_check(timed_out=True)
        if not room.closed and not room.in_hand() and now >= self.idle_deadline:
            await self.record(lr.Close(lm.NoticeDismiss.IDLE_TOO_LONG,
                                       "the room was not started in time" if not room.hand_no
                                       else "the room sat between hands too long"))
            return
        if self.ready_deadline is not None and now >= self.ready_deadline:
            await self._ready_timeout()
        if self.entrust_due is not None and now >= self.entrust_due:
            self.entrust_due = None
            await self._auto_play()
        if room.in_hand() and self.deadline is not None and now >= self.deadline:
            m.TIMEOUTS.labels(room.game).inc()
            await self._auto_play(late=set(room.to_act()))
            if self.deadline_key == room.timer_key():
                self.deadline = None  # played; a new decision arms its own timer

    def seconds_left(self) -> float:
        if self.deadline is None:
            return self.room.decision_seconds(self.timers) if self.room.in_hand() else 0
        return max(0.0, self.deadline - time.monotonic())

    async def _timer_loop(self) -> None:
        while True:
            idle = None if self.room.in_hand() else self.idle_deadline
            wakes = [t for t in (self.deadline, self.entrust_due, self.dismiss_deadline,
                                 self.retry_due, self.ready_deadline, idle) if t is not None]
            delay = max(0.0, min(wakes) - time.monotonic()) if wakes else 3600.0
            self._wake.clear()
            try:
                # not asyncio.wait_for: on Python 3.11 it can swallow the cancel of stop()
                # when the wake-up lands at the same moment, leaving stop() waiting for it
                async with asyncio.timeout(delay):
                    await self._wake.wait()
                continue
            except TimeoutError:
                pass
            if self.room.closed:
                return
            try:
                self.inbox.put_nowait(("tick", None, None))
            except asyncio.QueueFull:
                await asyncio.sleep(0.05)


def create_record(room_id: int, req: table_pb2.CreateRoomRequest, game: str,
                  options: dict[str, Any], entrust_cancels: int,
                  timers: Mapping[str, float] | None = None) -> lr.Create:
    return lr.Create(
        room_id, game, options, dict(timers or {}), base_score=req.base_score or 1,
        total_hands=req.total_hands or 4, min_hands=req.min_hands,
        password_hash=checks.password_hash(room_id, req.password), entrust_cancels=entrust_cancels,
        creator_id=req.creator_id,
        play_desc=json.dumps(options, sort_keys=True) if options else game)
