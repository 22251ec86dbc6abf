"""The one projection of a deal for a seat or a spectator (PBGameInfo's meaning, JSON-ready).

A seat sees its own hand, public facts, and what it can deduce itself: the holder of the
friend card knows it is the banker's partner. Other hands appear only face-up in alone mode
with ``alone_open_hands``, and everywhere once the deal is over (摊牌).
"""

from __future__ import annotations

from typing import Any

from games.dadun.cards import card_name, format_cards
from games.dadun.ending import settlement
from games.dadun.model import SEATS, Deal
from games.dadun.trick import friendship, rest_num


def alone_public(deal: Deal) -> bool:
    """Whether everyone knows who plays alone (a dark alone banker is known only at the end)."""
    return deal.is_alone_mode and (not deal.alone_dark or deal.phase == "over")


def teams_public(deal: Deal) -> bool:
    return alone_public(deal) or deal.friend_public or deal.phase == "over"


def _my_partner(deal: Deal, seat: int) -> int | None:
    if deal.is_alone_mode:
        return None
    if teams_public(deal):
        return deal.partner(seat)
    return deal.banker if seat == deal.friend_seat else None


def _scores(deal: Deal) -> list[int]:
    if deal.phase == "over":
        return list(settlement(deal).deltas)
    return list(deal.bomb_score)


def public_view(deal: Deal) -> dict[str, Any]:
    """What a spectator may see."""
    open_hands = alone_public(deal) and deal.options["alone_open_hands"]
    shown = open_hands or deal.phase == "over"
    return {
        "variant": "dadun",
        "phase": deal.phase,
        "to_act": list(deal.to_act()),
        "banker": deal.banker,
        "asking_seat": deal.to_act()[0] if deal.phase == "alone" else None,
        "hand_counts": [rest_num(deal, s) for s in range(SEATS)],
        "desk": [{"seat": p.seat, "cards": format_cards(p.cards), "class": p.cls}
                 for p in deal.desk],
        "desk_points": deal.desk_points,
        "round_index": deal.round_index,
        "catch": list(deal.catch),
        "over_order": list(deal.over_order),
        "is_alone": alone_public(deal),
        "alone_seat": deal.alone_seat if alone_public(deal) else None,
        "friend_card": card_name(deal.friend_card) if deal.friend_card is not None else None,
        "friend_public": deal.friend_public,
        "friendship": friendship(deal),
        "teams": [deal.team_of(s) for s in range(SEATS)] if teams_public(deal) else None,
        "must_play": deal.must_play,
        "bomb_odds": list(deal.bomb_odds),
        "bomb_score": list(deal.bomb_score),
        "bomb_types": [list(t) for t in deal.bomb_types],
        "all_hands": [format_cards(h) for h in deal.hands] if shown else None,
        "scores": _scores(deal),
    }


def observation(deal: Deal, seat: int) -> dict[str, Any]:
    """What seat ``seat`` may see."""
    out = public_view(deal)
    out["seat"] = seat
    out["hand"] = format_cards(deal.hands[seat])
    out["my_partner"] = _my_partner(deal, seat)
    out["token"] = deal.token if deal.turn == seat and deal.phase == "play" else None
    if deal.alone_dark and seat == deal.banker:
        out["is_alone"], out["alone_seat"] = True, seat
    return out

