"""The hooks a mahjong variant gives the shared hand flow (:mod:`games.mahjong.flow`).

A variant module (``xuezhan``, ``changsha``) builds one object with these members and passes
it to :meth:`~games.mahjong.flow.MahjongState.start`; the flow calls nothing else of the
variant. Every hook that needs the hand takes it as ``state`` (the whole state as the flow
roles see it, :class:`~games.mahjong.flow_base.HandCore`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from games.arbitration import Rules
from games.engine import Action

if TYPE_CHECKING:  # flow_base names this protocol: types only
    from games.mahjong.flow_base import HandCore
    from games.mahjong.flow_records import Kong


class VariantRules(Protocol):
    """What differs between XueZhan and Changsha, as the flow asks it."""

    name: str                    # the variant's canonical name ("xuezhan", "changsha")
    has_void: bool               # a void suit (定缺) is declared before play
    has_opening: bool            # opening wins (起手胡) and the midway wins during play
    continues_after_win: bool    # play goes on after a win (血战) until three have won
    bloom_on_replacement: bool   # a win on a kong replacement is 杠上开花
    earthly_on_self_draw: bool   # 地胡 is a non-dealer's self-draw before any discard

    # -- phases and options
    def has_exchange(self, options: Mapping[str, Any]) -> bool: ...

    def arbitration(self, options: Mapping[str, Any]) -> Rules: ...

    def pass_rule(self, options: Mapping[str, Any]) -> str: ...

    def pass_peng(self, options: Mapping[str, Any]) -> bool: ...

    def haidi_due(self, state: HandCore) -> bool: ...

    def haidi_compulsory(self, options: Mapping[str, Any]) -> bool: ...

    def view_extras(self, state: HandCore) -> dict[str, Any]: ...

    # -- the turn: discards, kongs, claims
    def filter_discards(self, state: HandCore, seat: int, held: list[int]) -> list[int]: ...

    def discard_reason(self, state: HandCore, seat: int) -> str: ...

    def turn_kongs(self, state: HandCore, seat: int) -> list[Action]: ...

    def claim_kinds(self, state: HandCore, seat: int, tile: int, source: int) -> set[str]: ...

    def kaigang_reveal(self, state: HandCore, kong: Kong) -> None: ...

    # -- opening and midway wins (Changsha)
    def opening_types(self, state: HandCore, seat: int) -> tuple[str, ...]: ...

    def opening_shown(self, state: HandCore, seat: int, types: list[str]) -> list[int]: ...

    def midway_actions(self, state: HandCore, seat: int) -> list[Action]: ...

    def declare_midway(self, state: HandCore, seat: int, tiles: list[int]) -> None: ...

    # -- wins and money
    def ron_flags(self, state: HandCore, trigger: str, source: int) -> set[str]: ...

    def score(self, state: HandCore, seat: int, concealed: list[int], tile: int, win: str,
              flags: set[str]) -> dict[str, Any] | None: ...

    def kong_money(self, state: HandCore, kong: Kong) -> None: ...

    def pay_wins(self, state: HandCore, trigger: str, source: int, tile: int,
                 winners: list[int]) -> None: ...

    def pay_opening(self, state: HandCore, seat: int, types: list[str]) -> None: ...

    def finish(self, state: HandCore) -> None: ...

    def next_dealer(self, state: HandCore) -> int: ...


class NoOpeningWins:
    """The Changsha-only hooks for a variant without opening wins and without 开杠 (XueZhan):
    the flow never asks them there (``has_opening`` is False, no 开杠 is ever offered)."""

    def opening_types(self, state: HandCore, seat: int) -> tuple[str, ...]:
        return ()

    def midway_actions(self, state: HandCore, seat: int) -> list[Action]:
        return []

    def opening_shown(self, state: HandCore, seat: int, types: list[str]) -> list[int]:
        raise AssertionError("this variant has no opening wins")

    def declare_midway(self, state: HandCore, seat: int, tiles: list[int]) -> None:
        raise AssertionError("this variant has no midway wins")

    def pay_opening(self, state: HandCore, seat: int, types: list[str]) -> None:
        raise AssertionError("this variant has no opening wins")

    def kaigang_reveal(self, state: HandCore, kong: Kong) -> None:
        raise AssertionError("this variant has no 开杠")
