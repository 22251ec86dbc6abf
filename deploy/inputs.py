"""What each service image is made of, which tests cover it, and whether a change touches it.

One image per service (deploy/docker/Dockerfile, ``--build-arg SERVICE=<svc>``) ships the
project modules that service imports, found by reading the imports (``ast``, no import is
run) from ``services/<svc>/__main__.py`` and the container health check, plus the files the
build reads (the Dockerfile, the lock files, the protos, config/). The table and arbiter
images carry the rule engines of ``games/`` whole.

    python deploy/inputs.py files <svc>            # the image's inputs (repository paths)
    python deploy/inputs.py tests <svc>            # the test files that cover them
    python deploy/inputs.py changed <svc> <base>   # exit 0: a file changed since <base>
                                                   # (git diff <base>...HEAD) is an input
    python deploy/inputs.py ship <svc> <dir>       # copy what the container runs (build stage)
    python deploy/inputs.py digest <svc>           # sha256 of every input (an image label)
    python deploy/inputs.py requirements <layer>   # the lock's entries of one package layer

Python packages reach an image in two layers, both cut from ``requirements/runtime.txt``
(hashes and all): ``common``, what every service imports (one layer, shared by every
image), then the service's own (``lobby``: the WebSocket front; ``records``: SQL), each
the closure of its roots in ``PACKAGE_ROOTS`` through the lock's "via" notes.

The Jenkins job of each service uses all three (deploy/jenkins/vars/paijuService.groovy,
through ``make test-<svc>`` and ``make changed-<svc>``); tests/unit/deploy/test_deploy_jenkins.py
checks them. Standard library only: it runs before the virtualenv exists.
"""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SERVICES = ("lobby", "table", "arbiter", "records")
PACKAGES = ("services", "games", "clients", "paiju", "tests")
# Whole directories an image carries whatever the imports say: the engines (table, arbiter)
# are looked up by game, so every engine ships; records' Alembic scripts are loaded by
# path; the lobby serves the web client and the console pages.
WHOLE = {"table": ("games",), "arbiter": ("games",),
         "records": ("services/records/migrations",), "lobby": ("clients/web",)}
EXTRA = {"records": ("services/records/alembic.ini",)}
# The lobby image also runs robot tables (compose's "robots" profile: python3 -m clients.robot).
ROBOTS = {"lobby": ["clients.robot.__main__"]}
# The distributions each package layer starts from (the rest is their dependencies, read
# from the lock). The service layers add to ``common``; a service without one has ``()``.
# tests/unit/deploy/test_deploy_build.py checks that every third-party module a service's
# shipped code imports comes from its layers; asyncpg and aiosqlite are SQLAlchemy's drivers,
# named by database URL rather than imported.
PACKAGE_ROOTS: dict[str, tuple[str, ...]] = {
    "common": ("grpcio", "grpcio-health-checking", "grpcio-reflection", "protobuf",
               "nats-py", "prometheus-client", "uvloop", "msgspec"),
    "lobby": ("aiohttp",),
    "table": (),
    "arbiter": (),
    "records": ("sqlalchemy", "asyncpg", "aiosqlite", "alembic", "openskill"),
}
# What every image build reads besides the Python modules.
BUILD_FILES = (
    "deploy/docker/Dockerfile",
    "deploy/docker/healthcheck.py",
    "deploy/docker/entry.py",
    "deploy/docker/base-image.txt",
    "deploy/docker/base",
    "requirements/runtime.txt",
    "requirements/build.txt",
    "scripts/gen_protos.sh",
    "protos",
    "config",
    "pyproject.toml",
    ".dockerignore",
)
# What decides how a job builds and tests: a change here rebuilds every service.
PIPELINE_FILES = ("deploy/jenkins", "deploy/inputs.py", "Makefile", "requirements/dev.txt")


def module_file(module: str) -> Path | None:
    """The source file of a project module (``paiju.v1.*`` is generated: its .proto)."""
    parts = module.split(".")
    if parts[0] not in PACKAGES:
        return None
    if parts[:2] == ["paiju", "v1"]:
        return ROOT / "protos" / "paiju" / "v1"
    base = ROOT.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _package_of(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
        return ".".join(parts)
    return ".".join(parts[:-1])


@functools.cache
def imports_of(path: Path) -> frozenset[str]:
    """Project modules ``path`` imports (absolute and relative; ``from a import b`` also
    counts ``a.b`` when it is a module)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                pkg = _package_of(path).split(".")
                base = ".".join(pkg[:len(pkg) - node.level + 1] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    out = set()
    for name in found:
        parts = name.split(".")
        for i in range(1, len(parts) + 1):   # a module imports its packages' __init__ too
            if module_file(".".join(parts[:i])) is not None:
                out.add(".".join(parts[:i]))
    return frozenset(out)


def closure(roots: list[str]) -> set[Path]:
    """Every project file reachable by imports from the modules ``roots``."""
    seen: set[Path] = set()
    todo = [module_file(m) for m in roots]
    while todo:
        path = todo.pop()
        if path is None or path in seen:
            continue
        seen.add(path)
        if path.suffix == ".py":
            todo.extend(module_file(m) for m in imports_of(path))
    return seen


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


@functools.cache
def service_modules(service: str) -> frozenset[str]:
    """Repository paths of the project modules the service's image runs."""
    if service not in SERVICES:
        raise SystemExit(f"unknown service {service!r}: one of {', '.join(SERVICES)}")
    roots = [f"services.{service}.__main__", f"services.{service}",
             "services.common.config", "services.common.tls"]   # + the health check
    roots += ROBOTS.get(service, [])
    files = {_rel(p) for p in closure(roots)}
    files |= {_rel(p) for p in closure(list(imports_of(ROOT / "deploy/docker/healthcheck.py")))}
    for directory in WHOLE.get(service, ()):
        files |= {_rel(p) for p in (ROOT / directory).rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"}
    files |= set(EXTRA.get(service, ()))
    return frozenset(files)


def ship(service: str, dest: Path) -> list[str]:
    """Copy what the service's container runs into ``dest`` (the image's /app): its modules,
    the generated protocol code, config/ and the health check. Run in the image's build
    stage after scripts/gen_protos.sh."""
    import shutil

    chosen = [p for p in service_modules(service) if not p.startswith("protos")]
    chosen += [_rel(p) for p in (ROOT / "paiju" / "v1").glob("*.py")]
    chosen += [_rel(p) for p in (ROOT / "config").glob("*.toml")]
    for rel in sorted(set(chosen)):
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, target)
    for name in ("healthcheck.py", "entry.py"):
        shutil.copy2(ROOT / "deploy" / "docker" / name, dest / name)
    return sorted(set(chosen))


def files(service: str) -> list[str]:
    """The image's inputs: its modules and the build's own files."""
    return sorted(service_modules(service) | set(BUILD_FILES))


def tests(service: str) -> list[str]:
    """Test files that import (directly or through test helpers) a module the image runs.
    Every test that could fail because of a change to what the image ships."""
    shipped = {ROOT / p for p in service_modules(service)}
    out = []
    for test in sorted((ROOT / "tests").rglob("test_*.py")):
        if test.is_relative_to(ROOT / "tests" / "image"):   # the image's own stage builds it
            continue
        reached = closure([_module_name(test)])
        if reached & shipped:
            out.append(_rel(test))
    return out


def digest(service: str) -> str:
    """sha256 over the image's inputs: the base image line and every input file's path and
    content (directories expanded). Two builds with the same digest have the same inputs;
    the images carry it as the label org.paiju.inputs."""
    import hashlib

    total = hashlib.sha256()
    base = ROOT / "deploy" / "docker" / "base-image.txt"
    lines = [line for line in base.read_text(encoding="utf-8").splitlines()
             if line.strip() and not line.lstrip().startswith("#")]
    total.update("".join(f"base {line}\n" for line in lines).encode())
    paths: set[Path] = set()
    for rel in files(service):
        path = ROOT / rel
        if path.is_dir():
            paths |= {p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
        elif path.is_file():
            paths.add(path)
    for path in sorted(paths):
        total.update(f"{_rel(path)} {hashlib.sha256(path.read_bytes()).hexdigest()}\n".encode())
    return total.hexdigest()


def lock_entries(path: Path | None = None) -> dict[str, tuple[str, list[str]]]:
    """The lock file's packages: normalised name -> (its entry's text, hashes and all; the
    names of the packages it is there for, from the "via" notes)."""
    path = path or ROOT / "requirements" / "runtime.txt"
    entries: dict[str, tuple[str, list[str]]] = {}
    name, text, via, in_via = "", [], [], False
    for line in path.read_text(encoding="utf-8").splitlines() + [""]:
        if line and not line[0].isspace() and not line.startswith("#"):
            if name:
                entries[name] = ("\n".join(text), via)
            name, text, via, in_via = _norm(line.split("==")[0]), [line], [], False
        elif line.strip().startswith("--hash") and name:
            text.append(line)
        elif line.strip().startswith("# via"):
            rest = line.strip()[len("# via"):].strip()
            via, in_via = ([rest] if rest else []), not rest
        elif in_via and line.strip().startswith("#"):
            via.append(line.strip().lstrip("#").strip())
        elif not line.strip():
            in_via = False
    if name:
        entries[name] = ("\n".join(text), via)
    for key, (entry, parents) in entries.items():   # the last hash line has no "\"
        entries[key] = (entry.rstrip(" \\"), [_norm(p.split(" ")[0]) for p in parents])
    return entries


def _norm(name: str) -> str:
    return name.strip().lower().replace("_", "-").replace(".", "-")


def layer_packages(layer: str, path: Path | None = None) -> list[str]:
    """The lock's packages in a package layer: the closure of its roots (for a service,
    minus what ``common`` already has)."""
    if layer not in PACKAGE_ROOTS:
        raise SystemExit(f"unknown package layer {layer!r}: one of {', '.join(PACKAGE_ROOTS)}")
    entries = lock_entries(path)
    needs: dict[str, set[str]] = {name: set() for name in entries}
    for name, (_, parents) in entries.items():
        for parent in parents:
            if parent in needs:
                needs[parent].add(name)

    def closure_of(roots: tuple[str, ...]) -> set[str]:
        seen: set[str] = set()
        todo = [_norm(r) for r in roots]
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            if name not in entries:
                raise SystemExit(f"{name} is a package layer root but not in the lock")
            seen.add(name)
            todo.extend(needs[name])
        return seen

    common = closure_of(PACKAGE_ROOTS["common"])
    if layer == "common":
        return sorted(common)
    return sorted(closure_of(PACKAGE_ROOTS[layer]) - common)


def requirements(layer: str, path: Path | None = None) -> str:
    """The lock entries of a layer, as a requirements file pip installs with hashes."""
    entries = lock_entries(path)
    return "".join(entries[name][0] + "\n" for name in layer_packages(layer, path))


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def touches(service: str, changed: list[str]) -> list[str]:
    """The changed paths that are inputs of the service's image or of its pipeline."""
    inputs = set(files(service)) | set(PIPELINE_FILES) | {f"services/{service}/Jenkinsfile"}
    hits = []
    for path in changed:
        if any(path == i or path.startswith(i.rstrip("/") + "/") for i in inputs):
            hits.append(path)
    return hits


def changed_since(base: str) -> list[str]:
    out = subprocess.run(["git", "-C", str(ROOT), "diff", "--name-only", f"{base}...HEAD"],
                         capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if line]


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] not in ("files", "tests", "changed", "ship", "digest",
                                        "requirements"):
        print(__doc__, file=sys.stderr)
        return 2
    what, service = argv[0], argv[1]
    if what == "requirements":
        sys.stdout.write(requirements(service))
    elif what == "files":
        print("\n".join(files(service)))
    elif what == "tests":
        print("\n".join(tests(service)))
    elif what == "digest":
        print(digest(service))
    elif what == "ship":
        if len(argv) < 3:
            print("ship <svc> <dir>", file=sys.stderr)
            return 2
        shipped = ship(service, Path(argv[2]))
        print(f"{service}: {len(shipped)} files in {argv[2]}", file=sys.stderr)
    else:
        if len(argv) < 3 or not argv[2]:
            print(f"{service}: no base commit (first build): build", file=sys.stderr)
            return 0
        try:
            hits = touches(service, changed_since(argv[2]))
        except subprocess.CalledProcessError as exc:   # an unknown base (history rewritten)
            print(f"{service}: cannot diff against {argv[2]} ({exc.stderr.strip()}): build",
                  file=sys.stderr)
            return 0
        if hits:
            print(f"{service}: inputs changed since {argv[2]}:", *hits[:20], sep="\n  ",
                  file=sys.stderr)
            return 0
        print(f"{service}: no input changed since {argv[2]}: nothing to build", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
