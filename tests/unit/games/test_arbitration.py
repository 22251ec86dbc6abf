"""Response-window arbitration: the rules and worked examples of seed 002 and rules §A5/§B4,
early final answers, validation, the wire form, and a property test of early answers."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from games.arbitration import (
    Decision,
    InvalidWindow,
    Response,
    Rules,
    Window,
    resolve,
)
from games.engine import RuleError

CHANGSHA = Rules(multi_win=True, gang_over_peng=False)
SNIPE = Rules(multi_win=False)  # 截胡: only the nearest winner


def window(candidates, responses=None, source=0, trigger="discard", num_seats=4, wid=7):
    return Window(
        id=wid,
        source_seat=source,
        tile=4,
        trigger=trigger,
        candidates={s: frozenset(k) for s, k in candidates.items()},
        responses={s: (r if isinstance(r, Response) else Response(r)) for s, r in
                   (responses or {}).items()},
        num_seats=num_seats,
    )


# ---------------------------------------------------------------- seed 002 worked examples


def test_two_pengs_go_to_the_nearest_seat_after_the_discarder():
    w = window({1: {"peng"}, 3: {"peng"}}, {1: "peng", 3: "peng"})
    d = resolve(w)
    assert (d.final, d.action, d.winners, d.claim) == (True, "peng", (1,), Response("peng"))


def test_nearest_is_counted_from_the_discarder_not_from_seat_zero():
    w = window({3: {"peng"}, 1: {"peng"}}, {1: "peng", 3: "peng"}, source=2)
    assert resolve(w).winners == (3,)


def test_hu_beats_gang_beats_peng():
    cands = {1: {"peng"}, 2: {"zhigang"}, 3: {"hu"}}
    d = resolve(window(cands, {1: "peng", 2: "zhigang", 3: "hu"}))
    assert (d.action, d.winners, d.claim) == ("hu", (3,), Response("hu"))
    d = resolve(window(cands, {1: "peng", 2: "zhigang", 3: "pass"}))
    assert (d.action, d.winners) == ("zhigang", (2,))
    d = resolve(window(cands, {1: "peng", 2: "pass", 3: "pass"}))
    assert (d.action, d.winners) == ("peng", (1,))


def test_all_hu_answers_win_together_ordered_from_the_discarder():
    cands = {3: {"hu"}, 0: {"hu", "peng"}, 1: {"hu"}}
    d = resolve(window(cands, {0: "hu", 1: "hu", 3: "hu"}, source=2))
    assert (d.action, d.winners, d.final) == ("hu", (3, 0, 1), True)


def test_without_multi_win_only_the_nearest_hu_wins():
    cands = {1: {"hu"}, 2: {"hu"}, 3: {"hu"}}
    d = resolve(window(cands, {1: "pass", 2: "hu", 3: "hu"}), SNIPE)
    assert (d.action, d.winners) == ("hu", (2,))


def test_all_pass_gives_nobody_the_tile():
    d = resolve(window({1: {"peng"}, 2: {"hu"}}, {1: "pass", 2: "pass"}))
    assert (d.final, d.action, d.winners, d.claim, d.pending) == (True, "pass", (), None, ())


def test_pass_only_affects_this_window():
    first = window({1: {"peng", "hu"}}, {1: "pass"})
    assert resolve(first).action == "pass"
    later = window({1: {"peng"}}, {1: "peng"}, wid=8)
    assert resolve(later).winners == (1,)


def test_passed_win_lists_seats_that_could_win_but_did_not():
    cands = {1: {"hu", "peng"}, 2: {"peng"}, 3: {"hu"}}
    d = resolve(window(cands, {1: "pass", 2: "pass", 3: "pass"}))
    assert d.passed_win == (1, 3)
    d = resolve(window(cands, {1: "peng", 2: "pass", 3: "hu"}))
    assert d.passed_win == (1,)  # answered peng instead of hu: the win was declined too
    assert d.winners == (3,)


def test_a_hu_blocked_by_snipe_is_not_a_passed_win():
    d = resolve(window({1: {"hu"}, 2: {"hu"}}, {1: "hu", 2: "hu"}), SNIPE)
    assert d.winners == (1,) and d.passed_win == ()


def test_rob_kong_window_resolves_hu_only():
    w = window({1: {"hu"}, 3: {"hu"}}, {1: "pass", 3: "hu"}, trigger="rob_kong")
    d = resolve(w)
    assert (d.action, d.winners, d.passed_win) == ("hu", (3,), (1,))


# ---------------------------------------------------------------- Changsha and chi


def test_changsha_gang_and_peng_are_equal_and_the_nearest_wins():
    cands = {1: {"peng"}, 2: {"buzhang", "kaigang", "zhigang"}}
    responses = {1: "peng", 2: "kaigang"}
    assert resolve(window(cands, responses), CHANGSHA).winners == (1,)
    assert resolve(window(cands, responses), Rules()).winners == (2,)
    d = resolve(window(cands, {1: "pass", 2: "buzhang"}), CHANGSHA)
    assert (d.action, d.winners) == ("buzhang", (2,))


def test_chi_is_lowest():
    cands = {1: {"chi"}, 3: {"peng"}}
    d = resolve(window(cands, {1: Response("chi", (2, 3)), 3: "peng"}), CHANGSHA)
    assert (d.action, d.winners) == ("peng", (3,))
    d = resolve(window(cands, {1: Response("chi", (2, 3)), 3: "pass"}), CHANGSHA)
    assert (d.action, d.winners, d.claim) == ("chi", (1,), Response("chi", (2, 3)))


def test_changsha_tong_pao_and_hu_over_kong():
    cands = {1: {"hu", "zhigang"}, 2: {"hu"}, 3: {"peng"}}
    d = resolve(window(cands, {1: "zhigang", 2: "hu", 3: "peng"}), CHANGSHA)
    assert (d.action, d.winners, d.passed_win) == ("hu", (2,), (1,))


# ---------------------------------------------------------------- early final answers


def test_snipe_nearest_possible_hu_answered_is_final():
    d = resolve(window({1: {"hu"}, 2: {"hu", "peng"}, 3: {"hu"}}, {1: "hu"}), SNIPE)
    assert d.final and d.winners == (1,) and d.pending == (2, 3)


def test_snipe_farther_hu_waits_for_nearer_hu_seat():
    d = resolve(window({1: {"hu"}, 3: {"hu"}}, {3: "hu"}), SNIPE)
    assert not d.final and d.winners == (3,) and d.pending == (1,)


def test_multi_win_waits_for_every_possible_hu():
    d = resolve(window({1: {"hu"}, 3: {"hu"}}, {1: "hu"}))
    assert not d.final and d.pending == (3,)


def test_multi_win_with_no_pending_hu_is_final():
    d = resolve(window({1: {"hu"}, 2: {"zhigang"}, 3: {"peng"}}, {1: "hu"}))
    assert d.final and d.winners == (1,) and d.pending == (2, 3)


def test_pending_gang_beats_answered_peng_in_xuezhan():
    d = resolve(window({1: {"peng"}, 3: {"zhigang"}}, {1: "peng"}))
    assert not d.final and d.action == "peng"


def test_changsha_farther_pending_kong_cannot_beat_answered_peng():
    d = resolve(window({1: {"peng"}, 3: {"zhigang", "buzhang"}}, {1: "peng"}), CHANGSHA)
    assert d.final and d.winners == (1,)


def test_changsha_nearer_pending_kong_can_beat_answered_peng():
    d = resolve(window({1: {"buzhang"}, 3: {"peng"}}, {3: "peng"}), CHANGSHA)
    assert not d.final


def test_answered_peng_is_final_when_pending_peng_seat_is_farther():
    d = resolve(window({1: {"peng"}, 2: {"peng"}}, {1: "peng"}))
    assert d.final and d.winners == (1,) and d.pending == (2,)


def test_answered_peng_waits_for_nearer_peng_seat():
    d = resolve(window({1: {"peng"}, 2: {"peng"}}, {2: "peng"}))
    assert not d.final


def test_pending_hu_beats_any_claim():
    d = resolve(window({1: {"zhigang"}, 3: {"hu"}}, {1: "zhigang"}))
    assert not d.final and d.pending == (3,)


def test_answered_chi_waits_for_a_pending_peng():
    d = resolve(window({1: {"chi"}, 3: {"peng"}}, {1: Response("chi", (5, 6))}), CHANGSHA)
    assert not d.final and d.action == "chi"


def test_nothing_answered_is_not_final_while_someone_can_claim():
    d = resolve(window({1: {"peng"}, 2: set()}))
    assert not d.final and d.action == "pass" and d.pending == (1, 2)


def test_pass_only_seats_never_hold_up_a_window():
    assert resolve(window({1: set(), 2: {"pass"}})).final
    assert resolve(window({})).final


def test_every_seat_answered_is_final():
    d = resolve(window({1: {"peng"}, 3: {"hu"}}, {1: "pass", 3: "pass"}))
    assert d.final and d.pending == ()


# ---------------------------------------------------------------- validation


@pytest.mark.parametrize(
    "make",
    [
        lambda: window({1: {"peng"}}, {1: "hu"}),  # kind not among candidates
        lambda: window({1: {"peng"}}, {2: "pass"}),  # seat not eligible
        lambda: window({1: {"peng"}}, source=4),  # source out of range
        lambda: window({0: {"peng"}}),  # source answering its own tile
        lambda: window({5: {"peng"}}),  # candidate seat out of range
        lambda: window({1: {"ron"}}),  # unknown kind
        lambda: window({1: {"peng"}}, trigger="draw"),  # unknown trigger
        lambda: window({1: {"peng", "hu"}}, trigger="rob_kong"),  # rob kong: hu/pass only
        lambda: window({1: {"chi"}}, {1: "chi"}),  # chi without its two tiles
        lambda: window({1: {"peng"}}, wid=-1),
        lambda: window({1: {"peng"}}, num_seats=1),
        lambda: window({1: {"peng"}}, num_seats=2**31 - 1),  # no turn order of 2**31 seats
    ],
)
def test_bad_windows_raise_value_error(make):
    with pytest.raises(ValueError):
        resolve(make())


def test_invalid_window_is_also_a_rule_error_and_leaves_the_window_unchanged():
    w = window({1: {"peng"}, 2: {"hu"}})
    with pytest.raises(RuleError) as info:
        w.answer(1, Response("hu"))
    assert info.value.code == "bad_input"
    assert w.responses == {}
    with pytest.raises(InvalidWindow):
        w.answer(1, Response("pass")).answer(1, Response("peng"))


def test_answer_builds_up_a_window():
    w = window({1: {"peng"}, 3: {"peng"}}).answer(3, Response("peng")).answer(1, Response("peng"))
    assert resolve(w).winners == (1,)


# ---------------------------------------------------------------- wire form


def test_window_and_decision_round_trip_through_json():
    w = window({1: {"chi", "peng"}, 2: {"hu"}}, {1: Response("chi", (2, 3))}, source=0)
    w2 = Window.from_dict(json.loads(json.dumps(w.to_dict())))
    assert w2 == w
    d = resolve(w2, CHANGSHA)
    assert Decision.from_dict(json.loads(json.dumps(d.to_dict()))) == d
    assert d.to_dict()["claim"] == {"kind": "chi", "tiles": [2, 3]}


@pytest.mark.parametrize(
    "data",
    [
        {},
        {"id": 1, "source_seat": 0, "tile": 3, "trigger": "discard", "candidates": {"x": []}},
        {"id": 1, "source_seat": 0, "tile": 3, "trigger": "discard", "candidates": {"1": "peng"}},
        {"id": "1", "source_seat": 0, "tile": 3, "trigger": "discard", "candidates": {}},
        {"id": 1, "source_seat": 0, "tile": 3, "trigger": "discard", "candidates": {"1": ["peng"]},
         "responses": {"1": {"kind": "hu"}}},
        [1, 2],
    ],
)
def test_malformed_wire_windows_raise_invalid_window(data):
    with pytest.raises(InvalidWindow):
        Window.from_dict(data)


def test_malformed_wire_decision_raises_invalid_window():
    with pytest.raises(InvalidWindow):
        Decision.from_dict({"window_id": 1, "final": True})


# ---------------------------------------------------------------- properties

_PRIORITY_XZ = {"hu": 3, "zhigang": 2, "kaigang": 2, "buzhang": 2, "peng": 1, "chi": 0}
_PRIORITY_CS = {"hu": 3, "zhigang": 1, "kaigang": 1, "buzhang": 1, "peng": 1, "chi": 0}


def reference(w: Window, rules: Rules):
    """An independent model of a complete window: (action, winners, claim)."""
    prio = _PRIORITY_XZ if rules.gang_over_peng else _PRIORITY_CS
    dist = {s: (s - w.source_seat) % w.num_seats for s in w.responses}
    claims = [(s, r) for s, r in w.responses.items() if r.kind != "pass"]
    if not claims:
        return "pass", (), None
    hu = sorted((s for s, r in claims if r.kind == "hu"), key=dist.get)
    if hu:
        return "hu", tuple(hu if rules.multi_win else hu[:1]), Response("hu")
    seat, resp = min(claims, key=lambda c: (-prio[c[1].kind], dist[c[0]]))
    return resp.kind, (seat,), resp


def answers_for(kinds: frozenset[str]) -> list[Response]:
    out = [Response("pass")]
    for k in sorted(kinds - {"pass"}):
        out += [Response(k, (1, 2)), Response(k, (2, 3))] if k == "chi" else [Response(k)]
    return out


@st.composite
def windows(draw):
    n = draw(st.sampled_from([2, 3, 4, 4, 4]))
    source = draw(st.integers(0, n - 1))
    trigger = draw(st.sampled_from(["discard", "discard", "discard", "rob_kong", "haidi"]))
    pool = ["hu", "pass"] if trigger != "discard" else ["hu", "hu", *_PRIORITY_XZ, "pass"]
    cands = {}
    for seat in range(n):
        if seat != source and draw(st.integers(0, 3)):
            cands[seat] = frozenset(draw(st.lists(st.sampled_from(pool), max_size=3)))
    responses = {}
    for seat, kinds in cands.items():
        if draw(st.booleans()):
            responses[seat] = draw(st.sampled_from(answers_for(kinds)))
    rules = Rules(draw(st.booleans()), draw(st.booleans()))
    return Window(3, source, 0, trigger, cands, responses, n), rules


def completions(w: Window):
    pending = [s for s in w.candidates if s not in w.responses]
    for combo in itertools.product(*(answers_for(w.candidates[s]) for s in pending)):
        yield Window(w.id, w.source_seat, w.tile, w.trigger, w.candidates,
                     {**w.responses, **dict(zip(pending, combo, strict=True))}, w.num_seats)


@settings(max_examples=1500, deadline=None)
@given(windows())
def test_final_means_no_completion_changes_the_outcome_and_vice_versa(case):
    w, rules = case
    d = resolve(w, rules)
    outcomes = set()
    for full in completions(w):
        fd = resolve(full, rules)
        assert fd.final and fd.pending == ()
        assert (fd.action, fd.winners, fd.claim) == reference(full, rules)
        outcomes.add((fd.action, fd.winners, fd.claim))
    if d.final:
        assert outcomes == {(d.action, d.winners, d.claim)}
    else:
        assert len(outcomes) > 1  # early answers are exact: a pending seat really matters
    assert set(d.pending) == set(w.candidates) - set(w.responses)
