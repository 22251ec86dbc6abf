"""The one list of games: what the rest of the project needs to know about each variant.

Adding a game is one ``_spec(...)`` line in ``_SPECS`` (plus its engine module with ``NAME``,
``DEFAULT_OPTIONS``, ``new_hand``, ``deserialize``, ``parse_options``, a bots module, and on the
table's side its entry in ``services/table/variants.py``). Everything else - the table's rooms and entrust, robots, the command
line client, tools - looks a game up here instead of naming it.

API (all a caller needs)::

    from games import registry

    spec = registry.get("xuezhan")        # by name; KeyError names the known games
    spec = registry.by_type(1)            # by the paiju.v1.Game enum number (proto)
    for spec in registry.all(): ...       # every game, in enum order

    state = spec.new_hand(spec.parse_options(given), seed, dealer)
    action = spec.greedy_policy(state, seat)          # entrust (托管), timeouts, robots
    action = spec.random_policy(view, seat, stream)   # load tests, conformance
    spec.timer_of(state.phase())          # "turn_seconds" / "window_seconds" / "alone_seconds"

``game_type`` is the number of the ``Game`` enum in ``protos/paiju/v1/common.proto`` as a
plain int (``games/`` never imports protobuf); ``tests/unit/test_architecture.py`` checks
that every enum value but 0 has exactly one spec here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol

from games.bots import dadun as dadun_bots
from games.bots import doudizhu as doudizhu_bots
from games.bots import mahjong as mahjong_bots
from games.bots.view import PlayerView
from games.dadun import game as dadun
from games.doudizhu import game as doudizhu
from games.engine import Action, State
from games.fair import Seed
from games.mahjong import changsha, xuezhan
from games.rng import Stream

# The table's decision timers (room options of these names set their length in seconds).
TURN, WINDOW, ALONE = "turn_seconds", "window_seconds", "alone_seconds"
TIMERS = (TURN, WINDOW, ALONE)


def _frozen(mapping: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(mapping))


@dataclass(frozen=True, slots=True)
class GameSpec:
    """Static facts of one game (OpenSpiel's "game" as opposed to a state).

    * ``name`` - the canonical name ("xuezhan", "changsha", "dadun"); ``title`` for people.
    * ``game_type`` - the ``paiju.v1.Game`` enum number.
    * ``family`` - "mahjong" (tiles, response windows) or "dadun" (cards, out-tokens).
    * ``new_hand(options, seed, dealer)`` / ``deserialize(text)`` - the engine (a
      :class:`games.engine.State`).
    * ``default_options`` / ``parse_options(given)`` - the option schema: every key with its
      default, and the full validated dict (``BadInput`` on an unknown key or bad value).
    * ``greedy_policy(view, seat)`` / ``random_policy(view, seat, stream)`` - the bots
      (:mod:`games.bots`) that entrust, timeouts and robots play.
    * ``phase_timers`` - which table timer a phase runs (phases not listed: ``TURN``);
      ``option_timers`` - the game's own option names for the table's timers (Dadun's
      ``play_timeout_s``); ``simultaneous`` - phases in which every listed seat answers at
      once (one answer does not start a new decision for the others).
    * ``seats`` - players at a table (4; Dou Dizhu 3).
    * ``sides`` - a hand is won by sides its settlement details name (Dadun: ``alone_seat``,
      or ``banker`` and ``friend_seat``, against the rest): ratings rank the sides, not
      the seats (services/records/rating.py).
    * ``deal_layout(seed)`` - what a replay stores of the hand's shuffle, ``{"wall": tile
      names}`` or ``{"deck": card names}`` (docs/fairness.md), for the deal's verification.
    """

    name: str
    title: str
    game_type: int
    family: str
    new_hand: Callable[[Mapping[str, Any], Seed, int], State]  # Seed: games.fair
    deserialize: Callable[[str], State]
    default_options: Mapping[str, Any]
    parse_options: Callable[[Mapping[str, Any]], dict[str, Any]]
    greedy_policy: Callable[[PlayerView, int], Action]
    random_policy: Callable[[PlayerView, int, Stream], Action]
    deal_layout: Callable[[Seed], Mapping[str, list[str]]]
    phase_timers: Mapping[str, str] = field(default_factory=lambda: _frozen({}))
    option_timers: Mapping[str, str] = field(default_factory=lambda: _frozen({}))
    simultaneous: frozenset[str] = frozenset()
    seats: int = 4
    sides: bool = False

    def timer_of(self, phase: str) -> str:
        """The table timer (one of ``TIMERS``) that a decision in ``phase`` runs."""
        return self.phase_timers.get(phase, TURN)


class _Engine(Protocol):
    """A variant module (``games.mahjong.xuezhan``, ``games.mahjong.changsha``,
    ``games.dadun.game``) as the registry reads it."""

    @property
    def NAME(self) -> str: ...

    @property
    def DEFAULT_OPTIONS(self) -> Mapping[str, Any]: ...

    def new_hand(self, options: Mapping[str, Any], seed: Seed, dealer: int) -> State: ...

    def deserialize(self, text: str) -> State: ...

    def parse_options(self, options: Mapping[str, Any]) -> dict[str, Any]: ...

    def deal_layout(self, seed: Seed) -> Mapping[str, list[str]]: ...


class _Bots(Protocol):
    """A policy module of :mod:`games.bots`."""

    def greedy_policy(self, state: PlayerView, seat: int) -> Action: ...

    def random_policy(self, state: PlayerView, seat: int, stream: Stream) -> Action: ...


def _spec(engine: _Engine, bots: _Bots, title: str, game_type: int, family: str,
          **timers: Any) -> GameSpec:
    return GameSpec(engine.NAME, title, game_type, family, engine.new_hand,
                    engine.deserialize, _frozen(engine.DEFAULT_OPTIONS), engine.parse_options,
                    bots.greedy_policy, bots.random_policy, engine.deal_layout, **timers)


_MAHJONG_TIMERS = _frozen({"window": WINDOW})
# XueZhan 换三张 and 定缺, Changsha 起手胡: every listed seat answers once, at the same time.
_MAHJONG_SIMULTANEOUS = frozenset({"exchange", "void", "opening"})

_SPECS = (
    _spec(xuezhan, mahjong_bots, "XueZhan (血战到底)", 1, "mahjong",
          phase_timers=_MAHJONG_TIMERS, simultaneous=_MAHJONG_SIMULTANEOUS),
    _spec(changsha, mahjong_bots, "Changsha (长沙麻将)", 2, "mahjong",
          phase_timers=_MAHJONG_TIMERS, simultaneous=_MAHJONG_SIMULTANEOUS),
    _spec(dadun, dadun_bots, "Dadun (崇仁打盾)", 3, "dadun",
          phase_timers=_frozen({"alone": ALONE}),
          option_timers=_frozen({TURN: "play_timeout_s", ALONE: "alone_timeout_s"}),
          sides=True),
    _spec(doudizhu, doudizhu_bots, "Dou Dizhu (斗地主)", 4, "doudizhu", seats=3,
          phase_timers=_frozen({"call": ALONE, "rob": ALONE}),  # bids: the one-seat yes/no timer
          option_timers=_frozen({TURN: "play_timeout_s", ALONE: "bid_timeout_s"})),
)
_BY_NAME = {spec.name: spec for spec in _SPECS}
_BY_TYPE = {spec.game_type: spec for spec in _SPECS}


def get(name: str) -> GameSpec:
    """The game called ``name``; KeyError (naming the known games) if there is none."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown game {name!r}; known: {', '.join(_BY_NAME)}") from None


def by_type(game_type: int) -> GameSpec:
    """The game of a ``paiju.v1.Game`` enum number; KeyError if there is none."""
    try:
        return _BY_TYPE[game_type]
    except KeyError:
        raise KeyError(f"no game has enum number {game_type!r}") from None


def all() -> tuple[GameSpec, ...]:  # shadows the builtin inside this module only
    """Every game, in enum order."""
    return _SPECS
