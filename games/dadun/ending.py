"""End of a deal (../shared/rules/dadun.md §2.7-2.8, §3.5): the unfinished trick goes to its
last player, the remaining hands are shown (摊牌) and the deal is settled.

Decision [D]: when the play that ends the deal leaves points on the desk, nobody can answer
it any more, so its player catches them, exactly as at the end of a trick.
"""

from __future__ import annotations

from games.dadun.cards import format_cards, point_value
from games.dadun.model import SEATS, Deal
from games.dadun.scoring import DealOutcome, settle
from games.dadun.trick import clear_desk
from games.engine import Event, Payment, Settlement


def outcome(deal: Deal) -> DealOutcome:
    return DealOutcome(
        banker=deal.banker,
        alone_seat=deal.alone_seat,
        friend_seat=deal.friend_seat,
        teams=tuple(deal.team_of(s) for s in range(SEATS)),
        over_order=tuple(deal.over_order),
        catch=tuple(deal.catch),
        leftover=tuple(point_value(h) for h in deal.hands),
        dealt=tuple(tuple(h) for h in deal.dealt),
        bomb_payments=tuple(Payment(**p) for p in deal.bomb_payments),
        bomb_odds=tuple(deal.bomb_odds),
        fry_played=tuple(deal.fry_played),
    )


def settlement(deal: Deal) -> Settlement:
    return settle(outcome(deal), deal.options)


def finish(deal: Deal) -> list[Event]:
    """Close the deal: final 清桌, 摊牌, the settlement payments and the hand_over summary."""
    events = [clear_desk(deal)] if deal.desk else []
    deal.phase = "over"
    deal.turn = None
    deal.must_play = False
    deal.token = ""
    events.append(Event("show_hands", {
        "hands": [{"seat": s, "cards": format_cards(deal.hands[s])} for s in range(SEATS)]}))
    result = settlement(deal)
    for p in result.payments[len(deal.bomb_payments):]:
        events.append(Event("payment", {
            "reason": p.reason, "payer": p.payer, "payee": p.payee, "amount": p.amount}))
    summary = dict(result.details)
    summary["deltas"] = list(result.deltas)
    summary["next_banker"] = result.next_dealer
    events.append(Event("hand_over", summary))
    return events
