"""The lobbies' messages to each other: the newest login of a user (``session.kick.<uid>``)
and an operator's chat mute (``lobby.mute``), both core NATS publishes; written by
services/lobby/hub.py and the console (services/lobby/console/actions.py), read by every
lobby (hub.py, moderation.py). docs/services.md, "Events", lists them."""

from __future__ import annotations

from paiju.contracts.typed import Contract


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
