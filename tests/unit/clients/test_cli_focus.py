"""The terminal keeps the player's own room in focus: a status line as the input prompt
(room, seat, whose move, entrust always shown), other rooms' changes summarised instead of
streamed, and one same-IP alert per room instead of one per pair of players."""

from __future__ import annotations

from typing import Any

from clients.cli.app import CliApp, Options
from clients.cli.focus import SUMMARY_SECONDS, Focus
from paiju import frames
from paiju.v1 import common_pb2
from paiju.v1 import game_msgs_pb2 as g
from paiju.v1 import lobby_msgs_pb2 as lm

PLAYERS = [common_pb2.PlayerInfo(user_id=1001 + i, seat=i, nickname=f"p{i}") for i in range(4)]


def interactive_app() -> tuple[CliApp, list[str], list[str]]:
    out: list[str] = []
    prompts: list[str] = []
    app = CliApp(Options(), out=out.append, show_prompt=prompts.append)
    app.interactive = True
    return app, out, prompts


def push(app: CliApp, message: Any) -> None:
    app._on_push(frames.server_frame(message))


def seat(app: CliApp) -> None:
    room = common_pb2.RoomInfo(room_id=424242, game=common_pb2.XUEZHAN, total_hands=4,
                               players=PLAYERS)
    push(app, lm.RoomJoined(room=room, seat=0))


def test_other_rooms_changes_are_summarised_at_the_prompt_not_streamed() -> None:
    app, out, prompts = interactive_app()
    for i in range(5):
        push(app, lm.RoomChange(reason=lm.RoomChange.CREATED, room=common_pb2.RoomInfo(room_id=10 + i)))
    push(app, lm.RoomChange(reason=lm.RoomChange.STARTED, room=common_pb2.RoomInfo(room_id=10)))
    assert out == []
    app.show_prompt()
    assert out == ["(room list: 5 created, 1 started in 5 rooms; 'list' shows them)"]
    assert prompts[-1] == "[lobby] > "
    push(app, lm.RoomChange(reason=lm.RoomChange.DISMISSED, room=common_pb2.RoomInfo(room_id=11)))
    app.show_prompt()   # within SUMMARY_SECONDS of the last summary: nothing yet
    assert len(out) == 1


def test_a_summary_waits_its_interval_and_a_list_clears_it() -> None:
    f = Focus()
    f.room_change(lm.RoomChange(reason=lm.RoomChange.UPDATED, room=common_pb2.RoomInfo(room_id=1)))
    assert f.room_summary(now=SUMMARY_SECONDS + 1) == "(room list: 1 updated in 1 room; 'list' shows them)"
    f.room_change(lm.RoomChange(reason=lm.RoomChange.UPDATED, room=common_pb2.RoomInfo(room_id=1)))
    assert f.room_summary(now=SUMMARY_SECONDS + 2) is None
    f.clear_changes()
    assert f.room_summary(force=True) is None


def test_one_same_ip_alert_per_room_then_one_line_naming_all() -> None:
    app, out, _ = interactive_app()
    seat(app)
    out.clear()
    pairs = [(1002, 1001), (1003, 1001), (1003, 1002), (1004, 1001), (1004, 1002), (1004, 1003)]
    for a, b in pairs:
        push(app, lm.DistanceAlert(alert=f"p{a - 1001} and p{b - 1001} share an IP address",
                                   user_ids=[a, b]))
    assert len(out) == 1 and out[0].startswith("geo alert (同IP): p1 and p0 share an IP address")
    push(app, g.MjDeal(dealer=0, wall_remaining=55, hand_no=1))
    assert out[-1] == "geo alert (同IP): p0, p1, p2, p3 share an IP address"
    assert "same IP: 4" in app.focus.status(app.at.room, 0, False)
    push(app, lm.DistanceAlert(alert="p1 and p2 are within 100m", user_ids=[1002, 1003]))
    assert out[-1] == "geo alert (距离警告): p1 and p2 are within 100m"


def test_the_status_prompt_always_shows_entrust() -> None:
    app, out, prompts = interactive_app()
    seat(app)
    app.show_prompt()
    assert prompts[-1] == "[room 424242 xuezhan hand 0/4 · seat 0 · entrust off] > "
    push(app, lm.InEntrust(seat=0, count=1))
    app.show_prompt()
    assert "托管 entrust ON, 1 cancels left: 'entrust-cancel'" in prompts[-1]
    push(app, g.Prompt(game="xuezhan", phase="play", seat=0, hand_no=1, seconds=5,
                       actions=[g.ActionSpec(kind="discard", tiles=["5m"])]))
    assert out[-1] == "entrust (托管) plays this for you: type 'entrust-cancel' to take over"
    app.show_prompt()
    assert "hand 1/4 · seat 0 · your move · 托管 entrust ON" in prompts[-1]
    push(app, lm.InEntrust(seat=2, count=1))          # another seat: not ours
    push(app, lm.CancelEntrustDone(seat=0))
    app.show_prompt()
    assert prompts[-1].endswith("entrust off] > ")


def test_output_erases_the_prompt_first_and_scripts_get_no_prompt() -> None:
    app, out, prompts = interactive_app()
    app.show_prompt()
    app.out("hello")
    assert prompts == ["[lobby] > ", "\r\033[K"] and out == ["hello"]
    quiet: list[str] = []
    scripted = CliApp(Options(script=["list"]), out=lambda _: None, show_prompt=quiet.append)
    scripted.show_prompt()
    assert quiet == []
