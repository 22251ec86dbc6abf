"""services/common/runner: a service started as ``python -m services.<svc>`` runs on the event
loop that PAIJU_EVENT_LOOP names (uvloop by default), as its first log line says."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from paiju.loop import DEFAULT_EVENT_LOOP
from services.common.natsd import EmbeddedNats
from tests.support.procs import make_service


def loop_of_arbiter(nats_url: str, tmp: Path, **env: str) -> str:
    svc = make_service("arbiter", nats_url, tmp, **env).start()
    try:
        svc.stop()
    finally:
        svc.kill()
    lines = [json.loads(line) for line in svc.log_path.read_text().splitlines()
             if line.startswith("{")]
    return next(line["event_loop"] for line in lines if "event_loop" in line)


@pytest.mark.parametrize("loop", ["uvloop", "asyncio"])
def test_the_service_runs_on_the_chosen_loop(nats_server: EmbeddedNats, tmp_path: Path,
                                             loop: str) -> None:
    assert loop_of_arbiter(nats_server.url, tmp_path, PAIJU_EVENT_LOOP=loop) == loop


def test_the_default_loop(nats_server: EmbeddedNats, tmp_path: Path) -> None:
    assert loop_of_arbiter(nats_server.url, tmp_path) == DEFAULT_EVENT_LOOP
