"""The terminal client's parts of a game that has its own: ``clients/cli/games/<name>.py``,
found by the game's registry name (adding a game adds its module here, no edit elsewhere).
The mahjong variants and Dadun are drawn by render.py and render_events.py themselves.

A game module offers:

* ``observation_lines(obs, me) -> list[str]`` - the table as seat ``me`` sees it;
* ``event_line(kind, data, me) -> str | None`` - one line for a ``GameEvent`` of the game
  (None: nothing to show);
* ``settlement_lines(over, me) -> list[str]`` - the game's part of a hand's result;
* ``ALIASES`` - typed shorthand -> the action kinds it may mean;
* ``DECISION_ENDS`` - event kinds that end the decision of the seat they name.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from functools import cache
from types import ModuleType
from typing import Any, Protocol, cast


class GameUI(Protocol):
    ALIASES: Mapping[str, Sequence[str]]
    DECISION_ENDS: frozenset[str]

    def observation_lines(self, obs: Mapping[str, Any], me: int) -> list[str]: ...

    def event_line(self, kind: str, data: Mapping[str, Any], me: int) -> str | None: ...

    def settlement_lines(self, over: Mapping[str, Any], me: int) -> list[str]: ...


@cache
def game_ui(game: str) -> GameUI | None:
    """The module ``clients.cli.games.<game>``, or None when the game has none."""
    if not game.isidentifier():
        return None
    name = f"{__name__}.{game}"
    try:
        module: ModuleType = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name == name:
            return None
        raise
    return cast(GameUI, module)
