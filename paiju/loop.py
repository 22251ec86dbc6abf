"""The event loop every Paiju program runs on: the services, the robots, the command-line
client and the benches' load generators. ``PAIJU_EVENT_LOOP=uvloop|asyncio`` chooses it;
uvloop (libuv, in C) is the default: it takes 5-10 % off the server CPU per move
(bench/reports/event_loop.md) and about 7 % off the robots' (bench/reports/system.md)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

EVENT_LOOPS = ("uvloop", "asyncio")
DEFAULT_EVENT_LOOP = "uvloop"


def loop_factory(name: str | None = None) -> Callable[[], asyncio.AbstractEventLoop]:
    """The event loop ``name`` (default: ``$PAIJU_EVENT_LOOP``, else DEFAULT_EVENT_LOOP) as
    a factory for ``asyncio.Runner``."""
    name = name or os.environ.get("PAIJU_EVENT_LOOP") or DEFAULT_EVENT_LOOP
    if name == "asyncio":
        return asyncio.new_event_loop
    if name == "uvloop":
        import uvloop
        return uvloop.new_event_loop
    raise ValueError(f"PAIJU_EVENT_LOOP={name!r}: one of {', '.join(EVENT_LOOPS)}")


def running_loop_name() -> str:
    """The package of the running event loop's class: "uvloop" or "asyncio"."""
    return type(asyncio.get_running_loop()).__module__.split(".")[0]


def run(main: Coroutine[Any, Any, T], loop: str | None = None) -> T:
    """``asyncio.run(main)`` on the chosen event loop (``loop_factory``)."""
    with asyncio.Runner(loop_factory=loop_factory(loop)) as runner:
        return runner.run(main)
