"""Rated matchmaking over the wire (issue 23; docs/protocol.md, "Matchmaking"): tickets in
the ``match_tickets`` KV bucket, one active matcher per game among the lobby replicas,
matched players seated through the ordinary join path.

**Tickets.** ``AskMatch`` writes the player's ticket as ``t.<user id>`` (created only if
absent: one ticket per player, whatever lobby took it); ``CancelMatch`` deletes it with a
compare-and-set on the revision the lobby read, so a ticket the matcher just claimed is not
cancelled under it. A ticket moves ``waiting`` → ``claimed`` (the matcher took it and is
making the room) → ``matched`` (room id, its password, robots) or ``timeout`` / ``failed``;
every move is a compare-and-set on the entry's revision, so no ticket is matched twice and
no match is made from a cancelled ticket. A session that ends without a newer login of its
user (a dropped connection: kicked by a newer login or sent away by a drain, it keeps the
ticket as it is) marks its waiting ticket ``away_at``: the matcher holds it (not matched)
for ``lobby.reconnect_grace_seconds``, a login of the player on any lobby takes it back
(:meth:`Matchmaking.resume`), and the matcher deletes it once the grace passed without him.

**Parties.** A player who names friends is refused at once when one of them is not online on
any lobby (``ERR_PARTY_OFFLINE``: asked through a ``p.<user id>`` entry that the lobby
holding the friend's session answers) or waits for another match, is being seated in one,
or sits in a room (``ERR_PARTY_BUSY``).

**Encounters.** The rooms the matchers made are written, with the user ids of each ticket,
into ``e.<slot>`` entries (one slot a minute, 1,441 slots reused a day later), so that a new
matcher starts with the day's meetings of strangers (``lobby.match_stranger_tables_per_day``),
and a running matcher counts the rooms the other games' matchers make as they appear: a pair
of strangers is limited across all games, as by one matcher.

**The active matchers.** Every lobby runs :meth:`Matchmaking._tick` every
``lobby.match_tick_seconds``. Each game has its own lease, ``lease.<game>``; the lobby
holding it renews it (update on the revision it read); a lobby that sees its revision stand
still for ``lobby.match_lease_seconds`` takes it over the same way, so a killed matcher is
replaced within a lease and a tick, game by game, and the other games' matchers go on. The
leases spread over the lobbies (:meth:`Matchmaking._hold_leases`): a lobby takes a free
lease only while it holds fewer than its fair share (the games over the live lobbies,
rounded up), reaching for the games in an order of its own (a hash of its instance and the
game), and gives one up (the last of that order) once it held more than its share for a
whole lease. Only the holder of a game's lease runs a
:class:`services.lobby.matching.Matcher` over that game's waiting tickets (kept current by
a watch of the bucket, as in every lobby); a new holder starts from the tickets as they
stand (their waits kept: ``enqueued_at`` is in the ticket) and puts back in the queue the
tickets a dead holder left ``claimed``.

**Seating.** For a table the matcher claims its tickets, creates a room with a random
password through the directory (the least-loaded table, as CreateRoom), and writes the room
into the tickets. Every lobby watches the bucket; the one holding the player's session joins
it to the room (``seating.ask_join`` / ``seating.seat``: the same path as JoinRoom), tells it
``MatchFound`` and deletes the ticket. The room's creator (the table's first player) asks
for the robots the matcher gave the table.

Where the player is never leaves the lobbies: the ticket holds its IP and geo point for the
matcher only; clients see their own ticket and per-queue counts.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import math
import secrets
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import nats.errors
from nats.js.errors import APIError, NotFoundError
from nats.js.kv import KV_DEL, KV_PURGE, KeyValue
from prometheus_client import Counter, Gauge, Histogram

from games import registry
from games.engine import BadInput
from paiju.contracts.lobby import (
    Encounters,
    LobbyPresence,
    MatchLease,
    MatchTicket,
    MetRoom,
    PresenceAnswer,
    PresenceAsk,
    TicketState,
    decode_stats,
    encode_stats,
    presence_of,
)
from paiju.contracts.typed import BadContract
from paiju.frames import server_frame
from paiju.v1 import client_pb2, common_pb2, lobby_msgs_pb2, records_pb2, table_pb2
from services.common import bus
from services.common.tasks import cancel_and_wait
from services.lobby.errors import Reject
from services.lobby.matching import (
    DAY_SECONDS,
    MAX_KEY_TEXT,
    MAX_PARTY,
    MatchConfig,
    Matcher,
    MatchError,
    Player,
    QueueKey,
    Ticket,
)
from services.lobby.sessions import Session

# services.lobby.app.LobbyApp (which imports this module: no import back, not even for types)
LobbyApp = Any
# How a matched session is seated in its room: services.lobby.seating.seat_matched, given by
# whoever opens the app (the lobby's start-up); seating imports the app, which owns this module.
SeatMatched = Callable[[LobbyApp, Session, MatchTicket], Awaitable[None]]

log = logging.getLogger("paiju.lobby.matchmaker")

BUCKET = bus.MATCH_TICKETS_BUCKET
LEASE_PREFIX = "lease."   # lease.<game>: who runs that game's matcher
STATS_PREFIX = "stats."   # stats.<game>: that game's queues' recent median waits
PREFIX = "t."
LOBBY_PREFIX = "l."   # l.<instance>: a lobby's presence, rewritten every third of a lease
ASK_PREFIX = "p."     # p.<uid>: is this player online? (the lobby holding him answers)
MET_PREFIX = "e."     # e.<slot>: the rooms the matcher made in one minute (encounters)
MET_SLOT = 60.0       # seconds a slot covers
MET_SLOTS = int(math.ceil(DAY_SECONDS / MET_SLOT)) + 1  # a day of slots and the current one
MET_SLOT_ROOMS = 2_000  # rooms a slot keeps (beyond: the running matcher alone remembers)
ASK_WAIT = 1.0        # seconds a party member's lobby has to say he is online
WAITING: TicketState = "waiting"
CLAIMED: TicketState = "claimed"
MATCHED: TicketState = "matched"
TIMEOUT: TicketState = "timeout"
FAILED: TicketState = "failed"
DEFAULT_MU, DEFAULT_SIGMA = 25.0, 25.0 / 3     # the rating model's start (records' ratings)
MAX_STAKE = 1_000_000
CLAIM_STALE = 15.0    # a ticket claimed this long ago by a matcher that is gone waits again
DONE_KEEP = 60.0      # an outcome no lobby delivered (nobody online) is dropped after this
Cancelled = lobby_msgs_pb2.MatchCancelled

TICKETS = Counter("paiju_lobby_match_tickets_total",
                  "Match requests this lobby took (AskMatch answered MatchQueued)")
OUTCOMES = Counter("paiju_lobby_match_outcomes_total",
                   "Match requests ended for players of this lobby, by outcome (matched, "
                   "cancelled, timeout, failed)", ["outcome"])
ROOMS = Counter("paiju_lobby_match_rooms_total", "Rooms made by this lobby's matchers, by game",
                ["game"])
WAITS = Histogram("paiju_lobby_match_wait_seconds",
                  "From a ticket's taking to its table, as this lobby's matchers made it, by game",
                  ["game"], buckets=(0.5, 1, 2, 3, 5, 10, 15, 20, 30, 60, 120, 300))
ACTIVE = Gauge("paiju_lobby_matcher_active",
               "1 while this lobby is the game's active matcher (holds lease.<game>)", ["game"])
POOL = Gauge("paiju_lobby_match_waiting",
             "Tickets of the game waiting to be matched (its active matcher's count; 0 "
             "elsewhere)", ["game"])


@contextlib.asynccontextmanager
async def _reachable() -> AsyncIterator[None]:
    """NATS not answering a player's request is ERR_UNAVAILABLE (try again), not internal."""
    try:
        yield
    except (nats.errors.Error, TimeoutError) as exc:
        if isinstance(exc, APIError):     # an answer, handled by the caller
            raise
        raise Reject(common_pb2.ERR_UNAVAILABLE, "matchmaking did not answer in time: "
                     "try again") from None


def _loopback(ip: str) -> bool:
    """An address that says nothing about where the player is (a local proxy, a test)."""
    return ip in ("", "::1", "localhost") or ip.startswith("127.")


def rule_set_of(game: str, options_json: str) -> tuple[str, str]:
    """The queue's rule set (the options that differ from the game's defaults, as canonical
    JSON; "" for the defaults) and the options to create the room with; ERR_BAD_OPTIONS for
    an unknown game or option."""
    try:
        spec = registry.get(game)
    except KeyError:
        raise Reject(common_pb2.ERR_BAD_OPTIONS, f"unknown game {game!r}; known: "
                     f"{', '.join(s.name for s in registry.all())}") from None
    try:
        given = json.loads(options_json) if options_json.strip() else {}
    except ValueError:
        raise Reject(common_pb2.ERR_BAD_OPTIONS, "options_json is not JSON") from None
    if not isinstance(given, dict):
        raise Reject(common_pb2.ERR_BAD_OPTIONS, "options_json must be a JSON object")
    try:
        parsed = spec.parse_options(given)
    except (BadInput, ValueError, TypeError) as exc:
        raise Reject(common_pb2.ERR_BAD_OPTIONS, f"unknown rule set: {exc}") from None
    differ = {k: v for k, v in sorted(parsed.items()) if spec.default_options.get(k) != v}
    text = json.dumps(differ, sort_keys=True, separators=(",", ":")) if differ else ""
    if len(text) > MAX_KEY_TEXT:
        raise Reject(common_pb2.ERR_BAD_OPTIONS, "too many options differ from the defaults")
    return text, json.dumps(differ, sort_keys=True)


def _ticket(key: str, raw: bytes | None) -> MatchTicket | None:
    """A ``t.<uid>`` value read by key; None when it is unreadable (logged)."""
    try:
        return MatchTicket.decode(raw or b"")
    except BadContract as exc:
        log.warning("unreadable match ticket", extra={"key": key, "error": str(exc)})
        return None


def queue_name(key: QueueKey) -> str:
    return f"{key.game}|{key.rule_set}|{key.stake}|{key.region}|{int(key.ranked)}"


def _key_of(value: MatchTicket) -> QueueKey:
    return QueueKey(value.game, value.rule_set, value.stake, value.region, value.ranked)


def ticket_of(value: MatchTicket, *more: MatchTicket) -> Ticket:
    """``t.<uid>`` entries as the matcher's ticket: one player, or a party (its members'
    entries: one ticket, their ids joined, since its last member asked)."""
    values = (value, *more)
    players = tuple(Player(v.user_id, v.mu, v.sigma, v.ip, v.lat, v.lng) for v in values)
    key = _key_of(value)
    ticket_id = "+".join(sorted(v.ticket_id for v in values))
    return Ticket(ticket_id, players, key.game, key.rule_set, key.stake,
                  max(v.enqueued_at for v in values), key.region, key.ranked)


Waiting = tuple[str, int, MatchTicket]   # a waiting ticket's key, revision and entry


def parties(waiting: dict[str, Waiting]) -> dict[str, list[Waiting]]:
    """The matcher's tickets among the waiting entries, by ticket id: each player alone, and
    each party whose members all wait in the same queue naming the same party; the members
    of an incomplete party are left out (they wait for the others)."""
    units: dict[str, list[Waiting]] = {}
    groups: dict[tuple[str, tuple[int, ...]], list[Waiting]] = {}
    for ticket_id, item in waiting.items():
        value = item[2]
        party = tuple(sorted(value.party))
        if not party:
            units[ticket_id] = [item]
        else:
            groups.setdefault((queue_name(_key_of(value)), party), []).append(item)
    for (_, party), members in groups.items():
        if sorted(v.user_id for *_, v in members) == list(party):
            members.sort(key=lambda item: item[2].user_id)
            units["+".join(sorted(v.ticket_id for *_, v in members))] = members
    return units


class Matchmaking:
    """One lobby's part: its view of the bucket, the delivery of outcomes to its sessions,
    and the matchers of the games whose lease it holds."""

    def __init__(self, app: LobbyApp, seat_matched: SeatMatched | None = None) -> None:
        self.app = app
        self.seat_matched = seat_matched
        self.cfg = app.lobby
        self.instance = uuid.uuid4().hex[:12]
        self.kv: KeyValue | None = None
        self.view: dict[str, tuple[int, MatchTicket]] = {}   # t.<uid> -> (revision, entry)
        self.met: dict[str, Encounters] = {}          # e.<slot> -> the rooms of that minute
        self.stats: dict[str, dict[str, float]] = {}    # game -> queue name -> wait (s)
        # the games this lobby reaches for, in its own order (spreads the leases)
        self.games = tuple(sorted((spec.name for spec in registry.all()), key=lambda g:
                                  hashlib.sha256(f"{self.instance}/{g}".encode()).digest()))
        self.leading: set[str] = set()              # games whose lease this lobby holds
        self.matchers: dict[str, Matcher] = {}      # their matchers
        self._made_by: dict[str, str] = {}          # game -> its running matcher's id
        self._queued: dict[str, set[str]] = {}      # game -> ticket ids in its matcher
        self._delivering: set[str] = set()          # ticket ids this lobby is delivering
        self._lease_seen: dict[str, tuple[int, float]] = {}  # game -> (revision, since)
        self._renewed: dict[str, float] = {}        # game -> when this lobby renewed it
        self._over_since: float | None = None       # holding more than its share since
        self._met_seen: dict[str, tuple[int, int]] = {}  # e.<slot> -> (slot, rooms noted)
        self._announced = 0.0                       # when this lobby's presence was written
        self._heard: dict[str, float] = {}          # lobby instance -> when its presence moved
        self._orphans: dict[str, float] = {}        # ticket id -> since when its lobby is gone
        self._asking: dict[int, int] = {}           # user id -> presence asks under way
        self._answers: dict[int, tuple[int, PresenceAnswer]] = {}   # their latest answers
        self._answered: dict[int, asyncio.Event] = {}
        self._synced = False                        # the watch delivered the bucket once
        self._attached = 0.0
        self.passes: dict[str, int] = {}            # game -> passes of its matcher here
        self.matches = 0
        self.tasks: list[asyncio.Task[Any]] = []    # the watch and the matchers' loop

    # -- lifecycle ------------------------------------------------------------------------

    async def attach(self, js: Any, replicas: int = 1) -> None:
        self.kv = await bus.ensure_bucket(js, BUCKET, replicas=replicas)
        self._attached = time.monotonic()
        self.tasks = [self.app.spawn(self._watch()), self.app.spawn(self._loop())]

    async def resign(self) -> None:
        """Give the leases up (a lobby that stops): the other lobbies take them at their
        next tick; the tickets of this lobby's sessions wait for their players to log in
        elsewhere. The loop stops first: a tick under way must not take a lease again
        after it."""
        await cancel_and_wait(*self.tasks)
        if self.kv is None:
            return
        try:
            await self.kv.delete(LOBBY_PREFIX + self.instance)
        except Exception as exc:
            log.info("presence not withdrawn", extra={"error": repr(exc)})
        for game in [g for g in self.games if g in self.leading]:
            await self._give_up(game)

    def _need(self) -> KeyValue:
        if self.kv is None:
            raise Reject(common_pb2.ERR_UNAVAILABLE, "matchmaking is not open yet")
        return self.kv

    # -- the player's requests ------------------------------------------------------------

    async def ask(self, session: Session, frame: client_pb2.ClientFrame) -> None:
        req = frame.ask_match
        rule_set, options_json = rule_set_of(req.game, req.options_json)
        stake = req.stake or 1
        if not 1 <= stake <= MAX_STAKE:
            raise Reject(common_pb2.ERR_BAD_OPTIONS, f"stake is 1..{MAX_STAKE}, got {stake}")
        if len(req.region) > MAX_KEY_TEXT or not req.region.isprintable():
            raise Reject(common_pb2.ERR_BAD_OPTIONS, f"region is at most {MAX_KEY_TEXT} "
                         "printable characters")
        party = sorted(set(req.party))
        if len(party) != len(req.party) or len(party) > MAX_PARTY - 1 \
                or any(u <= 0 or u == session.user_id for u in party):
            raise Reject(common_pb2.ERR_BAD_OPTIONS, f"a party names up to {MAX_PARTY - 1} "
                         "friends by user id, each once, not yourself")
        cover = stake * self.cfg.match_stake_cover
        if session.profile.coins < cover:
            raise Reject(common_pb2.ERR_STAKE_TOO_HIGH, f"a stake of {stake} needs {cover} "
                         f"coins, you have {session.profile.coins}")
        kv = self._need()
        key = PREFIX + str(session.user_id)
        if party:
            queue = queue_name(QueueKey(req.game, rule_set, stake, req.region, req.ranked))
            members = sorted([*party, session.user_id])
            async with _reachable():
                for friend in party:
                    await self._check_member(friend, queue, members)
        mu, sigma = await self._rating(session.user_id, req.game)
        ip = session.profile.ip
        value = MatchTicket(
            ticket_id=uuid.uuid4().hex[:16], user_id=session.user_id,
            session_id=session.session_id, lobby=self.instance, game=req.game,
            rule_set=rule_set, options_json=options_json, stake=stake, region=req.region,
            ranked=req.ranked, mu=mu, sigma=sigma, ip="" if _loopback(ip) else ip,
            lat=session.profile.lat, lng=session.profile.lng, enqueued_at=time.time(),
            state=WAITING, party=sorted([*party, session.user_id]) if party else [])
        data = value.encode()
        async with _reachable():
            try:
                rev = await kv.create(key, data)
            except APIError:
                rev = await self._replace_finished(kv, key, data)
        self.view[key] = (rev, value)
        TICKETS.inc()
        session.send(server_frame(self._queued_frame(value), reply_to=frame.seq))

    async def _replace_finished(self, kv: KeyValue, key: str, data: bytes) -> int:
        """The user's entry exists: refuse while it waits or is being matched; an outcome
        nobody took (a timeout, a failure, a room the player never reached) gives way."""
        try:
            entry = await kv.get(key)
        except NotFoundError:
            return await kv.create(key, data)
        old = _ticket(key, entry.value)   # an unreadable one gives way as well
        state = old.state if old is not None else None
        if state in (WAITING, CLAIMED):
            raise Reject(common_pb2.ERR_ALREADY_QUEUED, "you are already waiting for a match")
        if old is not None and state == MATCHED:
            raise Reject(common_pb2.ERR_ALREADY_QUEUED, f"matched into room "
                         f"{old.room_id}: you are being seated there")
        try:
            return await kv.update(key, data, last=entry.revision)
        except APIError:
            raise Reject(common_pb2.ERR_ALREADY_QUEUED, "a match request of yours is under "
                         "way") from None

    async def _check_member(self, uid: int, queue: str, members: list[int]) -> None:
        """A party member must be online and free: waiting for this very party (he asked
        first) or for nothing, outside any room."""
        kv = self._need()
        try:
            value = _ticket(PREFIX + str(uid), (await kv.get(PREFIX + str(uid))).value)
        except NotFoundError:
            value = None
        state = value.state if value is not None else None
        if value is not None and state in (WAITING, CLAIMED, MATCHED):
            if state == WAITING and queue_name(_key_of(value)) == queue \
                    and sorted(value.party) == members:
                return      # he asked for this party already (held while he reconnects)
            raise Reject(common_pb2.ERR_PARTY_BUSY, f"player {uid} already waits for "
                         "another match" if state == WAITING else
                         f"player {uid} is being seated in a match")
        here = await self._online(uid)
        if here is None:
            raise Reject(common_pb2.ERR_PARTY_OFFLINE, f"player {uid} is not online: a "
                         "party's players must be logged in")
        if here.room_id:
            raise Reject(common_pb2.ERR_PARTY_BUSY, f"player {uid} sits in a room")

    async def _online(self, uid: int) -> PresenceAnswer | None:
        """Where a player is online, or None: his session on this lobby, or the answer of
        the lobby that holds it to a ``p.<uid>`` entry within ASK_WAIT."""
        local = self.app.hub.by_user.get(uid)
        if local is not None and not local.kicked and not local.outbox.closed:
            return PresenceAnswer(here=True, room_id=local.room_id, lobby=self.instance)
        kv = self._need()
        loop = asyncio.get_running_loop()
        self._asking[uid] = self._asking.get(uid, 0) + 1
        try:
            self._answered.setdefault(uid, asyncio.Event())
            rev = await kv.put(ASK_PREFIX + str(uid), PresenceAsk(
                ask=uuid.uuid4().hex[:8], at=time.time()).encode())
            deadline = loop.time() + ASK_WAIT
            while True:
                answer = self._answers.get(uid)
                if answer is not None and answer[0] > rev:
                    return answer[1]
                left = deadline - loop.time()
                if left <= 0:
                    return None
                event = self._answered.setdefault(uid, asyncio.Event())
                try:
                    await asyncio.wait_for(event.wait(), left)
                except TimeoutError:
                    return None
        finally:
            self._asking[uid] -= 1
            if not self._asking[uid]:
                del self._asking[uid]
                self._answers.pop(uid, None)
                self._answered.pop(uid, None)

    def _presence(self, key: str, rev: int, value: PresenceAsk | PresenceAnswer) -> None:
        """A ``p.<uid>`` entry: an answer wakes this lobby's askers; an ask about a player
        of this lobby is answered (compare-and-set: a newer ask gets its own answer)."""
        try:
            uid = int(key[len(ASK_PREFIX):])
        except ValueError:
            return
        if isinstance(value, PresenceAnswer):
            if uid in self._asking:
                self._answers[uid] = (rev, value)
                event = self._answered.pop(uid, None)
                if event is not None:
                    event.set()
            return
        session = self.app.hub.by_user.get(uid)
        if session is None or session.kicked or session.outbox.closed:
            return
        answer = PresenceAnswer(here=True, room_id=session.room_id,
                                lobby=self.instance).encode()

        async def say() -> None:
            try:
                await self._need().update(key, answer, last=rev)
            except Exception as exc:    # a newer ask meanwhile: answered in its turn
                log.debug("presence not answered", extra={"error": repr(exc)})
        self.app.spawn(say())

    async def _rating(self, user_id: int, game: str) -> tuple[float, float]:
        """The player's all-time rating in the game; the model's start when he has none or
        records does not answer (matching goes on without it)."""
        try:
            found = await self.app.records.rating(user_id, records_pb2.RatingScope(game=game))
        except Reject as exc:
            log.info("no rating for the ticket, using the start", extra={
                "user": user_id, "error": exc.message})
            return DEFAULT_MU, DEFAULT_SIGMA
        if found.hands <= 0 or not (math.isfinite(found.mu) and found.sigma > 0):
            return DEFAULT_MU, DEFAULT_SIGMA
        return found.mu, found.sigma

    def _queued_frame(self, value: MatchTicket) -> lobby_msgs_pb2.MatchQueued:
        key = _key_of(value)
        name = queue_name(key)
        waiting = sum(1 for _, v in self._tickets() if v.state == WAITING
                      and queue_name(_key_of(v)) == name)
        estimate = self.stats.get(key.game, {}).get(name)
        return lobby_msgs_pb2.MatchQueued(
            ticket_id=value.ticket_id, game=key.game, stake=key.stake, ranked=key.ranked,
            since_ms=int(value.enqueued_at * 1000), waiting=max(1, waiting),
            estimated_wait_ms=int(estimate * 1000) if estimate else 0)

    def refuse_if_queued(self, session: Session) -> None:
        """One way into a room at a time: a player whose match request waits (as far as
        this lobby's view of the bucket knows) cancels it before he creates or joins one."""
        entry = self.view.get(PREFIX + str(session.user_id))
        if entry is not None and entry[1].state in (WAITING, CLAIMED, MATCHED):
            raise Reject(common_pb2.ERR_ALREADY_QUEUED, "you are waiting for a match: "
                         "cancel it first")

    async def cancel(self, session: Session, frame: client_pb2.ClientFrame) -> None:
        kv = self._need()
        key = PREFIX + str(session.user_id)
        async with _reachable():
            try:
                entry = await kv.get(key)
                value = _ticket(key, entry.value)
            except NotFoundError:
                value = None
            state = value.state if value is not None else None
            if value is None or state != WAITING:
                raise Reject(common_pb2.ERR_NOT_QUEUED, "no match request is waiting"
                             if state in (None, TIMEOUT, FAILED)
                             else "already matched: the room follows")
            try:
                await kv.delete(key, last=entry.revision)
            except APIError:
                raise Reject(common_pb2.ERR_NOT_QUEUED, "already matched: the room follows") \
                    from None
        self.view.pop(key, None)
        OUTCOMES.labels("cancelled").inc()
        session.send(server_frame(Cancelled(ticket_id=value.ticket_id,
                                            reason=Cancelled.CANCELLED,
                                            message="cancelled"), reply_to=frame.seq))

    async def session_gone(self, session: Session) -> None:
        """The ticket this session asked for (not one a newer login of the user now follows)
        is held for ``lobby.reconnect_grace_seconds`` (``away_at``), cancelled at once when
        there is no grace."""
        if self.kv is None or not session.user_id:
            return
        key = PREFIX + str(session.user_id)
        try:
            entry = await self.kv.get(key)
            value = _ticket(key, entry.value)
            if value is not None and value.state == WAITING \
                    and value.session_id == session.session_id:
                if self.cfg.reconnect_grace_seconds <= 0:
                    await self.kv.delete(key, last=entry.revision)
                    log.info("ticket cancelled with its session", extra={"user": session.user_id})
                    return
                value = value.replace(away_at=time.time())
                await self.kv.update(key, value.encode(), last=entry.revision)
                log.info("ticket held for its player's return", extra={"user": session.user_id})
        except NotFoundError:
            return
        except Exception as exc:    # matched meanwhile, or NATS away: the timeout ends it
            log.info("ticket not cancelled with its session", extra={"error": repr(exc)})

    async def resume(self, session: Session) -> None:
        """After a login: the user's ticket follows the new session (its state is told; a
        ticket held for his return is taken back)."""
        if self.kv is None:
            return
        key = PREFIX + str(session.user_id)
        for _ in range(3):    # an older session's end marking it away meanwhile: again
            try:
                entry = await self.kv.get(key)
            except NotFoundError:
                return
            except Exception as exc:
                log.info("ticket not resumed", extra={"error": repr(exc)})
                return
            value = _ticket(key, entry.value)
            if value is None:
                return
            if value.state not in (WAITING, CLAIMED):
                self._deliver(key, entry.revision or 0, value)
                return
            value = value.replace(session_id=session.session_id, lobby=self.instance,
                                  away_at=None)
            try:
                await self.kv.update(key, value.encode(), last=entry.revision)
            except APIError:   # moved on meanwhile: read it again
                continue
            except Exception as exc:
                log.info("ticket not resumed", extra={"error": repr(exc)})
                return
            session.send(server_frame(self._queued_frame(value)))
            return

    # -- outcomes to this lobby's sessions ------------------------------------------------

    def _tickets(self) -> Iterator[tuple[str, MatchTicket]]:
        for key, (_, value) in list(self.view.items()):
            yield key, value

    async def _watch(self) -> None:
        assert self.kv is not None
        while True:
            try:
                async with bus.KeyWatch.opened(self.kv) as watcher:
                    async for entry in watcher:
                        if entry is None:
                            self._synced = True
                            continue
                        if entry.key.startswith(LOBBY_PREFIX):
                            instance = entry.key[len(LOBBY_PREFIX):]
                            if entry.operation in (KV_DEL, KV_PURGE) or not entry.value:
                                self._heard.pop(instance, None)     # stopped: gone at once
                            else:
                                self._heard[instance] = time.monotonic()
                            continue
                        if entry.operation in (KV_DEL, KV_PURGE) or not entry.value:
                            self.view.pop(entry.key, None)
                            self.met.pop(entry.key, None)
                            continue
                        self._heard_entry(entry.key, entry.revision or 0, entry.value)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("match bucket watch failed, opening it again",
                            extra={"error": repr(exc)})
            await asyncio.sleep(1.0)

    def _heard_entry(self, key: str, rev: int, raw: bytes) -> None:
        """An entry of the bucket as the watch brings it (leases are read by key)."""
        try:
            if key.startswith(STATS_PREFIX):
                self.stats[key[len(STATS_PREFIX):]] = decode_stats(raw)
            elif key.startswith(ASK_PREFIX):
                self._presence(key, rev, presence_of(raw))
            elif key.startswith(MET_PREFIX):
                self._note_met(key, Encounters.decode(raw))
            elif key.startswith(PREFIX):
                value = MatchTicket.decode(raw)
                self.view[key] = (rev, value)
                self._deliver(key, rev, value)
        except BadContract as exc:
            log.warning("unreadable match bucket entry", extra={"key": key, "error": str(exc)})

    def _deliver(self, key: str, rev: int, value: MatchTicket) -> None:
        if value.state not in (MATCHED, TIMEOUT, FAILED):
            return
        session = self.app.hub.by_user.get(value.user_id)
        ticket_id = value.ticket_id
        if session is None or session.kicked or session.outbox.closed \
                or ticket_id in self._delivering:
            return
        self._delivering.add(ticket_id)
        task = self.app.spawn(self._tell(session, key, rev, value))
        task.add_done_callback(lambda _: self._delivering.discard(ticket_id))

    async def _tell(self, session: Session, key: str, rev: int, value: MatchTicket) -> None:
        OUTCOMES.labels(value.state).inc()
        try:
            if value.state == MATCHED:
                if self.seat_matched is None:
                    raise RuntimeError("this lobby was opened without a way to seat a match")
                await self.seat_matched(self.app, session, value)
            else:
                reason = Cancelled.TIMEOUT if value.state == TIMEOUT else Cancelled.FAILED
                session.send(server_frame(Cancelled(ticket_id=value.ticket_id, reason=reason,
                                                    message=value.message or "")))
        except Exception:
            log.exception("match outcome not delivered", extra={"user": session.user_id})
        finally:
            try:
                await self._need().delete(key, last=rev)
            except Exception as exc:    # replaced meanwhile (a new ticket): leave it
                log.debug("ticket outcome not deleted", extra={"error": repr(exc)})

    # -- the active matchers --------------------------------------------------------------

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.cfg.match_tick_seconds)
            try:
                await self._tick()
            except asyncio.CancelledError:
                raise
            except Exception as exc:    # NATS away: the next tick tries again
                log.warning("matchmaking tick failed", extra={"error": repr(exc)})

    async def _tick(self) -> None:
        now = time.monotonic()
        if now - self._announced >= self.cfg.match_lease_seconds / 3:
            await self._need().put(LOBBY_PREFIX + self.instance,
                                   LobbyPresence(at=time.time()).encode())
            self._announced = now
        if not self._synced and now - self._attached < self.cfg.match_lease_seconds:
            return      # the day's encounters not read yet: no lease before they are
        await self._hold_leases()
        for game in [g for g in self.games if g in self.leading]:
            if game not in self.leading:    # lost while an earlier game's pass renewed
                continue
            try:
                await self._pass(game)
            except asyncio.CancelledError:
                raise
            except Exception as exc:    # this game's pass only: the others go on
                log.warning("match pass failed", extra={"game": game, "error": repr(exc)})

    def _alive(self, instance: str) -> bool:
        """A lobby whose presence moved within a lease (this one always is)."""
        heard = self._heard.get(instance)
        return instance == self.instance or (
            heard is not None and time.monotonic() - heard < self.cfg.match_lease_seconds)

    async def _orphaned(self, key: str, rev: int, value: MatchTicket) -> bool:
        """A waiting ticket whose lobby is gone (killed: its sessions could not withdraw
        their tickets) is not matched until its player logs in again on a live lobby
        (:meth:`resume` moves it there); after ``lobby.reconnect_grace_seconds`` it goes."""
        ticket_id = value.ticket_id
        if self._alive(value.lobby):
            self._orphans.pop(ticket_id, None)
            return False
        since = self._orphans.setdefault(ticket_id, time.monotonic())
        if time.monotonic() - since > self.cfg.reconnect_grace_seconds:
            self._orphans.pop(ticket_id, None)
            log.info("ticket of a player who never came back dropped",
                     extra={"user": value.user_id})
            try:
                await self._need().delete(key, last=rev)
            except APIError:
                pass
        return True

    def _share(self) -> int:
        """How many games' leases this lobby may take free: the games over the live
        lobbies (this one included), rounded up."""
        live = 1 + sum(1 for i in self._heard if i != self.instance and self._alive(i))
        return math.ceil(len(self.games) / live)

    def _lead(self, game: str, leading: bool) -> None:
        if leading != (game in self.leading):   # how long the lease stands still counts
            self._lease_seen.pop(game, None)    # from now (not from before this lobby's hold)
        if leading and game not in self.leading:
            log.info("matching: this lobby is the game's active matcher",
                     extra={"game": game, "instance": self.instance})
            matcher = Matcher(self._match_config())
            self._recall(matcher)
            self.matchers[game] = matcher
            self._made_by[game] = uuid.uuid4().hex[:12]
            self._queued[game] = set()
            self.leading.add(game)
        elif not leading and game in self.leading:
            log.info("matching: no longer the game's active matcher",
                     extra={"game": game, "instance": self.instance})
            self.leading.discard(game)
            del self.matchers[game], self._made_by[game], self._queued[game]
            self._renewed.pop(game, None)
            POOL.labels(game).set(0)
        ACTIVE.labels(game).set(1 if leading else 0)

    def _match_config(self) -> MatchConfig:
        fill = self.cfg.match_robot_fill_seconds
        return MatchConfig(robot_fill_after=fill if fill >= 0 else None,
                           geo_alert_meters=float(self.cfg.geo_alert_meters),
                           stranger_tables_per_day=self.cfg.match_stranger_tables_per_day)

    def _recall(self, matcher: Matcher) -> None:
        """A new matcher starts with the meetings of the rooms made in the last day (the
        ``e.<slot>`` entries as this lobby's watch delivered them, by every game's matcher,
        wherever it ran), oldest first; :meth:`_note_met` adds the later ones."""
        cutoff = time.time() - matcher.config.encounter_window
        rooms: list[tuple[float, list[list[int]]]] = []
        for met in list(self.met.values()):
            rooms.extend((room.at, room.groups) for room in met.rooms if room.at > cutoff)
        rooms.sort(key=lambda r: r[0])
        for at, groups in rooms:
            matcher.note_table(groups, at)
        if rooms:
            log.info("matching: the day's encounters recalled", extra={"rooms": len(rooms)})

    def _note_met(self, key: str, value: Encounters) -> None:
        """An ``e.<slot>`` entry moved (the watch): the rooms added to it since this lobby
        last read it are told to each running matcher that did not make them itself (the
        other games' matchers, here or on another lobby), so that strangers are limited
        across all games. The view of the entry and what was noted move together (only
        the watch writes either), so a matcher that :meth:`_recall` started is told each
        room once."""
        self.met[key] = value
        seen_slot, seen = self._met_seen.get(key, (-1, 0))
        self._met_seen[key] = (value.slot, len(value.rooms))
        for room in value.rooms[seen if seen_slot == value.slot else 0:]:
            for game, matcher in self.matchers.items():
                if room.by != self._made_by[game]:
                    matcher.note_table(room.groups, room.at)

    async def _remember(self, game: str, by: str,
                        rooms: list[tuple[float, list[list[int]]]]) -> None:
        """Add the rooms a pass of the game's matcher (``by``: its id) made to their
        minute's ``e.<slot>`` entry (a slot a day old is started afresh); compare-and-set,
        a few tries. The view follows by the watch."""
        kv = self._need()
        by_slot: dict[int, list[MetRoom]] = {}
        for at, groups in rooms:
            by_slot.setdefault(int(at // MET_SLOT), []).append(
                MetRoom(at=at, groups=groups, game=game, by=by))
        for slot, made in by_slot.items():
            key = f"{MET_PREFIX}{slot % MET_SLOTS}"
            for _ in range(5):
                old: Encounters | None = None
                try:
                    entry = await kv.get(key)
                    rev: int | None = entry.revision or 0
                    old = Encounters.decode(entry.value or b"")
                except NotFoundError:
                    rev = None
                except BadContract as exc:   # unreadable: started afresh
                    log.warning("unreadable encounters entry replaced",
                                extra={"key": key, "error": str(exc)})
                kept = list(old.rooms) if old is not None and old.slot == slot else []
                data = Encounters(slot=slot, rooms=(kept + made)[:MET_SLOT_ROOMS]).encode()
                try:
                    await (kv.create(key, data) if rev is None else kv.update(key, data, last=rev))
                except APIError:
                    continue
                break
            else:
                log.warning("encounters not written", extra={"key": key})

    async def _hold_leases(self) -> None:
        """Each game's lease, ``lease.<game>``, in this lobby's order of the games: renew
        the ones it holds; take over one whose revision stood still for
        ``lobby.match_lease_seconds`` (its holder died, or nobody took it free that long);
        take a free one while this lobby holds fewer than :meth:`_share`; give one up (the
        last it holds in its order) once it held more than its share for a whole lease (a
        lobby joined: the leases spread). Every write is a compare-and-set, so two lobbies
        never both hold a game's lease."""
        now = time.monotonic()
        takable: list[tuple[str, int, str | None, bool]] = []
        for game in self.games:
            rev, holder = await self._read_lease(game)
            if holder == self.instance:
                await self._write_lease(game, rev, holder)
                continue
            self._lead(game, False)
            if self._lease_seen.get(game, (-1, 0.0))[0] != rev:
                self._lease_seen[game] = (rev, now)
            lapsed = now - self._lease_seen[game][1] >= self.cfg.match_lease_seconds
            if lapsed or holder is None:
                takable.append((game, rev, holder, lapsed))
        share = self._share()
        if len(self.leading) <= share:
            self._over_since = None
        elif self._over_since is None:
            self._over_since = now
        elif now - self._over_since >= self.cfg.match_lease_seconds:
            self._over_since = None
            await self._give_up([g for g in self.games if g in self.leading][-1])
            return
        for game, rev, holder, lapsed in takable:
            if lapsed or len(self.leading) < share:
                if lapsed and holder is not None:
                    log.info("matching: the game's lease lapsed, taking it over",
                             extra={"game": game, "from": holder})
                await self._write_lease(game, rev, holder)

    async def _renew(self) -> None:
        """Renew the leases this lobby holds (a long pass keeps them)."""
        for game in [g for g in self.games if g in self.leading]:
            rev, holder = await self._read_lease(game)
            if holder == self.instance:
                await self._write_lease(game, rev, holder)
            else:
                self._lead(game, False)

    async def _read_lease(self, game: str) -> tuple[int, str | None]:
        """The lease's revision and holder; (0, None) when it is free (never written, or
        given up)."""
        try:
            entry = await self._need().get(LEASE_PREFIX + game)
        except NotFoundError:
            return 0, None
        if not entry.value:
            return 0, None
        try:
            return entry.revision or 0, MatchLease.decode(entry.value).owner
        except BadContract as exc:   # nobody holds it: taken over once it stood still
            log.warning("unreadable matcher lease", extra={"game": game, "error": str(exc)})
            return entry.revision or 0, ""

    async def _write_lease(self, game: str, rev: int, holder: str | None) -> None:
        """Hold the lease: create it when it is free, else update it on ``rev``; a lobby
        that loses the race (or the lease) stops matching the game."""
        kv = self._need()
        key = LEASE_PREFIX + game
        mine = MatchLease(owner=self.instance, at=time.time()).encode()
        try:
            await (kv.create(key, mine) if holder is None else kv.update(key, mine, last=rev))
        except APIError:
            self._lead(game, False)
            return
        self._renewed[game] = time.monotonic()
        self._lead(game, True)

    async def _give_up(self, game: str) -> None:
        """Stop matching the game and delete its lease if this lobby still holds it (on the
        revision read): another lobby takes it at its next tick."""
        self._lead(game, False)
        try:
            rev, holder = await self._read_lease(game)
            if holder == self.instance:
                await self._need().delete(LEASE_PREFIX + game, last=rev)
                log.info("matching: the game's lease given up", extra={"game": game})
        except Exception as exc:
            log.info("lease not given up", extra={"game": game, "error": repr(exc)})

    async def _set(self, key: str, rev: int, value: MatchTicket) -> int | None:
        """Write a ticket's new state if it is still at ``rev``; its new revision, or None
        when it moved (cancelled, or another matcher)."""
        try:
            new = await self._need().update(key, value.encode(), last=rev)
        except APIError:
            return None
        self.view[key] = (new, value)
        return new

    async def _pass(self, game: str) -> None:
        """One pass of the game's matcher over the game's tickets."""
        matcher, queued, by = self.matchers[game], self._queued[game], self._made_by[game]
        now = time.time()
        waiting: dict[str, Waiting] = {}
        for key, (rev, value) in list(self.view.items()):
            if value.game != game:
                continue
            state = value.state
            if state == WAITING:
                if now - value.enqueued_at > self.cfg.match_timeout_seconds:
                    await self._set(key, rev, value.replace(
                        state=TIMEOUT, done_at=now, message="no match in time: ask again"))
                    continue
                away = value.away_at
                if away is not None:    # its player's connection dropped: held for him
                    if now - away > self.cfg.reconnect_grace_seconds:
                        log.info("ticket of a player who never came back dropped",
                                 extra={"user": value.user_id})
                        with contextlib.suppress(APIError):
                            await self._need().delete(key, last=rev)
                    continue
                if await self._orphaned(key, rev, value):
                    continue
                waiting[value.ticket_id] = (key, rev, value)
            elif state == CLAIMED and now - (value.claimed_at or 0.0) > CLAIM_STALE:
                await self._set(key, rev, value.replace(state=WAITING))   # its matcher died
            elif state in (MATCHED, TIMEOUT, FAILED) and \
                    now - (value.done_at or 0.0) > DONE_KEEP:
                try:
                    await self._need().delete(key, last=rev)
                except APIError:
                    pass
        tickets = {v.ticket_id for _, v in self._tickets()}
        for ticket_id in [t for t in self._orphans if t not in tickets]:
            del self._orphans[ticket_id]
        units = parties(waiting)
        for ticket_id in list(queued - units.keys()):
            matcher.cancel(ticket_id)
            queued.discard(ticket_id)
        for ticket_id, members in units.items():
            if ticket_id in queued:
                continue
            try:
                matcher.enqueue(ticket_of(*(v for *_, v in members)))
            except MatchError as exc:
                if exc.code != "already_queued":    # a stale twin: it goes in a moment
                    for key, rev, value in members:
                        await self._set(key, rev, value.replace(
                            state=FAILED, done_at=now, message=exc.message))
                continue
            queued.add(ticket_id)
        matches = matcher.run(now)
        self.passes[game] = self.passes.get(game, 0) + 1
        POOL.labels(game).set(matcher.waiting())
        made: list[tuple[float, list[list[int]]]] = []
        try:
            for match in matches:
                entries = []
                for t in match.tickets:
                    queued.discard(t.ticket_id)
                    entries.extend(units[t.ticket_id])
                if await self._make_room(game, match.robots, entries, now):
                    made.append((now, [[p.user_id for p in t.players] for t in match.tickets]))
                if time.monotonic() - min(self._renewed.values(), default=0.0) \
                        > self.cfg.match_lease_seconds / 2:
                    await self._renew()         # many rooms in one pass: keep the leases
                    if game not in self.leading:    # lost it: the rest is the new matcher's
                        return
        finally:
            if made:
                await self._remember(game, by, made)
        await self._publish_stats(game, matcher, waiting)

    async def _make_room(self, game: str, robots: int,
                         entries: list[Waiting], now: float) -> bool:
        """Claim the tickets, create the room, write it into them: whether a room was made."""
        claimed: list[Waiting] = []
        for key, rev, value in entries:
            value = value.replace(state=CLAIMED, claimed_at=now, matcher=self.instance)
            new = await self._set(key, rev, value)
            if new is None:     # cancelled meanwhile: the others wait again
                for k, r, v in claimed:
                    await self._set(k, r, v.replace(state=WAITING))
                return False
            claimed.append((key, new, value))
        first = claimed[0][2]
        spec = registry.get(first.game)
        password = secrets.token_hex(8)
        req = table_pb2.CreateRoomRequest(
            game=common_pb2.Game.ValueType(spec.game_type), base_score=first.stake,
            total_hands=self.cfg.match_total_hands, options_json=first.options_json,
            password=password, creator_id=first.user_id)
        try:
            _, created = await self.app.directory.create_room(req)
        except Reject as exc:
            for k, r, v in claimed:
                await self._set(k, r, v.replace(state=FAILED, done_at=time.time(),
                                                message=f"no room: {exc.message}"))
            return False
        room_id = created.room.room_id
        self.matches += 1
        ROOMS.labels(game).inc()
        for *_, v in claimed:
            WAITS.labels(game).observe(max(0.0, now - v.enqueued_at))
        log.info("matched", extra={"game": game, "room": room_id, "robots": robots,
                                   "users": [v.user_id for *_, v in claimed]})
        done = time.time()
        for k, r, v in claimed:
            await self._set(k, r, v.replace(state=MATCHED, room_id=room_id, password=password,
                                            robots=robots, creator=first.user_id,
                                            matched_at=now, done_at=done))
        return True

    async def _publish_stats(self, game: str, matcher: Matcher,
                             waiting: dict[str, Waiting]) -> None:
        stats: dict[str, float] = {}
        for _, _, value in waiting.values():
            key = _key_of(value)
            estimate = matcher.estimated_wait(key)
            if estimate is not None:
                stats[queue_name(key)] = round(estimate, 1)
        if stats and stats != self.stats.get(game):
            self.stats[game] = stats
            await self._need().put(STATS_PREFIX + game, encode_stats(stats))
