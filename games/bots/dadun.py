"""Dadun (崇仁打盾) robot policies.

Bots see the game only through ``state.legal_actions(seat)``, ``state.observation(seat)``
and the pure helpers of :mod:`games.dadun`; they never read another seat's cards.

* :func:`random_policy` - a uniformly random legal action (the baseline).
* :func:`greedy_policy` - a simple, sensible player: leads low, keeps bombs and 510K for
  points or to stop an opponent about to go out, never beats its known partner, plays for
  双围 once its partner is 头游, goes alone only with a very strong hand, and names a high
  friend card (an ace or a 2) so that the partner is strong.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from games.bots.view import PlayerView
from games.dadun.cards import parse_cards, point_value, rank_of
from games.dadun.combos import Combo, classify
from games.dadun.entrust import JOKER_MIN, protected_cards
from games.engine import Action
from games.rng import Stream

ALONE_STRENGTH = 12  # see _strength: under 1% of random hands reach it
RANK_A, RANK_2 = 11, 12


def random_policy(state: PlayerView, seat: int, stream: Stream) -> Action:
    """A uniformly random action among ``legal_actions`` (the engine's candidates)."""
    return stream.choice(state.legal_actions(seat))


def greedy_policy(state: PlayerView, seat: int) -> Action:
    """The greedy player's choice for ``seat`` (which must be a seat to act)."""
    actions = state.legal_actions(seat)
    obs = state.observation(seat)
    hand = parse_cards(obs["hand"])
    if obs["phase"] == "alone":
        yes = _strength(hand) >= ALONE_STRENGTH
        return next(a for a in actions if a.choice == ("yes" if yes else "no"))
    if obs["phase"] == "friend":
        return _friend(actions, hand)
    return _play(actions, obs, hand)


def _strength(hand: list[int]) -> int:
    """Bomb cards beyond three per rank, joker power and 2s: a crude hand strength."""
    ranks = Counter(rank_of(c) for c in hand if c < JOKER_MIN)
    bombs = sum(n - 3 for n in ranks.values() if n >= 4)
    jokers = sum(1 for c in hand if c >= JOKER_MIN)
    return 2 * bombs + jokers + ranks[RANK_2] // 2


def _friend(actions: list[Action], hand: list[int]) -> Action:
    """The highest ace or 2 the banker holds once outside a bomb; else the first candidate
    (the engine lists them lowest first)."""
    ranks = Counter(rank_of(c) for c in hand if c < JOKER_MIN)

    def wanted(a: Action) -> bool:
        code = parse_cards(a.tiles[0])[0]
        rank = rank_of(code)
        return rank in (RANK_A, RANK_2) and ranks[rank] < 4 and point_value([code]) == 0

    good = [a for a in actions if wanted(a)]
    return good[-1] if good else actions[0]


def _is_heavy(combo: Combo) -> bool:
    """Bomb-tier plays and joker pairs: kept for points or to stop an opponent."""
    return combo.rung > 0 or combo.cls in (15, 27)


def _play(actions: list[Action], obs: dict[str, Any], hand: list[int]) -> Action:
    plays = [(a, classify(parse_cards(" ".join(a.tiles)), len(hand)))
             for a in actions if a.kind == "play"]
    passing = next((a for a in actions if a.kind == "pass"), None)
    for action, combo in plays:
        if combo.size == len(hand):
            return action  # going out is always good
    keep = protected_cards(hand)

    def cost(item: tuple[Action, Combo]) -> tuple[int, int, int, int]:
        combo = item[1]
        breaks = sum(1 for c in combo.cards if c in keep)
        return (_is_heavy(combo), breaks > 0, combo.key, -combo.size)

    plays.sort(key=cost)
    if passing is None:  # leading: lowest cheap play
        return plays[0][0]
    last = obs["desk"][-1]["seat"]
    partner = obs["my_partner"]
    if last == partner:
        return passing
    if not plays:
        return passing
    best, combo = plays[0]
    if not _is_heavy(combo) and not any(c in keep for c in combo.cards):
        return best
    return best if _worth_heavy(obs, last, partner) else passing


def _worth_heavy(obs: dict[str, Any], last: int, partner: int | None) -> bool:
    """Spend a bomb or break one: for points, to stop a player about to go out, or to help
    a partner who is already 头游 reach 双围."""
    counts = obs["hand_counts"]
    going_out = counts[last] is not None and counts[last] <= 3
    surround = partner is not None and obs["over_order"][partner] == 1
    return obs["desk_points"] >= 20 or going_out or surround
