"""The terminal client's ``rating`` and ``top``: what is typed, what is sent, what is shown."""

from __future__ import annotations

import pytest

from clients.cli import render
from clients.cli.parse import Command, InputError, parse_command
from paiju import frames
from paiju.v1 import lobby_msgs_pb2 as lm
from tests.unit.clients.test_cli_app import make_app


@pytest.mark.parametrize("line, command", [
    ("rating", Command("rating", ("changsha", "0"))),
    ("rating dadun", Command("rating", ("dadun", "0"))),
    ("rating now", Command("rating", ("changsha", "now"))),
    ("top XueZhan 3", Command("top", ("xuezhan", "3"))),
])
def test_rating_and_top_take_a_game_and_a_season(line: str, command: Command) -> None:
    assert parse_command(line, default_game="changsha") == command


@pytest.mark.parametrize("line", ["rating poker", "top xuezhan soon", "rating 1 2",
                                  "top xuezhan -1"])
def test_bad_rating_commands_say_how(line: str) -> None:
    with pytest.raises(InputError):
        parse_command(line)


async def test_rating_sends_the_scope_and_shows_the_answer() -> None:
    app, session, out = make_app()
    session.reply = frames.server_frame(lm.RatingInfo(
        user_id=1001, game="xuezhan", rated=True, mu=27.84, sigma=8.26, score=3.06, hands=1,
        rank=2))
    await app.handle_line("rating xuezhan now")
    assert session.sent[-1].ask_rating == lm.AskRating(game="xuezhan", current_season=True)
    assert out[-1] == "xuezhan, all-time: 27.8 ± 8.3 (score 3.1), rank 2, 1 hand"


async def test_top_sends_the_first_ten_and_lists_them() -> None:
    app, session, out = make_app()
    session.reply = frames.server_frame(lm.Leaderboard(game="dadun", season=2, total=7, entries=[
        lm.RatingInfo(user_id=7, rated=True, mu=30.0, sigma=2.0, score=24.0, hands=40, rank=1),
        lm.RatingInfo(user_id=8, rated=True, mu=29.0, sigma=2.0, score=23.0, hands=9, rank=2)]))
    await app.handle_line("top dadun 2")
    assert session.sent[-1].ask_leaderboard == lm.AskLeaderboard(game="dadun", season=2,
                                                                  limit=10)
    assert out[-3:] == ["dadun leaderboard, season 2 (7 players):",
                        "     1. 7              24.0  (30.0 ± 2.0, 40 hands)",
                        "     2. 8              23.0  (29.0 ± 2.0, 9 hands)"]


def test_not_rated_and_empty_boards_read_as_such() -> None:
    assert render.rating_line(lm.RatingInfo(game="changsha", season=1)) == (
        "changsha, season 1: not rated yet (play a hand)")
    assert render.leaderboard_lines(lm.Leaderboard(game="xuezhan")) == [
        "xuezhan leaderboard, all-time (0 players):", "  nobody rated yet"]
