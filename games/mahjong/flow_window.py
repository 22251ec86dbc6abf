"""Response windows (响应窗口) after a discard, an added kong (抢杠胡), a Changsha 开杠 reveal
or the exposed 海底 tile; wins (胡) and claims; the haidi offer; the end of the hand.

Windows are decided by the pure :func:`games.arbitration.resolve`; this module builds the
window, records answers, checks and applies a decision, and keeps 过水不胡 / 漏胡 state.
"""

from __future__ import annotations

from typing import Any

from games.arbitration import Decision, Response, Rules, Window, resolve
from games.engine import Action, BadInput, Event, IllegalAction, NotYourTurn, StaleRef
from games.mahjong import suit_of
from games.mahjong.flow_base import HandCore
from games.mahjong.flow_records import HaidiOffer, OpenWindow, PassBlock
from games.mahjong.meld import Meld

_CLAIMS = ("zhigang", "kaigang", "buzhang", "peng", "chi")


class WindowMixin(HandCore):
    """Response windows, wins and the end of the hand for
    :class:`~games.mahjong.flow.MahjongState`."""

    # ------------------------------------------------------------------ opening

    def open_window(self, source: int, tile: int, trigger: str,
                    kong_kind: str | None = None, tiles: list[int] | None = None) -> bool:
        """Open a window on ``tile`` (or on any of ``tiles`` for 开杠 reveals; ``kong_kind``:
        the added kong a rob_kong window may rob); False when no seat could answer anything
        but pass (no window is opened then)."""
        candidates: dict[int, list[str]] = {}
        hu_tiles: dict[int, int] = {}
        for seat in range(4):
            if seat == source or not self.active(seat):
                continue
            kinds: set[str] = set()
            best = self._best_ron(seat, tiles or [tile], trigger, source)
            if best is not None:
                kinds.add("hu")
                hu_tiles[seat] = best[0]
            if trigger == "discard" and not self.locked[seat]:
                kinds |= self.rules.claim_kinds(self, seat, tile, source)
            if kinds:
                candidates[seat] = sorted(kinds | {"pass"})
        if not candidates:
            return False
        self.window_seq += 1
        self.window = OpenWindow(self.window_seq, source, tile, trigger, tiles or [tile],
                                 candidates, hu_tiles, kong_kind=kong_kind)
        self.stage = "window"
        data: dict[str, Any] = {"window": self.window_seq, "source": source,
                                "tile": self.name(tile), "trigger": trigger}
        if tiles:
            data["tiles"] = self.names(tiles)
        self.emit("window_opened", data)
        for seat in sorted(candidates):
            actions = [a.to_dict() for a in self._window_actions(seat)]
            self.emit("candidates", {"window": self.window_seq, "actions": actions}, to=seat)
        return True

    def ron_flags(self, trigger: str, source: int, tile: int) -> set[str]:
        flags = set(self.rules.ron_flags(self, trigger, source))
        if trigger == "haidi":
            flags.add("last_tile")
        return flags

    def _best_ron(self, seat: int, tiles: list[int], trigger: str,
                  source: int) -> tuple[int, dict[str, Any]] | None:
        """(tile, score) of the best discard-type win for ``seat`` on any of ``tiles``, or
        None (also when 过水不胡 blocks it)."""
        win = "rob_kong" if trigger == "rob_kong" else "discard"
        best: tuple[int, dict[str, Any]] | None = None
        for tile in dict.fromkeys(tiles):
            score = self.rules.score(self, seat, self.hands[seat], tile, win,
                                     self.ron_flags(trigger, source, tile))
            if score is None or self._ron_blocked(seat, tile, score):
                continue
            if best is None or score["value"] > best[1]["value"]:
                best = (tile, score)
        return best

    def _ron_blocked(self, seat: int, tile: int, score: dict[str, Any]) -> bool:
        block = self.pass_block[seat]
        return block is not None and block.blocks(tile, _worth(score))

    # ------------------------------------------------------------------ answers

    def _window_now(self) -> OpenWindow:
        """The open window; only called in the "window" stage, which always has one."""
        assert self.window is not None, "no response window is open"
        return self.window

    def _window_actions(self, seat: int) -> list[Action]:
        w = self._window_now()
        ref = str(w.id)
        out: list[Action] = []
        for kind in w.candidates.get(seat, []):
            if kind == "chi":
                out.extend(Action("chi", tuple(self.names(p)), ref) for p in self._chi_pairs(seat))
            elif kind in ("hu", "pass"):
                out.append(Action(kind, ref=ref))
            else:
                out.append(Action(kind, (self.name(w.tile),), ref))
        return out

    def _default_response(self, seat: int) -> Action:
        """Entrust (托管) in a window: win if possible, else pass."""
        w = self._window_now()
        kind = "hu" if "hu" in w.candidates[seat] else "pass"
        return Action(kind, ref=str(w.id))

    def _chi_pairs(self, seat: int) -> list[tuple[int, int]]:
        return self.chi_pairs_for(seat, self._window_now().tile)

    def chi_pairs_for(self, seat: int, tile: int) -> list[tuple[int, int]]:
        """The hand-tile pairs that make a run (吃) with ``tile``."""
        hand = self.hands[seat]
        pairs = []
        for low in (tile - 2, tile - 1, tile):
            run = [low, low + 1, low + 2]
            if low < 0 or suit_of(low) != suit_of(tile) or low + 2 > 26 \
                    or suit_of(low + 2) != suit_of(tile):
                continue
            rest = [t for t in run if t != tile]
            if all(hand[t] for t in rest):
                pairs.append((rest[0], rest[1]))
        return pairs

    def _verify_response(self, seat: int, action: Action) -> None:
        w = self._window_now()
        if action.ref != str(w.id):
            raise StaleRef(f"window {action.ref!r} is not the open window {w.id}")
        kinds = w.candidates.get(seat)
        if kinds is None:
            raise NotYourTurn(f"seat {seat} cannot answer window {w.id}")
        if seat in w.responses:
            raise IllegalAction(f"seat {seat} already answered window {w.id}")
        if action.kind not in kinds:
            raise IllegalAction(f"{action.kind} is not possible on window {w.id}")
        if action.kind == "chi":
            pair = tuple(sorted(self.parse_tiles(action, 2)))
            if pair not in self._chi_pairs(seat):
                raise IllegalAction(f"chi with {action.tiles} does not make a run you hold")
        elif action.tiles and action.kind != "pass":
            if self.parse_tiles(action, 1)[0] != w.tile:
                raise BadInput(f"{action.kind} must name the window tile {self.name(w.tile)}")

    def _record(self, seat: int, action: Action) -> None:
        tiles = sorted(self.parse_tiles(action, 2)) if action.kind == "chi" else []
        w = self._window_now()
        w.responses[seat] = Response(action.kind, tuple(tiles))
        self.emit("response", {"window": w.id, "kind": action.kind}, to=seat)

    def record_response(self, seat: int, action: Action) -> list[Event]:
        """Record one answer without resolving (the table service asks the arbiter)."""
        if self.stage != "window":
            raise StaleRef("there is no open response window")
        self.verify(seat, action)
        self._out = []
        self._record(seat, action)
        out, self._out = self._out, []
        return out

    def pending_window(self) -> Window | None:
        """The open window as the arbiter sees it, or None."""
        w = self.window
        if self.stage != "window" or w is None:
            return None
        return _as_window(w)

    def arbitration_rules(self) -> Rules:
        """How this hand's windows are decided (multi-win, kong over peng)."""
        return self.rules.arbitration(self.options)

    def _auto_resolve(self) -> None:
        window = _as_window(self._window_now())
        decision = resolve(window, self.arbitration_rules())
        if decision.final:
            self._apply_decision(decision)

    def verify_decision(self, decision: Decision) -> None:
        """RuleError unless ``decision`` is final, for the open window and legal; changes
        nothing (the check :meth:`resolve_window` makes first)."""
        w = self.window
        if self.stage != "window" or w is None or decision.window_id != w.id:
            raise StaleRef(f"decision for window {decision.window_id} is not current")
        if not decision.final:
            raise IllegalAction("the decision is not final")
        if decision.action != "pass" or decision.winners:
            for seat in decision.winners:
                answer = w.responses.get(seat)
                if answer is None or answer.kind != decision.action \
                        or decision.action not in w.candidates[seat]:
                    raise IllegalAction(f"seat {seat} did not answer {decision.action}")
            if not decision.winners or (decision.action != "hu" and len(decision.winners) != 1):
                raise IllegalAction(f"bad winners {decision.winners} for {decision.action}")

    def resolve_window(self, decision: Decision) -> list[Event]:
        """Check ``decision`` (:meth:`verify_decision`), then apply it."""
        self.verify_decision(decision)
        self._out = []
        self._apply_decision(decision)
        out, self._out = self._out, []
        return out

    # ------------------------------------------------------------------ decisions

    def _apply_decision(self, d: Decision) -> None:
        w = self._window_now()
        self.window = None
        self._note_passes(w, d)
        self.emit("window_closed", {"window": w.id, "action": d.action,
                                    "winners": list(d.winners)})
        source, tile, trigger = w.source, w.tile, w.trigger
        if d.action == "hu":
            self._ron(w, d.winners)
        elif d.action in _CLAIMS:
            self._claim(d.winners[0], d.action, source, tile, w)
        elif trigger == "rob_kong":
            assert w.kong_kind is not None, "a rob_kong window names the kong it may rob"
            self.complete_kong(source, w.kong_kind, tile, None)
        elif trigger == "haidi":
            self.end_hand("wall_exhausted")
        else:
            self.next_turn(self.next_active(source))

    def _note_passes(self, w: OpenWindow, d: Decision) -> None:
        rule = self.rules.pass_rule(self.options)
        for seat in d.passed_win:
            if seat in d.winners or rule == "off":
                continue
            tile = w.hu_tiles[seat]
            if rule == "until_next_draw":
                self.pass_block[seat] = PassBlock("all")
            elif rule == "same_tile_only":
                old = self.pass_block[seat] or PassBlock("tile")
                self.pass_block[seat] = PassBlock("tile", (*old.tiles, tile))
            else:  # allow_if_higher_fan: the passed win as it was offered, flags and all
                self.pass_block[seat] = PassBlock("value", worth=_worth(self._offered_win(w, seat)))
        if self.rules.pass_peng(self.options):
            for seat, answer in w.responses.items():
                if answer.kind == "pass" and "peng" in w.candidates[seat]:
                    self.pass_peng[seat].append(w.tile)

    def _offered_win(self, w: OpenWindow, seat: int) -> dict[str, Any]:
        """The score of the win ``seat`` was offered on ``w`` (its hu tile, flags and all)."""
        tile = w.hu_tiles[seat]
        win = "rob_kong" if w.trigger == "rob_kong" else "discard"
        flags = self.ron_flags(w.trigger, w.source, tile)
        score = self.rules.score(self, seat, self.hands[seat], tile, win, flags)
        assert score is not None, f"seat {seat} was offered a win on window {w.id}"
        return score

    def _ron(self, w: OpenWindow, winners: tuple[int, ...]) -> None:
        source, trigger = w.source, w.trigger
        results = [(seat, self._offered_win(w, seat)) for seat in winners]
        tile = w.hu_tiles[winners[0]]
        if trigger == "rob_kong":
            self.hands[source][tile] -= 1
            self.drawn[source] = None
        else:
            self.discards[source].reverse()
            self.discards[source].remove(tile)
            self.discards[source].reverse()
        self.record_wins(trigger, source, tile, results)

    def _claim(self, seat: int, kind: str, source: int, tile: int, w: OpenWindow) -> None:
        self.discards[source].pop()
        self.ctx.claimed = True
        if kind in ("zhigang", "kaigang", "buzhang"):
            self.complete_kong(seat, kind, tile, source)
            return
        answer = w.responses[seat]
        rest = list(answer.tiles) if kind == "chi" else [tile, tile]
        for t in rest:
            self.hands[seat][t] -= 1
        meld_tiles = tuple(sorted(rest + [tile]))
        self.melds[seat].append(Meld(kind, meld_tiles, source))
        self.emit(kind, {"seat": seat, "tiles": self.names(meld_tiles), "tile": self.name(tile),
                         "from": source})
        self.turn, self.stage, self.drawn[seat] = seat, "play", None
        self.ctx.kong = None

    # ------------------------------------------------------------------ wins and the end

    def record_wins(self, trigger: str, source: int, tile: int,
                    results: list[tuple[int, dict[str, Any]]]) -> None:
        """Record winners (in order from the source), pay them, then continue or end."""
        first = True
        for seat, score in results:
            self.win_order[seat] = max(self.win_order) + 1
            if first:
                self.won_tiles[seat].append(tile)
            first = False
            record = {"seat": seat, "tile": self.name(tile), "from": None if
                      trigger == "self_draw" else source, "trigger": trigger, "multi": len(results) > 1, **score}
            self.wins.append(record)
            self.emit("hu", {k: v for k, v in record.items() if k != "value"})
        self.rules.pay_wins(self, trigger, source, tile, [s for s, _ in results])
        if self.stage == "over":
            return
        if self.rules.continues_after_win and sum(1 for o in self.win_order if o) < 3:
            last = results[-1][0]
            self.next_turn(self.next_active(last))
        else:
            self.end_hand("win" if not self.rules.continues_after_win else "three_won")

    def end_hand(self, reason: str) -> None:
        self.stage, self.end_reason, self.window = "over", reason, None
        self.rules.finish(self)
        totals = [0] * 4
        for p in self.ledger:
            totals[p.payer] -= p.amount
            totals[p.payee] += p.amount
        self.emit("hand_over", {
            "reason": reason, "deltas": totals,
            "winners": [w["seat"] for w in self.wins],
            "next_dealer": self.rules.next_dealer(self),
            "hands": [self.fmt(h) for h in self.hands],
        })

    # ------------------------------------------------------------------ haidi (海底)

    def offer_haidi(self, seat: int) -> None:
        self.haidi = HaidiOffer(seat)
        self.stage, self.turn = "haidi", seat
        self.emit("haidi_offer", {"seat": seat})

    def _haidi_now(self) -> HaidiOffer:
        """The haidi offer; only called in the "haidi" stage, which always has one."""
        assert self.haidi is not None, "no haidi offer was made"
        return self.haidi

    def _haidi_must_take(self, seat: int) -> bool:
        return bool(self.rules.haidi_compulsory(self.options)) and self._haidi_now().offered == 1

    def _haidi_actions(self, seat: int) -> list[Action]:
        if self._haidi_must_take(seat):
            return [Action("haidi", choice="yes")]
        return [Action("haidi", choice="yes"), Action("haidi", choice="no")]

    def _verify_haidi(self, seat: int, action: Action) -> None:
        if action.kind != "haidi" or action.choice not in ("yes", "no"):
            raise IllegalAction("answer the haidi offer: haidi with choice yes or no")
        if action.choice == "no" and self._haidi_must_take(seat):
            raise IllegalAction("taking the haidi tile is compulsory in this room")

    def _do_haidi(self, seat: int, action: Action) -> None:
        haidi = self._haidi_now()
        if action.choice == "no":
            self.emit("haidi_refuse", {"seat": seat})
            if haidi.offered == 4:
                self.end_hand("wall_exhausted")
                return
            haidi.offered += 1
            self.turn = (seat + 1) % 4
            self.emit("haidi_offer", {"seat": self.turn})
            return
        haidi.taker = seat
        self.emit("haidi_take", {"seat": seat})
        self.ctx.haidi_draw = True
        tile = self.draw_for(seat)
        score = self._self_draw_score(seat)
        if score is not None:
            self.hands[seat][tile] -= 1
            self.record_wins("self_draw", seat, tile, [(seat, score)])
            return
        self.hands[seat][tile] -= 1
        self.drawn[seat] = None
        self.discards[seat].append(tile)
        self.emit("discard", {"seat": seat, "tile": self.name(tile), "haidi": True})
        if not self.open_window(seat, tile, "haidi"):
            self.end_hand("wall_exhausted")


def _worth(score: dict[str, Any]) -> int:
    """What 过手加番 compares (§A6 (b): "strictly more fan"): the raw fan, before the cap,
    where the variant counts fan; otherwise the amount per payer."""
    worth: int = score["fan"] if "fan" in score else score["value"]
    return worth


def _as_window(w: OpenWindow) -> Window:
    """The arbiter's view of the open window: candidates and answers keyed by seat."""
    return Window(w.id, w.source, w.tile, w.trigger,
                  {s: frozenset(k) for s, k in w.candidates.items()}, dict(w.responses))
