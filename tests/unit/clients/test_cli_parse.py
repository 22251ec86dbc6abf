"""What a person types: loop commands and answers to a Prompt (numbers and shorthands)."""

from __future__ import annotations

import pytest

from clients.cli.parse import Command, InputError, choose_action, parse_command, split_tiles
from paiju.v1 import game_msgs_pb2 as g


def specs(*items: tuple[str, list[str], str, str]) -> list[g.ActionSpec]:
    return [g.ActionSpec(kind=k, tiles=t, ref=r, choice=c) for k, t, r, c in items]


MJ_TURN = specs(("discard", ["5m"], "", ""), ("discard", ["7p"], "", ""),
                ("angang", ["9s"], "", ""), ("hu", [], "", ""))
MJ_WINDOW = specs(("pass", [], "4", ""), ("peng", ["6m"], "4", ""), ("zhigang", ["6m"], "4", ""),
                  ("chi", ["4m", "5m"], "4", ""), ("chi", ["7m", "8m"], "4", ""))
DD_PLAY = specs(("play", ["3s"], "t.1", ""), ("play", ["3s", "3s"], "t.1", ""),
                ("play", ["SJ", "BJ"], "t.1", ""), ("pass", [], "t.1", ""))


@pytest.mark.parametrize(("line", "expected"), [
    ("list", Command("list")),
    ("create dadun 2", Command("create", ("dadun", "2"))),
    ("create 3", Command("create", ("xuezhan", "3"))),
    ("create", Command("create", ("xuezhan",))),
    ("quick changsha", Command("quick", ("changsha",))),
    ("join 123456 secret", Command("join", ("123456", "secret"))),
    ("robots", Command("robots")),
    ("robots 2", Command("robots", ("2",))),
    ("chat  hello  there ", Command("chat", ("hello  there",))),
    ("vote YES", Command("vote", ("yes",))),
    ("entrust-cancel", Command("entrust-cancel")),
    ("QUIT", Command("quit")),
])
def test_commands_parse(line: str, expected: Command) -> None:
    assert parse_command(line) == expected


def test_default_game_fills_create_and_quick() -> None:
    assert parse_command("quick", default_game="dadun") == Command("quick", ("dadun",))


@pytest.mark.parametrize("line", ["create poker", "create xuezhan zero", "join", "join abc",
                                  "vote maybe", "chat", "robots -1", "quick dadun 3",
                                  "join \u00b2", "robots \u00b2", "create xuezhan \u00b2",
                                  "create \u00b2"])
def test_bad_command_arguments_say_why(line: str) -> None:
    with pytest.raises(InputError):
        parse_command(line)


def test_a_game_answer_is_no_command() -> None:
    assert parse_command("d 5m") is None
    assert parse_command("3") is None
    assert parse_command("") is None


def test_tiles_split_in_every_spelling() -> None:
    assert split_tiles("123m 55p") == ["1m", "2m", "3m", "5p", "5p"]
    assert split_tiles("3s3s") == ["3s", "3s"]
    assert split_tiles("Th SJ") == ["Th", "SJ"]


def test_numbers_pick_from_the_printed_list() -> None:
    assert choose_action("1", "xuezhan", MJ_TURN) == 0
    assert choose_action("4", "xuezhan", MJ_TURN) == 3
    with pytest.raises(InputError, match="from 1 to 4"):
        choose_action("5", "xuezhan", MJ_TURN)
    with pytest.raises(InputError, match="from 1 to 4"):
        choose_action("0", "xuezhan", MJ_TURN)
    with pytest.raises(InputError):  # '²' is a digit to str.isdigit, not to int()
        choose_action("\u00b2", "xuezhan", MJ_TURN)


def test_mahjong_shorthands() -> None:
    assert choose_action("d 7p", "xuezhan", MJ_TURN) == 1
    assert choose_action("discard 5m", "xuezhan", MJ_TURN) == 0
    assert choose_action("h", "xuezhan", MJ_TURN) == 3
    assert choose_action("g", "xuezhan", MJ_TURN) == 2
    assert choose_action("p", "xuezhan", MJ_WINDOW) == 1
    assert choose_action("x", "xuezhan", MJ_WINDOW) == 0
    assert choose_action("pass", "xuezhan", MJ_WINDOW) == 0
    assert choose_action("c 78m", "changsha", MJ_WINDOW) == 4


def test_mahjong_shorthands_that_do_not_fit_say_why() -> None:
    with pytest.raises(InputError, match="add the tiles"):
        choose_action("d", "xuezhan", MJ_TURN)
    with pytest.raises(InputError, match="no legal 'd' with '9m'"):
        choose_action("d 9m", "xuezhan", MJ_TURN)
    with pytest.raises(InputError, match="not a legal action"):
        choose_action("p", "xuezhan", MJ_TURN)
    with pytest.raises(InputError, match="nothing to decide"):
        choose_action("1", "xuezhan", [])


def test_dadun_shorthands() -> None:
    assert choose_action("p 3s3s", "dadun", DD_PLAY) == 1
    assert choose_action("play SJ BJ", "dadun", DD_PLAY) == 2
    assert choose_action("x", "dadun", DD_PLAY) == 3
    alone = specs(("choose_alone", [], "", "yes"), ("choose_alone", [], "", "no"))
    assert choose_action("alone no", "dadun", alone) == 1
    assert choose_action("a yes", "dadun", alone) == 0
    void = specs(("declare_void", [], "", "m"), ("declare_void", [], "", "p"))
    assert choose_action("v p", "xuezhan", void) == 1
