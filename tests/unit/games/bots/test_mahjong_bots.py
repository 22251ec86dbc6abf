"""Mahjong bots: hand-made decisions of the greedy policy, seeded self-play of both variants
(every action legal, every phase reached, the void rule kept, every win taken), and greedy
against random."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from games.bots.mahjong import greedy_policy, random_policy
from games.engine import Action
from games.rng import Stream

xuezhan = pytest.importorskip("games.mahjong.xuezhan", reason="XueZhan engine not in the tree")
changsha = pytest.importorskip("games.mahjong.changsha", reason="Changsha engine not in the tree")


class SeatView:
    """All a policy may touch: a seat's legal actions and observation (nothing else)."""

    def __init__(self, legal: list[Action], obs: dict[str, Any]) -> None:
        self._legal, self._obs = legal, obs

    def legal_actions(self, seat: int) -> list[Action]:
        assert seat == self._obs["seat"]
        return list(self._legal)

    def observation(self, seat: int) -> dict[str, Any]:
        assert seat == self._obs["seat"]
        return self._obs


class LivePlayer:
    """The same two methods on a real engine state, so self-play proves bots use no more."""

    def __init__(self, state: Any) -> None:
        self._state = state

    def legal_actions(self, seat: int) -> list[Action]:
        return self._state.legal_actions(seat)

    def observation(self, seat: int) -> dict[str, Any]:
        return self._state.observation(seat)


def obs(hand: str, *, void: str | None = None, window: str | None = None,
        melds: list | None = None, discards: list | None = None,
        variant: str = "xuezhan") -> dict[str, Any]:
    return {
        "variant": variant, "seat": 0, "hand": hand, "void": [void, None, None, None],
        "melds": [melds or [], [], [], []], "discards": discards or [[], [], [], []],
        "won_tiles": [[], [], [], []],
        "window": None if window is None else {"id": 1, "tile": window, "source": 3,
                                               "trigger": "discard"},
    }


def discards_of(hand: str) -> list[Action]:
    from games.mahjong import parse_tile_list, tile_name
    return [Action("discard", (tile_name(t),)) for t in dict.fromkeys(parse_tile_list(hand))]


# ---------------------------------------------------------------- hand-made decisions


def test_takes_a_win_whenever_it_is_legal():
    legal = [Action("pass", ref="1"), Action("peng", ("5p",), "1"), Action("hu", ref="1")]
    assert greedy_policy(SeatView(legal, obs("1234567m55p678s5p", window="5p")), 0).kind == "hu"


def test_declares_a_changsha_midway_win_before_anything_else():
    hand = "1111m678m2468p137s"  # a concealed quad: 中途四喜 is free points, the turn goes on
    legal = [Action("hu"), Action("midway_hu", ("1m",)), *discards_of(hand)]
    view = SeatView(legal, obs(hand, variant="changsha"))
    assert greedy_policy(view, 0) == Action("midway_hu", ("1m",))


def test_discards_the_void_tile_first_even_if_it_is_useful():
    hand = "123456789m11p23p3s"  # void p: without the rule the isolated 3s would go
    action = greedy_policy(SeatView(discards_of(hand), obs(hand, void="p")), 0)
    assert action.tiles[0][1] == "p"


def test_discards_the_isolated_tile_to_become_ready():
    hand = "123456789m11p23p9s"
    assert greedy_policy(SeatView(discards_of(hand), obs(hand, void="s")), 0).tiles == ("9s",)
    # without a void: 9s is still the only discard that leaves the hand ready (wait 1p/4p)
    assert greedy_policy(SeatView(discards_of(hand), obs(hand)), 0).tiles == ("9s",)


def test_ties_on_shanten_go_to_the_discard_keeping_more_unseen_useful_tiles():
    # Any of 2p/5p/9p leaves shanten 1. With three each of 1p, 3p and 4p on the table,
    # keeping 5p9p leaves 22 unseen useful tiles (3p..9p and 1s) against 19 for 2p9p or 2p5p.
    hand = "123456789m259p11s"
    rivers = [["1p", "3p", "4p"] * 3, [], [], []]
    action = greedy_policy(SeatView(discards_of(hand), obs(hand, discards=rivers)), 0)
    assert action.tiles == ("2p",)


def test_changsha_keeps_the_only_258_pair_for_a_small_hu():
    # 33p 777p 111s 333s 55s 6s. Throwing 5s leaves 56s + the 33p pair: ready on 4s/7s
    # (8 tiles) anywhere a pair of any rank will do (XueZhan), but in Changsha that hand is
    # a small hu whose pair must be 2, 5 or 8, so it is not ready at all. Throwing 6s keeps
    # 55s: ready on 5s (碰碰胡, any pair) and on 3p (55s as the 将).
    hand = "33777p111333556s"
    legal = discards_of(hand)
    assert greedy_policy(SeatView(legal, obs(hand)), 0).tiles == ("5s",)
    assert greedy_policy(SeatView(legal, obs(hand, variant="changsha")), 0).tiles == ("6s",)


def test_changsha_big_hu_shapes_keep_any_pair():
    # 11m 33m 77p 99p 11s 99s + 4m 6m: no 2/5/8 tile at all, so a small hu is far off, but
    # seven pairs (七小对, a big hu) takes any pair: throwing either single leaves its wait.
    # (Were that shape not counted, the bot would break a pair, e.g. throw 1m.)
    hand = "113346m7799p1199s"
    legal = discards_of(hand)
    choice = greedy_policy(SeatView(legal, obs(hand, variant="changsha")), 0).tiles
    assert choice in (("4m",), ("6m",))


def test_declares_the_shortest_suit_and_keeps_pairs_on_ties():
    legal = [Action("declare_void", choice=s) for s in "mps"]
    # m: 4 tiles with a pair, p: 4 tiles without a pair, s: 5 tiles -> void p
    view = SeatView(legal, obs("1135m2468p12345s"))
    assert greedy_policy(view, 0).choice == "p"


def test_exchanges_three_tiles_of_the_shortest_suit_with_three():
    # p has only 2 tiles, s has 3 -> the three s tiles go, whatever the engine suggests
    legal = [Action("exchange_three", ("1m", "2m", "3m"))]
    view = SeatView(legal + [Action("exchange_three", ("7m", "8m", "9m"))],
                    obs("12345678m55p159s"))
    action = greedy_policy(view, 0)
    assert action.kind == "exchange_three" and sorted(action.tiles) == ["1s", "5s", "9s"]


def test_pengs_when_it_keeps_shanten_and_never_against_the_void():
    legal = [Action("pass", ref="1"), Action("peng", ("5p",), "1")]
    hand = "123m456m789m55p19s"
    assert greedy_policy(SeatView(legal, obs(hand, window="5p")), 0).kind == "peng"
    assert greedy_policy(SeatView(legal, obs(hand, window="5p", void="p")), 0).kind == "pass"


def test_passes_a_peng_that_breaks_a_better_shape():
    # ready on 3p/6p with 123s 567s 678s 99p 45p: two 6s out for a peng breaks two runs
    legal = [Action("pass", ref="1"), Action("peng", ("6s",), "1")]
    hand = "4599p123566778s"
    assert greedy_policy(SeatView(legal, obs(hand, window="6s")), 0).kind == "pass"


def test_chi_only_when_it_lowers_shanten():
    legal = [Action("pass", ref="1"), Action("chi", ("4p", "5p"), "1")]
    assert greedy_policy(SeatView(legal, obs("123m456m789m45p19s", window="6p")), 0).kind == "chi"
    # already ready on 9s: chi 3p with 45p keeps it ready (6p or 9s pair), no gain
    assert greedy_policy(SeatView(legal, obs("123m456m789m456p9s", window="3p")), 0).kind == "pass"


def test_kaigang_only_when_ready_after_the_kong():
    ready = "123m456m789m5555p1s"  # after setting 5p aside: 123m456m789m1s, waiting on 1s
    legal = discards_of(ready) + [Action("kaigang", ("5p",))]
    assert greedy_policy(SeatView(legal, obs(ready)), 0).kind == "kaigang"
    far = "159m456m2589s5555p"
    legal = discards_of(far) + [Action("kaigang", ("5p",))]
    assert greedy_policy(SeatView(legal, obs(far)), 0).kind == "discard"


def test_concealed_kong_when_it_does_not_hurt():
    hand = "123m456m789m5555p1s"
    legal = discards_of(hand) + [Action("angang", ("5p",))]
    assert greedy_policy(SeatView(legal, obs(hand, void="s")), 0).kind == "angang"


def test_takes_the_haidi_tile():
    legal = [Action("haidi", choice="no"), Action("haidi", choice="yes")]
    assert greedy_policy(SeatView(legal, obs("123m")), 0).choice == "yes"


def test_random_policy_is_uniform_and_reproducible():
    legal = [Action("discard", (f"{r}m",)) for r in range(1, 5)]
    view = SeatView(legal, obs("1234m"))
    stream = Stream(11)
    picks = Counter(random_policy(view, 0, stream) for _ in range(4000))
    assert set(picks) == set(legal) and min(picks.values()) > 850
    first = [random_policy(view, 0, Stream(5)) for _ in range(3)]
    assert first == [random_policy(view, 0, Stream(5)) for _ in range(3)]


def test_a_seat_with_nothing_to_do_is_an_error():
    with pytest.raises(ValueError):
        greedy_policy(SeatView([], obs("1m")), 0)


# ---------------------------------------------------------------- self-play


def _check_greedy(state: Any, seat: int, action: Action, legal: list[Action]) -> None:
    assert state.can(seat, action), (state.phase(), action)
    if any(a.kind == "hu" for a in legal):
        assert action.kind == "hu"
    view = state.observation(seat)
    void = view["void"][seat]
    if void is None:
        return
    if action.kind == "discard" and void in view["hand"]:  # the hand holds a void tile
        assert action.tiles[0][1] == void, (view["hand"], action)
    if action.kind in ("peng", "zhigang", "angang", "bugang"):
        assert action.tiles[0][1] != void


def play(variant: Any, seed: int, greedy_seats: set[int]) -> tuple[Any, set[str]]:
    state = variant.new_hand({}, seed, seed % 4)
    streams = [Stream(seed * 8 + s) for s in range(4)]
    phases = set()
    for _ in range(3000):
        if state.is_over():
            return state, phases
        seat = state.to_act()[0]
        phases.add(state.phase())
        legal = state.legal_actions(seat)
        if seat in greedy_seats:
            action = greedy_policy(LivePlayer(state), seat)
            _check_greedy(state, seat, action, legal)
        else:
            action = random_policy(LivePlayer(state), seat, streams[seat])
            assert action in legal
        state.apply(seat, action)
    raise AssertionError(f"seed {seed}: the hand did not end")


@pytest.mark.parametrize("variant", [xuezhan, changsha], ids=["xuezhan", "changsha"])
def test_self_play_greedy_is_always_legal(variant):
    phases: set[str] = set()
    for seed in range(150):
        seats = {0, 1, 2, 3} if seed % 2 else {seed % 4}
        state, seen = play(variant, 1000 + seed, seats)
        phases |= seen
        assert sum(state.settlement().deltas) == 0
    expected = {"exchange", "void", "play", "window"} if variant is xuezhan else {"play", "window"}
    assert expected <= phases


def test_greedy_wins_clearly_more_than_random_in_xuezhan():
    wins = Counter()
    for seed in range(200):
        state, _ = play(xuezhan, 5000 + seed, {0})
        won = state.public_view()["won"]
        wins.update(s for s in range(4) if won[s])
    random_average = (wins[1] + wins[2] + wins[3]) / 3
    assert wins[0] > 2 * random_average + 20, wins
