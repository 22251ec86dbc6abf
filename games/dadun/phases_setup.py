"""The two decisions before the first lead (../shared/rules/dadun.md §2, §4, §5):

* 打独 (alone): seats are asked one at a time from the banker clockwise (or only the banker,
  ``alone_askers``); the first "yes" plays alone, four "no"s lead to
* 找朋友 (friend): the banker names one card held once in their hand; the holder of the other
  copy is the secret partner. With ``both_copies=play_alone_dark`` a banker may name a card
  held twice and then plays alone without telling anyone.

Each ``verify_*`` raises a RuleError and never mutates; each ``apply_*`` assumes a verified
action and returns the events it caused.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from games.dadun.cards import card_name, format_cards
from games.dadun.model import Deal
from games.dadun.trick import parse_names, prompt_lead
from games.engine import Action, BadInput, Event, HandOver, IllegalAction, NotYourTurn


def _check_phase(deal: Deal, seat: int, phase: str, kind: str) -> None:
    if deal.phase == "over":
        raise HandOver("the deal is over")
    if deal.phase != phase:
        raise IllegalAction(f"{kind} is not possible in phase {deal.phase!r}", "wrong_phase")
    if seat not in deal.to_act():
        raise NotYourTurn(f"seat {seat} is not the one to decide now")


def hint_alone(deal: Deal) -> Event:
    seat = deal.ask_order[deal.ask_index]
    countdown = deal.options["alone_timeout_s"]
    return Event("hint_alone", {"seat": seat, "can_alone": True, "countdown": countdown})


# -- 打独 ---------------------------------------------------------------------------------


def verify_alone(deal: Deal, seat: int, action: Action) -> None:
    _check_phase(deal, seat, "alone", "choose_alone")
    if action.choice not in ("yes", "no") or action.tiles:
        raise BadInput("choose_alone needs choice 'yes' or 'no' and no cards")


def apply_alone(deal: Deal, seat: int, action: Action) -> list[Event]:
    if action.choice == "no":
        events = [Event("alone", {"seat": seat, "is_alone": False})]
        deal.ask_index += 1
        if deal.ask_index < len(deal.ask_order):
            return events + [hint_alone(deal)]
        deal.phase = "friend"
        return events
    deal.alone_seat = seat
    data: dict[str, Any] = {"seat": seat, "is_alone": True}
    if deal.options["alone_open_hands"]:
        data["all_hands"] = [format_cards(h) for h in deal.hands]
    deal.phase = "play"
    leader = seat if deal.options["alone_leads"] else deal.banker
    return [Event("alone", data), *prompt_lead(deal, leader)]


# -- 找朋友 -------------------------------------------------------------------------------


def verify_friend(deal: Deal, seat: int, action: Action) -> int:
    """The friend card's code, if the banker may name it."""
    _check_phase(deal, seat, "friend", "choose_friend_card")
    if len(action.tiles) != 1:
        raise BadInput("choose_friend_card needs exactly one card")
    code = parse_names(action.tiles)[0]
    held = deal.hands[seat].count(code)
    if held == 0:
        raise IllegalAction(f"{card_name(code)} is not in your hand", "card_not_in_hand")
    if held == 2 and deal.options["both_copies"] == "reject":
        raise IllegalAction(
            f"you hold both copies of {card_name(code)}: choose a card you hold once",
            "both_copies",
        )
    return code


def apply_friend(deal: Deal, seat: int, action: Action) -> list[Event]:
    code = verify_friend(deal, seat, action)
    deal.friend_card = code
    holders = [s for s in range(4) if s != seat and code in deal.hands[s]]
    if holders:
        deal.friend_seat = holders[0]
    else:  # both_copies=play_alone_dark: the banker is secretly alone
        deal.alone_seat = seat
        deal.alone_dark = True
    deal.phase = "play"
    event = Event("friend_card", {"banker": seat, "card": card_name(code)})
    return [event, *prompt_lead(deal, seat)]


def friend_candidates(deal: Deal) -> list[int]:
    """Codes the banker may name, ascending (each distinct code once)."""
    counts = Counter(deal.hands[deal.banker])
    allow_both = deal.options["both_copies"] != "reject"
    return sorted(c for c, n in counts.items() if n == 1 or allow_both)
