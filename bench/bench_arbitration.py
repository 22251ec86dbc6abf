"""Benchmark of response-window arbitration and the mahjong bots:
``python -m bench.bench_arbitration [--quick]``.

1. ``resolve`` on a seeded corpus of partially answered 4-seat windows, next to a brute-force
   baseline in the same process that decides finality by resolving every completion of the
   pending answers (what an arbiter without the closed-form early answer would do). Both must
   agree on every window.
2. The cost of one ``greedy_policy`` decision against one ``random_policy`` decision over the
   same seeded XueZhan self-play states.

Each figure is the best of several rounds. Writes bench/reports/arbitration.md.
"""

from __future__ import annotations

import itertools

from bench.common import best_of, command, machine, parse_options, write_report
from games.arbitration import Response, Rules, Window, resolve
from games.bots.mahjong import greedy_policy, random_policy
from games.mahjong import xuezhan
from games.rng import Stream, derive

REPORT = "arbitration.md"
KINDS = ("hu", "zhigang", "peng", "chi")


def corpus(size: int) -> list[tuple[Window, Rules]]:
    rng = Stream(derive(2026, "bench.arbitration"))
    out = []
    for i in range(size):
        source = rng.below(4)
        cands, answers = {}, {}
        for seat in range(4):
            if seat != source and rng.below(4):
                kinds = frozenset(k for k in KINDS if rng.below(3) == 0)
                cands[seat] = kinds
                if rng.below(2):
                    kind = rng.choice(sorted(kinds | {"pass"}))
                    answers[seat] = Response(kind, (1, 2) if kind == "chi" else ())
        rules = Rules(bool(rng.below(2)), bool(rng.below(2)))
        out.append((Window(i, source, 5, "discard", cands, answers), rules))
    return out


def brute_final(window: Window, rules: Rules) -> bool:
    """Final iff every completion of the pending answers gives the same outcome."""
    pending = [s for s in window.candidates if s not in window.responses]
    options = [[Response("pass")] + [Response(k, (1, 2) if k == "chi" else ())
                                     for k in sorted(window.candidates[s])] for s in pending]
    seen = set()
    for combo in itertools.product(*options):
        full = Window(window.id, window.source_seat, window.tile, window.trigger,
                      window.candidates, {**window.responses, **dict(zip(pending, combo, strict=True))})
        d = resolve(full, rules)
        seen.add((d.action, d.winners, d.claim))
    return len(seen) == 1


def self_play_states(hands: int) -> list[tuple[object, int]]:
    """Seeded XueZhan states where a seat has a real choice (more than one legal action)."""
    states = []
    for seed in range(hands):
        state = xuezhan.new_hand({}, 700 + seed, seed % 4)
        while not state.is_over():
            seat = state.to_act()[0]
            if len(state.legal_actions(seat)) > 1:
                states.append((state.clone(), seat))
            state.apply(seat, greedy_policy(state, seat))
    return states


def main() -> None:
    options = parse_options(__doc__)
    quick = options.quick
    windows = corpus(2_000 if quick else 20_000)
    rounds = 3 if quick else 5
    for w, r in windows:
        assert resolve(w, r).final == brute_final(w, r), w
    t_resolve = best_of(rounds, lambda: [resolve(w, r) for w, r in windows])
    t_brute = best_of(rounds, lambda: [brute_final(w, r) for w, r in windows])
    finals = sum(resolve(w, r).final for w, r in windows)

    states = self_play_states(4 if quick else 20)
    stream = Stream(1)
    t_greedy = best_of(rounds, lambda: [greedy_policy(s, seat) for s, seat in states])
    t_random = best_of(rounds, lambda: [random_policy(s, seat, stream) for s, seat in states])

    n, m = len(windows), len(states)
    lines = [
        "# Arbitration and mahjong bots benchmark",
        "",
        f"{command('bench_arbitration', quick)} on {machine()}; best of {rounds} rounds.",
        "",
        "| measure | items | µs per item | ratio |",
        "|---|---|---|---|",
        f"| resolve (closed-form early answer) | {n} windows ({finals} final) | "
        f"{t_resolve / n * 1e6:.1f} | 1.00 |",
        f"| baseline: finality by brute-force completions | {n} windows | "
        f"{t_brute / n * 1e6:.1f} | {t_brute / t_resolve:.2f} |",
        f"| random_policy decision (baseline) | {m} states | {t_random / m * 1e6:.1f} | 1.00 |",
        f"| greedy_policy decision | {m} states | {t_greedy / m * 1e6:.1f} | "
        f"{t_greedy / t_random:.1f} |",
        "",
        "Both finality methods agree on every window of the corpus.",
    ]
    write_report(options.report(REPORT), lines)


if __name__ == "__main__":
    main()
