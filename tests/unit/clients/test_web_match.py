"""The browser's matchmaking lines (clients/web/match.js) from the proto3 JSON the lobby
sends (zeros omitted, int64 as strings). Runs the module in node, skipped where node is
missing."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.node import NODE, run_node

WEB = Path(__file__).resolve().parents[3] / "clients" / "web"


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_waiting_found_and_cancelled_lines() -> None:
    module = (WEB / "match.js").as_uri()
    got = run_node(f"""
globalThis.document = {{getElementById: () => null}};
const {{waitingText, foundText, cancelledText}} = await import("{module}");
console.log(JSON.stringify({{
  fresh: waitingText({{ticket_id: "a", game: "xuezhan", since_ms: "1"}}, 1000, 1000),
  later: waitingText({{game: "dadun", stake: 2, ranked: true, waiting: 3,
                      estimated_wait_ms: 4600}}, 13500, 1000),
  found: foundText({{room_id: "300123", seat: 2, robots: 1, waited_ms: 2500}}),
  seat0: foundText({{room_id: "300124", waited_ms: 100}}),
  cancelled: cancelledText({{reason: "CANCELLED", message: "cancelled"}}),
  timeout: cancelledText({{reason: "TIMEOUT", message: "no match in time: ask again"}}),
}}));
""")
    assert got["fresh"] == "waiting for a xuezhan match (stake 1): 0 s, 1 in the queue"
    assert got["later"] == ("waiting for a dadun match (stake 2, ranked): 12 s, 3 in the "
                            "queue, usually about 5 s")
    assert got["found"] == "matched: room 300123, seat 2 (1 robot) after 2.5 s"
    assert got["seat0"] == "matched: room 300124, seat 0 after 0.1 s"
    assert got["cancelled"] == "match request cancelled"
    assert got["timeout"] == "match request timed out: no match in time: ask again"
