"""XueZhan ledger (§A6, §A9, §A10): instant win and kong money, 呼叫转移 (call transfer) on
杠上炮, and at wall exhaustion 查花猪 -> 查大叫 -> 退税, in that order."""

from __future__ import annotations

from games.mahjong import SUITS
from games.mahjong.flow_base import HandCore
from games.mahjong.flow_records import Kong
from games.mahjong.score_xuezhan import xuezhan_ready_value
from games.mahjong.settle import kong_income, pay_kong

KONG_AMOUNTS = {"claimed": 2, "concealed": 2, "added": 1}
_WIN_REASONS = {"self_draw": "self_draw", "discard": "discard_win", "rob_kong": "rob_kong"}


def kong_money(state: HandCore, kong: Kong) -> None:
    """直杠 2 from the feeder, 暗杠 2 from each active opponent, 补杠 1 from each - the
    last only for a freshly drawn fourth tile unless ``bugang_needs_fresh_tile`` is off."""
    amounts = dict(KONG_AMOUNTS)
    if kong.origin == "added" and not kong.fresh and state.options["bugang_needs_fresh_tile"]:
        amounts["added"] = 0
    pay_kong(state, kong, amounts)


def pay_wins(state: HandCore, trigger: str, source: int, tile: int, winners: list[int]) -> None:
    """Each winner is paid per payer ``per_payer x base``; see §A9 for who pays."""
    records = state.wins[-len(winners):]
    for record in records:
        seat, amount = record["seat"], record["value"] * state.base()
        payers = _payers(state, trigger, source, seat)
        for payer in payers:
            state.pay(_WIN_REASONS[trigger], payer, seat, amount)
    shot = state.ctx.shot
    if trigger == "discard" and shot is not None and state.options["call_transfer"]:
        _call_transfer(state, state.kongs[shot], winners[0])


def _payers(state: HandCore, trigger: str, source: int, seat: int) -> list[int]:
    if trigger != "self_draw":
        return [source]
    kong = state.ctx.kong
    if kong is not None and state.options["dian_gang_hua"] == "discarder_pays":
        feeder = state.kongs[kong].source
        if state.kongs[kong].origin == "claimed" and feeder is not None and state.active(feeder):
            return [feeder]
    return [s for s in range(4) if s != seat and state.active(s)]


def _call_transfer(state: HandCore, kong: Kong, winner: int) -> None:
    """呼叫转移: the konger hands the money of that kong to the (nearest) winner."""
    income = sum(amount for _, amount in kong_income(state, kong))
    if income and not kong.transferred:
        kong.transferred = True
        state.pay("call_transfer", kong.seat, winner, income, f"kong:{kong.id}")


def finish(state: HandCore) -> None:
    """At wall exhaustion: 查花猪, then 查大叫, then 退税 (§A10). Nothing after three wins."""
    if state.end_reason != "wall_exhausted":
        return
    base, cap = state.base(), state.options["cap_fan"]
    open_seats = [s for s in range(4) if state.active(s)]
    pigs = [s for s in open_seats if _holds_void(state, s)]
    ready = {s: _ready_value(state, s) for s in open_seats if s not in pigs}
    pig_amount = base * 2 ** (4 if cap in (None, "none") else cap)
    for pig in pigs:
        takers = [s for s in open_seats if s not in pigs]
        if state.options["pigs_pay_winners"]:
            takers += [s for s in range(4) if not state.active(s)]
        for taker in sorted(takers):
            state.pay("flower_pig", pig, taker, pig_amount)
    for seat, value in ready.items():
        if value:
            continue
        for other, other_value in ready.items():
            if other_value:
                state.pay("not_ready", seat, other, other_value * base)
    for seat in open_seats:
        if seat in pigs or not ready[seat]:
            _refund(state, seat)
    state.extra["pigs"] = pigs
    state.extra["ready"] = sorted(s for s, v in ready.items() if v)
    state.extra["ready_values"] = {str(s): v for s, v in sorted(ready.items())}


def _void_suit(state: HandCore, seat: int) -> int:
    """The seat's void suit 0..2 (定缺), always declared before play."""
    suit = state.voids[seat]
    assert suit is not None, "void suits are declared before play"
    return SUITS.index(suit)


def _holds_void(state: HandCore, seat: int) -> bool:
    void = _void_suit(state, seat)
    return any(state.hands[seat][9 * void : 9 * void + 9])


def _ready_value(state: HandCore, seat: int) -> int:
    void = _void_suit(state, seat)
    return xuezhan_ready_value(state.hands[seat], state.melds[seat], void, state.options)


def _refund(state: HandCore, seat: int) -> None:
    """退税: return every kong payment received (kongs moved by 呼叫转移 excepted)."""
    for kong in state.kongs:
        if kong.seat != seat or kong.transferred:
            continue
        for payer, amount in kong_income(state, kong):
            state.pay("kong_refund", seat, payer, amount, f"kong:{kong.id}")


def next_dealer(state: HandCore) -> int:
    """First winner (the discarder if that first win was a multi-win discard); nobody won:
    the dealer stays. Option ``rotate``: the next seat."""
    if state.options["next_dealer"] == "rotate":
        return (state.dealer + 1) % 4
    if not state.wins:
        return state.dealer
    first = state.wins[0]
    dealer: int = first["from"] if first["multi"] else first["seat"]
    return dealer
