"""The one registry of seated commands: the ``ClientFrame`` payloads a room answers. The lobby
forwards exactly these to the table that owns the sender's room (services/lobby/commands.py);
the table answers a room command with its handler and turns a game action into an engine
action through the room's game codec (services/table/commands.py, services/table/codec.py).
Every other payload is the lobby's own (``login`` and its ``HANDLERS``). A test holds the
three to these sets and to the protos' ``ClientFrame.payload`` oneof
(tests/unit/services/test_seated_commands.py); the table refuses to start with a room
command it has no handler for (:func:`room_handlers`)."""

from __future__ import annotations

from collections.abc import Mapping
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

