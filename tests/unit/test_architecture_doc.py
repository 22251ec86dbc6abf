"""docs/architecture.md names only what exists, in whole sentences.

Every backticked name in the page is classified and checked against the code and the protos:

- paths (``services/table/actor.py``, ``clients/web/``) exist in the repository;
- dotted modules (``services.table.stream.RING_SIZE``, ``clients.robot``) resolve to a
  module file and, for the rest, a top-level name of it and an attribute of that class;
- NATS subjects (``room.<id>.events``; placeholders ``<x>``, ``*`` or capitals in the
  Mermaid diagram) are subjects the code builds (string constants and f-strings of
  ``services/`` and ``clients/``, with each formatted value as ``*``);
- ``name`` bucket is a KV bucket of ``services/common/bus.py``; an all-capitals name is a
  JetStream stream of it;
- ``Service.Method`` is an rpc of that service in ``protos/``; ``Message.field`` a field or
  nested type of the protos; ``Class.attr`` an attribute of a Python class of ours;
- a CamelCase name is a proto message, enum or service, or a Python class of ours;
- ``section.key`` is a config key (services/common/config.py) unless it is a subject.

The ring size the page states is the code's. A name that no longer exists fails the test
with the name and what it was taken for. A paragraph or list item that starts mid-sentence,
or a line indented unlike the item it continues (what an edit that lost a first line
leaves), fails too.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import pytest

from services.common import bus
from services.common.config import Config
from services.table.stream import RING_SIZE

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
PACKAGES = ("services", "games", "clients", "paiju", "bench", "scripts", "tests")
SUBJECT_ROOTS = ("room", "table", "session", "settle", "lobby")
CONFIG_SECTIONS = tuple(f.name for f in dataclasses.fields(Config) if f.name != "env")

_PLACEHOLDER = re.compile(r"^(<[a-z_]+>|\*|[A-Z][A-Z_]*)$")
_SUBJECT = re.compile(r"^[a-z_]+(\.([a-z_]+|<[a-z_]+>|\*))+$")
_MERMAID_SUBJECT = re.compile(r"\b(?:" + "|".join(SUBJECT_ROOTS) + r")\.[A-Za-z_.*]*[A-Za-z_*]")
_CODE_SUBJECT = re.compile(r"^[a-z_]+(\.([a-z_]+|\*))+$")


@dataclass
class Known:
    """What exists, read from the code and the protos."""

    subjects: set[str]
    buckets: set[str]
    streams: set[str]
    rpcs: dict[str, set[str]]             # service -> its rpcs
    proto_names: set[str]                 # messages, enums, services (nested ones too)
    proto_members: set[str]               # field names and nested type names
    classes: dict[str, set[str]]          # Python class name -> attributes (any module)
    config: dict[str, set[str]]           # section -> keys


@dataclass
class Report:
    problems: list[str] = field(default_factory=list)
    checked: Counter[str] = field(default_factory=Counter)

    def check(self, kind: str, name: str, ok: bool) -> None:
        self.checked[kind] += 1
        if not ok:
            self.problems.append(f"{kind} {name!r} does not exist")


# ---------------------------------------------------------------------- what exists
def _python_files(*packages: str) -> list[Path]:
    return [p for pkg in packages for p in sorted((ROOT / pkg).rglob("*.py"))
            if "paiju/v1" not in p.as_posix()]


def _string_of(node: ast.AST) -> str | None:
    """A string constant, or an f-string with each formatted value as ``*``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(str(v.value) if isinstance(v, ast.Constant) else "*"
                       for v in node.values)
    return None


def _class_attributes(node: ast.ClassDef) -> set[str]:
    names: set[str] = set()
    for item in node.body:
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(item.name)
        elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            names.add(item.target.id)
        elif isinstance(item, ast.Assign):
            names.update(t.id for t in item.targets if isinstance(t, ast.Name))
    return names


def _proto_known() -> tuple[dict[str, set[str]], set[str], set[str]]:
    rpcs: dict[str, set[str]] = {}
    names: set[str] = set()
    members: set[str] = set()
    for path in sorted((ROOT / "protos").rglob("*.proto")):
        text = re.sub(r"//[^\n]*", "", path.read_text(encoding="utf-8"))
        for name in re.findall(r"\b(?:message|enum|service)\s+(\w+)\s*\{", text):
            names.add(name)
            members.add(name)
        members.update(re.findall(r"\b(\w+)\s*=\s*\d+", text))
        for service, body in re.findall(r"\bservice\s+(\w+)\s*\{(.*?)\n\}", text, re.S):
            rpcs.setdefault(service, set()).update(re.findall(r"\brpc\s+(\w+)\s*\(", body))
    return rpcs, names, members


@cache
def known() -> Known:
    subjects: set[str] = set()
    classes: dict[str, set[str]] = {}
    for path in _python_files("services", "clients", "games", "paiju"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            text = _string_of(node)
            if text is not None and _CODE_SUBJECT.match(text):
                subjects.add(text)
            if isinstance(node, ast.ClassDef):
                classes.setdefault(node.name, set()).update(_class_attributes(node))
    rpcs, proto_names, proto_members = _proto_known()
    consts = {k: v for k, v in vars(bus).items() if isinstance(v, str)}
    config = {s: {f.name for f in dataclasses.fields(getattr(Config(), s))}
              for s in CONFIG_SECTIONS}
    return Known(subjects=subjects,
                 buckets={v for k, v in consts.items() if k.endswith("_BUCKET")},
                 streams={v for k, v in consts.items() if k.endswith("_STREAM")},
                 rpcs=rpcs, proto_names=proto_names, proto_members=proto_members,
                 classes=classes, config=config)


# ---------------------------------------------------------------------- the checks
def _normal_subject(subject: str) -> str:
    return ".".join("*" if _PLACEHOLDER.match(seg) else seg for seg in subject.split("."))


def _module_exists(dotted: str, k: Known) -> bool:
    """``pkg.mod``, ``pkg.mod.name`` or ``pkg.mod.Class.attr``."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        base = ROOT.joinpath(*parts[:cut])
        source = base.with_suffix(".py")
        if not source.is_file():
            source = base / "__init__.py"
        if not source.is_file():
            continue
        rest = parts[cut:]
        if not rest:
            return True
        if len(rest) > 2:
            return False
        tree = ast.parse(source.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                if node.name == rest[0]:
                    return len(rest) == 1 or (isinstance(node, ast.ClassDef)
                                              and rest[1] in _class_attributes(node))
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, ast.Name) and t.id == rest[0] for t in targets):
                    return len(rest) == 1
        return False
    return False


def _check_token(token: str, k: Known, report: Report) -> None:
    name = token.split(" = ")[0].strip()
    if " " in name or not name:
        return
    first = re.split(r"[./]", name)[0]
    if "/" in name and not name.startswith("/") and "<" not in name:
        report.check("path", name, any(ROOT.glob(name)) if "*" in name
                     else (ROOT / name).exists())
    elif "." in name and first in PACKAGES and not name.endswith((".py", ".md")):
        report.check("module", name, _module_exists(name, k))
    elif _SUBJECT.match(name) and first in SUBJECT_ROOTS + CONFIG_SECTIONS:
        subject = _normal_subject(name)
        if subject in k.subjects:
            report.check("subject", name, True)
        elif "*" in subject or first not in CONFIG_SECTIONS or name.count(".") != 1:
            report.check("subject", name, False)
        else:
            section, key = name.split(".")
            report.check("config key", name, key in k.config[section])
    elif re.fullmatch(r"[A-Z]{3,}", name):
        report.check("stream", name, name in k.streams)
    elif m := re.fullmatch(r"([A-Z]\w*)\.([A-Za-z_]\w*)", name):
        owner, member = m.groups()
        if owner in k.rpcs:
            report.check("rpc", name, member in k.rpcs[owner])
        elif owner in k.classes:
            report.check("class attribute", name, member in k.classes[owner])
        else:
            report.check("proto member", name,
                         owner in k.proto_names and member in k.proto_members)
    elif re.fullmatch(r"[A-Z][a-z]\w*", name):
        report.check("message or class", name, name in k.proto_names or name in k.classes)


def check_doc(text: str, k: Known) -> Report:
    report = Report()
    for lang, body in re.findall(r"^```(\w*)\n(.*?)^```", text, re.S | re.M):
        if lang == "mermaid":
            for subject in _MERMAID_SUBJECT.findall(body):
                report.check("subject", subject, _normal_subject(subject) in k.subjects)
    prose = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    for token in re.findall(r"`([^`\n]+)`", prose):
        _check_token(token, k, report)
    for bucket in re.findall(r"`([a-z_]+)` bucket", prose):
        report.check("bucket", bucket, bucket in k.buckets)
    for size in re.findall(r"ring of the room's last (\d+) messages", prose):
        report.checked["ring size"] += 1
        if int(size) != RING_SIZE:
            report.problems.append(f"ring size {size} is not the code's {RING_SIZE}")
    return report


_ITEM = re.compile(r"^(- |\d+\. )")


def broken_lines(text: str) -> list[str]:
    """Prose lines that cannot be a whole sentence's start or its continuation: a list item
    or paragraph that starts mid-sentence (lowercase), or a line indented otherwise than as
    the list item it continues (a lost first line leaves such a tail)."""
    problems: list[str] = []
    prose = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    indent: int | None = None      # the continuation indent of the list item we are in
    new_block = True
    for n, line in enumerate(prose.splitlines(), 1):
        if not line.strip():
            new_block = True
            continue
        if line.startswith(("#", "|")):
            indent, new_block = None, True
            continue
        item = _ITEM.match(line)
        if item:
            indent = len(item.group(1))
            start = line[indent:]
        elif line[0] == " ":
            lead = len(line) - len(line.lstrip())
            if indent is None or lead != indent:
                problems.append(f"line {n} indented {lead} (list item continues at "
                                f"{indent}): {line.strip()[:40]!r}")
            new_block = False
            continue
        else:
            if not new_block:
                continue   # the paragraph goes on
            indent, start = None, line
        if start[:1].islower():
            problems.append(f"line {n} starts mid-sentence: {start[:40]!r}")
        new_block = False
    return problems


# ---------------------------------------------------------------------- tests
def test_no_paragraph_or_list_item_of_the_page_starts_mid_sentence() -> None:
    assert broken_lines(DOC.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("snippet", [
    "- A bullet that ends here.\n pauses each room between two\n  actions.",
    "- On SIGTERM a table drains.\n- pauses each room between two actions.",
    "Intro.\n\npauses each room between two actions.",
    "1. First step,\n  continued at two spaces.",
])
def test_a_line_that_starts_mid_sentence_is_reported(snippet: str) -> None:
    assert broken_lines(snippet) != []


def test_whole_items_and_paragraphs_pass() -> None:
    text = ("Intro line one\nand its next line.\n\n- `tables` bucket first,\n  then more.\n"
            "- **Bold** item.\n\n1. Step\n   continued.\n\n| a | b |\n|---|---|\n"
            "```\n lowercase in a fence\n```\n")
    assert broken_lines(text) == []


def test_every_name_in_the_architecture_doc_exists() -> None:
    report = check_doc(DOC.read_text(encoding="utf-8"), known())
    assert report.problems == []
    # the page is checked, not skipped: each kind of name is found in it
    for kind, least in (("path", 30), ("module", 5), ("subject", 10), ("bucket", 4),
                        ("stream", 2), ("rpc", 8), ("config key", 3),
                        ("message or class", 5), ("class attribute", 2), ("ring size", 1)):
        assert report.checked[kind] >= least, (kind, report.checked)


@pytest.mark.parametrize("snippet, problem", [
    ("the fold (`services/table/folding.py`)", "path 'services/table/folding.py'"),
    ("engines in `games/*/rules.py`", "path 'games/*/rules.py'"),
    ("see `services.table.stream.RING_BYTES`", "module 'services.table.stream.RING_BYTES'"),
    ("tool `clients.replayer`", "module 'clients.replayer'"),
    ("events on `room.<id>.messages`", "subject 'room.<id>.messages'"),
    ("kicks on `session.logout.<uid>`", "subject 'session.logout.<uid>'"),
    ("```mermaid\nA->>B: user.ID.inbox and room.ID.state\n```", "subject 'room.ID.state'"),
    ("mutes on `lobby.silence`", "config key 'lobby.silence'"),
    ("the `leases` bucket", "bucket 'leases'"),
    ("the stream `ROOMEVENTS`", "stream 'ROOMEVENTS'"),
    ("decided by `Arbiter.Resolve2`", "rpc 'Arbiter.Resolve2'"),
    ("`Table.Join` for joins", "rpc 'Table.Join'"),
    ("a `RoomSnapshot` message", "message or class 'RoomSnapshot'"),
    ("`RoomActor.apply_record`", "class attribute 'RoomActor.apply_record'"),
    ("`RoomInfo.room_owner`", "proto member 'RoomInfo.room_owner'"),
    ("from the table's ring of the room's last 256 messages", "ring size 256"),
])
def test_a_name_that_is_gone_is_reported(snippet: str, problem: str) -> None:
    report = check_doc(snippet, known())
    assert any(p.startswith(problem) for p in report.problems), report.problems


def test_names_that_exist_pass() -> None:
    text = ("`services/table/actor.py` `services.table.core.TableCore.answer` `clients.robot` "
            "`room.<id>.events` `table.<address>.commands` `lobby.mute` `settle.<room>` "
            "`lobby.spectator_delay = 2` the `seats` bucket `SETTLE` `Lobby.Connect` "
            "`RoomEvents` `RoomActor.record` `RoomInfo.spectators`\n"
            "```mermaid\nA->>B: table.ADDRESS.commands\n```")
    report = check_doc(text, known())
    assert report.problems == []
    assert sum(report.checked.values()) == 15


@pytest.mark.parametrize("path", sorted((ROOT / "docs").glob("*.md")), ids=lambda p: p.name)
def test_every_doc_states_the_code_s_ring_size(path: Path) -> None:
    """The refill ring's size, wherever a page states it (it drifted to 256 once)."""
    text = " ".join(path.read_text(encoding="utf-8").split())
    stated = re.findall(r"ring of the room's last (\d+) messages", text)
    assert all(int(n) == RING_SIZE for n in stated), (path.name, stated, RING_SIZE)
