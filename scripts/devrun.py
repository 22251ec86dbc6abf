"""``make run``: the embedded nats-server, the four services and robot tables, on loopback.

Logs go to var/log/<name>.log (JSON lines); Ctrl-C stops everything in reverse order.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from games import registry
from services.common.config import load_config
from services.common.natsd import EmbeddedNats

ROOT = Path(__file__).resolve().parents[1]
VAR = ROOT / "var"
LOGS = VAR / "log"
SERVICES = ("records", "arbiter", "table", "lobby")
# robot tables of every game of the registry unless PAIJU_ROBOT_GAMES names some
ROBOT_GAMES = [g for g in os.environ.get(
    "PAIJU_ROBOT_GAMES", ",".join(spec.name for spec in registry.all())).split(",") if g]


def wait_serving(address: str, proc: subprocess.Popen[bytes], name: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    with grpc.insecure_channel(address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise SystemExit(f"{name} exited with {proc.returncode}; see {LOGS / name}.log")
            try:
                if stub.Check(health_pb2.HealthCheckRequest(), timeout=1).status == 1:
                    return
            except grpc.RpcError:
                pass
            time.sleep(0.2)
    raise SystemExit(f"{name} did not become healthy; see {LOGS / name}.log")


def main() -> None:
    LOGS.mkdir(parents=True, exist_ok=True)
    cfg = load_config(os.environ.get("PAIJU_ENV", "dev"))
    nats = EmbeddedNats(store_dir=str(VAR / "nats"), log_file=str(LOGS / "nats.log")).start()
    env = dict(os.environ, NATS_URL=nats.url, PYTHONUNBUFFERED="1")
    procs: list[tuple[str, subprocess.Popen[bytes]]] = []
    try:
        for name in SERVICES:
            log = open(LOGS / f"{name}.log", "ab")  # noqa: SIM115
            proc = subprocess.Popen([sys.executable, "-m", f"services.{name}"], cwd=ROOT,
                                    env=env, stdout=log, stderr=log, start_new_session=True)
            procs.append((name, proc))
            sec = cfg.service(name)
            wait_serving(f"{sec.host}:{sec.port}", proc, name)
            print(f"  {name:8s} grpc {sec.host}:{sec.port}  metrics http://{sec.host}:{sec.metrics_port}/metrics"
                  f"  log {LOGS / name}.log", flush=True)
        # robots take the WebSocket when the lobby serves one: what costs the lobby less
        lobby_address = (f"ws://{cfg.lobby.host}:{cfg.lobby.ws_port}/ws" if cfg.lobby.ws_port > 0
                         else f"{cfg.lobby.host}:{cfg.lobby.port}")
        robots = ROOT / "clients" / "robot" / "__main__.py"
        if robots.exists():
            for game in ROBOT_GAMES:
                log = open(LOGS / f"robot-{game}.log", "ab")  # noqa: SIM115
                proc = subprocess.Popen(
                    [sys.executable, "-m", "clients.robot", "--game", game, "--tables", "2",
                     "--lobby", lobby_address],
                    cwd=ROOT, env=env, stdout=log, stderr=log, start_new_session=True)
                procs.append((f"robot-{game}", proc))
                print(f"  robots   {game}: 2 tables, log {LOGS}/robot-{game}.log", flush=True)
        web = (f", browser http://{cfg.lobby.host}:{cfg.lobby.ws_port}/"
               if cfg.lobby.ws_port > 0 else "")
        print(f"Paiju is up: NATS {nats.url}, lobby {cfg.lobby.host}:{cfg.lobby.port}{web}. "
              "Play: .venv/bin/python -m clients.cli. Ctrl-C stops everything.", flush=True)
        if cfg.lobby.console_port > 0:
            print(f"  operator console http://{cfg.lobby.host}:{cfg.lobby.console_port}/  "
                  f"token {cfg.lobby.console_token} (read-only; lobby.console_token)", flush=True)
            if cfg.lobby.console_admin_token:
                print(f"  operator actions (add robots, dismiss, kick, mute; audited): token "
                      f"{cfg.lobby.console_admin_token} (lobby.console_admin_token)", flush=True)
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        signal.sigwait({signal.SIGINT, signal.SIGTERM})
    except KeyboardInterrupt:
        pass
    finally:
        print("stopping ...", flush=True)
        for _name, proc in reversed(procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for _name, proc in reversed(procs):
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
        nats.stop()
        print("stopped.", flush=True)


if __name__ == "__main__":
    main()
