"""Changsha ledger (§B3, §B5, §B7): opening wins, optional kong points, win payments with
the dealer bonus (算庄闲) and birds (扎鸟), itemised as the base amount plus a "birds" line."""

from __future__ import annotations

from games.mahjong.flow_base import HandCore
from games.mahjong.flow_records import Birds, Kong
from games.mahjong.score_changsha_pay import bird_seat, changsha_payment
from games.mahjong.settle import pay_kong

KONG_POINTS = {"claimed": 1, "concealed": 2, "added": 1}
_WIN_REASONS = {"self_draw": "self_draw", "discard": "discard_win", "rob_kong": "rob_kong",
                "kaigang_reveal": "kong_shot", "haidi": "haidi_shot"}


def kong_money(state: HandCore, kong: Kong) -> None:
    """Classic Changsha pays nothing for kongs; option ``gang_points``: 1 / 2 each / 1 each."""
    if state.options["gang_points"]:
        pay_kong(state, kong, KONG_POINTS)


def _pair(state: HandCore, x: int, big_hu: int, winner: int, payer: int, birds: list[int],
          reason: str) -> None:
    """Pay one winner-payer pair: X + dealer bonus, then the bird increase as its own line."""
    opts, dealer, base = state.options, state.dealer, state.base()
    plain = changsha_payment(x, big_hu, winner, payer, dealer, 0, opts) * base
    full = changsha_payment(x, big_hu, winner, payer, dealer,
                            birds[winner] + birds[payer], opts) * base
    state.pay(reason, payer, winner, plain)
    state.pay("birds", payer, winner, full - plain)


def pay_wins(state: HandCore, trigger: str, source: int, tile: int, winners: list[int]) -> None:
    birds = _draw_birds(state, source, tile, winners)
    for record in state.wins[-len(winners):]:
        seat = record["seat"]
        payers = [s for s in range(4) if s != seat] if trigger == "self_draw" else [source]
        for payer in payers:
            _pair(state, record["value"], record["big_hu"], seat, payer, birds,
                  _WIN_REASONS[trigger])


def _draw_birds(state: HandCore, source: int, tile: int, winners: list[int]) -> list[int]:
    """N birds from the back (the 海底 tile alone when the wall is empty); per-seat hits."""
    count = state.options["bird_count"]
    hits = [0] * 4
    if count == 0:
        return hits
    if state.options["bird_origin"] == "dealer":
        origin = state.dealer
    else:
        origin = source if len(winners) > 1 else winners[0]
    from_wall = state.wall.remaining() > 0
    if from_wall:
        tiles = [state.wall.draw_back() for _ in range(min(count, state.wall.remaining()))]
    else:
        tiles = [tile]
    for t in tiles:
        hits[bird_seat(t % 9 + 1, origin)] += 1
    state.birds = Birds(tuple(state.names(tiles)), origin, tuple(hits), from_wall)
    state.emit("birds", {"tiles": state.names(tiles), "origin": origin, "hits": hits})
    return hits


def pay_opening(state: HandCore, seat: int, types: list[str]) -> None:
    """Each opening win is a small-hu self-draw: every other player pays X = 2 (+ bonus);
    option ``two_dice``: two dice pips act as birds counted from the declarer."""
    hits = [0] * 4
    if state.options["opening_hu_birds"] == "two_dice":
        pips = [state.rng.below(6) + 1, state.rng.below(6) + 1]
        for pip in pips:
            hits[bird_seat(pip, seat)] += 1
        state.emit("birds", {"dice": pips, "origin": seat, "hits": hits})
    for _ in types:
        for payer in range(4):
            if payer != seat:
                _pair(state, 2, 0, seat, payer, hits, "opening_hu")


def next_dealer(state: HandCore) -> int:
    """The winner; on 通炮 the discarder (or his next seat, by option); on a draw the 海底
    taker, else the first player it was offered to; no offer at all: the dealer stays."""
    if state.wins:
        first = state.wins[0]
        if not first["multi"]:
            winner: int = first["seat"]
            return winner
        shift = 1 if state.options["next_dealer_on_multi_ron"] == "discarder_next" else 0
        discarder: int = first["from"]
        return (discarder + shift) % 4
    if state.haidi is not None:
        taker = state.haidi.taker
        return state.haidi.first if taker is None else taker
    return state.dealer
