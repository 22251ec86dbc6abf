"""Ledger pieces shared by both variants: kong money (杠钱, 刮风下雨) with every payment
linked to its kong, so 呼叫转移 and 退税 can find the original payments."""

from __future__ import annotations

from games.mahjong.flow_base import HandCore
from games.mahjong.flow_records import Kong

# Reason names by how the kong was made: claimed from a discard, concealed, added to a peng.
KONG_REASONS = {"claimed": "zhigang", "concealed": "angang", "added": "bugang"}


def pay_kong(state: HandCore, kong: Kong, amounts: dict[str, int]) -> None:
    """Pay ``amounts[origin]`` x base for ``kong``: from the feeder for a claimed kong, from
    every other active seat otherwise. Ledger indices are kept in ``kong.payments``."""
    amount = amounts.get(kong.origin, 0) * state.base()
    if amount <= 0:
        return
    seat = kong.seat
    if kong.origin == "claimed":
        assert kong.source is not None, "a claimed kong names its feeder"
        payers = [kong.source]
    else:
        payers = [s for s in range(4) if s != seat and state.active(s)]
    for payer in payers:
        kong.payments.append(len(state.ledger))
        state.pay(KONG_REASONS[kong.origin], payer, seat, amount, f"kong:{kong.id}")


def kong_income(state: HandCore, kong: Kong) -> list[tuple[int, int]]:
    """(payer, amount) of every payment the kong's owner received for it."""
    out = []
    for index in kong.payments:
        p = state.ledger[index]
        out.append((p.payer, p.amount))
    return out

