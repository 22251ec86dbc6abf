"""Ratings over records' gRPC API, with a real records process (SQLite) and a real
nats-server: settlements published on JetStream (one twice) rate their players once; a
player's rating and rank, the leaderboard, the history and a new season are served; bad
requests get INVALID_ARGUMENT, a player not rated in a season hands 0 and rank 0."""

from __future__ import annotations

import grpc
import nats
import pytest

from paiju.v1 import records_pb2, records_pb2_grpc
from services.common.server import ServiceHost
from tests.service.test_records import (  # noqa: F401  (fixtures)
    js,
    publish,
    service,
    stub,
    total_hands,
)
from tests.service.test_records_support import hand_message
from tests.support.waiting import eventually

SEATS = [4001, 4002, 4003, 4004]
ALL_TIME = records_pb2.RatingScope(game="xuezhan", season=0)
CURRENT = records_pb2.RatingScope(game="xuezhan", current_season=True)


async def test_ratings_are_served_after_settlements(
        service: ServiceHost, stub: records_pb2_grpc.RecordsStub,  # noqa: F811
        js: nats.js.JetStreamContext) -> None:  # noqa: F811
    for hand_no in (1, 2):
        message = hand_message(400001, hand_no, SEATS, [6, 0, 0, -6])
        await publish(js, message, None)            # no dedupe id: records must dedupe
        await publish(js, message, None)

    await publish(js, hand_message(400001, 1, SEATS, [6, 0, 0, -6]), None)   # once more
    # the consumer takes the stream in order: once this one is written, so are those before
    await publish(js, hand_message(400002, 1, SEATS, [0, 0, 0, 0]), None)   # rates nobody

    async def written() -> bool:
        return await total_hands(stub, 400002) == 1
    await eventually(written, seconds=20)
    assert await total_hands(stub, 400001) == 2

    me = await stub.GetRating(records_pb2.RatingRequest(user_id=4001, scope=ALL_TIME))
    assert (me.game, me.season, me.hands, me.rank) == ("xuezhan", 0, 2, 1)
    assert me.mu > 25 and me.score == pytest.approx(me.mu - 3 * me.sigma)
    board = await stub.ListLeaderboard(records_pb2.LeaderboardRequest(scope=CURRENT, limit=3))
    assert (board.season, board.total) == (1, 4)
    assert [(e.user_id, e.rank) for e in board.entries] == [(4001, 1), (4002, 2), (4003, 2)]
    steps = (await stub.ListRatingHistory(records_pb2.RatingHistoryRequest(
        user_id=4004, scope=ALL_TIME))).steps
    assert [s.hand_no for s in steps] == [2, 1] and steps[0].mu < steps[1].mu < 25

    season = await stub.StartSeason(records_pb2.StartSeasonRequest(game="xuezhan",
                                                                   operator="alice"))
    assert (season.game, season.season) == ("xuezhan", 2) and season.started_at.endswith("Z")
    fresh = await stub.ListLeaderboard(records_pb2.LeaderboardRequest(scope=CURRENT))
    assert (fresh.season, fresh.total) == (2, 0)
    unrated = await stub.GetRating(records_pb2.RatingRequest(user_id=4001, scope=CURRENT))
    assert unrated == records_pb2.RatingRecord(user_id=4001, game="xuezhan", season=2)
    again = await stub.GetRating(records_pb2.RatingRequest(user_id=4001, scope=ALL_TIME))
    assert again == me


@pytest.mark.parametrize("call, request_", [
    ("GetRating", records_pb2.RatingRequest(user_id=1, scope=records_pb2.RatingScope(
        game="poker"))),
    ("GetRating", records_pb2.RatingRequest(user_id=0, scope=ALL_TIME)),
    ("GetRating", records_pb2.RatingRequest(user_id=1, scope=records_pb2.RatingScope(
        game="xuezhan", season=-1))),
    ("ListLeaderboard", records_pb2.LeaderboardRequest(scope=ALL_TIME, limit=-1)),
    ("ListLeaderboard", records_pb2.LeaderboardRequest(scope=ALL_TIME, offset=-5)),
    ("ListRatingHistory", records_pb2.RatingHistoryRequest(user_id=-3, scope=ALL_TIME)),
    ("StartSeason", records_pb2.StartSeasonRequest(game="xuezhan")),
    ("StartSeason", records_pb2.StartSeasonRequest(game="", operator="alice")),
])
async def test_bad_rating_requests_are_refused(
        stub: records_pb2_grpc.RecordsStub, call: str, request_: object) -> None:  # noqa: F811
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await getattr(stub, call)(request_)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert refused.value.details()
