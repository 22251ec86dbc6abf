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

from bisect import bisect_left
from collections.abc import Iterator, Sequence
from itertools import combinations, product

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
    try_classify,
)

NUM_RANKS = RANK_SJ + 2
COLOR_BOMBS = frozenset(COLOR_BOMB_BY_SIZE.values())
Bounds = dict[int, tuple[int, int]]
# rank r holds the codes _RANK_EDGES[r] .. _RANK_EDGES[r + 1] - 1 (SJ = 52, BJ = 53)
_RANK_EDGES = [4 * r for r in range(RANK_SJ + 1)] + [NUM_CODES - 1, NUM_CODES]


class Hand:
    """Rank and code counts of a hand, with the distinct code choices per rank cached.

    ``hand`` is a list of card codes or, when it has exactly 54 entries, the count of each
    code (a real hand never holds 54 cards)."""

    __slots__ = ("counts", "by_rank", "ranks", "size", "_picks")

    def __init__(self, hand: Sequence[int]) -> None:
        counts = list(hand) if len(hand) == NUM_CODES else counts_of(hand)
        if min(counts) < 0 or max(counts) > COPIES:
            raise ValueError("a hand holds each card code 0..2 times")
        self.counts = counts
        cards = sorted(hand) if len(hand) != NUM_CODES else [
            code for code in range(NUM_CODES) for _ in range(counts[code])]
        # per rank, its cards in code order (a code held twice appears twice)
        cut = [bisect_left(cards, code) for code in _RANK_EDGES]
        self.by_rank = [tuple(cards[cut[r]:cut[r + 1]]) for r in range(NUM_RANKS)]
        self.ranks = [len(cards) for cards in self.by_rank]
        self.size = sum(self.ranks)
        self._picks: dict[tuple[int, int], list[tuple[int, ...]]] = {}

    def cards(self) -> tuple[int, ...]:
        return sum(self.by_rank, ())

    def picks(self, rank: int, k: int) -> list[tuple[int, ...]]:
        """Distinct sorted choices of ``k`` cards of ``rank`` from this hand, in order (the
        first is :meth:`lowest`)."""
        found = self._picks.get((rank, k))
        if found is None:
            found = sorted(set(combinations(self.by_rank[rank], k)))
            self._picks[(rank, k)] = found
        return found

    def lowest(self, rank: int, k: int) -> tuple[int, ...]:
        """The lowest ``k`` cards of ``rank`` (``picks(rank, k)[0]``, the others unlisted)."""
        return self.by_rank[rank][:k]


def compose(hand: Hand, fixed: Bounds, total: int, free: bool) -> Iterator[tuple[int, ...]]:
    """Every play of ``total`` cards whose rank counts lie in ``fixed`` bounds; ranks not in
    ``fixed`` take any count (``free``) or none."""
    ranks = hand.ranks
    bounds = [(0, n) for n in ranks] if free else [(0, 0)] * NUM_RANKS
    for r, (lo, hi) in fixed.items():
        hi = min(hi, ranks[r])
        if lo > hi:
            return
        bounds[r] = (lo, hi)
    for vector in _count_vectors(bounds, total):
        parts = [hand.picks(r, c) for r, c in enumerate(vector) if c]
        for choice in product(*parts):
            yield sum(choice, ())


def _count_vectors(bounds: list[tuple[int, int]], total: int) -> list[list[int]]:
    """Every per-rank count vector within ``bounds`` that sums to ``total``, in rank order
    (lexicographic). Only the ranks that can take a card are walked (a rank whose upper
    bound is 0 has count 0: most ranks of most shapes)."""
    active = [(r, lo, hi) for r, (lo, hi) in enumerate(bounds) if hi]
    n = len(active)
    lo_rest = [0] * (n + 1)
    hi_rest = [0] * (n + 1)
    for i in range(n - 1, -1, -1):
        lo_rest[i] = lo_rest[i + 1] + active[i][1]
        hi_rest[i] = hi_rest[i + 1] + active[i][2]
    out: list[list[int]] = []
    if lo_rest[0] <= total <= hi_rest[0]:
        _walk(0, total, active, lo_rest, hi_rest, [0] * NUM_RANKS, out)
    return out


def _walk(i: int, left: int, active: list[tuple[int, int, int]], lo_rest: list[int],
          hi_rest: list[int], vector: list[int], out: list[list[int]]) -> None:
    """Every count vector from the ``i``-th active (rank, lo, hi) on that sums to ``left``,
    into ``out``. A module function, not a closure: a recursive closure is a reference cycle
    (function -> cell -> function) that keeps everything it captured alive until the next
    garbage collection, which made most of the table's collection time."""
    if i == len(active):
        out.append(vector.copy())
        return
    r, lo, hi = active[i]
    for c in range(max(lo, left - hi_rest[i + 1]), min(hi, left - lo_rest[i + 1]) + 1):
        vector[r] = c
        _walk(i + 1, left - c, active, lo_rest, hi_rest, vector, out)
    vector[r] = 0


def normal_shapes(hand: Hand, previous: Combo | None) -> Iterator[tuple[Bounds, int, bool]]:
    """(bounds, total, free) of every non-bomb class that could answer ``previous``,
    lowest key first within each class; only shapes whose fixed ranks the hand holds at
    least at their lower bounds (the others have no play)."""
    ranks = hand.ranks
    want = None if previous is None else previous.cls
    if want in (None, SINGLE):
        low = -1 if previous is None else previous.key
        yield from (({r: (1, 1)}, 1, False) for r in range(low + 1, NUM_RANKS) if ranks[r])
    if want is None or want in PAIR_FAMILY:
        yield from _pair_shapes(hand, previous)
    if want is None or want in TRIPLE_FAMILY:
        low = -1 if previous is None else previous.key
        yield from (({t: (3, 4)}, 5, True) for t in range(low + 1, RANK_SJ) if ranks[t] >= 3)
    for cls, each in ((STRAIGHT, 1), (PAIR_STRAIGHT, 2)):
        if want in (None, cls):
            yield from _run_shapes(hand, previous, each)
    if want in (None, AIRPLANE):
        yield from _airplane_shapes(hand, previous)


def _pair_shapes(hand: Hand, previous: Combo | None) -> Iterator[tuple[Bounds, int, bool]]:
    ranks = hand.ranks
    shapes = [((0, r), {r: (2, 2)}) for r in range(RANK_SJ) if ranks[r] >= 2]
    if ranks[RANK_SJ] and ranks[RANK_SJ + 1]:
        shapes += [((1, 0), {RANK_SJ: (1, 1), RANK_SJ + 1: (1, 1)})]
    shapes += [((2, r), {r: (2, 2)}) for r in (RANK_SJ, RANK_SJ + 1) if ranks[r] >= 2]
    floor = (-1, 0) if previous is None else pair_order(previous)
    yield from ((bounds, 2, False) for order, bounds in shapes if order > floor)


def _reach(hand: Hand, each: int) -> list[int]:
    """Per rank 3..A: how many consecutive ranks from it upward hold ``each`` cards or more
    (the longest run of such ranks that starts there)."""
    reach = [0] * (RANK_A + 2)
    for r in range(RANK_A, -1, -1):
        reach[r] = reach[r + 1] + 1 if hand.ranks[r] >= each else 0
    return reach


def _run_shapes(hand: Hand, previous: Combo | None,
                each: int) -> Iterator[tuple[Bounds, int, bool]]:
    """Straights (each = 1, at least 5 ranks) or consecutive pairs (each = 2, at least 2)."""
    lengths = range(5 if each == 1 else 2, RANK_A + 2) if previous is None else [previous.units]
    low = -1 if previous is None else previous.key
    reach = _reach(hand, each)
    for units in lengths:
        for start in range(low + 1, RANK_A + 2 - units):
            if reach[start] >= units:
                yield {r: (each, each) for r in range(start, start + units)}, each * units, False


def _airplane_shapes(hand: Hand, previous: Combo | None) -> Iterator[tuple[Bounds, int, bool]]:
    """Full airplanes: the run is the highest one in the play, so the rank just above it
    holds at most two of the played cards."""
    lengths = range(2, hand.size // 5 + 1) if previous is None else [previous.units]
    reach = _reach(hand, 3)
    for units in lengths:
        low = -1 if previous is None else previous.key - units + 1
        for start in range(low + 1, RANK_A + 2 - units):
            if reach[start] < units:
                continue
            bounds = {r: (3, COPIES * 4) for r in range(start, start + units)}
            if start + units <= RANK_A:
                bounds[start + units] = (0, 2)
            yield bounds, 5 * units, True


def bomb_shapes(hand: Hand) -> Iterator[tuple[Bounds, int, bool]]:
    """510K, n-of-a-kind bombs, n x 510K and three or four jokers (all bomb-tier shapes),
    those the hand holds enough cards for."""
    if hand.ranks[RANK_5] and hand.ranks[RANK_T] and hand.ranks[RANK_K]:
        yield {RANK_5: (1, 1), RANK_T: (1, 1), RANK_K: (1, 1)}, 3, False
    for r in range(RANK_SJ):
        yield from (({r: (k, k)}, k, False) for k in range(4, hand.ranks[r] + 1))
    for sets in range(3, min(hand.ranks[RANK_5], hand.ranks[RANK_T], hand.ranks[RANK_K]) + 1):
        yield {RANK_5: (sets, sets), RANK_T: (sets, sets), RANK_K: (sets, sets)}, 3 * sets, False
    jokers = {RANK_SJ: (0, 2), RANK_SJ + 1: (0, 2)}
    held = hand.ranks[RANK_SJ] + hand.ranks[RANK_SJ + 1]
    yield from ((jokers, k, False) for k in (3, 4) if k <= held)


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
        yield whole.cards


def _whole_hand_play(h: Hand, previous: Combo | None, suit_order: bool) -> Combo | None:
    """The reading of the whole hand when only a last-play reading makes it legal, else
    None."""
    cards = h.cards()
    if not cards or _answer(cards, h.size + 1, previous, suit_order) is not None:
        return None
    return _answer(cards, h.size, previous, suit_order)


def _answer(cards: tuple[int, ...], hand_size: int, previous: Combo | None,
            suit_order: bool) -> Combo | None:
    """The reading of ``cards`` that answers ``previous``, or None."""
    combo = try_classify(cards, hand_size, previous, suit_order=suit_order)
    if combo is None or (previous is not None and not beats_rule(suit_order)(combo, previous)):
        return None
    return combo


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
    whole = _whole_hand_play(h, previous, suit_order)
    if whole is not None:
        found[whole.cards] = whole
    # bomb-tier plays (rung > 0) sort after every normal one: with ``limit`` normal plays
    # found already (a leader, mostly), none of them would be listed
    if sum(1 for combo in found.values() if combo.rung == 0) < limit:
        for bounds, total, free in bomb_shapes(h):
            best = _lowest_winner(h, compose(h, bounds, total, free), previous, suit_order)
            if best is not None:
                found[best[0]] = best[1]
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
    take = [0] * NUM_RANKS
    for r, (lo, _) in fixed.items():
        take[r] = lo
    if left:   # extra cards: the lowest ranks outside the shape first, then the shape's
        for r in [r for r in range(NUM_RANKS) if r not in fixed] + sorted(fixed):
            lo, hi = fixed.get(r, (0, ranks[r] if free else 0))
            extra = min(left, min(hi, ranks[r]) - lo)
            take[r] += extra
            left -= extra
            if not left:
                break
        if left:
            return None
    return sum((hand.lowest(r, c) for r, c in enumerate(take) if c), ())
