"""The terminal client's loop: one lobby session, a task that prints every push, a reader
of commands (stdin, or ``--script``), and robots that fill the person's room.

Rendering is in :mod:`clients.cli.render`, parsing in :mod:`clients.cli.parse`; this
module only moves frames and keeps the little state a player needs (room, seat, prompt,
the hand's payments)."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from clients.cli import render
from clients.cli.focus import Focus
from clients.cli.games import game_ui
from clients.cli.parse import COMMANDS, Command, InputError, choose_action, parse_command
from clients.robot.robot import GAMES, Robot, action_frame
from clients.robot.view import choose
from clients.session import LobbySession, SessionClosed, mint_token
from paiju import frames
from paiju.v1 import client_pb2, common_pb2
from paiju.v1 import game_msgs_pb2 as g
from paiju.v1 import lobby_msgs_pb2 as lm

TOP_LIMIT = 10   # rows of the leaderboard that ``top`` shows
# "A moment" answers (docs/protocol.md §8): the room is moving between tables or a backend
# did not answer. A command answered so is sent again after a pause growing by RETRY_STEP s
# up to RETRY_LONGEST s, at most RETRY_TRIES times in all (as the robots ready,
# clients/robot/robot.py); the person sees "a moment" in the status line, never an error.
TRANSIENT = frozenset({common_pb2.ERR_ROOM_MOVING, common_pb2.ERR_UNAVAILABLE})
RETRY_TRIES, RETRY_STEP, RETRY_LONGEST = 40, 0.25, 2.0
ENDED_SCORES_TIMEOUT = 5.0   # seconds: the scores of a room that ended while we were away
# commands sent again on "a moment": room commands that do the same when repeated (a repeat
# after a try that did count is refused harmlessly) and questions; not create, quick, join,
# match or chat, which a repeat could do twice
RETRIED = frozenset({"ready", "dismiss", "entrust-cancel", "vote", "room", "geo", "list",
                     "history", "rating", "top", "cancel"})


@dataclass
class Options:
    lobby: str = "127.0.0.1:50051"
    user: int = 1001
    secret: str = "dev-secret-change-me"
    game: str = "xuezhan"                # the game of 'create' / 'quick' without one
    robots: int = 3
    script: list[str] = field(default_factory=list)
    auto: bool = False
    ca: str = ""                         # PEM of the CA of a TLS lobby's certificate
    tls: bool = False                    # a TLS lobby with a certificate from a public CA


@dataclass
class Seat:
    """Where the person sits and what the current hand has shown so far."""

    room: common_pb2.RoomInfo | None = None
    seat: int = -1
    prompt: g.Prompt | None = None
    hand_no: int = 0
    payments: list[dict[str, Any]] = field(default_factory=list)

    @property
    def game(self) -> str:
        return render.GAME_OF_ENUM.get(self.room.game, "") if self.room else ""


class CliApp:
    def __init__(self, options: Options, out: Callable[[str], None] | None = None,
                 show_prompt: Callable[[str], None] | None = None) -> None:
        self.opt = options
        self._write = out or (lambda line: print(line, flush=True))
        # the status line as the input prompt, in interactive mode: on a terminal it is
        # erased before the next output line and drawn again after it
        self._show = show_prompt or _terminal_prompt
        self._prompt_up = False
        self.interactive = False
        self.focus = Focus()
        self.session: LobbySession = None  # type: ignore[assignment]  # made in run()'s loop
        self.at = Seat()
        self.done = asyncio.Event()          # quit, kicked out or the stream closed
        self.room_closed = asyncio.Event()   # the person's room was dismissed
        self.robots: list[asyncio.Task[Any]] = []
        self._robot_uids = 0
        # bumped by every prompt and every end of a decision of ours: an answer sent again
        # after "a moment" is dropped once its decision is no longer the current one
        self.decision = 0
        self.retrying: set[asyncio.Task[None]] = set()   # commands waiting for a next try

    # ------------------------------------------------------------------ lifecycle
    async def run(self) -> int:
        # a grpc.aio channel binds to this loop
        self.session = LobbySession(self.opt.lobby, ca_file=self.opt.ca or None, tls=self.opt.tls)
        await self.session.open()
        try:
            if not await self._login():
                return 1
            pushes = asyncio.create_task(self._pushes())
            await self.command("list")
            if self.opt.script:
                await self._run_script()
            else:
                await self._interactive()
            pushes.cancel()
            return 0
        finally:
            for task in (*self.robots, *self.retrying):
                task.cancel()
            await asyncio.gather(*self.robots, *self.retrying, return_exceptions=True)
            await self.session.close()

    async def _login(self) -> bool:
        token = mint_token(self.opt.user, self.opt.secret)
        reply = await self.session.login(token, nickname=f"player{self.opt.user}")
        if reply.WhichOneof("payload") != "login_ok":
            self.out(f"login refused: {render.error_line(reply.ret)}")
            return False
        ok = reply.login_ok
        self.out(f"logged in as {ok.player.nickname or ok.player.user_id} "
                 f"[{ok.player.user_id}], coins {ok.player.coins}")
        if ok.HasField("room") and ok.room.room_id:
            self._set_room(ok.room, next((p.seat for p in ok.room.players
                                          if p.user_id == self.opt.user), -1))
        return True

    async def _run_script(self) -> None:
        """Run the script's commands in order; then, seated, play until the room closes."""
        for line in self.opt.script:
            self.out(f"> {line}")
            if not await self.handle_line(line):
                return
        if self.at.room is not None:
            await _first(self.done.wait(), self.room_closed.wait())

    async def _interactive(self) -> None:
        lines: asyncio.Queue[str | None] = asyncio.Queue()
        loop = asyncio.get_running_loop()

        def read() -> None:  # a daemon thread: a blocked read never holds up the exit
            for raw in sys.stdin:
                loop.call_soon_threadsafe(lines.put_nowait, raw)
            loop.call_soon_threadsafe(lines.put_nowait, None)

        threading.Thread(target=read, daemon=True, name="stdin").start()
        self.out("type 'help' for the commands")
        self.interactive = True
        self.show_prompt()
        while not self.done.is_set():
            getter = asyncio.ensure_future(lines.get())
            if getter not in await _first(getter, self.done.wait()):
                return
            line = getter.result()
            self._prompt_up = False          # the person's Enter ended the prompt's line
            if line is None or not await self.handle_line(line):
                return
            self.show_prompt()

    # ------------------------------------------------------------------ output
    def out(self, line: str) -> None:
        if self._prompt_up:
            self._show("\r\033[K")          # erase the prompt; drawn again after the burst
            self._prompt_up = False
        self._write(line)

    def show_prompt(self) -> None:
        """The status line as the prompt (interactive only): room, seat, hand, whose move,
        entrust, preceded by a summary of other rooms' changes when there are some."""
        if not self.interactive:
            return
        summary = self.focus.room_summary() if self.at.room is None else None
        if summary:
            self.out(summary)
        if self.at.room is not None:
            self.focus.clear_changes()       # in a room the list is not news
        self._show(self.focus.status(self.at.room, self.at.seat, self.at.prompt is not None,
                                     self.at.hand_no))
        self._prompt_up = True

    # ------------------------------------------------------------------ input
    async def handle_line(self, line: str) -> bool:
        """One typed line; False when the client should stop."""
        line = line.strip()
        if not line:
            return True
        try:
            cmd = parse_command(line, self.opt.game)
            if cmd is None:
                await self._answer_typed(line)
                return True
            if cmd.name == "quit":
                return False
            await self.command(cmd.name, *cmd.args)
        except InputError as exc:
            self.out(f"? {exc}")
        except (SessionClosed, TimeoutError) as exc:
            self.out(f"lobby did not answer: {exc or 'timeout'}")
        return not self.done.is_set()

    async def _answer_typed(self, line: str) -> None:
        prompt = self.at.prompt
        if prompt is None:
            raise InputError(f"unknown command '{line.split()[0]}'; type 'help'")
        index = choose_action(line, prompt.game, prompt.actions)
        await self._act(prompt, prompt.actions[index])

    async def _act(self, prompt: g.Prompt, spec: g.ActionSpec) -> None:
        action = {"kind": spec.kind, "tiles": list(spec.tiles), "ref": spec.ref,
                  "choice": spec.choice}
        self.out(f"you: {render.action_label(spec)}")
        if self.at.prompt is prompt:
            self.at.prompt = None
        decision = self.decision
        frame = action_frame(prompt.game, action, prompt.decision)
        reply = await self.session.request(frame)
        if _transient(reply):
            # sent again while this decision stands (no new prompt, our move not seen played)
            self._retry(frame, render.action_label(spec), self._show_action_reply,
                        still=lambda: self.decision == decision)
            return
        self._show_action_reply(reply, 1)

    def _show_action_reply(self, reply: client_pb2.ServerFrame, tries: int) -> None:
        """An answer's reply: a refusal is shown, unless it only came too late (overtaken)
        or answers a retry (``tries`` > 1), whose first try, answered "a moment", may have
        counted after all: the room's frames show what happened."""
        if reply.WhichOneof("payload") != "ret" or not reply.ret.code:
            return
        if reply.ret.overtaken:
            self.out(f"(too late, the game moved on: {reply.ret.message})")
        elif tries > 1:
            self.out(f"(not taken again: {reply.ret.message})")
        else:
            self.out(render.error_line(reply.ret))

    def _retry(self, payload: Any, what: str,
               done: Callable[[client_pb2.ServerFrame, int], None],
               still: Callable[[], bool] = lambda: True) -> None:
        """Send ``payload`` again in the background after "a moment" (its first try): up to
        RETRY_TRIES tries in all, while ``still()``; ``done(reply, tries)`` gets the first
        answer that is not "a moment"."""
        self.out(f"… a moment (reconnecting): '{what}' is sent again")
        task = asyncio.create_task(self._retrying(payload, what, done, still))
        self.retrying.add(task)
        self._moment()
        task.add_done_callback(self._retried)

    def _retried(self, task: asyncio.Task[None]) -> None:
        self.retrying.discard(task)
        self._moment()

    def _moment(self) -> None:
        """"a moment" in the status line while a command waits for its next try."""
        waiting = bool(self.retrying)
        if waiting != self.focus.moment:
            self.focus.moment = waiting
            self.show_prompt()

    async def _retrying(self, payload: Any, what: str,
                        done: Callable[[client_pb2.ServerFrame, int], None],
                        still: Callable[[], bool]) -> None:
        for tries in range(2, RETRY_TRIES + 1):
            await asyncio.sleep(min(RETRY_LONGEST, RETRY_STEP * (tries - 1)))
            if not still():
                self.out(f"('{what}' not sent again: that decision is over)")
                return
            try:
                reply = await self.session.request(payload)
            except (SessionClosed, TimeoutError):
                return   # the stream ended: the reconnect resumes the seat, a prompt follows
            if not _transient(reply):
                done(reply, tries)
                return
            if not still():
                self.out(f"('{what}' not sent again: that decision is over)")
                return
        self.out(f"the room did not answer '{what}' after {RETRY_TRIES} tries: try again later")

    # ------------------------------------------------------------------ commands
    async def command(self, name: str, *args: str) -> None:
        if name == "help":
            self.out("commands:\n  " + "\n  ".join(COMMANDS.values()))
        elif name == "robots":
            self._start_robots(int(args[0]) if args else self.opt.robots)
        else:
            payload = self._request_for(Command(name, args))
            reply = await self.session.request(payload)
            if not _transient(reply):
                self._show_reply(reply)
            elif name in RETRIED:
                self._retry(payload, name, self._show_retried_reply)
            else:   # not repeated on its own: it could count twice
                self.out(f"… a moment: {reply.ret.message} (try '{name}' again)")

    def _show_retried_reply(self, reply: client_pb2.ServerFrame, tries: int) -> None:
        """The answer to a command sent again: a refusal may only mean that an earlier try,
        answered "a moment", counted (a vote already cast): a note, not an error."""
        if reply.WhichOneof("payload") == "ret" and reply.ret.code:
            self.out(f"(not taken again: {reply.ret.message})")
        else:
            self._show_reply(reply)

    def _request_for(self, cmd: Command) -> Any:
        a = cmd.args
        simple = {"list": lm.AskRoomList(), "ready": lm.AskReady(is_ready=True),
                  "geo": lm.AskGeo(), "history": lm.AskHistoryScore(),
                  "dismiss": lm.AskDismiss(), "entrust-cancel": lm.CancelEntrust(),
                  "room": lm.RefreshRoom(), "cancel": lm.CancelMatch()}
        if cmd.name in simple:
            return simple[cmd.name]
        if cmd.name == "create":
            hands = int(a[1]) if len(a) > 1 else 4
            return lm.CreateRoom(game=GAMES[a[0]], base_score=1, total_hands=hands)
        if cmd.name == "join":
            return lm.JoinRoom(room_id=int(a[0]), password=a[1] if len(a) > 1 else "")
        if cmd.name == "quick":
            return lm.JoinRoom(room_id=0, game=GAMES[a[0]])
        if cmd.name in ("rating", "top"):
            now = a[1] == "now"
            season = 0 if now else int(a[1])
            if cmd.name == "rating":
                return lm.AskRating(game=a[0], season=season, current_season=now)
            return lm.AskLeaderboard(game=a[0], season=season, current_season=now,
                                     limit=TOP_LIMIT)
        if cmd.name == "match":
            return lm.AskMatch(game=a[0], stake=int(a[1]), ranked=a[2] == "ranked",
                               party=[int(u) for u in a[3].split(",") if u])
        if cmd.name == "chat":
            return lm.Chat(content=a[0])
        if cmd.name == "vote":
            return lm.ReportDismiss(agree=a[0] == "yes")
        raise InputError(f"unknown command {cmd.name}")

    def _show_reply(self, frame: client_pb2.ServerFrame) -> None:
        kind = frame.WhichOneof("payload")
        if kind == "room_list":
            self.focus.clear_changes()
            self.out(f"rooms ({frame.room_list.started_room_num} playing):")
            for line in render.room_list_lines(frame.room_list.items):
                self.out(line)
        elif kind == "use_geo":
            for item in frame.use_geo.items or ():
                ip = ", same IP" if item.same_ip else ""
                self.out(f"  {item.src_uid} - {item.dest_uid}: {item.distance}{ip}")
            if not frame.use_geo.items:
                self.out("  nobody else in the room")
        elif kind == "rating_info":
            self.out(render.rating_line(frame.rating_info))
        elif kind == "leaderboard":
            for line in render.leaderboard_lines(frame.leaderboard):
                self.out(line)
        elif kind == "history_score":
            for item in frame.history_score.items:
                self.out(f"  {item.user_id}: {' '.join(f'{s:+d}' for s in item.scores) or '-'}"
                         f" = {sum(item.scores):+d}")
            if not frame.history_score.items:
                self.out("  no hands played yet")
        else:
            self._on_push(frame)

    def _start_robots(self, count: int) -> None:
        room = self.at.room
        if room is None:
            raise InputError("robots join your room: create or join one first")
        free = (room.seats or 4) - len(room.players)   # RoomInfo.seats: 3 or 4
        if free <= 0:
            raise InputError(f"room {room.room_id} has no free seat")
        for _ in range(min(count, free)):
            self._robot_uids += 1
            uid = self.opt.user * 100 + self._robot_uids
            robot = Robot(self.opt.lobby, uid, self.at.game, self.opt.secret, room_id=room.room_id,
                          ca_file=self.opt.ca or None, tls=self.opt.tls)
            task = asyncio.create_task(robot.run())
            task.add_done_callback(partial(self._robot_done, uid))
            self.robots.append(task)
            self.out(f"robot {uid} is joining room {room.room_id}")

    def _robot_done(self, uid: int, task: asyncio.Task[Any]) -> None:
        if not task.cancelled() and task.exception() is not None:
            self.out(f"robot {uid} stopped: {task.exception()}")

    # ------------------------------------------------------------------ pushes
    async def _pushes(self) -> None:
        while True:
            frame = await self.session.pushes.get()
            if frame is None:   # the stream ended: a kick ends the client, anything else
                if self.session.kicked or not await self._reconnect():   # is taken back
                    break
                continue
            try:
                self._on_push(frame)
                if self.session.pushes.empty():
                    self.show_prompt()
                kind = frame.WhichOneof("payload")
                if kind == "prompt" and self.opt.auto:
                    await self._auto_answer(frame.prompt)
                elif self._is_hand_over(frame) and self.opt.auto and self._more_hands():
                    await self._auto_ready()
                elif kind == "room_joined" and self.opt.auto and self._ready_again(frame):
                    await self._auto_ready()
            except (SessionClosed, TimeoutError) as exc:
                self.out(f"lobby did not answer: {exc or 'timeout'}")
        self.out("the lobby closed the connection")
        self.done.set()

    async def _reconnect(self) -> bool:
        """Log in again (on the next lobby address when there are several) and resume the
        seat; False when no lobby took the session back."""
        self.out(f"lost the lobby at {self.session.address}: reconnecting...")
        try:
            reply = await self.session.reconnect(
                lambda: mint_token(self.opt.user, self.opt.secret),
                nickname=f"player{self.opt.user}")
        except SessionClosed as exc:
            self.out(f"could not reconnect: {exc}")
            return False
        ok = reply.login_ok
        self.out(f"reconnected to {self.session.address}")
        if ok.room.room_id:
            self.at.room, self.at.prompt = ok.room, None   # the snapshot follows
        elif self.at.room is not None:
            ended = self.at.room.room_id
            self.out(f"room {ended} ended while you were away")
            self.at = Seat()
            self.focus.left_room()
            self.room_closed.set()
            await self._show_scores(ended)
        return True

    async def _show_scores(self, room_id: int) -> None:
        """How a room ended that we did not see end: its scores, as records has them."""
        try:
            reply = await self.session.request(lm.AskHistoryScore(room_id=room_id),
                                               timeout=ENDED_SCORES_TIMEOUT)
        except (SessionClosed, TimeoutError):
            return   # a note less: the history command asks again
        if reply.WhichOneof("payload") == "history_score":
            self.out(f"room {room_id}'s scores:")
        self._show_reply(reply)

    def _ready_again(self, frame: client_pb2.ServerFrame) -> bool:
        """A snapshot after a reconnect shows our room between hands and us not ready."""
        room = frame.room_joined.room
        between = room.status in (common_pb2.ROOM_WAITING, common_pb2.ROOM_HAND_OVER)
        me = next((p for p in room.players if p.user_id == self.opt.user), None)
        return (between and room.cur_hand > 0 and me is not None and not me.ready
                and room.cur_hand < room.total_hands)

    async def _auto_ready(self) -> None:
        """Ready for the next hand; "a moment" is asked again in the background, any other
        answer is shown as it comes (a reply printed by _on_push)."""
        ready = lm.AskReady(is_ready=True)
        reply = await self.session.request(ready)
        if _transient(reply):
            self._retry(ready, "ready", self._show_retried_reply)
        elif reply.WhichOneof("payload") == "ret" and reply.ret.code:
            self.out(render.error_line(reply.ret))

    async def _auto_answer(self, prompt: g.Prompt) -> None:
        action = choose(prompt.game, prompt, "greedy")
        await self._act(prompt, g.ActionSpec(kind=action.kind, tiles=list(action.tiles),
                                             ref=action.ref, choice=action.choice))

    def _more_hands(self) -> bool:
        room = self.at.room
        return room is not None and self.at.hand_no < room.total_hands

    @staticmethod
    def _is_hand_over(frame: client_pb2.ServerFrame) -> bool:
        return frames.hand_over_data(frame) is not None

    def _on_push(self, frame: client_pb2.ServerFrame) -> None:
        kind = frame.WhichOneof("payload")
        at = self.at
        if self._ends_decision(frame):
            self.decision += 1
        if kind == "prompt":
            at.prompt, at.seat, at.hand_no = frame.prompt, frame.prompt.seat, frame.prompt.hand_no
            self._print(render.prompt_lines(frame.prompt))
            if self.focus.entrusted and not self.opt.auto:
                self.out("entrust (托管) plays this for you: type 'entrust-cancel' to take over")
            return
        if kind == "room_change":            # other rooms: summarised at the prompt
            self.focus.room_change(frame.room_change)
            return
        if kind == "distance_alert":         # one same-IP alert per room
            line = self.focus.alert(frame.distance_alert, at.room.room_id if at.room else 0,
                                    self._names())
            if line:
                self.out(line)
            return
        if kind == "room_joined":
            self._set_room(frame.room_joined.room, frame.room_joined.seat)
            return
        if kind in ("match_queued", "match_found", "match_cancelled"):
            self.out(render.match_line(frame))
            return
        if kind == "mj_game_info":
            info = frame.mj_game_info
            self.focus.set_entrust(0 <= at.seat < len(info.entrusted) and info.entrusted[at.seat],
                                   info.cancel_entrust_count)
            self._print(render.observation_lines(at.game, json.loads(
                info.observation_json or "{}")))
            return
        if kind == "game_info":              # a game without its own snapshot frame
            info = frame.game_info
            self.focus.set_entrust(0 <= at.seat < len(info.entrusted) and info.entrusted[at.seat],
                                   info.cancel_entrust_count)
            self._print(render.observation_lines(at.game, json.loads(
                info.observation_json or "{}")))
            return
        if kind == "dd_game_info":
            info = frame.dd_game_info
            self.focus.set_entrust(0 <= at.seat < len(info.is_entrust) and info.is_entrust[at.seat],
                                   info.cancel_entrust_count)
        self._track(frame)
        line = render.event_line(frame, at.seat)
        if line:
            self.out(line)
        if self._is_hand_over(frame):
            over = frames.hand_over_data(frame) or {}
            self._print(render.settlement_lines(at.game, over, at.payments, at.seat, at.hand_no))
            at.payments, at.prompt = [], None
            self.focus.set_entrust(False)    # entrust ends with the hand
        if kind == "mj_deal" or (kind == "game_event" and frame.game_event.kind == "deal"):
            line = self.focus.same_ip_line(self._names())
            if line:
                self.out(line)

    def _ends_decision(self, frame: client_pb2.ServerFrame) -> bool:
        """A new prompt, or the end of a decision of ours: a window closed, our discard or
        play seen (ours, the timer's or entrust's), the hand over."""
        kind = frame.WhichOneof("payload")
        seat = self.at.seat
        return (kind in ("prompt", "mj_window_closed") or self._is_hand_over(frame)
                or (kind == "mj_discard" and frame.mj_discard.seat == seat)
                or (kind == "dd_use_out" and frame.dd_use_out.seat == seat)
                or (kind == "game_event" and frame.game_event.seat == seat
                    and frame.game_event.kind in _decision_ends(frame.game_event.game)))

    def _track(self, frame: client_pb2.ServerFrame) -> None:
        """Keep the hand's payments and the room's end for the settlement and the loop."""
        kind = frame.WhichOneof("payload")
        if kind == "mj_payment":
            p = frame.mj_payment.payment
            self.at.payments.append({"reason": p.reason, "payer": p.payer, "payee": p.payee,
                                     "amount": p.amount})
        elif kind == "game_event" and frame.game_event.kind == "payment":
            self.at.payments.append(json.loads(frame.game_event.json))
        elif kind == "player_change" and self.at.room is not None:
            del self.at.room.players[:]
            self.at.room.players.extend(frame.player_change.players)
        elif kind == "notice_dismiss" and frame.notice_dismiss.dismissed:
            self.at = Seat()
            self.focus.left_room()
            self.room_closed.set()
        elif kind == "in_entrust" and frame.in_entrust.seat == self.at.seat:
            self.focus.set_entrust(True, frame.in_entrust.count)
        elif kind == "cancel_entrust_done" and frame.cancel_entrust_done.seat == self.at.seat:
            self.focus.set_entrust(False)
        elif kind == "kick_out":
            self.done.set()

    def _set_room(self, room: common_pb2.RoomInfo, seat: int) -> None:
        self.at.room, self.at.seat = room, seat
        self.room_closed.clear()
        self._print(render.room_lines(room, self.opt.user))
        self.out(f"you sit at seat {seat}; 'robots' fills the table, 'ready' starts")

    def _names(self) -> dict[int, str]:
        room = self.at.room
        return {p.user_id: p.nickname or str(p.user_id) for p in room.players} if room else {}

    def _print(self, lines: list[str]) -> None:
        for line in lines:
            self.out(line)


def _decision_ends(game: str) -> frozenset[str]:
    ui = game_ui(game)
    return ui.DECISION_ENDS if ui is not None else frozenset()


def _transient(reply: client_pb2.ServerFrame) -> bool:
    """"A moment": the command did nothing we know of and may be sent again."""
    return reply.WhichOneof("payload") == "ret" and reply.ret.code in TRANSIENT


_last_status = [""]


def _terminal_prompt(text: str) -> None:
    """The prompt without a newline on a terminal; into a pipe or a file, the status line
    on a line of its own, and only when it changed."""
    if sys.stdout.isatty():
        sys.stdout.write(text)
    elif not text.startswith("\r") and text != _last_status[0]:
        _last_status[0] = text
        sys.stdout.write(text.rstrip(" >") + "\n")
    sys.stdout.flush()


async def _first(*aws: Any) -> set[asyncio.Future[Any]]:
    """Wait until the first of these awaitables finishes, cancel the others, return the
    finished ones."""
    tasks = [asyncio.ensure_future(a) for a in aws]
    done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    for task in pending:
        task.cancel()
    return done
