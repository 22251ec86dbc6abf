"""SQLAlchemy 2 models of the records schema (the Alembic migrations create the tables).

Times are naive UTC. Coins and deltas are points that already include the base score.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

# SQLite only autoincrements an INTEGER PRIMARY KEY.
BigId = BigInteger().with_variant(Integer, "sqlite")


class Base(DeclarativeBase):
    pass


class Player(Base):
    """A player profile and coin balance (金币)."""

    __tablename__ = "players"

    user_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    nickname: Mapped[str] = mapped_column(String(), default="")
    head_url: Mapped[str] = mapped_column(String(), default="")
    sex: Mapped[int] = mapped_column(Integer, default=0)
    coins: Mapped[int] = mapped_column(BigInteger, default=0)
    created_at: Mapped[datetime] = mapped_column(DateTime)
    updated_at: Mapped[datetime] = mapped_column(DateTime)


class Hand(Base):
    """One settled hand, or the room's final settlement (``hand_no`` 0, ``is_final``,
    ``deltas`` = room totals). Unique on room + hand: the exactly-once gate."""

    __tablename__ = "hands"
    __table_args__ = (UniqueConstraint("room_id", "hand_no", name="uq_hands_room_hand"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    room_id: Mapped[int] = mapped_column(BigInteger)
    hand_no: Mapped[int] = mapped_column(Integer)
    game: Mapped[str] = mapped_column(String())
    is_final: Mapped[bool] = mapped_column(Boolean, default=False)
    base_score: Mapped[int] = mapped_column(Integer, default=0)
    seats: Mapped[list[int]] = mapped_column(JSON)
    deltas: Mapped[list[int]] = mapped_column(JSON)
    details: Mapped[dict[str, Any]] = mapped_column(JSON)
    settled_at: Mapped[datetime] = mapped_column(DateTime)


class LedgerEntry(Base):
    """A coin movement of one user in one hand: two rows per payment (payer and payee,
    each naming the other), so ``SUM(delta)`` per (room_id, hand_no) is zero."""

    __tablename__ = "ledger"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    room_id: Mapped[int] = mapped_column(BigInteger, index=True)
    hand_no: Mapped[int] = mapped_column(Integer)
    user_id: Mapped[int] = mapped_column(BigInteger, index=True)
    seat: Mapped[int] = mapped_column(Integer)
    delta: Mapped[int] = mapped_column(BigInteger)
    reason: Mapped[str] = mapped_column(String())
    counterparty_user_id: Mapped[int | None] = mapped_column(BigInteger, nullable=True)


class HandEvent(Base):
    """One event of a hand's replay; ``to_seat`` NULL means public."""

    __tablename__ = "hand_events"

    room_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    hand_no: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    idx: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    to_seat: Mapped[int | None] = mapped_column(Integer, nullable=True)
    kind: Mapped[str] = mapped_column(String())
    event_id: Mapped[int] = mapped_column(Integer)
    frame: Mapped[bytes] = mapped_column(LargeBinary)
    json: Mapped[str] = mapped_column(Text)


class AuditEntry(Base):
    """One operator action from the console (docs/services.md, "Operator actions"): who,
    what, when, on which target, and how it went. Written once, never changed."""

    __tablename__ = "audit_log"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    at: Mapped[datetime] = mapped_column(DateTime, index=True)
    operator: Mapped[str] = mapped_column(String())
    action: Mapped[str] = mapped_column(String())
    target_kind: Mapped[str] = mapped_column(String())      # "room" or "user"
    target_id: Mapped[int] = mapped_column(BigInteger)
    detail: Mapped[str] = mapped_column(Text, default="")   # JSON of the action's arguments
    result: Mapped[str] = mapped_column(String(), default="")   # "ok" or why not
    source: Mapped[str] = mapped_column(String(), default="")   # lobby instance and peer


class RatingSeason(Base):
    """A season of a game's ratings (migration 0003): an operator starts the next one, and
    the seasonal ratings start afresh. Season 1 needs no row; season 0 is all-time."""

    __tablename__ = "rating_seasons"

    game: Mapped[str] = mapped_column(String(), primary_key=True)
    season: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    started_at: Mapped[datetime] = mapped_column(DateTime)
    started_by: Mapped[str] = mapped_column(String(), default="")


class PlayerRating(Base):
    """A player's rating in a game and season (0: all-time): the model's mu and sigma, the
    leaderboard score ``mu - 3 sigma`` and how many hands made it."""

    __tablename__ = "ratings"
    __table_args__ = (Index("ix_ratings_board", "game", "season", "score"),)

    game: Mapped[str] = mapped_column(String(), primary_key=True)
    season: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    user_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    mu: Mapped[float] = mapped_column(Float)
    sigma: Mapped[float] = mapped_column(Float)
    score: Mapped[float] = mapped_column(Float)
    hands: Mapped[int] = mapped_column(Integer, default=0)
    updated_at: Mapped[datetime] = mapped_column(DateTime)


class RatingChange(Base):
    """A rating after one hand: one row per player, game, season and hand, written in the
    hand's transaction (so exactly once, as the hand)."""

    __tablename__ = "rating_history"

    game: Mapped[str] = mapped_column(String(), primary_key=True)
    season: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    user_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    room_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    hand_no: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    mu: Mapped[float] = mapped_column(Float)
    sigma: Mapped[float] = mapped_column(Float)
    score: Mapped[float] = mapped_column(Float)
    at: Mapped[datetime] = mapped_column(DateTime)
