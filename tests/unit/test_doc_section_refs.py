"""Every place that cites a section of a page in docs/ names a section that exists.

The code, the protos, the configs, the deploy files, the tests and the docs point readers at
sections as ``docs/services.md, "Matchmaking"`` (also without the comma, after a backticked
path, across a comment's line break, or as ``docs/protocol.md's "Dou Dizhu"``). The cited
name must be a heading of that page (any level, without its number: "Errors" for "## 8.
Errors"), whole or its beginning ("Guest login" for "Guest login (dev)"); a page that does
not exist fails too. A renamed section then fails
here instead of sending a reader to nothing.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("services", "clients", "games", "paiju", "protos", "bench", "scripts", "deploy",
           "config", "tests", "docs")
SUFFIXES = {".py", ".js", ".html", ".proto", ".md", ".toml", ".yaml", ".yml", ".sh", ".sql"}

# docs/x.md, then an optional closing backtick or 's, an optional comma, white space that
# may cross a line break and its comment leader (#, //, *), then the quoted section name
_REF = re.compile(r"(docs/[a-z0-9_-]+\.md)`?(?:'s)?,?(?:\s|#|//|\*)+\"([^\"\n]+)\"")
_HEADING = re.compile(r"^#+\s+(?:\d+(?:\.\d+)*\.?\s+)?(.+?)\s*#*$", re.M)   # "## 8. Errors": Errors


@cache
def headings(page: str) -> tuple[str, ...] | None:
    path = ROOT / page
    if not path.is_file():
        return None
    text = re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.S | re.M)
    return tuple(_HEADING.findall(text))


def refs_in(text: str) -> list[tuple[int, str, str]]:
    """(line, page, section) of every section reference in ``text``."""
    return [(text.count("\n", 0, m.start()) + 1, m.group(1), m.group(2))
            for m in _REF.finditer(text)]


def problem(page: str, section: str) -> str | None:
    heads = headings(page)
    if heads is None:
        return f"{page} does not exist"
    if any(h == section or h.startswith(section) for h in heads):
        return None
    return f'{page} has no section "{section}"'


def files() -> list[Path]:
    out = [ROOT / "README.md"]
    for top in SOURCES:
        out += [p for p in sorted((ROOT / top).rglob("*"))
                if p.suffix in SUFFIXES and p.is_file() and "paiju/v1" not in p.as_posix()
                and p != Path(__file__).resolve()]   # this file's examples cite wrong ones
    return out


def test_every_cited_docs_section_exists() -> None:
    found, bad = 0, []
    for path in files():
        text = path.read_text(encoding="utf-8", errors="replace")
        for line, page, section in refs_in(text):
            found += 1
            if (why := problem(page, section)) is not None:
                bad.append(f"{path.relative_to(ROOT)}:{line}: {why}")
    assert bad == []
    assert found >= 50, found   # the references are found, not skipped


@pytest.mark.parametrize("snippet, page, section", [
    ('"""The combinations (docs/doudizhu.md, "Plays")."""', "docs/doudizhu.md", "Plays"),
    ('# Timing (docs/architecture.md,\n# "Failover"): ...', "docs/architecture.md", "Failover"),
    ("// see `docs/services.md`, \"Limits\"", "docs/services.md", "Limits"),
    ('docs/protocol.md\'s "Bidding"', "docs/protocol.md", "Bidding"),
    ('(docs/nothing.md, "Overview")', "docs/nothing.md", "Overview"),
])
def test_a_missing_section_is_reported(snippet: str, page: str, section: str) -> None:
    assert [(p, s) for _, p, s in refs_in(snippet)] == [(page, section)]
    assert problem(page, section) is not None


@pytest.mark.parametrize("page, section", [
    ("docs/doudizhu.md", "Combinations"),                 # a ### heading
    ("docs/services.md", "Guest login"),                  # the start of "Guest login (dev)"
    ("docs/architecture.md", "Ownership and fencing"),
    ("docs/protocol.md", "Errors"),                       # "## 8. Errors"
])
def test_an_existing_section_passes(page: str, section: str) -> None:
    assert problem(page, section) is None


def test_a_quoted_path_is_not_a_reference() -> None:
    assert refs_in('DOC = ROOT / "docs/services.md").read_text(encoding="utf-8")') == []
