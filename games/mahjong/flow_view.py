"""What a seat or a spectator may see (the one projection of hidden information).

A seat sees its own concealed tiles, drawn tile, exchange and void; of the others only the
table: melds (a concealed kong face down), discards, hand sizes and voids once revealed."""

from __future__ import annotations

from typing import Any

from games.engine import Action
from games.mahjong import SUITS, tile_name
from games.mahjong.flow_base import HandCore
from games.mahjong.meld import Meld


class ViewMixin(HandCore):
    """Observation (the hidden-information projection) of :class:`~games.mahjong.flow.MahjongState`."""

    def public_view(self) -> dict[str, Any]:
        return self._view(None, [])

    def observation(self, seat: int) -> dict[str, Any]:
        return self._view(seat, self.legal_actions(seat))

    def view_and_actions(self, seat: int) -> tuple[dict[str, Any], list[Action]]:
        """The observation lists the seat's legal actions: they are computed once."""
        actions = self.legal_actions(seat)
        return self._view(seat, actions), actions

    def _view(self, seat: int | None, actions: list[Action]) -> dict[str, Any]:
        """``actions``: the seat's legal actions (its "candidates"; unused for a spectator)."""
        voids_public = self.stage not in ("exchange", "void")
        w = self.window
        view: dict[str, Any] = {
            "variant": self.rules.name,
            "seat": seat,
            "dealer": self.dealer,
            "phase": self.stage,
            "to_act": self._visible_to_act(seat),
            "melds": [[self._meld_view(m, seat == owner) for m in self.melds[owner]]
                      for owner in range(4)],
            "discards": [self.names(d) for d in self.discards],
            "wall_remaining": self.wall.remaining(),
            "void": [v if voids_public or owner == seat else None
                     for owner, v in enumerate(self.voids)],
            "won": [o if o else False for o in self.win_order],
            "won_tiles": [self.names(t) for t in self.won_tiles],
            "hand_counts": [sum(h) for h in self.hands],
            "window": None if w is None else {"id": w.id, "tile": self.name(w.tile),
                                              "source": w.source, "trigger": w.trigger},
            "scores": self._running_scores(),
            "wins": [{k: v for k, v in win.items() if k != "value"} for win in self.wins],
        }
        view.update(self.rules.view_extras(self))
        if seat is None:
            return view
        view["hand"] = self.fmt(self.hands[seat])
        drawn = self.drawn[seat]
        view["drawn"] = None if drawn is None or seat != self.turn else tile_name(drawn)
        sel, recv = self.exchange_sel[seat], self.exchange_recv[seat]
        view["exchange"] = None if sel is None else {
            "given": self.names(sel), "received": None if recv is None else self.names(recv)}
        view["candidates"] = [a.to_dict() for a in actions]
        return view

    def _visible_to_act(self, seat: int | None) -> list[int]:
        """Who may answer a window or declare an opening win depends on hidden tiles: a seat
        sees only itself there, a spectator nobody."""
        acting = self.to_act()
        if self.stage in ("window", "opening"):
            return [seat] if seat in acting else []
        return list(acting)

    def _meld_view(self, meld: Meld, own: bool) -> dict[str, Any]:
        hidden = meld.concealed and meld.kind == "angang" and not own
        tiles = "" if hidden else "".join(tile_name(t)[0] for t in meld.tiles) + \
            SUITS[meld.tiles[0] // 9]
        return {"kind": meld.kind, "tiles": tiles, "from": meld.source}

    def _running_scores(self) -> list[int]:
        out = [0] * 4
        for p in self.ledger:
            out[p.payer] -= p.amount
            out[p.payee] += p.amount
        return out
