"""The engines' per-action work leaves no reference cycles behind: everything it allocates
is freed by reference counting the moment it is dropped. A cycle (e.g. a recursive closure:
function -> cell -> function, with all it captured) lives until the next garbage
collection, and the collector's pauses stop every room of a table process at once: Dadun's
candidate generation made most of the table's collection time at 900 tables
(bench/reports/capacity.md) until ``games/dadun/legal._walk`` stopped being a closure."""

from __future__ import annotations

import gc

import pytest

from games import registry
from games.rng import derive


@pytest.mark.parametrize("game", ["xuezhan", "changsha", "dadun"])
def test_hands_played_with_every_query_a_table_makes_leave_no_cycles(game: str) -> None:
    spec = registry.get(game)
    gc.collect()
    was = gc.isenabled()
    gc.disable()      # nothing may be collected behind our back while we count
    try:
        actions = 0
        for seed in range(3):
            state = spec.new_hand({"base": 1}, derive(seed, f"test.cycles.{game}"), seed % 4)
            state.deal_events()
            while not state.is_over():
                for seat in state.to_act():      # what prompts, views and bots ask
                    state.legal_actions(seat)
                    state.observation(seat)
                state.public_view()
                state.clone()
                seat = state.to_act()[0]
                state.apply(seat, spec.greedy_policy(state, seat))
                actions += 1
            state.settlement()
            del state
        unreachable = gc.collect()
    finally:
        if was:
            gc.enable()
    assert actions > 30
    assert unreachable == 0, f"{game}: {unreachable} objects in reference cycles"
