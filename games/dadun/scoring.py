"""Settlement of one Dadun deal (../shared/rules/dadun.md §6): a pure function of the deal's
outcome and the room options.

Money has three sources, each an itemised :class:`Payment`:

* ``bomb``: paid when a bomb (or pure double jokers) is played, already booked during play;
* ``fry``: 原炸, paid at settlement: a bomb held in the dealt 27-card hand (``fry_rule =
  dealt_hand``), or one played whole at its dealt size (``played_intact``);
* ``card_result``: the team (找朋友) or alone (打独) result.

``bombScore`` of the protocol is ``bomb`` + ``fry``; ``cardScore`` is ``card_result``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from games.dadun.cards import SJ, rank_of
from games.dadun.combos import BOMB_BY_SIZE, JOKERS3, JOKERS4
from games.engine import Payment, Settlement, deltas_from

SEATS = 4
FRY_NONE, FRY_SMALL, FRY_LARGE = 0, 1, 2
BOMB7, BOMB8 = BOMB_BY_SIZE[7], BOMB_BY_SIZE[8]


@dataclass(frozen=True, slots=True)
class DealOutcome:
    """Everything settlement needs, per seat where a tuple has four entries.

    ``teams``: 0 for the banker's side (or the alone player), 1 for the others.
    ``leftover``: point value of the cards still in each hand at the end (0 once out).
    ``friend_seat``: the banker's secret partner (None when someone played alone).
    ``fry_played``: the 原炸 state each seat earned by a play (:func:`played_fry_state`),
    used with ``fry_rule = played_intact``.
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
    fry_played: tuple[int, ...] = (FRY_NONE,) * SEATS


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


def played_fry_state(dealt: Sequence[int], cls: int, cards: Sequence[int]) -> int:
    """原炸 earned by one play under ``fry_rule = played_intact`` (§8.3's alternative, "a
    bomb played at its full dealt size without splitting"): a 7- or 8-bomb, 三王 or 四王
    that holds every card of its rank (every joker) the seat was dealt. The sizes are those
    of :func:`fry_state`: 8 of a rank or 4 jokers are large, 7 or 3 small; else 0."""
    if cls in (JOKERS3, JOKERS4):
        if len(cards) != sum(1 for c in dealt if c >= SJ):
            return FRY_NONE
        return FRY_LARGE if cls == JOKERS4 else FRY_SMALL
    if cls in (BOMB7, BOMB8):
        rank = rank_of(cards[0])
        if len(cards) != sum(1 for c in dealt if c < SJ and rank_of(c) == rank):
            return FRY_NONE
        return FRY_LARGE if cls == BOMB8 else FRY_SMALL
    return FRY_NONE


def fry_states(o: DealOutcome, options: Mapping[str, Any]) -> list[int]:
    """Each seat's 原炸 state (``fryState``) under the room's ``fry_rule``."""
    rule = options["fry_rule"]
    if rule == "dealt_hand":
        return [fry_state(hand) for hand in o.dealt]
    if rule == "played_intact":
        return list(o.fry_played)
    return [FRY_NONE] * SEATS


def fry_payments(states: Sequence[int], options: Mapping[str, Any]) -> list[Payment]:
    """Each 原炸 holder receives k·B from every other seat (k = fry_small or fry_large)."""
    out = []
    for seat, state in enumerate(states):
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
    """双围, point threshold with the 头游 tie-break, and 霸奖 (§6.3, §8.2): ``bully_rule``
    ``all_points`` (the winners hold all 200 points) or ``player_points`` (a winner caught
    ``bully_points`` or more alone); ``alone_clean`` applies to alone mode only."""
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
    rule = options["bully_rule"]
    if winner is None:
        is_bully = False
    elif rule == "all_points":
        is_bully = points[1 - winner] == 0 and points[winner] == sum(points)
    elif rule == "player_points":
        is_bully = any(o.catch[s] >= options["bully_points"]
                       for s in range(SEATS) if o.teams[s] == winner)
    else:
        is_bully = False
    if is_bully:
        mult *= options["bully_mult"]
    return TeamResult(winner, mult, is_double, is_bully, points)


def _pairs(payers: list[int], payees: list[int]) -> list[tuple[int, int]]:
    """Pair each loser with one winner (same counts), or spread 1 vs 3 both ways."""
    if len(payers) == len(payees):
        return list(zip(payers, payees, strict=True))
    return [(a, b) for a in payers for b in payees]


def alone_bully(o: DealOutcome, options: Mapping[str, Any]) -> bool:
    """霸奖 in alone mode (``bully_rule = alone_clean``, §8.2 (d)): the alone player wins as
    头游 and the three opponents caught no points."""
    if o.alone_seat is None or options["bully_rule"] != "alone_clean":
        return False
    others = [s for s in range(SEATS) if s != o.alone_seat]
    return o.over_order[o.alone_seat] == 1 and sum(o.catch[s] for s in others) == 0


def alone_multiplier(o: DealOutcome, options: Mapping[str, Any]) -> int:
    """A = ``alone_mult``, times ``bully_mult`` on an alone 霸奖."""
    mult: int = options["alone_mult"] * (options["bully_mult"] if alone_bully(o, options) else 1)
    return mult


def card_payments(o: DealOutcome, options: Mapping[str, Any]) -> tuple[list[Payment], Any]:
    """The ``card_result`` payments and the verdict (a TeamResult, or the alone win flag)."""
    base = options["base"]
    if o.alone_seat is not None:
        won = o.over_order[o.alone_seat] == 1
        others = [s for s in range(SEATS) if s != o.alone_seat]
        amount = base * alone_multiplier(o, options)
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
    fry_state_of = fry_states(o, options)
    fry = fry_payments(fry_state_of, options)
    bully_alone = alone_bully(o, options)
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
            "is_bully": bool(team and team.is_bully and won) or (bully_alone and won),
            "is_alone": o.alone_seat == seat,
            "bomb_odds": o.bomb_odds[seat],
            "is_banker": seat == o.banker,
            "friend_seat": partner_of(o, seat),
            "fry_state": fry_state_of[seat],
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
        "multiplier": team.mult if team else alone_multiplier(o, options),
        "leftover_points": list(o.leftover),
        "players": players,
    }
    return Settlement(payments, deltas_from(payments, SEATS), o.over_order.index(1), details)
