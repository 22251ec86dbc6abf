"""The one projection of a hand for a seat or a spectator (JSON-ready).

Public: the bids, the bottom once the landlord has taken it (it is shown to all), every
play, how many cards each seat holds, the multiplier so far. Private: a seat's own hand.
Other hands are shown only once the hand is over (摊牌).
"""

from __future__ import annotations

from typing import Any

from games.doudizhu.cards import format_cards, name_list
from games.doudizhu.model import Deal
from games.doudizhu.scoring import multiplier, settlement


def public_view(deal: Deal) -> dict[str, Any]:
    """What a spectator may see."""
    over = deal.phase == "over"
    landlord_known = deal.phase in ("play", "over") and not deal.void
    top = deal.top
    return {
        "variant": "doudizhu",
        "phase": deal.phase,
        "to_act": list(deal.to_act()),
        "first_caller": deal.first_caller,
        "deal_no": deal.deal_no,
        "bids": [{"seat": s, "kind": k, "choice": c} for s, k, c in deal.bids],
        "bidder": deal.landlord if deal.phase in ("call", "rob") else None,
        "landlord": deal.landlord if landlord_known else None,
        "bottom": name_list(deal.bottom) if landlord_known or over else None,
        "hand_counts": [len(h) for h in deal.hands],
        "top": None if top is None else {"seat": top.seat, "cards": name_list(top.cards),
                                         "kind": top.kind, "length": top.length},
        "trick": [{"seat": s, "cards": name_list(c)} for s, c in deal.trick],
        "played": [format_cards(p) for p in deal.played],
        "plays": list(deal.plays),
        **{k: v for k, v in multiplier(deal).items() if k in ("bid_mult", "bombs", "rockets",
                                                                 "multiplier")},
        "winner": deal.winner,
        "all_hands": [format_cards(h) for h in deal.hands] if over else None,
        "scores": list(settlement(deal).deltas) if over else None,
    }


def observation(deal: Deal, seat: int) -> dict[str, Any]:
    """What seat ``seat`` may see."""
    out = public_view(deal)
    out["seat"] = seat
    out["hand"] = format_cards(deal.hands[seat])
    out["role"] = (None if out["landlord"] is None
                   else "landlord" if seat == deal.landlord else "farmer")
    return out
