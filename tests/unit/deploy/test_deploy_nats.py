"""NATS users and subject permissions (deploy/k8s/nats/values-auth.yaml).

The permission matrix is read from the Helm values and checked against what each service
may and may not do: above all, only the table reads or writes the room logs (JetStream
ROOMLOG: the shuffle seed of every hand in play), the lobby sees no settlement, and the
arbiter hears the tables' requests on arbiter.decide and may publish nothing but its answers.
Then a real nats-server runs the configuration the chart renders from these values: it must
enforce the same matrix, refuse anonymous clients, and let the real services (their own code,
each as its own user) play a hand, settle it, ask the arbiter, rebuild a room from its log
and serve the console, without a single permission violation.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import functools
import json
import os
import re
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import aiohttp
import grpc
import nats
import pytest

from services.common import bus
from services.common.natsd import free_port, nats_server_binary
from tests.support.natsvalues import duration_seconds, environment_merge
from tests.support.waiting import eventually
from tests.unit.deploy.test_deploy_k8s import (
    K8S,
    OVERLAYS,
    container,
    find,
    load_all,
    nats_servers,
    render,
    secret_mounts,
)

yaml = pytest.importorskip("yaml", reason="PyYAML is needed to parse deploy/ (PyYAML>=6,<7)")

VALUES = K8S / "nats" / "values-auth.yaml"
SECRET = "paiju-nats"
SERVER_SECRET = "paiju-nats-server"     # passwords.conf, included by the servers
INCLUDE_KEY = "00$include"
INCLUDE = "../paiju-nats-auth/passwords.conf"
SERVICE_USERS = ("lobby", "table", "records", "arbiter")   # the services that speak NATS
SECOND_USERS = tuple(f"{u}-b" for u in SERVICE_USERS)   # each one's second, for rotations
PLACEHOLDER = re.compile(r"^<<\s+\$(\w+)\s+>>$")
BOX_SECRET = "paiju-nats-box"     # nats-box's context file: admin's user and password
# The volumes of the nats-box pod as the chart 2.14.2 writes them (files/nats-box/deployment/
# pod-template.yaml: its contexts Secret first, mounted at /etc/nats-contexts, the nats CLI's
# context directory), before the values' patch.
CHART_BOX_VOLUMES = [{"name": "contexts", "secret": {"secretName": "nats-box-contexts"}},
                     {"name": "contents", "secret": {"secretName": "nats-box-contents"}}]


def json_patch(doc: Any, ops: list[dict[str, Any]]) -> Any:
    """RFC 6902 ``test``, ``replace`` and ``add`` on ``doc`` (a copy), as the chart applies
    ``natsBox.podTemplate.patch``: a failed test raises."""
    doc = json.loads(json.dumps(doc))
    for op in ops:
        *parents, last = [p.replace("~1", "/").replace("~0", "~")
                          for p in op["path"].split("/")[1:]]
        node = doc
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        index: Any = (len(node) if last == "-" else int(last)) if isinstance(node, list) else last
        if op["op"] == "test":
            if node[index] != op["value"]:
                raise ValueError(f"test failed at {op['path']}: {node[index]!r}")
        elif op["op"] == "replace":
            node[index] = op["value"]
        elif op["op"] == "add" and isinstance(node, list):
            node.insert(index, op["value"])
        elif op["op"] == "add":
            node[index] = op["value"]
        else:
            raise ValueError(f"op {op['op']} not modelled")
    return doc


def nats_box_volumes(patch: list[dict[str, Any]],
                     chart: list[dict[str, Any]] = CHART_BOX_VOLUMES) -> list[dict[str, Any]]:
    return json_patch({"spec": {"volumes": chart}}, patch)["spec"]["volumes"]


# ------------------------------------------------------------------ the values and the model
@functools.cache
def auth_values() -> dict[str, Any]:
    return yaml.safe_load(VALUES.read_text(encoding="utf-8"))


@functools.cache
def users() -> dict[str, dict[str, Any]]:
    return {u["user"]: u for u in auth_values()["config"]["merge"]["authorization"]["users"]}


def covers(pattern: str, subject: str) -> bool:
    """Whether NATS subject ``pattern`` matches every subject ``subject`` can stand for
    (``*`` one token, ``>`` one or more trailing tokens)."""
    pat, sub = pattern.split("."), subject.split(".")
    for i, token in enumerate(pat):
        if token == ">":
            return len(sub) > i
        if i >= len(sub) or sub[i] == ">":
            return False
        if token != "*" and (token != sub[i] or sub[i] == "*"):
            return False
    return len(sub) == len(pat)


def may(user: str, action: str, subject: str) -> bool:
    """What the values allow ``user`` to ``publish`` or ``subscribe`` on ``subject``."""
    perms = users()[user].get("permissions")
    if perms is None or action not in perms:
        return True
    rules = perms[action]
    allow = rules.get("allow")
    if allow is not None and not any(covers(p, subject) for p in allow):
        return False
    # refused when a deny covers it (a subscription a deny only overlaps is filtered instead;
    # the matrix below has none, and the real server checks every row)
    return not any(covers(p, subject) for p in rules.get("deny", []))


# What each service user may (True) and may not (False) do. Subjects come from the code
# (services/common/bus.py and the services) and from what nats-py sends for each call.
# The answer to a table's adopt request is no row here: the table may publish it as a reply
# only (allow_responses), which test_a_table_answers_an_adopt_request_once checks; the same for
# an arbiter's answer to a table (test_a_table_asks_an_arbiter_which_may_only_answer).
ROOM = 12345678
LOG, SHARD = bus.room_log_stream(ROOM), bus.room_log_shard(ROOM)   # its room-log stream
# Subjects spelled out (bus.py loses user_inbox and LOBBY_ROOMS with the ordered room events,
# issue 10): private frames travel inside room.<id>.events, room metadata only in the "rooms"
# bucket, and chat on room.<id>.chat.
USER_INBOX, LOBBY_ROOMS, ROOM_CHAT = "user.7.inbox", "lobby.rooms", f"room.{ROOM}.chat"
ADOPT_A, ADOPT_B = "table.table-a.adopt", "table.table-b.adopt"   # table.<instance>.adopt
COMMANDS = bus.table_commands("10.0.0.7:50052")    # table.<address>.commands
# A table's request for an arbiter's decision (services/table/arbiter_client.py), answered by
# the arbiters' queue group "arbiter" (services/arbiter/server.py).
ARBITER_DECIDE = "arbiter.decide"
MATRIX: dict[str, dict[tuple[str, str], bool]] = {
    "table": {
        ("publish", bus.room_log(ROOM)): True,
        ("publish", bus.room_events(ROOM)): True,
        ("publish", USER_INBOX): False,             # private frames: inside room events
        ("publish", LOBBY_ROOMS): False,            # room metadata: the "rooms" bucket only
        ("publish", ROOM_CHAT): False,              # chat is the lobbies'
        ("publish", bus.SETTLE_SUBJECT): True,
        ("publish", "settle.12345678"): True,       # an earlier release's table, rolling out
        ("publish", bus.SETTLE_PROMPT): True,       # a settlement's prompt copy to records
        ("subscribe", bus.SETTLE_PROMPT): False,
        ("publish", "$KV.rooms.12345678"): True,
        ("publish", "$KV.room_ids.12345678"): True,
        ("publish", f"$JS.API.STREAM.CREATE.{LOG}"): True,
        ("publish", f"$JS.API.STREAM.INFO.{LOG}"): True,
        ("publish", "$JS.API.STREAM.INFO.SETTLE"): True,
        ("publish", f"$JS.API.STREAM.PURGE.{LOG}"): True,
        ("publish", f"$JS.API.STREAM.MSG.GET.{LOG}"): True,
        ("publish", f"$JS.API.CONSUMER.CREATE.{LOG}.c1.room.{ROOM}.log.{SHARD}"): True,
        ("publish", f"$JS.API.CONSUMER.MSG.NEXT.{LOG}.c1"): True,
        ("publish", f"$JS.ACK.{LOG}.c1.1.2.3.4.5"): True,
        # the log streams' leaders spread over the NATS nodes (roomlog.spread_leaders)
        ("publish", f"$JS.API.STREAM.LEADER.STEPDOWN.{LOG}"): True,
        ("publish", "$JS.API.STREAM.LEADER.STEPDOWN.SETTLE"): False,
        # and again soon after one of them elects a leader (services/table/leaders.py)
        ("subscribe", f"$JS.EVENT.ADVISORY.STREAM.LEADER_ELECTED.{LOG}"): True,
        ("subscribe", "$JS.EVENT.ADVISORY.STREAM.LEADER_ELECTED.SETTLE"): False,
        ("publish", "$JS.API.CONSUMER.CREATE.KV_rooms"): True,
        # the directory's old delete markers (services/table/markers.py); ids are kept
        ("publish", "$JS.API.CONSUMER.CREATE.KV_seats"): True,
        ("publish", "$JS.API.STREAM.PURGE.KV_rooms"): True,
        ("publish", "$JS.API.STREAM.PURGE.KV_seats"): True,
        ("publish", "$JS.API.STREAM.PURGE.KV_room_ids"): False,
        ("publish", "$JS.API.STREAM.PURGE.KV_tables"): False,
        ("publish", ADOPT_B): True,                 # a draining table hands over a room
        ("subscribe", ADOPT_A): True,               # and takes the rooms handed to it
        ("publish", COMMANDS): False,               # they speak for players: lobbies only
        ("subscribe", COMMANDS): True,              # players' commands (answered as replies)
        ("publish", ARBITER_DECIDE): True,          # a window for an arbiter (a request)
        ("subscribe", ARBITER_DECIDE): False,       # the arbiters' to answer
        ("subscribe", "_INBOX_arbiter.abc.def"): False,
        # start-up never changes a stream (an operator's replicas stand)
        ("publish", f"$JS.API.STREAM.UPDATE.{LOG}"): False,
        ("publish", "$JS.API.STREAM.UPDATE.SETTLE"): False,
        ("publish", "$JS.API.STREAM.UPDATE.KV_rooms"): False,
        ("publish", f"$JS.API.STREAM.DELETE.{LOG}"): False,
        ("publish", "$JS.API.STREAM.CREATE.SPY"): False,
        ("publish", "$JS.API.CONSUMER.CREATE.SETTLE"): False,
        ("publish", "$JS.API.CONSUMER.CREATE.SETTLE.records.settle.*"): False,
        ("publish", bus.session_kick(7)): False,
        ("subscribe", "_INBOX_table.abc.def"): True,
        ("subscribe", "_INBOX_records.abc.def"): False,
        ("subscribe", "_INBOX.abc.def"): False,
        ("publish", "_INBOX_table.abc.def"): False,   # a reply only, never unasked
        ("publish", "_INBOX_lobby.abc.def"): False,
        ("subscribe", bus.room_log(ROOM)): False,
        ("subscribe", bus.SETTLE_SUBJECT): False,
        ("subscribe", ">"): False,
    },
    "lobby": {
        ("subscribe", bus.room_events(ROOM)): True,
        ("subscribe", ROOM_CHAT): True,
        ("subscribe", "room.*.chat"): True,
        ("subscribe", USER_INBOX): False,           # gone: private frames are in room events
        ("subscribe", LOBBY_ROOMS): False,          # gone: the "rooms" bucket's watch
        ("subscribe", "session.kick.*"): True,
        ("subscribe", "_INBOX_lobby.abc.def"): True,
        # nobody else's replies: settlement deliveries, room-log reads of a rebuild
        ("subscribe", "_INBOX_records.abc.def"): False,
        ("subscribe", "_INBOX_table.abc.def"): False,
        ("subscribe", "_INBOX.abc.def"): False,
        ("subscribe", "_INBOX.>"): False,
        ("publish", ROOM_CHAT): True,                      # chat
        ("publish", bus.room_events(ROOM)): False,         # ordered by the table's log only
        ("publish", bus.session_kick(7)): True,
        ("publish", "$JS.API.STREAM.INFO.KV_rooms"): True,
        ("publish", "$JS.API.STREAM.MSG.GET.KV_seats"): True,
        ("publish", "$JS.API.DIRECT.GET.KV_rooms.$KV.rooms.12345678"): True,
        ("publish", "$JS.API.CONSUMER.CREATE.KV_tables"): True,
        ("publish", "$JS.FC.KV_rooms.c1.1.2"): True,
        # the room log: no read, no write, no consumer, no get, no stream change
        ("subscribe", bus.room_log(ROOM)): False,
        ("subscribe", "room.*.log.*"): False,
        ("subscribe", "room.>"): False,
        ("subscribe", ">"): False,
        ("publish", bus.room_log(ROOM)): False,
        ("publish", f"$JS.API.CONSUMER.CREATE.{LOG}"): False,
        ("publish", f"$JS.API.CONSUMER.CREATE.{LOG}.c1.room.{ROOM}.log.{SHARD}"): False,
        ("publish", f"$JS.API.CONSUMER.DURABLE.CREATE.{LOG}.c1"): False,
        ("publish", f"$JS.API.STREAM.MSG.GET.{LOG}"): False,
        ("publish", f"$JS.API.DIRECT.GET.{LOG}.room.{ROOM}.log.{SHARD}"): False,
        ("publish", f"$JS.API.STREAM.UPDATE.{LOG}"): False,
        ("publish", f"$JS.API.STREAM.LEADER.STEPDOWN.{LOG}"): False,
        ("publish", "$JS.API.STREAM.CREATE.SPY"): False,        # a stream sourcing ROOMLOG
        ("publish", "$JS.API.STREAM.CREATE.KV_rooms"): False,   # nor a bucket doing so
        # the settlements (every finished hand's private events)
        ("subscribe", bus.SETTLE_SUBJECT): False,
        ("subscribe", "settle.*"): False,
        ("publish", "$JS.API.CONSUMER.CREATE.SETTLE"): False,
        ("publish", "$JS.API.CONSUMER.CREATE.SETTLE.records.settle.*"): False,
        ("publish", "$JS.API.CONSUMER.MSG.NEXT.SETTLE.records"): False,
        ("publish", "$JS.API.STREAM.MSG.GET.SETTLE"): False,
        ("publish", bus.SETTLE_SUBJECT): False,
        ("publish", bus.SETTLE_PROMPT): False,
        ("subscribe", bus.SETTLE_PROMPT): False,
        # the directory is read-only, private events come from tables only
        ("publish", "$KV.rooms.12345678"): False,
        ("publish", "$KV.seats.7"): False,
        ("publish", "$KV.tables.table-a"): False,
        ("publish", "$KV.room_ids.12345678"): False,
        # but the matchmaking bucket is the lobbies' own
        ("publish", "$KV.match_tickets.t.7"): True,
        ("publish", "$JS.API.STREAM.CREATE.KV_match_tickets"): True,
        ("publish", "$JS.API.CONSUMER.CREATE.KV_match_tickets"): True,
        ("publish", USER_INBOX): False,
        ("publish", LOBBY_ROOMS): False,
        # rooms move between tables only: no lobby asks a table to take a room, nor listens
        ("publish", ADOPT_A): False,
        ("subscribe", ADOPT_A): False,
        ("subscribe", "table.*.adopt"): False,
        ("publish", COMMANDS): True,                # players' commands to the room's table
        ("subscribe", COMMANDS): False,             # nor reads another lobby's
        ("publish", "$JS.API.STREAM.UPDATE.KV_rooms"): False,
        # arbitration is between tables and arbiters
        ("publish", ARBITER_DECIDE): False,
        ("subscribe", ARBITER_DECIDE): False,
    },
    "records": {
        ("publish", "$JS.API.STREAM.INFO.SETTLE"): True,
        ("publish", "$JS.API.STREAM.CREATE.SETTLE"): True,
        ("publish", f"$JS.API.STREAM.CREATE.{LOG}"): False,    # declares SETTLE only
        ("publish", "$JS.API.CONSUMER.INFO.SETTLE.records"): True,
        ("publish", "$JS.API.CONSUMER.CREATE.SETTLE.records.settle.*"): True,
        ("publish", "$JS.API.CONSUMER.MSG.NEXT.SETTLE.records"): True,
        ("publish", "$JS.ACK.SETTLE.records.1.2.3.4.5"): True,
        ("publish", bus.SETTLE_PROMPT): False,      # (publish first: see ROOM_CHAT below)
        ("subscribe", bus.SETTLE_PROMPT): True,     # the prompt copy of each settlement
        ("subscribe", "_INBOX_records.abc.def"): True,
        ("subscribe", "_INBOX_table.abc.def"): False,
        ("publish", f"$JS.API.STREAM.UPDATE.{LOG}"): False,
        ("publish", "$JS.API.STREAM.UPDATE.SETTLE"): False,
        ("publish", "$JS.API.STREAM.CREATE.SPY"): False,
        ("publish", f"$JS.API.CONSUMER.CREATE.{LOG}"): False,
        ("publish", f"$JS.API.CONSUMER.CREATE.{LOG}.c1.room.{ROOM}.log.{SHARD}"): False,
        ("publish", f"$JS.API.STREAM.MSG.GET.{LOG}"): False,
        ("publish", "$JS.API.CONSUMER.CREATE.SETTLE.spy.settle.*"): False,
        ("publish", bus.room_log(ROOM)): False,
        ("publish", bus.room_events(ROOM)): False,
        ("publish", bus.SETTLE_SUBJECT): False,
        ("publish", "$KV.rooms.12345678"): False,
        ("subscribe", bus.room_log(ROOM)): False,
        ("subscribe", bus.room_events(ROOM)): False,
        ("subscribe", USER_INBOX): False,
        ("publish", ROOM_CHAT): False,      # (a publish row before the subscribe row of a
        ("subscribe", ROOM_CHAT): False,    # subject: the spy would see admin's own message)
        ("subscribe", bus.SETTLE_SUBJECT): False,
        ("publish", ADOPT_A): False,
        ("subscribe", ADOPT_A): False,
        ("publish", COMMANDS): False,
        ("subscribe", COMMANDS): False,
        ("publish", "$JS.API.STREAM.DELETE.SETTLE"): False,
        ("publish", "$JS.API.STREAM.PURGE.SETTLE"): False,
        ("publish", ARBITER_DECIDE): False,
        ("subscribe", ARBITER_DECIDE): False,
    },
    # the arbiter: the tables' requests in, its answers out (replies, allow_responses), and
    # nothing else. Publish rows first: a subscribe row makes admin publish on the subject,
    # which admin's spy would later count as the user's.
    "arbiter": {
        ("publish", ARBITER_DECIDE): False,         # never a request of its own
        ("publish", "arbiter.other"): False,
        ("publish", "_INBOX_table.abc.def"): False,   # an answer only, never unasked
        ("publish", "_INBOX_arbiter.abc.def"): False,
        ("publish", bus.room_log(ROOM)): False,
        ("publish", bus.room_events(ROOM)): False,
        ("publish", ROOM_CHAT): False,
        ("publish", bus.SETTLE_SUBJECT): False,
        ("publish", bus.SETTLE_PROMPT): False,
        ("publish", "$KV.rooms.12345678"): False,
        ("publish", "$JS.API.STREAM.INFO.SETTLE"): False,
        ("publish", f"$JS.API.STREAM.CREATE.{LOG}"): False,
        ("publish", f"$JS.API.STREAM.MSG.GET.{LOG}"): False,
        ("publish", f"$JS.API.CONSUMER.CREATE.{LOG}.c1.room.{ROOM}.log.{SHARD}"): False,
        ("publish", "$JS.API.DIRECT.GET.KV_rooms.$KV.rooms.12345678"): False,
        ("publish", COMMANDS): False,
        ("publish", ADOPT_A): False,
        ("publish", bus.session_kick(7)): False,
        ("subscribe", ARBITER_DECIDE): True,        # the tables' requests (queue group)
        ("subscribe", "arbiter.*"): False,
        ("subscribe", "arbiter.>"): False,
        # it asks nothing, so it has no inbox; nor does it read anyone else's
        ("subscribe", "_INBOX_arbiter.abc.def"): False,
        ("subscribe", "_INBOX_table.abc.def"): False,
        ("subscribe", "_INBOX.>"): False,
        ("subscribe", bus.room_log(ROOM)): False,
        ("subscribe", "room.*.log.*"): False,
        ("subscribe", bus.room_events(ROOM)): False,
        ("subscribe", ROOM_CHAT): False,
        ("subscribe", bus.SETTLE_SUBJECT): False,
        ("subscribe", bus.SETTLE_PROMPT): False,
        ("subscribe", COMMANDS): False,
        ("subscribe", ADOPT_A): False,
        ("subscribe", "$KV.rooms.12345678"): False,
        ("subscribe", ">"): False,
    },
}
CASES = [(user, action, subject, ok) for user, rows in MATRIX.items()
         for (action, subject), ok in rows.items()]


# ------------------------------------------------------------------ pure checks of the values
def test_the_subject_matcher() -> None:
    assert covers("room.*.log", "room.1.log") and covers("room.*.log", "room.*.log")
    assert not covers("room.*.log", "room.>") and not covers("room.*.log", "room.1.events")
    assert covers(f"$JS.API.CONSUMER.CREATE.{LOG}.>", f"$JS.API.CONSUMER.CREATE.{LOG}.a.b")
    assert not covers(f"$JS.API.CONSUMER.CREATE.{LOG}.>", f"$JS.API.CONSUMER.CREATE.{LOG}")
    assert not covers("_INBOX.>", ">") and covers(">", "_INBOX.>")


@pytest.mark.parametrize(("user", "action", "subject", "ok"), CASES)
def test_the_permission_matrix(user: str, action: str, subject: str, ok: bool) -> None:
    assert may(user, action, subject) is ok, f"{user} {action} {subject}: expected {ok}"


def test_only_the_table_can_reach_the_room_log() -> None:
    """However the subject is spelled: no other service user may write, subscribe, consume,
    get, update, purge or re-stream ROOMLOG (records may only re-declare it, see values)."""
    reads = [("subscribe", "room.*.log.*"), ("subscribe", bus.room_log(1)),
             ("publish", bus.room_log(1)), ("publish", f"$JS.API.STREAM.MSG.GET.{LOG}"),
             ("publish", f"$JS.API.DIRECT.GET.{LOG}"), ("publish", f"$JS.API.STREAM.UPDATE.{LOG}"),
             ("publish", f"$JS.API.STREAM.PURGE.{LOG}"), ("publish", f"$JS.API.STREAM.DELETE.{LOG}"),
             ("publish", f"$JS.API.CONSUMER.CREATE.{LOG}"),
             ("publish", f"$JS.API.CONSUMER.CREATE.{LOG}.x.room.1.log.1"),
             ("publish", f"$JS.API.CONSUMER.DURABLE.CREATE.{LOG}.x"),
             ("publish", f"$JS.API.CONSUMER.MSG.NEXT.{LOG}.x")]
    for user in SERVICE_USERS:
        allowed = {(a, s) for a, s in reads if may(user, a, s)}
        if user == "table":
            assert ("publish", bus.room_log(1)) in allowed
        else:
            assert not allowed, f"{user} reaches the room log: {sorted(allowed)}"
    # the only JetStream streams anyone but the table may create are SETTLE, by records, and
    # the lobbies' matchmaking bucket
    for user in ("lobby", "records"):
        for rules in users()[user]["permissions"]["publish"]["allow"]:
            if rules.startswith(("$JS.API.STREAM.CREATE.", "$JS.API.STREAM.UPDATE.")):
                assert (user, rules) in (("records", "$JS.API.STREAM.CREATE.SETTLE"), (
                    "lobby", "$JS.API.STREAM.CREATE.KV_match_tickets")), rules


def test_no_service_user_may_change_or_delete_a_stream() -> None:
    """Start-up reads a stream's info and creates the stream when it is missing, nothing more
    (services/common/bus.ensure_streams, ensure_bucket): so an operator's replicas and limits
    stand whatever a service's code or configuration says. Streams change as admin only."""
    streams = (*bus.ROOM_LOG_STREAMS, bus.SETTLE_STREAM, "KV_tables", "KV_rooms", "KV_seats",
               "KV_room_ids", "OTHER")
    for user in SERVICE_USERS:
        for op in ("UPDATE", "DELETE"):
            for name in streams:
                assert not may(user, "publish", f"$JS.API.STREAM.{op}.{name}"), (user, op, name)
    for user in SERVICE_USERS:   # every stream a user may create, it may also look at
        allow = users()[user]["permissions"]["publish"]["allow"]
        for subject in allow:
            if subject.startswith("$JS.API.STREAM.CREATE."):
                assert subject.replace(".CREATE.", ".INFO.") in allow, (user, subject)


def test_only_tables_and_arbiters_answer_requests() -> None:
    """A room is handed over between tables, and a player's command reaches its table, by a
    core NATS request; so does a table's request for an arbiter's decision. The answers go
    back as replies (allow_responses, one each), so no user gets a blanket right to publish to
    inboxes. The arbiter publishes nothing else at all (an empty allow list)."""
    answering = ("table", "arbiter")
    for user in SERVICE_USERS:
        perms = users()[user]["permissions"]
        assert ("allow_responses" in perms) is (user in answering), user
        for other in SERVICE_USERS:
            assert not may(user, "publish", f"{bus.inbox_prefix(other)}.x.y"), (user, other)
    for user in answering:
        assert users()[user]["permissions"]["allow_responses"]["max"] == 1, user
    arbiter = users()["arbiter"]["permissions"]
    assert arbiter["publish"]["allow"] == []
    assert arbiter["subscribe"]["allow"] == [ARBITER_DECIDE]


def test_no_service_user_has_blanket_rights_and_nobody_is_anonymous() -> None:
    merge = auth_values()["config"]["merge"]
    assert "no_auth_user" not in merge and "no_auth_user" not in merge["authorization"]
    assert set(users()) == {*SERVICE_USERS, *SECOND_USERS, "admin"}
    for user in SERVICE_USERS:   # a rotation moves a service to its second user and back
        assert users()[f"{user}-b"]["permissions"] == users()[user]["permissions"]
    for user in SERVICE_USERS:
        perms = users()[user]["permissions"]
        for action in ("publish", "subscribe"):
            assert "allow" in perms[action], f"{user}: an allow list, not everything"
            for wide in (">", "$JS.>", "$JS.API.>", "$KV.>", "room.>", "*.>"):
                assert not may(user, action, wide), f"{user} may {action} {wide}"


def test_every_user_has_a_password_from_the_secret_its_deployment_uses() -> None:
    """The servers read the passwords from passwords.conf of the Secret paiju-nats-server (a
    mounted file they include, never their environment); each service's pods read theirs
    from paiju-nats (files too), the same values in dev and test."""
    values = auth_values()
    merge = values["config"]["merge"]
    assert list(merge)[0] == INCLUDE_KEY and merge[INCLUDE_KEY] == INCLUDE
    assert "env" not in values["container"], "no password in the servers' environment"
    (mount,) = [p["value"] for p in values["container"]["patch"]]
    (volume,) = [p["value"] for p in values["podTemplate"]["patch"]]
    assert mount == {"name": "paiju-nats-auth", "mountPath": "/etc/paiju-nats-auth",
                     "readOnly": True}
    assert volume == {"name": "paiju-nats-auth", "secret": {
        "secretName": SERVER_SECRET, "defaultMode": 0o440}}
    assert os.path.normpath(f"/etc/nats-config/{INCLUDE}") == \
        f"{mount['mountPath']}/passwords.conf", "the include names the mounted file"
    assert values["podTemplate"]["configChecksumAnnotation"] is False, "reloads, not restarts"
    for name, user in users().items():
        var = PLACEHOLDER.match(str(user["password"]))
        assert var, f"{name}: the password is a NATS variable, never a literal"
        assert var.group(1) == password_variable(name)
    # nats-box logs in as admin from a context file of its own Secret, not its environment
    assert "container" not in values["natsBox"], "no password in nats-box's environment"
    assert nats_box_volumes(values["natsBox"]["podTemplate"]["patch"])[0] == {
        "name": "contexts", "secret": {"secretName": BOX_SECRET, "defaultMode": 0o444,
                                       "items": [{"key": "default.json",
                                                  "path": "default.json"}]}}
    # each NATS client Deployment logs in as its own user with its own key of the Secret,
    # mounted as a file (never an environment variable, never inside NATS_URL)
    for overlay in OVERLAYS:
        objs = render(K8S / "overlays" / overlay)
        if overlay != "prod":   # the servers' copy holds the same passwords
            nats = {k: base64.b64decode(v).decode() for k, v in find(objs, "Secret", SECRET)[
                "data"].items()}
            conf = base64.b64decode(find(objs, "Secret", SERVER_SECRET)["data"][
                "passwords.conf"]).decode()
            lines = [line for line in conf.splitlines() if line and not line.startswith("#")]
            assert sorted(lines) == sorted(passwords_conf(
                {u: nats[f"{u}-password"] for u in users()}).splitlines())
        for svc in SERVICE_USERS:
            c = container(objs, svc)
            items = {e["name"]: e.get("value") for e in c["env"]}
            assert items["NATS_URL"] == ",".join(
                f"nats://{server}" for server in nats_servers(overlay))
            assert items["PAIJU_NATS__USER"] == svc
            files = {f"{path}/{item['path']}": (source["name"], item["key"])
                     for path, source, _ in secret_mounts(objs, c)
                     for item in source.get("items", [])}
            for user in (svc, f"{svc}-b"):   # the service's two users (a rotation)
                assert files[items["PAIJU_NATS__PASSWORD_FILE"].replace("{user}", user)] == \
                    (SECRET, f"{user}-password")
            assert files[items["PAIJU_NATS__USER_FILE"]] == (SECRET, f"{svc}-user")
        assert "NATS_URL" not in find(objs, "ConfigMap", "paiju-config")["data"]


def test_nats_box_logs_in_as_admin_from_a_context_file_of_its_own_secret() -> None:
    """nats-box's nats CLI reads the context named in context.txt ("default", the chart's
    defaultContextName) from /etc/nats-contexts, the chart's contexts volume: the values
    swap that volume's Secret for paiju-nats-box, whose default.json holds admin's user and
    password (deploy/README.md tells how to write it). The patch's test refuses a chart
    whose first volume is another one, rather than replacing the wrong volume."""
    box = auth_values()["natsBox"]
    assert box.get("defaultContextName", "default") == "default"
    (volume,) = [v for v in nats_box_volumes(box["podTemplate"]["patch"])
                 if v["name"] == "contexts"]
    assert volume["secret"]["secretName"] == BOX_SECRET
    assert [i["path"] for i in volume["secret"]["items"]] == ["default.json"]
    with pytest.raises(ValueError, match="test failed"):
        nats_box_volumes(box["podTemplate"]["patch"], CHART_BOX_VOLUMES[::-1])
    readme = (K8S.parent / "README.md").read_text(encoding="utf-8")
    command = re.search(r"printf '(\{.*?\})\\n' \"\$\(pw admin\)\"", readme)
    assert command, "the README writes nats-box's context from admin's password"
    context = json.loads(command.group(1).replace("%s", "<admin-password>"))
    assert context == {"url": "nats://nats", "user": "admin", "password": "<admin-password>"}
    assert "admin" in users() and f"create secret generic {BOX_SECRET} --from-file=default.json" \
        in readme


def test_the_values_name_the_streams_buckets_and_consumer_of_the_code() -> None:
    from services.common.bus import ROOM_IDS_BUCKET
    from services.lobby.hub import KICK_ALL
    from services.lobby.matchmaker import BUCKET as MATCH_BUCKET
    from services.records.consumer import DURABLE, SUBJECTS

    names: set[str] = set()
    for user in SERVICE_USERS:
        for subject in users()[user]["permissions"]["publish"]["allow"]:
            m = re.match(r"\$JS\.API\.(?:STREAM\.\w+(?:\.GET|\.STEPDOWN)?|DIRECT\.GET|CONSUMER"
                         r"(?:\.DURABLE)?\.\w+(?:\.NEXT)?)\.([\w-]+)", subject)
            if m:
                names.add(m.group(1))
            if subject.startswith("$KV."):
                names.add("KV_" + subject.split(".")[1])
    buckets = {bus.TABLES_BUCKET, bus.ROOMS_BUCKET, bus.SEATS_BUCKET, ROOM_IDS_BUCKET,
               MATCH_BUCKET}
    assert names == {*bus.ROOM_LOG_STREAMS, bus.SETTLE_STREAM} | {f"KV_{b}" for b in buckets}
    assert may("records", "publish", f"$JS.API.CONSUMER.CREATE.SETTLE.{DURABLE}.{SUBJECTS}")
    assert may("lobby", "subscribe", KICK_ALL)


def test_the_values_name_the_arbiter_subject_of_the_code() -> None:
    """The subject the tables ask on and the arbiters answer (services.common.bus) is the
    values' one."""
    assert bus.ARBITER_DECIDE == ARBITER_DECIDE and bus.ARBITER_QUEUE == "arbiter"
    assert may("table", "publish", bus.ARBITER_DECIDE)
    assert may("arbiter", "subscribe", bus.ARBITER_DECIDE)
    assert bus.inbox_prefix("arbiter") == "_INBOX_arbiter"   # bus.connect(..., "arbiter")


def test_the_prod_cluster_advertises_no_server_addresses() -> None:
    prod = yaml.safe_load((K8S / "nats" / "values-prod.yaml").read_text(encoding="utf-8"))
    assert prod["config"]["cluster"]["merge"]["no_advertise"] is True
    readme = (K8S.parent / "README.md").read_text(encoding="utf-8")
    assert readme.count("-f deploy/k8s/nats/values-auth.yaml") >= 2



# the labels the official chart gives the NATS server pods of the release "nats"
NATS_POD_LABELS = {"app.kubernetes.io/name": "nats", "app.kubernetes.io/instance": "nats",
                   "app.kubernetes.io/component": "nats"}


def test_prod_nats_is_a_three_server_jetstream_cluster_one_server_per_zone() -> None:
    """R3 needs three servers that do not fail together: file storage on a volume of each
    (not memory), never two servers in one zone (so never on one node either: a required
    rule, issue 24), and a disruption budget that drains one at a time."""
    prod = yaml.safe_load((K8S / "nats" / "values-prod.yaml").read_text(encoding="utf-8"))
    config = prod["config"]
    assert config["cluster"]["enabled"] is True and config["cluster"]["replicas"] == 3
    js = config["jetstream"]
    assert js["enabled"] is True and js["memoryStore"]["enabled"] is False
    assert js["fileStore"]["enabled"] is True and js["fileStore"]["pvc"]["enabled"] is True
    assert js["fileStore"]["pvc"]["size"]
    (rule,) = prod["podTemplate"]["merge"]["spec"]["affinity"]["podAntiAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]
    assert rule["topologyKey"] == "topology.kubernetes.io/zone"
    assert rule["labelSelector"] == {"matchLabels": NATS_POD_LABELS}
    # no preference beside the rule that could be read as allowing two servers in a zone
    for spread in prod["podTemplate"].get("topologySpreadConstraints", {}).values():
        assert spread["whenUnsatisfiable"] == "DoNotSchedule"
    assert prod["podDisruptionBudget"]["enabled"] is True
    # the NetworkPolicy "nats" selects these very pods
    policy = next(d for d in load_all(K8S / "base" / "networkpolicy.yaml")
                  if d["metadata"]["name"] == "nats")
    assert policy["spec"]["podSelector"]["matchLabels"] == NATS_POD_LABELS


def test_prod_nats_collects_its_heap_before_its_memory_limit() -> None:
    """Each server has a memory limit and GOMEMLIMIT below it (with room for what Go does
    not count: stacks, the OS's buffers), so the Go heap's swings end in a collection, not
    in an OOM kill."""
    prod = yaml.safe_load((K8S / "nats" / "values-prod.yaml").read_text(encoding="utf-8"))
    resources = prod["container"]["merge"]["resources"]
    units = {"Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30}

    def size(text: str, suffix: str) -> int:
        """Kubernetes' "8Gi" (suffix ""), Go's "7GiB" (suffix "B"): each refuses the other's."""
        found = re.fullmatch(rf"(\d+)(Ki|Mi|Gi){suffix}", text)
        assert found, f"{text!r} is not a size in this field's units"
        return int(found.group(1)) * units[found.group(2)]

    limit = size(resources["limits"]["memory"], "")
    assert size(resources["requests"]["memory"], "") == limit, "no overcommit of a server"
    go = size(prod["container"]["env"]["GOMEMLIMIT"], "B")
    assert 0.8 * limit <= go <= 0.95 * limit


def test_dev_and_test_nats_is_one_jetstream_server() -> None:
    dev = yaml.safe_load((K8S / "nats" / "values-dev.yaml").read_text(encoding="utf-8"))
    assert dev["config"]["cluster"]["enabled"] is False
    assert dev["config"]["jetstream"]["enabled"] is True


def test_every_environment_drops_a_client_that_stops_answering_within_a_minute() -> None:
    """A frozen arbiter (or a lost host) keeps its place in the queue group until the server
    drops it: each request the server hands it waits out the table's arbiter timeout. With
    NATS's defaults (2 minutes, 2 PINGs) that lasts 4-6 minutes. And a PING period long
    enough that a collector's pause or a busy loop is not taken for a dead client."""
    merges = {env: environment_merge(env) for env in ("dev", "prod")}
    assert merges["dev"] == merges["prod"]
    interval, most = duration_seconds(merges["prod"]["ping_interval"]), merges["prod"]["ping_max"]
    assert 10 <= interval and interval * (most + 1) <= 60


def test_the_server_runs_with_the_ping_settings_of_the_values(authed_nats: AuthedNats) -> None:
    varz, merge = authed_nats.varz(), environment_merge("prod")
    assert varz["ping_interval"] == duration_seconds(merge["ping_interval"]) * 10**9   # nanoseconds
    assert varz["ping_max"] == merge["ping_max"]


# ------------------------------------------------------------------ a real nats-server
PASSWORDS = {user: f"pw-{user}-{os.getpid()}"
             for user in (*SERVICE_USERS, *SECOND_USERS, "admin")}


def password_variable(user: str) -> str:
    """The NATS config variable of a user's password in passwords.conf."""
    return f"PAIJU_NATS_{user.upper().replace('-', '_')}_PASSWORD"


def passwords_conf(passwords: dict[str, str]) -> str:
    """passwords.conf of the Secret paiju-nats-server: one variable a user."""
    return "".join(f'{password_variable(u)}: "{p}"\n' for u, p in passwords.items())


def format_config(doc: dict[str, Any]) -> str:
    """nats.conf as the chart writes it (nats.formatConfig): the configuration as sorted JSON,
    a ``...$include`` key as an include directive, ``<< x >>`` unquoted."""
    text = json.dumps(doc, indent=4, sort_keys=True)
    text = re.sub(r'".*\$include": "(.*)",?', r"include \1;", text)
    return re.sub(r'"<<\s+(.*)\s+>>"', r"\1", text)


def write_server_files(directory: Path, name: str, doc: dict[str, Any]) -> Path:
    """``<directory>/nats-config/<name>`` and the passwords.conf it includes (as the chart
    mounts them: /etc/nats-config/ and /etc/paiju-nats-auth/)."""
    conf = directory / "nats-config" / name
    conf.parent.mkdir(parents=True, exist_ok=True)
    conf.write_text(format_config(doc), encoding="utf-8")
    included = (conf.parent / INCLUDE).resolve()
    included.parent.mkdir(parents=True, exist_ok=True)
    if not included.exists():   # shared by the servers of a cluster: written once, before
        included.write_text(passwords_conf({u: PASSWORDS[u] for u in users()}),  # any starts
                            encoding="utf-8")
    return conf


def render_config(port: int, store: Path) -> dict[str, Any]:
    """The configuration the chart renders from prod's values and these (helm merges the
    files' config.merge); this test's port and store instead of the chart's defaults."""
    return {"port": port, "jetstream": {"store_dir": str(store)},
            **environment_merge("prod"), **auth_values()["config"]["merge"]}


@dataclass
class AuthedNats:
    port: int
    log: Path
    proc: subprocess.Popen[bytes]
    monitor: int      # the monitoring port (/varz: the settings the server runs with)

    def varz(self) -> dict[str, Any]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.monitor}/varz", timeout=5) as r:
            out: dict[str, Any] = json.loads(r.read())
        return out

    def url(self, user: str | None = None, password: str | None = None) -> str:
        if user is None:
            return f"nats://127.0.0.1:{self.port}"
        return f"nats://{user}:{password or PASSWORDS[user]}@127.0.0.1:{self.port}"

    def violations(self) -> list[str]:
        return [line for line in self.log.read_text(errors="replace").splitlines()
                if "Violation" in line]


@pytest.fixture
def authed_nats(tmp_path: Path) -> Iterator[AuthedNats]:
    """nats-server with the rendered configuration; the passwords in its environment, as
    the chart's container.env gives them from the Secret."""
    port, monitor = free_port(), free_port()
    conf = write_server_files(tmp_path, "nats.conf", render_config(port, tmp_path / "js"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAIJU_NATS_")}
    log = tmp_path / "nats.log"
    proc = subprocess.Popen([nats_server_binary(), "-c", str(conf), "-a", "127.0.0.1",
                             "-m", str(monitor), "-l", str(log)], env=env,
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while True:
            assert proc.poll() is None, "nats-server refused the rendered configuration:\n" \
                + (log.read_text() if log.exists() else conf.read_text())
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                break
            assert time.monotonic() < deadline, "nats-server did not listen"
            time.sleep(0.02)
        yield AuthedNats(port, log, proc, monitor)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# A subject each user may publish (its number varies), used as a fence (see Probe).
FENCE = {"table": "room.{}.events", "lobby": "session.kick.{}",
         "records": "$JS.ACK.SETTLE.records.{}"}


async def connect_as(server: AuthedNats, user: str, inbox_of: str = "") -> Any:
    """A connection as service ``user`` with the inbox prefix of service ``inbox_of`` (the
    user by default), as services/common/bus.connect makes it; no reconnects."""
    return await nats.connect(server.url(user), allow_reconnect=False,
                              inbox_prefix=bus.inbox_prefix(inbox_of or user))


@dataclass
class Probe:
    """What a user's connection really gets through, watched by ``admin`` (who may do
    everything). NATS keeps the order of one connection's messages, so a "fence" message
    sent after an operation tells when it has been handled: a subscription made before the
    fence is in place, a message published before it has arrived or was refused. (A flush
    is no barrier with nats-py 2.16: its PING can overtake commands still buffered.)"""

    user: str
    nc: Any
    admin: Any
    spy: Any = None            # admin's subscription to everything
    fences: Any = None         # the user's subscription to its fences from admin
    count: int = 0

    @classmethod
    async def connect(cls, server: AuthedNats, user: str) -> Probe:
        probe = cls(user, await connect_as(server, user),
                    await nats.connect(server.url("admin"), allow_reconnect=False))
        probe.spy = await probe.admin.subscribe(">")
        first = FENCE[user].format(0)
        async with asyncio.timeout(10):    # until admin's subscription is in place
            while True:
                await probe.nc.publish(first, b"fence")
                with contextlib.suppress(nats.errors.TimeoutError):
                    if (await probe.spy.next_msg(timeout=0.05)).subject == first:
                        break
        probe.fences = await probe.subscribed(f"{bus.inbox_prefix(user)}.fence.>")
        return probe

    def _next(self) -> int:
        self.count += 1
        return self.count

    async def user_fence(self) -> list[str]:
        """Send a fence from the user; the subjects admin saw from the user before it."""
        subject = FENCE[self.user].format(self._next())
        await self.nc.publish(subject, b"fence")
        seen = []
        async with asyncio.timeout(10):
            while (msg := await self.spy.next_msg(timeout=10)).subject != subject:
                seen.append(msg.subject)
        return seen

    async def admin_fence(self) -> None:
        """Send a fence from admin and wait until the user has it (what admin published
        before it has reached the user's subscriptions)."""
        subject = f"{bus.inbox_prefix(self.user)}.fence.{self._next()}"
        await self.admin.publish(subject, b"fence")
        async with asyncio.timeout(10):
            while (await self.fences.next_msg(timeout=10)).subject != subject:
                pass

    async def subscribed(self, subject: str) -> Any:
        """A subscription of the user that the server has handled (granted or refused)."""
        sub = await self.nc.subscribe(subject)
        await self.user_fence()
        return sub

    async def may(self, action: str, subject: str) -> bool:
        return await (self.publishes(subject) if action == "publish"
                      else self.receives(subject))

    async def publishes(self, subject: str) -> bool:
        """Does a message the user publishes on ``subject`` go through?"""
        await self.nc.publish(subject, b"{}")
        return subject in await self.user_fence()

    async def receives(self, subject: str) -> bool:
        """Does a subscription of the user on ``subject`` get a message published on it?"""
        sub = await self.subscribed(subject)
        await self.admin.publish(subject.replace("*", "x").replace(">", "x"), b"{}")
        await self.admin_fence()
        got = [await sub.next_msg() for _ in range(sub.pending_msgs)]
        await sub.unsubscribe()
        return any(m.data != b"fence" for m in got)   # admin's message, not a fence

    async def close(self) -> None:
        await self.nc.close()
        await self.admin.close()


@dataclass
class AnsweringProbe(Probe):
    """The probe of a user that may publish nothing but answers to the requests it receives,
    and subscribe to nothing but its request subject (the arbiter). Its fences are requests
    from admin on that subject, taken by a subscription of the user: the user's answer to one
    is its fence (allow_responses lets it through), and its arrival at the user is admin's."""

    subject: str = ARBITER_DECIDE
    requests: Any = None       # the user's own subscription to ``subject``

    @classmethod
    async def connect(cls, server: AuthedNats, user: str) -> AnsweringProbe:
        probe = cls(user, await connect_as(server, user),
                    await nats.connect(server.url("admin"), allow_reconnect=False))
        probe.spy = await probe.admin.subscribe(">")
        probe.requests = await probe.nc.subscribe(probe.subject)
        async with asyncio.timeout(10):    # until the user's subscription is in place
            while True:
                await probe.admin.publish(probe.subject, b"fence", reply="fence.ready")
                with contextlib.suppress(nats.errors.TimeoutError):
                    await probe.requests.next_msg(timeout=0.05)
                    break
        return probe

    async def _request(self, marker: str) -> Any:
        """Admin's request whose reply subject is ``marker``, as the user receives it (every
        message the user's subscription got before it is passed over)."""
        await self.admin.publish(self.subject, b"fence", reply=marker)
        async with asyncio.timeout(10):
            while (msg := await self.requests.next_msg(timeout=10)).reply != marker:
                pass
        return msg

    async def user_fence(self) -> list[str]:
        marker = f"fence.{self.user}.{self._next()}"
        await (await self._request(marker)).respond(b"fence")
        seen = []
        async with asyncio.timeout(10):
            while (msg := await self.spy.next_msg(timeout=10)).subject != marker:
                if not (msg.subject == self.subject and msg.reply.startswith("fence.")):
                    seen.append(msg.subject)   # not one of admin's fence requests
        return seen

    async def admin_fence(self) -> None:
        await self._request(f"fence.admin.{self._next()}")   # left unanswered

    async def receives(self, subject: str) -> bool:
        if subject != self.subject:
            return await super().receives(subject)
        # A second subscription on the request subject would get each fence request twice,
        # and nats-server refuses the answer to a request its connection got twice: the
        # user's own subscription is watched instead.
        await self.admin.publish(subject, b"{}")
        marker = f"fence.admin.{self._next()}"
        await self.admin.publish(self.subject, b"fence", reply=marker)
        got = []
        async with asyncio.timeout(10):
            while (msg := await self.requests.next_msg(timeout=10)).reply != marker:
                got.append(msg)
        return any(m.data == b"{}" for m in got)


# The probe of each user (Probe: one that may publish its FENCE subject).
PROBES: dict[str, type[Probe]] = {"arbiter": AnsweringProbe}


async def test_nats_server_enforces_the_matrix_and_refuses_anonymous_clients(
        authed_nats: AuthedNats) -> None:
    for url in (authed_nats.url(), authed_nats.url("lobby", "wrong"), authed_nats.url("nobody", "x")):
        with pytest.raises(Exception, match="(?i)authoriz"):
            await nats.connect(url, allow_reconnect=False, max_reconnect_attempts=0)
    for user in SERVICE_USERS:
        probe = await PROBES.get(user, Probe).connect(authed_nats, user)
        try:
            for action, subject, ok in [(a, s, o) for u, a, s, o in CASES if u == user]:
                assert await probe.may(action, subject) is ok, \
                    f"nats-server: {user} {action} {subject} should be {ok}"
        finally:
            await probe.close()


async def test_the_lobby_gets_no_seed_the_table_writes_and_reads_the_log(
        authed_nats: AuthedNats) -> None:
    table = await connect_as(authed_nats, "table")
    lobby = await Probe.connect(authed_nats, "lobby")
    try:
        js = table.jetstream()
        await bus.ensure_streams(js)
        spy = await lobby.subscribed("room.*.log.*")
        events = await lobby.subscribed(bus.room_events(1))
        # the table appends a record with a seed, then a public event: the lobby gets the
        # event (same publisher, so after the record would have come) and no record
        await js.publish(bus.room_log(1), json.dumps({"i": 0, "t": "start", "seed": 42}).encode())
        await table.publish(bus.room_events(1), b"public")
        assert (await events.next_msg(timeout=10)).data == b"public"
        assert spy.pending_msgs == 0, "the lobby received a room log record"
        # a JetStream consumer on the log is refused too (no answer: the request fails)
        with pytest.raises(nats.errors.TimeoutError):
            await lobby.nc.jetstream(timeout=0.5).pull_subscribe(
                bus.room_log(1), stream=bus.room_log_stream(1))
        # the table reads its log back
        sub = await js.pull_subscribe(bus.room_log(1), stream=bus.room_log_stream(1))
        (msg,) = await sub.fetch(1, timeout=5)
        assert json.loads(msg.data)["seed"] == 42
        await msg.ack()
    finally:
        await lobby.close()
        await table.close()


async def test_the_table_sweeps_the_directory_s_old_markers_as_its_own_user(
        authed_nats: AuthedNats) -> None:
    """The marker sweep (services/table/markers.py) works under the table's permissions:
    the watch of ``rooms`` and ``seats`` and the purge of each key up to its marker."""
    from services.table.markers import sweep
    table = await connect_as(authed_nats, "table")
    try:
        js = table.jetstream()
        for bucket in (bus.ROOMS_BUCKET, bus.SEATS_BUCKET):
            kv = await bus.ensure_bucket(js, bucket)
            await kv.put("12345678", b"{}")
            await kv.delete("12345678")
            assert await sweep(js, bucket, older_than=0) == 1
            info = await js.stream_info(f"KV_{bucket}", subjects_filter=">")
            assert not info.state.subjects
    finally:
        await table.close()


async def test_no_user_receives_another_user_s_inbox_traffic(authed_nats: AuthedNats) -> None:
    table = await connect_as(authed_nats, "table")
    records = await connect_as(authed_nats, "records")
    lobby = await Probe.connect(authed_nats, "lobby")
    try:
        await bus.ensure_streams(table.jetstream())
        # each service has its own inboxes; the lobby may subscribe none of the others'
        spies = [await lobby.subscribed(subject)
                 for subject in ("_INBOX.>", "_INBOX_records.>", "_INBOX_table.>", ">")]
        await table.jetstream().publish(bus.SETTLE_SUBJECT, b'{"private": "hands"}')
        sub = await records.jetstream().pull_subscribe(
            "settle.*", durable="records", stream=bus.SETTLE_STREAM)
        (msg,) = await sub.fetch(1, timeout=5)
        await msg.ack()
        # a copy for the lobby left before records got its delivery, so before admin's fence
        await lobby.admin_fence()
        seen = [(await spy.next_msg()).data for spy in spies for _ in range(spy.pending_msgs)]
        assert not any(b"private" in data for data in seen), "the lobby read a settlement"
    finally:
        await lobby.close()
        await records.close()
        await table.close()


async def test_a_table_answers_an_adopt_request_once(authed_nats: AuthedNats) -> None:
    """A draining table hands a room over with a core NATS request on the new owner's
    ``table.<instance>.adopt`` (services/table/server.adopt_subject); the answer goes to the
    asking table's inbox as a reply, once. Publishing to that inbox unasked is refused."""
    from services.table.adoption import adopt_subject

    asker = await connect_as(authed_nats, "table", "table-a")
    owner = await connect_as(authed_nats, "table", "table-b")
    try:
        async def answer(msg: Any) -> None:
            await owner.publish("_INBOX_table.unasked", b"forged")   # not a reply: refused
            await msg.respond(b'{"ok": true}')
            await msg.respond(b'{"ok": "twice"}')                    # a second reply: refused

        await owner.subscribe(adopt_subject("table-b"), cb=answer)
        await bus.sync(owner)
        forged = await asker.subscribe("_INBOX_table.unasked")
        replies = await asker.subscribe("_INBOX_table.answers")
        await bus.sync(asker)
        await asker.publish(adopt_subject("table-b"), b'{"room_id": 1}',
                            reply="_INBOX_table.answers")
        assert (await replies.next_msg(timeout=10)).data == b'{"ok": true}'
        await bus.sync(owner)      # the refused messages have been handled by the server
        await bus.sync(asker)
        assert forged.pending_msgs == 0 and replies.pending_msgs == 0
        refused = authed_nats.violations()
        assert len(refused) == 2 and all("_INBOX_table" in line for line in refused), refused
    finally:
        await asker.close()
        await owner.close()


async def test_a_lobby_command_reaches_its_table_which_may_only_answer_it(
        authed_nats: AuthedNats) -> None:
    """Player commands are core NATS requests on the table's ``table.<address>.commands``
    (services/table/nats_commands.py): the lobby user may send them, the table user may
    only answer them, as a reply to the asking lobby's inbox; a table cannot send one."""
    subject = bus.table_commands("127.0.0.1:50052")
    lobby = await connect_as(authed_nats, "lobby")
    table = await connect_as(authed_nats, "table")
    try:
        async def answer(msg: Any) -> None:
            await msg.respond(b"reply:" + msg.data)

        await table.subscribe(subject, cb=answer)
        await bus.sync(table)
        reply = await lobby.request(subject, b"cmd", timeout=10)
        assert reply.data == b"reply:cmd"
        await table.publish(subject, b"forged")      # not the table's to send: refused
        await bus.sync(table)
        refused = authed_nats.violations()
        assert len(refused) == 1 and "commands" in refused[0], refused
    finally:
        await lobby.close()
        await table.close()


async def test_a_table_asks_an_arbiter_which_may_only_answer(authed_nats: AuthedNats) -> None:
    """A table asks for a window's decision with a core NATS request on ``arbiter.decide``
    (services/table/arbiter_client.py); the arbiters take it in their queue group and answer
    once, as a reply to the table's inbox (services/arbiter/server.py). With no arbiter
    subscribed, NATS says "no responders" at once (the table then decides itself). The
    arbiter may publish nothing else, not even a request of its own; the lobby and records
    may not ask."""
    table = await connect_as(authed_nats, "table")
    arbiter = await connect_as(authed_nats, "arbiter")
    lobby = await connect_as(authed_nats, "lobby")
    records = await connect_as(authed_nats, "records")
    try:
        started = time.monotonic()
        with pytest.raises(nats.errors.NoRespondersError):
            await table.request(ARBITER_DECIDE, b"window", timeout=5)
        assert time.monotonic() - started < 2, "no responders comes at once, not at the timeout"

        forgeries: list[str] = []

        async def answer(msg: Any) -> None:
            if not forgeries:   # the first request only: each of these is refused
                forgeries.extend(["_INBOX_table.unasked", ARBITER_DECIDE])
                await arbiter.publish("_INBOX_table.unasked", b"forged")   # not a reply
                await arbiter.publish(ARBITER_DECIDE, b"own request")      # not its to ask
            await msg.respond(b"decision:" + msg.data)
            if forgeries[-1] != "twice":
                forgeries.append("twice")
                await msg.respond(b"twice")                                # a second answer

        await arbiter.subscribe(ARBITER_DECIDE, queue="arbiter", cb=answer)
        await bus.sync(arbiter)
        forged = await table.subscribe("_INBOX_table.unasked")
        await bus.sync(table)
        reply = await table.request(ARBITER_DECIDE, b"window", timeout=10)
        assert reply.data == b"decision:window"
        await lobby.publish(ARBITER_DECIDE, b"from a lobby")      # refused
        await records.publish(ARBITER_DECIDE, b"from records")    # refused
        for nc in (arbiter, lobby, records, table):   # the refusals handled by the server
            await bus.sync(nc)
        assert forged.pending_msgs == 0
        refused = authed_nats.violations()
        assert len(refused) == 5, refused
        assert sum(ARBITER_DECIDE in line for line in refused) == 3, refused
        assert sum("_INBOX_table" in line for line in refused) == 2, refused
    finally:
        for nc in (records, lobby, arbiter, table):
            await nc.close()


# ------------------------------------------------------------------ the prod cluster
@dataclass
class ProdCluster:
    """Three nats-servers on loopback with the configuration the chart renders from
    values-prod.yaml and values-auth.yaml (cluster merge, users, JetStream), routed as the
    StatefulSet's pods are; NATS_URL as the prod overlay builds it, on these ports."""

    ports: list[int]
    logs: list[Path]
    procs: list[subprocess.Popen[bytes]]

    def urls(self, user: str) -> str:
        return ",".join(f"nats://{user}:{PASSWORDS[user]}@127.0.0.1:{port}"
                        for port in self.ports)

    def violations(self) -> list[str]:
        return [line for log in self.logs if log.exists()
                for line in log.read_text(errors="replace").splitlines() if "Violation" in line]


@pytest.fixture
def prod_cluster(tmp_path: Path) -> Iterator[ProdCluster]:
    # the ports are free when picked, but one of them can be taken before its server binds
    # it (a route's outgoing connection from a server already started, another test's
    # client): the cluster is then started again on new ports
    for attempt in range(3):
        cluster = start_prod_cluster(tmp_path / f"try{attempt}")
        if cluster is not None:
            break
    else:
        pytest.fail("the prod NATS cluster found a port taken three times")
    try:
        yield cluster
    finally:
        stop_servers(cluster.procs)


def stop_servers(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        proc.send_signal(signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def start_prod_cluster(tmp_path: Path) -> ProdCluster | None:
    """The cluster, every server healthy; None when a server found its port taken."""
    tmp_path.mkdir(parents=True)
    prod = yaml.safe_load((K8S / "nats" / "values-prod.yaml").read_text(encoding="utf-8"))
    size = prod["config"]["cluster"]["replicas"]
    ports = [free_port() for _ in range(size)]
    routes = [free_port() for _ in range(size)]
    monitors = [free_port() for _ in range(size)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAIJU_NATS_")}
    logs: list[Path] = []
    procs: list[subprocess.Popen[bytes]] = []
    ready = False
    try:
        for i in range(size):
            doc = {"port": ports[i], "http_port": monitors[i], "server_name": f"nats-{i}",
                   "jetstream": {"store_dir": str(tmp_path / f"js{i}")},
                   "cluster": {"name": "nats", "listen": f"127.0.0.1:{routes[i]}",
                               "routes": [f"nats://127.0.0.1:{r}" for r in routes if r != routes[i]],
                               **prod["config"]["cluster"]["merge"]},
                   **prod["config"]["merge"], **auth_values()["config"]["merge"]}
            conf = write_server_files(tmp_path, f"nats{i}.conf", doc)
            logs.append(tmp_path / f"nats{i}.log")
            procs.append(subprocess.Popen(
                [nats_server_binary(), "-c", str(conf), "-a", "127.0.0.1", "-l", str(logs[i])],
                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True))
        deadline = time.monotonic() + 30
        for i, proc in enumerate(procs):   # every server healthy: JetStream has its leader
            while True:
                if proc.poll() is not None:
                    text = logs[i].read_text() if logs[i].exists() else "died"
                    if "address already in use" in text:
                        return None
                    raise AssertionError(text)
                with contextlib.suppress(OSError), urllib.request.urlopen(
                        f"http://127.0.0.1:{monitors[i]}/healthz", timeout=1) as reply:
                    if reply.status == 200:
                        break
                assert time.monotonic() < deadline, "the NATS cluster did not come up"
                time.sleep(0.1)
        ready = True
        return ProdCluster(ports, logs, procs)
    finally:
        if not ready:
            stop_servers(procs)


async def test_prod_nats_gives_r3_under_the_service_users_and_survives_a_server(
        prod_cluster: ProdCluster) -> None:
    """On the prod NATS (three servers, the users of values-auth.yaml), with NATS_URL listing
    every server: the table creates its streams and buckets with three replicas, records
    finds SETTLE as it is, a stream an operator left at R1 stays R1 (reported, not updated:
    the users may not), and an append still lands after a server is killed."""
    from prometheus_client import REGISTRY

    from services.common.bus import ROOM_IDS_BUCKET

    admin = await nats.connect(servers=bus.server_urls(prod_cluster.urls("admin")))
    table = await bus.connect(prod_cluster.urls("table"), "table-a")
    records = await bus.connect(prod_cluster.urls("records"), "records")
    try:
        ajs = admin.jetstream()
        # a stream created before R3 was configured (an older release, a dev run)
        old = bus.room_log_stream(0)
        await ajs.add_stream(name=old, subjects=["room.*.log.0"], num_replicas=1)
        js = table.jetstream()
        await bus.ensure_streams(js, 3)
        buckets = (bus.TABLES_BUCKET, bus.ROOMS_BUCKET, bus.SEATS_BUCKET, ROOM_IDS_BUCKET)
        for bucket in buckets:
            await bus.ensure_bucket(js, bucket, replicas=3)
        await bus.ensure_streams(records.jetstream(), 3, room_log=False)
        in_force = {name: (await ajs.stream_info(name)).config.num_replicas
                    for name in (*bus.ROOM_LOG_STREAMS, bus.SETTLE_STREAM,
                                 *(f"KV_{b}" for b in buckets))}
        assert in_force == {**{name: 3 for name in bus.ROOM_LOG_STREAMS}, old: 1,
                            bus.SETTLE_STREAM: 3, **{f"KV_{b}": 3 for b in buckets}}
        for name, replicas in in_force.items():   # what the alert compares
            assert REGISTRY.get_sample_value("paiju_stream_replicas", {"stream": name}) == replicas
            assert REGISTRY.get_sample_value("paiju_stream_replicas_target", {"stream": name}) == 3
        # the table's server killed: the settlement stream keeps its quorum, the table's
        # connection moves to another listed server (with its credentials: the servers
        # advertise none), and an append is acknowledged
        killed = table.connected_url.port
        prod_cluster.procs[prod_cluster.ports.index(killed)].kill()
        async with asyncio.timeout(30):
            while True:
                with contextlib.suppress(Exception):
                    ack = await js.publish(bus.SETTLE_SUBJECT, b"{}", timeout=2)
                    break
                await asyncio.sleep(0.2)
        assert ack.stream == bus.SETTLE_STREAM and table.connected_url.port != killed
        info = await ajs.stream_info(bus.SETTLE_STREAM)
        assert info.state.messages == 1 and info.config.num_replicas == 3
    finally:
        await records.close()
        await table.close()
        await admin.close()
    assert prod_cluster.violations() == [], "a service hit a NATS permission it lacks"


# ------------------------------------------------------------------ the real services
SECRET_TOKEN = "deploy-test-secret"
CONSOLE_TOKEN = "deploy-console-token-0123456789"


@contextlib.asynccontextmanager
async def services_as_their_users(server: AuthedNats, db: Path) -> AsyncIterator[dict[str, Any]]:
    """records, arbiter, table and lobby (console on), each with its own NATS user."""
    from services.arbiter.server import start as start_arbiter
    from services.common.config import load_config
    from services.lobby.server import start as start_lobby
    from services.records.server import start as start_records
    from services.table.server import start as start_table

    def cfg_for(user: str | None) -> Any:
        env = {"PAIJU_TABLE__INSTANCE": "table-auth"}
        if user:   # as the pods: the servers in NATS_URL, the password a mounted file
            password = db.parent / f"{user}-password"
            password.write_text(PASSWORDS[user] + "\n", encoding="utf-8")
            env.update({"NATS_URL": server.url(), "PAIJU_NATS__USER": user,
                        "PAIJU_NATS__PASSWORD_FILE": str(password)})
        return load_config("test", environ=env)

    cfg = cfg_for("records")
    records = await start_records(replace(cfg, records=replace(
        cfg.records, database_url=f"sqlite+aiosqlite:///{db}")), port=0, metrics_port=-1)
    arbiter = await start_arbiter(cfg_for("arbiter"), port=0, metrics_port=-1)
    table_cfg = cfg_for("table")   # it asks the arbiter over NATS: no address
    table = await start_table(table_cfg, port=0, metrics_port=-1)
    cfg = cfg_for("lobby")
    lobby = await start_lobby(replace(
        cfg, records=replace(cfg.records, address=f"127.0.0.1:{records.port}"),
        lobby=replace(cfg.lobby, token_secret=SECRET_TOKEN, console_port=0,
                      console_token=CONSOLE_TOKEN)), port=0, metrics_port=-1)
    running = {"records": records, "arbiter": arbiter, "table": table, "lobby": lobby,
               "table_cfg": table_cfg}
    try:
        yield running
    finally:
        await lobby.stop(0.5)
        await running["table"].stop(0)
        await arbiter.stop(0)
        await records.stop(0)


async def test_the_services_play_settle_rebuild_and_serve_as_their_own_users(
        authed_nats: AuthedNats, tmp_path: Path) -> None:
    from prometheus_client import REGISTRY

    from clients.robot.robot import run_tables
    from paiju.v1 import (
        arbiter_pb2,
        common_pb2,
        records_pb2,
        records_pb2_grpc,
        table_pb2,
        table_pb2_grpc,
    )
    from services.table.server import start as start_table

    def no_arbiter() -> float:   # windows the table decided itself: no arbiter to take them
        return REGISTRY.get_sample_value("paiju_table_arbiter_fallback_total",
                                         {"reason": "unavailable"}) or 0.0

    admin = await nats.connect(authed_nats.url("admin"))
    unavailable = no_arbiter()
    async with services_as_their_users(authed_nats, tmp_path / "records.db") as running:
        lobby, records = running["lobby"], running["records"]
        # the arbiter answers a request on arbiter.decide as the arbiter user, to a table
        table_nc = await connect_as(authed_nats, "table")
        try:
            msg = await table_nc.request(
                ARBITER_DECIDE, arbiter_pb2.ResolveRequest().SerializeToString(), timeout=10)
            assert arbiter_pb2.ResolveReply.FromString(msg.data).error, "an empty window"
        finally:
            await table_nc.close()
        # a room of four robots through the lobby: login, kick fan-out, create, join, events,
        # private prompts, the table's log and settlements, records' consumer
        stats = await run_tables(f"127.0.0.1:{lobby.port}", "xuezhan", 1, SECRET_TOKEN,
                                 hands=1, first_uid=730001)
        assert all(s.hands == 1 and not s.errors for s in stats), stats
        room_id = stats[0].rooms[0]
        async with grpc.aio.insecure_channel(f"127.0.0.1:{records.port}") as channel:
            stub = records_pb2_grpc.RecordsStub(channel)

            async def written() -> bool:
                hands = await stub.ListHands(records_pb2.ListHandsRequest(room_id=room_id))
                return any(h.hand_no == 1 for h in hands.hands)

            await eventually(written, "records wrote the hand", seconds=30)

        # the closed room's log is purged by the table
        async def purged() -> bool:
            info = await admin.jetstream().stream_info(
                bus.room_log_stream(room_id), subjects_filter=bus.room_log(room_id))
            return not (info.state.subjects or {}).get(bus.room_log(room_id))

        await eventually(purged, "the closed room's log is purged", seconds=30)

        # the console reads the directory (watches on tables and rooms) as the lobby
        console = lobby.console
        async with aiohttp.ClientSession(headers={
                "Authorization": f"Bearer {CONSOLE_TOKEN}"}) as http:
            for path in ("/api/overview", "/api/tables", "/api/rooms", "/api/users/730001"):
                async with http.get(f"http://127.0.0.1:{console.port}{path}") as resp:
                    assert resp.status in (200, 404), (path, resp.status, await resp.text())
            async with http.get(f"http://127.0.0.1:{console.port}/api/tables") as resp:
                assert [t["instance"] for t in (await resp.json())["tables"]] == ["table-auth"]

        async def get_room(port: int, room_id: int) -> Any:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                return await table_pb2_grpc.TableStub(channel).GetRoom(
                    table_pb2.GetRoomRequest(room_id=room_id))

        # a room left open survives a table restart: rebuilt from its log by the table user
        table = running["table"]
        async with grpc.aio.insecure_channel(f"127.0.0.1:{table.port}") as channel:
            created = await table_pb2_grpc.TableStub(channel).CreateRoom(
                table_pb2.CreateRoomRequest(game=common_pb2.DADUN, base_score=1, total_hands=2))
        open_room = created.room.room_id
        await table.stop(0)
        running["table"] = table = await start_table(running["table_cfg"], port=0,
                                                     metrics_port=-1)
        room = await get_room(table.port, open_room)
        assert room.room_id == open_room and room.total_hands == 2

        # a draining table (SIGTERM) hands the room to another table: the adopt request and
        # its reply, the directory update and the rebuild, all as the table user
        cfg = running["table_cfg"]
        second = await start_table(replace(cfg, table=replace(cfg.table, instance="table-auth-2")),
                                   port=0, metrics_port=-1)
        await table.stop(0)
        running["table"] = second
        room = await get_room(second.port, open_room)
        assert room.room_id == open_room and room.total_hands == 2
    await admin.close()
    assert authed_nats.violations() == [], "a service hit a NATS permission it lacks"
    assert no_arbiter() == unavailable, "a window found no arbiter subscribed"
