"""Settlement of one Dadun deal (../shared/rules/dadun.md §6): a pure function of the deal's
outcome and the room options.

Money has three sources, each an itemised :class:`Payment`:

* ``bomb``: paid when a bomb (or pure double jokers) is played, already booked during play;
* ``fry``: 原炸, a bomb held in the dealt 27-card hand, paid at settlement;
* ``card_result``: the team (找朋友) or alone (打独) result.

``bombScore`` of the protocol is ``bomb`` + ``fry``; ``cardScore`` is ``card_result``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from games.dadun.cards import rank_of
from games.engine import Payment, Settlement, deltas_from

SEATS = 4
TOTAL_POINTS = 200
FRY_NONE, FRY_SMALL, FRY_LARGE = 0, 1, 2


@dataclass(frozen=True, slots=True)
class DealOutcome:
    """Everything settlement needs, per seat where a tuple has four entries.

    ``teams``: 0 for the banker's side (or the alone player), 1 for the others.
    ``leftover``: point value of the cards still in each hand at the end (0 once out).
    ``friend_seat``: the banker's secret partner (None when someone played alone).
    """

    banker: int
    alone_seat: int | None
    friend_seat: int | None
    teams: tuple[int, ...]
    over_order: tuple[int, ...]
    catch: tuple[int, ...]
    leftover: tuple[int, ...]
    dealt: tuple[tuple[int, ...], ...]
    bomb_payments: tuple[Payment, ...]
    bomb_odds: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TeamResult:
    """The team-mode verdict: ``winner`` team id (None for a drawn deal), multiplier M."""

    winner: int | None
    mult: int
    is_double: bool
    is_bully: bool
    points: tuple[int, int]


def fry_state(hand: Sequence[int]) -> int:
    """原炸 of a dealt hand: 2 with all 4 jokers or 8 of a rank, 1 with 3 jokers or 7 of a
    rank, else 0 (§6.5)."""
    jokers = sum(1 for c in hand if c >= 52)
    counts: dict[int, int] = {}
    for c in hand:
        if c < 52:
            counts[rank_of(c)] = counts.get(rank_of(c), 0) + 1
    most = max(counts.values(), default=0)
    if jokers >= 4 or most >= 8:
        return FRY_LARGE
    if jokers >= 3 or most >= 7:
        return FRY_SMALL
    return FRY_NONE


def fry_payments(dealt: Sequence[Sequence[int]], options: Mapping[str, Any]) -> list[Payment]:
    """Each 原炸 holder receives k·B from every other seat (k = fry_small or fry_large)."""
    if options["fry_rule"] == "off":
        return []
    out = []
    for seat, hand in enumerate(dealt):
        state = fry_state(hand)
        k = {FRY_SMALL: options["fry_small"], FRY_LARGE: options["fry_large"]}.get(state, 0)
        amount = k * options["base"]
        if amount > 0:
            out += [Payment("fry", p, seat, amount) for p in range(SEATS) if p != seat]
    return out


def team_points(o: DealOutcome, options: Mapping[str, Any]) -> tuple[int, int]:
    """Caught points per team plus the leftover points of unfinished hands (§6.1)."""
    first = o.over_order.index(1)
    points = [0, 0]
    for seat in range(SEATS):
        unfinished = o.over_order[seat] == 0
        catcher = first if unfinished and options["last_gives_catch_to_first"] else seat
        points[o.teams[catcher]] += o.catch[seat]
        if o.leftover[seat]:
            to_first = options["leftover_points_to"] == "first_place_team"
            team = o.teams[first] if to_first else 1 - o.teams[seat]
            points[team] += o.leftover[seat]
    return points[0], points[1]


def team_result(o: DealOutcome, options: Mapping[str, Any]) -> TeamResult:
    """双围, point threshold with the 头游 tie-break, and 霸奖 (§6.3)."""
    first, second = o.over_order.index(1), o.over_order.index(2) if 2 in o.over_order else -1
    points = team_points(o, options)
    is_double = second >= 0 and o.teams[first] == o.teams[second]
    mult = options["double_surround_mult"] if is_double else 1
    threshold = options["win_threshold"]
    if is_double:
        winner: int | None = o.teams[first]
    elif points[0] != points[1] and max(points) > threshold:
        winner = 0 if points[0] > points[1] else 1
    elif options["tie_goes_to_first_place"]:
        winner = o.teams[first]
    else:
        winner = None
    is_bully = (
        winner is not None
        and options["bully_rule"] == "all_points"
        and points[1 - winner] == 0
        and points[winner] == sum(points)
    )
    if is_bully:
        mult *= options["bully_mult"]
    return TeamResult(winner, mult, is_double, is_bully, points)


def _pairs(payers: list[int], payees: list[int]) -> list[tuple[int, int]]:
    """Pair each loser with one winner (same counts), or spread 1 vs 3 both ways."""
    if len(payers) == len(payees):
        return list(zip(payers, payees, strict=True))
    return [(a, b) for a in payers for b in payees]


def card_payments(o: DealOutcome, options: Mapping[str, Any]) -> tuple[list[Payment], Any]:
    """The ``card_result`` payments and the verdict (a TeamResult, or the alone win flag)."""
    base = options["base"]
    if o.alone_seat is not None:
        won = o.over_order[o.alone_seat] == 1
        others = [s for s in range(SEATS) if s != o.alone_seat]
        amount = base * options["alone_mult"]
        if amount == 0:
            return [], won
        if won:
            return [Payment("card_result", s, o.alone_seat, amount) for s in others], won
        return [Payment("card_result", o.alone_seat, s, amount) for s in others], won
    result = team_result(o, options)
    if result.winner is None:
        return [], result
    winners = [s for s in range(SEATS) if o.teams[s] == result.winner]
    losers = [s for s in range(SEATS) if o.teams[s] != result.winner]
    amount = base * result.mult
    return [Payment("card_result", a, b, amount) for a, b in _pairs(losers, winners)], result


def partner_of(o: DealOutcome, seat: int) -> int | None:
    """The seat's teammate in team mode (None when someone played alone)."""
    if o.alone_seat is not None:
        return None
    mates = [s for s in range(SEATS) if s != seat and o.teams[s] == o.teams[seat]]
    return mates[0]


def settle(o: DealOutcome, options: Mapping[str, Any]) -> Settlement:
    """The full ledger and the PBSmallSettlement fields per seat. The next banker is 头游."""
    fry = fry_payments(o.dealt, options)
    cards, verdict = card_payments(o, options)
    payments = tuple(o.bomb_payments) + tuple(fry) + tuple(cards)
    bomb_part = deltas_from(list(o.bomb_payments) + fry, SEATS)
    card_part = deltas_from(cards, SEATS)
    team = verdict if isinstance(verdict, TeamResult) else None
    winners = (
        [s for s in range(SEATS) if team.winner is not None and o.teams[s] == team.winner]
        if team
        else ([o.alone_seat] if verdict else [s for s in range(SEATS) if s != o.alone_seat])
    )
    players = []
    for seat in range(SEATS):
        won = seat in winners
        players.append({
            "seat": seat,
            "win_score": bomb_part[seat] + card_part[seat],
            "bomb_score": bomb_part[seat],
            "card_score": card_part[seat],
            "catch_score": o.catch[seat],
            "over_order": o.over_order[seat],
            "is_double": bool(team and team.is_double and won),
            "is_bully": bool(team and team.is_bully and won),
            "is_alone": o.alone_seat == seat,
            "bomb_odds": o.bomb_odds[seat],
            "is_banker": seat == o.banker,
            "friend_seat": partner_of(o, seat),
            "fry_state": fry_state(o.dealt[seat]) if options["fry_rule"] != "off" else 0,
        })
    details = {
        "variant": "dadun",
        "is_alone": o.alone_seat is not None,
        "alone_seat": o.alone_seat,
        "banker": o.banker,
        "friend_seat": o.friend_seat,
        "base_score": options["base"],
        "winners": winners,
        "team_points": list(team.points) if team else None,
        "multiplier": team.mult if team else options["alone_mult"],
        "leftover_points": list(o.leftover),
        "players": players,
    }
    return Settlement(payments, deltas_from(payments, SEATS), o.over_order.index(1), details)
