"""Run services as real child processes for service and system tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from services.common.natsd import free_port

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class ServiceProc:
    name: str
    port: int
    metrics_port: int
    env: dict[str, str]
    log_path: Path
    proc: subprocess.Popen[bytes] | None = None
    extra_args: list[str] = field(default_factory=list)
    health_address: str = ""    # where to check health when the gRPC port needs a certificate
    # the checkout the service runs from (another release's, for mixed-version tests)
    root: Path = ROOT

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 20.0, port_retries: int = 3) -> ServiceProc:
        """Start and wait for SERVING. A port picked by free_port() can be taken by another
        process before the child binds it: then pick new ports and try again (a restart of
        a service that others already dial keeps its ports: ``port_retries=0``)."""
        for attempt in range(port_retries + 1):
            log = open(self.log_path, "ab")  # noqa: SIM115 - kept open for the child's life
            env = self.env if self.root == ROOT else {**self.env, "PYTHONPATH": str(self.root)}
            self.proc = subprocess.Popen(
                [sys.executable, "-m", f"services.{self.name}", *self.extra_args],
                cwd=self.root, env=env, stdout=log, stderr=log, start_new_session=True)
            try:
                self.wait_serving(timeout)
                return self
            except RuntimeError as exc:   # it exited
                if "Address already in use" not in str(exc) or attempt == port_retries:
                    raise
            except BaseException:         # not serving in time: not left running
                self.kill()
                raise
            self.port, self.metrics_port = free_port(), free_port()
            key = self.name.upper()
            self.env[f"PAIJU_{key}__PORT"] = str(self.port)
            self.env[f"PAIJU_{key}__METRICS_PORT"] = str(self.metrics_port)
        raise AssertionError("unreachable")

    def wait_serving(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last: Exception | None = None
        with grpc.insecure_channel(self.health_address or self.address) as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            while time.monotonic() < deadline:
                if self.proc is not None and self.proc.poll() is not None:
                    raise RuntimeError(f"{self.name} exited with {self.proc.returncode}:\n"
                                       + self.log_path.read_text(errors="replace")[-4000:])
                try:
                    # its own service's health: another service that took a port picked for
                    # this one (free_port) answers NOT_FOUND, not SERVING
                    reply = stub.Check(health_pb2.HealthCheckRequest(
                        service=f"paiju.v1.{self.name.capitalize()}"), timeout=1)
                    if reply.status == health_pb2.HealthCheckResponse.SERVING:
                        return
                except grpc.RpcError as exc:
                    last = exc
                time.sleep(0.1)
        raise TimeoutError(f"{self.name} not SERVING within {timeout}s ({last})\n"
                           + self.log_path.read_text(errors="replace")[-4000:])

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 15.0) -> int:
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait(timeout=5)
        self.proc = None
        return code

    def kill(self) -> None:
        self.stop(signal.SIGKILL)


def start_together(*procs: ServiceProc, timeout: float = 20.0) -> None:
    """Start services that do not wait for each other at once (each one's start is mostly
    its imports: about a second and a half); every one is SERVING, or the first failure is
    raised."""
    _at_once([lambda p=proc: p.start(timeout) for proc in procs])


def stop_together(*procs: ServiceProc) -> None:
    """SIGTERM to each at once, and wait for every one to end."""
    _at_once([proc.stop for proc in procs])


def _at_once(calls: list[Callable[[], object]]) -> None:
    """Every call in a thread of its own; once all have ended, the first failure is raised."""
    with ThreadPoolExecutor(len(calls)) as pool:
        running = [pool.submit(call) for call in calls]
    for call in running:
        call.result()


def service_env(nats_url: str, tmp: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAIJU_")}
    env.update({
        "PAIJU_ENV": "test",
        "NATS_URL": nats_url,
        "DATABASE_URL": f"sqlite+aiosqlite:///{tmp / 'records.db'}",
        "PYTHONUNBUFFERED": "1",
    })
    env.update(extra)
    return env


def make_service(name: str, nats_url: str, tmp: Path, **extra_env: str) -> ServiceProc:
    port, metrics = free_port(), free_port()
    key = name.upper()
    env = service_env(nats_url, tmp, **{f"PAIJU_{key}__PORT": str(port),
                                        f"PAIJU_{key}__METRICS_PORT": str(metrics)}, **extra_env)
    return ServiceProc(name, port, metrics, env, tmp / f"{name}-{port}.log")
