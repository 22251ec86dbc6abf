"""Player ratings from settled hands: who placed where, and the rating model's update.

Pure: a settlement in, placements and new ratings out; no database (services/records/
ratings.py stores them). The model is OpenSkill's Plackett–Luce (the ``openskill``
library): a rating is ``mu`` (skill) and ``sigma`` (how unsure we are of it); new players
start at 25 ± 8.33 and move fast while sigma is large. Leaderboards sort by the
conservative *score* ``mu - 3 sigma``, so a lucky newcomer does not top them.

**Placements.** Mahjong (XueZhan, Changsha): every seat is its own team, placed by its
points in the hand (most first; equal points share a place). Dadun: the two sides of the
deal are the teams, the banker and the friend (the seat holding the called card) against
the other two, or one seat that went alone against three, placed by the side's points. A
hand where nobody won or lost anything (every delta 0) tells nothing and rates nobody.

**Who is rated.** Robots and dev guests (services/common/reserved.py) play but are not
rated: the humans of a hand are placed among themselves (a team of robots drops out), and a
hand with fewer than two teams of humans rates nobody.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from openskill.models import PlackettLuce

from games import registry
from services.common.reserved import is_guest, is_robot

# games whose hands are won by sides (games.registry GameSpec.sides); any other game, one
# this records does not know included, is rated seat by seat
SIDE_GAMES = frozenset(spec.name for spec in registry.all() if spec.sides)
SCORE_SIGMAS = 3.0


@dataclass(frozen=True, slots=True)
class Rating:
    mu: float
    sigma: float

    @property
    def score(self) -> float:
        """What leaderboards sort by: ``mu - 3 sigma``."""
        return self.mu - SCORE_SIGMAS * self.sigma


@dataclass(frozen=True, slots=True)
class Placement:
    """One hand as the model sees it: teams of user ids and each team's place (0 first;
    equal places are ties)."""

    teams: tuple[tuple[int, ...], ...]
    places: tuple[int, ...]

    @property
    def user_ids(self) -> tuple[int, ...]:
        return tuple(u for team in self.teams for u in team)


def rated(user_id: int) -> bool:
    return not (is_robot(user_id) or is_guest(user_id))


def _sides(seats: int, details: Mapping[str, Any]) -> list[list[int]] | None:
    """Dadun's two sides by seat, from the settlement details; None if they cannot be told."""
    alone, banker, friend = (details.get(k) for k in ("alone_seat", "banker", "friend_seat"))

    def seat(v: Any) -> bool:
        return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < seats

    first: list[int]
    if isinstance(alone, int) and seat(alone):
        first = [alone]
    elif isinstance(banker, int) and seat(banker):
        first = [banker]
        if isinstance(friend, int) and seat(friend) and friend != banker:
            first.append(friend)
    else:
        return None
    return [first, [s for s in range(seats) if s not in first]]


def placement(game: str, seats: Sequence[int], deltas: Sequence[int],
              details: Mapping[str, Any]) -> Placement | None:
    """The teams and places of one settled hand, or None when it rates nobody."""
    if not any(deltas):
        return None
    if game in SIDE_GAMES:
        sides = _sides(len(seats), details)
        if sides is None:
            return None
    else:
        sides = [[s] for s in range(len(seats))]
    teams, points = [], []
    for side in sides:
        humans = tuple(seats[s] for s in side if rated(seats[s]))
        if humans:
            teams.append(humans)
            points.append(sum(deltas[s] for s in side))
    if len(teams) < 2:
        return None
    ordered = sorted(set(points), reverse=True)
    return Placement(tuple(teams), tuple(ordered.index(p) for p in points))


class Rater:
    """The rating model (Plackett–Luce with the library's defaults)."""

    def __init__(self) -> None:
        self.model = PlackettLuce()

    @property
    def initial(self) -> Rating:
        return Rating(self.model.mu, self.model.sigma)

    def update(self, current: Mapping[int, Rating], hand: Placement) -> dict[int, Rating]:
        """The players' ratings after ``hand`` (``current``: before it, one per player)."""
        model = self.model
        teams = [[model.rating(mu=current[u].mu, sigma=current[u].sigma) for u in team]
                 for team in hand.teams]
        after = model.rate(teams, ranks=[float(p) for p in hand.places])
        return {u: Rating(r.mu, r.sigma)
                for team, rated_team in zip(hand.teams, after, strict=True)
                for u, r in zip(team, rated_team, strict=True)}
