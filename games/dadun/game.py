"""Chongren Dadun (崇仁打盾) as a deterministic state machine (../shared/rules/dadun.md).

Phases: ``alone`` (打独 asked seat by seat) -> ``friend`` (找朋友, only when nobody went
alone) -> ``play`` (tricks until a team, or in alone mode anyone, is out) -> ``over``.
The parts live in role modules: :mod:`.phases_setup` (alone, friend), :mod:`.trick` (the
play loop), :mod:`.ending` and :mod:`.scoring` (settlement), :mod:`.views` (redaction),
:mod:`.entrust` (timeout choices), :mod:`.options` (room options).

``legal_actions(seat)`` in phase "play" is a bounded candidate list (``hint_plays`` plus
"pass" for a follower), not every legal play: a 27-card lead has far too many.
``verify``/``can``/``apply`` accept any legal play, listed or not.

After :func:`new_hand`, :meth:`DadunState.deal_events` gives the opening events (the public
"deal", each seat's private "hand", the first "hint_alone").
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from games.dadun import phases_setup, trick, views
from games.dadun.cards import card_name, format_cards, full_deck
from games.dadun.ending import finish, settlement
from games.dadun.entrust import default_friend_card, entrust_lead
from games.dadun.legal import hint_plays
from games.dadun.model import SEATS, Deal
from games.dadun.options import DEFAULT_OPTIONS, normalize_options
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
from games.fair import Seed, check_seed, seed_to_json, stream, sub_seed

NAME = "dadun"
HINT_LIMIT = 8
__all__ = ["NAME", "DEFAULT_OPTIONS", "DadunState", "new_hand", "new_hand_from_deal",
           "deserialize", "parse_options", "shuffled_deck", "deal_layout"]
# The full option dict: ``options`` over the defaults; BadInput on an unknown key or bad value.
parse_options = normalize_options


_VERIFY = {
    "choose_alone": phases_setup.verify_alone,
    "choose_friend_card": phases_setup.verify_friend,
    "play": trick.verify_play,
    "pass": trick.verify_pass,
}


class DadunState(NoWindows, ViewThenActions, DealBacked):
    """One deal; implements :class:`games.engine.State` (Dadun has no response windows)."""

    num_seats = SEATS
    title = "Dadun"
    verifiers = _VERIFY
    deal: Deal

    def legal_actions(self, seat: int) -> list[Action]:
        d = self.deal
        if seat not in d.to_act():
            return []
        if d.phase == "alone":
            return [Action("choose_alone", choice="yes"), Action("choose_alone", choice="no")]
        if d.phase == "friend":
            return [Action("choose_friend_card", tiles=(card_name(c),))
                    for c in phases_setup.friend_candidates(d)]
        plays = hint_plays(d.hands[seat], trick.top_combo(d), HINT_LIMIT,
                           suit_order=trick.suit_order(d))
        out = [Action("play", tiles=tuple(map(card_name, sorted(p))), ref=d.token)
               for p in plays]
        if not d.must_play:
            out.append(Action("pass", ref=d.token))
        return out

    def apply(self, seat: int, action: Action) -> list[Event]:
        """Verify, then mutate; a rejected action raises and leaves the state unchanged."""
        self.verify(seat, action)
        events = _APPLY[action.kind](self.deal, seat, action)
        if self.deal.phase == "play" and trick.deal_ended(self.deal):
            events += finish(self.deal)
        return events

    def default_action(self, seat: int) -> Action:
        """Timeout / entrust: alone "no"; the §4 default friend card; in play the leader
        plays the lowest single not breaking a bomb or 510K, a follower passes."""
        d = self.deal
        if seat not in d.to_act():
            raise NotYourTurn(f"seat {seat} has nothing to decide now")
        if d.phase == "alone":
            return Action("choose_alone", choice="no")
        if d.phase == "friend":
            return Action("choose_friend_card", tiles=(card_name(default_friend_card(
                d.hands[seat])),))
        if d.must_play:
            return Action("play", tiles=(card_name(entrust_lead(d.hands[seat])),), ref=d.token)
        return Action("pass", ref=d.token)

    # -- views, result, persistence --------------------------------------------------------

    def deal_events(self) -> list[Event]:
        """The public "deal", each seat's private "hand", then the first "hint_alone"."""
        d = self.deal
        events = [Event("deal", {"banker": d.banker, "cards_per_seat": len(d.dealt[0])})]
        events += [Event("hand", {"cards": format_cards(d.dealt[s])}, to=s)
                   for s in range(SEATS)]
        return events + [phases_setup.hint_alone(d)]

    def observation(self, seat: int) -> dict[str, Any]:
        return views.observation(self.deal, self.check_seat(seat))

    def public_view(self) -> dict[str, Any]:
        return views.public_view(self.deal)

    def settlement(self) -> Settlement:
        if not self.is_over():
            raise RuleError("the deal is not over", "hand_not_over")
        return settlement(self.deal)


_APPLY = {
    "choose_alone": phases_setup.apply_alone,
    "choose_friend_card": phases_setup.apply_friend,
    "play": trick.apply_play,
    "pass": trick.apply_pass,
}


def _start(options: Mapping[str, Any] | None, seed: Seed, banker: int,
           hands: list[list[int]]) -> DadunState:
    opts = normalize_options(options)
    banker = check_seat(banker, SEATS, "banker")
    askers = [banker] if opts["alone_askers"] == "banker_only" else [
        (banker + i) % SEATS for i in range(SEATS)]
    salt = f"t{sub_seed(seed, 'token') & 0xFFFFFF:06x}."
    deal = Deal(options=opts, seed=seed_to_json(seed), banker=banker, hands=[sorted(h) for h in hands],
                dealt=[sorted(h) for h in hands], ask_order=askers, token_salt=salt)
    return DadunState(deal)


def shuffled_deck(seed: Seed) -> list[int]:
    """The deck for a deal, in deal order (seat k gets cards 27k .. 27k+26): Fisher-Yates
    over :func:`full_deck` with the "deck" stream (docs/fairness.md; an int seed: its
    SplitMix64 stream)."""
    deck = full_deck()
    stream(check_seed(seed), "deck").shuffle(deck)
    return deck


def new_hand(options: Mapping[str, Any] | None, seed: Seed, dealer: int) -> DadunState:
    """A shuffled deal of 27 cards each; ``dealer`` is the banker (叫牌者). ``seed``: an int
    or a 32-byte hand seed (games.fair); anything else is BadInput."""
    deck = shuffled_deck(seed)
    per = len(deck) // SEATS
    return _start(options, seed, dealer, [deck[i * per:(i + 1) * per] for i in range(SEATS)])


def new_hand_from_deal(options: Mapping[str, Any] | None, hands: list[list[int]],
                       banker: int) -> DadunState:
    """An explicit deal (tests, replays of a recorded deal): four hands that together are
    the 108-card deck, each of 27 cards."""
    if len(hands) != SEATS or any(len(h) != len(full_deck()) // SEATS for h in hands):
        raise BadInput("an explicit deal needs four hands of 27 cards")
    if sorted(c for h in hands for c in h) != full_deck():
        raise BadInput("the four hands must together be the 108-card deck")
    return _start(options, 0, banker, [list(h) for h in hands])


def deserialize(text: str) -> DadunState:
    try:
        deal = Deal.from_json(json.loads(text))
    except (ValueError, TypeError, KeyError) as exc:
        raise BadInput(f"not a serialized Dadun state: {exc}") from exc
    return DadunState(deal)


def deal_layout(seed: Seed) -> dict[str, list[str]]:
    """What a replay stores of the shuffle (docs/fairness.md): the deck in deal order."""
    return {"deck": [card_name(c) for c in shuffled_deck(seed)]}
