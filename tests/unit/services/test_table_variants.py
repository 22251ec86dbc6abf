"""The table's game registry (services/table/variants.py): one entry per proto Game, each
with the games registry's rules, its codec and its error-code range."""

from __future__ import annotations

import pytest

from games import registry
from games.engine import Action, RuleError
from paiju.v1 import client_pb2, common_pb2
from paiju.v1 import game_msgs_pb2 as g
from services.table import logrec as lr
from services.table import variants
from services.table.room import Room


def test_every_game_of_the_proto_has_one_table_entry_and_its_rules() -> None:
    types = [v for v in common_pb2.Game.values() if v != common_pb2.GAME_UNSPECIFIED]
    assert sorted(g.game_type for g in variants.all_games()) == sorted(types)
    for game in variants.all_games():
        assert game.spec is registry.by_type(game.game_type)
        assert variants.get(game.name) is game and variants.by_type(game.game_type) is game
    assert variants.by_type(common_pb2.GAME_UNSPECIFIED) is None


@pytest.mark.parametrize("game", [g.name for g in variants.all_games()])
def test_a_games_rule_errors_map_into_its_own_range(game: str) -> None:
    entry = variants.get(game)
    for reason in (*entry.codec.ERROR_CODES, "something_new"):
        assert any(entry.error_code(reason) in span for span in entry.errors), reason


def test_a_codec_takes_only_its_own_games_frames() -> None:
    mj = client_pb2.ClientFrame(mahjong_action=g.MahjongAction(kind="discard", tiles=["5m"]))
    dd = client_pb2.ClientFrame(dd_ask_out=g.DdAskOut(is_skip=True, token="t1"))
    assert variants.get("xuezhan").codec.action(mj) == Action("discard", ("5m",))
    assert variants.get("xuezhan").codec.action(dd) is None
    assert variants.get("dadun").codec.action(dd) == Action("pass", ref="t1")
    assert variants.get("dadun").codec.action(mj) is None


def test_a_create_record_for_every_game_makes_a_room_whose_engine_deals() -> None:
    for game in variants.all_games():
        room = Room(lr.Create(1, game.name))
        try:
            state = game.spec.new_hand(room.engine_options, 1, 0)
        except RuleError as err:  # pragma: no cover - a registry entry without defaults
            raise AssertionError(f"{game.name}: {err}") from None
        assert state.deal_events()


def test_a_rooms_rules_read_as_words_not_json() -> None:
    from services.table.creation import describe

    text = describe("changsha", {"birds": 2, "zhuang_xian": True, "double_kong": False}, 8, 2)
    assert text == "Changsha (长沙麻将), 8 hands, base 2, birds 2, no double kong, zhuang xian"
    assert "{" not in text and describe("dadun", {}, 4, 1) == "Dadun (崇仁打盾), 4 hands, base 1"
