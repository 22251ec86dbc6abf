"""No import cycle inside a service package (issue 10: "no import cycle"): for every package
under services/, the modules it imports from itself, anywhere in a file (at the top, in a
function, under ``TYPE_CHECKING``: a cycle for types only is still a cycle), form a graph
without cycles. Importing ``a.b.c`` also runs the packages ``a.b`` and ``a``, so those count
as imported too."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SERVICES = sorted(p for p in (ROOT / "services").iterdir()
                  if p.is_dir() and (p / "__init__.py").is_file())


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph(package: Path, root: Path) -> dict[str, set[str]]:
    """Module -> the modules of the same package it imports (with their parent packages)."""
    modules = {module_name(p, root): p for p in package.rglob("*.py")}
    prefix = module_name(package / "__init__.py", root)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:   # relative: from the module's package
                    anchor = name.split(".") if is_package else name.split(".")[:-1]
                    anchor = anchor[:len(anchor) - (node.level - 1)]
                    base = ".".join([*anchor, base] if base else anchor)
                targets.add(base)
                targets.update(f"{base}.{alias.name}" for alias in node.names)
        edges = set()
        for target in targets:
            parts = target.split(".")
            for n in range(1, len(parts) + 1):   # a.b.c runs a, a.b and a.b.c
                candidate = ".".join(parts[:n])
                if candidate in modules and candidate.startswith(prefix) and candidate != name:
                    edges.add(candidate)
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), and modules
    that import themselves."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(v: str) -> None:
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in graph.get(v, ()):
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


@pytest.mark.parametrize("package", SERVICES, ids=[p.name for p in SERVICES])
def test_no_import_cycle_inside_a_service(package: Path) -> None:
    found = cycles(import_graph(package, ROOT))
    assert not found, f"import cycles in {package.name}: {found}"


def test_the_check_finds_cycles_of_every_kind(tmp_path: Path) -> None:
    pkg = tmp_path / "services" / "demo"
    (pkg / "sub").mkdir(parents=True)
    (tmp_path / "services" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from services.demo.sub import inner\n")
    (pkg / "a.py").write_text("from services.demo import b\n")
    (pkg / "b.py").write_text("def f():\n    from services.demo.a import thing\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                              "    from .d import D\n")
    (pkg / "d.py").write_text("import services.demo.c\n")
    (pkg / "sub" / "inner.py").write_text("from services.demo.sub.other import x\n")
    (pkg / "sub" / "other.py").write_text("import os\n")
    graph = import_graph(pkg, tmp_path)
    assert cycles(graph) == [["services.demo.a", "services.demo.b"],
                             ["services.demo.c", "services.demo.d"],
                             ["services.demo.sub", "services.demo.sub.inner"]]
