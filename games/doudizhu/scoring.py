"""Multipliers and settlement (docs/doudizhu.md, "Scoring"): a pure function of the hand.

The stake of one farmer is ``base x M`` with ``M = bid_mult x bomb_mult^bombs x
rocket_mult^rockets x spring_mult (if spring or anti-spring)``, capped at ``max_mult`` when
that is set (封顶). The landlord wins from, or pays, each of the two farmers one stake, so
the ledger is zero-sum by construction.

* spring (春天): the landlord went out and neither farmer played a card;
* anti-spring (反春): a farmer went out and the landlord played only its first lead.
"""

from __future__ import annotations

from typing import Any

from games.doudizhu.cards import format_cards, name_list
from games.doudizhu.model import SEATS, Deal
from games.engine import Event, Payment, Settlement, deltas_from


def spring_flags(deal: Deal) -> tuple[bool, bool]:
    """(spring, anti-spring) of a finished hand."""
    if deal.winner is None or deal.landlord is None:
        return False, False
    farmers = [s for s in range(SEATS) if s != deal.landlord]
    if deal.winner == deal.landlord:
        return all(deal.plays[f] == 0 for f in farmers), False
    return False, deal.plays[deal.landlord] == 1


def multiplier(deal: Deal) -> dict[str, Any]:
    """The parts of the multiplier so far (spring only once the hand is over), the product,
    and the capped product that is paid."""
    opts = deal.options
    spring, anti = spring_flags(deal)
    raw = (deal.bid_mult * opts["bomb_mult"] ** deal.bombs * opts["rocket_mult"] ** deal.rockets
           * (opts["spring_mult"] if spring or anti else 1))
    cap = opts["max_mult"]
    return {"bid_mult": deal.bid_mult, "bombs": deal.bombs, "rockets": deal.rockets,
            "spring": spring, "anti_spring": anti, "uncapped": raw,
            "multiplier": min(raw, cap) if cap else raw}


def settlement(deal: Deal) -> Settlement:
    """The ledger of a finished hand; a void hand (流局) pays nothing."""
    if deal.void or deal.landlord is None or deal.winner is None:
        void = {"variant": "doudizhu", "void": True, "first_caller": deal.first_caller}
        return Settlement((), (0,) * SEATS, (deal.first_caller + 1) % SEATS, void)
    parts = multiplier(deal)
    stake = deal.options["base"] * parts["multiplier"]
    landlord_won = deal.winner == deal.landlord
    farmers = [s for s in range(SEATS) if s != deal.landlord]
    payments = tuple(
        Payment("card_result", f, deal.landlord, stake) if landlord_won
        else Payment("card_result", deal.landlord, f, stake)
        for f in farmers)
    deltas = deltas_from(payments, SEATS)
    details: dict[str, Any] = {
        "variant": "doudizhu", "void": False, "landlord": deal.landlord,
        "winner": deal.winner, "landlord_won": landlord_won,
        "winners": [deal.landlord] if landlord_won else farmers,
        "base": deal.options["base"], "stake": stake, **parts,
        "bottom": name_list(deal.bottom),
        "players": [{"seat": s, "role": "landlord" if s == deal.landlord else "farmer",
                     "delta": deltas[s], "cards_left": len(deal.hands[s]),
                     "plays": deal.plays[s]} for s in range(SEATS)],
    }
    return Settlement(payments, deltas, deal.winner, details)


def finish(deal: Deal) -> list[Event]:
    """Close the hand: show every hand (摊牌), the payments and the hand_over summary."""
    deal.phase = "over"
    deal.turn = None
    deal.asking = []
    result = settlement(deal)
    events = [Event("show_hands", {"hands": [{"seat": s, "cards": format_cards(deal.hands[s])}
                                             for s in range(SEATS)]})]
    events += [Event("payment", {"reason": p.reason, "payer": p.payer, "payee": p.payee,
                                 "amount": p.amount}) for p in result.payments]
    summary = dict(result.details)
    summary["deltas"] = list(result.deltas)
    summary["next_dealer"] = result.next_dealer
    return events + [Event("hand_over", summary)]
