"""The lobbies' messages to each other: the newest login of a user (``session.kick.<uid>``)
and an operator's chat mute (``lobby.mute``), both core NATS publishes; written by
services/lobby/hub.py and the console (services/lobby/console/actions.py), read by every
lobby (hub.py, moderation.py). docs/services.md, "Events", lists them. Then the entries of
the ``match_tickets`` bucket (docs/services.md, "Matchmaking"), which the lobbies write and
read (services/lobby/matchmaker.py, seating.py)."""

from __future__ import annotations

from typing import Literal

import msgspec

from paiju.contracts.typed import BadContract, Contract


class SessionKick(Contract, frozen=True, kw_only=True):
    """``session.kick.<uid>``: ``session_id`` is the user's newest session; every lobby ends
    the user's older sessions (KickOut) and remembers the generation ("Login tokens")."""

    session_id: str
    login_at: float              # wall-clock seconds of that login
    gen: int                     # its token's generation (an operator's kick: above any)
    expiry: float                # its token's expiry, wall-clock seconds (0: none)
    token_id: str = ""           # a digest of its token (tokens.token_id); none for an
                                 # operator's kick


class Mute(Contract, frozen=True, kw_only=True):
    """``lobby.mute``: the user's chat is refused (ERR_MUTED) until ``until`` (wall-clock
    seconds; a time past lifts the mute)."""

    user_id: int
    until: float


# -- matchmaking: the ``match_tickets`` KV bucket (services/lobby/matchmaker.py) -----------

TicketState = Literal["waiting", "claimed", "matched", "timeout", "failed"]


class MatchTicket(Contract, frozen=True, kw_only=True, omit_defaults=True):
    """``t.<user id>``: a player's match request and its outcome. The asking lobby writes
    it ``waiting``; the game's active matcher moves it (``claimed`` → ``matched``, or
    ``timeout`` / ``failed``), every move a compare-and-set. The optional fields are absent
    until set (and ``away_at`` again once its player is back)."""

    ticket_id: str
    user_id: int
    session_id: str              # the session that asked, or took it over after a login
    lobby: str                   # the instance of that session's lobby
    game: str
    rule_set: str                # the options that differ from the game's defaults
    options_json: str            # the options to create the room with
    stake: int
    region: str
    ranked: bool
    mu: float                    # the player's rating when he asked
    sigma: float
    ip: str                      # "" when it says nothing of where he is (loopback)
    lat: float
    lng: float
    enqueued_at: float           # wall-clock seconds: the wait counts from here
    state: TicketState
    party: list[int]             # the party's user ids, his own included ([]: alone)
    away_at: float | None = None      # his connection dropped then: held for his return
    claimed_at: float | None = None   # claimed: when, and by which lobby's matcher
    matcher: str | None = None
    room_id: int | None = None        # matched: the room, its password, the robots the
    password: str | None = None       # creator adds, who the creator is, and when
    robots: int | None = None
    creator: int | None = None
    matched_at: float | None = None
    done_at: float | None = None      # matched, timeout or failed: when
    message: str | None = None        # timeout or failed: why


class MatchLease(Contract, frozen=True, kw_only=True):
    """``lease.<game>``: the lobby running the game's matcher, renewed (compare-and-set)
    every tick."""

    owner: str                   # that lobby's instance
    at: float                    # wall-clock seconds of the last renewal


class LobbyPresence(Contract, frozen=True, kw_only=True):
    """``l.<lobby instance>``: a live lobby, rewritten each third of a matcher lease."""

    at: float


class PresenceAsk(Contract, frozen=True, kw_only=True):
    """``p.<user id>`` as written by a lobby asking whether that player is online (a party
    member); the lobby holding his session answers with :class:`PresenceAnswer`."""

    ask: str                     # a nonce: each ask gets its own answer
    at: float


class PresenceAnswer(Contract, frozen=True, kw_only=True):
    """``p.<user id>`` answered: the player is online there, in that room (0: none)."""

    here: bool
    room_id: int
    lobby: str


def presence_of(raw: bytes) -> PresenceAsk | PresenceAnswer:
    """A ``p.<user id>`` value: an answer (it has ``here``) or an ask; BadContract when it
    is neither."""
    try:
        return PresenceAnswer.decode(raw)
    except BadContract:
        return PresenceAsk.decode(raw)


class MetRoom(Contract, frozen=True, kw_only=True):
    """One room a matcher made: the user ids of each of its tickets (a party together)."""

    at: float
    groups: list[list[int]]
    game: str
    by: str                      # the id of the matcher's run that made it


class Encounters(Contract, frozen=True, kw_only=True):
    """``e.<slot>``: the rooms the matchers made in one minute (``slot``: minutes since the
    epoch), so that strangers are limited across all games and matcher restarts."""

    slot: int
    rooms: list[MetRoom]


# ``stats.<game>``: queue name -> the median wait of its recent matches (seconds), a bare
# JSON object
_STATS = msgspec.json.Decoder(dict[str, float])


def encode_stats(stats: dict[str, float]) -> bytes:
    return msgspec.json.encode(stats)


def decode_stats(raw: bytes) -> dict[str, float]:
    try:
        return _STATS.decode(raw)
    except msgspec.DecodeError as exc:
        raise BadContract(f"match stats: {exc}") from None
