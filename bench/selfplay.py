"""Seeded self-play to the end of a hand for the self-play benchmarks: any engine module with
``new_hand(config, seed, dealer)`` whose states follow the engine contract (games/engine.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

from games.engine import Action
from games.rng import Stream, derive

Chooser = Callable[[Any, int, Stream], Action]
Log = list[tuple[int, Action]]


def play(variant: ModuleType, seeds: Sequence[int], chooser: Chooser) -> tuple[int, list[Log]]:
    """Play every seeded hand to the end (dealer ``seed % 4``; when several seats may act,
    a seeded draw picks one); the number of actions and each hand's action log."""
    actions, logs = 0, []
    for seed in seeds:
        state = variant.new_hand({}, seed, seed % 4)
        state.deal_events()
        rng = Stream(derive(seed, "bench"))
        log: Log = []
        while not state.is_over():
            acting = state.to_act()
            seat = acting[rng.below(len(acting))]
            action = chooser(state, seat, rng)
            state.apply(seat, action)
            log.append((seat, action))
        state.settlement()
        actions += len(log)
        logs.append(log)
    return actions, logs


def replay(variant: ModuleType, seeds: Sequence[int], logs: Sequence[Log]) -> None:
    """The engine alone: the same hands again from their recorded actions."""
    for seed, log in zip(seeds, logs, strict=True):
        state = variant.new_hand({}, seed, seed % 4)
        state.deal_events()
        for seat, action in log:
            state.apply(seat, action)
        state.settlement()
