"""A room's automation: decision timers, entrust and timeouts (auto-play), response windows
(the arbiter), hand starts, prompts, the ready and dismiss countdowns, idle rooms. Its
deadlines are named in one :class:`Deadlines`; one event-loop timer fires at the earliest and
posts a tick into the room's inbox (actor.py), so the room never changes from two places at
once. One instance per room, used only from the room's task."""

from __future__ import annotations

import asyncio
import enum
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Any

from games import fair
from games.arbitration import Decision, Rules, Window
from games.engine import Action, RuleError
from paiju.v1 import lobby_msgs_pb2 as lm
from services.table import checks, views
from services.table import logrec as lr
from services.table import metrics as m
from services.table.parts import Actor
from services.table.room import Room
from services.table.views import Effects

log = logging.getLogger("paiju.table.room")

MAX_AUTO_STEPS = 2000
# the decision on a response window, given the state's check of a final one: the arbiter's
# (services/table/arbiter_client.py, whose local arbitration decides when no arbiter
# answers or the check refuses its decision)
Arbiter = Callable[[Window, Rules, Callable[[Decision], None]], Awaitable[Decision]]
Bots = Callable[[str, Any, int], Action]


class Timer(enum.Enum):
    """A room's deadlines, each armed and cleared by its automation."""

    DECISION = "decision"   # the current decision's timer: seats still to act then play by entrust
    ENTRUST = "entrust"     # entrusted seats play, ``entrust_delay`` after a new decision
    DISMISS = "dismiss"     # the dismiss vote is decided as timed out
    RETRY = "retry"         # an automation pass that failed is tried again
    READY = "ready"         # between hands, seats still not ready are readied
    IDLE = "idle"           # a room that is not in a hand closes (counts only between hands)


class Deadlines:
    """Named deadlines on the ``time.monotonic()`` clock, and the earliest one: the room's
    timer fires then."""

    def __init__(self) -> None:
        self._at: dict[Timer, float] = {}

    def at(self, timer: Timer) -> float | None:
        return self._at.get(timer)

    def set(self, timer: Timer, at: float | None) -> None:
        """Arm ``timer`` for ``at``, or clear it (None)."""
        if at is None:
            self._at.pop(timer, None)
        else:
            self._at[timer] = at

    def clear(self, *timers: Timer) -> None:
        for timer in timers:
            self._at.pop(timer, None)

    def due(self, timer: Timer, now: float) -> bool:
        at = self._at.get(timer)
        return at is not None and now >= at

    def left(self, timer: Timer, now: float) -> float:
        """Seconds until ``timer``, 0 when it is past or not armed."""
        at = self._at.get(timer)
        return 0.0 if at is None else max(0.0, at - now)

    def postpone(self, seconds: float, *timers: Timer) -> None:
        """Move each of ``timers`` that is armed ``seconds`` later."""
        for timer in timers:
            if timer in self._at:
                self._at[timer] += seconds

    def earliest(self, *, skip: Timer | None = None) -> float | None:
        """When the first armed deadline (but ``skip``) falls, None when none is armed."""
        return min((at for timer, at in self._at.items() if timer is not skip), default=None)


class Automation:
    def __init__(self, actor: Actor, *, arbiter: Arbiter, bots: Bots, timers: dict[str, float],
                 dismiss_seconds: float, idle_seconds: float, entrust_delay: float,
                 ready_seconds: float = 0.0) -> None:
        self.actor = actor
        self._arbiter = arbiter
        self._bot = bots
        self.timers = timers
        self.dismiss_seconds = dismiss_seconds
        self.idle_seconds = idle_seconds
        self.entrust_delay = entrust_delay
        self.prompted: dict[int, tuple[Any, ...]] = {}
        self.prompted_at: dict[int, int] = {}   # seat -> room.decision of its last prompt
        self.acted: dict[int, int] = {}
        self.deadlines = Deadlines()
        self.deadline_key = -1          # room.timer_key() the DECISION deadline belongs to
        self.entrust_decision = -1      # room.decision the entrust delay was armed for
        # between hands, seats still not ready this long after a hand ended are readied (a
        # player who missed the hand's end, say while his lobby or table moved, must not
        # hold the room for ever); 0 = never
        self.ready_seconds = ready_seconds
        self.deadlines.set(Timer.IDLE, time.monotonic() + idle_seconds)
        self.tick_queued = False        # the timer posts one tick at a time
        self.timing = False             # from start_timer until stop_timer (no restart)
        self._timer: asyncio.TimerHandle | None = None

    @property
    def room(self) -> Room:
        return self.actor.room

    def held(self, seconds: float) -> None:
        """The room could not move for ``seconds`` (its log append waited: a stream leader
        election, a broker node's failover). The players' clocks stand still meanwhile: the
        seats still to answer lose no time to the server, and a timeout never overtakes an
        answer that waited behind the append. (Their prompts' countdowns are not sent again:
        a client's countdown ends first, the server's deadline a pause later.)"""
        self.deadlines.postpone(seconds, Timer.DECISION, Timer.READY)
        self.rearm()

    def failed(self) -> None:
        """The last pass failed: re-arm the timers and try again in a second."""
        self.deadline_key = self.entrust_decision = -1
        self.deadlines.set(Timer.RETRY, time.monotonic() + 1.0)
        self.rearm()

    async def act(self, seat: int, action: Action, by: str) -> None:
        """Verify (RuleError leaves everything unchanged), log, apply, resolve a window."""
        state = self.room.state
        assert state is not None
        response = self.room.is_response(seat)
        state.verify(seat, action)
        await self.actor.record(lr.Act(seat, action, by, response))
        self.acted[seat] = self.acted.get(seat, 0) + 1
        if response:
            await self.resolve_window()

    async def resolve_window(self) -> None:
        state = self.room.state
        if state is None or state.is_over():
            return
        window = state.pending_window()
        rules = state.arbitration_rules()
        if window is None or rules is None:
            return
        decision = await self._arbiter(window, rules, state.verify_decision)
        if decision.final:
            await self.actor.record(lr.Resolve(decision))

    async def dismiss_check(self, timed_out: bool) -> None:
        if self.room.dismiss is None:
            return
        outcome = checks.dismiss_outcome(self.room, timed_out)
        if outcome is not None:
            self.deadlines.clear(Timer.DISMISS)
            await self.actor.record(lr.DismissResult(outcome))

    async def after(self) -> None:
        """After every inbox item: a window every answer is in for gets decided, a room
        whose seats are all ready starts (also after a rebuild), new decisions get their
        prompts and timers, entrusted seats play."""
        room = self.room
        self.deadlines.clear(Timer.RETRY)
        if room.closed:
            return
        if room.dismiss is not None and self.deadlines.at(Timer.DISMISS) is None:
            left = max(0.0, room.dismiss_until - time.time()) if room.dismiss_until else 0.0
            # e.g. restored after a rebuild
            self.deadlines.set(Timer.DISMISS, time.monotonic() + left)
        window, rules = room.pending_window(), room.arbitration_rules()
        if window is not None and rules is not None \
                and window.candidates.keys() <= window.responses.keys():
            # every answer is in (e.g. after a failure or a rebuild): the arbiter decides
            await self.resolve_window()
        if checks.needs_commitment(room):
            await self.commit_next_hand()
        if checks.can_start(room):
            await self.start_hand()
        self.arm_ready_timeout()
        if room.in_hand():
            # idle counts between hands
            self.deadlines.set(Timer.IDLE, time.monotonic() + self.idle_seconds)
            # the deadline belongs to the timer key: a new turn or phase, not every answer in
            # a simultaneous phase (that would give the slowest seat more time per answer)
            if self.deadline_key != room.timer_key():
                self.deadline_key = room.timer_key()
                self.deadlines.set(Timer.DECISION,
                                   time.monotonic() + room.decision_seconds(self.timers))
            new_decision = self.entrust_decision != room.decision
            self.entrust_decision = room.decision
            if self.entrust_delay <= 0:
                await self.auto_play()
            elif new_decision or self.deadlines.at(Timer.ENTRUST) is None:
                due = [s for s in room.to_act() if self.entrusted(s)]
                self.deadlines.set(Timer.ENTRUST,
                                   time.monotonic() + self.entrust_delay if due else None)
            await self.send_prompts()
        else:
            self.deadlines.clear(Timer.DECISION, Timer.ENTRUST)
        self.rearm()

    def arm_ready_timeout(self) -> None:
        room = self.room
        between = (not room.closed and not room.in_hand() and room.dismiss is None
                   and 0 < room.hand_no < room.total_hands)
        if not between or self.ready_seconds <= 0:
            self.deadlines.clear(Timer.READY)
        elif self.deadlines.at(Timer.READY) is None:
            self.deadlines.set(Timer.READY, time.monotonic() + self.ready_seconds)

    async def ready_timeout(self) -> None:
        """Ready every seat that is not (the room goes on; entrust plays for whoever is
        away)."""
        self.deadlines.clear(Timer.READY)
        for seat, s in enumerate(self.room.seats):
            if s is not None and not s.ready and not self.room.in_hand():
                await self.actor.record(lr.Ready(seat, True, "timeout"))

    async def commit_next_hand(self) -> None:
        """Commit to the next hand's server seed (docs/fairness.md) before any client seed
        for it is taken: the seed stays in the log, the commitment goes to the room."""
        room = self.room
        hand_no = room.hand_no + 1
        server_seed = secrets.token_bytes(fair.SEED_BYTES)
        await self.actor.record(lr.Commit(hand_no, server_seed.hex(),
                                          fair.commitment(room.room_id, hand_no, server_seed)))

    async def start_hand(self) -> None:
        """Deal from the committed server seed and the client seeds; the first hand's
        dealer is drawn from the same seed."""
        room = self.room
        hand_no = room.hand_no + 1
        seed = room.fair.hand_seed(room.room_id, hand_no)
        if seed is None:   # not committed (cannot happen after checks.needs_commitment)
            raise RuntimeError(f"hand {hand_no} of room {room.room_id} has no commitment")
        first = not room.hand_no
        dealer = fair.first_dealer(seed, room.spec.seats) if first else room.dealer
        await self.actor.record(lr.Start(hand_no, seed.hex(), dealer, dealer_from_seed=first))

    async def send_prompts(self) -> None:
        room = self.room
        if not room.in_hand():
            return
        fx = Effects()
        seconds = self.seconds_left()
        to_act = room.to_act()
        window = room.pending_window()
        for seat in to_act:
            s = room.seats[seat]
            if s is None or s.robot:   # a robot is played by entrust, never prompted
                continue
            # one prompt per decision: a seat's own moves, the phase, and the window id or
            # the engine step (turn phases) tell a new decision from one still pending
            phase = room.phase()
            step = window.id if window is not None else (0 if room.simultaneous() else room.decision)
            key = (self.acted.get(seat, 0), phase, step)
            if self.prompted.get(seat) == key:
                continue
            self.prompted[seat] = key
            self.prompted_at[seat] = room.decision
            fx.private.append((s.user_id, views.prompt(room, seat, seconds)))
        if fx.private:
            await self.actor.publish(fx, self.actor.stream.follow_up((), fx.private))

    async def auto_play(self, late: set[int] | None = None) -> None:
        """Entrusted seats act now, and so do the ``late`` seats whose timer ran out: a late
        seat on its own turn is entrusted from then on; a late answer to a response window
        is just the bot's answer (usually pass)."""
        room = self.room
        late = set(late or ())
        for _ in range(MAX_AUTO_STEPS):
            if not room.in_hand():
                return
            seat = next((x for x in room.to_act() if x in late or self.entrusted(x)), None)
            if seat is None:
                return
            late.discard(seat)
            assert room.state is not None
            by = "entrust" if self.entrusted(seat) else "timeout"
            if by == "timeout" and not room.is_response(seat):
                await self.actor.record(lr.Entrust(seat, "timeout"))
            action = self._bot(room.game, room.state, seat)
            try:
                await self.act(seat, action, by)
            except RuleError:  # a policy bug must not stall the room: the engine's default
                await self.act(seat, room.state.default_action(seat), by)
        log.error("auto-play did not settle", extra={"room": room.room_id})

    def entrusted(self, seat: int) -> bool:
        s = self.room.seats[seat]
        return s is not None and s.entrusted

    async def tick(self) -> None:
        self.tick_queued = False
        now = time.monotonic()
        room = self.room
        due = self.deadlines.due
        if due(Timer.DISMISS, now):
            self.deadlines.clear(Timer.DISMISS)
            await self.dismiss_check(timed_out=True)
        if not room.closed and not room.in_hand() and due(Timer.IDLE, now):
            await self.actor.record(lr.Close(lm.NoticeDismiss.IDLE_TOO_LONG,
                                       "the room was not started in time" if not room.hand_no
                                       else "the room sat between hands too long"))
            return
        if due(Timer.READY, now):
            await self.ready_timeout()
        if due(Timer.ENTRUST, now):
            self.deadlines.clear(Timer.ENTRUST)
            await self.auto_play()
        if room.in_hand() and due(Timer.DECISION, now):
            m.TIMEOUTS.labels(room.game).inc()
            await self.auto_play(late=set(room.to_act()))
            if self.deadline_key == room.timer_key():
                self.deadlines.clear(Timer.DECISION)  # played; a new decision arms its own timer

    def seconds_left(self) -> float:
        if self.deadlines.at(Timer.DECISION) is None:
            return self.room.decision_seconds(self.timers) if self.room.in_hand() else 0
        return self.deadlines.left(Timer.DECISION, time.monotonic())

    def start_timer(self) -> None:
        self.timing = True
        self.rearm()

    def stop_timer(self) -> None:
        """For good: the room stops or is handed over."""
        self.timing = False
        self.rearm()

    def rearm(self) -> None:
        """Time the next tick for the earliest deadline (the idle one counts only between
        hands). A tick still queued (the room's task is busy, e.g. waiting for its log) is
        not joined by more: after() re-arms once the room's task has handled it."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self.timing or self.tick_queued or self.room.closed:
            return
        wake_at = self.deadlines.earliest(skip=Timer.IDLE if self.room.in_hand() else None)
        if wake_at is not None:
            self._timer = asyncio.get_running_loop().call_later(
                max(0.0, wake_at - time.monotonic()), self._post_tick)

    def _post_tick(self) -> None:
        self._timer = None
        if self.room.closed:
            return
        try:
            self.actor.inbox.put_nowait(("tick", None, None))
            self.tick_queued = True
        except asyncio.QueueFull:   # a flooded inbox: a moment later
            self._timer = asyncio.get_running_loop().call_later(0.05, self._post_tick)

