"""Kubernetes manifests: the kustomize overlays render, and what they render is coherent with
the code (ports of config/prod.toml, configuration keys, probes, Secrets, Services).

Rendering is a small pure-Python subset of kustomize (resources, secretGenerator, strategic
merge patches, replicas, images, namespace): exactly the features deploy/k8s uses. When
``kubectl`` is installed its ``kubectl kustomize`` output must be identical.
The NATS servers the services dial are those of the Helm values (deploy/k8s/nats/).
"""

from __future__ import annotations

import base64
import copy
import json
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import fields, is_dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from services.common.bus import NatsAuth
from services.common.config import Config, load_config

yaml = pytest.importorskip("yaml", reason="PyYAML is needed to parse deploy/ (PyYAML>=6,<7)")

ROOT = Path(__file__).resolve().parents[3]
K8S = ROOT / "deploy" / "k8s"
OVERLAYS = ("dev", "test", "prod")
NAMESPACES = {"dev": "paiju-dev", "test": "paiju-test", "prod": "paiju"}
SERVICES = ("lobby", "table", "arbiter", "records")
PROD = tomllib.loads((ROOT / "config" / "prod.toml").read_text(encoding="utf-8"))
# What the downward API and Secrets would provide, for checking the resulting configuration.
FAKE_POD = {"metadata.name": "table-7d9f-abcde", "status.podIP": "10.1.2.3"}
FAKE_SECRETS = {
    "paiju-secrets": {"token-secret": "prod-secret-0123456789",
                      "database-url": "postgresql+asyncpg://u@db/paiju",
                      "database-password": "prod-database-password"},
    "paiju-nats": {f"{user}-password": f"prod-{user}-nats"
                   for user in ("lobby", "table", "records", "arbiter", "admin", "lobby-b",
                                "table-b", "records-b", "arbiter-b")},
    "paiju-migrate": {"database-url": "postgresql+asyncpg://m@db/paiju",
                      "database-password": "prod-migrator-password"},
}
# The optional keys of paiju-secrets the lobby reads while its token signing key rotates.
ROTATION_KEYS = {"token-key-id", "token-previous-secret", "token-previous-key-id",
                 "token-previous-until"}
# The optional keys of a database password rotation (records), and of a NATS one (each
# service's user name while it changes: docs/runbooks.md).
DATABASE_OPTIONAL = {"database-password", "database-previous-password"}
SECRETS_DIR = "/etc/paiju/secrets"
# The services that speak NATS, each with its own NATS user (deploy/k8s/nats/values-auth.yaml):
# all four (the arbiter answers the tables' requests on arbiter.decide).
NATS_CLIENTS = ("lobby", "table", "arbiter", "records")
# The Helm values of the NATS release "nats" installed beside each overlay (deploy/README.md).
NATS_VALUES = {"dev": "values-dev.yaml", "test": "values-dev.yaml", "prod": "values-prod.yaml"}
# The gRPC server's grace for open calls once a service has drained (run_until_signalled).
STOP_GRACE = 5.0


# ------------------------------------------------------------------ kustomize subset
def load_all(path: Path) -> list[dict]:
    return [doc for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc]


def merge(dst: dict, patch: dict) -> None:
    """Strategic merge as kustomize does it for the fields we patch: maps merge, lists of
    named items (containers, env, volumes) merge by name, other lists are replaced. As with
    kustomize, the patch's items come first, in the patch's order, then the others (so a
    patched env variable moves ahead of the variables its $(VAR) may need)."""
    for key, value in patch.items():
        old = dst.get(key)
        if value is None:        # a null in a strategic merge patch deletes the field
            dst.pop(key, None)
        elif isinstance(old, dict) and isinstance(value, dict):
            merge(old, value)
        elif (isinstance(old, list) and isinstance(value, list)
              and all(isinstance(x, dict) and "name" in x for x in old + value)):
            by_name = {x["name"]: x for x in old}
            patched = []
            for item in value:
                if item["name"] in by_name:
                    merge(by_name[item["name"]], item)
                    patched.append(by_name[item["name"]])
                else:
                    patched.append(copy.deepcopy(item))
            names = {x["name"] for x in value}
            old[:] = patched + [x for x in old if x["name"] not in names]
        else:
            dst[key] = copy.deepcopy(value)


def find(objs: list[dict], kind: str, name: str) -> dict:
    hits = [o for o in objs if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(hits) == 1, f"expected one {kind}/{name}, found {len(hits)}"
    return hits[0]


def containers(obj: dict) -> list[dict]:
    return obj.get("spec", {}).get("template", {}).get("spec", {}).get("containers", [])


def set_image(obj: dict, rule: dict) -> None:
    """kustomize's images transformer: by name; a digest replaces the tag."""
    for c in containers(obj):
        name, _, tag = c["image"].partition("@")[0].partition(":")
        if name == rule["name"]:
            new_name = rule.get("newName", name)
            if "digest" in rule:
                c["image"] = f"{new_name}@{rule['digest']}"
            else:
                new_tag = rule.get("newTag", tag)
                c["image"] = new_name + (f":{new_tag}" if new_tag else "")


def generated_secret(spec: dict, directory: Path) -> dict:
    data = {}
    for literal in spec.get("literals", []):
        key, _, value = literal.partition("=")
        data[key] = base64.b64encode(value.encode()).decode()
    for item in spec.get("files", []):   # key=path, or path (its name the key)
        key, _, path = item.rpartition("=")
        data[key or Path(path).name] = base64.b64encode((directory / path).read_bytes()).decode()
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": spec["name"]},
            "type": "Opaque", "data": data}


def targeted(obj: dict, target: dict) -> bool:
    """A patch target (group, kind, labelSelector of key=value pairs) selects ``obj``."""
    assert set(target) <= {"group", "kind", "labelSelector"}, "target not modelled here"
    group = obj["apiVersion"].rpartition("/")[0]
    labels = obj["metadata"].get("labels", {})
    wanted = dict(pair.split("=", 1) for pair in target.get("labelSelector", "").split(",")
                  if pair)
    return (target.get("group", group) == group and target.get("kind", obj["kind"]) == obj["kind"]
            and wanted.items() <= labels.items())


def render(directory: Path) -> list[dict]:
    k = load_all(directory / "kustomization.yaml")[0]
    assert not k.get("generatorOptions") or k["generatorOptions"].get("disableNameSuffixHash"), \
        "this renderer does not rename generated objects: keep disableNameSuffixHash"
    objs: list[dict] = []
    for res in k.get("resources", []):
        path = directory / res
        objs += render(path) if path.is_dir() else load_all(path)
    objs += [generated_secret(s, directory) for s in k.get("secretGenerator", [])]
    for patch in k.get("patches", []):
        for doc in load_all(directory / patch["path"]):
            if "target" in patch:   # every object the target selects, whatever the doc's name
                for obj in [o for o in objs if targeted(o, patch["target"])]:
                    merge(obj, {key: v for key, v in doc.items() if key != "metadata"})
            else:
                merge(find(objs, doc["kind"], doc["metadata"]["name"]), doc)
    for rep in k.get("replicas", []):
        find(objs, "Deployment", rep["name"])["spec"]["replicas"] = rep["count"]
    for rule in k.get("images", []):
        for obj in objs:
            set_image(obj, rule)
    if "namespace" in k:
        for obj in objs:
            obj["metadata"]["namespace"] = k["namespace"]
    return objs


def keyed(objs: list[dict]) -> dict[tuple[str, str], dict]:
    """Objects by kind and name; Secret data decoded (kubectl wraps long base64 lines)."""
    out = {}
    for o in objs:
        if o["kind"] == "Secret":
            o = {**o, "data": {k: base64.b64decode(v) for k, v in o["data"].items()}}
        out[(o["kind"], o["metadata"]["name"])] = o
    return out


@pytest.fixture(scope="module", params=OVERLAYS)
def overlay(request: pytest.FixtureRequest) -> tuple[str, list[dict]]:
    return request.param, render(K8S / "overlays" / request.param)


# ------------------------------------------------------------------ helpers on objects
def nats_values(overlay: str) -> dict:
    return yaml.safe_load((K8S / "nats" / NATS_VALUES[overlay]).read_text(encoding="utf-8"))


def nats_servers(overlay: str) -> list[str]:
    """host:port of the NATS servers of the overlay's environment: the chart's Service
    "nats" for one server, else every server of the cluster by its stable name on the
    chart's headless Service (pods nats-0, nats-1, ... of the StatefulSet "nats")."""
    cluster = nats_values(overlay)["config"]["cluster"]
    if not cluster.get("enabled"):
        return ["nats:4222"]
    return [f"nats-{i}.nats-headless:4222" for i in range(cluster["replicas"])]


def secret_value(objs: list[dict], name: str, key: str) -> str:
    """A Secret's value: from the overlay's generated Secret, else the stand-in of prod."""
    for o in objs:
        if o["kind"] == "Secret" and o["metadata"]["name"] == name:
            return base64.b64decode(o["data"][key]).decode()
    return FAKE_SECRETS[name][key]


def container(objs: list[dict], svc: str) -> dict:
    (c,) = containers(find(objs, "Deployment", svc))
    return c


def port(c: dict, name: str) -> int:
    return next(p["containerPort"] for p in c["ports"] if p["name"] == name)


def secret_data(objs: list[dict], name: str) -> dict[str, str] | None:
    """A Secret's data: generated by the overlay, else the operator's (FAKE_SECRETS), else
    None (one this test does not model, e.g. cert-manager's TLS Secrets)."""
    for o in objs:
        if o["kind"] == "Secret" and o["metadata"]["name"] == name:
            return {k: base64.b64decode(v).decode() for k, v in o["data"].items()}
    return FAKE_SECRETS.get(name)


def pod_of(objs: list[dict], c: dict) -> dict:
    (pod,) = [o["spec"]["template"]["spec"] for o in objs
              if any(x is c for x in containers(o))]
    return pod


def secret_mounts(objs: list[dict], c: dict) -> list[tuple[str, dict, dict]]:
    """(mount path, secret source, mount) of every Secret the container mounts: a ``secret``
    volume or each ``secret`` source of a ``projected`` one."""
    volumes = {v["name"]: v for v in pod_of(objs, c).get("volumes", [])}
    out = []
    for m in c.get("volumeMounts", []):
        v = volumes[m["name"]]
        if "secret" in v:
            out.append((m["mountPath"], {"name": v["secret"]["secretName"], **{
                k: val for k, val in v["secret"].items() if k != "secretName"}}, m))
        for source in v.get("projected", {}).get("sources", []):
            if "secret" in source:
                out.append((m["mountPath"], source["secret"], m))
    return out


def pod_files(objs: list[dict], c: dict) -> dict[str, str]:
    """The Secret files the container sees: path -> content. An optional key the Secret does
    not hold is absent (as the kubelet leaves it); a required one must be there."""
    files: dict[str, str] = {}
    for path, source, _ in secret_mounts(objs, c):
        data = secret_data(objs, source["name"])
        if data is None:
            continue
        items = source.get("items") or [{"key": k, "path": k} for k in data]
        for item in items:
            if item["key"] not in data:
                assert source.get("optional"), f"{source['name']}: {item['key']} is required"
                continue
            files[f"{path}/{item['path']}"] = data[item["key"]]
    return files


_POD_ROOTS: list[Path] = []


def pod_environment(objs: list[dict], c: dict) -> dict[str, str]:
    """The environment the container would get: envFrom ConfigMaps, then env entries with
    Secrets, downward API fields and $(VAR) references resolved. The container's Secret
    files are written under a temporary root, and variables naming them point there."""
    env = _pod_environment(objs, c)
    files = pod_files(objs, c)
    mounts = {path for path, source, _ in secret_mounts(objs, c)   # Secrets modelled here
              if secret_data(objs, source["name"]) is not None}
    if not mounts:
        return env
    root = Path(tempfile.mkdtemp(prefix="paiju-pod-"))
    _POD_ROOTS.append(root)
    for path, content in files.items():
        (root / path.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
        (root / path.lstrip("/")).write_text(content, encoding="utf-8")
    for name, value in env.items():
        if any(value.startswith(m + "/") for m in mounts):
            env[name] = str(root / value.lstrip("/"))
    return env


def _pod_environment(objs: list[dict], c: dict) -> dict[str, str]:
    env: dict[str, str] = {}
    secrets = {o["metadata"]["name"]: o for o in objs if o["kind"] == "Secret"}
    for source in c.get("envFrom", []):
        env.update(find(objs, "ConfigMap", source["configMapRef"]["name"])["data"])
    for item in c.get("env", []):
        if "value" in item:
            env[item["name"]] = re.sub(r"\$\((\w+)\)", lambda m: env[m.group(1)], item["value"])
            continue
        ref = item["valueFrom"]
        if "fieldRef" in ref:
            env[item["name"]] = FAKE_POD[ref["fieldRef"]["fieldPath"]]
        else:
            sref = ref["secretKeyRef"]
            secret = secrets.get(sref["name"])
            data = ({k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
                    if secret else FAKE_SECRETS[sref["name"]])
            if sref["key"] not in data and sref.get("optional"):
                continue   # an optional key the Secret does not hold: the variable is unset
            env[item["name"]] = data[sref["key"]]
    return env


def assert_dials_service(objs: list[dict], cfg: Config, svc: str) -> None:
    """A client pod's configuration dials the headless Service of ``svc`` (a DNS name with
    every ready pod, which the caller's gRPC channel balances round robin) on its gRPC port
    by the address key; the host key (a bind address) is left as config/<env>.toml has it."""
    section = cfg.service(svc)
    bind = load_config(cfg.env, environ={}).service(svc).host
    assert section.host == bind, "dial through ADDRESS, not HOST"
    host, _, dial_port = section.address.rpartition(":")
    service = find(objs, "Service", host)
    assert host == f"{svc}-headless" and service["spec"]["clusterIP"] == "None"
    assert service["spec"]["selector"] == {"app.kubernetes.io/name": svc}
    assert int(dial_port) == PROD[svc]["port"]
    assert int(dial_port) in [p["port"] for p in service["spec"]["ports"] if p["name"] == "grpc"]


# ------------------------------------------------------------------ tests
@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")
@pytest.mark.parametrize("name", OVERLAYS)
def test_pure_renderer_matches_kubectl_kustomize(name: str) -> None:
    out = subprocess.run(["kubectl", "kustomize", str(K8S / "overlays" / name)],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    rendered = [doc for doc in yaml.safe_load_all(out) if doc]
    assert keyed(render(K8S / "overlays" / name)) == keyed(rendered)


def test_every_overlay_has_the_four_deployments_in_its_own_namespace(overlay) -> None:
    name, objs = overlay
    deployments = sorted(o["metadata"]["name"] for o in objs if o["kind"] == "Deployment")
    assert deployments == sorted(SERVICES)
    assert {o["metadata"]["namespace"] for o in objs} == {NAMESPACES[name]}
    for o in objs:
        assert o["apiVersion"] and o["metadata"]["name"]


def probes(c: dict) -> dict[str, dict]:
    """The container's probes by kind, each with exactly one handler."""
    out = {k: c[k] for k in ("startupProbe", "readinessProbe", "livenessProbe") if k in c}
    for kind, probe in out.items():
        handlers = {"grpc", "httpGet", "tcpSocket", "exec"} & set(probe)
        assert len(handlers) == 1, f"{kind}: one handler, not {sorted(handlers)}"
    return out


def test_probes_ask_the_port_that_answers_them_and_metrics_annotations_match_prod_toml(
        overlay) -> None:
    """table, records and arbiter: gRPC probes on the gRPC port, or with internal mutual TLS
    on the plaintext health-only probe port the service opens (the kubelet has no client
    certificate). The lobby: HTTP on its WebSocket port (/healthz, /livez), HTTPS exactly when
    public TLS is on (the gRPC port then speaks TLS, which a gRPC probe cannot)."""
    from services.common import tls

    _, objs = overlay
    for svc in SERVICES:
        dep = find(objs, "Deployment", svc)
        c = container(objs, svc)
        grpc_port, metrics_port = PROD[svc]["port"], PROD[svc]["metrics_port"]
        assert port(c, "grpc") == grpc_port and port(c, "metrics") == metrics_port
        cfg = load_config(environ=pod_environment(objs, c))
        for kind, probe in probes(c).items():
            if svc == "lobby":
                get = probe["httpGet"]
                assert port(c, get["port"]) == cfg.lobby.ws_port == PROD["lobby"]["ws_port"]
                assert get["scheme"] == ("HTTPS" if cfg.lobby.public_cert_file else "HTTP")
                continue
            if tls.interceptors(cfg, svc):   # mutual TLS: the server opens the probe port
                assert cfg.tls.probe_port > 0 and probe["grpc"]["port"] == cfg.tls.probe_port
                assert port(c, "probe") == cfg.tls.probe_port, f"{svc}: a named probe port"
            else:
                assert probe["grpc"]["port"] == grpc_port, f"{svc} {kind}"
                assert "probe" not in {p["name"] for p in c["ports"]}, svc
        notes = dep["spec"]["template"]["metadata"]["annotations"]
        assert notes["prometheus.io/scrape"] == "true"
        assert notes["prometheus.io/port"] == str(metrics_port)
        assert notes["prometheus.io/path"] == "/metrics"


def test_the_pod_environment_gives_each_service_a_valid_config_on_its_ports(overlay) -> None:
    name, objs = overlay
    for svc in SERVICES:
        c = container(objs, svc)
        env = pod_environment(objs, c)
        assert env["PAIJU_ENV"] == name
        cfg = load_config(environ=env)
        section = cfg.service(svc)
        assert section.host == "0.0.0.0", f"{svc} must listen on every interface in a pod"
        assert section.port == port(c, "grpc")
        assert section.metrics_port == port(c, "metrics")
        if svc in NATS_CLIENTS:  # its own NATS user, the password a file of paiju-nats
            urls = [urlsplit(u) for u in cfg.nats.url.split(",")]
            assert [f"{u.hostname}:{u.port}" for u in urls] == nats_servers(name)
            for url in urls:
                assert url.scheme == "nats" and not url.username and not url.password
            auth = NatsAuth.of(cfg.nats)
            assert auth.current_user() == svc
            assert auth.current_password() == secret_value(objs, "paiju-nats", f"{svc}-password")
            # one replica of every stream and bucket per NATS server: R3 on the prod cluster
            assert cfg.nats.replicas == len(nats_servers(name))
        else:
            assert "NATS_URL" not in env, f"{svc} does not use NATS: no credentials for it"
            assert not [m for m in secret_mounts(objs, c) if m[1]["name"] in FAKE_SECRETS], \
                f"{svc} reads none of Paiju's Secrets (its TLS certificate only, in prod)"


def test_every_paiju_variable_names_a_real_config_key(overlay) -> None:
    _, objs = overlay
    sections = [getattr(Config(), f.name) for f in fields(Config)]
    known = {f"PAIJU_{type(sec).__name__.removesuffix('Config').upper()}__{key.name.upper()}"
             for sec in sections if is_dataclass(sec) for key in fields(sec)}
    known |= {f"{name}_FILE" for name in known}   # any key as a file (a mounted Secret)
    config_map = find(objs, "ConfigMap", "paiju-config")["data"]
    names = set(config_map)
    for svc in SERVICES:
        names |= {item["name"] for item in container(objs, svc).get("env", [])}
    paiju = {n for n in names if n.startswith("PAIJU_") and n != "PAIJU_ENV"}
    assert paiju and paiju <= known, sorted(paiju - known)


def test_table_identity_comes_from_the_pod_and_dials_the_arbiter_service(overlay) -> None:
    _, objs = overlay
    c = container(objs, "table")
    env = {item["name"]: item for item in c["env"]}
    assert env["PAIJU_TABLE__INSTANCE"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
    assert env["POD_IP"]["valueFrom"]["fieldRef"]["fieldPath"] == "status.podIP"
    order = [item["name"] for item in c["env"]]
    assert order.index("POD_IP") < order.index("PAIJU_TABLE__ADVERTISE"), \
        "$(POD_IP) only expands when POD_IP is defined earlier"
    cfg = load_config(environ=pod_environment(objs, c))
    assert cfg.table.instance == FAKE_POD["metadata.name"]
    assert cfg.table.advertise == f"{FAKE_POD['status.podIP']}:{PROD['table']['port']}"
    # the arbiter's address is for the previous release's tables (Arbiter.Decide) while a
    # release mixes them with this one's, which ask over NATS (arbiter.decide)
    assert_dials_service(objs, cfg, "arbiter")


def test_lobby_dials_records_through_its_service(overlay) -> None:
    _, objs = overlay
    cfg = load_config(environ=pod_environment(objs, container(objs, "lobby")))
    assert_dials_service(objs, cfg, "records")


def test_only_the_lobby_gets_the_token_secret(overlay) -> None:
    _, objs = overlay
    token = secret_value(objs, "paiju-secrets", "token-secret")
    holders = {svc for svc in SERVICES
               if token in pod_files(objs, container(objs, svc)).values()}
    assert holders == {"lobby"}
    cfg = load_config(environ=pod_environment(objs, container(objs, "lobby")))
    assert cfg.lobby.token_secret == token
    assert cfg.lobby.token_previous_secret == ""   # the optional keys absent: no rotation


def test_each_pod_sees_only_the_secret_keys_it_reads(overlay) -> None:
    _, objs = overlay
    seen = {svc: {(source["name"], item["key"])
                  for _, source, _ in secret_mounts(objs, container(objs, svc))
                  if source["name"] in FAKE_SECRETS   # not cert-manager's TLS Secrets
                  for item in source.get("items", [{"key": "*"}])}
            for svc in SERVICES}
    nats = {svc: {("paiju-nats", f"{svc}-password"), ("paiju-nats", f"{svc}-user"),
                  ("paiju-nats", f"{svc}-b-password")} for svc in NATS_CLIENTS}
    assert seen == {
        "lobby": nats["lobby"] | {("paiju-secrets", "token-secret")}
        | {("paiju-secrets", k) for k in ROTATION_KEYS},
        "table": nats["table"],
        "records": nats["records"] | {("paiju-secrets", "database-url")}
        | {("paiju-secrets", k) for k in DATABASE_OPTIONAL},
        "arbiter": nats["arbiter"],
    }


def all_containers(name: str) -> list[tuple[list[dict], dict]]:
    """Every container of an overlay and of the migration Job, with the objects around it."""
    objs = render(K8S / "overlays" / name)
    job = migrate_job_objs()
    return [(objs, c) for o in objs for c in containers(o)] + \
        [(job, c) for o in job for c in containers(o)]


def test_no_secret_reaches_an_environment_variable(overlay) -> None:
    """Secrets reach pods as read-only files only (tests/unit/deploy: no secretKeyRef, no
    secretRef, no secret value spelled in an env value, no password in a URL)."""
    name, objs = overlay
    generated = [v for o in objs if o["kind"] == "Secret"
                 for v in (base64.b64decode(x).decode() for x in o["data"].values())]
    values = [v for data in FAKE_SECRETS.values() for v in data.values()
              if not v.startswith("postgresql")] + \
        [v for v in generated if not v.startswith(("postgresql", "sqlite"))]
    for objs_of, c in all_containers(name):
        for source in c.get("envFrom", []):
            assert "secretRef" not in source, f"{c['name']}: a Secret as environment"
        env = _pod_environment(objs_of, c)
        for item in c.get("env", []):
            assert "secretKeyRef" not in item.get("valueFrom", {}), \
                f"{name} {c['name']}: {item['name']} comes from a Secret"
        for var, value in env.items():
            assert not any(secret in value for secret in values), f"{c['name']}: {var}"
            for url in value.split(","):
                parts = urlsplit(url.strip())
                if parts.scheme.startswith(("nats", "postgres")):
                    assert not parts.password and not parts.username or \
                        parts.scheme.startswith("postgres") and not parts.password, \
                        f"{c['name']}: {var} carries credentials"
        for _, _source, mount in secret_mounts(objs_of, c):
            assert mount.get("readOnly") is True, f"{c['name']}: {mount['name']} writable"
        for volume in pod_of(objs_of, c).get("volumes", []):
            mode = volume.get("projected", volume.get("secret", {})).get("defaultMode")
            if "projected" in volume or "secret" in volume:
                assert mode == 0o440, f"{c['name']}: {volume['name']} mode {mode!r}"


def test_services_select_their_pods_and_name_existing_ports(overlay) -> None:
    _, objs = overlay
    for svc in SERVICES:
        service = find(objs, "Service", svc)
        labels = find(objs, "Deployment", svc)["spec"]["template"]["metadata"]["labels"]
        assert service["spec"]["selector"].items() <= labels.items()
        names = {p["name"] for p in container(objs, svc)["ports"]}
        assert {p["targetPort"] for p in service["spec"]["ports"]} <= names


def test_pods_run_as_non_root_with_resources(overlay) -> None:
    _, objs = overlay
    for svc in SERVICES:
        pod = find(objs, "Deployment", svc)["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["runAsUser"] != 0
        res = container(objs, svc)["resources"]
        assert res["requests"]["cpu"] and res["requests"]["memory"] and res["limits"]["memory"]


def test_secrets_in_git_only_outside_prod(overlay) -> None:
    name, objs = overlay
    secrets = {o["metadata"]["name"]: o for o in objs if o["kind"] == "Secret"}
    referenced: dict[str, set[str]] = {}
    optional: dict[str, set[str]] = {}
    for svc in SERVICES:
        for _, source, _ in secret_mounts(objs, container(objs, svc)):
            if source["name"] not in FAKE_SECRETS:
                continue   # cert-manager's TLS Secrets (prod): test_deploy_tls.py
            into = optional if source.get("optional") else referenced
            into.setdefault(source["name"], set()).update(i["key"] for i in source["items"])
    # admin-password is for the NATS servers and nats-box (the Helm values), no Deployment
    assert referenced == {"paiju-secrets": {"token-secret", "database-url"},
                          "paiju-nats": {f"{svc}-password" for svc in NATS_CLIENTS}}
    # set during a rotation only (or, for database-password, when the URL carries none)
    assert optional == {"paiju-secrets": ROTATION_KEYS | DATABASE_OPTIONAL,
                        "paiju-nats": {f"{svc}-{key}" for svc in NATS_CLIENTS
                                       for key in ("user", "b-password")}}
    if name == "prod":
        assert not secrets, "production secrets must not be in git"
        readme = (ROOT / "deploy" / "README.md").read_text(encoding="utf-8")
        for secret, keys in FAKE_SECRETS.items():
            assert all(key in readme for key in {secret, *keys}), "document how to create them"
        assert all(key in readme for key in ROTATION_KEYS | DATABASE_OPTIONAL), \
            "document the rotations"
    else:   # test also has the migration Job's role (../migrate), which no Deployment reads
        expected = {"paiju-secrets": {"token-secret", "database-url"},
                    "paiju-nats": set(FAKE_SECRETS["paiju-nats"]),
                    "paiju-nats-server": {"passwords.conf"}}   # the NATS servers' copy
        if name == "test":   # PostgreSQL: the password apart from the URL
            expected["paiju-secrets"].add("database-password")
            expected["paiju-migrate"] = {"database-url", "database-password"}
        assert {s: set(o["data"]) for s, o in secrets.items()} == expected
        for user, password in keyed(list(secrets.values()))[("Secret", "paiju-nats")][
                "data"].items():
            assert b"replace-me" in password, f"{user}: a visible placeholder, not a secret"


def hpas(objs: list[dict]) -> dict[str, dict]:
    """HorizontalPodAutoscalers by the Deployment they scale."""
    out = {}
    for o in objs:
        if o["kind"] == "HorizontalPodAutoscaler":
            ref = o["spec"]["scaleTargetRef"]
            assert ref["kind"] == "Deployment" and ref["apiVersion"] == "apps/v1"
            out[ref["name"]] = o
    return out


def test_replicas_per_environment(overlay) -> None:
    """Fixed replicas, or for a Deployment an HPA scales: no replicas in the manifest (an
    apply would reset the HPA's choice) and the HPA's minimum."""
    name, objs = overlay
    scaled = hpas(objs)
    replicas = {}
    for svc in SERVICES:
        spec = find(objs, "Deployment", svc)["spec"]
        if svc in scaled:
            assert "replicas" not in spec, f"{svc}: the HPA owns its replicas"
            replicas[svc] = scaled[svc]["spec"]["minReplicas"]
        else:
            replicas[svc] = spec["replicas"]
    database = load_config(environ=pod_environment(objs, container(objs, "records")))
    if database.records.database_url.startswith("sqlite"):
        assert replicas["records"] == 1, "a SQLite file cannot be shared by records replicas"
    if name == "prod":
        assert min(replicas.values()) >= 2
        assert set(scaled) == {"lobby", "arbiter"}
        budgets = [o for o in objs if o["kind"] == "PodDisruptionBudget"]
        assert sorted(b["metadata"]["name"] for b in budgets) == sorted(SERVICES)
    if name == "dev":
        assert set(replicas.values()) == {1}


def test_images_are_the_service_images(overlay) -> None:
    """The overlays name each service's image with a placeholder tag; prod's cannot be
    pulled: only a release (make deploy, test_a_release_...) names real images, by digest."""
    name, objs = overlay
    for svc in SERVICES:
        image = container(objs, svc)["image"]
        repo, _, tag = image.rpartition(":")
        assert repo == f"paiju-{svc}" and tag
        if name == "prod":
            assert tag == "set-by-deploy"


def test_prod_asks_for_r3_on_a_three_server_nats_cluster() -> None:
    """The prod overlay says R3 itself (not only through config/prod.toml), and the NATS
    release beside it has the three JetStream servers R3 needs."""
    objs = render(K8S / "overlays" / "prod")
    assert find(objs, "ConfigMap", "paiju-config")["data"]["PAIJU_NATS__REPLICAS"] == "3"
    cluster = nats_values("prod")["config"]["cluster"]
    assert cluster["enabled"] is True and cluster["replicas"] == 3
    assert len(nats_servers("prod")) == 3


def test_prod_toml_asks_for_r3_too() -> None:
    """config/prod.toml (the image's defaults for PAIJU_ENV=prod, also outside Kubernetes)."""
    assert load_config("prod", environ={}).nats.replicas == 3


def test_readiness_and_liveness_are_different_health_names(overlay) -> None:
    """Readiness: the overall health ("" , SERVING while the dependencies answer and the
    service is not draining). Liveness: the name "liveness" (SERVING until a dependency has
    been down past nats.liveness_seconds), so a pod cut off from NATS leaves the endpoints at
    once but is restarted only if that lasts. A startup probe waits for readiness."""
    from services.common.health import LIVENESS

    _, objs = overlay
    for svc in SERVICES:
        c = container(objs, svc)
        if svc == "lobby":   # the same two on HTTP (services/lobby/ws.py)
            assert c["readinessProbe"]["httpGet"]["path"] == "/healthz"
            assert c["livenessProbe"]["httpGet"]["path"] == "/livez"
            assert "startupProbe" not in c
        else:
            assert c["readinessProbe"]["grpc"].get("service", "") == "", svc
            assert c["livenessProbe"]["grpc"]["service"] == LIVENESS, svc
            if "startupProbe" in c:
                assert c["startupProbe"]["grpc"].get("service", "") == "", svc
        ready, live = c["readinessProbe"], c["livenessProbe"]
        assert ready["periodSeconds"] * ready["failureThreshold"] <= 10, f"{svc}: readiness"
        cfg = load_config(environ=pod_environment(objs, c))
        # liveness gives up well after the service itself stopped calling itself live
        assert live["periodSeconds"] * live["failureThreshold"] >= 30, f"{svc}: liveness"
        assert cfg.nats.liveness_seconds >= 30


def prestop_sleep(c: dict) -> float:
    """The seconds of the preStop hook: Python's sleep (the images have no sleep(1))."""
    command = c["lifecycle"]["preStop"]["exec"]["command"]
    assert command[:2] == ["python3", "-c"] and len(command) == 3, command
    match = re.fullmatch(r"import time; time\.sleep\((\d+(?:\.\d+)?)\)", command[2])
    assert match, command
    return float(match.group(1))


def test_pods_outlive_their_drain_and_roll_one_at_a_time(overlay) -> None:
    """Deletion: preStop sleep (the pod leaves the endpoints), SIGTERM, the service's drain
    (table: rooms handed to other tables; lobby: clients told to reconnect), the gRPC grace,
    then the stop hooks: terminationGracePeriodSeconds must cover it all, or the kubelet's
    SIGKILL cuts the drain short. A rollout adds one pod before removing one (a table drains
    into the new pod)."""
    import inspect

    from services.common.server import run_until_signalled

    assert inspect.signature(run_until_signalled).parameters["grace"].default == STOP_GRACE
    _, objs = overlay
    for svc in SERVICES:
        dep = find(objs, "Deployment", svc)
        c = container(objs, svc)
        cfg = load_config(environ=pod_environment(objs, c))
        drain = {"table": cfg.table.drain_seconds, "lobby": cfg.lobby.drain_seconds}.get(svc, 0.0)
        pre = prestop_sleep(c)
        assert 2 <= pre <= 10, svc
        grace = dep["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
        assert grace >= pre + drain + STOP_GRACE + 5, f"{svc}: {grace} s cannot hold its drain"
        assert dep["spec"]["strategy"] == {
            "type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}}, svc


def test_prod_disruption_budgets_leave_a_replica_of_each_service() -> None:
    objs = render(K8S / "overlays" / "prod")
    scaled = hpas(objs)
    for svc in SERVICES:
        dep = find(objs, "Deployment", svc)
        budget = find(objs, "PodDisruptionBudget", svc)["spec"]
        labels = dep["spec"]["template"]["metadata"]["labels"]
        assert budget["selector"]["matchLabels"].items() <= labels.items(), svc
        replicas = (scaled[svc]["spec"]["minReplicas"] if svc in scaled
                    else dep["spec"]["replicas"])
        down = budget.get("maxUnavailable", replicas - budget.get("minAvailable", replicas))
        assert down == 1 and replicas - down >= 1, f"{svc}: one pod at a time, one left"


def test_prod_spreads_every_service_over_nodes_as_a_rule_and_zones_as_a_preference() -> None:
    """Hosts: DoNotSchedule, counting only nodes a pod may go to (nodeTaintsPolicy Honor: a
    node that is down or cordoned does not hold replacements Pending). Zones: ScheduleAnyway
    (issue 24: with DoNotSchedule a lost zone left the replacements Pending). Only the pods
    of one ReplicaSet count (a rollout is not held back)."""
    objs = render(K8S / "overlays" / "prod")
    for svc in SERVICES:
        spread = {s["topologyKey"]: s for s in find(objs, "Deployment", svc)["spec"][
            "template"]["spec"]["topologySpreadConstraints"]}
        assert set(spread) == {"kubernetes.io/hostname", "topology.kubernetes.io/zone"}, svc
        for s in spread.values():
            assert s["labelSelector"]["matchLabels"] == {"app.kubernetes.io/name": svc}
            assert s["maxSkew"] == 1 and s["matchLabelKeys"] == ["pod-template-hash"], svc
        host, zone = spread["kubernetes.io/hostname"], spread["topology.kubernetes.io/zone"]
        assert host["whenUnsatisfiable"] == "DoNotSchedule", svc
        assert host["nodeTaintsPolicy"] == "Honor", svc
        assert zone["whenUnsatisfiable"] == "ScheduleAnyway", svc


def test_every_service_with_replicas_spreads_over_hosts_as_a_rule(overlay) -> None:
    """Wherever a service runs more than one pod: DoNotSchedule on the host, the zone a
    preference (no overlay may leave replacements Pending for a lost zone)."""
    name, objs = overlay
    scaled = hpas(objs)
    for svc in SERVICES:
        dep = find(objs, "Deployment", svc)
        count = scaled[svc]["spec"]["minReplicas"] if svc in scaled else dep["spec"]["replicas"]
        spread = {s["topologyKey"]: s for s in
                  dep["spec"]["template"]["spec"].get("topologySpreadConstraints", [])}
        if count < 2:
            continue
        host = spread["kubernetes.io/hostname"]
        assert host["whenUnsatisfiable"] == "DoNotSchedule", (name, svc)
        assert host["labelSelector"]["matchLabels"] == {"app.kubernetes.io/name": svc}
        assert host.get("nodeTaintsPolicy") == "Honor", (name, svc)
        zone = spread["topology.kubernetes.io/zone"]["whenUnsatisfiable"]
        assert zone == "ScheduleAnyway", (name, svc)
    for dep in (o for o in objs if o["kind"] == "Deployment"):
        for s in dep["spec"]["template"]["spec"].get("topologySpreadConstraints", []):
            assert s["topologyKey"] != "topology.kubernetes.io/zone" \
                or s["whenUnsatisfiable"] == "ScheduleAnyway", dep["metadata"]["name"]


def test_no_pod_gets_a_service_account_token(overlay) -> None:
    _, objs = overlay
    for o in objs + migrate_job_objs():
        if o["kind"] in ("Deployment", "Job"):
            pod = o["spec"]["template"]["spec"]
            assert pod["automountServiceAccountToken"] is False, o["metadata"]["name"]


def test_each_workload_runs_as_its_own_service_account_without_a_token(overlay) -> None:
    """A ServiceAccount per service (and one for the migration Job), with no token mounted
    and no Role bound anywhere in the repository: never the namespace's "default"."""
    name, objs = overlay
    migrate = migrate_job_objs(NAMESPACES[name])
    accounts = {o["metadata"]["name"]: o for o in objs + migrate if o["kind"] == "ServiceAccount"}
    workloads = [o for o in objs + migrate if o["kind"] in ("Deployment", "Job")]
    used = [o["spec"]["template"]["spec"]["serviceAccountName"] for o in workloads]
    assert sorted(used) == sorted({*SERVICES, "records-migrate"}), "one account each"
    for workload, account in zip(workloads, used, strict=True):
        sa = accounts[account]
        assert sa["automountServiceAccountToken"] is False, account
        assert sa["metadata"]["namespace"] == workload["metadata"]["namespace"]
        assert sa["metadata"]["labels"]["app.kubernetes.io/name"] == \
            workload["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/name"]
    for path in (ROOT / "deploy").rglob("*.yaml"):
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"^kind: (Cluster)?RoleBinding", text, re.M), path


def test_nats_and_the_table_run_at_priority_classes_defined_once_per_cluster() -> None:
    """PriorityClasses (cluster-scoped, deploy/k8s/cluster, applied once per cluster): NATS
    above the table, both above ordinary workloads and below the system classes; the prod
    table and the prod NATS servers name them."""
    classes = {o["metadata"]["name"]: o for o in render(K8S / "cluster")}
    assert set(classes) == {"paiju-nats", "paiju-table"}
    for pc in classes.values():
        assert pc["kind"] == "PriorityClass" and pc["globalDefault"] is False
        assert 0 < pc["value"] < 1_000_000_000 and "namespace" not in pc["metadata"]
    assert classes["paiju-nats"]["value"] > classes["paiju-table"]["value"]
    prod = render(K8S / "overlays" / "prod")
    for dep in (o for o in prod if o["kind"] == "Deployment"):
        want = "paiju-table" if dep["metadata"]["name"] == "table" else None
        assert dep["spec"]["template"]["spec"].get("priorityClassName") == want
    assert nats_values("prod")["podTemplate"]["merge"]["spec"]["priorityClassName"] == \
        "paiju-nats"
    for validator_version in SCHEMA_VERSIONS:
        validator = pytest.importorskip("kubernetes_validate",
                                        reason="kubernetes-validate is not installed")
        for pc in classes.values():
            validator.validate(pc, validator_version, strict=True)


def test_prod_requests_are_per_service() -> None:
    """What each service does decides its requests (resources.yaml says why): the table
    holds the rooms, the arbiter is one pure function."""
    objs = render(K8S / "overlays" / "prod")
    res = {svc: container(objs, svc)["resources"] for svc in SERVICES}
    assert len({str(r["requests"]) for r in res.values()}) == len(SERVICES)

    def mib(q: str) -> float:
        return float(q[:-2]) * (1024 if q.endswith("Gi") else 1)

    memory = {svc: mib(r["requests"]["memory"]) for svc, r in res.items()}
    assert max(memory, key=memory.get) == "table" and min(memory, key=memory.get) == "arbiter"
    for r in res.values():
        assert mib(r["limits"]["memory"]) >= mib(r["requests"]["memory"])
        assert "cpu" not in r.get("limits", {}), "no CPU limit (throttling costs latency)"


def test_prod_autoscales_lobby_on_cpu_and_sessions_and_arbiter_on_cpu() -> None:
    """The lobby's second signal is a metric the lobby exports (paiju_lobby_sessions, through
    prometheus-adapter's rules); the table is not autoscaled (its signal is documented)."""
    from tests.unit.deploy.test_deploy_monitoring import SERIES

    objs = render(K8S / "overlays" / "prod")
    scaled = hpas(objs)
    assert set(scaled) == {"lobby", "arbiter"}
    for svc, hpa in scaled.items():
        spec = hpa["spec"]
        assert spec["minReplicas"] >= 2 and spec["maxReplicas"] > spec["minReplicas"]
        cpu = [m for m in spec["metrics"] if m["type"] == "Resource"]
        assert cpu and cpu[0]["resource"]["name"] == "cpu"
        assert container(objs, svc)["resources"]["requests"]["cpu"], "utilisation needs a request"
        budget = find(objs, "PodDisruptionBudget", svc)["spec"]
        assert budget["maxUnavailable"] == 1
    (pods,) = [m for m in scaled["lobby"]["spec"]["metrics"] if m["type"] == "Pods"]
    assert pods["pods"]["metric"]["name"] in SERIES
    values = yaml.safe_load((ROOT / "deploy" / "prometheus" / "adapter-values.yaml").read_text())
    exposed = [r["name"]["as"] for r in values["rules"]["custom"]]   # test_deploy_adapter.py
    assert pods["pods"]["metric"]["name"] in exposed
    readme = (ROOT / "deploy" / "README.md").read_text(encoding="utf-8")
    assert "paiju_table_rooms" in readme.split("### Scaling", 1)[1].split("\n## ", 1)[0]


# ------------------------------------------------------------------ releases and migrations
def migrate_job_objs(namespace: str = "paiju") -> list[dict]:
    objs = render(K8S / "migrate")
    for o in objs:
        o["metadata"]["namespace"] = namespace
    return objs


def promote_module():
    from tests.unit.deploy.conftest import deploy_script

    return deploy_script("promote.py")


DIGEST = "sha256:" + "0123456789abcdef" * 4


@pytest.mark.parametrize("env", ["test", "prod"])
def test_a_release_names_every_image_by_digest_without_editing_tracked_files(
        env: str, tmp_path: Path) -> None:
    """make deploy ENV=<env> (deploy/promote.py): a kustomization over the overlay, outside
    git, sets each image to <registry>/paiju-<svc>@sha256:...; the migration Job gets the
    records image; a tag is refused."""
    promote = promote_module()
    images = {svc: f"registry.example.com/paiju/paiju-{svc}@{DIGEST}" for svc in SERVICES}
    out = tmp_path / "release"
    before = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "deploy"],
                            capture_output=True, text=True).stdout
    dirs = promote.render(env, images, out)
    assert [d.name for d in dirs] == ["migrate", "app"]
    app = render(out / "app")
    for svc in SERVICES:
        assert container(app, svc)["image"] == images[svc]
    assert {o["metadata"]["namespace"] for o in app} == {NAMESPACES[env]}
    migrate = render(out / "migrate")
    assert sorted(o["kind"] for o in migrate) == ["Job", "ServiceAccount"]
    (job,) = [o for o in migrate if o["kind"] == "Job"]
    assert {o["metadata"]["namespace"] for o in migrate} == {NAMESPACES[env]}
    (c,) = containers(job)
    assert c["image"] == images["records"]
    assert c["command"] == ["python3", "-m", "services.records.migrate"]
    assert {e["name"]: e["value"] for e in c["env"]} == {
        "PAIJU_RECORDS__DATABASE_URL_FILE": f"{SECRETS_DIR}/database-url",
        "PAIJU_RECORDS__DATABASE_PASSWORD_FILE": f"{SECRETS_DIR}/database-password"}
    assert {item["key"] for _, source, _ in secret_mounts(migrate, c)
            for item in source["items"]} == {"database-url", "database-password"}
    after = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "deploy"],
                           capture_output=True, text=True).stdout
    assert before == after, "no tracked file is edited"
    if shutil.which("kubectl"):
        out_k = subprocess.run(["kubectl", "kustomize", str(out / "app")], capture_output=True,
                               text=True, timeout=120, check=True).stdout
        assert keyed(app) == keyed([d for d in yaml.safe_load_all(out_k) if d])
    with pytest.raises(promote.PromoteError, match="not an image by digest"):
        promote.collect(env, ["table=registry.example.com/paiju/paiju-table:1.0"], None, False)
    with pytest.raises(promote.PromoteError, match="no image for"):
        promote.collect(env, [f"table={images['table']}"], None, False)
    with pytest.raises(promote.PromoteError, match="not a paiju-table image"):
        promote.collect(env, [f"table={images['lobby']}"], None, False)


def test_make_deploy_migrates_then_rolls_out(tmp_path: Path) -> None:
    """The order of make deploy: the old Job deleted, the new one applied and awaited, then
    the services (server-side apply), then every rollout; dist/<svc>/image.txt is read."""
    dist = tmp_path / "dist"
    for svc in SERVICES:
        (dist / svc).mkdir(parents=True)
        (dist / svc / "image.txt").write_text(f"r.example/paiju-{svc}@{DIGEST}\n")
    run = subprocess.run([sys.executable, str(ROOT / "deploy" / "promote.py"), "--env", "prod",
                          "--dry-run", "--from-dist", str(dist), "--out", str(tmp_path / "rel")],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    steps = [line[2:] for line in run.stdout.splitlines() if line.startswith("+ ")]
    # first what each Deployment runs now (the rollback's target: test_deploy_rollback.py)
    assert [s.split()[5] for s in steps[:4]] == list(SERVICES)
    assert all(" get deployment " in s and "revision" in s for s in steps[:4])
    # then whether the smoke check may exec into the pods (else nothing is applied)
    assert steps[4].startswith("kubectl -n paiju auth can-i create pods --subresource=exec")
    steps = steps[5:]
    assert steps[0].startswith("kubectl -n paiju delete job records-migrate")
    assert "apply --server-side" in steps[1] and steps[1].endswith("/migrate")
    assert "get job records-migrate" in steps[2]
    assert "apply --server-side" in steps[3] and steps[3].endswith("/app")
    assert [s.split()[5] for s in steps[4:8]] == [f"deployment/{svc}" for svc in SERVICES]
    # the smoke check: the image's health check in each running pod of every service
    health = promote_module().HEALTH_CHECK
    for i, svc in enumerate(SERVICES):
        listing, check = steps[8 + 2 * i: 10 + 2 * i]
        assert listing.startswith(f"kubectl -n paiju get pods -l app.kubernetes.io/name={svc} ")
        assert check == f"kubectl -n paiju exec '<{svc} pod>' -c {svc} -- " + " ".join(health)
    assert len(steps) == 16
    dockerfile = (ROOT / "deploy" / "docker" / "Dockerfile").read_text(encoding="utf-8")
    assert f"CMD {json.dumps(list(health))}" in dockerfile.split("HEALTHCHECK ", 1)[1], \
        "the smoke check runs the images' own health check"
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "deploy/promote.py --env $(ENV)" in makefile and "--from-dist $(DIST)" in makefile
    assert re.search(r"^DIST \?= dist$", makefile, re.M)


def test_the_migration_job_is_valid_and_alone_holds_the_migration_role() -> None:
    validator = pytest.importorskip("kubernetes_validate",
                                    reason="kubernetes-validate is not installed")
    objs = migrate_job_objs()
    (job,) = [o for o in objs if o["kind"] == "Job"]
    for version in SCHEMA_VERSIONS:
        for obj in objs:
            validator.validate(obj, version, strict=True)
    spec = job["spec"]
    assert spec["template"]["spec"]["restartPolicy"] == "Never"
    assert spec["backoffLimit"] >= 1 and spec["activeDeadlineSeconds"] >= 600
    (c,) = containers(job)
    assert not {"startupProbe", "livenessProbe", "readinessProbe"} & set(c), \
        "a long migration is not killed by a probe"
    for name in OVERLAYS:
        objs = render(K8S / "overlays" / name)
        for svc in SERVICES:
            for _, source, _ in secret_mounts(objs, container(objs, svc)):
                assert source["name"] != "paiju-migrate", f"{name} {svc} holds the DDL role"
    job_objs = migrate_job_objs()
    (c,) = [c for o in job_objs for c in containers(o)]
    cfg = load_config("prod", environ={**pod_environment(job_objs, c),
                                       "PAIJU_TLS__ALLOW_PLAINTEXT_IN_PROD": "true"})
    assert cfg.records.database_url == FAKE_SECRETS["paiju-migrate"]["database-url"]
    assert Path(cfg.records.database_password_file).read_text() == \
        FAKE_SECRETS["paiju-migrate"]["database-password"]
    test = {o["metadata"]["name"]: o for o in render(K8S / "overlays" / "test")
            if o["kind"] == "Secret"}
    assert "paiju-migrate" in test
    assert find(render(K8S / "overlays" / "test"), "ConfigMap", "paiju-config")["data"][
        "RECORDS_MIGRATE_ON_START"] == "false"


# Kinds of custom resources (CRDs), not in the Kubernetes schemas: cert-manager's Issuer and
# Certificate are checked against their own schema by test_deploy_tls.py.
CUSTOM_GROUPS = ("cert-manager.io",)


# The oldest supported Kubernetes (native gRPC probes) and the newest the validator knows.
SCHEMA_VERSIONS = ("1.27.0", "1.37.0")


def test_rendered_objects_match_the_kubernetes_schemas(overlay) -> None:
    """Every rendered object against the OpenAPI schemas of Kubernetes 1.27 and 1.37,
    unknown fields refused. Offline: the schemas ship with the package. Custom resources are
    left to their own tests."""
    validator = pytest.importorskip("kubernetes_validate",
                                    reason="kubernetes-validate is not installed")
    _, objs = overlay
    for obj in objs:
        if obj["apiVersion"].partition("/")[0] in CUSTOM_GROUPS:
            continue
        for version in SCHEMA_VERSIONS:
            validator.validate(obj, version, strict=True)


RECOVERY_HEADER = ("| fault | rooms hit | pause p50 | pause max | settlement lag p99 "
                   "| hands lost | hands doubled |")
RECOVERY_FAULTS = ("NATS stream leader", "table", "table frozen 8 s", "lobby", "arbiter",
                   "records", "PostgreSQL restart (down 1.2 s)", "rolling restart tables",
                   "rolling restart lobbies", "rolling restart arbiters",
                   "rolling restart records", "rolling restart NATS (lame duck)",
                   "NATS node cut off (partition)")


def test_the_readme_states_the_topology_failures_and_bounds_of_the_code() -> None:
    """deploy/README.md's "Topology and failure" names the bounds that decide what players see,
    with the values config/prod.toml and the manifests really have, and keeps a row per fault
    of the chaos suite for the measured recovery times."""
    import importlib

    table_server = next(mod for mod in (importlib.import_module(f"services.table.{name}")
                                        for name in ("server", "roomlog"))
                        if hasattr(mod, "APPEND_RETRY_SECONDS"))

    readme = (ROOT / "deploy" / "README.md").read_text(encoding="utf-8")
    flat = " ".join(readme.split())
    section = readme.split("## Topology and failure", 1)[1].split("\n## ", 1)[0]
    cfg = load_config("prod", environ={})
    for key in ("table.drain_seconds", "lobby.drain_seconds", "table.lease_ttl_seconds",
                "records.ack_wait_seconds", "nats.liveness_seconds",
                "table.arbiter_timeout_seconds"):
        section_name, name = key.split(".")
        value = getattr(getattr(cfg, section_name), name)
        assert f"`{key}` ({value:g} s)" in flat, key
    assert f"up to {table_server.APPEND_RETRY_SECONDS:g} s (`APPEND_RETRY_SECONDS`)" in flat
    objs = render(K8S / "overlays" / "prod")
    pods = {svc: find(objs, "Deployment", svc)["spec"]["template"]["spec"] for svc in SERVICES}
    graces = ", ".join(f"{svc} {pods[svc]['terminationGracePeriodSeconds']} s"
                       for svc in ("table", "lobby", "records", "arbiter"))
    assert f"`terminationGracePeriodSeconds` ({graces})" in flat
    for needle in ("R3", "PodDisruptionBudget", "draining", "make chaos",
                   "python -m bench.bench_chaos", "bench/reports/chaos.md"):
        assert needle in section, needle
    lines = section.splitlines()
    start = lines.index(RECOVERY_HEADER)
    rows = [line.split("|")[1].strip() for line in lines[start + 2:start + 2 + len(
        RECOVERY_FAULTS)]]
    assert tuple(rows) == RECOVERY_FAULTS
