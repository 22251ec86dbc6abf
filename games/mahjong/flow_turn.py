"""The seat to act in "play": self-draw win (自摸), kongs, discard; draws and replacements."""

from __future__ import annotations

from typing import Any

from games.engine import Action, IllegalAction
from games.mahjong.flow_base import HandCore
from games.mahjong.flow_records import Kong
from games.mahjong.meld import Meld

_TURN_KONGS = ("angang", "bugang", "buzhang", "kaigang")


class TurnMixin(HandCore):
    """Play-phase actions of :class:`~games.mahjong.flow.MahjongState`."""

    # ------------------------------------------------------------------ legality

    def _turn_actions(self, seat: int) -> list[Action]:
        out = []
        if self._self_draw_score(seat) is not None:
            out.append(Action("hu"))
        out.extend(self.rules.turn_kongs(self, seat))
        if self.rules.has_opening and not self.locked[seat]:
            out.extend(self.rules.midway_actions(self, seat))  # 中途四喜 / 中途六六顺
        out.extend(Action("discard", (self.name(t),)) for t in self._discard_choices(seat))
        return out

    def _discard_choices(self, seat: int) -> list[int]:
        if self.locked[seat]:
            drawn = self.drawn[seat]
            assert drawn is not None, "a locked seat (after 开杠) acts only on a fresh draw"
            return [drawn]
        held = [t for t in range(27) if self.hands[seat][t]]
        return self.rules.filter_discards(self, seat, held)

    def _verify_turn(self, seat: int, action: Action) -> None:
        kind = action.kind
        if kind == "hu":
            if self._self_draw_score(seat) is None:
                raise IllegalAction("this hand is not a legal self-draw win")
        elif kind == "discard":
            tile = self.parse_tiles(action, 1)[0]
            if not self.hands[seat][tile]:
                raise IllegalAction(f"{action.tiles[0]} is not in your hand", "tile_not_in_hand")
            if tile not in self._discard_choices(seat):
                raise IllegalAction(self.rules.discard_reason(self, seat))
        elif kind in _TURN_KONGS:
            tile = self.parse_tiles(action, 1)[0]
            if Action(kind, (self.name(tile),)) not in self.rules.turn_kongs(self, seat):
                raise IllegalAction(f"{kind} {action.tiles[0]} is not possible now")
        elif kind == "midway_hu" and self.rules.has_opening:
            tiles = sorted(self.parse_tiles(action, len(action.tiles)))
            canonical = Action("midway_hu", tuple(self.names(tiles)))
            if self.locked[seat] or canonical not in self.rules.midway_actions(self, seat):
                raise IllegalAction(f"midway hu {' '.join(action.tiles)} is not possible now")
        else:
            raise IllegalAction(f"{kind} is not a turn action; win, kong or discard")

    # ------------------------------------------------------------------ effects

    def _do_turn(self, seat: int, action: Action) -> None:
        if action.kind == "hu":
            tile = self._self_draw_tile(seat)
            score = self._self_draw_score(seat)
            assert score is not None, "verify() accepted this self-draw win"
            self.hands[seat][tile] -= 1
            self.record_wins("self_draw", seat, tile, [(seat, score)])
        elif action.kind == "discard":
            self._discard(seat, self.parse_tiles(action, 1)[0])
        elif action.kind == "midway_hu":
            tiles = sorted(self.parse_tiles(action, len(action.tiles)))
            self.rules.declare_midway(self, seat, tiles)
        else:
            self._declare_kong(seat, action.kind, self.parse_tiles(action, 1)[0])

    def _discard(self, seat: int, tile: int) -> None:
        kong = self.ctx.kong
        self.ctx.shot = kong if kong is not None and self.kongs[kong].seat == seat else None
        self.ctx.kong = None
        self.ctx.first[seat] = False
        self.ctx.discards_made += 1
        self.hands[seat][tile] -= 1
        self.drawn[seat] = None
        self.discards[seat].append(tile)
        self.emit("discard", {"seat": seat, "tile": self.name(tile)})
        if not self.open_window(seat, tile, "discard"):
            self.next_turn(self.next_active(seat))

    def _declare_kong(self, seat: int, kind: str, tile: int) -> None:
        added = self.hands[seat][tile] < 4
        if added and self.open_window(seat, tile, "rob_kong", kong_kind=kind):
            self.emit("kong_declared", {"seat": seat, "kind": kind, "tile": self.name(tile)})
            return
        self.complete_kong(seat, kind, tile, None)

    def complete_kong(self, seat: int, kind: str, tile: int, source: int | None) -> None:
        """Meld a kong (from hand, from a discard of ``source``, or onto a peng), settle its
        money, then draw the replacement (or reveal, for a Changsha 开杠)."""
        fresh = self.drawn[seat] == tile
        peng = next((m for m in self.melds[seat] if m.kind == "peng" and m.tiles[0] == tile), None)
        take = 1 if peng is not None else (3 if source is not None else 4)
        self.hands[seat][tile] -= take
        if peng is not None:
            self.melds[seat][self.melds[seat].index(peng)] = Meld(
                kind, (tile,) * 4, peng.source, False)
            origin = "added"
        else:
            concealed = source is None
            self.melds[seat].append(Meld(kind, (tile,) * 4, source, concealed))
            origin = "concealed" if concealed else "claimed"
        self.ctx.claimed = True
        kong = Kong(len(self.kongs), seat, kind, tile, source, origin, fresh)
        self.kongs.append(kong)
        self.emit_kong(seat, kind, tile, source, origin)
        self.rules.kong_money(self, kong)
        self.drawn[seat] = None
        if kind == "kaigang":
            self.rules.kaigang_reveal(self, kong)
        else:
            self.draw_for(seat, replacement=kong.id)

    def emit_kong(self, seat: int, kind: str, tile: int, source: int | None,
                  origin: str) -> None:
        """A concealed kong shows face down: the tile goes only to its owner."""
        data = {"seat": seat, "kind": kind, "from": source, "origin": origin}
        if origin == "concealed" and kind == "angang":
            self.emit(kind, data)
            self.emit(kind, {**data, "tile": self.name(tile)}, to=seat)
        else:
            self.emit(kind, {**data, "tile": self.name(tile)})

    # ------------------------------------------------------------------ draws

    def next_turn(self, seat: int) -> None:
        """Seat ``seat`` draws from the front and acts, or the wall ends the hand."""
        if self.rules.haidi_due(self):
            self.offer_haidi(seat)
        elif self.wall.remaining() == 0:
            self.end_hand("wall_exhausted")
        else:
            self.draw_for(seat)

    def draw_for(self, seat: int, replacement: int | None = None) -> int:
        """``seat`` draws from the front (or the back for a kong replacement) and acts;
        returns the tile drawn."""
        tile = self.wall.draw_back() if replacement is not None else self.wall.draw_front()
        self.hands[seat][tile] += 1
        self.drawn[seat] = tile
        self.turn = seat
        self.stage = "play"
        self.ctx.kong = replacement
        self.pass_block[seat] = None
        self.pass_peng[seat] = []
        left = self.wall.remaining()
        source = "back" if replacement is not None else "front"
        self.emit("draw", {"seat": seat, "wall_remaining": left, "from": source})
        self.emit("draw", {"seat": seat, "wall_remaining": left, "from": source,
                           "tile": self.name(tile)}, to=seat)
        return tile

    # ------------------------------------------------------------------ self-draw win

    def _self_draw_tile(self, seat: int) -> int:
        drawn = self.drawn[seat]
        if drawn is not None and self.hands[seat][drawn]:
            return drawn
        return max(t for t in range(27) if self.hands[seat][t])

    def _self_draw_flags(self, seat: int) -> set[str]:
        flags = set()
        kong = self.ctx.kong
        if kong is not None and self.rules.bloom_on_replacement:
            flags.add("kong_bloom")
        if self.wall.remaining() == 0 or self.ctx.haidi_draw:
            flags.add("last_tile")
        untouched = not self.ctx.claimed and self.ctx.first[seat]
        if untouched and seat == self.dealer and self.ctx.discards_made == 0:
            flags.add("heavenly")
        elif untouched and seat != self.dealer and self.rules.earthly_on_self_draw:
            flags.add("earthly")
        return flags

    def _self_draw_score(self, seat: int) -> dict[str, Any] | None:
        if (sum(self.hands[seat]) - 2) % 3:
            return None
        tile = self._self_draw_tile(seat)
        concealed = list(self.hands[seat])
        concealed[tile] -= 1
        return self.rules.score(self, seat, concealed, tile, "self_draw",
                                self._self_draw_flags(seat))

    def _default_turn(self, seat: int) -> Action:
        if self._self_draw_score(seat) is not None:
            return Action("hu")
        choices = self._discard_choices(seat)
        drawn = self.drawn[seat]
        if drawn is not None and drawn in choices:
            return Action("discard", (self.name(drawn),))
        return Action("discard", (self.name(choices[-1]),))
