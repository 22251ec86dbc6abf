"""Setup phases before the first discard: exchange three (换三张), void suit (定缺) and
Changsha opening wins (起手胡). All three are simultaneous: every listed seat answers once."""

from __future__ import annotations

from itertools import combinations

from games.engine import Action, BadInput, IllegalAction
from games.mahjong import SUITS, suit_of
from games.mahjong.flow_base import HandCore
from games.mahjong.flow_records import OpeningWins

# 换三张 directions: the offset from giver to receiver.
DIRECTIONS = {"cw": 1, "opposite": 2, "ccw": 3}
_DICE_DIRECTION = {1: "cw", 2: "ccw", 0: "opposite"}


class SetupMixin(HandCore):
    """Exchange, void and opening phases of :class:`~games.mahjong.flow.MahjongState`."""

    def _enter_first_phase(self) -> None:
        if self.rules.has_exchange(self.options):
            self.stage = "exchange"
        else:
            self._after_exchange()

    def _after_exchange(self) -> None:
        if self.rules.has_void:
            self.stage = "void"
            return
        pending = {}
        if self.rules.has_opening:
            for seat in range(4):
                types = self.rules.opening_types(self, seat)
                if types:
                    pending[seat] = list(types)
        if pending:
            self.stage = "opening"
            self.opening = OpeningWins(pending)
        else:
            self._begin_play()

    def _begin_play(self) -> None:
        self.stage = "play"
        self.turn = self.dealer
        self.emit("turn", {"seat": self.dealer})

    def _setup_to_act(self) -> tuple[int, ...]:
        if self.stage == "exchange":
            return tuple(s for s in range(4) if self.exchange_sel[s] is None)
        if self.stage == "void":
            return tuple(s for s in range(4) if self.voids[s] is None)
        if self.stage == "opening":
            return tuple(sorted(self._opening_now().pending))
        return ()

    # ------------------------------------------------------------------ legality

    def _setup_actions(self, seat: int) -> list[Action]:
        if self.stage == "exchange":
            return self._exchange_choices(seat)
        if self.stage == "void":
            return [Action("declare_void", choice=s) for s in SUITS]
        return [Action("hu"), Action("pass")]

    def _verify_setup(self, seat: int, action: Action) -> None:
        if self.stage == "exchange":
            self._verify_exchange(seat, action)
        elif self.stage == "void":
            if action.kind != "declare_void":
                raise IllegalAction(f"choose a void suit first (declare_void), not {action.kind}")
            if action.choice not in tuple(SUITS):
                raise BadInput(f"a void suit is one of m, p, s; got {action.choice!r}")
        elif action.kind not in ("hu", "pass"):
            raise IllegalAction(f"opening wins: answer hu or pass, not {action.kind}")

    def _verify_exchange(self, seat: int, action: Action) -> None:
        if action.kind != "exchange_three":
            raise IllegalAction(f"choose three tiles to exchange first, not {action.kind}")
        tiles = self.parse_tiles(action, 3)
        counts = list(self.hands[seat])
        for t in tiles:
            if counts[t] == 0:
                raise IllegalAction(f"{action.tiles} are not all in your hand", "tile_not_in_hand")
            counts[t] -= 1
        if self.options["exchange_three"] == "same_suit" and len({suit_of(t) for t in tiles}) > 1:
            raise IllegalAction("the three exchanged tiles must be of one suit")

    def _exchange_choices(self, seat: int) -> list[Action]:
        hand = self.hands[seat]
        if self.options["exchange_three"] == "same_suit":   # three of one suit: each apart
            groups = [[t for t in range(9 * s, 9 * s + 9) for _ in range(hand[t])]
                      for s in range(3)]
        else:
            groups = [[t for t in range(27) for _ in range(hand[t])]]
        picks = {combo for tiles in groups for combo in combinations(tiles, 3)}
        return [Action("exchange_three", tuple(self.names(c))) for c in sorted(picks)]

    # ------------------------------------------------------------------ effects

    def _do_setup(self, seat: int, action: Action) -> None:
        if self.stage == "exchange":
            tiles = sorted(self.parse_tiles(action, 3))
            for t in tiles:
                self.hands[seat][t] -= 1
            drawn = self.drawn[seat]
            if drawn is not None and self.hands[seat][drawn] == 0:
                self.drawn[seat] = None
            self.exchange_sel[seat] = tiles
            self.emit("exchange_committed", {"seat": seat})
            self.emit("exchange_committed", {"seat": seat, "tiles": self.names(tiles)}, to=seat)
            chosen = [sel for sel in self.exchange_sel if sel is not None]
            if len(chosen) == len(self.exchange_sel):
                self._finish_exchange(chosen)
        elif self.stage == "void":
            self.voids[seat] = action.choice
            self.emit("void_chosen", {"seat": seat})
            self.emit("void_chosen", {"seat": seat, "suit": action.choice}, to=seat)
            if all(v is not None for v in self.voids):
                self.emit("void_declared", {"voids": list(self.voids)})
                self._begin_play()
        else:
            self._do_opening(seat, action)

    def _finish_exchange(self, chosen: list[list[int]]) -> None:
        """Pass every seat's three tiles (``chosen``, by giver) on in one direction."""
        mode = self.options["exchange_direction"]
        if mode == "random3":
            direction = ("cw", "ccw", "opposite")[self.rng.below(3)]
        elif mode == "dice_mod3":
            direction = _DICE_DIRECTION[(self.rng.below(6) + self.rng.below(6) + 2) % 3]
        else:
            direction = "cw"
        self.exchange_dir = direction
        offset = DIRECTIONS[direction]
        for giver in range(4):
            taker = (giver + offset) % 4
            self.exchange_recv[taker] = list(chosen[giver])
            for t in chosen[giver]:
                self.hands[taker][t] += 1
        self.emit("exchange_done", {"direction": direction})
        for seat in range(4):
            self.emit("exchange_done", {"direction": direction,
                                        "tiles": self.names(chosen[(seat - offset) % 4])},
                      to=seat)
        self._after_exchange()

    def _opening_now(self) -> OpeningWins:
        """The opening wins; only called in the "opening" stage, which always has them."""
        assert self.opening is not None, "no opening wins were dealt"
        return self.opening

    def _do_opening(self, seat: int, action: Action) -> None:
        opening = self._opening_now()
        types = opening.pending.pop(seat)
        if action.kind == "hu":
            opening.declared[seat] = types
            shown = self.rules.opening_shown(self, seat, types)
            self.emit("opening_hu", {"seat": seat, "types": types, "tiles": self.names(shown)})
            self.rules.pay_opening(self, seat, types)
        else:
            # only to him: a public pass would tell the table his hand had an opening win
            self.emit("opening_pass", {"seat": seat}, to=seat)
        if not opening.pending:
            self._begin_play()

    # ------------------------------------------------------------------ defaults

    def _default_setup(self, seat: int) -> Action:
        counts = self.hands[seat]
        if self.stage == "exchange":
            return Action("exchange_three", tuple(self.names(self._suggest_exchange(counts))))
        if self.stage == "void":
            per_suit = [sum(counts[9 * s : 9 * s + 9]) for s in range(3)]
            return Action("declare_void", choice=SUITS[per_suit.index(min(per_suit))])
        return Action("hu")

    def _suggest_exchange(self, counts: list[int]) -> list[int]:
        """Three tiles of the shortest suit holding at least three (highest ranks first);
        with the "any" option and no such suit cannot happen (13 tiles, 3 suits)."""
        per_suit = [sum(counts[9 * s : 9 * s + 9]) for s in range(3)]
        suits = sorted((n, s) for s, n in enumerate(per_suit) if n >= 3)
        suit = suits[0][1]
        picked: list[int] = []
        for t in range(9 * suit + 8, 9 * suit - 1, -1):
            picked.extend([t] * min(counts[t], 3 - len(picked)))
        return sorted(picked)
