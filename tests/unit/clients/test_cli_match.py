"""The terminal client's ``match`` and ``cancel``: what is typed, what is sent, what is
shown (queued, matched, cancelled)."""

from __future__ import annotations

import pytest

from clients.cli import render
from clients.cli.parse import Command, InputError, parse_command
from paiju import frames
from paiju.v1 import lobby_msgs_pb2 as lm
from tests.unit.clients.test_cli_app import make_app


@pytest.mark.parametrize("line, command", [
    ("match", Command("match", ("changsha", "1", "", ""))),
    ("match dadun", Command("match", ("dadun", "1", "", ""))),
    ("match 5", Command("match", ("changsha", "5", "", ""))),
    ("match XueZhan 2 ranked", Command("match", ("xuezhan", "2", "ranked", ""))),
    ("match ranked", Command("match", ("changsha", "1", "ranked", ""))),
    ("match dadun 2 with 1002", Command("match", ("dadun", "2", "", "1002"))),
    ("match with 1002,1003", Command("match", ("changsha", "1", "", "1002,1003"))),
    ("cancel", Command("cancel")),
])
def test_match_takes_a_game_a_stake_and_ranked(line: str, command: Command) -> None:
    assert parse_command(line, default_game="changsha") == command


@pytest.mark.parametrize("line", ["match poker", "match xuezhan 0", "match 2 3",
                                  "match xuezhan 2 ranked extra", "match with",
                                  "match with 1,2,3", "match with x", "match with 0"])
def test_bad_match_commands_say_how(line: str) -> None:
    with pytest.raises(InputError):
        parse_command(line)


async def test_match_sends_the_ticket_and_shows_the_wait() -> None:
    app, session, out = make_app()
    session.reply = frames.server_frame(lm.MatchQueued(
        ticket_id="t1", game="dadun", stake=2, ranked=True, waiting=3,
        estimated_wait_ms=4200))
    await app.handle_line("match dadun 2 ranked with 1002")
    assert session.sent[-1].ask_match == lm.AskMatch(game="dadun", stake=2, ranked=True,
                                                     party=[1002])
    assert out[-1] == ("looking for a ranked dadun match, stake 2: 3 waiting, about 4 s "
                       "('cancel' to stop)")
    session.reply = frames.server_frame(lm.MatchCancelled(
        ticket_id="t1", reason=lm.MatchCancelled.CANCELLED, message="cancelled"))
    await app.handle_line("cancel")
    assert session.sent[-1].HasField("cancel_match")
    assert out[-1] == "match request cancelled"


def test_outcomes_read_as_such() -> None:
    found = frames.server_frame(lm.MatchFound(ticket_id="t", room_id=300123, seat=2,
                                              robots=1, waited_ms=2500))
    assert render.match_line(found) == ("matched after 2.5 s: room 300123, seat 2, 1 robot; "
                                        "type 'ready'")
    timeout = frames.server_frame(lm.MatchCancelled(
        reason=lm.MatchCancelled.TIMEOUT, message="no match in time: ask again"))
    assert render.match_line(timeout) == "match request timed out: no match in time: ask again"
