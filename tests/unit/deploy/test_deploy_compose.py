"""deploy/compose.yaml and every other YAML file under deploy/: they parse, and the compose
services get a valid configuration that wires them to each other."""

from __future__ import annotations

import json
import re
import subprocess
import tomllib
from pathlib import Path

import pytest

from services.common.config import load_config
from services.common.natsd import nats_server_binary
from tests.support.natsvalues import environment_merge
from tests.unit.deploy.test_deploy_k8s import STOP_GRACE

yaml = pytest.importorskip("yaml", reason="PyYAML is needed to parse deploy/ (PyYAML>=6,<7)")

ROOT = Path(__file__).resolve().parents[3]
DEPLOY = ROOT / "deploy"
SERVICES = ("lobby", "table", "arbiter", "records")
PROD = tomllib.loads((ROOT / "config" / "prod.toml").read_text(encoding="utf-8"))
DEFAULT = re.compile(r"\$\{(\w+):-([^}]*)\}")


def compose() -> dict:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text(encoding="utf-8"))


def interpolate(value: str, env: dict[str, str] | None = None) -> str:
    """Compose's ${VAR:-default} with ``env`` (default: nothing) set in the environment."""
    assert "${" not in DEFAULT.sub("", str(value)), f"variable without a default: {value}"
    env = env or {}
    return DEFAULT.sub(lambda m: env.get(m.group(1)) or m.group(2), str(value))


def environment(service: dict, env: dict[str, str] | None = None) -> dict[str, str]:
    return {k: interpolate(v, env) for k, v in service["environment"].items()}


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
    # the tables ask the arbiter over NATS (arbiter.decide, on the NATS_URL above): nothing
    # dials its gRPC port, so no service is given its address
    assert not [k for svc in SERVICES for k in environment(services[svc])
                if k.startswith("PAIJU_ARBITER__") and svc != "arbiter"]
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
    assert "ws://lobby:8080/ws" in services["robots"]["command"]
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


def test_lobby_is_published_on_its_grpc_port_on_loopback() -> None:
    ports = [interpolate(p) for p in compose()["services"]["lobby"]["ports"]]
    assert f"127.0.0.1:{PROD['lobby']['port']}:{PROD['lobby']['port']}" in ports
    assert f"127.0.0.1:{PROD['lobby']['ws_port']}:{PROD['lobby']['ws_port']}" in ports


def test_every_published_port_binds_loopback_unless_paiju_bind_says_otherwise() -> None:
    """Compose runs with the public dev token secret by default: nothing it publishes may be
    reachable from another machine unless the operator asks (PAIJU_BIND, documented)."""
    published = [(name, str(mapping)) for name, svc in compose()["services"].items()
                 for mapping in svc.get("ports", [])]
    assert {name for name, _ in published} == {"lobby", "prometheus", "grafana"}
    for name, mapping in published:
        assert not isinstance(mapping, int) and "-" not in mapping.split(":")[-1], mapping
        host, container = interpolate(mapping).rsplit(":", 1)[0], mapping.rsplit(":", 1)[1]
        assert host == f"127.0.0.1:{container}", (name, mapping)
        assert interpolate(mapping, {"PAIJU_BIND": "0.0.0.0"}) == \
            f"0.0.0.0:{container}:{container}", (name, mapping)
    header = (DEPLOY / "compose.yaml").read_text(encoding="utf-8").split("\nname:", 1)[0]
    assert "PAIJU_BIND" in header and "trusted network" in header


def test_compose_in_prod_needs_a_token_secret_of_its_own() -> None:
    """PAIJU_ENV=prod with compose's default (the public dev secret) does not start; with
    PAIJU_TOKEN_SECRET it does (deploy/README.md, compose's header)."""
    from services.common.config import ConfigError, require_token_secret

    lobby = compose()["services"]["lobby"]
    with pytest.raises(ConfigError):
        require_token_secret(load_config(environ=environment(lobby, {"PAIJU_ENV": "prod"})))
    secret = "0123456789abcdef0123456789abcdef"
    require_token_secret(load_config(environ=environment(
        lobby, {"PAIJU_ENV": "prod", "PAIJU_TOKEN_SECRET": secret})))
    readme = (DEPLOY / "README.md").read_text(encoding="utf-8")
    compose_section = readme.split("## Compose", 1)[1].split("\n## ", 1)[0]
    for needle in ("PAIJU_ENV=prod", "PAIJU_TOKEN_SECRET", "PAIJU_BIND", "127.0.0.1"):
        assert needle in compose_section, needle


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


def test_one_nats_version_in_compose_the_chart_values_and_the_readme() -> None:
    """The NATS chart is installed at a pinned version whose server image the values pin
    too, and compose runs the same server image."""
    import re

    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text(encoding="utf-8"))
    image = compose["services"]["nats"]["image"]
    tags = {yaml.safe_load((DEPLOY / "k8s" / "nats" / f).read_text(encoding="utf-8"))[
        "container"]["image"]["tag"] for f in ("values-dev.yaml", "values-prod.yaml")}
    assert tags == {image.split(":", 1)[1]}, (image, tags)
    chart = image.split(":", 1)[1].removesuffix("-alpine")
    readme = (DEPLOY / "README.md").read_text(encoding="utf-8")
    installs = re.findall(r"helm upgrade --install nats nats/nats (?:--version (\S+) )?", readme)
    assert installs and set(installs) == {chart}, installs


def test_compose_nats_drops_a_silent_client_as_kubernetes_does() -> None:
    """nats-server has no flag for its PINGs: compose mounts a config file that sets them
    as the chart's values do, and nats-server (the wheel's, a version near the image's)
    accepts that file."""
    nats = compose()["services"]["nats"]
    command = nats["command"]
    target = command[command.index("--config") + 1]
    mounts = dict(reversed(v.removesuffix(":ro").split(":", 1)) for v in nats["volumes"]
                  if v.startswith("./"))
    conf = DEPLOY / mounts[target]
    text = conf.read_text(encoding="utf-8")
    settings = dict(re.findall(r"^(\w+):\s*(\S+)\s*$", text, re.MULTILINE))
    prod = environment_merge("prod")
    assert settings == {key: json.dumps(prod[key]) for key in ("ping_interval", "ping_max")}
    checked = subprocess.run([nats_server_binary(), "-t", "-c", str(conf)],
                             capture_output=True, text=True, timeout=30)
    assert checked.returncode == 0, checked.stderr
