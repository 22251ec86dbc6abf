"""Dou Dizhu (斗地主) robot policies.

Bots see the game only through ``state.legal_actions(seat)`` and ``state.observation(seat)``
(and the pure helpers of :mod:`games.doudizhu`); they never read another seat's cards.

* :func:`random_policy` - a uniformly random legal action (the baseline).
* :func:`greedy_policy` - a simple, sensible player: calls and robs the landlord with a strong
  hand (jokers, 2s, bombs); goes out when it can; leads its lowest combination, the longest
  one of that rank, with the lowest kickers; follows with the cheapest play that beats, never
  breaking a bomb or the rocket for it; does not beat its fellow farmer; spends a bomb only
  to stop an opponent close to going out.
"""

from __future__ import annotations

from typing import Any

from games.bots.view import PlayerView
from games.dadun.cards import parse_cards
from games.doudizhu.cards import RANK_2, RANK_A, RANK_BJ, RANK_SJ, rank_counts
from games.doudizhu.combos import Combo, classify
from games.engine import Action
from games.rng import Stream

CALL_STRENGTH = 7   # call (叫地主) from this strength on: about one hand in four
ROB_STRENGTH = 10   # rob (抢地主) from this strength on
CLOSE_TO_OUT = 5    # an opponent with this few cards left is worth a bomb


def random_policy(state: PlayerView, seat: int, stream: Stream) -> Action:
    """A uniformly random action among ``legal_actions``."""
    return stream.choice(state.legal_actions(seat))


def greedy_policy(state: PlayerView, seat: int) -> Action:
    """The greedy player's choice for ``seat`` (which must be the seat to act)."""
    actions = state.legal_actions(seat)
    obs = state.observation(seat)
    hand = rank_counts(parse_cards(obs["hand"]))
    if obs["phase"] in ("call", "rob"):
        wanted = CALL_STRENGTH if obs["phase"] == "call" else ROB_STRENGTH
        choice = "yes" if strength(hand) >= wanted else "no"
        return next(a for a in actions if a.choice == choice)
    return _play(actions, obs, hand)


def strength(hand: list[int]) -> int:
    """A crude bidding strength: rocket 8, each bomb 6, big joker 4, small joker 3, each 2
    two points, each ace one."""
    if hand[RANK_SJ] and hand[RANK_BJ]:
        score = 8
    else:
        score = 4 * hand[RANK_BJ] + 3 * hand[RANK_SJ]
    score += sum(6 for r in range(RANK_2 + 1) if hand[r] == 4)
    return score + 2 * hand[RANK_2] * (hand[RANK_2] < 4) + hand[RANK_A] * (hand[RANK_A] < 4)


def _breaks_bomb(hand: list[int], used: list[int], combo: Combo) -> bool:
    """Whether the play splits a bomb or the rocket it does not play whole."""
    if combo.is_bomb:
        return False
    split = any(hand[r] == 4 and 0 < used[r] < 4 for r in range(RANK_2 + 1))
    rocket = hand[RANK_SJ] and hand[RANK_BJ] and (used[RANK_SJ] or used[RANK_BJ])
    return split or bool(rocket)


def _play(actions: list[Action], obs: dict[str, Any], hand: list[int]) -> Action:
    passing = next((a for a in actions if a.kind == "pass"), None)
    plays = []
    for action in actions:
        if action.kind != "play":
            continue
        used = rank_counts(parse_cards(" ".join(action.tiles)))
        combo = classify(used)
        assert combo is not None
        if combo.size == sum(hand):
            return action  # going out ends the hand
        cost = (combo.is_bomb, _breaks_bomb(hand, used, combo), combo.key, -combo.size,
                sum(r * n for r, n in enumerate(used)))
        plays.append((cost, action, combo))
    plays.sort(key=lambda item: item[0])
    if passing is None:
        return plays[0][1]
    top_seat = obs["top"]["seat"]
    landlord = obs["landlord"]
    if obs["seat"] != landlord and top_seat != landlord:
        return passing  # the fellow farmer leads the trick
    if not plays:
        return passing
    cost, best, combo = plays[0]
    if not combo.is_bomb and not cost[1]:
        return best
    return best if obs["hand_counts"][top_seat] <= CLOSE_TO_OUT else passing
