"""Benchmark of the Dadun classifier and legal plays: ``python -m bench.bench_dadun [--quick]``.

* Classification: a seeded corpus of plays drawn from random 27-card hands (half legal plays
  picked at random from each hand's full list, half random subsets of 1..10 cards, mostly no
  combination) is classified by ``try_classify`` and, in the same process, by a
  straightforward reference classifier written here with ``Counter`` and sets; both must
  agree on (class, key) for every play.
* Legal plays of full 27-card hands, leading and following a pair, a straight, a triple+2,
  a bomb and a pure 510K (also with the room option ``pure510k_suit_order``). Baseline for
  following: the naive way, the leader's full list filtered by ``classify`` and the room's
  ``beats_rule``. Baseline for 9-card hands: brute force over all subsets.
* ``has_legal_play`` against ``bool(legal_plays(...))`` on the same hands and plays.

Each figure is the best of several rounds (other work shares the machine). Writes
bench/reports/dadun_combos.md.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from itertools import combinations

from bench.common import best_of, command, machine, parse_options, write_report
from games.dadun.cards import full_deck, parse_cards, rank_of, suit_of
from games.dadun.combos import Combo, beats_rule, classify, try_classify
from games.dadun.legal import has_legal_play, legal_plays
from games.engine import IllegalAction
from games.rng import Stream, derive

REPORT = "dadun_combos.md"
FOLLOW = {  # label: (previous play, pure510k_suit_order)
    "a pair (4s 4h)": ("4s 4h", False),
    "a straight (3..7)": ("3s 4h 5d 6c 7s", False),
    "a triple+2 (555+34)": ("5s 5h 5d 3c 4c", False),
    "a bomb (6666)": ("6s 6h 6c 6d", False),
    "a pure 510K (5h Th Kh)": ("5h Th Kh", False),
    "a pure 510K, suits rank": ("5h Th Kh", True),
}
MULTI_510K = {1: 9, 3: 18, 4: 19, 5: 22, 6: 23, 7: 24, 8: 25}


def naive_classify(cards: Sequence[int], hand_size: int) -> tuple[int, int] | None:
    """Reference (class, key) with plain Counter/set logic, same rules, no shortcuts."""
    ranks = sorted(rank_of(c) for c in cards)
    n, cnt, last = len(ranks), Counter(ranks), hand_size == len(cards)
    if n == 1:
        return 1, ranks[0]
    if n == 2:
        if ranks[0] == ranks[1]:
            return (15 if ranks[0] >= 13 else 2), ranks[0]
        return (27, 0) if ranks == [13, 14] else None
    if cnt[13] + cnt[14] == n and n in (3, 4):
        return (20 if n == 3 else 21), 0
    if set(cnt) == {2, 7, 10} and len(set(cnt.values())) == 1 and cnt[2] in MULTI_510K:
        return MULTI_510K[cnt[2]], 0
    if n == 5 and 4 in cnt.values():
        return 5, max(cnt, key=cnt.__getitem__)
    if len(cnt) == 1 and ranks[0] < 13 and 4 <= n <= 8:
        return _naive_bomb(cards), ranks[0]
    triples = [r for r, v in cnt.items() if v == 3 and r < 13]
    if n in (3, 4, 5) and triples:
        return (n, triples[0]) if n == 5 or last else None
    if n >= 6 and max(cnt.values()) >= 3:
        return _naive_airplane(cnt, n, last)
    return _naive_sequence(cnt, n)


def _naive_bomb(cards: Sequence[int]) -> int:
    suits = Counter(suit_of(c) for c in cards)
    color = max(suits[1] + suits[3], suits[0] + suits[2]) == 4 and len(cards) <= 6
    return {4: 26, 5: 16, 6: 17}[len(cards)] if color else 6 + len(cards)


def _naive_airplane(cnt: Counter, n: int, last: bool) -> tuple[int, int] | None:
    lengths = [n // 5] if n % 5 == 0 else []
    lengths += [k for k in range(n // 3, 1, -1) if last and 5 * k > n]
    for k in lengths:
        for top in range(11, k - 2, -1):
            if all(cnt[r] >= 3 for r in range(top - k + 1, top + 1)):
                return 8, top
    return None


def _naive_sequence(cnt: Counter, n: int) -> tuple[int, int] | None:
    low, high, width = min(cnt), max(cnt), len(cnt)
    if high > 11 or high - low + 1 != width:
        return None
    if set(cnt.values()) == {1} and n >= 5:
        return 6, low
    if set(cnt.values()) == {2} and width >= 2:
        return 7, low
    return None


def deal(rng: Stream, size: int = 27) -> list[int]:
    deck = full_deck()
    rng.shuffle(deck)
    return sorted(deck[:size])


def play_corpus(hands: list[list[int]], per_hand: int, rng: Stream) -> list[tuple[int, ...]]:
    plays: list[tuple[int, ...]] = []
    for hand in hands:
        legal = legal_plays(hand, None)
        for _ in range(per_hand):
            plays.append(legal[rng.below(len(legal))])
            picked = list(hand)
            rng.shuffle(picked)
            plays.append(tuple(sorted(picked[: 1 + rng.below(10)])))
    return plays


def bench_classify(plays: list[tuple[int, ...]], rounds: int) -> dict[str, float]:
    fast = [try_classify(p, 27) for p in plays]
    slow = [naive_classify(p, 27) for p in plays]
    mismatches = sum((None if c is None else (c.cls, c.key)) != s for c, s in zip(fast, slow, strict=True))
    t_fast = best_of(rounds, lambda: [try_classify(p, 27) for p in plays])
    t_slow = best_of(rounds, lambda: [naive_classify(p, 27) for p in plays])
    valid = sum(c is not None for c in fast)
    return {"n": len(plays), "valid": valid, "mismatch": mismatches,
            "fast": len(plays) / t_fast, "slow": len(plays) / t_slow}


def bench_follow(hands: list[list[int]], previous: Combo, suit_order: bool,
                 rounds: int) -> dict[str, float]:
    better = beats_rule(suit_order)

    def naive() -> list[list[tuple[int, ...]]]:
        return [[p for p in legal_plays(h, None)
                 if better(classify(p, 27, against=previous, suit_order=suit_order), previous)]
                for h in hands]

    def fast() -> list[list[tuple[int, ...]]]:
        return [legal_plays(h, previous, suit_order=suit_order) for h in hands]

    fast_lists = fast()
    assert [sorted(x) for x in fast_lists] == [sorted(x) for x in naive()]
    t_fast = best_of(rounds, fast)
    t_slow = best_of(1, naive)
    t_has = best_of(rounds, lambda: [has_legal_play(h, previous, suit_order=suit_order)
                                     for h in hands])
    return {"plays": statistics.mean(len(x) for x in fast_lists), "fast": len(hands) / t_fast,
            "slow": len(hands) / t_slow, "has": len(hands) / t_has}


def brute_force(hand: list[int]) -> set[tuple[int, ...]]:
    out = set()
    for k in range(1, len(hand) + 1):
        for sub in set(combinations(hand, k)):
            try:
                classify(sub, len(hand))
            except IllegalAction:
                continue
            out.add(sub)
    return out


def main() -> None:
    args = parse_options(__doc__)
    n_hands, rounds, per_hand = (8, 2, 40) if args.quick else (40, 5, 100)
    rng = Stream(derive(2026, "bench.dadun"))
    hands = [deal(rng) for _ in range(n_hands)]
    lines = [f"# Dadun combinations benchmark ({'quick' if args.quick else 'full'} run)", "",
             f"{command('bench_dadun', args.quick)} on {machine()}; best of {rounds} rounds; "
             "seeded hands "
             "(derive(2026, 'bench.dadun')). Other work shares the 2 cores: figures move by "
             "tens of percent between runs; ratios are measured in the same run.", ""]

    cls = bench_classify(play_corpus(hands, per_hand, rng), rounds)
    lines += ["## Classification", "",
              f"{cls['n']} plays ({cls['valid']} valid), reference disagreements: "
              f"{cls['mismatch']}.", "",
              "| classifier | plays/s | ratio |", "|---|---:|---:|",
              f"| `try_classify` | {cls['fast']:,.0f} | {cls['fast'] / cls['slow']:.2f}x |",
              f"| reference (Counter/sets) | {cls['slow']:,.0f} | 1.00x |", "",
              "The reference is the same detection order written plainly and returns a "
              "(class, key) tuple; `try_classify` also builds a frozen `Combo` for each valid "
              "play, which the reference does not.", ""]

    lead_counts = [len(legal_plays(h, None)) for h in hands]
    t_lead = best_of(rounds, lambda: [legal_plays(h, None) for h in hands])
    lines += ["## Legal plays of full 27-card hands", "",
              f"Leading: {len(hands) / t_lead:,.1f} hands/s, {sum(lead_counts) / t_lead:,.0f} "
              f"plays/s; distinct plays per hand median {statistics.median(lead_counts):,.0f}, "
              f"max {max(lead_counts):,}, min {min(lead_counts):,} (airplane wings dominate).", "",
              "| following | plays/hand | legal_plays hands/s | naive hands/s | ratio "
              "| has_legal_play calls/s | vs legal_plays |", "|---|---:|---:|---:|---:|---:|---:|"]
    for label, (text, suit_order) in FOLLOW.items():
        previous = classify(parse_cards(text), len(parse_cards(text)))
        r = bench_follow(hands, previous, suit_order, rounds)
        lines.append(f"| {label} | {r['plays']:,.1f} | {r['fast']:,.1f} | {r['slow']:,.2f} | "
                     f"{r['fast'] / r['slow']:,.0f}x | {r['has']:,.0f} | {r['has'] / r['fast']:,.1f}x |")
    lines += ["", "Naive = the leader's full list filtered by `classify` + `beats` (same result, "
              "checked).", ""]

    small = [deal(rng, 9) for _ in range(n_hands * 5)]
    assert all(set(legal_plays(h, None)) == brute_force(h) for h in small)
    t_small = best_of(rounds, lambda: [legal_plays(h, None) for h in small])
    t_brute = best_of(1, lambda: [brute_force(h) for h in small])
    lines += ["## Legal plays of 9-card hands against brute force", "",
              "| method | hands/s | ratio |", "|---|---:|---:|",
              f"| `legal_plays` | {len(small) / t_small:,.0f} | {t_brute / t_small:,.1f}x |",
              f"| all subsets + `classify` | {len(small) / t_brute:,.0f} | 1.00x |", ""]
    write_report(args.report(REPORT), lines)


if __name__ == "__main__":
    main()
