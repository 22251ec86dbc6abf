"""RLCard's Dou Dizhu (rlcard 1.2.0, a test-only dependency) as the independent reference of
``games.doudizhu``: the play-phase conformance driver shared by
tests/unit/games/doudizhu/test_doudizhu_rlcard.py (a few thousand states) and
bench/bench_doudizhu.py (at least 100,000 states and the self-play speeds).

RLCard has no bidding: its landlord is always its player 0, who holds the bottom and leads,
and play goes 0 -> 1 -> 2. The driver deals and bids in our engine, then gives RLCard the
same three hands with our landlord as its player 0 (RLCard id = (seat - landlord) mod 3), and
at every decision compares the two sets of legal moves as rank texts ("33345", "BR",
"pass"; RLCard has no suits). The move played, drawn at random from our legal actions (with
random suits among the held cards of each rank), is applied to both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from games.doudizhu import game
from games.doudizhu.cards import rank_counts, rank_of, rank_text
from games.doudizhu.model import SEATS
from games.engine import Action
from games.rng import Stream, derive

_SUITS = "SHCD"  # our suit order s h c d; RLCard's suit letters
_RANKS = "3456789TJQKA2"


def rl_card(code: int) -> Any:
    """RLCard's Card for one of our codes."""
    from rlcard.games.base import Card

    if code == 52:
        return Card("BJ", "")
    if code == 53:
        return Card("RJ", "")
    return Card(_SUITS[code & 3], _RANKS[code >> 2])


class Reference:
    """An RLCard DoudizhuGame holding given hands, RLCard's player 0 being the landlord."""

    def __init__(self, hands: list[list[int]]) -> None:
        import functools

        from rlcard.games.doudizhu.game import DoudizhuGame
        from rlcard.games.doudizhu.judger import DoudizhuJudger
        from rlcard.games.doudizhu.utils import cards2str, doudizhu_sort_card

        self.game = DoudizhuGame()
        self.game.init_game()  # RLCard's own shuffle: replaced by our hands below
        for player, hand in zip(self.game.players, hands, strict=True):
            cards = sorted((rl_card(c) for c in hand), key=functools.cmp_to_key(doudizhu_sort_card))
            player.set_current_hand(cards)
            player.initial_hand = cards2str(cards)
        self.game.judger = DoudizhuJudger(self.game.players, self.game.np_random)
        self.game.round.current_player = 0
        self.game.state = self.game.get_state(0)

    def player(self) -> int:
        return int(self.game.round.current_player)

    def legal(self) -> set[str]:
        return set(self.game.state["actions"])

    def step(self, move: str) -> None:
        self.game.step(move)

    def is_over(self) -> bool:
        return bool(self.game.is_over())

    def payoffs(self) -> list[int]:
        return [int(x) for x in self.game.judger.judge_payoffs(self.game.round.landlord_id,
                                                                self.game.winner_id)]


def move_text(action: Action) -> str:
    """An action of ours as RLCard writes it: rank letters, lowest first, or "pass"."""
    if action.kind == "pass":
        return "pass"
    from games.doudizhu.cards import parse_names

    return rank_text(rank_counts(parse_names(action.tiles)))


def our_moves(state: game.DoudizhuState, seat: int) -> set[str]:
    return {move_text(a) for a in state.legal_actions(seat)}


def bid_to_play(state: game.DoudizhuState, stream: Stream) -> None:
    """Random bids (redeals included) until the landlord leads."""
    while state.phase() in ("call", "rob"):
        (seat,) = state.to_act()
        state.apply(seat, stream.choice(state.legal_actions(seat)))


def with_random_suits(state: game.DoudizhuState, seat: int, action: Action,
                      stream: Stream) -> Action:
    """The same play made of randomly chosen held cards of the same ranks."""
    if action.kind != "play":
        return action
    from games.doudizhu.cards import card_name, parse_names

    hand = state.hand_of(seat)
    chosen: list[int] = []
    for r, n in enumerate(rank_counts(parse_names(action.tiles))):
        pool = [c for c in hand if rank_of(c) == r]
        stream.shuffle(pool)
        chosen += pool[:n]
    return Action("play", tiles=tuple(card_name(c) for c in sorted(chosen)))


@dataclass
class Result:
    hands: int = 0
    states: int = 0
    disagreements: list[dict[str, Any]] = field(default_factory=list)
    landlord_wins: int = 0
    payoffs_agree: int = 0


def conform(hands: int, label: str = "conformance", max_states: int | None = None,
            keep: int = 20) -> Result:
    """Play ``hands`` seeded hands through both engines, comparing the legal moves at every
    play-phase decision; stop early once ``max_states`` decisions were compared."""
    result = Result()
    for index in range(hands):
        seed = derive(index, f"doudizhu.{label}")
        stream = Stream(derive(seed, "moves"))
        state = game.new_hand({}, seed, index % SEATS)
        bid_to_play(state, stream)
        landlord = state.deal.landlord
        assert landlord is not None
        ref = Reference([state.hand_of((landlord + i) % SEATS) for i in range(SEATS)])
        while not state.is_over():
            (seat,) = state.to_act()
            assert ref.player() == (seat - landlord) % SEATS
            ours, theirs = our_moves(state, seat), ref.legal()
            result.states += 1
            if ours != theirs and len(result.disagreements) < keep:
                result.disagreements.append({
                    "seed": seed, "seat": seat, "hand": rank_text(rank_counts(state.hand_of(seat))),
                    "top": None if state.deal.top is None else rank_text(
                        rank_counts(state.deal.top.cards)),
                    "only_ours": sorted(ours - theirs)[:10],
                    "only_rlcard": sorted(theirs - ours)[:10]})
            action = stream.choice(state.legal_actions(seat))
            action = with_random_suits(state, seat, action, stream)
            state.apply(seat, action)
            ref.step(move_text(action))
        assert ref.is_over()
        result.hands += 1
        settled = state.settlement()
        landlord_won = settled.details["landlord_won"]
        result.landlord_wins += landlord_won
        pay = ref.payoffs()
        expected = [1, 0, 0] if landlord_won else [0, 1, 1]
        result.payoffs_agree += pay == expected
        if max_states is not None and result.states >= max_states:
            break
    return result
