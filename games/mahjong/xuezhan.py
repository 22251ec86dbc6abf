"""Sichuan XueZhan (血战到底) hands: the shared flow plus the XueZhan hooks - exchange three,
void suit (定缺), no chi, kongs with instant money, play on after wins until three players
have won or the wall is empty (rules/mahjong.md Part A)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from games.arbitration import Rules
from games.engine import Action
from games.fair import Seed
from games.mahjong import SUITS, is_win, suit_of
from games.mahjong import settle_xuezhan as settle
from games.mahjong.flow import MahjongState
from games.mahjong.flow_base import HandCore
from games.mahjong.hooks import NoOpeningWins
from games.mahjong.options import XUEZHAN_TABLE, defaults, validate
from games.mahjong.score_common import WinContext
from games.mahjong.score_xuezhan import XUEZHAN_SCORING_DEFAULTS, score_xuezhan
from games.mahjong.wall import check_wall, shuffled_wall
from games.mahjong.wall import deal_layout as wall_layout

NAME = "xuezhan"


def deal_layout(seed: Seed) -> dict[str, list[str]]:
    """What a replay stores of the shuffle: the wall in draw order (the registry's)."""
    return wall_layout(seed)


DEFAULT_OPTIONS: Mapping[str, Any] = defaults(XUEZHAN_TABLE, XUEZHAN_SCORING_DEFAULTS)


class XueZhanRules(NoOpeningWins):
    """The XueZhan hooks the shared flow calls (:class:`games.mahjong.hooks.VariantRules`)."""

    name = NAME
    has_void = True
    has_opening = False
    continues_after_win = True
    bloom_on_replacement = True
    earthly_on_self_draw = True
    kong_money = staticmethod(settle.kong_money)
    pay_wins = staticmethod(settle.pay_wins)
    finish = staticmethod(settle.finish)
    next_dealer = staticmethod(settle.next_dealer)

    def has_exchange(self, options: Mapping[str, Any]) -> bool:
        exchange: bool = options["exchange_three"] != "off"
        return exchange

    def arbitration(self, options: Mapping[str, Any]) -> Rules:
        return Rules(multi_win=options["multi_ron"], gang_over_peng=True)

    def pass_rule(self, options: Mapping[str, Any]) -> str:
        rule: str = options["pass_ron_rule"]
        return rule

    def pass_peng(self, options: Mapping[str, Any]) -> bool:
        rule: bool = options["pass_peng_rule"]
        return rule

    def haidi_due(self, state: HandCore) -> bool:
        return False

    def haidi_compulsory(self, options: Mapping[str, Any]) -> bool:
        return False

    def view_extras(self, state: HandCore) -> dict[str, Any]:
        return {"exchange_direction": state.exchange_dir}

    # ------------------------------------------------------------------ void suit (定缺)

    def _void(self, state: HandCore, seat: int) -> int | None:
        v = state.voids[seat]
        return None if v is None else SUITS.index(v)

    def filter_discards(self, state: HandCore, seat: int, held: list[int]) -> list[int]:
        void = self._void(state, seat)
        in_void = [t for t in held if suit_of(t) == void]
        return in_void or held

    def discard_reason(self, state: HandCore, seat: int) -> str:
        return f"discard a tile of your void suit ({state.voids[seat]}) first"

    # ------------------------------------------------------------------ kongs and claims

    def turn_kongs(self, state: HandCore, seat: int) -> list[Action]:
        if state.wall.remaining() == 0:
            return []
        hand, void = state.hands[seat], self._void(state, seat)
        out = [Action("angang", (state.name(t),)) for t in range(27)
               if hand[t] == 4 and suit_of(t) != void]
        out += [Action("bugang", (state.name(m.tiles[0]),)) for m in state.melds[seat]
                if m.kind == "peng" and hand[m.tiles[0]]]
        return out

    def claim_kinds(self, state: HandCore, seat: int, tile: int, source: int) -> set[str]:
        if suit_of(tile) == self._void(state, seat):
            return set()
        held, kinds = state.hands[seat][tile], set()
        if held >= 2 and tile not in state.pass_peng[seat]:
            kinds.add("peng")
        if held >= 3 and state.wall.remaining() > 0:
            kinds.add("zhigang")
        return kinds

    # ------------------------------------------------------------------ wins

    def ron_flags(self, state: HandCore, trigger: str, source: int) -> set[str]:
        flags = set()
        if trigger == "discard" and state.ctx.shot is not None:
            flags.add("kong_shot")
        if trigger == "discard" and state.wall.remaining() == 0:
            flags.add("last_tile")
        return flags

    def score(self, state: HandCore, seat: int, concealed: list[int], tile: int, win: str,
              flags: set[str]) -> dict[str, Any] | None:
        """The win's value as a dict (patterns, fan, roots, value = per payer at base 1), or
        None when the hand does not win (void tiles held, not a winning shape)."""
        void = self._void(state, seat)
        assert void is not None, "a XueZhan win is scored only after the void suit (定缺)"
        full = list(concealed)
        full[tile] += 1
        if any(full[9 * void : 9 * void + 9]) or not is_win(full):
            return None
        if "last_tile" in flags and win != "self_draw" and not state.options["haidi_pao_counts"]:
            flags = flags - {"last_tile"}
        ctx = WinContext(tile, win, frozenset(flags), void)
        result = score_xuezhan(concealed, state.melds[seat], ctx, state.options)
        if not result.winning:
            return None
        return {"patterns": list(result.patterns), "fan": result.fan, "roots": result.roots,
                "value": result.per_payer}


RULES = XueZhanRules()


def parse_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """The full XueZhan option dict: ``options`` over the defaults; BadInput on an unknown
    key or a bad value."""
    return validate(XUEZHAN_TABLE, XUEZHAN_SCORING_DEFAULTS, options)


def new_hand(options: Mapping[str, Any], seed: Seed, dealer: int) -> MahjongState:
    """A shuffled XueZhan hand; unknown options or bad values raise BadInput."""
    opts = parse_options(options)
    return MahjongState.start(RULES, opts, seed, dealer, shuffled_wall(seed))


def new_hand_from_wall(options: Mapping[str, Any], wall: list[int], dealer: int,
                       seed: int = 0) -> MahjongState:
    """Testing constructor: the given 108-tile wall in draw order, no shuffle. The deal
    takes tiles one at a time from the front, dealer first; replacements come from the end."""
    opts = parse_options(options)
    check_wall(wall)
    return MahjongState.start(RULES, opts, seed, dealer, list(wall))


def deserialize(text: str) -> MahjongState:
    return MahjongState.from_json(RULES, text)
