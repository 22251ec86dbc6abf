"""The browser's fair-deal check (clients/web/fair.js) agrees with games.fair: the same
commitment from the same room, hand and server seed; a changed seed is caught. Runs the
module in node (WebCrypto), skipped where node is missing."""

from __future__ import annotations

from pathlib import Path

import pytest

from games import fair
from tests.support.node import NODE, run_node

WEB = Path(__file__).resolve().parents[3] / "clients" / "web"


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_the_page_computes_the_commitment_games_fair_publishes() -> None:
    server_seed = bytes(range(32))
    room_id, hand_no = 12345678, 3
    commit = fair.commitment(room_id, hand_no, server_seed)
    forged_seed = bytes(31) + b"\x01"
    other = fair.commitment(room_id, hand_no, forged_seed)
    module = (WEB / "fair.js").as_uri()
    result = run_node(f"""
import {{commitmentOf, onCommitment, checkReveal, clientSeed, fair}} from "{module}";
const made = await commitmentOf({room_id}, {hand_no}, "{server_seed.hex()}");
onCommitment({{hand_no: {hand_no}, commitment: "{commit}"}});
const mine = clientSeed({hand_no});
const good = await checkReveal({room_id}, {{hand_no: {hand_no}, commitment: "{commit}",
  server_seed: "{server_seed.hex()}", client_seeds: ["", fair.sent.get({hand_no}), "", ""]}});
const forged = await checkReveal({room_id}, {{hand_no: {hand_no}, commitment: "{commit}",
  server_seed: "{forged_seed.hex()}", client_seeds: []}});
const dropped = await checkReveal({room_id}, {{hand_no: {hand_no}, commitment: "{commit}",
  server_seed: "{server_seed.hex()}", client_seeds: ["", "", "", ""]}});
console.log(JSON.stringify({{made, good: good.ok, forged: forged.ok, dropped: dropped.ok,
  seedLength: atob(mine).length}}));
""")
    assert result["made"] == commit != other
    assert result["good"] and not result["forged"] and not result["dropped"]
    assert result["seedLength"] == 32
