"""Ratings reach players through the lobby (AskRating, AskLeaderboard), from a real records
process that rated settlements published on JetStream: a player sees his own rating and
rank, the leaderboard shows ranks, ids and ratings, a player not rated yet is told so, and
bad requests get their codes."""

from __future__ import annotations

import asyncio
from pathlib import Path

from paiju.v1 import lobby_msgs_pb2
from services.common.bus import SETTLE_STREAM, SETTLE_SUBJECT
from tests.service.test_records_support import encode, hand_message
from tests.support.lobbyworld import E, World, code_of
from tests.support.procs import make_service

SEATS = [5001, 5002, 5003, 5004]


async def test_a_player_sees_his_rating_and_the_leaderboard(
        world: World, tmp_path: Path) -> None:  # noqa: F811
    proc = make_service("records", world.nats.url, tmp_path)
    await asyncio.to_thread(proc.start)
    try:
        world.backend_port = proc.port
        c = await world.client(await world.lobby())
        await c.login(5001, nickname="east")
        js = world.nc.jetstream()
        await js.stream_info(SETTLE_STREAM)          # records made it at start
        for hand_no in (1, 2):
            message = hand_message(500001, hand_no, SEATS, [6, 0, 0, -6])
            await js.publish(SETTLE_SUBJECT, encode(message))

        async def rated_twice() -> lobby_msgs_pb2.RatingInfo:
            while True:
                reply = await c.request(lobby_msgs_pb2.AskRating(game="xuezhan"))
                if reply.rating_info.hands == 2:
                    return reply.rating_info
                await asyncio.sleep(0.1)

        mine = await asyncio.wait_for(rated_twice(), 20)
        assert (mine.user_id, mine.game, mine.season, mine.rated, mine.rank) == (
            5001, "xuezhan", 0, True, 1)
        assert mine.mu > 25 and abs(mine.score - (mine.mu - 3 * mine.sigma)) < 1e-9
        current = (await c.request(lobby_msgs_pb2.AskRating(
            game="xuezhan", current_season=True))).rating_info
        assert (current.season, current.hands) == (1, 2)

        top = (await c.request(lobby_msgs_pb2.AskLeaderboard(game="xuezhan", limit=3)))
        board = top.leaderboard
        assert (board.game, board.season, board.total) == ("xuezhan", 0, 4)
        assert [(e.user_id, e.rank) for e in board.entries] == [(5001, 1), (5002, 2),
                                                                (5003, 2)]
        last = (await c.request(lobby_msgs_pb2.AskLeaderboard(game="xuezhan", offset=3)))
        assert [(e.user_id, e.rank) for e in last.leaderboard.entries] == [(5004, 4)]

        other = await c.request(lobby_msgs_pb2.AskRating(game="dadun"))
        assert other.rating_info.rated is False and other.rating_info.user_id == 5001

        for bad, code in ((lobby_msgs_pb2.AskRating(game="poker"), E.ERR_BAD_OPTIONS),
                          (lobby_msgs_pb2.AskRating(game="xuezhan", season=-1),
                           E.ERR_BAD_FRAME),
                          (lobby_msgs_pb2.AskLeaderboard(game="xuezhan", limit=101),
                           E.ERR_BAD_FRAME),
                          (lobby_msgs_pb2.AskLeaderboard(game="xuezhan", offset=-1),
                           E.ERR_BAD_FRAME)):
            assert code_of(await c.request(bad)) == code
    finally:
        await asyncio.to_thread(proc.stop)
