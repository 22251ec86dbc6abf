"""The browser's rating and leaderboard lines (clients/web/ratings.js) from the proto3 JSON
the lobby sends (zeros omitted, int64 as strings). Runs the module in node, skipped where
node is missing."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.node import NODE, run_node

WEB = Path(__file__).resolve().parents[3] / "clients" / "web"


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_rating_and_leaderboard_lines() -> None:
    module = (WEB / "ratings.js").as_uri()
    got = run_node(f"""
import {{ratingText, leaderboardLines}} from "{module}";
console.log(JSON.stringify({{
  rated: ratingText({{user_id: "7000", game: "xuezhan", rated: true, mu: 27.84, sigma: 8.26,
                     score: 3.06, hands: 1, rank: "2"}}),
  unrated: ratingText({{user_id: "7000", game: "dadun", season: 3}}),
  board: leaderboardLines({{game: "changsha", season: 1, total: "2", entries: [
    {{user_id: "7", rated: true, mu: 30, sigma: 2, score: 24, hands: 40, rank: "1"}},
    {{user_id: "9007199254740993", rated: true, mu: 29, sigma: 2, score: 23, hands: 1,
      rank: "2"}}]}}),
  empty: leaderboardLines({{game: "xuezhan"}}),
}}));
""")
    assert got["rated"] == "xuezhan, all-time: 27.8 ± 8.3 (score 3.1), rank 2, 1 hand"
    assert got["unrated"] == "dadun, season 3: not rated yet (play a hand)"
    assert got["board"] == ["changsha leaderboard, season 1 (2 players)",
                            "1. 7 — 24.0 (30.0 ± 2.0, 40 hands)",
                            "2. 9007199254740993 — 23.0 (29.0 ± 2.0, 1 hand)"]
    assert got["empty"] == ["xuezhan leaderboard, all-time (0 players)", "nobody rated yet"]
