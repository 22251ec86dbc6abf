"""Legal plays for a Dadun hand (rules/dadun.md §3), built from rank and suit counts.

A play is a sorted tuple of card codes; plays are distinct as multisets (the two copies of a
code are the same card). Generation never enumerates subsets of the hand: each class is
described by per-rank count bounds, the count vectors that meet them are enumerated first,
and each vector is expanded into the distinct code choices of every rank. Each generator
emits exactly the plays whose canonical reading (``classify`` with a larger hand) is its
class, so no play comes out twice; the whole hand is added once more when only a last-play
reading (bare triple, triple+1, short airplane) makes it legal.

Kicker and wing choices make the full list large for a 27-card leader: measured over 300
seeded deals, a median of about 9,000 distinct plays and up to about 470,000 (airplane wings
dominate; see bench/reports/dadun_combos.md). Use :func:`iter_legal_plays`,
:func:`has_legal_play` or :func:`hint_plays` there.

Every entry point takes ``suit_order`` (the room option ``pure510k_suit_order``): plays are
compared with ``previous`` by :func:`~games.dadun.combos.beats_rule` of it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import product

from games.dadun.cards import COPIES, NUM_CODES, RANK_5, RANK_A, RANK_K, RANK_SJ, RANK_T, counts_of
from games.dadun.combos import (
    AIRPLANE,
    COLOR_BOMB_BY_SIZE,
    PAIR_FAMILY,
    PAIR_STRAIGHT,
    SINGLE,
    STRAIGHT,
    TRIPLE_FAMILY,
    Combo,
    beats_rule,
    classify,
    pair_order,
    suit_strength,
)
from games.engine import IllegalAction

NUM_RANKS = RANK_SJ + 2
COLOR_BOMBS = frozenset(COLOR_BOMB_BY_SIZE.values())
Bounds = dict[int, tuple[int, int]]


class Hand:
    """Rank and code counts of a hand, with the distinct code choices per rank cached.

    ``hand`` is a list of card codes or, when it has exactly 54 entries, the count of each
    code (a real hand never holds 54 cards)."""

    __slots__ = ("counts", "ranks", "size", "_picks")

    def __init__(self, hand: Sequence[int]) -> None:
        counts = list(hand) if len(hand) == NUM_CODES else counts_of(hand)
        if any(not 0 <= c <= COPIES for c in counts):
            raise ValueError("a hand holds each card code 0..2 times")
        self.counts = counts
        self.ranks = [sum(counts[4 * r:4 * r + 4]) for r in range(RANK_SJ)]
        self.ranks += [counts[52], counts[53]]
        self.size = sum(counts)
        self._picks: dict[tuple[int, int], list[tuple[int, ...]]] = {}

    def cards(self) -> tuple[int, ...]:
        return tuple(code for code in range(NUM_CODES) for _ in range(self.counts[code]))

    def picks(self, rank: int, k: int) -> list[tuple[int, ...]]:
        """Distinct sorted choices of ``k`` cards of ``rank`` from this hand."""
        found = self._picks.get((rank, k))
        if found is None:
            codes = [52 + rank - RANK_SJ] if rank >= RANK_SJ else range(4 * rank, 4 * rank + 4)
            found = _sub_multisets([(c, self.counts[c]) for c in codes if self.counts[c]], k)
            self._picks[(rank, k)] = found
        return found


def _sub_multisets(items: list[tuple[int, int]], k: int) -> list[tuple[int, ...]]:
    if k == 0:
        return [()]
    if not items:
        return []
    (code, have), rest = items[0], items[1:]
    out = []
    for take in range(min(have, k), -1, -1):
        out += [(code,) * take + tail for tail in _sub_multisets(rest, k - take)]
    return sorted(out)


def compose(hand: Hand, fixed: Bounds, total: int, free: bool) -> Iterator[tuple[int, ...]]:
    """Every play of ``total`` cards whose rank counts lie in ``fixed`` bounds; ranks not in
    ``fixed`` take any count (``free``) or none."""
    bounds = []
    for r in range(NUM_RANKS):
        lo, hi = fixed.get(r, (0, hand.ranks[r] if free else 0))
        hi = min(hi, hand.ranks[r])
        if lo > hi:
            return
        bounds.append((lo, hi))
    for vector in _count_vectors(bounds, total):
        parts = [hand.picks(r, c) for r, c in enumerate(vector) if c]
        for choice in product(*parts):
            yield sum(choice, ())


def _count_vectors(bounds: list[tuple[int, int]], total: int) -> list[list[int]]:
    lo_rest = [0] * (NUM_RANKS + 1)
    hi_rest = [0] * (NUM_RANKS + 1)
    for r in range(NUM_RANKS - 1, -1, -1):
        lo_rest[r] = lo_rest[r + 1] + bounds[r][0]
        hi_rest[r] = hi_rest[r + 1] + bounds[r][1]
    out: list[list[int]] = []
    if lo_rest[0] <= total <= hi_rest[0]:
        _walk(0, total, bounds, lo_rest, hi_rest, [0] * NUM_RANKS, out)
    return out


def _walk(r: int, left: int, bounds: list[tuple[int, int]], lo_rest: list[int],
          hi_rest: list[int], vector: list[int], out: list[list[int]]) -> None:
    """Every count vector from rank ``r`` on that sums to ``left`` within ``bounds``, into
    ``out``. A module function, not a closure: a recursive closure is a reference cycle
    (function -> cell -> function) that keeps everything it captured alive until the next
    garbage collection, which made most of the table's collection time."""
    if r == NUM_RANKS:
        out.append(vector.copy())
        return
    lo, hi = bounds[r]
    for c in range(max(lo, left - hi_rest[r + 1]), min(hi, left - lo_rest[r + 1]) + 1):
        vector[r] = c
        _walk(r + 1, left - c, bounds, lo_rest, hi_rest, vector, out)
    vector[r] = 0


def normal_shapes(hand: Hand, previous: Combo | None) -> Iterator[tuple[Bounds, int, bool]]:
    """(bounds, total, free) of every non-bomb class that could answer ``previous``,
    lowest key first within each class."""
    want = None if previous is None else previous.cls
    if want in (None, SINGLE):
        low = -1 if previous is None else previous.key
        yield from (({r: (1, 1)}, 1, False) for r in range(low + 1, NUM_RANKS))
    if want is None or want in PAIR_FAMILY:
        yield from _pair_shapes(previous)
    if want is None or want in TRIPLE_FAMILY:
        low = -1 if previous is None else previous.key
        yield from (({t: (3, 4)}, 5, True) for t in range(low + 1, RANK_SJ))
    for cls, each in ((STRAIGHT, 1), (PAIR_STRAIGHT, 2)):
        if want in (None, cls):
            yield from _run_shapes(previous, each)
    if want in (None, AIRPLANE):
        yield from _airplane_shapes(hand, previous)


def _pair_shapes(previous: Combo | None) -> Iterator[tuple[Bounds, int, bool]]:
    shapes = [((0, r), {r: (2, 2)}) for r in range(RANK_SJ)]
    shapes += [((1, 0), {RANK_SJ: (1, 1), RANK_SJ + 1: (1, 1)})]
    shapes += [((2, r), {r: (2, 2)}) for r in (RANK_SJ, RANK_SJ + 1)]
    floor = (-1, 0) if previous is None else pair_order(previous)
    yield from ((bounds, 2, False) for order, bounds in shapes if order > floor)


def _run_shapes(previous: Combo | None, each: int) -> Iterator[tuple[Bounds, int, bool]]:
    """Straights (each = 1, at least 5 ranks) or consecutive pairs (each = 2, at least 2)."""
    lengths = range(5 if each == 1 else 2, RANK_A + 2) if previous is None else [previous.units]
    low = -1 if previous is None else previous.key
    for units in lengths:
        for start in range(low + 1, RANK_A + 2 - units):
            yield {r: (each, each) for r in range(start, start + units)}, each * units, False


def _airplane_shapes(hand: Hand, previous: Combo | None) -> Iterator[tuple[Bounds, int, bool]]:
    """Full airplanes: the run is the highest one in the play, so the rank just above it
    holds at most two of the played cards."""
    lengths = range(2, hand.size // 5 + 1) if previous is None else [previous.units]
    for units in lengths:
        low = -1 if previous is None else previous.key - units + 1
        for start in range(low + 1, RANK_A + 2 - units):
            bounds = {r: (3, COPIES * 4) for r in range(start, start + units)}
            if start + units <= RANK_A:
                bounds[start + units] = (0, 2)
            yield bounds, 5 * units, True


def bomb_shapes(hand: Hand) -> Iterator[tuple[Bounds, int, bool]]:
    """510K, n-of-a-kind bombs, n x 510K and three or four jokers (all bomb-tier shapes)."""
    yield {RANK_5: (1, 1), RANK_T: (1, 1), RANK_K: (1, 1)}, 3, False
    for r in range(RANK_SJ):
        yield from (({r: (k, k)}, k, False) for k in range(4, hand.ranks[r] + 1))
    for sets in range(3, min(hand.ranks[RANK_5], hand.ranks[RANK_T], hand.ranks[RANK_K]) + 1):
        yield {RANK_5: (sets, sets), RANK_T: (sets, sets), RANK_K: (sets, sets)}, 3 * sets, False
    jokers = {RANK_SJ: (0, 2), RANK_SJ + 1: (0, 2)}
    yield from ((jokers, k, False) for k in (3, 4))


def iter_legal_plays(hand: Sequence[int], previous: Combo | None, *,
                     suit_order: bool = False) -> Iterator[tuple[int, ...]]:
    """Every distinct legal play of ``hand`` (card codes or 54 counts) on ``previous``
    (None when leading): normal plays first, then bomb-tier plays, then a last-play-only
    reading of the whole hand. ``suit_order``: pure 510Ks rank by suit (``beats_by_suit``)."""
    h = Hand(hand)
    better = beats_rule(suit_order)
    for bounds, total, free in normal_shapes(h, previous):
        yield from compose(h, bounds, total, free)
    for bounds, total, free in bomb_shapes(h):
        for play in compose(h, bounds, total, free):
            if previous is None or previous.rung == 0 or better(classify(play, h.size), previous):
                yield play
    whole = _whole_hand_play(h, previous, suit_order)
    if whole is not None:
        yield whole


def _whole_hand_play(h: Hand, previous: Combo | None,
                     suit_order: bool) -> tuple[int, ...] | None:
    """The whole hand when only a last-play reading makes it legal, else None."""
    cards = h.cards()
    if not cards or _answers(cards, h.size + 1, previous, suit_order):
        return None
    return cards if _answers(cards, h.size, previous, suit_order) else None


def _answers(cards: tuple[int, ...], hand_size: int, previous: Combo | None,
             suit_order: bool) -> bool:
    try:
        combo = classify(cards, hand_size, against=previous, suit_order=suit_order)
    except IllegalAction:
        return False
    return previous is None or beats_rule(suit_order)(combo, previous)


def legal_plays(hand: Sequence[int], previous: Combo | None, *,
                suit_order: bool = False) -> list[tuple[int, ...]]:
    """:func:`iter_legal_plays` as a list (large for a full hand that leads)."""
    return list(iter_legal_plays(hand, previous, suit_order=suit_order))


def has_legal_play(hand: Sequence[int], previous: Combo | None, *,
                   suit_order: bool = False) -> bool:
    """Whether any legal play exists ("can I beat this?"); stops at the first one."""
    return next(iter_legal_plays(hand, previous, suit_order=suit_order), None) is not None


def hint_plays(hand: Sequence[int], previous: Combo | None, limit: int = 3, *,
               suit_order: bool = False) -> list[tuple[int, ...]]:
    """A few sensible plays, lowest first: one per normal shape, with the lowest cards as
    kickers and wings, and the lowest winning choice of each bomb-tier shape (a mixed 510K
    before a pure one, a plain bomb before a 四红/四黑 one of the same size, and with
    ``suit_order`` the lowest-suit pure 510K that wins); ordered by rung (normal plays
    first), then key, then size."""
    h = Hand(hand)
    found: dict[tuple[int, ...], Combo] = {}
    for bounds, total, free in normal_shapes(h, previous):
        play = _lowest_fill(h, bounds, total, free)
        if play is not None:
            found[play] = classify(play, h.size)
    for bounds, total, free in bomb_shapes(h):
        best = _lowest_winner(h, compose(h, bounds, total, free), previous, suit_order)
        if best is not None:
            found[best[0]] = best[1]
    whole = _whole_hand_play(h, previous, suit_order)
    if whole is not None:
        found[whole] = classify(whole, h.size, against=previous, suit_order=suit_order)
    order = sorted(found, key=lambda p: (found[p].rung, found[p].key, found[p].size, p))
    return order[:limit]


def _lowest_winner(h: Hand, plays: Iterator[tuple[int, ...]], previous: Combo | None,
                   suit_order: bool) -> tuple[tuple[int, ...], Combo] | None:
    """The weakest of one bomb-tier shape's plays that answers ``previous``: lowest rung,
    then lowest suit strength (pure 510Ks with ``suit_order``), then the first generated.
    Only a pure 510K or a 四红/四黑 bomb can have a weaker sibling in its shape; any other
    winner ends the search (n x 510K, 7- and 8-bombs and joker shapes look at one play)."""
    better = beats_rule(suit_order)
    best: tuple[tuple[int, ...], Combo] | None = None
    best_strength = (0, 0)
    for play in plays:
        combo = classify(play, h.size)
        if previous is not None and not better(combo, previous):
            continue
        strength = (combo.rung, suit_strength(combo, suit_order))
        if best is None or strength < best_strength:
            best, best_strength = (play, combo), strength
        if not (combo.pure or combo.cls in COLOR_BOMBS):
            break
    return best


def _lowest_fill(hand: Hand, fixed: Bounds, total: int, free: bool) -> tuple[int, ...] | None:
    """The play of a shape with the lowest free cards: each rank takes its minimum, then
    extra cards come from the lowest ranks outside the shape, and only then from ranks of
    the shape itself (a fourth card on a triple). None if the hand cannot fill it."""
    ranks = hand.ranks
    left = total
    for r, (lo, hi) in fixed.items():   # most shapes fail here: a rank the hand lacks
        if lo > min(hi, ranks[r]):
            return None
        left -= lo
    if left < 0:
        return None
    counts = []
    for r in range(NUM_RANKS):
        lo, hi = fixed.get(r, (0, ranks[r] if free else 0))
        counts.append([lo, min(hi, ranks[r])])
    if left:   # extra cards: the lowest ranks outside the shape first, then the shape's
        for r in [r for r in range(NUM_RANKS) if r not in fixed] + sorted(fixed):
            extra = min(left, counts[r][1] - counts[r][0])
            counts[r][0] += extra
            left -= extra
        if left:
            return None
    return sum((hand.picks(r, c)[0] for r, (c, _) in enumerate(counts) if c), ())
