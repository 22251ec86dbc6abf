"""Bidding for the landlord (docs/doudizhu.md, "Bidding"): 叫地主, then one round of 抢地主.

* ``call`` phase: from the first caller, each seat in turn calls (``call_landlord`` "yes",
  叫地主) or passes ("no", 不叫). The first call makes that seat the bidder. Three passes:
  a redeal (``all_pass = redeal``) or a void hand (``void``, 流局).
* ``rob`` phase (``bidding = call_rob``): each seat after the caller that was not yet asked
  may rob (``rob_landlord`` "yes", 抢地主, the stake x ``rob_mult``) or not ("no"); a seat
  that passed on calling may not rob. If anyone robbed, the caller has the last word: a rob
  back (x ``rob_mult`` again) or not. The last seat to call or rob is the landlord.

Each ``verify_*`` raises a RuleError and never mutates; each ``apply_*`` assumes a verified
action and returns the events it caused.
"""

from __future__ import annotations

from games.doudizhu.dealing import prompt, redeal, take_bottom
from games.doudizhu.model import Deal
from games.doudizhu.scoring import finish
from games.engine import Action, BadInput, Event, HandOver, IllegalAction, NotYourTurn

PHASE_OF = {"call_landlord": "call", "rob_landlord": "rob"}


def verify_bid(deal: Deal, seat: int, action: Action) -> None:
    if deal.phase == "over":
        raise HandOver("the hand is over")
    phase = PHASE_OF[action.kind]
    if deal.phase != phase:
        raise IllegalAction(f"{action.kind} is not possible in phase {deal.phase!r}",
                            "wrong_phase")
    if seat not in deal.to_act():
        raise NotYourTurn(f"seat {seat} is not the one to decide now")
    if action.choice not in ("yes", "no") or action.tiles or action.ref:
        raise BadInput(f"{action.kind} needs choice 'yes' or 'no' and nothing else")


def apply_call(deal: Deal, seat: int, action: Action) -> list[Event]:
    called = action.choice == "yes"
    deal.bids.append([seat, action.kind, action.choice])
    deal.asking.pop(0)
    events = [Event("call_landlord", {"seat": seat, "call": called})]
    if called:
        deal.caller = deal.landlord = seat
        if deal.options["bidding"] == "call_only" or not deal.asking:
            return events + take_bottom(deal)
        deal.phase = "rob"
        return events + [prompt(deal)]
    if deal.asking:
        return events + [prompt(deal)]
    if deal.options["all_pass"] == "void":
        deal.void = True
        return events + finish(deal)
    return events + redeal(deal)


def apply_rob(deal: Deal, seat: int, action: Action) -> list[Event]:
    robbed = action.choice == "yes"
    deal.bids.append([seat, action.kind, action.choice])
    deal.asking.pop(0)
    if robbed:
        deal.landlord = seat
        deal.bid_mult *= deal.options["rob_mult"]
    events = [Event("rob_landlord", {"seat": seat, "rob": robbed, "bid_mult": deal.bid_mult})]
    if deal.asking:
        return events + [prompt(deal)]
    anyone = any(kind == "rob_landlord" and choice == "yes" for _, kind, choice in deal.bids)
    if anyone and not deal.final_ask and deal.caller is not None:
        deal.final_ask = True
        deal.asking = [deal.caller]
        return events + [prompt(deal)]
    return events + take_bottom(deal)
