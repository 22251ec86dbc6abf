"""Network partitions of an :class:`EmbeddedNatsCluster` on loopback: a TCP proxy in front
of each node's route port (the cluster made with ``fronted_routes=True``), so that one node
can be cut off from the others (every route connection to or from it closed, new ones
refused) while its client port stays up and its clients stay connected to it.

A route between two nodes is one or more TCP connections dialled by either of them to the
other's proxy. The proxy in front of node j knows j is one end; the other end, the node
that dialled, is found by the dialling socket's owner: the connection's source port is
looked up in /proc/net/tcp and the socket's inode among the file descriptors of each
node's nats-server process (Linux). A connection whose dialler cannot be told (none of the
nodes owns it) is refused while any node is cut, so a cut never leaks.

The proxies run on an event loop of their own in a daemon thread, so a test's busy loop
never delays route traffic; :meth:`RouteProxies.cut` and :meth:`RouteProxies.heal` are
plain calls, safe from sync or async code.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import logging
import os
import threading
import time
from collections.abc import Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nats

from services.common import bus
from services.common.natsd import EmbeddedNatsCluster
from tests.support import cluster as chaos

log = logging.getLogger("paiju.partition")

CHUNK = 64 * 1024
PICK_BOUND = 20.0    # seconds the partition waits for a node whose table owns a room with play ahead


def _socket_inode(local_port: int, remote_port: int) -> str | None:
    """The inode of the IPv4 TCP socket bound to ``local_port`` and connected to
    ``remote_port`` (both on loopback), from /proc/net/tcp."""
    want_local = f":{local_port:04X}"
    want_remote = f":{remote_port:04X}"
    try:
        with open("/proc/net/tcp", encoding="ascii") as table:
            next(table)
            for line in table:
                cols = line.split()
                if cols[1].endswith(want_local) and cols[2].endswith(want_remote):
                    return cols[9]
    except OSError:
        return None
    return None


def _owner(pids: dict[int, int], inode: str) -> int | None:
    """The node (index) whose process holds the socket ``inode``."""
    target = f"socket:[{inode}]"
    for index, pid in pids.items():
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            with contextlib.suppress(OSError):
                if os.readlink(f"/proc/{pid}/fd/{fd}") == target:
                    return index
    return None


@dataclass(eq=False)
class _Link:
    """One proxied route connection: ``origin`` dialled ``dest``."""

    origin: int | None
    dest: int
    writers: list[asyncio.StreamWriter] = field(default_factory=list)

    def touches(self, node: int) -> bool:
        return node in (self.origin, self.dest)

    def close(self) -> None:
        for writer in self.writers:
            with contextlib.suppress(Exception):
                writer.transport.abort()   # a reset, nothing more goes either way


class RouteProxies:
    """The proxies of one cluster's route ports. :meth:`start` before the cluster starts
    (its nodes dial each other through them), :meth:`stop` after it stopped."""

    def __init__(self, cluster: EmbeddedNatsCluster) -> None:
        if any(n.route_port == n.cluster_port for n in cluster.nodes):
            raise ValueError("the cluster must be made with fronted_routes=True")
        self.cluster = cluster
        self.cut_nodes: set[int] = set()
        self.links: set[_Link] = set()
        self.refused = 0            # route connections refused while a node was cut
        self.unknown = 0            # connections whose dialler was not found
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="route-proxies",
                                        daemon=True)
        self._servers: list[asyncio.Server] = []

    def _call(self, coro: Coroutine[Any, Any, Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout=10)

    def start(self) -> RouteProxies:
        self._thread.start()
        self._call(self._listen())
        return self

    def stop(self) -> None:
        if not self._thread.is_alive():
            return
        self._call(self._close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)

    def cut(self, i: int) -> None:
        """Cut node ``i`` off: its route connections are reset and new ones refused, both
        ways; its client port stays up."""
        self._call(self._cut(i))

    def heal(self, i: int) -> None:
        """Let node ``i``'s routes connect again (the nodes redial them within a second)."""
        self._call(self._heal(i))

    def connected(self, i: int, j: int) -> bool:
        """A proxied route connection between nodes ``i`` and ``j`` is open now."""
        return any({link.origin, link.dest} == {i, j} for link in list(self.links))

    # -- on the proxies' loop ---------------------------------------------------------------
    async def _listen(self) -> None:
        for node in self.cluster.nodes:
            server = await asyncio.start_server(functools.partial(self._accept, node.index),
                                                node.host, node.route_port, reuse_address=True)
            self._servers.append(server)

    async def _close(self) -> None:
        for server in self._servers:
            server.close()
        for link in list(self.links):
            link.close()
        self.links.clear()

    async def _cut(self, i: int) -> None:
        self.cut_nodes.add(i)
        for link in [link for link in self.links if link.touches(i)]:
            link.close()
            self.links.discard(link)
        log.info("node %d cut off (route connections reset, new ones refused)", i)

    async def _heal(self, i: int) -> None:
        self.cut_nodes.discard(i)
        log.info("node %d healed", i)

    def _origin(self, peer_port: int, dest_port: int) -> int | None:
        pids = {n.index: n.proc.pid for n in self.cluster.nodes if n.proc is not None}
        inode = _socket_inode(peer_port, dest_port)
        return None if inode is None else _owner(pids, inode)

    async def _accept(self, dest: int, reader: asyncio.StreamReader,
                      writer: asyncio.StreamWriter) -> None:
        node = self.cluster.nodes[dest]
        peer_port = int(writer.get_extra_info("peername")[1])
        origin = self._origin(peer_port, node.route_port)
        if origin is None:
            self.unknown += 1
        if dest in self.cut_nodes or origin in self.cut_nodes or (
                origin is None and self.cut_nodes):
            self.refused += 1
            writer.transport.abort()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(node.host, node.cluster_port)
        except OSError:
            writer.transport.abort()
            return
        link = _Link(origin, dest, [writer, up_writer])
        self.links.add(link)
        try:
            await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))
        finally:
            link.close()
            self.links.discard(link)

    @staticmethod
    async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(CHUNK):
                writer.write(data)
                await writer.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            with contextlib.suppress(Exception):
                writer.transport.abort()


# ---------------------------------------------------------------------------- who is where

def _tcp_table() -> dict[str, tuple[int, int]]:
    """inode -> (local port, remote port) of every IPv4 TCP socket (/proc/net/tcp)."""
    out: dict[str, tuple[int, int]] = {}
    with contextlib.suppress(OSError), open("/proc/net/tcp", encoding="ascii") as table:
        next(table)
        for line in table:
            cols = line.split()
            out[cols[9]] = (int(cols[1].rsplit(":", 1)[1], 16), int(cols[2].rsplit(":", 1)[1], 16))
    return out


def nats_nodes_of(pid: int, cluster: EmbeddedNatsCluster) -> set[int]:
    """The nodes whose client port the process ``pid`` has a connection to."""
    ports = {n.port: n.index for n in cluster.nodes}
    sockets = _tcp_table()
    out: set[int] = set()
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return out
    for fd in fds:
        with contextlib.suppress(OSError):
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
            if link.startswith("socket:["):
                ends = sockets.get(link[8:-1])
                if ends is not None and ends[1] in ports:
                    out.add(ports[ends[1]])
    return out


# ---------------------------------------------------------------------------- the room logs

@dataclass
class Stored:
    """One record as stored in a room-log stream."""

    seq: int
    index: int
    kind: str
    writer: str          # the boot in its message id (``room:index:boot``)
    owner_boot: str      # an ``owner`` record's boot


class LogRecorder:
    """Every record stored in the room-log streams, read as the streams hold them (ordered
    consumers from the first message, over a connection to the nodes given), before a
    closed room's log is purged."""

    def __init__(self, urls: list[str]) -> None:
        self.urls = urls
        self.nc: Any = None
        self.rooms: dict[int, dict[int, Stored]] = {}

    async def start(self) -> None:
        import nats
        from nats.js.api import DeliverPolicy

        self.nc = await nats.connect(self.urls, name="partition-log-recorder",
                                     max_reconnect_attempts=-1, reconnect_time_wait=0.2)
        js = self.nc.jetstream(timeout=3)
        for shard, stream in enumerate(bus.ROOM_LOG_STREAMS):
            await js.subscribe(f"room.*.log.{shard}", stream=stream, ordered_consumer=True,
                               deliver_policy=DeliverPolicy.ALL, cb=self._on)

    async def close(self) -> None:
        if self.nc is not None:
            with contextlib.suppress(Exception):
                await self.nc.close()

    async def _on(self, msg: Any) -> None:
        import json

        try:
            room = int(msg.subject.split(".")[1])
            rec = json.loads(msg.data)
            msg_id = (msg.headers or {}).get("Nats-Msg-Id", "")
            seq = int(msg.metadata.sequence.stream)
        except Exception:
            return
        parts = msg_id.split(":")
        self.rooms.setdefault(room, {})[seq] = Stored(
            seq, int(rec.get("i", -1)), str(rec.get("t", "")),
            parts[2] if len(parts) == 3 else "", str(rec.get("boot", "")))


def two_writers(records: dict[int, Stored]) -> tuple[list[str], list[str]]:
    """Breaches of one writer at a time in one room's stored log, and gaps in it. A writer
    (a table process, its boot) holds the room from its first record (``create``, or its
    ``owner`` record) until another's ``owner`` record; a record of any other writer in
    between is a second owner writing."""
    breaches: list[str] = []
    gaps: list[str] = []
    holder = ""
    last_index = -1
    for seq in sorted(records):
        rec = records[seq]
        if rec.index != last_index + 1:
            what = "twice" if rec.index <= last_index else f"after {last_index}"
            (breaches if rec.index <= last_index else gaps).append(
                f"record {rec.index} (seq {seq}) {what}")
        last_index = max(last_index, rec.index)
        if rec.kind == "owner" and rec.owner_boot == rec.writer:
            holder = rec.writer
        elif not holder:
            holder = rec.writer
        elif rec.writer != holder:
            breaches.append(f"record {rec.index} ({rec.kind}, seq {seq}) written by {rec.writer} "
                            f"while {holder} held the room")
    return breaches, gaps


# ---------------------------------------------------------------------------- the fault

def stream_states(cluster: EmbeddedNatsCluster, i: int) -> dict[str, tuple[int, int]]:
    """stream -> (messages, last sequence) in node ``i``'s own store (its monitor's /jsz)."""
    import json
    import urllib.request

    node = cluster.nodes[i]
    url = f"http://{node.host}:{node.monitor_port}/jsz?accounts=true&streams=true"
    with urllib.request.urlopen(url, timeout=2) as reply:
        jsz = json.loads(reply.read())
    return {d["name"]: (int(d["state"]["messages"]), int(d["state"]["last_seq"]))
            for account in jsz.get("account_details") or ()
            for d in account.get("stream_detail") or ()}


class PartitionRun(chaos.ChaosRun):
    """The chaos run (tests/support/cluster.py) with one more fault, ``partition``: the NATS
    node a table owning rooms in play is connected to (and a lobby, when one is) is cut off
    from the other two, its clients left connected to it; healed once every service has
    left it and the rooms played again."""

    def __init__(self, stack: chaos.ClusterStack, plan: chaos.ChaosPlan,
                 proxies: RouteProxies) -> None:
        super().__init__(stack, plan)
        self.proxies = proxies
        self.recorder: LogRecorder | None = None
        self.cut_node: int | None = None
        self.left: dict[str, float | None] = {}     # label -> seconds from the cut
        self.healed_in: float | None = None

    def placement(self) -> dict[str, set[int]]:
        """label -> the NATS nodes its process is connected to now."""
        out: dict[str, set[int]] = {}
        for label, proc in self.stack.procs.items():
            if proc.proc is not None and proc.proc.poll() is None:
                out[label] = nats_nodes_of(proc.proc.pid, self.stack.nats)
        return out

    async def _leave(self, n: int, labels: list[str], cut_at: float) -> None:
        """Note when each process connected to node ``n`` at the cut left it for good."""
        deadline = cut_at + self.plan.recovery_bound
        pending = set(labels)
        while pending and chaos.now() < deadline:
            where = self.placement()
            for label in labels:
                if where.get(label) and n not in where[label]:
                    if label in pending:
                        self.left[label] = chaos.now() - cut_at
                        pending.discard(label)
                elif label not in pending:     # back on the cut node
                    pending.add(label)
                    self.left.pop(label, None)
            await asyncio.sleep(0.2)
        self.left.update({label: None for label in pending})

    def _score(self, n: int, rooms: list[int], owners: dict[int, str],
               where: dict[str, set[int]]) -> tuple[bool, bool, int]:
        """How well cutting node ``n`` tests the partition: a table there (not every one)
        owns a room with a hand to come (one in its last hand may end as the cut strikes,
        and then nothing of it is left to move); a lobby there and one elsewhere; how many
        such rooms."""
        tables, lobbies = self.stack.of("table"), self.stack.of("lobby")
        on = [t for t in tables if n in where.get(t, ())]
        mine = [r for r in rooms if owners.get(r) in on
                and (run := self.run_of(r)) is not None and run.hands_ahead()]
        lobby_on = any(n in where.get(x, ()) for x in lobbies)
        lobby_off = any(n not in where.get(x, ()) for x in lobbies)
        return bool(mine) and len(on) < len(tables), lobby_on and lobby_off, len(mine)

    async def fault_partition(self) -> list[chaos.FaultRecord]:
        cluster = self.stack.nats
        tables, lobbies = self.stack.of("table"), self.stack.of("lobby")
        deadline = chaos.now() + PICK_BOUND
        while True:
            rooms = await self.wait_in_flight()
            owners = await self._owners()
            where = self.placement()
            scores = {n: self._score(n, rooms, owners, where) for n in range(len(cluster.nodes))}
            n = max(scores, key=lambda i: scores[i])
            if scores[n][0] or chaos.now() >= deadline:
                break
            await asyncio.sleep(0.2)
        self.cut_node = n
        cut_name = cluster.nodes[n].server_name
        led = sorted(name for name, node in (await self._room_log_leaders()).items()
                     if node == cut_name)
        on_node = sorted(label for label, nodes in where.items() if n in nodes)
        cut_tables = [t for t in tables if t in on_node]
        mine = [r for r in rooms if owners.get(r) in cut_tables]
        self.recorder = LogRecorder([node.url for node in cluster.nodes if node.index != n])
        await self.recorder.start()
        # from now on the rooms are seen as the majority sees them
        await self.observer.conns[n].close()
        rec = chaos.FaultRecord(
            "partition", f"n{n} ({', '.join(on_node) or 'no service'})", chaos.now(), mine,
            notes=[f"placement before: { {k: sorted(v) for k, v in sorted(where.items())} }",
                   f"{len(mine)} of {len(rooms)} rooms in play owned by {cut_tables}",
                   f"room-log streams it led: {', '.join(led) or 'none'}"])
        records = [rec]
        # the majority's view of the leaders (the cut node goes on calling itself leader)
        majority = await nats.connect([node.url for node in cluster.nodes if node.index != n],
                                      name="chaos-majority", connect_timeout=2)
        await asyncio.to_thread(self.proxies.cut, n)
        leaving = asyncio.create_task(self._leave(n, on_node, rec.at))
        elections = asyncio.create_task(self._elections(led, cut_name, rec.at,
                                                        js=majority.jetstream(timeout=3)))
        for label in [x for x in lobbies if x in on_node]:
            home = lobbies.index(label)
            affected = [r for r in rooms
                        if any(x.home == home for x in getattr(self.run_of(r), "robots", ()))]
            records.append(chaos.FaultRecord("partition-lobby", f"{label} on n{n}", rec.at,
                                             affected, homes={home}))
        try:
            took = await self.wait_recovered(rec)
            rec.election = await elections
        finally:
            elections.cancel()
            await majority.close()
        if led:
            rec.notes.append(chaos.election_note(led, rec.election, "the cut (the majority's view)"))
        rec.notes.append(f"its tables' rooms played again on the majority {took:.1f} s after "
                         "the cut")
        for other in records[1:]:
            took = await self.wait_recovered(other)
            other.notes.append(f"its players got a prompt again {took:.1f} s after the cut")
        await leaving
        rec.notes.append("left the cut node: " + ", ".join(
            f"{k} {'never' if v is None else f'{v:.1f} s'}" for k, v in sorted(self.left.items())))
        after = await self._owners()
        rec.notes.append(f"its rooms now at {sorted({after.get(r, '?') for r in mine})}")
        await asyncio.to_thread(self.proxies.heal, n)
        healed = chaos.now()
        try:
            await cluster.wait_healthy(n, timeout=60)
            self.healed_in = chaos.now() - healed
            rec.notes.append(f"n{n} healthy (current) again {self.healed_in:.1f} s after healing")
        except TimeoutError as exc:
            rec.error = f"n{n} not healthy after healing: {exc}"
        for r in records:
            r.until = chaos.now()
        return records


@dataclass
class PartitionResult:
    outcome: chaos.ChaosResult
    run: PartitionRun | None = None
    breaches: list[str] = field(default_factory=list)     # a second writer in a room's log
    gaps: list[str] = field(default_factory=list)
    rooms_logged: int = 0
    behind: list[str] = field(default_factory=list)       # the healed node's store vs others


async def run_partition(tmp: Path, plan: chaos.ChaosPlan, db: chaos.Database) -> PartitionResult:
    """The stack with route proxies, the robots, the partition, the checks (the chaos
    verdict, the room logs' writers, the healed node's store)."""
    # every node serves a table, so the node cut always has one (random dialling put all
    # three on one node in about one run of nine)
    stack = chaos.ClusterStack(tmp, db, dataclasses.replace(plan.stack, home_nodes=True))
    proxies = RouteProxies(stack.nats).start()
    run = PartitionRun(stack, plan, proxies)
    result = PartitionResult(chaos.ChaosResult(plan, tmp=tmp), run)
    handler = logging.FileHandler(tmp / "robots.log")
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    paiju_log = logging.getLogger("paiju")
    old_level = paiju_log.level
    paiju_log.addHandler(handler)
    paiju_log.setLevel(logging.INFO)
    started = chaos.now()
    try:
        await stack.start()
        result.outcome.stack_started_in = stack.started_in
        await run.run()
        result.outcome.verdict = await chaos.verify(stack, run)
        if run.recorder is not None:
            await asyncio.sleep(1.0)    # the recorder's last deliveries
            for room, records in sorted(run.recorder.rooms.items()):
                breaches, gaps = two_writers(records)
                result.breaches += [f"room {room}: {b}" for b in breaches]
                result.gaps += [f"room {room}: {g}" for g in gaps]
            result.rooms_logged = len(run.recorder.rooms)
        if run.cut_node is not None:
            result.behind = await _caught_up(stack.nats, run.cut_node, 30.0)
    finally:
        result.outcome.duration = chaos.now() - started
        result.outcome.faults, result.outcome.rooms = run.faults, run.rooms
        result.outcome.start_failures = stack.start_failures
        for task in run.lanes:
            task.cancel()
        if run.lanes:
            await asyncio.wait(run.lanes, timeout=20.0)
        await run.observer.close()
        if run.recorder is not None:
            await run.recorder.close()
        for label in stack.procs:
            result.outcome.logs[label] = stack.log_lines(label, *chaos.NOTABLE, limit=12)
        await stack.stop()
        await asyncio.to_thread(proxies.stop)
        paiju_log.removeHandler(handler)
        paiju_log.setLevel(old_level)
        handler.close()
    return result


async def _caught_up(cluster: EmbeddedNatsCluster, i: int, bound: float) -> list[str]:
    """Wait until node ``i`` stores every stream as the others do (messages and last
    sequence); what still differs after ``bound`` seconds."""
    deadline = time.monotonic() + bound
    differ: list[str] = []
    while True:
        try:
            mine = await asyncio.to_thread(stream_states, cluster, i)
            others = [await asyncio.to_thread(stream_states, cluster, j)
                      for j in range(len(cluster.nodes)) if j != i]
        except OSError as exc:
            differ = [f"monitor not readable: {exc!r}"]
        else:
            differ = [f"{name}: n{i} {mine.get(name)} vs {theirs[name]}"
                      for theirs in others for name in theirs if mine.get(name) != theirs[name]]
        if not differ or time.monotonic() >= deadline:
            return differ
        await asyncio.sleep(0.5)
