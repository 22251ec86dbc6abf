"""Placements and rating updates of services/records/rating.py (pure)."""

from __future__ import annotations

from games import registry
from services.common.reserved import GUEST_LOW, robot_id
from services.records.rating import SIDE_GAMES, Placement, Rater, Rating, placement

SEATS = (11, 12, 13, 14)


def test_mahjong_places_every_seat_by_its_points_ties_shared() -> None:
    assert placement("xuezhan", SEATS, (-6, 12, -6, 0), {}) == Placement(
        ((11,), (12,), (13,), (14,)), (2, 0, 2, 1))
    assert placement("changsha", SEATS, (0, 0, 0, 0), {}) is None     # nothing to learn


def test_dadun_banker_and_friend_against_the_others() -> None:
    got = placement("dadun", SEATS, (-4, 4, -4, 4), {"banker": 1, "friend_seat": 3,
                                                    "alone_seat": None})
    assert got == Placement(((12, 14), (11, 13)), (0, 1))


def test_dadun_alone_or_own_card_is_one_against_three() -> None:
    alone = placement("dadun", SEATS, (9, -3, -3, -3), {"banker": 2, "alone_seat": 0})
    assert alone == Placement(((11,), (12, 13, 14)), (0, 1))
    own = placement("dadun", SEATS, (-3, -3, 9, -3), {"banker": 2, "friend_seat": 2})
    assert own == Placement(((13,), (11, 12, 14)), (0, 1))
    assert placement("dadun", SEATS, (1, -1, 0, 0), {"banker": "x"}) is None


def test_the_games_rated_by_sides_are_those_the_game_registry_says() -> None:
    assert SIDE_GAMES == {spec.name for spec in registry.all() if spec.sides} == {"dadun"}
    # any other game, one this records does not know included, is rated seat by seat
    for game in ("doudizhu", "a-newer-game"):
        assert placement(game, SEATS, (9, -3, -3, -3), {"banker": 0, "friend_seat": 1}) == \
            Placement(((11,), (12,), (13,), (14,)), (0, 1, 1, 1))


def test_robots_and_guests_are_not_rated() -> None:
    seats = (11, robot_id(5, 1), GUEST_LOW + 7, 14)
    assert placement("xuezhan", seats, (3, -1, -1, -1), {}) == Placement(((11,), (14,)),
                                                                          (0, 1))
    assert placement("xuezhan", (11, robot_id(5, 1), robot_id(5, 2), robot_id(5, 3)),
                     (3, -1, -1, -1), {}) is None
    # Dadun: a side of robots drops out; one side of humans left rates nobody
    assert placement("dadun", (11, robot_id(5, 1), 13, robot_id(5, 3)), (2, -2, 2, -2),
                     {"banker": 0, "friend_seat": 2}) is None


def test_winners_rise_losers_fall_and_everyone_gets_surer() -> None:
    rater = Rater()
    start = rater.initial
    assert (start.mu, round(start.sigma, 3)) == (25.0, 8.333)
    hand = Placement(((1,), (2,), (3,), (4,)), (0, 1, 2, 3))
    after = rater.update({u: start for u in (1, 2, 3, 4)}, hand)
    assert after[1].mu > after[2].mu > after[3].mu > after[4].mu
    assert all(r.sigma < start.sigma for r in after.values())
    assert after[1].score == after[1].mu - 3 * after[1].sigma
    # an upset moves the favourite more than a confirmation would
    strong, weak = Rating(35.0, 2.0), Rating(15.0, 2.0)
    upset = rater.update({1: weak, 2: strong}, Placement(((1,), (2,)), (0, 1)))
    expected = rater.update({1: strong, 2: weak}, Placement(((1,), (2,)), (0, 1)))
    assert strong.mu - upset[2].mu > expected[1].mu - strong.mu > 0
