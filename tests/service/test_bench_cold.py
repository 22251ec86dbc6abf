"""bench/bench_cold.py end to end at a tiny size: a table killed with its rooms adopted by a
standby table, then a lobby killed with its players reconnecting to the other lobby; every
player comes back (timings are the bench's business, not asserted here)."""

from __future__ import annotations

from pathlib import Path

from bench import bench_cold


def test_every_player_comes_back_after_a_table_and_a_lobby_kill(tmp_path: Path) -> None:
    args = bench_cold.parse(["--rooms", "3", "--players", "16", "--procs", "1",
                             "--out", str(tmp_path)])
    table, lobby = bench_cold.run(args)

    assert table.players == 12 and len(table.backs) == 12
    held = [b for b in table.backs if b.prompted]
    assert held, "no player held a prompt when the table was killed"
    assert {b.room for b in held} == {b.room for b in table.backs}   # a prompt in every room
    assert all(b.prompt is not None and b.prompt > table.killed_at for b in held)
    assert table.rebuilt == 3 and table.server == "table-bench-2"

    assert lobby.players == 16 and len(lobby.backs) == 16
    assert not [b for b in lobby.backs if b.failed]
    assert all(b.login is not None and b.joined is not None and b.login > lobby.killed_at
               for b in lobby.backs)
    assert all(b.prompt is not None for b in lobby.backs if b.prompted)
    assert "table" in lobby.others and lobby.resent is not None   # the snapshots' side
