"""Changsha (长沙麻将) hands: the shared flow plus the Changsha hooks - opening wins (起手胡),
chi from the previous seat, 补张 / 开杠 kongs, the 海底 offer, birds and the dealer bonus;
the hand ends at the first win (rules/mahjong.md Part B)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from games.arbitration import Rules
from games.engine import Action
from games.fair import Seed
from games.mahjong import is_win, rank_of, tile_index
from games.mahjong import settle_changsha as settle
from games.mahjong.flow import MahjongState
from games.mahjong.flow_base import HandCore
from games.mahjong.flow_records import Kong, MidwayWin, OpeningWins, optional_dict
from games.mahjong.meld import Meld
from games.mahjong.options import CHANGSHA_TABLE, defaults, validate
from games.mahjong.score_changsha import CHANGSHA_SCORING_DEFAULTS, changsha_ready, score_changsha
from games.mahjong.score_changsha_opening import (
    changsha_midway_hu,
    changsha_opening_hu,
    opening_shown_tiles,
    shown_quads,
    shown_triplets,
)
from games.mahjong.score_common import WinContext
from games.mahjong.wall import check_wall, shuffled_wall
from games.mahjong.wall import deal_layout as wall_layout

NAME = "changsha"


def deal_layout(seed: Seed) -> dict[str, list[str]]:
    """What a replay stores of the shuffle: the wall in draw order (the registry's)."""
    return wall_layout(seed)


DEFAULT_OPTIONS: Mapping[str, Any] = defaults(CHANGSHA_TABLE, CHANGSHA_SCORING_DEFAULTS)


class ChangshaRules:
    """The Changsha hooks the shared flow calls (:class:`games.mahjong.hooks.VariantRules`)."""

    name = NAME
    has_void = False
    has_opening = True
    continues_after_win = False
    bloom_on_replacement = False  # 补张 replacement wins are plain self-draws
    earthly_on_self_draw = False  # 地胡 is a win on the dealer's first discard
    kong_money = staticmethod(settle.kong_money)
    pay_wins = staticmethod(settle.pay_wins)
    next_dealer = staticmethod(settle.next_dealer)
    pay_opening = staticmethod(settle.pay_opening)

    def has_exchange(self, options: Mapping[str, Any]) -> bool:
        return False

    def arbitration(self, options: Mapping[str, Any]) -> Rules:
        return Rules(multi_win=options["multi_ron"], gang_over_peng=False)

    def pass_rule(self, options: Mapping[str, Any]) -> str:
        rule: str = options["missed_ron"]
        return rule

    def pass_peng(self, options: Mapping[str, Any]) -> bool:
        return False

    def haidi_due(self, state: HandCore) -> bool:
        return state.wall.remaining() == 1

    def haidi_compulsory(self, options: Mapping[str, Any]) -> bool:
        compulsory: bool = options["haidi_compulsory"]
        return compulsory

    def finish(self, state: HandCore) -> None:
        """A draw game pays nothing more (opening wins are already paid)."""

    def view_extras(self, state: HandCore) -> dict[str, Any]:
        opening = state.opening or OpeningWins()
        return {"locked": list(state.locked), "haidi": optional_dict(state.haidi),
                "opening_hu": {str(s): list(v) for s, v in opening.declared.items()},
                "midway_hu": {str(s): [w.to_dict() for w in v] for s, v in opening.midway.items()}}

    def filter_discards(self, state: HandCore, seat: int, held: list[int]) -> list[int]:
        return held

    def discard_reason(self, state: HandCore, seat: int) -> str:
        return "after 开杠 you may only discard the tile you drew"

    # ------------------------------------------------------------------ opening wins

    def opening_types(self, state: HandCore, seat: int) -> tuple[str, ...]:
        return changsha_opening_hu(state.hands[seat], state.options)

    def opening_shown(self, state: HandCore, seat: int, types: list[str]) -> list[int]:
        """Tiles shown: the quads, triplets or pairs of the types, or the whole hand."""
        return opening_shown_tiles(state.hands[seat], types)

    def midway_actions(self, state: HandCore, seat: int) -> list[Action]:
        """中途四喜 / 中途六六顺 open to the seat on its turn (room option, off by default)."""
        types = state.options["opening_hu_types"]
        if "midway_four" not in types and "midway_two_triplets" not in types:
            return []
        wins = state.opening or OpeningWins()
        opening = wins.declared.get(seat, [])
        dealt = state.initial_hands[seat]  # no exchange in Changsha: what the opening showed
        done = [(w.kind, [tile_index(n) for n in w.tiles]) for w in wins.midway.get(seat, [])]
        found = changsha_midway_hu(state.hands[seat], state.options, done,
                                   shown_quads(dealt, opening), shown_triplets(dealt, opening),
                                   checked=True)
        return [Action("midway_hu", tuple(state.names(tiles))) for _, tiles in found]

    def declare_midway(self, state: HandCore, seat: int, tiles: list[int]) -> None:
        """Show the quad (中途四喜) or the two triplets (中途六六顺) and collect one small hu
        self-draw; the tiles stay in the hand and the turn goes on."""
        kind = "midway_four" if len(tiles) == 1 else "midway_two_triplets"
        names = state.names(tiles)
        if state.opening is None:
            state.opening = OpeningWins()
        state.opening.midway.setdefault(seat, []).append(MidwayWin(kind, tuple(names)))
        shown = [t for t in tiles for _ in range(4 if kind == "midway_four" else 3)]
        state.emit("midway_hu", {"seat": seat, "types": [kind], "tiles": state.names(shown)})
        self.pay_opening(state, seat, [kind])

    # ------------------------------------------------------------------ kongs and claims

    def _kong_kinds(self, state: HandCore, seat: int, tile: int, take: int, source: int | None
                    ) -> list[str]:
        """补张 needs a tile left besides the 海底; 开杠 needs its reveals plus the 海底 and a
        ready hand (听牌) once the four are set aside."""
        left, reveal = state.wall.remaining(), state.options["kaigang_reveal"]
        kinds = ["buzhang"] if left >= 2 else []
        if left >= reveal + 1:
            hand = list(state.hands[seat])
            hand[tile] -= take
            melds = [m for m in state.melds[seat]
                     if not (m.kind == "peng" and m.tiles[0] == tile)]
            melds.append(Meld("kaigang", (tile,) * 4, source))
            if changsha_ready(hand, melds, state.options):
                kinds.append("kaigang")
        return kinds

    def turn_kongs(self, state: HandCore, seat: int) -> list[Action]:
        if state.locked[seat]:
            return []
        hand, out = state.hands[seat], []
        pengs = {m.tiles[0] for m in state.melds[seat] if m.kind == "peng"}
        for t in range(27):
            take = 4 if hand[t] == 4 else (1 if hand[t] and t in pengs else 0)
            if take:
                out += [Action(k, (state.name(t),)) for k in self._kong_kinds(state, seat, t,
                                                                               take, None)]
        return out

    def claim_kinds(self, state: HandCore, seat: int, tile: int, source: int) -> set[str]:
        held, kinds = state.hands[seat][tile], set()
        if held >= 2:
            kinds.add("peng")
        if held >= 3:
            kinds |= set(self._kong_kinds(state, seat, tile, 3, source))
        if seat == (source + 1) % 4 and state.chi_pairs_for(seat, tile):
            kinds.add("chi")
        return kinds

    def kaigang_reveal(self, state: HandCore, kong: Kong) -> None:
        """开杠: reveal tiles from the back. A reveal that completes the hand is 杠上开花;
        otherwise they become his discards, open to 杠上炮, and his hand is locked."""
        seat = kong.seat
        count = state.options["kaigang_reveal"]
        reveals = [state.wall.draw_back() for _ in range(count)]
        state.emit("kaigang_reveal", {"seat": seat, "tiles": state.names(reveals),
                                      "wall_remaining": state.wall.remaining()})
        state.locked[seat] = True
        completing = [t for t in reveals
                      if self.score(state, seat, state.hands[seat], t, "self_draw", {"kong_bloom"})]
        flags = {"kong_bloom"}
        if len(completing) >= 2 and state.options["double_kong_bloom"]:
            flags.add("double_kong_bloom")  # 双杠上开花: both reveals complete the hand
        best = None
        for tile in dict.fromkeys(completing):
            score = self.score(state, seat, state.hands[seat], tile, "self_draw", flags)
            if score is not None and (best is None or score["value"] > best[1]["value"]):
                best = (tile, score)
        if best is not None:
            rest = list(reveals)
            rest.remove(best[0])
            state.discards[seat].extend(rest)
            state.record_wins("self_draw", seat, best[0], [(seat, best[1])])
            return
        state.discards[seat].extend(reveals)
        if not state.open_window(seat, reveals[0], "kaigang_reveal", tiles=reveals):
            state.next_turn((seat + 1) % 4)

    # ------------------------------------------------------------------ wins

    def ron_flags(self, state: HandCore, trigger: str, source: int) -> set[str]:
        flags = set()
        if trigger == "kaigang_reveal":
            flags.add("kong_shot")
        first_discard = state.ctx.discards_made == 1 and not state.ctx.claimed
        if trigger == "discard" and source == state.dealer and first_discard:
            flags.add("earthly")
        return flags

    def score(self, state: HandCore, seat: int, concealed: list[int], tile: int, win: str,
              flags: set[str]) -> dict[str, Any] | None:
        """(patterns, big_hu, value = X before bonus and birds) or None when not a win."""
        full = list(concealed)
        full[tile] += 1
        melds = state.melds[seat]
        if not is_win(full) and not _all_258(full, melds):
            return None
        result = score_changsha(concealed, melds, WinContext(tile, win, frozenset(flags)),
                                state.options)
        if not result.winning:
            return None
        return {"patterns": list(result.patterns), "big_hu": result.big_hu, "value": result.x}


def _all_258(full: list[int], melds: list[Meld]) -> bool:
    tiles = [t for t in range(27) if full[t]] + [m.tiles[0] for m in melds]
    return all(rank_of(t) in (2, 5, 8) for t in tiles) and not any(
        m.kind == "chi" for m in melds)


RULES = ChangshaRules()


def parse_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """The full Changsha option dict: ``options`` over the defaults; BadInput on an unknown
    key or a bad value."""
    return validate(CHANGSHA_TABLE, CHANGSHA_SCORING_DEFAULTS, options)


def new_hand(options: Mapping[str, Any], seed: Seed, dealer: int) -> MahjongState:
    """A shuffled Changsha hand; unknown options or bad values raise BadInput."""
    opts = parse_options(options)
    return MahjongState.start(RULES, opts, seed, dealer, shuffled_wall(seed))


def new_hand_from_wall(options: Mapping[str, Any], wall: list[int], dealer: int,
                       seed: int = 0) -> MahjongState:
    """Testing constructor: the given 108-tile wall in draw order, no shuffle."""
    opts = parse_options(options)
    check_wall(wall)
    return MahjongState.start(RULES, opts, seed, dealer, list(wall))


def deserialize(text: str) -> MahjongState:
    return MahjongState.from_json(RULES, text)
