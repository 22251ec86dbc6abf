"""The play loop (docs/doudizhu.md, "Play"): the landlord leads; each seat in turn beats the
top play of the trick or passes; two passes in a row give the lead back to the top player;
the first seat out of cards ends the hand.
"""

from __future__ import annotations

from games.doudizhu.cards import describe, name_list, parse_names, rank_counts
from games.doudizhu.combos import Combo, beats, classify
from games.doudizhu.dealing import prompt
from games.doudizhu.model import SEATS, Deal, TopPlay
from games.doudizhu.scoring import finish
from games.engine import Action, BadInput, Event, HandOver, IllegalAction, NotYourTurn


def top_combo(deal: Deal) -> Combo | None:
    """The reading of the play to beat, or None when the seat to act leads."""
    top = deal.top
    if top is None:
        return None
    return Combo(top.kind, top.length, top.key, len(top.cards))


def _check_turn(deal: Deal, seat: int, action: Action) -> None:
    if deal.phase == "over":
        raise HandOver("the hand is over")
    if deal.phase != "play":
        raise IllegalAction(f"{action.kind} is not possible in phase {deal.phase!r}",
                            "wrong_phase")
    if seat != deal.turn:
        raise NotYourTurn(f"it is seat {deal.turn}'s turn, not seat {seat}'s")
    if action.choice or action.ref:
        raise BadInput(f"{action.kind} carries no choice and no ref")


def verify_play(deal: Deal, seat: int, action: Action) -> tuple[list[int], Combo]:
    """The played codes and their reading, if this play is legal now."""
    _check_turn(deal, seat, action)
    if not action.tiles:
        raise BadInput("a play needs one or more cards")
    codes = parse_names(action.tiles)
    missing = set(codes) - set(deal.hands[seat])
    if missing:
        raise IllegalAction(f"you do not hold {describe(missing)}", "card_not_in_hand")
    combo = classify(rank_counts(codes))
    if combo is None:
        raise IllegalAction(f"{describe(codes)} is no combination", "not_a_combination")
    top = top_combo(deal)
    if top is not None and not beats(combo, top):
        assert deal.top is not None
        raise IllegalAction(f"{describe(codes)} does not beat {describe(deal.top.cards)}",
                            "does_not_beat")
    return codes, combo


def verify_pass(deal: Deal, seat: int, action: Action) -> None:
    _check_turn(deal, seat, action)
    if action.tiles:
        raise BadInput("a pass carries no cards")
    if deal.top is None:
        raise IllegalAction("the leader of a trick must play, not pass", "leader_must_play")


def apply_play(deal: Deal, seat: int, action: Action) -> list[Event]:
    codes, combo = verify_play(deal, seat, action)
    hand = deal.hands[seat]
    for code in codes:
        hand.remove(code)
    deal.top = TopPlay(seat, sorted(codes), combo.kind, combo.length, combo.key)
    deal.passes = 0
    deal.trick.append([seat, sorted(codes)])
    deal.played[seat] = sorted(deal.played[seat] + codes)
    deal.plays[seat] += 1
    if combo.kind == "bomb":
        deal.bombs += 1
    elif combo.kind == "rocket":
        deal.rockets += 1
    events = [Event("play", {"seat": seat, "cards": name_list(codes), "kind": combo.kind,
                             "length": combo.length, "cards_left": len(hand),
                             "bomb": combo.is_bomb})]
    if not hand:
        deal.winner = seat
        return events + finish(deal)
    deal.turn = (seat + 1) % SEATS
    return events + [prompt(deal)]


def apply_pass(deal: Deal, seat: int, action: Action) -> list[Event]:
    verify_pass(deal, seat, action)
    assert deal.top is not None
    deal.passes += 1
    deal.trick.append([seat, []])
    events = [Event("pass", {"seat": seat})]
    if deal.passes == SEATS - 1:  # both others passed: the top player leads a new trick
        leader = deal.top.seat
        deal.top, deal.passes, deal.trick = None, 0, []
        deal.turn = leader
        events.append(Event("new_trick", {"leader": leader}))
    else:
        deal.turn = (seat + 1) % SEATS
    return events + [prompt(deal)]
