"""One registry of seated commands (paiju/seated.py): the lobby forwards exactly its payloads
to the room's table, the table has a handler for each room command and a game codec that
takes each game action, and every ``ClientFrame`` payload is either the lobby's own or
seated, never both nor neither."""

from __future__ import annotations

import pytest

from paiju import seated
from paiju.v1 import client_pb2
from services.lobby import commands as lobby
from services.table import commands as table
from services.table import variants

LOBBY_OWN = frozenset({"login"}) | lobby.HANDLERS.keys()


def frame_with(payload: str) -> client_pb2.ClientFrame:
    frame = client_pb2.ClientFrame()
    getattr(frame, payload).SetInParent()   # the payload set, every field at its default
    assert frame.WhichOneof("payload") == payload
    return frame


def test_every_client_payload_is_the_lobbys_or_seated_exactly_once() -> None:
    payloads = seated.payloads()
    assert seated.SEATED <= payloads, sorted(seated.SEATED - payloads)
    assert not seated.ROOM_COMMANDS & seated.GAME_ACTIONS
    assert not LOBBY_OWN & seated.SEATED, sorted(LOBBY_OWN & seated.SEATED)
    assert LOBBY_OWN | seated.SEATED == payloads, sorted(payloads - LOBBY_OWN - seated.SEATED)


def test_the_lobby_forwards_the_registrys_seated_commands() -> None:
    assert lobby.SEATED is seated.SEATED


def test_the_table_has_a_handler_for_each_room_command_and_no_other() -> None:
    assert table.ROOM_HANDLERS.keys() == seated.ROOM_COMMANDS
    assert all(callable(h) for h in table.ROOM_HANDLERS.values())


@pytest.mark.parametrize("handlers", [
    {name: print for name in sorted(seated.ROOM_COMMANDS)[1:]},           # one missing
    {**{name: print for name in seated.ROOM_COMMANDS}, "chat": print},    # one too many
])
def test_a_table_whose_handlers_disagree_with_the_registry_does_not_start(
        handlers: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="disagree"):
        seated.room_handlers(handlers)


@pytest.mark.parametrize("payload", sorted(seated.payloads()))
def test_a_payload_is_a_game_action_when_a_games_codec_takes_it(payload: str) -> None:
    """A game action some game's codec makes into an engine action; any other payload none."""
    frame = frame_with(payload)
    taken = [g.name for g in variants.all_games() if g.codec.action(frame) is not None]
    assert bool(taken) == (payload in seated.GAME_ACTIONS), (payload, taken)
