"""Rated matchmaking (issue 23): tickets in, tables out.

Pure and deterministic: no I/O, no asyncio, no protobuf, no clock (every call says what time
it is), no randomness. The same tickets, cancels and calls give the same tables. Whoever
runs it (one active matcher per game, a lobby's job) feeds it tickets and cancels and calls
:meth:`Matcher.run` every second or so; a bench feeds it a simulated stream.

**Tickets.** A ticket is one player or a party of up to :data:`MAX_PARTY` friends who are
seated together. It names the game, the rule set (an opaque key of the room options that
matter, e.g. "birds=2"), the stake (base score), an optional region and whether it is
ranked; tickets match only tickets with the same five (one *pool* per queue key). Each
player has a rating (mu, sigma of the rating model), an IP address and an optional geo point
(0, 0: none, as on the wire). A ticket's rating is its players' mean mu. One ticket per
player at a time.

**Tables.** A pass (:meth:`Matcher.run`) takes the pool's tickets oldest first; each one not
yet matched is the *anchor* of a table built around it: the ticket whose mean rating
widens the table's spread (highest minus lowest ticket rating) least is added next, nearest
first on either side, until the game's seats are filled. The table is accepted when its
spread is within the anchor's *tolerance*, which widens with the anchor's waiting time in
configured steps (``tolerance_steps``: by default 3 rating points at once, 6 after 5 s, 12
after 10 s, any after 20 s). The anchor is the table's longest-waiting ticket, so a table is
never wider than what its oldest ticket has earned, and a newcomer may join a table whose
range was earned by someone who waited. Nearest-first is greedy, not a global optimum: it
keeps a pass linear in the pool (each anchor looks at most ``scan_limit`` tickets).

**Robots.** In a pool that is not ranked, an anchor that waited ``robot_fill_after`` seconds
(None: never, the default) gets a table of whoever fits plus robots in the free seats.
Ranked pools never get robots.

**Who never sits together** (hard constraints, checked for every pair of players from
different tickets; players of one ticket are one party and exempt):

- within ``geo_alert_meters`` of each other (the table's proximity alert distance,
  ``lobby.geo_alert_meters``), both positions known (:mod:`services.common.geo`);
- the same IP address;
- strangers who already sat together (as strangers, at tables this matcher made or that
  were :meth:`noted <Matcher.note_table>`) ``stranger_tables_per_day`` times within the
  last ``encounter_window`` seconds (a day): a pair of strangers is seated together at
  most that many times per window. Parties never count: friends are not strangers.

**Bounds.** Tickets per pool (``max_pool``), players per party, the scan of each anchor, the
encounter memory (pairs older than the window are forgotten at every pass; past
``max_encounters`` meetings the oldest go early, counted in ``encounters.forgotten``) and
the waits kept for :meth:`Matcher.estimated_wait` are bounded; an empty pool is dropped.
Bad input is refused with a :class:`MatchError` (a stable ``code`` and a message); nothing
is partly applied.
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from services.common.geo import has_position, haversine_m

MAX_PARTY = 3
MAX_KEY_TEXT = 64           # rule set and region keys
DAY_SECONDS = 86_400.0
RECENT_WAITS = 64           # matched tickets' waits kept per queue key, for the estimate
WAIT_KEYS = 4096            # queue keys whose recent waits are kept (the latest used)
INF = math.inf


class MatchError(ValueError):
    """A ticket or a setting the matcher refuses: ``code`` is stable (``unknown_game``,
    ``unknown_rule_set``, ``bad_party``, ``bad_player``, ``bad_ticket``, ``already_queued``,
    ``duplicate_ticket``, ``queue_full``, ``bad_config``), ``message`` says why."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class Player:
    """One player of a ticket: rating (mu, sigma), IP address ('' unknown) and geo point
    (lat, lng in degrees; 0, 0 unknown)."""

    user_id: int
    mu: float
    sigma: float
    ip: str = ""
    lat: float = 0.0
    lng: float = 0.0


@dataclass(frozen=True, slots=True)
class Ticket:
    """A request to be matched: one player or a party seated together."""

    ticket_id: str
    players: tuple[Player, ...]
    game: str
    rule_set: str
    stake: int
    enqueued_at: float
    region: str = ""
    ranked: bool = False

    @property
    def key(self) -> QueueKey:
        return QueueKey(self.game, self.rule_set, self.stake, self.region, self.ranked)

    @property
    def mu(self) -> float:
        return sum(p.mu for p in self.players) / len(self.players)


@dataclass(frozen=True, slots=True, order=True)
class QueueKey:
    """Tickets match only tickets of the same key (one pool each)."""

    game: str
    rule_set: str
    stake: int
    region: str
    ranked: bool


@dataclass(frozen=True, slots=True)
class Match:
    """A table: ``tickets`` in the order they were chosen (the anchor first), ``robots``
    free seats for robots, ``spread`` of the tickets' ratings, ``formed_at`` the pass's
    time."""

    key: QueueKey
    tickets: tuple[Ticket, ...]
    robots: int
    spread: float
    formed_at: float

    @property
    def user_ids(self) -> tuple[int, ...]:
        return tuple(p.user_id for t in self.tickets for p in t.players)


@dataclass(frozen=True, slots=True)
class GameQueue:
    """A game the matcher serves: its seat count and, when not empty, the rule sets it
    accepts (empty: any key)."""

    seats: int
    rule_sets: frozenset[str] = frozenset()


def default_games() -> dict[str, GameQueue]:
    """Every game of :mod:`games.registry` with its seat count, any rule set."""
    from games import registry

    return {spec.name: GameQueue(spec.seats) for spec in registry.all()}


@dataclass(frozen=True)
class MatchConfig:
    """Settings of a matcher. ``tolerance_steps``: (waiting seconds, allowed spread) pairs,
    the first at 0 s, both increasing (``math.inf``: any spread)."""

    games: Mapping[str, GameQueue] = field(default_factory=default_games)
    # 3 points of mu at once, then wider fast: the time-to-table target of issue 23 (p99
    # under 15 s at 200 tickets a minute, bench/reports/matchmaking.md)
    tolerance_steps: tuple[tuple[float, float], ...] = (
        (0.0, 3.0), (5.0, 6.0), (10.0, 12.0), (20.0, INF))
    robot_fill_after: float | None = None
    geo_alert_meters: float = 100.0
    stranger_tables_per_day: int = 3
    encounter_window: float = DAY_SECONDS
    max_pool: int = 100_000
    scan_limit: int = 64
    max_encounters: int = 2_000_000     # meetings remembered (about 180 bytes each: 0.36 GB)

    def __post_init__(self) -> None:
        steps = self.tolerance_steps
        if not steps or steps[0][0] != 0:
            raise MatchError("bad_config", f"tolerance_steps must start at 0 s, got {steps!r}")
        for (t0, w0), (t1, w1) in zip(steps, steps[1:], strict=False):
            if not (t1 > t0 and w1 >= w0):
                raise MatchError("bad_config", "tolerance_steps must increase in time and "
                                 f"never narrow, got {steps!r}")
        if any(not w >= 0 for _, w in steps):
            raise MatchError("bad_config", f"tolerances must be >= 0, got {steps!r}")
        if self.robot_fill_after is not None and not self.robot_fill_after >= 0:
            raise MatchError("bad_config", "robot_fill_after must be >= 0 or None")
        if not self.geo_alert_meters >= 0 or self.stranger_tables_per_day < 0 \
                or not self.encounter_window > 0:
            raise MatchError("bad_config", "geo_alert_meters and stranger_tables_per_day "
                             "must be >= 0, encounter_window > 0")
        if self.max_pool < 1 or self.scan_limit < 1 or self.max_encounters < 1:
            raise MatchError("bad_config", "max_pool and scan_limit must be positive")
        for name, queue in self.games.items():
            if not 2 <= queue.seats <= 10:
                raise MatchError("bad_config", f"game {name!r}: {queue.seats} seats")

    def tolerance(self, waited: float) -> float:
        """The spread a ticket that waited ``waited`` seconds accepts."""
        width = self.tolerance_steps[0][1]
        for after, w in self.tolerance_steps:
            if waited < after:
                break
            width = w
        return width


class _Entry:
    """A waiting ticket with what the pass reads often, precomputed."""

    __slots__ = ("ticket", "seq", "mu", "size", "uids", "ips", "points", "order_key")

    def __init__(self, ticket: Ticket, seq: int) -> None:
        self.ticket = ticket
        self.seq = seq
        self.mu = ticket.mu
        self.size = len(ticket.players)
        self.uids = tuple(p.user_id for p in ticket.players)
        self.ips = frozenset(p.ip for p in ticket.players if p.ip)
        self.points = tuple((p.lat, p.lng) for p in ticket.players
                            if has_position(p.lat, p.lng))
        self.order_key = (ticket.enqueued_at, seq)


class _Pool:
    __slots__ = ("key", "seats", "by_rating", "by_age", "entries")

    def __init__(self, key: QueueKey, seats: int) -> None:
        self.key = key
        self.seats = seats
        self.by_rating: list[tuple[float, int]] = []          # (mu, seq), sorted
        self.by_age: list[tuple[float, int]] = []             # (enqueued_at, seq), sorted
        self.entries: dict[int, _Entry] = {}

    def add(self, entry: _Entry) -> None:
        self.entries[entry.seq] = entry
        bisect.insort(self.by_rating, (entry.mu, entry.seq))
        bisect.insort(self.by_age, entry.order_key)

    def remove(self, entry: _Entry) -> None:
        del self.entries[entry.seq]
        for items, item in ((self.by_rating, (entry.mu, entry.seq)),
                            (self.by_age, entry.order_key)):
            i = bisect.bisect_left(items, item)
            del items[i]


class Encounters:
    """How often pairs of strangers sat together in the last ``window`` seconds. Bounded:
    what is older than the window is forgotten by :meth:`expire`, and beyond ``limit``
    meetings the oldest go early (counted in :attr:`forgotten`: the one case where a pair
    could meet once more than allowed; the bench reports how many a day's traffic holds)."""

    def __init__(self, window: float, limit: int = 2_000_000) -> None:
        self.window = window
        self.limit = limit
        self.forgotten = 0
        self._counts: dict[tuple[int, int], int] = {}
        self._log: deque[tuple[float, tuple[int, int]]] = deque()

    def count(self, a: int, b: int) -> int:
        return self._counts.get((a, b) if a < b else (b, a), 0)

    def add(self, groups: Iterable[Sequence[int]], at: float) -> None:
        """One table at ``at``: every pair of users from different groups met."""
        groups = [tuple(g) for g in groups]
        for i, g in enumerate(groups):
            for h in groups[i + 1:]:
                for a in g:
                    for b in h:
                        if a == b:
                            continue
                        pair = (a, b) if a < b else (b, a)
                        self._counts[pair] = self._counts.get(pair, 0) + 1
                        self._log.append((at, pair))
        while len(self._log) > self.limit:
            self._forget()
            self.forgotten += 1

    def expire(self, now: float) -> None:
        cutoff = now - self.window
        log = self._log
        while log and log[0][0] <= cutoff:
            self._forget()

    def _forget(self) -> None:
        _, pair = self._log.popleft()
        left = self._counts[pair] - 1
        if left:
            self._counts[pair] = left
        else:
            del self._counts[pair]

    def __len__(self) -> int:
        return len(self._log)


class Matcher:
    """The pools of one matcher (any number of games and queue keys)."""

    def __init__(self, config: MatchConfig | None = None) -> None:
        self.config = config or MatchConfig()
        self._pools: dict[QueueKey, _Pool] = {}
        self._by_ticket: dict[str, _Entry] = {}
        self._queued_users: dict[int, str] = {}         # user id -> ticket id
        self._waits: dict[QueueKey, deque[float]] = {}
        self._seq = 0
        self.encounters = Encounters(self.config.encounter_window,
                                     self.config.max_encounters)

    # -- tickets -----------------------------------------------------------------------------

    def enqueue(self, ticket: Ticket) -> None:
        """Put a ticket in its pool, or refuse it with a :class:`MatchError`."""
        queue = self._check(ticket)
        key = ticket.key
        pool = self._pools.get(key)
        if pool is None:
            pool = self._pools[key] = _Pool(key, queue.seats)
        if len(pool.entries) >= self.config.max_pool:
            raise MatchError("queue_full", f"{len(pool.entries)} tickets wait in this queue")
        self._seq += 1
        entry = _Entry(ticket, self._seq)
        pool.add(entry)
        self._by_ticket[ticket.ticket_id] = entry
        for uid in entry.uids:
            self._queued_users[uid] = ticket.ticket_id

    def _check(self, t: Ticket) -> GameQueue:
        queue = self.config.games.get(t.game)
        if queue is None:
            raise MatchError("unknown_game", f"no queue for game {t.game!r}; known: "
                             f"{', '.join(sorted(self.config.games))}")
        if queue.rule_sets and t.rule_set not in queue.rule_sets:
            raise MatchError("unknown_rule_set", f"{t.game} has no rule set {t.rule_set!r}")
        if not t.ticket_id or len(t.ticket_id) > MAX_KEY_TEXT:
            raise MatchError("bad_ticket", "ticket_id must be 1..64 characters")
        if len(t.rule_set) > MAX_KEY_TEXT or len(t.region) > MAX_KEY_TEXT:
            raise MatchError("bad_ticket", f"rule set and region are at most {MAX_KEY_TEXT} "
                             "characters")
        if isinstance(t.stake, bool) or not isinstance(t.stake, int) or t.stake <= 0:
            raise MatchError("bad_ticket", f"stake must be a positive integer, got {t.stake!r}")
        if not math.isfinite(t.enqueued_at):
            raise MatchError("bad_ticket", "enqueued_at must be a finite time")
        if t.ticket_id in self._by_ticket:
            raise MatchError("duplicate_ticket", f"ticket {t.ticket_id!r} is already queued")
        size = len(t.players)
        if not 1 <= size <= min(MAX_PARTY, queue.seats):
            raise MatchError("bad_party", f"a party has 1..{min(MAX_PARTY, queue.seats)} "
                             f"players, got {size}")
        uids = [p.user_id for p in t.players]
        if len(set(uids)) != size:
            raise MatchError("bad_party", f"a player appears twice in the party {uids}")
        for p in t.players:
            if isinstance(p.user_id, bool) or not isinstance(p.user_id, int) or p.user_id <= 0:
                raise MatchError("bad_player", f"user ids are positive, got {p.user_id!r}")
            if not (math.isfinite(p.mu) and math.isfinite(p.sigma) and p.sigma > 0):
                raise MatchError("bad_player", f"player {p.user_id}: rating must be finite "
                                 f"with sigma > 0, got {p.mu!r}, {p.sigma!r}")
            if not (-90 <= p.lat <= 90 and -180 <= p.lng <= 180):
                raise MatchError("bad_player", f"player {p.user_id}: no such geo point "
                                 f"({p.lat}, {p.lng})")
            other = self._queued_users.get(p.user_id)
            if other is not None:
                raise MatchError("already_queued", f"player {p.user_id} already waits "
                                 f"(ticket {other!r})")
        return queue

    def cancel(self, ticket_id: str) -> bool:
        """Take a ticket out of its pool; False if it is not waiting (matched or unknown)."""
        entry = self._by_ticket.pop(ticket_id, None)
        if entry is None:
            return False
        self._pools[entry.ticket.key].remove(entry)
        for uid in entry.uids:
            del self._queued_users[uid]
        return True

    def ticket_of(self, user_id: int) -> str | None:
        """The ticket a player waits with, if any."""
        return self._queued_users.get(user_id)

    def waiting(self, key: QueueKey | None = None) -> int:
        """Tickets waiting in one pool, or in all."""
        if key is not None:
            pool = self._pools.get(key)
            return len(pool.entries) if pool else 0
        return len(self._by_ticket)

    def estimated_wait(self, key: QueueKey) -> float | None:
        """What a new ticket of this pool may expect to wait: the median wait of the last
        :data:`RECENT_WAITS` tickets it matched (None before the first table)."""
        recent = self._waits.get(key)
        if not recent:
            return None
        waits = sorted(recent)
        return waits[len(waits) // 2]

    def note_table(self, groups: Iterable[Sequence[int]], at: float) -> None:
        """Players seated together elsewhere (a room they joined by hand): each group a
        party, every pair across groups counts as strangers who met at ``at``."""
        self.encounters.add(groups, at)

    # -- passes ------------------------------------------------------------------------------

    def run(self, now: float) -> list[Match]:
        """One pass over every pool at time ``now``: the tables it can form, their tickets
        taken out of the queue."""
        self.encounters.expire(now)
        out: list[Match] = []
        for key in sorted(self._pools):
            pool = self._pools[key]
            if pool.entries:
                self._run_pool(pool, now, out)
            else:
                del self._pools[key]
        return out

    def _run_pool(self, pool: _Pool, now: float, out: list[Match]) -> None:
        cfg = self.config
        robots_after = None if pool.key.ranked else cfg.robot_fill_after
        for _, seq in list(pool.by_age):
            anchor = pool.entries.get(seq)
            if anchor is None:                     # taken by an earlier table of this pass
                continue
            waited = now - anchor.ticket.enqueued_at
            chosen = self._build(pool, anchor, cfg.tolerance(waited))
            filled = sum(e.size for e in chosen)
            robots = 0
            if filled < pool.seats:
                if robots_after is None or waited < robots_after:
                    continue
                robots = pool.seats - filled
            waits = self._waits.pop(pool.key, None) or deque(maxlen=RECENT_WAITS)
            self._waits[pool.key] = waits                  # the latest used goes last
            if len(self._waits) > WAIT_KEYS:
                del self._waits[next(iter(self._waits))]
            for entry in chosen:
                waits.append(now - entry.ticket.enqueued_at)
                pool.remove(entry)
                del self._by_ticket[entry.ticket.ticket_id]
                for uid in entry.uids:
                    del self._queued_users[uid]
            mus = [e.mu for e in chosen]
            self.encounters.add([e.uids for e in chosen], now)
            out.append(Match(pool.key, tuple(e.ticket for e in chosen), robots,
                             max(mus) - min(mus), now))

    def _build(self, pool: _Pool, anchor: _Entry, tolerance: float) -> list[_Entry]:
        """The tickets of a table around ``anchor``, nearest rating first, within
        ``tolerance`` of spread (possibly short of the seats)."""
        seats = pool.seats
        chosen = [anchor]
        filled = anchor.size
        if filled >= seats:
            return chosen
        ratings, entries = pool.by_rating, pool.entries
        at = bisect.bisect_left(ratings, (anchor.mu, anchor.seq))
        left, right = at - 1, at + 1
        lo = hi = anchor.mu
        budget = self.config.scan_limit
        n = len(ratings)
        while filled < seats and budget > 0 and (left >= 0 or right < n):
            grow_left = hi - ratings[left][0] if left >= 0 else INF
            grow_right = ratings[right][0] - lo if right < n else INF
            if grow_left <= grow_right:
                spread, seq = grow_left, ratings[left][1]
                left -= 1
            else:
                spread, seq = grow_right, ratings[right][1]
                right += 1
            if spread > tolerance:
                break
            budget -= 1
            cand = entries[seq]
            if filled + cand.size > seats or self._conflicts(cand, chosen):
                continue
            chosen.append(cand)
            filled += cand.size
            lo, hi = min(lo, cand.mu), max(hi, cand.mu)
        return chosen

    def _conflicts(self, cand: _Entry, chosen: Sequence[_Entry]) -> bool:
        """Would ``cand`` break a hard constraint with anyone already chosen?"""
        cfg = self.config
        limit_m = cfg.geo_alert_meters
        per_day = cfg.stranger_tables_per_day
        counts = self.encounters
        for other in chosen:
            if cand.ips and not cand.ips.isdisjoint(other.ips):
                return True
            if cand.points and other.points and limit_m > 0:
                for lat1, lng1 in cand.points:
                    for lat2, lng2 in other.points:
                        if haversine_m(lat1, lng1, lat2, lng2) < limit_m:
                            return True
            for a in cand.uids:
                for b in other.uids:
                    if counts.count(a, b) >= per_day:
                        return True
        return False


def violations(match: Match, config: MatchConfig, met: Mapping[tuple[int, int], int],
               ) -> list[str]:
    """What is wrong with a table, checked from scratch (tests and the bench): strangers
    too close, sharing an IP, or meeting once too often (``met``: earlier meetings of each
    pair, smaller user id first), or a wrong seat count. Empty when the table is sound."""
    wrong = []
    seats = config.games[match.key.game].seats
    if sum(len(t.players) for t in match.tickets) + match.robots != seats:
        wrong.append(f"{seats} seats, {match.user_ids} and {match.robots} robots")
    for i, t in enumerate(match.tickets):
        for u in match.tickets[i + 1:]:
            for p in t.players:
                for q in u.players:
                    if p.ip and p.ip == q.ip:
                        wrong.append(f"{p.user_id} and {q.user_id} share {p.ip}")
                    if has_position(p.lat, p.lng) and has_position(q.lat, q.lng) and \
                            haversine_m(p.lat, p.lng, q.lat, q.lng) < config.geo_alert_meters:
                        wrong.append(f"{p.user_id} and {q.user_id} sit too close")
                    pair = (min(p.user_id, q.user_id), max(p.user_id, q.user_id))
                    if met.get(pair, 0) >= config.stranger_tables_per_day:
                        wrong.append(f"{pair} met {met[pair]} times already")
    return wrong
