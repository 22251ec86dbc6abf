"""The one registry of seated commands: the ``ClientFrame`` payloads a room answers. The lobby
forwards exactly these to the table that owns the sender's room (services/lobby/commands.py);
the table answers a room command with its handler and turns a game action into an engine
action through the room's game codec (services/table/commands.py, services/table/codec.py).
Every other payload is the lobby's own (``login`` and its ``HANDLERS``). A test holds the
three to these sets and to the protos' ``ClientFrame.payload`` oneof
(tests/unit/services/test_seated_commands.py); the table refuses to start with a room
command it has no handler for (:func:`room_handlers`).

It is also the registry of the lobby's own commands to a table (``TableCommand.kind``,
:class:`LobbyKind`): the lobby sends only these, and the table refuses to start unless it
has exactly one handler for each (:func:`kind_handlers`)."""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Final, TypeVar

from paiju.v1 import client_pb2

# answered by the room itself (the table's Commands), whatever its game
ROOM_COMMANDS: Final = frozenset({
    "ask_ready", "ask_exit", "refresh_room", "ask_geo", "cancel_entrust", "ask_dismiss",
    "report_dismiss", "set_client_seed", "add_robots"})
# a move of the room's game: the game's codec makes it an engine action
GAME_ACTIONS: Final = frozenset({
    "mahjong_action",                                  # XueZhan, Changsha
    "dd_ask_alone", "dd_choose_friend", "dd_ask_out",  # Dadun
    "game_action",                                     # any game without typed actions
})
SEATED: Final = ROOM_COMMANDS | GAME_ACTIONS


def payloads() -> frozenset[str]:
    """Every payload of the protos' ``ClientFrame`` (its ``payload`` oneof)."""
    oneof = client_pb2.ClientFrame.DESCRIPTOR.oneofs_by_name["payload"]
    return frozenset(f.name for f in oneof.fields)


H = TypeVar("H")


def room_handlers(handlers: Mapping[str, H]) -> dict[str, H]:
    """``handlers`` (payload -> its handler) as a dict, or ValueError unless it has exactly
    one handler for each of :data:`ROOM_COMMANDS` and nothing else."""
    missing, unknown = ROOM_COMMANDS - handlers.keys(), handlers.keys() - ROOM_COMMANDS
    if missing or unknown:
        raise ValueError(f"room command handlers disagree with paiju.seated: no handler for "
                         f"{sorted(missing)}, not a room command: {sorted(unknown)}")
    return dict(handlers)



class LobbyKind(StrEnum):
    """``TableCommand.kind``: what a lobby (or its operator console) asks a table beside a
    player's frame (an empty kind)."""
    WATCH = "watch"                  # a session starts (or resyncs) watching the room
    UNWATCH = "unwatch"              # ... and stops
    SNAPSHOT = "snapshot"            # the seat's view of the room (a resumed stream)
    ONLINE = "online"                # the seat's session is connected (at login)
    OFFLINE = "offline"              # ... and gone
    EVENTS_SINCE = "events_since"    # the room's messages after a position (a lobby missed some)
    OP_ADD_ROBOTS = "op_add_robots"  # an operator seats robots: no seat, any room
    OP_DISMISS = "op_dismiss"        # an operator dismisses the room


# answered by the table from the room's stream ring, without the room's task
STREAM_KINDS: Final = frozenset({LobbyKind.EVENTS_SINCE})
# answered by the room itself (the table's Commands)
ROOM_KINDS: Final = frozenset(LobbyKind) - STREAM_KINDS


def lobby_kind(kind: str) -> LobbyKind:
    """``kind`` as it came from the wire, or ValueError naming it when it is no lobby kind."""
    try:
        return LobbyKind(kind)
    except ValueError:
        raise ValueError(f"unknown table command kind {kind!r}") from None


def kind_handlers(handlers: Mapping[LobbyKind, H]) -> dict[LobbyKind, H]:
    """``handlers`` (kind -> its handler) as a dict, or ValueError unless it has exactly one
    handler for each of :data:`ROOM_KINDS` and nothing else."""
    missing, unknown = ROOM_KINDS - handlers.keys(), handlers.keys() - ROOM_KINDS
    if missing or unknown:
        raise ValueError(f"table command kind handlers disagree with paiju.seated: no handler "
                         f"for {sorted(missing)}, not a room kind: {sorted(unknown)}")
    return dict(handlers)
