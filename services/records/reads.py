"""The read side of records (history, replays, hand lists) and player profiles.

Results are frozen values; ``None`` means "no such row" (the gRPC layer maps it to
NOT_FOUND). Replays go through one filter: public events plus the events addressed to the
seat the asking user sat in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Row, func, or_, select
from sqlalchemy.ext.asyncio import AsyncEngine

from paiju.contracts.fair import FairRecord
from services.records.db import uncancellable
from services.records.models import Hand, HandEvent, Player
from services.records.store import START_COINS, insert_ignore, utcnow

MAX_LIST = 1000
MAX_PLAYERS = 500     # profiles read by one get_players (one IN list)


@dataclass(frozen=True, slots=True)
class HistoryItem:
    """A user's delta per hand of a room; index = hand number - 1 (0 where not seated)."""

    user_id: int
    scores: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class ReplayCell:
    idx: int
    kind: str
    event_id: int
    frame: bytes
    json: str


@dataclass(frozen=True, slots=True)
class ReplayView:
    room_id: int
    hand_no: int
    game: str
    cells: tuple[ReplayCell, ...]
    fair: FairRecord | None = None   # the deal's check (docs/fairness.md), if fair


@dataclass(frozen=True, slots=True)
class HandView:
    room_id: int
    hand_no: int
    game: str
    final: bool
    user_ids: tuple[int, ...]
    deltas: tuple[int, ...]
    settled_at: str


@dataclass(frozen=True, slots=True)
class PlayerView:
    user_id: int
    nickname: str
    head_url: str
    sex: int
    coins: int


def _history(hands: Sequence[Row[Any]]) -> tuple[HistoryItem, ...]:
    length = max(h.hand_no for h in hands)
    scores: dict[int, list[int]] = {}
    for hand in hands:
        for uid, delta in zip(hand.seats, hand.deltas, strict=True):
            scores.setdefault(uid, [0] * length)[hand.hand_no - 1] = delta
    return tuple(HistoryItem(uid, tuple(s)) for uid, s in scores.items())


def _hand_view(h: Row[Any]) -> HandView:
    return HandView(h.room_id, h.hand_no, h.game, h.is_final, tuple(h.seats), tuple(h.deltas),
                    h.settled_at.isoformat(timespec="seconds") + "Z")


def _player_view(p: Row[Any]) -> PlayerView:
    return PlayerView(p.user_id, p.nickname, p.head_url, p.sex, p.coins)


class RecordsReader:
    """Queries over the records schema, and profile creation."""

    def __init__(self, engine: AsyncEngine, *, start_coins: int = START_COINS) -> None:
        self.engine = engine
        self.start_coins = start_coins

    @uncancellable
    async def history(self, room_id: int) -> tuple[HistoryItem, ...] | None:
        """Per user, the deltas of the room's hands in hand order; None if no hand yet."""
        query = (select(Hand).where(Hand.room_id == room_id, Hand.is_final.is_(False))
                 .order_by(Hand.hand_no))
        async with self.engine.connect() as conn:
            hands = list((await conn.execute(query)).all())
        return _history(hands) if hands else None

    @uncancellable
    async def sat_in(self, room_id: int, user_id: int) -> bool:
        """Did ``user_id`` sit in any settled hand of the room?"""
        async with self.engine.connect() as conn:
            rows = (await conn.execute(select(Hand.seats).where(Hand.room_id == room_id))).all()
        return any(user_id in (r.seats or ()) for r in rows)

    @uncancellable
    async def replay(self, room_id: int, hand_no: int, user_id: int) -> ReplayView | None:
        """The hand's events in order: public ones plus those to ``user_id``'s seat
        (public only when ``user_id`` is 0 or did not sit in that hand)."""
        async with self.engine.connect() as conn:
            hand = (await conn.execute(select(Hand).where(
                Hand.room_id == room_id, Hand.hand_no == hand_no))).first()
            if hand is None:
                return None
            seat = hand.seats.index(user_id) if user_id in hand.seats else None
            visible: ColumnElement[bool] = HandEvent.to_seat.is_(None)
            if seat is not None:
                visible = or_(visible, HandEvent.to_seat == seat)
            rows = (await conn.execute(select(HandEvent).where(
                HandEvent.room_id == room_id, HandEvent.hand_no == hand_no, visible)
                .order_by(HandEvent.idx))).all()
        cells = tuple(ReplayCell(r.idx, r.kind, r.event_id, r.frame, r.json) for r in rows)
        # checked against its type when the settlement was written (settlement.py)
        details = hand.details or {}
        fair = FairRecord.from_object(details["fair"]) if "fair" in details else None
        return ReplayView(room_id, hand_no, hand.game, cells, fair)

    @uncancellable
    async def list_hands(self, room_id: int, limit: int) -> tuple[tuple[HandView, ...], int]:
        """A room's hands in hand order (final last), or the newest hands of all rooms when
        ``room_id`` is 0; and how many match in total."""
        query = select(Hand)
        if room_id:
            query = query.where(Hand.room_id == room_id).order_by(Hand.is_final, Hand.hand_no)
        else:
            query = query.order_by(Hand.id.desc())
        counted = select(func.count()).select_from(query.order_by(None).subquery())
        async with self.engine.connect() as conn:
            total = (await conn.execute(counted)).scalar_one()
            rows = (await conn.execute(query.limit(min(limit, MAX_LIST)))).all()
        return tuple(_hand_view(r) for r in rows), total

    @uncancellable
    async def get_player(self, user_id: int) -> PlayerView | None:
        async with self.engine.connect() as conn:
            row = (await conn.execute(select(Player).where(Player.user_id == user_id))).first()
        return None if row is None else _player_view(row)

    @uncancellable
    async def get_players(self, user_ids: Sequence[int]) -> tuple[PlayerView, ...]:
        """The profiles of ``user_ids`` that exist (one SELECT ... IN; each found once, in
        no set order); at most :data:`MAX_PLAYERS` distinct ids."""
        wanted = sorted(set(user_ids))
        if len(wanted) > MAX_PLAYERS:
            raise ValueError(f"at most {MAX_PLAYERS} user ids, got {len(wanted)}")
        if not wanted:
            return ()
        async with self.engine.connect() as conn:
            rows = (await conn.execute(select(Player).where(Player.user_id.in_(wanted)))).all()
        return tuple(_player_view(r) for r in rows)

    @uncancellable
    async def ensure_player(self, profile: PlayerView) -> tuple[PlayerView, bool]:
        """Create the profile (with start coins, ``profile.coins`` ignored) unless it exists;
        return the stored profile and whether it was created now."""
        now = utcnow()
        async with self.engine.begin() as conn:
            created = (await conn.execute(
                insert_ignore(conn, Player, ["user_id"]).values(
                    user_id=profile.user_id, nickname=profile.nickname,
                    head_url=profile.head_url, sex=profile.sex, coins=self.start_coins,
                    created_at=now, updated_at=now).returning(Player.user_id)
            )).scalar_one_or_none() is not None
            row = (await conn.execute(
                select(Player).where(Player.user_id == profile.user_id))).one()
        return _player_view(row), created
