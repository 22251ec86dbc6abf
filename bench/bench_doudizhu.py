"""Dou Dizhu conformance with RLCard and self-play speed: ``python -m bench.bench_doudizhu [--quick]``.

1. Conformance: seeded hands are dealt and bid in our engine, then played through both
   engines from the same hands and landlord (bench/doudizhu_rlcard.py), comparing the sets
   of legal moves at every play-phase decision, until at least 100,000 decisions were
   compared (2,000 with --quick). Any disagreement is listed (at most 20).
2. Speed: whole hands per second of self-play on this machine, best of several rounds, for
   our engine (random bots, greedy bots; bidding included) beside RLCard 1.2.0 (its raw game
   with random moves, its env with random agents, its env with its rule agent
   ``DouDizhuRuleAgentV1``; RLCard has no bidding).

Writes bench/reports/doudizhu.md.
"""

from __future__ import annotations

import random
import time

from bench.common import command, machine, parse_options, timed, write_report
from bench.doudizhu_rlcard import conform
from games.bots.doudizhu import greedy_policy, random_policy
from games.doudizhu import game
from games.rng import Stream, derive

REPORT = "doudizhu.md"
TARGET_STATES = 100_000


def ours(hands: int, policy: str) -> int:
    """Play ``hands`` seeded hands with one policy at every seat; the number of actions."""
    actions = 0
    for index in range(hands):
        seed = derive(index, "bench.doudizhu.selfplay")
        state = game.new_hand({}, seed, index % 3)
        stream = Stream(derive(seed, "bots"))
        while not state.is_over():
            (seat,) = state.to_act()
            if policy == "random":
                action = random_policy(state, seat, stream)
            else:
                action = greedy_policy(state, seat)
            state.apply(seat, action)
            actions += 1
    return actions


def rlcard_raw(hands: int) -> int:
    """RLCard's DoudizhuGame, a uniformly random legal move each turn; the number of moves."""
    import numpy as np
    from rlcard.games.doudizhu.game import DoudizhuGame

    rng = random.Random(1)
    game_ = DoudizhuGame()
    game_.np_random = np.random.RandomState(1)
    moves = 0
    for _ in range(hands):
        state, _ = game_.init_game()
        while not game_.is_over():
            game_.step(rng.choice(state["actions"]))
            state = game_.state
            moves += 1
    return moves


def rlcard_env(hands: int, agent: str) -> int:
    """RLCard's env (observations encoded as its agents get them) with random agents or its
    rule agent at every seat; the number of moves."""
    import rlcard
    from rlcard.agents import RandomAgent
    from rlcard.models.doudizhu_rule_models import DouDizhuRuleAgentV1

    env = rlcard.make("doudizhu", config={"seed": 1})
    players = env.num_players
    agents = ([RandomAgent(num_actions=env.num_actions) for _ in range(players)]
              if agent == "random" else [DouDizhuRuleAgentV1() for _ in range(players)])
    env.set_agents(agents)
    moves = 0
    for _ in range(hands):
        trajectories, _ = env.run(is_training=False)
        moves += sum((len(t) - 1) // 2 for t in trajectories)
    return moves


def main() -> None:
    args = parse_options(__doc__)
    target = 2_000 if args.quick else TARGET_STATES
    hands, rounds = (20, 1) if args.quick else (300, 3)

    start = time.perf_counter()
    result = conform(10**7, label="bench", max_states=target)
    conformance_secs = time.perf_counter() - start

    rows = []
    for name, fn in (
        ("paiju doudizhu, random bots (bidding included)", lambda: ours(hands, "random")),
        ("paiju doudizhu, greedy bots (bidding included)", lambda: ours(hands, "greedy")),
        ("RLCard 1.2.0 game, random moves", lambda: rlcard_raw(hands)),
        ("RLCard 1.2.0 env, RandomAgent", lambda: rlcard_env(hands, "random")),
        ("RLCard 1.2.0 env, DouDizhuRuleAgentV1", lambda: rlcard_env(hands, "rule")),
    ):
        secs, actions = timed(rounds, fn)
        rows.append((name, actions, secs))

    verdict = "0 disagreements" if not result.disagreements else \
        f"{len(result.disagreements)}+ DISAGREEMENTS"
    lines = [
        "# Dou Dizhu: conformance with RLCard and self-play speed",
        "",
        f"{command('bench_doudizhu', args.quick)} on {machine()} (2 cores, shared with other "
        "jobs); rlcard 1.2.0 from PyPI (`pip install -r requirements/dev.txt`).",
        "",
        "## Conformance (play phase)",
        "",
        f"**{result.states:,} random reachable play-phase states in {result.hands:,} hands: "
        f"{verdict}** between the legal moves of `games.doudizhu` and of RLCard's "
        f"`DoudizhuGame` ({conformance_secs:.0f} s). Each hand is dealt from a seeded deck "
        "and bid with random bids in our engine; RLCard gets the same three hands with our "
        "landlord as its player 0; at every decision both sets of legal moves are compared "
        "as rank texts (RLCard has no suits), then a random legal move of ours (random suits "
        "among the held cards) is applied to both. "
        f"RLCard's payoff agreed with our winner side in {result.payoffs_agree:,} of "
        f"{result.hands:,} hands. The differences outside play are listed in docs/doudizhu.md "
        "(none concerns legal moves, so the comparison is exact).",
        "",
    ]
    for d in result.disagreements:
        lines.append(f"- disagreement: {d}")
    lines += [
        "## Self-play speed",
        "",
        f"{hands} hands per row, best of {rounds} round(s); one policy at every seat.",
        "",
        "| engine and players | moves | hands/s | moves/s |",
        "|---|---|---|---|",
    ]
    for name, actions, secs in rows:
        lines.append(f"| {name} | {actions} | {hands / secs:.1f} | {actions / secs:.0f} |")
    lines += [
        "",
        "Our rows include bidding (叫地主/抢地主 and redeals) and the full legal-move list "
        "every turn (the random bot draws from it; the greedy bot ranks it). RLCard's raw game "
        "row is the closest to ours (a legal-move list each turn, no bidding, no "
        "observation encoding); its env rows add the numpy observation its agents receive.",
    ]
    write_report(args.report(REPORT), lines)


if __name__ == "__main__":
    main()
