"""deploy/compose.yaml and every other YAML file under deploy/: they parse, and the compose
services get a valid configuration that wires them to each other."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from services.common.config import load_config
from tests.unit.deploy.test_deploy_k8s import STOP_GRACE

yaml = pytest.importorskip("yaml", reason="PyYAML is needed to parse deploy/ (PyYAML>=6,<7)")

ROOT = Path(__file__).resolve().parents[3]
DEPLOY = ROOT / "deploy"
SERVICES = ("lobby", "table", "arbiter", "records")
PROD = tomllib.loads((ROOT / "config" / "prod.toml").read_text(encoding="utf-8"))
DEFAULT = re.compile(r"\$\{(\w+):-([^}]*)\}")


def compose() -> dict:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text(encoding="utf-8"))


def interpolate(value: str) -> str:
    """Compose's ${VAR:-default} with nothing set in the environment."""
    assert "${" not in DEFAULT.sub("", str(value)), f"variable without a default: {value}"
    return DEFAULT.sub(lambda m: m.group(2), str(value))


def environment(service: dict) -> dict[str, str]:
    return {k: interpolate(v) for k, v in service["environment"].items()}


@pytest.mark.parametrize("path", sorted(p.relative_to(DEPLOY).as_posix()
                                        for p in list(DEPLOY.rglob("*.yaml"))
                                        + list(DEPLOY.rglob("*.yml"))))
def test_every_yaml_file_parses(path: str) -> None:
    docs = [d for d in yaml.safe_load_all((DEPLOY / path).read_text(encoding="utf-8")) if d]
    assert docs and all(isinstance(d, dict) for d in docs)


def test_compose_builds_each_service_image_with_its_name() -> None:
    services = compose()["services"]
    for svc in SERVICES:
        build = services[svc]["build"]
        assert (DEPLOY / build["context"] / build["dockerfile"]).resolve() == \
            DEPLOY / "docker" / "Dockerfile"
        assert build["args"]["SERVICE"] == svc
        assert services[svc]["image"].startswith(f"paiju-{svc}:")


def test_compose_environment_gives_valid_configs_wired_by_service_name() -> None:
    services = compose()["services"]
    configs = {svc: load_config(environ=environment(services[svc])) for svc in SERVICES}
    for svc, cfg in configs.items():
        assert cfg.service(svc).host == "0.0.0.0"
        assert cfg.nats.url == "nats://nats:4222"
    assert configs["table"].arbiter.address == f"arbiter:{configs['arbiter'].arbiter.port}"
    assert configs["table"].table.advertise == f"table:{configs['table'].table.port}"
    assert configs["table"].table.instance
    assert configs["lobby"].records.address == f"records:{configs['records'].records.port}"
    url = configs["records"].records.database_url
    assert url.startswith("postgresql+asyncpg://") and "@postgres:" in url


def test_only_the_lobby_and_the_robots_get_the_token_secret() -> None:
    services = compose()["services"]
    holders = {name for name, svc in services.items()
               if "PAIJU_LOBBY__TOKEN_SECRET" in svc.get("environment", {})}
    assert holders == {"lobby", "robots"}


def test_compose_dependencies_and_profiles() -> None:
    doc = compose()
    services = doc["services"]
    for svc in SERVICES:
        assert services[svc]["depends_on"]["nats"]["condition"] == "service_healthy"
    assert services["records"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert services["robots"]["profiles"] == ["robots"]
    assert "lobby:50051" in services["robots"]["command"]
    for extra in ("prometheus", "grafana"):
        assert services[extra]["profiles"] == ["monitoring"]
    for svc in SERVICES:
        assert "profiles" not in services[svc]


def test_nats_runs_jetstream_on_a_named_volume() -> None:
    doc = compose()
    nats = doc["services"]["nats"]
    command = nats["command"]
    assert "--jetstream" in command or "-js" in command
    store = command[command.index("--store_dir") + 1]
    volume, mount = nats["volumes"][0].split(":")
    assert mount == store and volume in doc["volumes"]


def test_compose_mounts_exist_in_the_repository() -> None:
    for name, service in compose()["services"].items():
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("./"):
                assert (DEPLOY / source).exists(), f"{name}: {source}"


def test_lobby_is_published_on_its_grpc_port() -> None:
    ports = compose()["services"]["lobby"]["ports"]
    assert f"{PROD['lobby']['port']}:{PROD['lobby']['port']}" in ports


def test_stop_grace_periods_hold_each_drain() -> None:
    """docker stop waits stop_grace_period (10 s by default) before SIGKILL: the table's
    drain (rooms handed to other tables) and the lobby's (clients told to reconnect), then
    the gRPC grace for open calls (5 s), must fit."""
    services = compose()["services"]
    for svc in SERVICES:
        cfg = load_config(environ=environment(services[svc]))
        drain = {"table": cfg.table.drain_seconds, "lobby": cfg.lobby.drain_seconds}.get(svc, 0)
        period = services[svc].get("stop_grace_period", "10s")
        seconds = int(re.fullmatch(r"(\d+)s", period).group(1))  # type: ignore[union-attr]
        assert seconds >= drain + STOP_GRACE + 5, f"{svc}: {period} cannot hold its drain"
