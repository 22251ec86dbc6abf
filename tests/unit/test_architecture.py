"""The dependency direction of ARCHITECTURE.md, checked on the import statements."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SERVICES = ("lobby", "table", "arbiter", "records")
# what a pure engine may not touch: I/O, clocks, global randomness, the wire, asyncio
ENGINE_FORBIDDEN = {"asyncio", "socket", "time", "datetime", "random", "os", "grpc", "nats",
                    "google", "paiju", "services", "clients", "sqlalchemy", "aiohttp", "secrets",
                    "subprocess", "threading"}


def imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
    return out


def files(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("path", files("games"), ids=lambda p: str(p.relative_to(ROOT)))
def test_engines_are_pure(path: Path) -> None:
    bad = {name for name in imports(path) if name.split(".")[0] in ENGINE_FORBIDDEN}
    if path.parts[-2] == "tools":  # the rules tools read stdin and write stdout
        bad -= {"sys"}
    assert not bad, f"{path.name} imports {sorted(bad)}"


@pytest.mark.parametrize("svc", SERVICES)
def test_services_never_import_each_other(svc: str) -> None:
    others = {f"services.{o}" for o in SERVICES if o != svc}
    for path in files(f"services/{svc}"):
        bad = {n for n in imports(path) if any(n == o or n.startswith(o + ".") for o in others)}
        assert not bad, f"{path} imports {sorted(bad)}"


def test_common_and_clients_depend_on_no_service() -> None:
    for pkg in ("services/common", "clients", "paiju"):
        for path in files(pkg):
            bad = {n for n in imports(path)
                   if any(n.startswith(f"services.{s}") for s in SERVICES)}
            if pkg == "clients":
                bad |= {n for n in imports(path) if n.startswith("services")}
            assert not bad, f"{path} imports {sorted(bad)}"


def proto_games() -> dict[str, int]:
    """The ``Game`` enum of common.proto: name -> number (GAME_UNSPECIFIED left out)."""
    text = (ROOT / "protos/paiju/v1/common.proto").read_text(encoding="utf-8")
    body = re.search(r"enum Game \{(.*?)\}", text, re.S)
    assert body is not None, "common.proto has no enum Game"
    pairs = re.findall(r"^\s*([A-Z_]+)\s*=\s*(\d+)\s*;", body.group(1), re.M)
    return {name: int(number) for name, number in pairs if int(number) != 0}


def test_every_game_of_the_proto_has_exactly_one_registry_entry() -> None:
    from games import registry

    specs = registry.all()
    assert sorted(s.game_type for s in specs) == sorted(proto_games().values())
    assert len({s.game_type for s in specs}) == len(specs)
    assert len({s.name for s in specs}) == len(specs)
    for enum_name, number in proto_games().items():
        assert registry.by_type(number).name == enum_name.lower()


# A game's engine and bots modules: outside games/, services and clients reach them only
# through games.registry (adding a game is one registry entry, not edits where games are used).
def _game_modules() -> tuple[str, ...]:
    from games import registry

    engines = {spec.new_hand.__module__ for spec in registry.all()}
    return (*sorted(engines), "games.bots")


GAME_MODULES = _game_modules()


@pytest.mark.parametrize("pkg", ["services", "clients"])
def test_services_and_clients_find_games_in_the_registry(pkg: str) -> None:
    for path in files(pkg):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        named: set[str] = set(imports(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                named.update(f"{node.module}.{alias.name}" for alias in node.names)
        bad = {n for n in named if any(n == m or n.startswith(m + ".") for m in GAME_MODULES)}
        assert not bad, f"{path} imports {sorted(bad)}: look the game up in games.registry"


# ``.flush()`` calls awaited or handed on that are not nats-py's: the bus's own, and the
# table's directory writes (services/table/directory.py)
NOT_NATS_FLUSHES = {"bus", "self.directory", "core.directory"}


def test_nats_connections_are_flushed_through_the_bus() -> None:
    """nats-py's ``flush()`` is no barrier (its PING can overtake a SUB or a PUB still in the
    client's buffer, so a message published by another connection right after it may find
    no subscriber) and a cancelled one ends the connection's read loop: every flush goes
    through ``bus.sync`` (a barrier) or ``bus.flush`` (one that may be abandoned)."""
    def is_flush(node: ast.AST) -> bool:
        return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr == "flush" and ast.unparse(node.func.value) not in NOT_NATS_FLUSHES

    bad = []
    for pkg in ("services", "clients", "paiju", "bench", "tests", "scripts", "deploy"):
        for path in files(pkg):
            if path == ROOT / "services/common/bus.py":
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                # awaited, or handed to another call (wait_for, create_task, gather): a file's
                # flush is a statement of its own
                flushes = [node.value] if isinstance(node, ast.Await) else \
                    list(node.args) if isinstance(node, ast.Call) else []
                bad.extend(f"{path.relative_to(ROOT)}:{f.lineno}" for f in flushes
                           if is_flush(f))
    assert not bad, f"a NATS flush outside services.common.bus: {bad}"


def test_buckets_are_watched_through_the_bus() -> None:
    """nats-py's watcher can end a bucket's first values (its None) before values already
    on their way, and a watch left unstopped keeps its consumer on the server: every
    ``watchall`` of a bucket in the services and clients is a ``bus.KeyWatch``'s."""
    bad = []
    for pkg in ("services", "clients", "paiju"):
        for path in files(pkg):
            if path == ROOT / "services/common/bus.py":
                continue
            bad.extend(f"{path.relative_to(ROOT)}:{node.lineno}"
                       for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                       if isinstance(node, ast.Attribute) and node.attr == "watchall")
    assert not bad, f"a bucket watched outside services.common.bus.KeyWatch: {bad}"
