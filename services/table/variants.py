"""The table's side of each game, keyed by the proto ``Game`` enum: its rules
(:mod:`games.registry`), its codec module (client frames <-> engine actions and events, the
game-info frame of a snapshot) and its error-code range.

Adding a game on the table's side is one :class:`TableGame` in ``_GAMES`` plus its codec
module (``services/table/codec_<family>.py``); everything else looks the game up here.
"""

from __future__ import annotations

from dataclasses import dataclass

from games import registry
from games.registry import GameSpec
from paiju.v1 import common_pb2
from services.table import codec_dadun, codec_doudizhu, codec_mahjong
from services.table.wire import GameCodec


@dataclass(frozen=True, slots=True)
class TableGame:
    game_type: common_pb2.Game
    spec: GameSpec          # engine, bots, timers, options
    codec: GameCodec
    errors: tuple[range, ...]   # the game's ErrorCode ranges (the seed's convention)

    @property
    def name(self) -> str:
        return self.spec.name

    def error_code(self, reason: str) -> int:
        """The numeric code (this game's range) of an engine ``RuleError.code``."""
        return self.codec.ERROR_CODES.get(reason, self.codec.DEFAULT_ERROR)


# XueZhan's range (9690-9699) also serves Changsha rooms for the shared mahjong reasons.
_GAMES = (
    TableGame(common_pb2.XUEZHAN, registry.by_type(common_pb2.XUEZHAN), codec_mahjong,
              (range(9690, 9700),)),
    TableGame(common_pb2.CHANGSHA, registry.by_type(common_pb2.CHANGSHA), codec_mahjong,
              (range(9690, 9700), range(9790, 9800))),
    TableGame(common_pb2.DADUN, registry.by_type(common_pb2.DADUN), codec_dadun,
              (range(9890, 9900),)),
    TableGame(common_pb2.DOUDIZHU, registry.by_type(common_pb2.DOUDIZHU), codec_doudizhu,
              (range(9990, 10000),)),
)
_BY_TYPE: dict[int, TableGame] = {g.game_type: g for g in _GAMES}
_BY_NAME = {g.name: g for g in _GAMES}


def by_type(game_type: int) -> TableGame | None:
    """The game of a ``Game`` enum value, or None (unknown, GAME_UNSPECIFIED)."""
    return _BY_TYPE.get(game_type)


def get(name: str) -> TableGame:
    """The game of a canonical name (as room log records and rooms hold it)."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown game {name!r}; known: {', '.join(_BY_NAME)}") from None


def all_games() -> tuple[TableGame, ...]:
    return _GAMES
