"""No container of the Kubernetes deployment gets a password, secret or token through its
environment: Secrets reach pods as mounted files only (deploy/README.md, "Kubernetes" step 1).

Checked over everything deploy/ applies to a cluster: every overlay, what make deploy renders
(the overlay under the release's images, the migration Job), the monitoring and cluster
kustomizations, the opt-in manifests of k8s/optional, and the NATS Helm values (the servers,
their reloader and exporter, nats-box: any ``env`` they set, or a patch adds). An environment
variable is refused when it comes from a Secret (``secretKeyRef``, ``envFrom.secretRef``) or
when its name says it holds a secret and it is not a ``..._FILE`` variable naming a file.
test_deploy_k8s.py checks the overlays' values against the Secrets' contents besides.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.unit.deploy.test_deploy_k8s import K8S, OVERLAYS, load_all, promote_module, render

yaml = pytest.importorskip("yaml", reason="PyYAML is needed to parse deploy/ (PyYAML>=6,<7)")

# A name that says the variable holds a secret (NATS_PASSWORD, PAIJU_LOBBY__TOKEN_SECRET,
# AWS_SECRET_ACCESS_KEY, an API key, an nkey seed).
SECRETISH = re.compile(r"PASSWORD|PASSWD|SECRET|TOKEN|CREDENTIAL|API_?KEY|PRIVATE_?KEY|NKEY|SEED",
                       re.I)
# Secrets that may reach a container's environment, (where, variable) -> why it cannot be a
# file. Empty: nats-box, the last one (its admin password), reads a context file since
# issue 24. An entry here is a reviewed exception, with its reason.
ALLOWED: dict[tuple[str, str], str] = {}


def env_entries(node: Any) -> list[tuple[str, Any]]:
    """(name, entry) of an ``env``: a Kubernetes list of {name, value | valueFrom}, or the
    NATS chart's map of name -> value or {valueFrom: ...} (its ``nats.env`` helper)."""
    if isinstance(node, list):
        return [(e.get("name", "?"), e) for e in node if isinstance(e, dict)]
    if isinstance(node, dict):
        return [(name, v if isinstance(v, dict) else {"value": v}) for name, v in node.items()]
    return []


def env_problems(where: str, doc: Any) -> list[str]:
    """Every secret ``doc`` (an object, Helm values, anything nested) puts in an environment."""
    problems: list[str] = []

    def check(path: str, name: str, entry: dict) -> None:
        if (where, name) in ALLOWED:
            return
        source = entry.get("valueFrom") or {}
        if "secretKeyRef" in source:
            problems.append(f"{where} {path}: {name} comes from Secret "
                            f"{source['secretKeyRef'].get('name')}")
        elif SECRETISH.search(name) and not (
                name.endswith("_FILE") and str(entry.get("value", "")).startswith("/")):
            problems.append(f"{where} {path}: {name} holds a secret, not a file's path")

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            op_path = node.get("path")
            if "op" in node and isinstance(op_path, str) and re.search(r"/env(/[^/]+)?$", op_path):
                value = node.get("value")   # a JSON patch adding env, or one entry of it
                for name, entry in env_entries(value if op_path.endswith("/env") else [value]):
                    check(f"{path} (patch {op_path})", name, entry)
            for key, value in node.items():
                if key == "env":
                    for name, entry in env_entries(value):
                        check(path, name, entry)
                elif key == "envFrom" and isinstance(value, list):
                    problems.extend(f"{where} {path}: envFrom Secret {s['secretRef'].get('name')}"
                                    for s in value if isinstance(s, dict) and "secretRef" in s)
                walk(value, f"{path}.{key}" if path else key)
        elif isinstance(node, list):
            for i, item in enumerate(node):
                walk(item, f"{path}[{i}]")

    walk(doc, "")
    return problems


def object_name(o: dict) -> str:
    return f"{o.get('kind')}/{o.get('metadata', {}).get('name')}"


def manifests(tmp_path: Path) -> dict[str, list[dict]]:
    """Everything deploy/ applies, by where it comes from."""
    out = {f"overlays/{o}": render(K8S / "overlays" / o) for o in OVERLAYS}
    for directory in ("migrate", "monitoring", "cluster"):
        out[directory] = render(K8S / directory)
    digest = "sha256:" + "cd" * 32
    images = {svc: f"registry.example.com/paiju/paiju-{svc}@{digest}"
              for svc in ("lobby", "table", "arbiter", "records")}
    for env in ("test", "prod"):
        for d in promote_module().render(env, images, tmp_path / env):
            out[f"release {env}/{d.name}"] = render(d)
    for path in sorted((K8S / "optional").glob("*.yaml")):
        out[f"optional/{path.name}"] = load_all(path)
    return out


def test_no_container_gets_a_secret_through_its_environment(tmp_path: Path) -> None:
    found = manifests(tmp_path)
    assert {"overlays/prod", "release prod/app", "migrate"} <= set(found)
    problems = [p for where, objs in found.items() for o in objs
                for p in env_problems(f"{where} {object_name(o)}", o)]
    assert not problems, "\n".join(problems)
    # the check saw the services' secret files (..._FILE variables naming them)
    files = [name for o in found["overlays/prod"] for name, _ in env_entries(
        [e for c in o.get("spec", {}).get("template", {}).get("spec", {}).get("containers", [])
         for e in c.get("env", [])]) if SECRETISH.search(name)]
    assert "PAIJU_LOBBY__TOKEN_SECRET_FILE" in files and "PAIJU_NATS__PASSWORD_FILE" in files


@pytest.mark.parametrize("values", sorted(p.name for p in (K8S / "nats").glob("values-*.yaml")))
def test_the_nats_helm_values_put_no_secret_in_an_environment(values: str) -> None:
    """The servers, their sidecars and nats-box: nats-box reads admin's password from its
    context file (paiju-nats-box, values-auth.yaml), the servers from an included file."""
    doc = yaml.safe_load((K8S / "nats" / values).read_text(encoding="utf-8"))
    assert not env_problems(f"nats/{values}", doc)


def test_the_check_finds_a_secret_in_an_environment() -> None:
    """Known-bad inputs: what values-auth.yaml gave nats-box before, a literal token, a Secret
    as the whole environment, a patch adding a password; and a _FILE variable passes."""
    before = {"natsBox": {"container": {"env": {
        "NATS_USER": "admin",
        "NATS_PASSWORD": {"valueFrom": {"secretKeyRef": {"name": "paiju-nats",
                                                         "key": "admin-password"}}}}}}}
    assert env_problems("values", before) == [
        "values natsBox.container: NATS_PASSWORD comes from Secret paiju-nats"]
    pod = {"kind": "Deployment", "spec": {"template": {"spec": {"containers": [{
        "name": "lobby",
        "env": [{"name": "PAIJU_LOBBY__TOKEN_SECRET", "value": "dev-secret-change-me"},
                {"name": "PAIJU_LOBBY__TOKEN_SECRET_FILE", "value": "/etc/paiju/secrets/t"},
                {"name": "NATS_URL", "value": "nats://nats:4222"}],
        "envFrom": [{"secretRef": {"name": "paiju-secrets"}}]}]}}}}
    assert len(env_problems("pod", pod)) == 2
    patch = {"container": {"patch": [{"op": "add", "path": "/env/-", "value": {
        "name": "DB_PASSWORD", "value": "hunter2"}}]}}
    assert env_problems("values", patch) == [
        "values container.patch[0] (patch /env/-): DB_PASSWORD holds a secret, not a file's path"]
    assert not env_problems("ok", {"env": [{"name": "PAIJU_TLS__KEY_FILE",
                                            "value": "/etc/paiju/tls/tls.key"}]})
