"""The play loop (../shared/rules/dadun.md §3.3-3.5, §4, §6.2): prompts with out-tokens,
plays and passes, bomb payments, the friend reveal, trick end (清桌) and 接风.

The trick leader must play; a follower may always pass and may play again later in the same
trick. A trick ends when every other seat still holding cards has passed since the last play.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict
from typing import Any

from games.dadun.cards import card_name, format_cards, parse_card, point_value
from games.dadun.combos import Combo, beats_rule, bomb_odds, classify
from games.dadun.model import SEATS, Deal, DeskPlay
from games.dadun.scoring import played_fry_state
from games.engine import (
    Action,
    BadInput,
    Event,
    HandOver,
    IllegalAction,
    NotYourTurn,
    Payment,
    StaleRef,
)


def parse_names(names: tuple[str, ...]) -> list[int]:
    """Card codes from notation; BadInput on anything that is not a card name."""
    out = []
    for name in names:
        try:
            out.append(parse_card(name))
        except Exception as exc:  # the notation module's own error type is not ours to pin
            raise BadInput(f"{name!r} is not a card") from exc
    return out


def rest_num(deal: Deal, seat: int) -> int | None:
    """A hand's size, published only when it is at most ``rest_num_visible_at`` (restNum)."""
    n = len(deal.hands[seat])
    return n if n <= deal.options["rest_num_visible_at"] else None


def friendship(deal: Deal) -> list[int | None] | None:
    """Partner seat per seat (PBUseOut.friendShip), once the partnership is public."""
    if not deal.friend_public:
        return None
    return [deal.partner(s) for s in range(SEATS)]


def suit_order(deal: Deal) -> bool:
    """The room option ``pure510k_suit_order``: pure 510Ks rank by suit (beats_by_suit)."""
    return bool(deal.options["pure510k_suit_order"])


def top_combo(deal: Deal) -> Combo | None:
    """The latest play on the desk, which a follower must beat."""
    if not deal.desk:
        return None
    fields = dict(deal.desk[-1].combo)
    fields["cards"] = tuple(fields["cards"])
    return Combo(**fields)


# -- prompts ------------------------------------------------------------------------------


def _prompt(deal: Deal, seat: int, must_play: bool) -> list[Event]:
    deal.turn = seat
    deal.must_play = must_play
    token = deal.new_token()
    data = {"token": token, "seat": seat, "must_play": must_play,
            "countdown": deal.options["play_timeout_s"]}
    return [Event("hint_out", data)]


def prompt_lead(deal: Deal, seat: int) -> list[Event]:
    return _prompt(deal, seat, True)


# -- verification -------------------------------------------------------------------------


def _check_turn(deal: Deal, seat: int, action: Action) -> None:
    if deal.phase == "over":
        raise HandOver("the deal is over")
    if deal.phase != "play":
        raise IllegalAction(f"{action.kind} is not possible in phase {deal.phase!r}",
                            "wrong_phase")
    if seat != deal.turn:
        raise NotYourTurn(f"it is seat {deal.turn}'s turn, not seat {seat}'s")
    if action.ref != deal.token:
        raise StaleRef(f"out-token {action.ref!r} is not the current one")


def verify_play(deal: Deal, seat: int, action: Action) -> tuple[list[int], Combo]:
    """The played codes and their combination, if this play is legal now."""
    _check_turn(deal, seat, action)
    if not action.tiles or action.choice:
        raise BadInput("a play needs one or more cards and no choice")
    codes = parse_names(action.tiles)
    hand = deal.hands[seat]
    if Counter(codes) - Counter(hand):
        missing = format_cards(sorted((Counter(codes) - Counter(hand)).elements()))
        raise IllegalAction(f"you do not hold {missing}", "card_not_in_hand")
    previous = top_combo(deal)
    suited = suit_order(deal)
    combo = classify(codes, len(hand), against=previous, suit_order=suited)
    if previous is not None and not beats_rule(suited)(combo, previous):
        raise IllegalAction(
            f"{format_cards(sorted(codes))} does not beat {format_cards(deal.desk[-1].cards)}",
            "does_not_beat",
        )
    return codes, combo


def verify_pass(deal: Deal, seat: int, action: Action) -> None:
    _check_turn(deal, seat, action)
    if action.tiles or action.choice:
        raise BadInput("a pass carries no cards and no choice")
    if deal.must_play:
        raise IllegalAction("the trick leader must play, not pass", "leader_must_play")


# -- plays --------------------------------------------------------------------------------


def _bomb(deal: Deal, seat: int, combo: Combo) -> tuple[int, list[int], list[Payment]]:
    """Odds of this play and its immediate payments: each payer gives odds·B (§6.2)."""
    odds = bomb_odds(combo, deal.options["bomb_odds"])
    delta = [0] * SEATS
    if odds == 0:
        return 0, delta, []
    if deal.options["bomb_payers"] == "all_others":
        payers = [s for s in range(SEATS) if s != seat]
    else:
        payers = [s for s in range(SEATS) if deal.team_of(s) != deal.team_of(seat)]
    amount = odds * deal.options["base"]
    payments = [Payment("bomb", p, seat, amount) for p in payers]
    for p in payers:
        delta[p] -= amount
        delta[seat] += amount
    return odds, delta, payments


def _reveals_friend(deal: Deal, seat: int, codes: list[int]) -> bool:
    return (not deal.is_alone_mode and seat != deal.banker
            and deal.friend_card in codes)


def apply_play(deal: Deal, seat: int, action: Action) -> list[Event]:
    codes, combo = verify_play(deal, seat, action)
    for c in codes:
        deal.hands[seat].remove(c)
    record = asdict(combo)
    record["cards"] = list(combo.cards)
    deal.desk.append(DeskPlay(seat, sorted(codes), combo.cls, record))
    deal.desk_points += point_value(codes)
    deal.last_player = seat
    deal.passed = []
    deal.round_serial += 1
    fry = played_fry_state(deal.dealt[seat], combo.cls, codes)  # fry_rule=played_intact
    deal.fry_played[seat] = max(deal.fry_played[seat], fry)
    odds, delta, payments = _bomb(deal, seat, combo)
    if odds:
        deal.bomb_odds[seat] += odds
        deal.bomb_types[seat].append(combo.cls)
        deal.bomb_payments += [p.to_dict() for p in payments]
        deal.bomb_score = [a + b for a, b in zip(deal.bomb_score, delta, strict=True)]
    reveal = _reveals_friend(deal, seat, codes) and not deal.friend_public
    contains_friend = _reveals_friend(deal, seat, codes)
    deal.friend_public = deal.friend_public or reveal
    if not deal.hands[seat]:
        deal.over_order[seat] = deal.next_out_order()
    events = [Event("play", _play_data(deal, seat, codes, combo, contains_friend, odds, delta))]
    events += [Event("payment", _payment_data(p)) for p in payments]
    if reveal and deal.friend_card is not None:  # reveal: friend_card is in codes
        events.append(Event("friend_revealed", {
            "banker": deal.banker, "friend_seat": seat,
            "card": card_name(deal.friend_card), "friendship": friendship(deal)}))
    if deal_ended(deal):
        return events
    return events + _prompt(deal, deal.next_active(seat), False)


def _play_data(deal: Deal, seat: int, codes: list[int], combo: Combo, contains_friend: bool,
               odds: int, delta: list[int]) -> dict[str, Any]:
    return {
        "seat": seat,
        "cards": format_cards(sorted(codes)),
        "class": combo.cls,
        "class_name": combo.name,
        "contains_friend_card": contains_friend,
        "desk_points": deal.desk_points,
        "over_order": deal.over_order[seat],
        "bomb_score": delta,
        "round_index": deal.round_index,
        "round_serial": deal.round_serial,
        "friendship": friendship(deal),
        "is_skip": False,
        "bomb_odds": odds,
        "rest_num": rest_num(deal, seat),
        "sum_bomb_odds": list(deal.bomb_odds),
    }


def _payment_data(p: Payment) -> dict[str, Any]:
    return {"reason": p.reason, "payer": p.payer, "payee": p.payee, "amount": p.amount}


# -- passes and the end of a trick ----------------------------------------------------------


def apply_pass(deal: Deal, seat: int, action: Action) -> list[Event]:
    verify_pass(deal, seat, action)
    deal.passed.append(seat)
    deal.round_serial += 1
    events = [Event("pass", {
        "seat": seat, "is_skip": True, "round_index": deal.round_index,
        "round_serial": deal.round_serial, "desk_points": deal.desk_points})]
    others = {s for s in range(SEATS) if deal.active(s) and s != deal.last_player}
    if others <= set(deal.passed):
        return events + end_trick(deal)
    return events + _prompt(deal, deal.next_active(seat), False)


def clear_desk(deal: Deal) -> Event:
    """The last player catches the desk points (清桌); the desk is emptied."""
    winner = deal.last_player
    assert winner is not None
    deal.catch[winner] += deal.desk_points
    event = Event("clear_desk", {
        "seat": winner, "desk_points": deal.desk_points, "catch": list(deal.catch),
        "round": deal.round_index})
    deal.desk, deal.desk_points, deal.passed = [], 0, []
    return event


def end_trick(deal: Deal) -> list[Event]:
    winner = deal.last_player
    assert winner is not None
    event = clear_desk(deal)
    deal.round_index += 1
    deal.round_serial = 0
    deal.last_player = None
    return [event, *prompt_lead(deal, next_leader(deal, winner))]


def next_leader(deal: Deal, winner: int) -> int:
    """The trick winner leads; if out, 接风 per ``jiefeng`` (§3.4)."""
    if deal.active(winner):
        return winner
    rule = deal.options["jiefeng"]
    partner = deal.partner(winner)
    known = deal.friend_public or rule == "partner_always"
    if rule != "next_player" and known and partner is not None and deal.active(partner):
        return partner
    return deal.next_active(winner)


def deal_ended(deal: Deal) -> bool:
    """Alone mode: the first player out ends it; team mode: both members of a team out."""
    outs = [s for s in range(SEATS) if deal.over_order[s]]
    if deal.is_alone_mode:
        return bool(outs)
    for team in (0, 1):
        members = [s for s in range(SEATS) if deal.team_of(s) == team]
        if all(deal.over_order[s] for s in members):
            return True
    return False
