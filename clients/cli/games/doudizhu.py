"""Dou Dizhu (斗地主) in the terminal: the seat's hand, the bids, the landlord and the bottom,
the trick on the table, the cards each seat has left; one line per event; the result."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from clients.cli.render_events import does, payment_text, seat_name

ALIASES: dict[str, tuple[str, ...]] = {
    "p": ("play",), "play": ("play",), "x": ("pass",), "pass": ("pass",),
    "c": ("call_landlord",), "call": ("call_landlord",),
    "r": ("rob_landlord",), "rob": ("rob_landlord",)}
DECISION_ENDS = frozenset({"play", "pass", "call_landlord", "rob_landlord"})


def _role(seat: int, landlord: Any) -> str:
    if not isinstance(landlord, int):
        return ""
    return " (地主 landlord)" if seat == landlord else " (农民 farmer)"


def observation_lines(obs: Mapping[str, Any], me: int) -> list[str]:
    landlord = obs.get("landlord")
    lines = [f"your hand (手牌): {obs.get('hand') or '-'}{_role(me, landlord)}"]
    counts = obs.get("hand_counts") or ()
    lines.append("cards left: " + ", ".join(
        f"{seat_name(s, me)}{_role(s, landlord)} {n}" for s, n in enumerate(counts)))
    if obs.get("bottom"):
        lines.append(f"bottom (底牌): {' '.join(obs['bottom'])}; x{obs.get('multiplier', 1)}")
    for bid in obs.get("bids") or ():
        if obs.get("phase") in ("call", "rob"):
            lines.append(f"  {_bid_text(int(bid['seat']), bid['kind'], bid['choice'] == 'yes', me)}")
    top = obs.get("top")
    if top:
        lines.append(f"to beat: {' '.join(top['cards'])} ({top['kind']}) by "
                     f"{seat_name(int(top['seat']), me)}")
    return lines


def _bid_text(seat: int, kind: str, yes: bool, me: int) -> str:
    if kind == "call_landlord":
        return f"{does(seat, me, 'call', 'calls')} the landlord (叫地主)" if yes else \
            f"{does(seat, me, 'pass', 'passes')} (不叫)"
    return f"{does(seat, me, 'rob', 'robs')} the landlord (抢地主)" if yes else \
        f"{does(seat, me, 'do', 'does')} not rob (不抢)"


def event_line(kind: str, data: Mapping[str, Any], me: int) -> str | None:
    seat = int(data.get("seat", -1)) if isinstance(data.get("seat"), int) else -1
    if kind == "deal":
        first = int(data.get("first_caller", 0))
        return (f"--- new deal: {does(first, me, 'call', 'calls')} first"
                + (f" (redeal {data['deal_no']})" if data.get("deal_no") else ""))
    if kind == "hand":
        return f"your cards (手牌): {data.get('cards', '')}"
    if kind == "call_landlord":
        return _bid_text(seat, kind, bool(data.get("call")), me)
    if kind == "rob_landlord":
        return _bid_text(seat, kind, bool(data.get("rob")), me) + f", x{data.get('bid_mult', 1)}"
    if kind == "landlord":
        return (f"landlord (地主): {seat_name(seat, me)}; bottom (底牌) "
                f"{' '.join(data.get('bottom') or ())}, x{data.get('bid_mult', 1)}")
    if kind == "play":
        bomb = " 炸弹!" if data.get("bomb") else ""
        return (f"{does(seat, me, 'play', 'plays')} {' '.join(data.get('cards') or ())} "
                f"({data.get('kind')}){bomb}, {data.get('cards_left')} left")
    if kind == "pass":
        return f"{does(seat, me, 'pass', 'passes')} (不要)"
    if kind == "new_trick":
        return f"{seat_name(int(data.get('leader', 0)), me)} leads a new trick"
    if kind == "redeal":
        return "everyone passed: a new deal (重新发牌)"
    if kind == "show_hands":
        return "hands (摊牌): " + "; ".join(
            f"{seat_name(int(h['seat']), me)} {h.get('cards') or '-'}" for h in data.get("hands", ()))
    if kind == "payment":
        return "payment: " + payment_text(int(data["payer"]), int(data["payee"]), data["amount"],
                                          str(data["reason"]), me)
    return None    # "turn" and "hand_over": the prompt and the settlement say it


def settlement_lines(over: Mapping[str, Any], me: int) -> list[str]:
    lines = []
    if over.get("void"):
        lines.append("nobody called: the hand is void (流局)")
    landlord = over.get("landlord")
    if isinstance(landlord, int):
        won = "landlord wins (地主胜)" if over.get("landlord_won") else "farmers win (农民胜)"
        lines.append(f"landlord {seat_name(landlord, me)}: {won}; multiplier "
                     f"x{over.get('multiplier', 1)}")
    return lines
