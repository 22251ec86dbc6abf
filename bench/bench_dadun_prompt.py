"""Benchmark of a Dadun prompt: ``python -m bench.bench_dadun_prompt [--quick] [--against REV]``.

Seeded deals are played to the end (greedy bots at seats 0/2, random bots at 1/3) and every
decision is kept: the state (serialized) and the seat to act. Timed, per decision: the
prompt the table builds (``view_and_actions``: the observation and the legal actions, which
in phase "play" are the ``hint_plays`` candidates), and apart the legal actions and the
observation; per command: the deals replayed from their actions, each action applied and
followed by the prompt of every seat to act (the engine's share of a table's command).

``--against REV`` also loads ``games/`` of git revision REV (``git archive``) into the same
process and times it with the same positions, the rounds of the two alternating (best of
each); both must give the same observations and actions for every position (checked, not
timed). Writes bench/reports/dadun_prompt.md.
"""

from __future__ import annotations

import argparse
import importlib
import io
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from bench.common import REPORTS, best_of_each, machine, write_report
from games.bots.dadun import greedy_policy, random_policy
from games.dadun import game
from games.engine import Action
from games.rng import Stream, derive

REPORT = "dadun_prompt.md"
ROOT = Path(__file__).resolve().parents[1]
Log = list[tuple[int, Action]]


def engine_at(rev: str) -> ModuleType:
    """``games.dadun.game`` of git revision ``rev``, imported beside this tree's ``games``
    (its modules are set aside in ``sys.modules`` meanwhile, then put back)."""
    data = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "games"], check=True,
                          capture_output=True).stdout
    root = tempfile.mkdtemp(prefix="dadun-at-")
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(root, filter="data")

    def ours() -> list[str]:
        return [k for k in sys.modules if k == "games" or k.startswith("games.")]

    saved = {k: sys.modules.pop(k) for k in ours()}
    sys.path.insert(0, root)
    try:
        module = importlib.import_module("games.dadun.game")
        assert module.__file__ is not None and module.__file__.startswith(root)
        return module
    finally:
        sys.path.remove(root)
        for k in ours():
            del sys.modules[k]
        sys.modules.update(saved)


def positions(seeds: Sequence[int]) -> tuple[list[tuple[str, int]], list[Log]]:
    """Every decision of the seeded deals (serialized state, seat) and each deal's log."""
    out: list[tuple[str, int]] = []
    logs: list[Log] = []
    for seed in seeds:
        state = game.new_hand({}, seed, seed % 4)
        rng = Stream(derive(seed, "bench.dadun_prompt"))
        log: Log = []
        while not state.is_over():
            seat = state.to_act()[0]
            out.append((state.serialize(), seat))
            action = (greedy_policy(state, seat) if seat % 2 == 0
                      else random_policy(state, seat, rng))
            state.apply(seat, action)
            log.append((seat, action))
        logs.append(log)
    return out, logs


class Engine:
    """One engine's states for the positions and its timed passes."""

    def __init__(self, module: ModuleType, pos: list[tuple[str, int]], seeds: Sequence[int],
                 logs: list[Log]) -> None:
        self.module = module
        self.states = [(module.deserialize(text), seat) for text, seat in pos]
        self.play = [(s, seat) for s, seat in self.states if s.phase() == "play"]
        action = module.Action
        self.seeds = seeds
        self.logs = [[(seat, action.from_dict(a.to_dict())) for seat, a in log] for log in logs]

    def prompts(self, which: str = "all") -> Callable[[], object]:
        states = self.play if which == "play" else self.states
        return lambda: [s.view_and_actions(seat) for s, seat in states]

    def legal(self) -> Callable[[], object]:
        return lambda: [s.legal_actions(seat) for s, seat in self.play]

    def observations(self) -> Callable[[], object]:
        return lambda: [s.observation(seat) for s, seat in self.play]

    def commands(self) -> None:
        for seed, log in zip(self.seeds, self.logs, strict=True):
            state = self.module.new_hand({}, seed, seed % 4)
            for seat, action in log:
                state.apply(seat, action)
                for s in state.to_act():
                    state.view_and_actions(s)

    def answers(self) -> list[Any]:
        return [(obs, [a.to_dict() for a in acts])
                for obs, acts in (s.view_and_actions(seat) for s, seat in self.states)]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short run")
    parser.add_argument("--out", type=Path, default=REPORTS, help="directory of the report")
    parser.add_argument("--against", metavar="REV", help="also time games/ of this revision")
    args = parser.parse_args()
    deals, rounds = (10, 3) if args.quick else (60, 7)
    seeds = range(7000, 7000 + deals)
    pos, logs = positions(seeds)
    engines = {"this tree": Engine(game, pos, seeds, logs)}
    if args.against:
        engines[f"at {args.against}"] = Engine(engine_at(args.against), pos, seeds, logs)
        answers = [e.answers() for e in engines.values()]
        assert answers[0] == answers[1], "the two engines' prompts differ"
    names = list(engines)
    rows = [
        ("prompt (view_and_actions), every decision", len(pos),
         [e.prompts() for e in engines.values()]),
        ("prompt (view_and_actions), phase play", len(engines[names[0]].play),
         [e.prompts("play") for e in engines.values()]),
        ("legal_actions, phase play", len(engines[names[0]].play),
         [e.legal() for e in engines.values()]),
        ("observation, phase play", len(engines[names[0]].play),
         [e.observations() for e in engines.values()]),
        ("command: apply + the next prompt(s)", sum(len(log) for log in logs),
         [e.commands for e in engines.values()]),
    ]
    flag = (" --quick" if args.quick else "") + (f" --against {args.against}" if args.against
                                                 else "")
    lines = [
        "# Dadun prompt benchmark", "",
        f"`python -m bench.bench_dadun_prompt{flag}` on {machine()}; {deals} seeded deals "
        f"(greedy bots at seats 0/2, random at 1/3), {len(pos)} decisions; best of {rounds} "
        "rounds" + (", the engines' rounds alternating in one process; both give the same "
                    "prompts (checked)" if args.against else "") + ". Other work shares the "
        "2 cores: compare figures of one run only.", "",
        "| µs per | n | " + " | ".join(names) + (" | ratio |" if args.against else ""),
        "|---|---:|" + "---:|" * len(names) + ("---:|" if args.against else ""),
    ]
    for label, n, fns in rows:
        secs = best_of_each(rounds, fns)
        cells = " | ".join(f"{t / n * 1e6:,.1f}" for t in secs)
        ratio = f" | {secs[1] / secs[0]:.2f}x" if args.against else ""
        lines.append(f"| {label} | {n} | {cells}{ratio} |")
    if args.against:
        lines += ["", f"Ratio = µs at {args.against} / µs of this tree (above 1: this tree is "
                  "cheaper)."]
    lines += ["", "Where the time of `hint_plays` went at 9169e29 (split in one process over "
              "self-play positions, roughly): 30 % normal shapes (a 27-card leader built and "
              "tried ~180, most of which the hand could not hold), 25 % bomb-tier shapes "
              "(count vectors walked over all 15 ranks, code choices listed by a recursion), "
              "12 % reading the whole hand twice with `classify`, whose error message names "
              "all 27 cards, 5 % `Hand`, 5 % classifying the hints; `card_name` checked every "
              "code it named for the actions and the observation."]
    write_report(args.out / REPORT, lines)


if __name__ == "__main__":
    main()
