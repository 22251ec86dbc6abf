"""One registry of seated commands (paiju/seated.py): the lobby forwards exactly its payloads
to the room's table, the table has a handler for each room command and a game codec that
takes each game action, and every ``ClientFrame`` payload is either the lobby's own or
seated, never both nor neither. The same for the lobby's own commands to a table
(``TableCommand.kind``, ``seated.LobbyKind``): the lobby sends each, the table answers each."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from paiju import seated
from paiju.v1 import client_pb2
from services.lobby import commands as lobby
from services.table import commands as table
from services.table import core as table_core
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


LOBBY_DIR = Path(lobby.__file__).parent


def kinds_named_in(path: Path) -> set[str]:
    """The ``LobbyKind.X`` members ``path`` names, and the string literals it passes as a
    ``kind=`` argument (which the registry forbids: the lobby names kinds by the enum)."""
    named: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id == "LobbyKind"):
            named.add(node.attr)
        if isinstance(node, ast.keyword) and node.arg == "kind" \
                and isinstance(node.value, ast.Constant) and node.value.value:
            raise AssertionError(f"{path}: kind={node.value.value!r} is not a LobbyKind")
    return named


def test_the_lobby_sends_every_lobby_kind_and_names_each_by_the_registry() -> None:
    named: set[str] = set()
    for path in sorted(LOBBY_DIR.rglob("*.py")):
        named |= kinds_named_in(path)
    assert named == {k.name for k in seated.LobbyKind}, \
        sorted(named ^ {k.name for k in seated.LobbyKind})


def test_the_table_answers_every_lobby_kind_once() -> None:
    """The room answers ROOM_KINDS (its KIND_HANDLERS); the table itself the stream kinds,
    which core.py names."""
    assert table.KIND_HANDLERS.keys() == seated.ROOM_KINDS
    assert seated.ROOM_KINDS | seated.STREAM_KINDS == set(seated.LobbyKind)
    assert not seated.ROOM_KINDS & seated.STREAM_KINDS
    core_names = {node.attr for node in ast.walk(ast.parse(Path(table_core.__file__).read_text()))
                  if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute)
                  and node.value.attr == "LobbyKind"}
    assert {k.name for k in seated.STREAM_KINDS} <= core_names


@pytest.mark.parametrize("handlers", [
    {kind: print for kind in sorted(seated.ROOM_KINDS)[1:]},                    # one missing
    {**{kind: print for kind in seated.ROOM_KINDS}, seated.LobbyKind.EVENTS_SINCE: print},
])
def test_a_table_whose_kind_handlers_disagree_with_the_registry_does_not_start(
        handlers: dict[seated.LobbyKind, object]) -> None:
    with pytest.raises(ValueError, match="disagree"):
        seated.kind_handlers(handlers)


def test_a_kind_from_the_wire_that_is_no_lobby_kind_is_named_in_the_error() -> None:
    assert seated.lobby_kind("watch") is seated.LobbyKind.WATCH
    with pytest.raises(ValueError, match="unknown table command kind 'teleport'"):
        seated.lobby_kind("teleport")
