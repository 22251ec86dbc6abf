"""Dou Dizhu (斗地主) as a deterministic state machine (docs/doudizhu.md).

Three seats, one 54-card pack. Phases: ``call`` (叫地主, asked seat by seat from the first
caller) -> ``rob`` (抢地主, one round, with ``bidding = call_rob``) -> ``play`` (the landlord
takes the bottom and leads; tricks until a seat is out of cards) -> ``over``. The parts live
in role modules: :mod:`.dealing` (deck, redeal, prompts), :mod:`.bidding`, :mod:`.play`,
:mod:`.scoring` (multipliers, settlement), :mod:`.views` (redaction), :mod:`.combos` and
:mod:`.legal` (the rules of plays), :mod:`.options`.

``legal_actions(seat)`` lists every legal play of the seat, one per distinct rank multiset
(suits never matter; the cards named are the lowest suits of each rank), and "pass" for a
follower; ``verify``/``can``/``apply`` accept any cards of the hand that make a legal play.

After :func:`new_hand`, :meth:`DoudizhuState.deal_events` gives the opening events (the
public "deal", each seat's private "hand", the first "turn" prompt).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from games.doudizhu import bidding, play, views
from games.doudizhu.cards import card_name, full_deck, rank_counts
from games.doudizhu.dealing import opening_events, shuffled_deck, split, start_bidding
from games.doudizhu.entrust import lead_card
from games.doudizhu.legal import legal_plays, pick_cards
from games.doudizhu.model import BOTTOM_SIZE, HAND_SIZE, SEATS, Deal
from games.doudizhu.options import DEFAULT_OPTIONS, parse_options
from games.doudizhu.scoring import settlement
from games.engine import (
    Action,
    BadInput,
    DealBacked,
    Event,
    NotYourTurn,
    NoWindows,
    RuleError,
    Settlement,
    ViewThenActions,
    check_seat,
)
from games.fair import Seed, check_seed, seed_to_json

NAME = "doudizhu"
__all__ = ["NAME", "DEFAULT_OPTIONS", "SEATS", "DoudizhuState", "new_hand",
           "new_hand_from_deal", "deserialize", "parse_options", "shuffled_deck",
           "deal_layout"]

_BID_KIND = {"call": "call_landlord", "rob": "rob_landlord"}


_Handler = Callable[[Deal, int, Action], Any]
_VERIFY: dict[str, _Handler] = {
    "call_landlord": bidding.verify_bid,
    "rob_landlord": bidding.verify_bid,
    "play": play.verify_play,
    "pass": play.verify_pass,
}


class DoudizhuState(NoWindows, ViewThenActions, DealBacked):
    """One hand; implements :class:`games.engine.State` (Dou Dizhu has no response windows)."""

    num_seats = SEATS
    title = "Dou Dizhu"
    verifiers = _VERIFY
    deal: Deal

    def legal_actions(self, seat: int) -> list[Action]:
        d = self.deal
        if seat not in d.to_act():
            return []
        if d.phase in _BID_KIND:
            kind = _BID_KIND[d.phase]
            return [Action(kind, choice="yes"), Action(kind, choice="no")]
        hand = d.hands[seat]
        top = play.top_combo(d)
        out = [Action("play", tiles=tuple(card_name(c) for c in pick_cards(hand, ranks)))
               for ranks, _ in legal_plays(rank_counts(hand), top)]
        if top is not None:
            out.append(Action("pass"))
        return out

    def apply(self, seat: int, action: Action) -> list[Event]:
        """Verify, then mutate; a rejected action raises and leaves the state unchanged."""
        self.verify(seat, action)
        return _APPLY[action.kind](self.deal, seat, action)

    def default_action(self, seat: int) -> Action:
        """Timeout / entrust: never call or rob; a follower passes; a leader plays its lowest
        card that breaks no bomb and not the rocket."""
        d = self.deal
        if seat not in d.to_act():
            raise NotYourTurn(f"seat {seat} has nothing to decide now")
        if d.phase in _BID_KIND:
            return Action(_BID_KIND[d.phase], choice="no")
        if d.top is not None:
            return Action("pass")
        return Action("play", tiles=(card_name(lead_card(d.hands[seat])),))

    # -- views, result, persistence --------------------------------------------------------

    def deal_events(self) -> list[Event]:
        """The public "deal", each seat's private "hand", then the first "turn" prompt."""
        return opening_events(self.deal)

    def observation(self, seat: int) -> dict[str, Any]:
        return views.observation(self.deal, self.check_seat(seat))

    def public_view(self) -> dict[str, Any]:
        return views.public_view(self.deal)

    def settlement(self) -> Settlement:
        if not self.is_over():
            raise RuleError("the hand is not over", "hand_not_over")
        return settlement(self.deal)


_APPLY: dict[str, Callable[[Deal, int, Action], list[Event]]] = {
    "call_landlord": bidding.apply_call,  # apply() verified the bid already
    "rob_landlord": bidding.apply_rob,
    "play": play.apply_play,
    "pass": play.apply_pass,
}


def _start(options: Mapping[str, Any] | None, seed: Seed, first_caller: int,
           hands: list[list[int]], bottom: list[int]) -> DoudizhuState:
    deal = Deal(options=parse_options(options), seed=seed_to_json(seed),
                first_caller=check_seat(first_caller, SEATS, "the first caller"),
                hands=[sorted(h) for h in hands], dealt=[sorted(h) for h in hands],
                bottom=sorted(bottom))
    start_bidding(deal)
    return DoudizhuState(deal)


def new_hand(options: Mapping[str, Any] | None, seed: Seed, dealer: int) -> DoudizhuState:
    """A shuffled deal of 17 cards each and a bottom of 3; ``dealer`` is the first seat asked
    to call the landlord. ``seed``: an int or a 32-byte hand seed (games.fair); anything else
    is BadInput."""
    seed = check_seed(seed)
    hands, bottom = split(shuffled_deck(seed))
    return _start(options, seed, dealer, hands, bottom)


def new_hand_from_deal(options: Mapping[str, Any] | None, hands: Sequence[Sequence[int]],
                       bottom: Sequence[int], first_caller: int, seed: Seed = 0) -> DoudizhuState:
    """An explicit deal (tests, conformance, replays of a recorded deal): three hands of 17
    and a bottom of 3 that together are the 54-card pack. A redeal after three passes
    shuffles from ``seed``."""
    if len(hands) != SEATS or any(len(h) != HAND_SIZE for h in hands) \
            or len(bottom) != BOTTOM_SIZE:
        raise BadInput("an explicit deal needs three hands of 17 cards and a bottom of 3")
    if sorted([c for h in hands for c in h] + list(bottom)) != full_deck():
        raise BadInput("the hands and the bottom must together be the 54-card pack")
    return _start(options, check_seed(seed), first_caller, [list(h) for h in hands],
                  list(bottom))


def deserialize(text: str) -> DoudizhuState:
    try:
        deal = Deal.from_json(json.loads(text))
    except (ValueError, TypeError, KeyError) as exc:
        raise BadInput(f"not a serialized Dou Dizhu state: {exc}") from exc
    return DoudizhuState(deal)


def deal_layout(seed: Seed) -> dict[str, list[str]]:
    """What a replay stores of the shuffle (docs/doudizhu.md): the first deal's deck in deal
    order (seat k: 17k .. 17k+16, the bottom 51..53); a redeal's deck is the next shuffle of
    the same stream, checked by re-running the hand."""
    return {"deck": [card_name(c) for c in shuffled_deck(seed)]}
