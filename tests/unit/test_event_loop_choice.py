"""paiju/loop: every program (the services, the robots, the command-line client, the load
generators) runs on the loop PAIJU_EVENT_LOOP names, uvloop by default."""

from __future__ import annotations

import pytest

from paiju.loop import DEFAULT_EVENT_LOOP, EVENT_LOOPS, run, running_loop_name


async def name() -> str:
    return running_loop_name()


@pytest.mark.parametrize("loop", EVENT_LOOPS)
def test_run_on_the_named_loop(loop: str) -> None:
    assert run(name(), loop) == loop


@pytest.mark.parametrize("loop", EVENT_LOOPS)
def test_the_environment_chooses(monkeypatch: pytest.MonkeyPatch, loop: str) -> None:
    monkeypatch.setenv("PAIJU_EVENT_LOOP", loop)
    assert run(name()) == loop


def test_uvloop_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PAIJU_EVENT_LOOP", raising=False)
    assert DEFAULT_EVENT_LOOP == "uvloop"
    assert run(name()) == "uvloop"


def test_an_unknown_loop_is_refused_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAIJU_EVENT_LOOP", "trio")
    coro = name()
    with pytest.raises(ValueError, match="PAIJU_EVENT_LOOP='trio': one of uvloop, asyncio"):
        run(coro)
    coro.close()
