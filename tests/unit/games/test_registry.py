"""The games registry (games/registry.py) and the response-window part of the engine
protocol (games/engine.py): every game is found by name and by enum number, plays a hand
to the end with its own bots, and answers the window methods (Dadun: none pending, refused)."""

from __future__ import annotations

import pytest

from games import registry
from games.arbitration import Decision, Rules, Window, resolve
from games.engine import Action, BadInput, StaleRef, State
from games.rng import Stream


def test_lookup_by_name_and_by_enum_number_agree() -> None:
    names = [spec.name for spec in registry.all()]
    assert names[:3] == ["xuezhan", "changsha", "dadun"] and len(set(names)) == len(names)
    assert [spec.game_type for spec in registry.all()] == list(range(1, len(names) + 1))
    for spec in registry.all():
        assert registry.get(spec.name) is spec
        assert registry.by_type(spec.game_type) is spec
    with pytest.raises(KeyError, match=f"known: {', '.join(names)}\""):
        registry.get("mahjong")
    with pytest.raises(KeyError):
        registry.by_type(0)


def test_specs_are_frozen() -> None:
    spec = registry.get("xuezhan")
    with pytest.raises(AttributeError):
        spec.name = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        spec.default_options["base"] = 2  # type: ignore[index]


def test_timers_of_the_phases() -> None:
    for name in ("xuezhan", "changsha"):
        spec = registry.get(name)
        assert spec.timer_of("window") == registry.WINDOW
        assert {spec.timer_of(p) for p in ("exchange", "void", "opening", "play", "haidi")} \
            == {registry.TURN}
        assert spec.simultaneous == {"exchange", "void", "opening"}
        assert spec.option_timers == {}
    dadun = registry.get("dadun")
    assert dadun.timer_of("alone") == registry.ALONE
    assert dadun.timer_of("play") == dadun.timer_of("friend") == registry.TURN
    assert dadun.simultaneous == frozenset()
    assert dict(dadun.option_timers) == {registry.TURN: "play_timeout_s",
                                         registry.ALONE: "alone_timeout_s"}
    assert set(dadun.option_timers.values()) <= set(dadun.default_options)


def test_options_parse_over_the_defaults_and_refuse_unknown_keys() -> None:
    for spec in registry.all():
        assert spec.parse_options({}) == dict(spec.default_options)
        assert spec.parse_options({"base": 3})["base"] == 3
        with pytest.raises(BadInput):
            spec.parse_options({"no_such_option": 1})


@pytest.mark.parametrize("name", [spec.name for spec in registry.all()])
def test_a_hand_plays_to_the_end_with_the_registry_bots(name: str) -> None:
    spec = registry.get(name)
    state = spec.new_hand(spec.parse_options({}), 11, 1)
    assert isinstance(state, State)
    assert state.deal_events()
    stream = Stream(5)
    for step in range(3000):
        if state.is_over():
            break
        seat = state.to_act()[0]
        if step % 2:
            action = spec.greedy_policy(state, seat)
        else:
            action = spec.random_policy(state, seat, stream)
        state.apply(seat, action)
    assert state.is_over()
    assert sum(state.settlement().deltas) == 0
    assert spec.deserialize(state.serialize()).serialize() == state.serialize()


@pytest.mark.parametrize("name", [spec.name for spec in registry.all()])
def test_view_and_actions_are_the_observation_and_the_legal_actions(name: str) -> None:
    """The prompt's one call (engine.State.view_and_actions) gives what the two give apart,
    for every seat at every decision of a hand, without changing the state."""
    spec = registry.get(name)
    state = spec.new_hand(spec.parse_options({}), 23, 2)
    while not state.is_over():
        for seat in range(state.num_seats):
            before = state.serialize()
            view, actions = state.view_and_actions(seat)
            assert state.serialize() == before
            assert view == state.observation(seat)
            assert actions == state.legal_actions(seat)
        seat = state.to_act()[0]
        state.apply(seat, spec.greedy_policy(state, seat))


def test_dadun_has_no_response_windows() -> None:
    state = registry.get("dadun").new_hand({}, 3, 0)
    assert state.pending_window() is None
    assert state.arbitration_rules() is None
    before = state.serialize()
    with pytest.raises(StaleRef, match="no response windows"):
        state.record_response(0, Action("pass"))
    with pytest.raises(StaleRef, match="no response windows"):
        state.resolve_window(Decision(1, True, "pass", (), None, (), ()))
    assert state.serialize() == before


def _to_a_window(name: str) -> State:
    """A seeded hand played greedily until a response window is open."""
    spec = registry.get(name)
    for seed in range(200):
        state = spec.new_hand({}, seed, 0)
        while not state.is_over():
            if state.pending_window() is not None:
                return state
            seat = state.to_act()[0]
            state.apply(seat, spec.greedy_policy(state, seat))
    raise AssertionError("no window in 200 hands")


@pytest.mark.parametrize("name", ["xuezhan", "changsha"])
def test_mahjong_windows_through_the_protocol(name: str) -> None:
    state = _to_a_window(name)
    window = state.pending_window()
    rules = state.arbitration_rules()
    assert isinstance(window, Window) and isinstance(rules, Rules)
    assert state.phase() == "window"
    for seat in state.to_act():
        state.record_response(seat, Action("pass", ref=str(window.id)))
    decision = resolve(state.pending_window(), rules)
    assert decision.final and decision.action == "pass"
    state.resolve_window(decision)
    assert state.pending_window() is None or state.pending_window().window_id != window.id
    with pytest.raises(StaleRef):
        state.resolve_window(decision)
