"""Ratings in the records database (migration 0003): updated inside each hand's settlement
transaction, read as a player's rating and rank, leaderboards and history; seasons.

**Exactly once.** :meth:`RatingBook.apply` runs in the transaction that inserted the hand row
(services/records/store.py): the hand is the gate, so a redelivered or republished
settlement, before or after a records restart, never moves a rating again; the history rows
(one per player, season and hand, unique) say which hand moved what.

**Seasons.** Every hand updates two ratings per player: all-time (season 0, never reset) and
the game's current season (1 until an operator starts the next with :meth:`start_season`;
a new season's ratings start from the model's initial rating). Old seasons stay readable.

**Concurrency.** The rows are created if missing (insert, ignore conflicts), then read
``FOR UPDATE`` in (season, user id) order after the players' coin rows, so concurrent
writers on PostgreSQL wait for each other instead of losing an update and cannot deadlock
(SQLite has one writer at a time anyway).

**Rank.** 1 + the number of players of that game and season with a higher score
(``mu - 3 sigma``); equal scores share a rank.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Row, bindparam, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from services.records.db import insert_ignore, uncancellable, utcnow
from services.records.models import PlayerRating, RatingChange, RatingSeason
from services.records.rating import Rater, Rating, placement
from services.records.settlement import Settlement

ALL_TIME = 0
FIRST_SEASON = 1
MAX_LIST = 1000


@dataclass(frozen=True, slots=True)
class RatingView:
    user_id: int
    game: str
    season: int
    mu: float
    sigma: float
    score: float
    hands: int
    rank: int          # 1 = first; 0 when not asked for


@dataclass(frozen=True, slots=True)
class RatingStep:
    """A rating after one hand."""

    room_id: int
    hand_no: int
    mu: float
    sigma: float
    score: float
    at: str            # ISO 8601, UTC


@dataclass(frozen=True, slots=True)
class SeasonView:
    game: str
    season: int
    started_at: str


def _iso(when: datetime) -> str:
    return when.isoformat(timespec="seconds") + "Z"


def _view(row: Row[Any], rank: int = 0) -> RatingView:
    return RatingView(row.user_id, row.game, row.season, row.mu, row.sigma, row.score,
                      row.hands, rank)


async def _current_season(conn: AsyncConnection, game: str) -> int:
    latest = (await conn.execute(select(func.max(RatingSeason.season))
                                 .where(RatingSeason.game == game))).scalar_one_or_none()
    return latest if latest is not None else FIRST_SEASON


class RatingBook:
    """Ratings of every game, in one records database."""

    def __init__(self, engine: AsyncEngine, rater: Rater | None = None) -> None:
        self.engine = engine
        self.rater = rater or Rater()

    # -- the write side (inside the settlement's transaction) -------------------------------

    async def apply(self, conn: AsyncConnection, s: Settlement) -> int:
        """Rate the players of a newly written hand; how many ratings moved."""
        if s.final:
            return 0
        hand = placement(s.game, s.seats, s.deltas, s.details)
        if hand is None:
            return 0
        seasons = sorted({ALL_TIME, await _current_season(conn, s.game)})
        uids = sorted(hand.user_ids)
        now = utcnow()
        start = self.rater.initial
        await conn.execute(insert_ignore(conn, PlayerRating, ["game", "season", "user_id"]), [
            {"game": s.game, "season": season, "user_id": uid, "mu": start.mu,
             "sigma": start.sigma, "score": start.score, "hands": 0, "updated_at": now}
            for season in seasons for uid in uids])
        rows = (await conn.execute(
            select(PlayerRating).where(PlayerRating.game == s.game,
                                       PlayerRating.season.in_(seasons),
                                       PlayerRating.user_id.in_(uids))
            .order_by(PlayerRating.season, PlayerRating.user_id).with_for_update())).all()
        changes, history = [], []
        for season in seasons:
            before = {r.user_id: Rating(r.mu, r.sigma) for r in rows if r.season == season}
            after = self.rater.update(before, hand)
            for uid in uids:
                new = after[uid]
                changes.append({"k_season": season, "k_user": uid, "mu": new.mu,
                                "sigma": new.sigma, "score": new.score})
                history.append({"game": s.game, "season": season, "user_id": uid,
                                "room_id": s.room_id, "hand_no": s.hand_no, "mu": new.mu,
                                "sigma": new.sigma, "score": new.score, "at": s.settled_at})
        # one statement for all rows (executemany); mu, sigma and score from each row's values
        await conn.execute(update(PlayerRating).where(
            PlayerRating.game == s.game, PlayerRating.season == bindparam("k_season"),
            PlayerRating.user_id == bindparam("k_user"))
            .values(hands=PlayerRating.hands + 1, updated_at=now), changes)
        await conn.execute(insert(RatingChange), history)
        return len(changes)

    # -- reads --------------------------------------------------------------------------------

    @uncancellable
    async def current_season(self, game: str) -> int:
        async with self.engine.connect() as conn:
            return await _current_season(conn, game)

    async def _season(self, conn: AsyncConnection, game: str, season: int | None) -> int:
        return await _current_season(conn, game) if season is None else season

    @uncancellable
    async def rating(self, user_id: int, game: str, season: int | None = ALL_TIME,
                     ) -> RatingView | None:
        """A player's rating and rank (``season`` None: the current one); None if the
        player has no rated hand there."""
        async with self.engine.connect() as conn:
            season = await self._season(conn, game, season)
            row = (await conn.execute(select(PlayerRating).where(
                PlayerRating.game == game, PlayerRating.season == season,
                PlayerRating.user_id == user_id))).first()
            if row is None:
                return None
            above = (await conn.execute(select(func.count()).select_from(PlayerRating).where(
                PlayerRating.game == game, PlayerRating.season == season,
                PlayerRating.score > row.score))).scalar_one()
        return _view(row, above + 1)

    @uncancellable
    async def leaderboard(self, game: str, season: int | None = ALL_TIME, limit: int = 100,
                          offset: int = 0) -> tuple[int, int, tuple[RatingView, ...]]:
        """(season, players rated in it, the ``limit`` best from ``offset``), best first;
        equal scores share a rank and are listed by user id."""
        async with self.engine.connect() as conn:
            season = await self._season(conn, game, season)
            where = (PlayerRating.game == game, PlayerRating.season == season)
            total = (await conn.execute(select(func.count()).select_from(PlayerRating)
                                        .where(*where))).scalar_one()
            rows = (await conn.execute(
                select(PlayerRating).where(*where)
                .order_by(PlayerRating.score.desc(), PlayerRating.user_id)
                .offset(offset).limit(min(limit, MAX_LIST)))).all()
            if not rows:
                return season, total, ()
            above = (await conn.execute(select(func.count()).select_from(PlayerRating).where(
                *where, PlayerRating.score > rows[0].score))).scalar_one()
        entries, rank = [], above + 1
        for i, row in enumerate(rows):
            if i and row.score < rows[i - 1].score:   # everyone listed before is higher
                rank = offset + i + 1
            entries.append(_view(row, rank))
        return season, total, tuple(entries)

    @uncancellable
    async def history(self, user_id: int, game: str, season: int | None = ALL_TIME,
                      limit: int = 100) -> tuple[RatingStep, ...]:
        """A player's rating after each of his rated hands, newest first."""
        async with self.engine.connect() as conn:
            season = await self._season(conn, game, season)
            rows = (await conn.execute(select(RatingChange).where(
                RatingChange.game == game, RatingChange.season == season,
                RatingChange.user_id == user_id)
                .order_by(RatingChange.at.desc(), RatingChange.room_id.desc(),
                          RatingChange.hand_no.desc())
                .limit(min(limit, MAX_LIST)))).all()
        return tuple(RatingStep(r.room_id, r.hand_no, r.mu, r.sigma, r.score, _iso(r.at))
                     for r in rows)

    # -- seasons ------------------------------------------------------------------------------

    @uncancellable
    async def start_season(self, game: str, operator: str) -> SeasonView:
        """Start the game's next season (its ratings start afresh from the next hand).
        Two operators at once: one season starts, the other call starts the one after."""
        for _ in range(5):
            at = utcnow()
            async with self.engine.begin() as conn:
                season = await _current_season(conn, game) + 1
                started = (await conn.execute(
                    insert_ignore(conn, RatingSeason, ["game", "season"]).values(
                        game=game, season=season, started_at=at, started_by=operator)
                    .returning(RatingSeason.season))).scalar_one_or_none()
            if started is not None:
                return SeasonView(game, season, _iso(at))
        raise RuntimeError(f"could not start a season of {game}: too many at once")
