"""Is the protocol of protos/ wire-compatible with a previous release's? (deploy/README.md,
"Releasing protocol changes"; tests/unit/deploy/test_deploy_protocompat.py runs it in make test.)

    python deploy/protocompat.py [--base <commit>]      # default: deploy/protos-base.txt

Both sides are compiled by protoc (grpc_tools) into descriptor sets in a temporary directory:
the base's .proto files from git (``git show <base>:protos/...``), the new ones from the
working tree. Allowed between two releases: new files, messages, fields, enum values,
services and methods (additive). Refused, each named: a message, enum or method removed or
retyped; a field whose number changed type, cardinality (repeated/singular, proto3
``optional``), message or enum type, name or oneof; a field or enum value removed without
reserving its number; a reserved number or name of the base reused; a ``required`` field
(proto2) anywhere. Exit status 1 with the list, 0 when compatible. A removal that the
previous release no longer uses (its callers gone one release earlier) is let through by an
``allow <the problem's text>`` line in deploy/protos-base.txt, reviewed like code; a release
that bumps the base drops those lines.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROTO_DIR = "protos"
PACKAGE_DIR = "protos/paiju/v1"
BASE_FILE = ROOT / "deploy" / "protos-base.txt"


def pinned_base(path: Path = BASE_FILE) -> tuple[str, list[str]]:
    """The commit of deploy/protos-base.txt (its first line that is not a comment) and the
    problems it allows (``allow <text>`` lines)."""
    commit, allowed = None, []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith("allow "):
            allowed.append(line.removeprefix("allow ").strip())
        elif line and commit is None:
            commit = line.split()[0]
    if commit is None:
        raise SystemExit(f"{path}: no commit")
    return commit, allowed


def export_base(base: str, into: Path) -> None:
    """protos/ of commit ``base`` written under ``into`` (same relative paths)."""
    names = subprocess.run(["git", "-C", str(ROOT), "ls-tree", "-r", "--name-only", base,
                            PROTO_DIR], capture_output=True, text=True, check=True).stdout.split()
    for name in names:
        if not name.endswith(".proto"):
            continue
        text = subprocess.run(["git", "-C", str(ROOT), "show", f"{base}:{name}"],
                              capture_output=True, check=True).stdout
        target = into / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(text)


def descriptor_set(proto_root: Path, out: Path):
    """The FileDescriptorSet of every .proto under proto_root/paiju/v1 (protoc of grpc_tools)."""
    from google.protobuf import descriptor_pb2

    files = sorted(str(p.relative_to(proto_root))
                   for p in (proto_root / "paiju" / "v1").glob("*.proto"))
    if not files:
        raise SystemExit(f"no .proto under {proto_root}/paiju/v1")
    run = subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"-I{proto_root}",
                          "--include_imports", f"--descriptor_set_out={out}", *files],
                         capture_output=True, text=True, cwd=proto_root)
    if run.returncode != 0:
        raise SystemExit(f"protoc failed on {proto_root}:\n{run.stderr}")
    fds = descriptor_pb2.FileDescriptorSet()
    fds.ParseFromString(out.read_bytes())
    return fds


def build(base: str | None, workdir: Path):
    """(base, new) FileDescriptorSets; base None: protos of the working tree twice."""
    new = descriptor_set(ROOT / PROTO_DIR, workdir / "new.pb")
    if base is None:
        return new, new
    export_base(base, workdir / "base")
    return descriptor_set(workdir / "base" / PROTO_DIR, workdir / "base.pb"), new


def _index(fds) -> tuple[dict, dict, dict]:
    """Messages, enums and services of the paiju files by full name."""
    messages: dict = {}
    enums: dict = {}
    services: dict = {}

    def walk(prefix: str, msgs, ens) -> None:
        for enum in ens:
            enums[f"{prefix}.{enum.name}"] = enum
        for msg in msgs:
            name = f"{prefix}.{msg.name}"
            messages[name] = msg
            walk(name, msg.nested_type, msg.enum_type)

    for f in fds.file:
        if f.name.startswith("google/"):
            continue
        walk(f.package, f.message_type, f.enum_type)
        for svc in f.service:
            services[f"{f.package}.{svc.name}"] = svc
    return messages, enums, services


def _in_ranges(container, number: int) -> bool:
    inclusive = container.DESCRIPTOR.name == "EnumDescriptorProto"
    return any(r.start <= number < r.end + (1 if inclusive else 0)
               for r in container.reserved_range)


def _field_shape(msg, field) -> tuple:
    oneof = None
    if field.HasField("oneof_index") and not field.proto3_optional:
        oneof = msg.oneof_decl[field.oneof_index].name
    return (field.type, field.type_name, field.label, field.proto3_optional, oneof)


def compare(base_fds, new_fds) -> list[str]:
    """Every incompatibility between base and new, as sentences (empty: compatible)."""
    problems: list[str] = []
    b_msgs, b_enums, b_svcs = _index(base_fds)
    n_msgs, n_enums, n_svcs = _index(new_fds)
    for name, new in n_msgs.items():
        for field in new.field:
            if field.label == field.LABEL_REQUIRED:
                problems.append(f"{name}.{field.name}: a required field (never compatible)")
    for name, old in b_msgs.items():
        new = n_msgs.get(name)
        if new is None:
            problems.append(f"message {name} removed")
            continue
        new_fields = {f.number: f for f in new.field}
        for field in old.field:
            where = f"{name}.{field.name} (= {field.number})"
            now = new_fields.get(field.number)
            if now is None:
                if not _in_ranges(new, field.number):
                    problems.append(f"{where}: removed without reserving its number")
                continue
            if now.name != field.name:
                problems.append(f"{where}: renamed {now.name}")
            before, after = _field_shape(old, field), _field_shape(new, now)
            labels = ("type", "message/enum type", "cardinality", "proto3 optional", "oneof")
            for label, x, y in zip(labels, before, after, strict=True):
                if x != y:
                    problems.append(f"{where}: {label} changed ({x or '-'} -> {y or '-'})")
        old_numbers = {f.number for f in old.field}
        for field in new.field:
            if field.number not in old_numbers and (_in_ranges(old, field.number)
                                                    or field.name in old.reserved_name):
                problems.append(f"{name}.{field.name} (= {field.number}): reuses a reserved "
                                "number or name")
    for name, old in b_enums.items():
        new = n_enums.get(name)
        if new is None:
            problems.append(f"enum {name} removed")
            continue
        by_number = {v.number: v for v in new.value}
        for value in old.value:
            now = by_number.get(value.number)
            if now is None:
                if not _in_ranges(new, value.number):
                    problems.append(f"{name}.{value.name} (= {value.number}): removed without "
                                    "reserving its number")
            elif now.name != value.name and not new.options.allow_alias:
                problems.append(f"{name}.{value.name} (= {value.number}): renamed {now.name}")
        old_numbers = {v.number for v in old.value}
        for value in new.value:
            if value.number not in old_numbers and (_in_ranges(old, value.number)
                                                    or value.name in old.reserved_name):
                problems.append(f"{name}.{value.name} (= {value.number}): reuses a reserved "
                                "number or name")
    for name, old in b_svcs.items():
        new = n_svcs.get(name)
        if new is None:
            problems.append(f"service {name} removed")
            continue
        methods = {m.name: m for m in new.method}
        for method in old.method:
            now = methods.get(method.name)
            where = f"{name}.{method.name}"
            if now is None:
                problems.append(f"rpc {where} removed (old callers get UNIMPLEMENTED)")
                continue
            for attr in ("input_type", "output_type", "client_streaming", "server_streaming"):
                if getattr(now, attr) != getattr(method, attr):
                    problems.append(f"rpc {where}: {attr} changed ({getattr(method, attr)} -> "
                                    f"{getattr(now, attr)})")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="deploy/protocompat.py",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--base", default=None, help="a commit (default: deploy/protos-base.txt)")
    args = parser.parse_args(argv)
    base, allowed = pinned_base()
    if args.base:
        base, allowed = args.base, []
    with tempfile.TemporaryDirectory(prefix="protocompat-") as tmp:
        old, new = build(base, Path(tmp))
    problems = [p for p in compare(old, new) if p not in allowed]
    for problem in problems:
        print(f"incompatible with {base[:12]}: {problem}", file=sys.stderr)
    if not problems:
        print(f"protos/ is wire-compatible with {base[:12]} (additive changes only)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
