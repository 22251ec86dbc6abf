"""Benchmark of Dadun self-play: ``python -m bench.bench_dadun_selfplay [--quick]``.

Plays the same seeded deals with four policy mixes and reports deals and actions per second:
all random bots (the baseline, ratio 1.00), all greedy bots, greedy seats 0/2 against random
seats 1/3, and every seat entrusted (``default_action``, the cheapest possible player). It
also reports the engine's own share: replaying the recorded actions of the random deals
without any bot. Each figure is the best of several rounds. Writes
bench/reports/dadun_selfplay.md.
"""

from __future__ import annotations

from bench.common import best_of, command, machine, parse_options, timed, write_report
from bench.selfplay import Chooser, play, replay
from games.bots.dadun import greedy_policy, random_policy
from games.dadun import game

REPORT = "dadun_selfplay.md"

MIXES: dict[str, Chooser] = {
    "random bots (baseline)": lambda s, seat, rng: random_policy(s, seat, rng),
    "greedy bots": lambda s, seat, rng: greedy_policy(s, seat),
    "greedy 0/2 vs random 1/3": lambda s, seat, rng: (
        greedy_policy(s, seat) if seat % 2 == 0 else random_policy(s, seat, rng)),
    "entrusted (default_action)": lambda s, seat, rng: s.default_action(seat),
}


def main() -> None:
    args = parse_options(__doc__)
    deals, rounds = (20, 1) if args.quick else (150, 3)
    seeds = range(5000, 5000 + deals)
    rows = []
    for name, policy in MIXES.items():
        secs, (actions, logs) = timed(rounds, lambda p=policy: play(game, seeds, p))
        rows.append((name, actions, secs))
        if name.startswith("random"):
            random_logs, random_actions = logs, actions
    engine_secs = best_of(rounds, lambda: replay(game, seeds, random_logs))
    rows.append(("engine only: replay of the random deals", random_actions, engine_secs))
    baseline = deals / rows[0][2]
    lines = [
        "# Dadun self-play benchmark",
        "",
        f"{command('bench_dadun_selfplay', args.quick)} on {machine()}; {deals} seeded deals, "
        f"best of {rounds} round(s). Ratio = deals per second / the random-bot baseline.",
        "",
        "| mix | actions | deals/s | actions/s | ratio |",
        "|---|---|---|---|---|",
    ]
    for name, actions, secs in rows:
        rate = deals / secs
        lines.append(f"| {name} | {actions} | {rate:.1f} | {actions / secs:.0f} | "
                     f"{rate / baseline:.2f} |")
    lines += ["", "The random bot asks `legal_actions` (the `hint_plays` candidates) every "
              "turn; the engine-only row shows what verifying and applying costs alone."]
    write_report(args.report(REPORT), lines)


if __name__ == "__main__":
    main()
