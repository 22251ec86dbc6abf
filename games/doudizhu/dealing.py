"""The deal (docs/doudizhu.md, "The deal from the fair seed"), redeals and turn prompts.

The deck is the 54 codes in code order, shuffled by Fisher-Yates with the hand seed's "deck"
sub-stream (:func:`games.fair.stream`); seat k gets positions 17k .. 17k+16 and the bottom
(底牌) is positions 51..53. A redeal after three passes shuffles a fresh code-order deck with
the *same* stream continued, so deal ``n`` (0 first) is the (n+1)-th shuffle of that stream.
"""

from __future__ import annotations

from games.doudizhu.cards import format_cards, full_deck, name_list
from games.doudizhu.model import BOTTOM_SIZE, HAND_SIZE, SEATS, Deal
from games.engine import Event
from games.fair import Seed, check_seed, seed_from_json, stream


def shuffled_deck(seed: Seed, deal_no: int = 0) -> list[int]:
    """The deck of deal ``deal_no`` in deal order (seat k: 17k .. 17k+16, bottom: 51..53)."""
    shuffler = stream(check_seed(seed), "deck")
    deck = full_deck()
    for _ in range(deal_no + 1):
        deck = full_deck()
        shuffler.shuffle(deck)
    return deck


def split(deck: list[int]) -> tuple[list[list[int]], list[int]]:
    """Three sorted hands of 17 and the sorted bottom of 3."""
    hands = [sorted(deck[s * HAND_SIZE:(s + 1) * HAND_SIZE]) for s in range(SEATS)]
    return hands, sorted(deck[SEATS * HAND_SIZE:SEATS * HAND_SIZE + BOTTOM_SIZE])


def start_bidding(deal: Deal) -> None:
    """Ask every seat in turn from the first caller whether it calls the landlord."""
    deal.phase = "call"
    deal.asking = [(deal.first_caller + i) % SEATS for i in range(SEATS)]
    deal.caller = deal.landlord = None
    deal.final_ask = False
    deal.bids = []
    deal.bid_mult = 1


def prompt(deal: Deal) -> Event:
    """The public prompt of the decision now: who, in which phase, and the table's timer."""
    (seat,) = deal.to_act()
    bidding = deal.phase in ("call", "rob")
    countdown = deal.options["bid_timeout_s" if bidding else "play_timeout_s"]
    return Event("turn", {"seat": seat, "phase": deal.phase,
                          "must_play": deal.phase == "play" and deal.top is None,
                          "countdown": countdown})


def opening_events(deal: Deal) -> list[Event]:
    """The public "deal", each seat's private "hand", then the first prompt."""
    events = [Event("deal", {"first_caller": deal.first_caller, "deal_no": deal.deal_no,
                             "cards_per_seat": HAND_SIZE, "bottom_cards": BOTTOM_SIZE})]
    events += [Event("hand", {"cards": format_cards(deal.hands[s])}, to=s) for s in range(SEATS)]
    return events + [prompt(deal)]


def redeal(deal: Deal) -> list[Event]:
    """Everyone passed (``all_pass = redeal``): the next shuffle of the deck stream, and the
    next seat is asked first."""
    deal.deal_no += 1
    deal.first_caller = (deal.first_caller + 1) % SEATS
    hands, bottom = split(shuffled_deck(seed_from_json(deal.seed), deal.deal_no))
    deal.hands, deal.dealt, deal.bottom = hands, [list(h) for h in hands], bottom
    start_bidding(deal)
    return [Event("redeal", {"deal_no": deal.deal_no, "first_caller": deal.first_caller}),
            *opening_events(deal)]


def take_bottom(deal: Deal) -> list[Event]:
    """The landlord is known: it takes the bottom (shown to all) and leads the first trick."""
    landlord = deal.landlord
    assert landlord is not None
    deal.hands[landlord] = sorted(deal.hands[landlord] + deal.bottom)
    deal.phase = "play"
    deal.asking = []
    deal.turn = landlord
    return [Event("landlord", {"seat": landlord, "bottom": name_list(deal.bottom),
                               "bid_mult": deal.bid_mult}),
            Event("hand", {"cards": format_cards(deal.hands[landlord])}, to=landlord),
            prompt(deal)]
