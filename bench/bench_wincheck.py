"""Benchmark of the mahjong core: ``python -m bench.bench_wincheck [--quick]``.

A fixed, seeded corpus of 14-tile concealed hands without quads (half winning hands built
from four random sets and a pair, a quarter random draws, a quarter winning hands with one
tile swapped; the last two kinds keep only non-wins) is checked by ``is_win`` on counts, by
``is_win_keys`` on prebuilt suit keys, and by the ``mahjong`` package's ``Agari().is_agari`` on
the same hands, in the same process; all three must agree. Shanten is timed on the same hands
minus one tile (13 tiles), with a cold and a warm per-suit cache, next to the ``mahjong``
package's ``Shanten().calculate_shanten``. Each figure is the best of several rounds, and
the rounds interleave the contenders (other work shares the machine). Writes
bench/reports/wincheck.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from mahjong.agari import Agari
from mahjong.shanten import Shanten

from bench.common import best_of_each, command, machine, parse_options, write_report
from games.mahjong import is_win, shanten
from games.mahjong.shanten import suit_costs
from games.mahjong.wincheck import is_win_keys, suit_keys
from games.rng import Stream, derive

REPORT = "wincheck.md"
COPIES = 3  # no quads: the mahjong package does not read a quad as two pairs


def built_win(rng: Stream) -> list[int]:
    while True:
        counts = [0] * 27
        counts[rng.below(27)] += 2
        for _ in range(4):
            t = rng.below(27)
            for i in (t, t + 1, t + 2) if rng.below(2) and t % 9 <= 6 else (t, t, t):
                counts[i] += 1
        if max(counts) <= COPIES:
            return counts


def random_draw(rng: Stream) -> list[int]:
    wall = [t for t in range(27) for _ in range(COPIES)]
    rng.shuffle(wall)
    return [wall[:14].count(t) for t in range(27)]


def swapped_win(rng: Stream) -> list[int]:
    counts = built_win(rng)
    out = rng.choice([t for t in range(27) if counts[t]])
    into = rng.choice([t for t in range(27) if counts[t] < COPIES and t != out])
    counts[out] -= 1
    counts[into] += 1
    return counts


def corpus(size: int) -> list[list[int]]:
    rng = Stream(derive(2026, "bench.wincheck"))
    hands = [built_win(rng) for _ in range(size // 2)]
    while len(hands) < size:
        maker = random_draw if len(hands) % 2 else swapped_win
        counts = maker(rng)
        if not is_win(counts):
            hands.append(counts)
    return hands


def best_rates(fns: Sequence[Callable[[], object]], calls: int, rounds: int) -> list[float]:
    """Calls per second of each ``fn`` (each performs ``calls`` checks), best of ``rounds``
    interleaved rounds."""
    return [calls / t for t in best_of_each(rounds, fns)]


def minus_one(hands: Sequence[list[int]]) -> list[list[int]]:
    out = []
    for counts in hands:
        c = list(counts)
        c[max(range(27), key=lambda t: c[t])] -= 1
        out.append(c)
    return out


def run(size: int, rounds: int) -> tuple[list[tuple[str, float, str, float]], dict[str, int]]:
    hands = corpus(size)
    hands34 = [c + [0] * 7 for c in hands]
    prebuilt = [suit_keys(c) for c in hands]
    agari = Agari()
    ours = [is_win(c) for c in hands]
    if ours != [agari.is_agari(c) for c in hands34] or ours != [is_win_keys(*k) for k in prebuilt]:
        raise SystemExit("is_win, is_win_keys and Agari disagree on the corpus")

    base, counts_rate, hand_rate = best_rates(
        [
            lambda: [agari.is_agari(c) for c in hands34],
            lambda: [is_win(c) for c in hands],
            lambda: [is_win_keys(*k) for k in prebuilt],
        ],
        size,
        rounds,
    )
    rows = [
        ("mahjong Agari().is_agari", base, "-", 1.0),
        ("is_win(counts)", counts_rate, "Agari", counts_rate / base),
        ("is_win_keys(keys)", hand_rate, "Agari", hand_rate / base),
    ]

    thirteen = minus_one(hands)
    thirteen34 = [c + [0] * 7 for c in thirteen]
    calc = Shanten()

    def cold() -> None:
        suit_costs.cache_clear()
        for c in thirteen:
            shanten(c)

    sbase, cold_rate, warm_rate = best_rates(
        [
            lambda: [calc.calculate_shanten(c) for c in thirteen34],
            cold,
            lambda: [shanten(c) for c in thirteen],
        ],
        size,
        rounds,
    )
    rows += [
        ("mahjong Shanten().calculate_shanten", sbase, "-", 1.0),
        ("shanten, cold suit cache", cold_rate, "Shanten", cold_rate / sbase),
        ("shanten, warm suit cache", warm_rate, "Shanten", warm_rate / sbase),
    ]
    facts = {"hands": size, "wins": sum(ours), "rounds": rounds,
             "suit keys": suit_costs.cache_info().currsize}
    return rows, facts


def report(rows: list[tuple[str, float, str, float]], facts: dict[str, int],
           quick: bool) -> list[str]:
    lines = [
        "# Mahjong core: win check and shanten",
        "",
        f"{facts['hands']} seeded 14-tile hands without quads ({facts['wins']} winning), "
        f"best of {facts['rounds']} rounds, one process, {machine()}.",
        "Shanten runs on the same hands minus one tile (13 tiles); the cold run clears the "
        f"per-suit cache first (it holds {facts['suit keys']} entries afterwards).",
        f"Reproduce: {command('bench_wincheck', quick)}.",
        "",
        "| check | per second | µs per call | baseline | ratio |",
        "|---|---:|---:|---|---:|",
    ]
    for name, rate, base, ratio in rows:
        lines.append(f"| {name} | {rate:,.0f} | {1e6 / rate:.2f} | {base} | {ratio:.1f}x |")
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_options(__doc__, argv)
    rows, facts = run(2000, 3) if args.quick else run(20000, 7)
    write_report(args.report(REPORT), report(rows, facts, args.quick))


if __name__ == "__main__":
    main()
