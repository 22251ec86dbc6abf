"""Contract tests of the records storage (writer + reader), run once per adapter:
SQLite (aiosqlite, a temp file) and PostgreSQL (asyncpg, a fresh database per class)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Iterator

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from services.records.db import make_engine, migrate
from services.records.models import Base
from services.records.reads import MAX_PLAYERS, PlayerView, RecordsReader
from services.records.settlement import parse_settlement
from services.records.store import START_COINS, SettlementWriter
from tests.service.test_records_support import (
    encode,
    event,
    final_message,
    hand_message,
    postgres_database,
)

SEATS = [1001, 1002, 1003, 1004]
TABLES = ("hand_events", "ledger", "hands", "players")


def settle(message: dict) -> object:
    return parse_settlement(encode(message))


async def rows(engine: AsyncEngine, sql: str, **params: object) -> list[tuple]:
    async with engine.connect() as conn:
        return [tuple(r) for r in (await conn.execute(text(sql), params)).all()]


class StoreFixtures:
    """A migrated database emptied of ``tables``, and a settlement writer on it (the ratings
    contract uses them too). Subclasses provide ``database_url``."""

    tables: tuple[str, ...] = TABLES

    @pytest.fixture
    async def engine(self, database_url: str) -> AsyncIterator[AsyncEngine]:
        engine = make_engine(database_url)
        await migrate(engine)
        async with engine.begin() as conn:
            for table in self.tables:
                await conn.execute(text(f"DELETE FROM {table}"))
        yield engine
        await engine.dispose()

    @pytest.fixture
    def writer(self, engine: AsyncEngine) -> SettlementWriter:
        return SettlementWriter(engine)


class StoreContract(StoreFixtures):
    """What every storage adapter must do. Subclasses provide ``database_url``."""

    @pytest.fixture
    def reader(self, engine: AsyncEngine) -> RecordsReader:
        return RecordsReader(engine)

    async def test_migration_is_idempotent_and_at_head(self, engine: AsyncEngine) -> None:
        await migrate(engine)
        from services.records.migrate import scripts

        head = scripts().get_current_head()
        assert head is not None
        assert await rows(engine, "SELECT version_num FROM alembic_version") == [(head,)]

    async def test_models_match_the_migrated_schema(self, engine: AsyncEngine) -> None:
        def differences(conn) -> list:
            return compare_metadata(MigrationContext.configure(conn), Base.metadata)

        async with engine.connect() as conn:
            assert await conn.run_sync(differences) == []

    async def test_write_once_then_duplicate_is_ignored(
            self, engine: AsyncEngine, writer: SettlementWriter) -> None:
        message = hand_message(200001, 1, SEATS, [6, -2, -2, -2])
        assert await writer.write(settle(message)) is True
        assert await writer.write(settle(message)) is False
        # a republish with other content is still the same hand: ignored
        assert await writer.write(settle(hand_message(200001, 1, SEATS, [1, -1, 0, 0]))) is False
        assert await rows(engine, "SELECT deltas FROM hands") in ([([6, -2, -2, -2],)],
                                                                  [("[6, -2, -2, -2]",)])
        assert await rows(engine, "SELECT COUNT(*) FROM ledger") == [(6,)]
        coins = await rows(engine, "SELECT user_id, coins FROM players ORDER BY user_id")
        assert coins == [(1001, START_COINS + 6)] + [(u, START_COINS - 2) for u in SEATS[1:]]

    async def test_concurrent_writers_of_one_hand_write_it_once(
            self, engine: AsyncEngine, writer: SettlementWriter) -> None:
        message = hand_message(200002, 1, SEATS, [3, -3, 0, 0])
        results = await asyncio.gather(*(writer.write(settle(message)) for _ in range(4)))
        assert sorted(results) == [False, False, False, True]
        assert await rows(engine, "SELECT coins FROM players WHERE user_id = 1001") == [
            (START_COINS + 3,)]

    async def test_ledger_sums_to_zero_per_hand_and_matches_deltas(
            self, engine: AsyncEngine, writer: SettlementWriter) -> None:
        rng = random.Random(7)
        expected: dict[tuple[int, int], int] = {}
        for hand_no in range(1, 9):
            deltas = [rng.randint(-20, 20) for _ in range(3)]
            deltas.append(-sum(deltas))
            seats = rng.sample(range(5000, 5010), 4)
            # every other hand has no payments: one ledger row per seat instead
            payments = [] if hand_no % 2 else None
            await writer.write(settle(hand_message(200003, hand_no, seats, deltas,
                                                   payments=payments)))
            for uid, d in zip(seats, deltas, strict=True):
                expected[(hand_no, uid)] = d
        unbalanced = await rows(engine, "SELECT room_id, hand_no FROM ledger "
                                        "GROUP BY room_id, hand_no HAVING SUM(delta) <> 0")
        assert unbalanced == []
        per_user = await rows(engine, "SELECT hand_no, user_id, SUM(delta) FROM ledger "
                                      "GROUP BY hand_no, user_id")
        assert {(h, u): s for h, u, s in per_user} == {k: v for k, v in expected.items() if v}

    async def test_ledger_rows_name_the_counterparty(
            self, engine: AsyncEngine, writer: SettlementWriter) -> None:
        payments = [{"reason": "gang", "payer": 1, "payee": 0, "amount": 2, "ref": ""},
                    {"reason": "hu", "payer": 2, "payee": 3, "amount": 5, "ref": ""}]
        await writer.write(settle(hand_message(200004, 1, SEATS, [2, -2, -5, 5],
                                               payments=payments)))
        got = await rows(engine, "SELECT user_id, seat, delta, reason, counterparty_user_id "
                                 "FROM ledger ORDER BY id")
        assert got == [(1002, 1, -2, "gang", 1001), (1001, 0, 2, "gang", 1002),
                       (1003, 2, -5, "hu", 1004), (1004, 3, 5, "hu", 1003)]

    async def test_coins_move_from_an_existing_profile(
            self, writer: SettlementWriter, reader: RecordsReader) -> None:
        await reader.ensure_player(PlayerView(1001, "east", "http://x/1.png", 1, 0))
        await writer.write(settle(hand_message(200005, 1, SEATS, [-9, 3, 3, 3])))
        await writer.write(settle(hand_message(200005, 2, SEATS, [4, -4, 0, 0])))
        east = await reader.get_player(1001)
        assert east == PlayerView(1001, "east", "http://x/1.png", 1, START_COINS - 9 + 4)
        assert (await reader.get_player(1002)).coins == START_COINS + 3 - 4

    async def test_history_scores_in_hand_order(
            self, writer: SettlementWriter, reader: RecordsReader) -> None:
        hands = {2: [1, -1, 0, 0], 1: [-3, 1, 1, 1], 3: [0, 0, 5, -5]}
        for hand_no, deltas in hands.items():  # written out of order
            await writer.write(settle(hand_message(200006, hand_no, SEATS, deltas)))
        await writer.write(settle(hand_message(299999, 1, SEATS, [7, -7, 0, 0])))
        items = await reader.history(200006)
        assert {i.user_id: i.scores for i in items} == {
            uid: tuple(hands[h][seat] for h in (1, 2, 3)) for seat, uid in enumerate(SEATS)}
        assert await reader.history(200007) is None

    async def test_replay_shows_public_events_and_the_users_own(
            self, writer: SettlementWriter, reader: RecordsReader) -> None:
        targets = [None, 0, 1, 2, 3, None, 2, 0]
        events = [event(i, to, bytes([i, 255, 0])) for i, to in enumerate(targets)]
        await writer.write(settle(hand_message(200008, 1, SEATS, [0, 0, 0, 0],
                                               events=list(reversed(events)))))
        for user, seat in [(0, None), (1003, 2), (1001, 0), (4242, None)]:
            view = await reader.replay(200008, 1, user)
            wanted = [i for i, to in enumerate(targets) if to is None or to == seat]
            assert [c.event_id for c in view.cells] == [9600 + i for i in wanted]
            assert [c.frame for c in view.cells] == [bytes([i, 255, 0]) for i in wanted]
            assert view.game == "xuezhan"
        assert await reader.replay(200008, 2, 1001) is None

    async def test_final_message_is_stored_apart_from_the_hands(
            self, engine: AsyncEngine, writer: SettlementWriter,
            reader: RecordsReader) -> None:
        await writer.write(settle(hand_message(200009, 1, SEATS, [2, -2, 0, 0])))
        final = final_message(200009, SEATS, [2, -2, 0, 0], hands_played=1)
        assert await writer.write(settle(final)) is True
        assert await writer.write(settle(final)) is False
        hands, total = await reader.list_hands(200009, 10)
        assert total == 2
        assert [(h.hand_no, h.final, h.deltas) for h in hands] == [
            (1, False, (2, -2, 0, 0)), (0, True, (2, -2, 0, 0))]
        assert {i.user_id: i.scores for i in await reader.history(200009)}[1001] == (2,)
        assert await rows(engine, "SELECT COUNT(*) FROM ledger WHERE hand_no = 0") == [(0,)]
        assert (await reader.get_player(1001)).coins == START_COINS + 2

    async def test_list_hands_of_all_rooms_newest_first_with_limit(
            self, writer: SettlementWriter, reader: RecordsReader) -> None:
        for room in (200010, 200011, 200012):
            await writer.write(settle(hand_message(room, 1, SEATS, [1, -1, 0, 0])))
        hands, total = await reader.list_hands(0, 2)
        assert total == 3
        assert [h.room_id for h in hands] == [200012, 200011]
        assert hands[0].settled_at == "2026-11-30T03:04:05Z"

    async def test_ensure_player_creates_once(self, reader: RecordsReader) -> None:
        first, created = await reader.ensure_player(PlayerView(77, "north", "", 2, 0))
        again, created_again = await reader.ensure_player(PlayerView(77, "other", "u", 1, 5))
        assert (created, created_again) == (True, False)
        assert first == again == PlayerView(77, "north", "", 2, START_COINS)
        assert await reader.get_player(78) is None

    async def test_get_players_reads_many_profiles_in_one_query(
            self, reader: RecordsReader) -> None:
        for uid in (81, 82, 83):
            await reader.ensure_player(PlayerView(uid, f"n{uid}", "h", 1, 0))
        got = await reader.get_players([83, 81, 99, 81])
        assert sorted(got, key=lambda p: p.user_id) == [
            PlayerView(81, "n81", "h", 1, START_COINS), PlayerView(83, "n83", "h", 1, START_COINS)]
        assert await reader.get_players([]) == ()
        assert len(await reader.get_players(range(1, MAX_PLAYERS + 1))) == 3
        with pytest.raises(ValueError):
            await reader.get_players(range(1, MAX_PLAYERS + 2))


class TestSqliteStore(StoreContract):
    @pytest.fixture
    def database_url(self, tmp_path) -> str:
        return f"sqlite+aiosqlite:///{tmp_path / 'var' / 'records.db'}"


@pytest.mark.postgres
class TestPostgresStore(StoreContract):
    @pytest.fixture(scope="class")
    @classmethod
    def database_url(cls) -> Iterator[str]:
        yield from postgres_database()
