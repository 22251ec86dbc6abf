"""An operator starts a game's next rating season from the console (POST
/api/games/{game}/season) on a real stack (records on SQLite): the admin token only, an
unknown game is 404, the season moves on in records, players then see the new season, and
the action is in the audit log on target "game"."""

from __future__ import annotations

from pathlib import Path

from paiju.v1 import common_pb2, lobby_msgs_pb2
from services.common.natsd import EmbeddedNats
from tests.service.test_lobby_console import TOKEN
from tests.service.test_lobby_console_actions import admin_stack, post


async def test_an_operator_starts_a_season_and_it_is_audited(
        fresh_nats: EmbeddedNats, tmp_path: Path) -> None:
    async with admin_stack(fresh_nats, tmp_path / "records.db") as stack:
        player = await stack.player(601, "p")
        before = (await player.request(lobby_msgs_pb2.AskRating(
            game="changsha", current_season=True))).rating_info
        assert (before.season, before.rated) == (1, False)
        status, body = await post(stack, "/api/games/changsha/season", {"operator": "carol"},
                                  token=TOKEN)
        assert status == 403
        assert (await post(stack, "/api/games/poker/season", {"operator": "carol"}))[0] == 404
        assert (await post(stack, "/api/games/changsha/season", {}))[0] == 400
        status, body = await post(stack, "/api/games/changsha/season", {"operator": "carol"})
        assert status == 200 and body["ok"] and body["season"] == 2, body
        assert body["game"] == "changsha" and body["started_at"].endswith("Z")
        status, again = await post(stack, "/api/games/changsha/season", {"operator": "dave"})
        assert again["season"] == 3
        board = (await player.request(lobby_msgs_pb2.AskLeaderboard(
            game="changsha", current_season=True))).leaderboard
        assert (board.season, board.total) == (3, 0)
        async with stack.http.get(stack.url("/api/audit?target=game"), headers={
                "Authorization": f"Bearer {TOKEN}"}) as response:
            entries = (await response.json())["entries"]
        assert [(e["operator"], e["action"], e["target"], e["target_id"], e["detail"])
                for e in entries] == [
            ("dave", "start_season", "game", str(common_pb2.CHANGSHA),
             {"game": "changsha", "season": 3}),
            ("carol", "start_season", "game", str(common_pb2.CHANGSHA),
             {"game": "changsha", "season": 2})]
