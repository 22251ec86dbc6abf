"""The write side of records: one settlement, one transaction, exactly once.

The hand row is inserted first with ``ON CONFLICT (room_id, hand_no) DO NOTHING``: when it
inserts nothing the settlement was already written (a redelivery or a republish) and the
transaction writes nothing else. Otherwise the ledger, the replay events, the players'
coins and their ratings (services/records/ratings.py) are written in the same transaction.
Works the same on SQLite and PostgreSQL (on PostgreSQL a concurrent writer of the same hand
waits for the first one, then does nothing).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, insert, update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from services.records.db import insert_ignore, uncancellable, utcnow
from services.records.models import Hand, HandEvent, LedgerEntry, Player
from services.records.ratings import RatingBook
from services.records.settlement import Settlement

__all__ = ["START_COINS", "SettlementWriter", "insert_ignore", "utcnow"]

# Coins of a player row created by records (first login in dev, or first settlement of a
# user records has never seen). A decision of this service, see docs in the report.
START_COINS = 100_000


def _hand_values(s: Settlement) -> dict[str, Any]:
    return {"room_id": s.room_id, "hand_no": s.hand_no, "game": s.game, "is_final": s.final,
            "base_score": s.base_score, "seats": list(s.seats), "deltas": list(s.deltas),
            "details": s.details, "settled_at": s.settled_at}


class SettlementWriter:
    """Writes settlements into the records schema."""

    def __init__(self, engine: AsyncEngine, *, start_coins: int = START_COINS,
                 ratings: RatingBook | None = None) -> None:
        self.engine = engine
        self.start_coins = start_coins
        # every hand rates its players in its own transaction (services/records/ratings.py)
        self.ratings = ratings or RatingBook(engine)

    @uncancellable
    async def write(self, s: Settlement) -> bool:
        """Write ``s`` in one transaction; False (and nothing written) if already there."""
        async with self.engine.begin() as conn:
            stmt = insert_ignore(conn, Hand, ["room_id", "hand_no"]).values(_hand_values(s))
            inserted = (await conn.execute(stmt.returning(Hand.id))).scalar_one_or_none()
            if inserted is None:
                return False
            if not s.final:
                await self._write_hand_rows(conn, s)
            return True

    async def _write_hand_rows(self, conn: AsyncConnection, s: Settlement) -> None:
        if s.ledger:
            await conn.execute(insert(LedgerEntry), [
                {"room_id": s.room_id, "hand_no": s.hand_no, "user_id": line.user_id,
                 "seat": line.seat, "delta": line.delta, "reason": line.reason,
                 "counterparty_user_id": line.counterparty_user_id} for line in s.ledger])
        if s.events:
            await conn.execute(insert(HandEvent), [
                {"room_id": s.room_id, "hand_no": s.hand_no, "idx": e.idx, "to_seat": e.to_seat,
                 "kind": e.kind, "event_id": e.event_id, "frame": e.frame, "json": e.json}
                for e in s.events])
        await self._move_coins(conn, s)
        await self.ratings.apply(conn, s)

    async def _move_coins(self, conn: AsyncConnection, s: Settlement) -> None:
        """players.coins += delta per seat; a user never seen gets a row with start coins.
        Rows are touched in user id order, so concurrent writers cannot deadlock."""
        now = utcnow()
        seats = sorted(zip(s.seats, s.nicknames, s.deltas, strict=True))
        await conn.execute(insert_ignore(conn, Player, ["user_id"]), [
            {"user_id": uid, "nickname": name, "head_url": "", "sex": 0,
             "coins": self.start_coins, "created_at": now, "updated_at": now}
            for uid, name, _ in seats])
        moved = [{"k_user": uid, "k_delta": delta} for uid, _, delta in seats if delta]
        if moved:   # one statement for all rows (executemany)
            await conn.execute(update(Player).where(Player.user_id == bindparam("k_user"))
                               .values(coins=Player.coins + bindparam("k_delta"),
                                       updated_at=now), moved)
