"""Contract tests of ratings in records (services/records/ratings.py, migration 0003), once
per adapter: SQLite (a temp file) and PostgreSQL (a fresh database per class). A hand moves
its players' ratings exactly once, whatever redelivers it and across a restart of records;
concurrent writers lose no update; leaderboards, ranks, history and seasons."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from services.common.reserved import robot_id
from services.records.db import make_engine
from services.records.rating import Rater, Rating, placement
from services.records.ratings import ALL_TIME, RatingBook
from services.records.settlement import Settlement, parse_settlement
from services.records.store import SettlementWriter
from tests.service.test_records_store import StoreFixtures, rows
from tests.service.test_records_support import (
    encode,
    final_message,
    hand_message,
    postgres_database,
)

SEATS = [1001, 1002, 1003, 1004]
TABLES = ("rating_history", "ratings", "rating_seasons", "hand_events", "ledger", "hands",
          "players")


def settle(message: dict) -> Settlement:
    return parse_settlement(encode(message))


def dadun(room: int, hand: int, seats: list[int], deltas: list[int], **details: object,
          ) -> Settlement:
    message = hand_message(room, hand, seats, deltas)
    message["game"] = "dadun"
    message["details"] = details
    return settle(message)


async def snapshot(engine: AsyncEngine) -> list[tuple]:
    return await rows(engine, "SELECT game, season, user_id, mu, sigma, hands FROM ratings "
                              "ORDER BY game, season, user_id")


class RatingsContract(StoreFixtures):
    """What every storage adapter must do. Subclasses provide ``database_url``."""

    tables = TABLES

    @pytest.fixture
    def book(self, engine: AsyncEngine) -> RatingBook:
        return RatingBook(engine)

    async def test_a_hand_moves_ratings_once_even_after_a_restart(
            self, engine: AsyncEngine, writer: SettlementWriter, database_url: str) -> None:
        hand = settle(hand_message(300001, 1, SEATS, [6, -2, -2, -2]))
        assert await writer.write(hand) is True
        after = await snapshot(engine)
        assert len(after) == 8 and {r[1] for r in after} == {0, 1}   # all-time and season 1
        winner = [r for r in after if r[2] == 1001 and r[1] == 0][0]
        loser = [r for r in after if r[2] == 1002 and r[1] == 0][0]
        assert winner[3] > 25 > loser[3] and winner[5] == loser[5] == 1
        assert await writer.write(hand) is False          # a redelivery
        again = make_engine(database_url)                 # records restarted: a new engine
        try:
            assert await SettlementWriter(again).write(hand) is False
        finally:
            await again.dispose()
        assert await snapshot(engine) == after
        assert await rows(engine, "SELECT COUNT(*) FROM rating_history") == [(8,)]

    async def test_concurrent_hands_of_the_same_players_lose_no_update(
            self, engine: AsyncEngine, writer: SettlementWriter, book: RatingBook) -> None:
        hands = [settle(hand_message(300100 + i, 1, SEATS, [3, -1, -1, -1])) for i in range(8)]
        assert all(await asyncio.gather(*(writer.write(h) for h in hands)))
        assert await rows(engine, "SELECT DISTINCT hands FROM ratings") == [(8,)]
        assert await rows(engine, "SELECT COUNT(*) FROM rating_history") == [(64,)]
        top = await book.rating(1001, "xuezhan")
        assert top is not None and top.rank == 1 and top.hands == 8

    async def test_concurrent_hands_sharing_only_unpaid_players_lose_no_update(
            self, writer: SettlementWriter, book: RatingBook) -> None:
        """No coin row serialises these writers (the shared players win and lose nothing):
        only the ratings' row locks keep each update on top of the last."""
        hands = [settle(hand_message(300150 + i, 1, [5000 + i, 1002, 1003, 6000 + i],
                                     [3, 0, 0, -3])) for i in range(8)]
        assert all(await asyncio.gather(*(writer.write(h) for h in hands)))
        rater, expected = Rater(), Rater().initial
        placed = placement("xuezhan", [1, 1002, 1003, 2], [3, 0, 0, -3], {})
        assert placed is not None
        for _ in hands:
            fresh = {1: rater.initial, 2: rater.initial, 1003: expected, 1002: expected}
            expected = rater.update(fresh, placed)[1002]
        got = await book.rating(1002, "xuezhan")
        assert got is not None and got.hands == 8
        assert (got.mu, got.sigma) == pytest.approx((expected.mu, expected.sigma))

    async def test_redeliveries_in_any_order_rate_each_hand_once(
            self, writer: SettlementWriter, book: RatingBook) -> None:
        """Random hands, each delivered one to three times in a shuffled stream: the ratings
        are those of the pure model applied once per hand, in first-delivery order."""
        rng = random.Random(23)
        players = list(range(7001, 7009))
        hands = []
        for i in range(12):
            seats = rng.sample(players, 4)
            deltas = [rng.randint(-5, 5) for _ in range(3)]
            hands.append(hand_message(300600 + i % 3, 1 + i // 3, seats,
                                      [*deltas, -sum(deltas)]))
        stream = [h for h in hands for _ in range(rng.randint(1, 3))]
        rng.shuffle(stream)
        rater, seen = Rater(), set()
        expected: dict[int, Rating] = {}
        for message in stream:
            written = await writer.write(settle(message))
            key = (message["room_id"], message["hand_no"])
            assert written is (key not in seen)
            if key in seen:
                continue
            seen.add(key)
            placed = placement("xuezhan", message["seats"], message["deltas"], {})
            if placed is not None:
                expected.update(rater.update(
                    {u: expected.get(u, rater.initial) for u in placed.user_ids}, placed))
        for uid, want in expected.items():
            got = await book.rating(uid, "xuezhan")
            assert got is not None and (got.mu, got.sigma) == pytest.approx((want.mu,
                                                                             want.sigma))

    async def test_robots_and_empty_hands_are_not_rated(
            self, engine: AsyncEngine, writer: SettlementWriter) -> None:
        robots = [1001, 1002, robot_id(300200, 2), robot_id(300200, 3)]
        await writer.write(settle(hand_message(300200, 1, robots, [-4, 0, 4, 0])))
        assert {r[2] for r in await snapshot(engine)} == {1001, 1002}
        await writer.write(settle(hand_message(300201, 1, SEATS, [0, 0, 0, 0])))
        await writer.write(settle(final_message(300200, robots, [-4, 0, 4, 0], 1)))
        assert {r[2] for r in await snapshot(engine)} == {1001, 1002}
        assert await rows(engine, "SELECT DISTINCT hands FROM ratings") == [(1,)]

    async def test_dadun_sides_are_rated_as_teams(
            self, engine: AsyncEngine, writer: SettlementWriter, book: RatingBook) -> None:
        # banker 0 called the card seat 2 held: 0 and 2 against 1 and 3
        await writer.write(dadun(300300, 1, SEATS, [4, -4, 4, -4], banker=0, friend_seat=2,
                                 alone_seat=None))
        r = {}
        for uid in SEATS:
            view = await book.rating(uid, "dadun")
            assert view is not None
            r[uid] = view
        assert (r[1001].mu, r[1001].sigma) == (r[1003].mu, r[1003].sigma)   # one team
        assert r[1001].mu > 25 > r[1002].mu == r[1004].mu
        assert [r[u].rank for u in SEATS] == [1, 3, 1, 3]
        # seat 1 went alone and lost against three
        await writer.write(dadun(300300, 2, SEATS, [3, -9, 3, 3], banker=0, friend_seat=None,
                                 alone_seat=1))
        lone = await book.rating(1002, "dadun")
        assert lone is not None and lone.mu < r[1002].mu and lone.rank == 4

    async def test_leaderboard_ranks_and_history(
            self, writer: SettlementWriter, book: RatingBook) -> None:
        for hand_no in range(1, 4):                       # 1001 wins, 1004 loses, always
            await writer.write(settle(hand_message(300400, hand_no, SEATS, [6, 0, 0, -6])))
        season, total, board = await book.leaderboard("xuezhan", ALL_TIME, limit=10)
        assert (season, total) == (0, 4)
        assert [e.user_id for e in board] == [1001, 1002, 1003, 1004]
        assert [e.rank for e in board] == [1, 2, 2, 4]     # 1002 and 1003 tie
        assert board[0].score == pytest.approx(board[0].mu - 3 * board[0].sigma)
        _, _, page = await book.leaderboard("xuezhan", ALL_TIME, limit=2, offset=2)
        assert [(e.user_id, e.rank) for e in page] == [(1003, 2), (1004, 4)]
        mine = await book.rating(1003, "xuezhan")
        assert mine is not None and mine.rank == 2
        steps = await book.history(1001, "xuezhan")
        assert [s.hand_no for s in steps] == [3, 2, 1]
        assert steps[0].mu > steps[1].mu > steps[2].mu > 25
        assert steps[0].sigma < steps[2].sigma            # more hands, more certain
        assert await book.rating(1001, "changsha") is None
        assert await book.leaderboard("changsha") == (0, 0, ())

    async def test_a_new_season_starts_afresh_and_keeps_the_old_one(
            self, writer: SettlementWriter, book: RatingBook) -> None:
        await writer.write(settle(hand_message(300500, 1, SEATS, [6, -2, -2, -2])))
        assert await book.current_season("xuezhan") == 1
        started = await book.start_season("xuezhan", "alice")
        assert (started.game, started.season) == ("xuezhan", 2)
        assert await book.current_season("xuezhan") == 2
        assert await book.current_season("dadun") == 1
        assert await book.leaderboard("xuezhan", None) == (2, 0, ())
        await writer.write(settle(hand_message(300500, 2, SEATS, [-2, 6, -2, -2])))
        s2 = await book.rating(1002, "xuezhan", None)
        s1 = await book.rating(1002, "xuezhan", 1)
        all_time = await book.rating(1002, "xuezhan", ALL_TIME)
        assert s2 is not None and s1 is not None and all_time is not None
        assert (s2.season, s2.hands, s2.rank) == (2, 1, 1)
        assert (s1.hands, all_time.hands) == (1, 2)
        assert s1.rank == 2 and s1.mu < 25                # season 1 as it ended


class TestSqliteRatings(RatingsContract):
    @pytest.fixture
    def database_url(self, tmp_path) -> str:
        return f"sqlite+aiosqlite:///{tmp_path / 'var' / 'records.db'}"


@pytest.mark.postgres
class TestPostgresRatings(RatingsContract):
    @pytest.fixture(scope="class")
    @classmethod
    def database_url(cls) -> Iterator[str]:
        yield from postgres_database()
