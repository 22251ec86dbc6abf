"""The protocol across one release (deploy/protocompat.py; deploy/README.md, "Releasing
protocol changes"): protos/ against the commit pinned in deploy/protos-base.txt.

1. The descriptors of both, compiled by protoc: no field renumbered, retyped, renamed or
   moved in or out of a oneof, nothing removed without its number reserved, no reserved
   number reused, no method or message gone, no required field; additive changes pass.
2. Messages built by the old schema parse in the new one and back, and the reverse, for
   every message of the paiju package (TableCommand and TableReply between lobby and table,
   RoomEvents, the frames, the gRPC requests and replies, the settlements): fields both know
   keep their values, fields only the new one knows survive the old one as unknown fields.
3. The checker itself refuses each kind of break, on small protos written here.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.unit.deploy.conftest import deploy_script

pytest.importorskip("grpc_tools", reason="grpcio-tools (protoc) is needed")
from google.protobuf import (  # noqa: E402
    descriptor,
    descriptor_pool,
    message_factory,
    text_format,
)

ROOT = Path(__file__).resolve().parents[3]
FD = descriptor.FieldDescriptor


@pytest.fixture(scope="module")
def compat():
    return deploy_script("protocompat.py")


@pytest.fixture(scope="module")
def releases(compat, tmp_path_factory):
    """(base commit, allowed problems, base FileDescriptorSet, new FileDescriptorSet)."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    base, allowed = compat.pinned_base()
    known = subprocess.run(["git", "-C", str(ROOT), "cat-file", "-e", f"{base}^{{commit}}"],
                           capture_output=True)
    if known.returncode != 0:
        pytest.skip(f"the pinned base {base[:12]} is not in this clone (a shallow clone?)")
    old, new = compat.build(base, tmp_path_factory.mktemp("protocompat"))
    return base, allowed, old, new


def test_the_pin_names_one_commit(compat) -> None:
    base, allowed = compat.pinned_base()
    assert len(base) == 40 and int(base, 16) >= 0, "a full commit id, not a branch or tag"
    assert all(allowed), allowed


def test_protos_are_wire_compatible_with_the_pinned_release(compat, releases) -> None:
    base, allowed, old, new = releases
    problems = [p for p in compat.compare(old, new) if p not in allowed]
    assert not problems, (f"protos/ breaks the release at {base[:12]} (deploy/README.md, "
                          f"'Releasing protocol changes'):\n" + "\n".join(problems))
    stale = [a for a in allowed if a not in compat.compare(old, new)]
    assert not stale, f"deploy/protos-base.txt allows what no longer happens: {stale}"


# ------------------------------------------------------------------ messages both ways
def classes(fds) -> dict[str, type]:
    pool = descriptor_pool.DescriptorPool()
    for f in fds.file:
        pool.Add(f)
    names = []
    for f in fds.file:
        if f.name.startswith("google/"):
            continue
        fd = pool.FindFileByName(f.name)
        stack = list(fd.message_types_by_name.values())
        while stack:
            d = stack.pop()
            if not d.GetOptions().map_entry:
                names.append(d.full_name)
            stack.extend(d.nested_types)
    return {n: message_factory.GetMessageClass(pool.FindMessageTypeByName(n)) for n in names}


SCALARS = {
    FD.TYPE_DOUBLE: 1.5, FD.TYPE_FLOAT: 2.5, FD.TYPE_BOOL: True, FD.TYPE_STRING: "s",
    FD.TYPE_BYTES: b"\x00\xff",
}


def scalar(field: descriptor.FieldDescriptor, salt: int):
    if field.type == FD.TYPE_ENUM:
        values = [v.number for v in field.enum_type.values if v.number != 0]
        return values[salt % len(values)] if values else 0
    if field.type in SCALARS:
        value = SCALARS[field.type]
        return value + str(field.number) if isinstance(value, str) else value
    if field.type in (FD.TYPE_SINT32, FD.TYPE_SINT64, FD.TYPE_SFIXED32, FD.TYPE_SFIXED64,
                      FD.TYPE_INT32, FD.TYPE_INT64) and salt % 2:
        return -(field.number + salt)
    return field.number + salt + 1


def fill(msg, depth: int = 0, variant: int = 0) -> None:
    """Every field of msg set to a value that is not its default (one member per oneof,
    the variant-th; message fields to depth 3)."""
    d = msg.DESCRIPTOR
    chosen = {o.name: o.fields[variant % len(o.fields)].name for o in d.oneofs
              if o.fields and not (len(o.fields) == 1 and o.fields[0].name.startswith("_"))}
    for field in d.fields:
        oneof = field.containing_oneof
        if oneof is not None and oneof.name in chosen and chosen[oneof.name] != field.name:
            continue
        is_message = field.type == FD.TYPE_MESSAGE
        if is_message and depth >= 3:
            continue
        target = getattr(msg, field.name)
        if is_message and field.message_type.GetOptions().map_entry:
            key_f, value_f = field.message_type.fields_by_name["key"], \
                field.message_type.fields_by_name["value"]
            key = scalar(key_f, variant)
            if value_f.type == FD.TYPE_MESSAGE:
                fill(target[key], depth + 1, variant)
            else:
                target[key] = scalar(value_f, variant)
        elif repeated(field):
            if is_message:
                fill(target.add(), depth + 1, variant)
                fill(target.add(), depth + 1, variant + 1)
            else:
                target.extend([scalar(field, variant), scalar(field, variant + 1)])
        elif is_message:
            fill(target, depth + 1, variant)
            target.SetInParent()
        else:
            setattr(msg, field.name, scalar(field, variant))


def repeated(field: descriptor.FieldDescriptor) -> bool:
    if hasattr(type(field), "is_repeated"):        # protobuf >= 6: label() is deprecated
        return field.is_repeated
    return field.label == FD.LABEL_REPEATED


def variants(cls) -> int:
    return max([len(o.fields) for o in cls.DESCRIPTOR.oneofs] + [1])


def cross(old: dict[str, type], new: dict[str, type]) -> tuple[int, list[str]]:
    """Every message of old, filled, through the new schema and back, and the reverse;
    returns how many crossed and what went wrong."""
    crossed, wrong = 0, []
    for name in sorted(old):
        if name not in new:
            wrong.append(f"{name} is gone")
            continue
        for v in range(variants(new[name])):
            # old writer, new reader: each field both name holds what was written...
            sent = old[name]()
            fill(sent, variant=v)
            read = new[name].FromString(sent.SerializeToString())
            by_name = text_format.Parse(text_format.MessageToString(sent), new[name](),
                                        allow_unknown_field=True)
            if text_format.MessageToString(read) != text_format.MessageToString(by_name):
                wrong.append(f"{name} (variant {v}): the new reader reads other values")
            # ...and back through the old one nothing is lost or changed
            if old[name].FromString(read.SerializeToString()) != sent:
                wrong.append(f"{name} (variant {v}): changed through the new reader")
            # new writer (its new fields too), old reader keeps what it does not know
            sent_new = new[name]()
            fill(sent_new, variant=v)
            through_old = old[name].FromString(sent_new.SerializeToString())
            if new[name].FromString(through_old.SerializeToString()) != sent_new:
                wrong.append(f"{name} (variant {v}): changed through the old reader")
            crossed += 1
    return crossed, wrong


def test_messages_cross_one_release_both_ways(releases) -> None:
    _, _, old_fds, new_fds = releases
    old, new = classes(old_fds), classes(new_fds)
    for exchanged in ("TableCommand", "TableReply", "RoomEvents", "CreateRoomRequest"):
        assert f"paiju.v1.{exchanged}" in old
    crossed, wrong = cross(old, new)
    assert not wrong, wrong[:20]
    assert crossed >= len(old) >= 100


def test_crossing_catches_a_renumbered_field(compat, tmp_path: Path) -> None:
    """The crossing is no tautology: a field that moved to another number reads wrong."""
    sets = []
    for side, text in (("base", BASE), ("new", BASE.replace("int64 seq = 1;", "int64 seq = 11;"))):
        d = tmp_path / side / "paiju" / "v1"
        d.mkdir(parents=True)
        (d / "x.proto").write_text(text)
        sets.append(compat.descriptor_set(tmp_path / side, tmp_path / f"{side}.pb"))
    _, wrong = cross(classes(sets[0]), classes(sets[1]))
    assert any("paiju.v1.Frame" in w and "other values" in w for w in wrong), wrong
    assert cross(classes(sets[0]), classes(sets[0]))[1] == []


def test_an_old_lobby_passes_a_new_frame_of_the_table_through() -> None:
    """The lobby parses the table's TableReply and sends each ServerFrame on: what its
    release does not know yet (a new field or payload) reaches the client whole."""
    from paiju.v1 import client_pb2, table_pb2

    unknown = bytes([0xBA, 0x3E, 0x03]) + b"new"        # field 999, length-delimited
    frame = client_pb2.ServerFrame(event_id=7).SerializeToString() + unknown
    wire = bytes([0x22, len(frame)]) + frame             # TableReply.frames (= 4)
    assert table_pb2.TableReply.DESCRIPTOR.fields_by_name["frames"].number == 4
    reply = table_pb2.TableReply.FromString(wire)          # what the lobby's link does
    forwarded = reply.frames[0].SerializeToString()        # what it sends the client
    assert forwarded.endswith(unknown)
    assert client_pb2.ServerFrame.FromString(forwarded).event_id == 7


# ------------------------------------------------------------------ the checker refuses
BASE = """syntax = "proto3";
package paiju.v1;
message Frame {
  int64 seq = 1;
  repeated string names = 2;
  oneof payload {
    Hello hello = 3;
    Bye bye = 4;
  }
  string note = 5;
  reserved 9;
}
message Hello { string who = 1; }
message Bye { Code code = 1; }
enum Code { CODE_UNSPECIFIED = 0; CODE_A = 1; CODE_B = 2; }
service Tables { rpc Ask(Hello) returns (Bye); }
"""


def check(compat, tmp_path: Path, new_text: str, syntax_base: str = BASE) -> list[str]:
    sets = []
    for side, text in (("base", syntax_base), ("new", new_text)):
        d = tmp_path / side / "paiju" / "v1"
        d.mkdir(parents=True)
        (d / "x.proto").write_text(text)
        sets.append(compat.descriptor_set(tmp_path / side, tmp_path / f"{side}.pb"))
    return compat.compare(*sets)


@pytest.mark.parametrize(("change", "new_text"), [
    ("additive", BASE.replace("string note = 5;", "string note = 5;\n  int32 extra = 6;\n"
                              "  oneof more { Hello hi = 7; }")
     .replace("CODE_B = 2;", "CODE_B = 2; CODE_C = 3;")
     .replace("returns (Bye); }", "returns (Bye); rpc Tell(Bye) returns (Hello); }")
     + "message Added { int32 x = 1; }\n"),
    ("field removed, number reserved", BASE.replace("string note = 5;", "reserved 5;")),
])
def test_additive_changes_pass(compat, tmp_path: Path, change: str, new_text: str) -> None:
    assert check(compat, tmp_path, new_text) == [], change


@pytest.mark.parametrize(("new_text", "says"), [
    (BASE.replace("int64 seq = 1;", "int64 seq = 11;"), "Frame.seq (= 1): removed"),
    (BASE.replace("int64 seq = 1;", "int32 seq = 1;"), "Frame.seq (= 1): type changed"),
    (BASE.replace("int64 seq = 1;", "int64 sequence = 1;"), "Frame.seq (= 1): renamed sequence"),
    (BASE.replace("repeated string names = 2;", "string names = 2;"), "cardinality changed"),
    (BASE.replace("Bye bye = 4;", "").replace("string note = 5;", "string note = 5; Bye bye = 4;"),
     "Frame.bye (= 4): oneof changed"),
    (BASE.replace("Bye { Code code = 1; }", "Bye { Hello code = 1; }"),
     "Bye.code (= 1): type changed"),
    (BASE.replace("string note = 5;", ""), "Frame.note (= 5): removed without reserving"),
    (BASE.replace("reserved 9;", "int32 again = 9;"),
     "Frame.again (= 9): reuses a reserved"),
    (BASE.replace("CODE_B = 2;", ""), "Code.CODE_B (= 2): removed without reserving"),
    (BASE.replace("service Tables { rpc Ask(Hello) returns (Bye); }", "service Tables {}"),
     "rpc paiju.v1.Tables.Ask removed"),
    (BASE.replace("returns (Bye)", "returns (Hello)"), "rpc paiju.v1.Tables.Ask: output_type"),
    (BASE.replace("message Hello { string who = 1; }\n", "")
     .replace("Hello hello = 3;", "Bye hello = 3;").replace("rpc Ask(Hello)", "rpc Ask(Bye)"),
     "message paiju.v1.Hello removed"),
])
def test_each_break_is_refused_by_name(compat, tmp_path: Path, new_text: str, says: str) -> None:
    problems = check(compat, tmp_path, new_text)
    assert any(says in p for p in problems), problems


def test_a_required_field_is_refused(compat, tmp_path: Path) -> None:
    proto2 = 'syntax = "proto2";\npackage paiju.v1;\nmessage M { optional int32 a = 1; }\n'
    problems = check(compat, tmp_path, proto2.replace("optional int32 a = 1;",
                                                      "optional int32 a = 1; required int32 b = 2;"),
                     syntax_base=proto2)
    assert problems == ["paiju.v1.M.b: a required field (never compatible)"]


def test_the_base_file_allows_reviewed_removals(compat, tmp_path: Path) -> None:
    pin = tmp_path / "protos-base.txt"
    pin.write_text("# comment\n" + "ab" * 20 + "\n"
                   "allow rpc paiju.v1.Table.Session removed (old callers get UNIMPLEMENTED)"
                   "  # lobbies stopped calling it a release ago\n")
    assert compat.pinned_base(pin) == (
        "ab" * 20, ["rpc paiju.v1.Table.Session removed (old callers get UNIMPLEMENTED)"])
