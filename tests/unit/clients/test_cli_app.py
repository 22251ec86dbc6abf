"""The client loop without a network: a fake lobby session records what the app sends and
answers with canned frames; pushes are fed to the app as the lobby would push them."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from clients.cli.app import CliApp, Options
from clients.session import GaveUp
from games.dadun import game as dadun
from games.mahjong import changsha, xuezhan
from paiju import frames
from paiju.v1 import client_pb2, common_pb2
from paiju.v1 import game_msgs_pb2 as g
from paiju.v1 import lobby_msgs_pb2 as lm


class FakeSession:
    """Answers every request with ``reply`` (an ok Return unless told otherwise). A stream
    that ends (None pushed) is taken back by ``reconnect`` with the next of ``logins`` (a
    LoginOk frame); with none left, no lobby takes it back (GaveUp)."""

    def __init__(self) -> None:
        self.sent: list[client_pb2.ClientFrame] = []
        self.reply: client_pb2.ServerFrame = frames.ok_frame(0)
        self.pushes: asyncio.Queue[client_pb2.ServerFrame | None] = asyncio.Queue()
        self.kicked = False
        self.address = "127.0.0.1:1"
        self.logins: list[client_pb2.ServerFrame] = []
        self.tokens: list[str] = []

    async def reconnect(self, token: Any, **fields: Any) -> client_pb2.ServerFrame:
        self.tokens.append(token())
        if not self.logins:
            raise GaveUp("no lobby took the session back in 60 s")
        return self.logins.pop(0)

    async def request(self, payload: Any, timeout: float = 15) -> client_pb2.ServerFrame:
        frame = payload if isinstance(payload, client_pb2.ClientFrame) else frames.client_frame(payload)
        self.sent.append(frame)
        return self.reply

    async def send(self, payload: Any) -> int:
        frame = payload if isinstance(payload, client_pb2.ClientFrame) else frames.client_frame(payload)
        self.sent.append(frame)
        return len(self.sent)


def make_app(**options: Any) -> tuple[CliApp, FakeSession, list[str]]:
    out: list[str] = []
    app = CliApp(Options(**options), out=out.append)
    app.session = FakeSession()  # type: ignore[assignment]
    return app, app.session, out  # type: ignore[return-value]


def seat_in_room(app: CliApp, game: int, total_hands: int = 2) -> None:
    room = common_pb2.RoomInfo(room_id=111111, game=game, total_hands=total_hands,
                               players=[common_pb2.PlayerInfo(user_id=1001, seat=0)])
    app._on_push(frames.server_frame(lm.RoomJoined(room=room, seat=0)))


def prompt_frame(game: str, state: Any, seat: int) -> client_pb2.ServerFrame:
    return frames.server_frame(g.Prompt(
        game=game, phase=state.phase(), seat=seat, seconds=8, hand_no=1,
        observation_json=json.dumps(state.observation(seat)),
        actions=[g.ActionSpec(kind=a.kind, tiles=list(a.tiles), ref=a.ref, choice=a.choice)
                 for a in state.legal_actions(seat)]))


async def test_typed_shorthand_sends_the_mahjong_action_of_the_prompt() -> None:
    app, session, out = make_app(game="changsha")
    seat_in_room(app, common_pb2.CHANGSHA)
    state = changsha.new_hand({}, 5, 0)
    app._on_push(prompt_frame("changsha", state, 0))
    assert any(line.startswith(">> your decision (seat 0, play), 8 s left") for line in out)
    tile = state.legal_actions(0)[0].tiles[0]
    assert await app.handle_line(f"d {tile}")
    sent = session.sent[-1]
    assert sent.WhichOneof("payload") == "mahjong_action"
    assert (sent.mahjong_action.kind, list(sent.mahjong_action.tiles)) == ("discard", [tile])
    assert app.at.prompt is None, "an answered prompt is not answered twice"


async def test_a_refused_action_prints_the_error_code_and_message() -> None:
    app, session, out = make_app()
    state = xuezhan.new_hand({}, 5, 0)
    app._on_push(prompt_frame("xuezhan", state, 0))
    session.reply = frames.error_frame(common_pb2.MJ_STALE_WINDOW, "that window is closed")
    await app.handle_line("1")
    assert out[-1] == "error 9692: that window is closed"


async def test_auto_answers_dadun_prompts_with_the_out_token() -> None:
    app, session, out = make_app(auto=True, game="dadun")
    seat_in_room(app, common_pb2.DADUN)
    state = dadun.new_hand({}, 5, 0)
    state.apply(0, next(a for a in state.legal_actions(0) if a.choice == "no"))
    while state.phase() != "play":
        seat = state.to_act()[0]
        state.apply(seat, state.legal_actions(seat)[0])
    seat = state.to_act()[0]
    await session.pushes.put(prompt_frame("dadun", state, seat))
    await session.pushes.put(None)
    await app._pushes()
    sent = session.sent[-1]
    assert sent.WhichOneof("payload") == "dd_ask_out"
    assert sent.dd_ask_out.token == state.observation(seat)["token"]
    assert any(line.startswith("you: ") for line in out)
    assert app.done.is_set(), "a closed stream ends the client"


async def test_hand_over_prints_the_settlement_with_the_hand_payments_then_readies() -> None:
    app, session, out = make_app(auto=True)
    seat_in_room(app, common_pb2.XUEZHAN, total_hands=2)
    app.at.hand_no = 1
    pay = common_pb2.Payment(reason="discard_win", payer=2, payee=0, amount=4)
    over = {"reason": "three_won", "deltas": [4, 0, -4, 0], "winners": [0], "next_dealer": 0,
            "hands": ["11m", "22m", "33m", "44m"]}
    for frame in (frames.server_frame(g.MjPayment(payment=pay)),
                  frames.server_frame(g.MjHandOver(details_json=json.dumps(over))), None):
        await session.pushes.put(frame)
    await app._pushes()
    text = "\n".join(out)
    assert "=== settlement (结算): hand 1 over, three_won" in text
    assert "deltas: you +4, seat 1 +0, seat 2 -4, seat 3 +0" in text
    assert "  seat 2 pays you 4 (discard_win)" in text
    assert app.at.payments == [], "payments start empty for the next hand"
    assert session.sent[-1].WhichOneof("payload") == "ask_ready"


async def test_no_ready_after_the_last_hand_and_the_dismiss_frees_the_seat() -> None:
    app, session, out = make_app(auto=True)
    seat_in_room(app, common_pb2.XUEZHAN, total_hands=1)
    app.at.hand_no = 1
    over = {"deltas": [0, 0, 0, 0]}
    for frame in (frames.server_frame(g.MjHandOver(details_json=json.dumps(over))),
                  frames.server_frame(lm.NoticeDismiss(dismissed=True, room_id=111111,
                                                       reason=lm.NoticeDismiss.ALL_HANDS_PLAYED)),
                  None):
        await session.pushes.put(frame)
    await app._pushes()
    assert not any(f.WhichOneof("payload") == "ask_ready" for f in session.sent)
    assert app.room_closed.is_set() and app.at.room is None and app.at.seat == -1


async def test_commands_send_their_frames_and_replies_are_shown() -> None:
    app, session, out = make_app()
    session.reply = frames.server_frame(lm.RoomJoined(room=common_pb2.RoomInfo(
        room_id=222222, game=common_pb2.DADUN, total_hands=3), seat=0))
    await app.handle_line("create dadun 3")
    create = session.sent[-1].create_room
    assert (create.game, create.total_hands) == (common_pb2.DADUN, 3)
    assert app.at.room is not None and app.at.room.room_id == 222222
    session.reply = frames.ok_frame(0)
    for line, payload in (("ready", "ask_ready"), ("vote no", "report_dismiss"),
                          ("dismiss", "ask_dismiss"), ("entrust-cancel", "cancel_entrust"),
                          ("chat hi all", "chat"), ("geo", "ask_geo"), ("join 5 pw", "join_room")):
        await app.handle_line(line)
        assert session.sent[-1].WhichOneof("payload") == payload, line
    assert session.sent[-3].chat.content == "hi all"
    assert session.sent[-1].join_room.password == "pw"
    await app.handle_line("frobnicate")
    assert out[-1] == "? unknown command 'frobnicate'; type 'help'"
    assert not await app.handle_line("quit")


async def test_robots_need_a_room_first() -> None:
    app, session, out = make_app()
    await app.handle_line("robots")
    assert out[-1].startswith("? robots join your room")
    assert app.robots == []


async def test_robots_fill_only_the_free_seats_of_the_room(monkeypatch: Any) -> None:
    joined: list[tuple[int, str, int]] = []

    class FakeRobot:
        def __init__(self, address: str, uid: int, game: str, secret: str, *, room_id: int,
                     ca_file: str | None = None, tls: bool = False) -> None:
            joined.append((uid, game, room_id))
            assert (ca_file, tls) == ("ca.pem", False)   # the person's TLS settings

        async def run(self) -> None:
            return None

    monkeypatch.setattr("clients.cli.app.Robot", FakeRobot)
    app, session, out = make_app(robots=3, ca="ca.pem")
    seat_in_room(app, common_pb2.DADUN)
    await app.handle_line("robots 5")
    await asyncio.gather(*app.robots)
    assert joined == [(100101, "dadun", 111111), (100102, "dadun", 111111),
                      (100103, "dadun", 111111)]
    assert app.at.room is not None
    app.at.room.players.extend(common_pb2.PlayerInfo(user_id=u) for u, _, _ in joined)
    await app.handle_line("robots")
    assert out[-1] == "? room 111111 has no free seat"
    assert len(joined) == 3


async def test_a_lost_stream_is_taken_back_and_the_seat_resumed_then_readied() -> None:
    app, session, out = make_app(auto=True)
    seat_in_room(app, common_pb2.XUEZHAN, total_hands=3)
    room = common_pb2.RoomInfo(room_id=111111, game=common_pb2.XUEZHAN, total_hands=3,
                               cur_hand=1, status=common_pb2.ROOM_HAND_OVER,
                               players=[common_pb2.PlayerInfo(user_id=1001, seat=0)])
    session.logins.append(frames.server_frame(lm.LoginOk(
        player=common_pb2.PlayerInfo(user_id=1001, seat=0), room=room)))
    for frame in (frames.server_frame(lm.Reconnect(reason="draining", after_ms=10)), None,
                  frames.server_frame(lm.RoomJoined(room=room, seat=0)), None):
        await session.pushes.put(frame)
    await app._pushes()
    assert len(session.tokens) == 2 and session.tokens[0].startswith("1001.")
    assert "lost the lobby at 127.0.0.1:1: reconnecting..." in out
    assert "reconnected to 127.0.0.1:1" in out
    # the snapshot shows the room between hands and us not ready: ready again
    assert [f.WhichOneof("payload") for f in session.sent] == ["ask_ready"]
    assert out[-2].startswith("could not reconnect: no lobby took the session back")
    assert out[-1] == "the lobby closed the connection" and app.done.is_set()


async def test_a_kicked_session_is_not_taken_back() -> None:
    app, session, out = make_app()
    session.kicked = True
    session.logins.append(frames.server_frame(lm.LoginOk()))
    await session.pushes.put(None)
    await app._pushes()
    assert session.tokens == [] and app.done.is_set()


async def test_a_room_that_ended_while_away_frees_the_seat() -> None:
    app, session, out = make_app()
    seat_in_room(app, common_pb2.DADUN)
    session.logins.append(frames.server_frame(lm.LoginOk(
        player=common_pb2.PlayerInfo(user_id=1001, seat=-1))))
    session.reply = frames.server_frame(lm.UseHistoryScore(room_id=111111, items=[
        lm.HistoryScoreItem(user_id=1001, scores=[3, -1])]))
    await session.pushes.put(None)
    await session.pushes.put(None)
    await app._pushes()
    assert "room 111111 ended while you were away" in out
    assert app.at.room is None and app.room_closed.is_set()
    asked = session.sent[-1]
    assert asked.WhichOneof("payload") == "ask_history_score"
    assert asked.ask_history_score.room_id == 111111   # how it ended, as records has it
    at = out.index("room 111111's scores:")
    assert out[at + 1] == "  1001: +3 -1 = +2"
