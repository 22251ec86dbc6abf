"""gRPC adapter of the records service, and its start-up: migrate the schema where this
environment does it at start (dev, test; services/records/migrate.py), start the settlement
consumer, serve ``paiju.v1.Records``. In prod the schema is the migration Job's: a records
whose database is down or behind its code starts anyway and stays unready until both are
right.

Handlers are thin: validate the request (INVALID_ARGUMENT with a message), call one query,
map a missing row to NOT_FOUND.
"""

from __future__ import annotations

import logging
from typing import NoReturn

import grpc
from sqlalchemy import text

from games import registry
from paiju.v1 import lobby_msgs_pb2, records_pb2, records_pb2_grpc
from services.common.aborting import abort
from services.common.config import Config
from services.common.health import watch_service
from services.common.server import ServiceHost, start_service
from services.records.audit import AuditLog, AuditView
from services.records.consumer import SettleConsumer
from services.records.db import engine_for, finish_running, migrate
from services.records.migrate import SchemaGate, migrate_on_start
from services.records.ratings import RatingBook, RatingView
from services.records.reads import MAX_PLAYERS, PlayerView, RecordsReader
from services.records.store import SettlementWriter

log = logging.getLogger("paiju.records")

DEFAULT_LIST = 100
MAX_NICKNAME = 64
MAX_HEAD_URL = 512
MAX_AUDIT_TEXT = 2000
AUDIT_TARGETS = ("room", "user", "game")   # a game: its enum number (StartSeason)
RATED_GAMES = tuple(spec.name for spec in registry.all())


async def _invalid(context: grpc.aio.ServicerContext, message: str) -> NoReturn:
    await abort(context, grpc.StatusCode.INVALID_ARGUMENT, message)


async def _not_found(context: grpc.aio.ServicerContext, message: str) -> NoReturn:
    await abort(context, grpc.StatusCode.NOT_FOUND, message)


def _player_record(p: PlayerView, created: bool = False) -> records_pb2.PlayerRecord:
    return records_pb2.PlayerRecord(user_id=p.user_id, nickname=p.nickname,
                                    head_url=p.head_url, sex=p.sex, coins=p.coins,
                                    created=created)


class RecordsService(records_pb2_grpc.RecordsServicer):
    """paiju.v1.Records over a :class:`RecordsReader`."""

    def __init__(self, reader: RecordsReader, audit: AuditLog | None = None,
                 ratings: RatingBook | None = None) -> None:
        self.reader = reader
        self.audit = audit or AuditLog(reader.engine)
        self.ratings = ratings or RatingBook(reader.engine)

    async def _require_seated(self, room_id: int, user_id: int,
                              context: grpc.aio.ServicerContext) -> None:
        """Players see the history and replays of rooms they sat in, nothing else (an
        operator, user 0, sees any room's public view). Another room is "not found", as
        if it did not exist: whether it does is not the asker's business either."""
        if user_id and not await self.reader.sat_in(room_id, user_id):
            await _not_found(context, f"no hand of yours in room {room_id}")

    async def GetHistoryScores(self, request: records_pb2.HistoryRequest,
                               context: grpc.aio.ServicerContext) -> lobby_msgs_pb2.UseHistoryScore:
        if request.room_id <= 0 or request.user_id < 0:
            await _invalid(context, f"room_id must be positive and user_id >= 0, got "
                           f"{request.room_id}, {request.user_id}")
        await self._require_seated(request.room_id, request.user_id, context)
        items = await self.reader.history(request.room_id)
        if items is None:
            await _not_found(context, f"no settled hand in room {request.room_id}")
        return lobby_msgs_pb2.UseHistoryScore(room_id=request.room_id, items=[
            lobby_msgs_pb2.HistoryScoreItem(user_id=i.user_id, scores=i.scores) for i in items])

    async def GetReplay(self, request: records_pb2.ReplayRequest,
                        context: grpc.aio.ServicerContext) -> lobby_msgs_pb2.Replay:
        if request.room_id <= 0 or request.hand_no <= 0 or request.user_id < 0:
            await _invalid(context, "room_id and hand_no must be positive, user_id >= 0 "
                           f"(got {request.room_id}, {request.hand_no}, {request.user_id})")
        await self._require_seated(request.room_id, request.user_id, context)
        view = await self.reader.replay(request.room_id, request.hand_no, request.user_id)
        if view is None:
            await _not_found(context, f"no hand {request.hand_no} in room {request.room_id}")
        return lobby_msgs_pb2.Replay(room_id=view.room_id, hand_no=view.hand_no,
                                     game=view.game,
                                     fair_json=view.fair.encode().decode() if view.fair else "",
                                     cells=[
            lobby_msgs_pb2.ReplayCell(event_id=c.event_id, event_data=c.frame, kind=c.kind,
                                      json=c.json) for c in view.cells])

    async def EnsurePlayer(self, request: records_pb2.EnsurePlayerRequest,
                           context: grpc.aio.ServicerContext) -> records_pb2.PlayerRecord:
        if request.user_id <= 0:
            await _invalid(context, f"user_id must be positive, got {request.user_id}")
        if len(request.nickname) > MAX_NICKNAME or len(request.head_url) > MAX_HEAD_URL:
            await _invalid(context, f"nickname (max {MAX_NICKNAME} characters) or head_url "
                           f"(max {MAX_HEAD_URL}) too long")
        if "\x00" in request.nickname or "\x00" in request.head_url:
            await _invalid(context, "nickname and head_url must not contain NUL characters")
        profile = PlayerView(request.user_id, request.nickname, request.head_url,
                             request.sex, 0)
        player, created = await self.reader.ensure_player(profile)
        return _player_record(player, created)

    async def GetPlayer(self, request: records_pb2.GetPlayerRequest,
                        context: grpc.aio.ServicerContext) -> records_pb2.PlayerRecord:
        if request.user_id <= 0:
            await _invalid(context, f"user_id must be positive, got {request.user_id}")
        player = await self.reader.get_player(request.user_id)
        if player is None:
            await _not_found(context, f"no player {request.user_id}")
        return _player_record(player)

    async def GetPlayers(self, request: records_pb2.GetPlayersRequest,  # noqa: N802
                         context: grpc.aio.ServicerContext) -> records_pb2.PlayerRecords:
        """The profiles of up to MAX_PLAYERS users in one query; those not found are left
        out (the caller treats each as GetPlayer's NOT_FOUND)."""
        ids = request.user_ids
        if len(ids) > MAX_PLAYERS:
            await _invalid(context, f"at most {MAX_PLAYERS} user_ids, got {len(ids)}")
        bad = [uid for uid in ids if uid <= 0]
        if bad:
            await _invalid(context, f"user_ids must be positive, got {bad[0]}")
        players = await self.reader.get_players(ids)
        return records_pb2.PlayerRecords(players=[_player_record(p) for p in players])

    async def ListHands(self, request: records_pb2.ListHandsRequest,
                        context: grpc.aio.ServicerContext) -> records_pb2.ListHandsReply:
        if request.room_id < 0 or request.limit < 0:
            await _invalid(context, f"room_id and limit must not be negative "
                           f"(got {request.room_id}, {request.limit})")
        hands, total = await self.reader.list_hands(request.room_id,
                                                    request.limit or DEFAULT_LIST)
        return records_pb2.ListHandsReply(total=total, hands=[
            records_pb2.HandRecord(room_id=h.room_id, hand_no=h.hand_no, game=h.game,
                                   user_ids=h.user_ids, deltas=h.deltas,
                                   settled_at=h.settled_at, final=h.final) for h in hands])

    async def AppendAudit(self, request: records_pb2.AuditRecord,  # noqa: N802
                          context: grpc.aio.ServicerContext) -> records_pb2.AuditRecord:
        if not request.operator or not request.action or request.target_kind not in AUDIT_TARGETS:
            await _invalid(context, "operator and action are required, target_kind is "
                           f"{' or '.join(AUDIT_TARGETS)}")
        if request.target_id <= 0:
            await _invalid(context, f"target_id must be positive, got {request.target_id}")
        texts = (request.operator, request.action, request.detail_json, request.result,
                 request.source)
        if any(len(t) > MAX_AUDIT_TEXT or "\x00" in t for t in texts):
            await _invalid(context, f"audit fields hold at most {MAX_AUDIT_TEXT} characters "
                           "and no NUL")
        entry = await self.audit.append(request.operator, request.action, request.target_kind,
                                        request.target_id, request.detail_json, request.result,
                                        request.source)
        return _audit_record(entry)

    async def ListAudit(self, request: records_pb2.ListAuditRequest,  # noqa: N802
                        context: grpc.aio.ServicerContext) -> records_pb2.ListAuditReply:
        if request.limit < 0 or request.target_id < 0:
            await _invalid(context, "limit and target_id must not be negative")
        entries = await self.audit.list(request.limit or DEFAULT_LIST, request.target_kind,
                                        request.target_id)
        return records_pb2.ListAuditReply(entries=[_audit_record(e) for e in entries])


    # -- ratings (services/records/ratings.py) -------------------------------------------------

    async def _scope(self, scope: records_pb2.RatingScope,
                     context: grpc.aio.ServicerContext) -> tuple[str, int | None]:
        if scope.game not in RATED_GAMES:
            await _invalid(context, f"unknown game {scope.game!r}; known: "
                           f"{', '.join(RATED_GAMES)}")
        if scope.season < 0:
            await _invalid(context, f"season must not be negative, got {scope.season}")
        return scope.game, None if scope.current_season else scope.season

    async def _limit(self, limit: int, context: grpc.aio.ServicerContext) -> int:
        if limit < 0:
            await _invalid(context, f"limit must not be negative, got {limit}")
        return limit or DEFAULT_LIST

    async def GetRating(self, request: records_pb2.RatingRequest,  # noqa: N802
                        context: grpc.aio.ServicerContext) -> records_pb2.RatingRecord:
        if request.user_id <= 0:
            await _invalid(context, f"user_id must be positive, got {request.user_id}")
        game, season = await self._scope(request.scope, context)
        view = await self.ratings.rating(request.user_id, game, season)
        if view is None:    # not rated there yet: hands 0, rank 0, the season it means
            number = await self.ratings.current_season(game) if season is None else season
            return records_pb2.RatingRecord(user_id=request.user_id, game=game, season=number)
        return _rating_record(view)

    async def ListLeaderboard(self, request: records_pb2.LeaderboardRequest,  # noqa: N802
                              context: grpc.aio.ServicerContext,
                              ) -> records_pb2.LeaderboardReply:
        game, season = await self._scope(request.scope, context)
        limit = await self._limit(request.limit, context)
        if request.offset < 0:
            await _invalid(context, f"offset must not be negative, got {request.offset}")
        number, total, entries = await self.ratings.leaderboard(game, season, limit,
                                                                request.offset)
        return records_pb2.LeaderboardReply(game=game, season=number, total=total,
                                             entries=[_rating_record(e) for e in entries])

    async def ListRatingHistory(self, request: records_pb2.RatingHistoryRequest,  # noqa: N802
                                context: grpc.aio.ServicerContext,
                                ) -> records_pb2.RatingHistoryReply:
        if request.user_id <= 0:
            await _invalid(context, f"user_id must be positive, got {request.user_id}")
        game, season = await self._scope(request.scope, context)
        limit = await self._limit(request.limit, context)
        steps = await self.ratings.history(request.user_id, game, season, limit)
        return records_pb2.RatingHistoryReply(steps=[
            records_pb2.RatingStep(room_id=s.room_id, hand_no=s.hand_no, mu=s.mu,
                                   sigma=s.sigma, score=s.score, at=s.at) for s in steps])

    async def StartSeason(self, request: records_pb2.StartSeasonRequest,  # noqa: N802
                          context: grpc.aio.ServicerContext) -> records_pb2.SeasonRecord:
        if request.game not in RATED_GAMES:
            await _invalid(context, f"unknown game {request.game!r}; known: "
                           f"{', '.join(RATED_GAMES)}")
        if not request.operator or len(request.operator) > MAX_AUDIT_TEXT \
                or "\x00" in request.operator:
            await _invalid(context, "operator is required (at most "
                           f"{MAX_AUDIT_TEXT} characters, no NUL)")
        season = await self.ratings.start_season(request.game, request.operator)
        return records_pb2.SeasonRecord(game=season.game, season=season.season,
                                        started_at=season.started_at)


def _rating_record(r: RatingView) -> records_pb2.RatingRecord:
    return records_pb2.RatingRecord(user_id=r.user_id, game=r.game, season=r.season, mu=r.mu,
                                    sigma=r.sigma, score=r.score, hands=r.hands, rank=r.rank)


def _audit_record(e: AuditView) -> records_pb2.AuditRecord:
    return records_pb2.AuditRecord(id=e.id, at=e.at, operator=e.operator, action=e.action,
                                   target_kind=e.target_kind, target_id=e.target_id,
                                   detail_json=e.detail, result=e.result, source=e.source)


async def start(cfg: Config, *, port: int | None = None,
                metrics_port: int | None = None) -> ServiceHost:
    c = cfg.records
    engine = engine_for(c)
    checks = {}
    if migrate_on_start(cfg):
        await migrate(engine)
    else:   # the Job migrates; until the schema is the code's (or newer) records is unready
        checks["schema"] = SchemaGate(engine).check
    consumer = SettleConsumer(cfg.nats, SettlementWriter(engine),
                              connect_timeout=cfg.nats.connect_timeout, replicas=cfg.nats.replicas,
                              ack_wait=c.ack_wait_seconds)

    def register(server: grpc.aio.Server) -> list[str]:
        records_pb2_grpc.add_RecordsServicer_to_server(RecordsService(RecordsReader(engine)),
                                                       server)
        return ["paiju.v1.Records"]

    svc = await start_service("records", c.host, c.port if port is None else port,
                              c.metrics_port if metrics_port is None else metrics_port, register, cfg=cfg)
    consumer.start()

    async def nats_up() -> bool:
        return consumer.connected

    async def database_up() -> bool:
        async with engine.connect() as conn:
            await conn.execute(text("SELECT 1"))
        return True

    await watch_service(svc, {"nats": nats_up, "database": database_up, **checks},
                        cfg.nats.liveness_seconds)
    # hooks run in reverse: stop the consumer (closes NATS), then dispose of the engine
    svc.on_stop.append(engine.dispose)
    svc.on_stop.append(finish_running)
    svc.on_stop.append(consumer.stop)
    return svc
