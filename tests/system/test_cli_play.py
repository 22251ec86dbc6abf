"""The terminal client plays a whole hand of each game against its robots over the real
stack: nats-server, records, arbiter, table and lobby as processes, and
``python -m clients.cli`` as a subprocess driven by ``--script`` with ``--auto`` answering
the person's prompts."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from games import registry
from services.table import variants
from tests.support.procs import ROOT, service_env
from tests.system.conftest import Stack, start_stack, stop_stack

SECRET = "dev-secret-change-me"
DELTAS = re.compile(r"^deltas: (.*)$", re.MULTILINE)


# A refused answer to a window or out-token that closed meanwhile is a normal race.
# Every game's codes of the two (services/table/variants.py).
STALE = frozenset(g.error_code(reason) for g in variants.all_games()
                  for reason in ("stale_ref", "hand_over"))


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """A private nats-server (no other test's tables in its directory) and the four
    services."""
    s = start_stack(tmp_path_factory.mktemp("cli-stack"), PAIJU_TABLE__INSTANCE="table-cli",
                    PAIJU_TABLE__TURN_SECONDS="10", PAIJU_TABLE__WINDOW_SECONDS="5",
                    PAIJU_LOBBY__TOKEN_SECRET=SECRET)
    try:
        yield s
    finally:
        stop_stack(s)


def run_cli(lobby: str, tmp: Path, user: int, script: str, timeout: float = 120) -> str:
    env = service_env("nats://unused", tmp)
    result = subprocess.run(
        [sys.executable, "-m", "clients.cli", "--lobby", lobby, "--user", str(user),
         "--secret", SECRET, "--auto", "--script", script],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


@pytest.mark.parametrize(("game", "user"), [(spec.name, 4201 + i)
                                           for i, spec in enumerate(registry.all())])
def test_cli_plays_a_hand_to_its_settlement(stack: Stack, tmp_path: Path,
                                            game: str, user: int) -> None:
    out = run_cli(stack.lobby_address, tmp_path, user, f"create {game} 1; robots; ready")
    assert f"logged in as player{user} [{user}]" in out
    assert "you sit at seat 0" in out
    assert ">> your decision" in out, "the person's seat was prompted"
    assert "you: " in out, "the person's seat acted"
    errors = [int(code) for code in re.findall(r"^error (\d+):", out, re.MULTILINE)]
    assert all(code in STALE for code in errors), out[-3000:]
    assert "stopped:" not in out, "a robot failed"
    assert "=== settlement" in out, out[-3000:]
    deltas = [int(d) for d in re.findall(r"[+-]\d+", DELTAS.search(out).group(1))]
    assert len(deltas) == registry.get(game).seats and sum(deltas) == 0
    assert "closed (解散): all hands played" in out
