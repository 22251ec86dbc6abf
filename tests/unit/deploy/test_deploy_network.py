"""Who may talk to whom: the NetworkPolicies of every overlay, evaluated with the Kubernetes
rules against the ports of config/prod.toml, and what the Services expose (the prod
LoadBalancer carries the public lobby ports only; metrics and the console stay inside)."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.unit.deploy.test_deploy_k8s import (
    K8S,
    NAMESPACES,
    OVERLAYS,
    ROOT,
    container,
    find,
    load_all,
    render,
)
from tests.unit.deploy.test_deploy_k8s import (
    port as container_port,
)

yaml = pytest.importorskip("yaml", reason="PyYAML is needed to parse deploy/ (PyYAML>=6,<7)")

PROD = tomllib.loads((ROOT / "config" / "prod.toml").read_text(encoding="utf-8"))
DEV = tomllib.loads((ROOT / "config" / "dev.toml").read_text(encoding="utf-8"))
SERVICES = ("lobby", "table", "arbiter", "records")
CONSOLE_PORT = DEV["lobby"]["console_port"]   # the port an operator would turn on (off in prod)
NATS_CLIENT, NATS_ROUTES, NATS_MONITOR, NATS_EXPORTER = 4222, 6222, 8222, 7777
POSTGRES = 5432
# The plaintext health-only port of internal mutual TLS (prod): for the kubelet, which probes
# from the node (allowed by the CNI, not by a policy); no pod may reach it.
PROBE_PORT = container_port(container(render(K8S / "overlays" / "prod"), "table"), "probe")


@dataclass(frozen=True)
class Peer:
    """A traffic source or destination: a pod (namespace, labels) or the outside world."""

    name: str
    namespace: str | None            # None: outside the cluster
    labels: tuple[tuple[str, str], ...] = ()

    @property
    def label_map(self) -> dict[str, str]:
        return dict(self.labels)


def peers(namespace: str, objs: list[dict]) -> dict[str, Peer]:
    """Every kind of pod that matters, with the labels it really has."""
    out = {}
    for svc in SERVICES:
        labels = find(objs, "Deployment", svc)["spec"]["template"]["metadata"]["labels"]
        out[svc] = Peer(svc, namespace, tuple(sorted(labels.items())))
    nats = {"app.kubernetes.io/name": "nats", "app.kubernetes.io/instance": "nats"}
    # the labels of the official chart's pods (release "nats")
    out["nats"] = Peer("nats", namespace, tuple(sorted(
        {**nats, "app.kubernetes.io/component": "nats"}.items())))
    out["nats-box"] = Peer("nats-box", namespace, tuple(sorted(
        {**nats, "app.kubernetes.io/component": "nats-box"}.items())))
    out["postgres"] = Peer("postgres", namespace, (("app.kubernetes.io/name", "postgresql"),))
    out["other"] = Peer("other", namespace, (("app", "debug"),))
    out["prometheus"] = Peer("prometheus", "monitoring", (("app.kubernetes.io/name", "prometheus"),))
    out["elsewhere"] = Peer("elsewhere", "team-x", (("app.kubernetes.io/name", "prometheus"),))
    out["internet"] = Peer("internet", None)
    return out


def selects(selector: dict | None, labels: dict[str, str]) -> bool:
    if selector is None:
        return False
    for key, value in selector.get("matchLabels", {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions", []):
        key, op, values = expr["key"], expr["operator"], expr.get("values", [])
        ok = {"In": key in labels and labels[key] in values,
              "NotIn": key not in labels or labels[key] not in values,
              "Exists": key in labels, "DoesNotExist": key not in labels}[op]
        if not ok:
            return False
    return True


def source_matches(entry: dict, policy_ns: str, src: Peer) -> bool:
    assert "ipBlock" not in entry, "ipBlock rules are not modelled: add them to this test"
    if src.namespace is None:
        return False
    ns_sel, pod_sel = entry.get("namespaceSelector"), entry.get("podSelector")
    ns_labels = {"kubernetes.io/metadata.name": src.namespace}
    if ns_sel is None and src.namespace != policy_ns:
        return False
    if ns_sel is not None and not selects(ns_sel, ns_labels):
        return False
    return pod_sel is None or selects(pod_sel, src.label_map)


def named_ports(objs: list[dict], dst: Peer) -> dict[str, int]:
    if dst.name not in SERVICES:
        return {}
    return {p["name"]: p["containerPort"] for p in container(objs, dst.name)["ports"]}


def allowed(objs: list[dict], src: Peer, dst: Peer, port: int) -> bool:
    """Kubernetes NetworkPolicy ingress semantics for TCP ``port`` of ``dst``."""
    policies = [o for o in objs if o["kind"] == "NetworkPolicy"
                and o["metadata"]["namespace"] == dst.namespace
                and selects(o["spec"]["podSelector"], dst.label_map)
                and "Ingress" in o["spec"].get("policyTypes", ["Ingress"])]
    if not policies:
        return True
    names = named_ports(objs, dst)
    for policy in policies:
        for rule in policy["spec"].get("ingress", []):
            froms = rule.get("from")
            if froms is not None and not any(
                    source_matches(e, policy["metadata"]["namespace"], src) for e in froms):
                continue
            ports = rule.get("ports")
            if ports is None or any(
                    p.get("protocol", "TCP") == "TCP"
                    and (p["port"] if isinstance(p["port"], int) else names.get(p["port"])) == port
                    for p in ports):
                return True
    return False


def expected(namespace: str) -> dict[tuple[str, int], set[str]]:
    """(destination, port) -> the sources allowed; every other pair is refused."""
    everyone = {"internet", "lobby", "table", "arbiter", "records", "nats", "nats-box",
                "postgres", "other", "prometheus", "elsewhere"}
    lobby, table, arbiter, records = (PROD[s] for s in SERVICES)
    return {
        ("lobby", lobby["port"]): everyone,
        ("lobby", lobby["ws_port"]): everyone,
        ("lobby", lobby["metrics_port"]): {"prometheus"},
        ("table", table["port"]): {"lobby"},
        ("table", table["metrics_port"]): {"prometheus"},
        ("records", records["port"]): {"lobby"},
        ("records", records["metrics_port"]): {"prometheus"},
        # the previous release's tables (Arbiter.Decide); this release's ask over NATS
        ("arbiter", arbiter["port"]): {"table"},
        ("arbiter", arbiter["metrics_port"]): {"prometheus"},
        ("nats", NATS_CLIENT): {"lobby", "table", "arbiter", "records", "nats-box"},
        ("nats", NATS_ROUTES): {"nats"},
        ("nats", NATS_MONITOR): {"prometheus"},
        ("nats", NATS_EXPORTER): {"prometheus"},
        # any pod of the namespace on 5432: records' database when it runs there
        **{(dst, POSTGRES): {"records"} for dst in everyone
           if dst in ("lobby", "table", "arbiter", "records", "nats", "nats-box",
                      "postgres", "other")},
    }


@pytest.fixture(scope="module", params=OVERLAYS)
def overlay(request: pytest.FixtureRequest) -> tuple[str, list[dict]]:
    return request.param, render(K8S / "overlays" / request.param)


def test_the_ports_of_the_policies_are_the_ports_of_the_code() -> None:
    assert PROD["lobby"]["console_port"] == -1, "the console is off in prod"
    assert CONSOLE_PORT > 0
    ports = {CONSOLE_PORT} | {PROD[s][k] for s in SERVICES for k in ("port", "metrics_port")}
    assert len(ports) == 9 and PROD["lobby"]["ws_port"] not in ports
    assert PROBE_PORT not in ports | {PROD["lobby"]["ws_port"]}


def test_ingress_matrix(overlay: tuple[str, list[dict]]) -> None:
    name, objs = overlay
    namespace = NAMESPACES[name]
    world = peers(namespace, objs)
    want = expected(namespace)
    ports = sorted({p for _, p in want} | {CONSOLE_PORT, PROBE_PORT, 22, 9090})
    wrong = []
    for dst in world.values():
        if dst.namespace != namespace:
            continue
        for number in ports:
            for src in world.values():
                ok = allowed(objs, src, dst, number)
                if ok != (src.name in want.get((dst.name, number), set())):
                    wrong.append(
                        f"{src.name} -> {dst.name}:{number} {'allowed' if ok else 'refused'}")
    assert not wrong, "\n".join(wrong)


def test_everything_is_denied_by_default_and_nothing_reaches_the_console(overlay) -> None:
    name, objs = overlay
    policies = [o for o in objs if o["kind"] == "NetworkPolicy"]
    deny = find(objs, "NetworkPolicy", "default-deny-ingress")["spec"]
    assert deny["podSelector"] == {} and deny["policyTypes"] == ["Ingress"]
    assert "ingress" not in deny
    for policy in policies:
        for rule in policy["spec"].get("ingress", []):
            for p in rule.get("ports", []):
                assert p["port"] != CONSOLE_PORT, policy["metadata"]["name"]
            if "from" not in rule:   # open to the world: the lobby's public ports only
                assert policy["spec"]["podSelector"] == {
                    "matchLabels": {"app.kubernetes.io/name": "lobby"}}
                assert {p["port"] for p in rule["ports"]} == {PROD["lobby"]["port"],
                                                              PROD["lobby"]["ws_port"]}


def test_prometheus_is_named_the_same_way_everywhere(overlay) -> None:
    _, objs = overlay
    sources = []
    for policy in (o for o in objs if o["kind"] == "NetworkPolicy"):
        for rule in policy["spec"].get("ingress", []):
            for entry in rule.get("from", []):
                if "namespaceSelector" in entry:
                    sources.append(entry)
    assert len(sources) == 2 and sources[0] == sources[1], "one place to adapt, twice"


# ------------------------------------------------------------------ what the Services expose
def test_the_prod_load_balancer_exposes_only_the_public_lobby_ports() -> None:
    objs = render(K8S / "overlays" / "prod")
    public = [o for o in objs if o["kind"] == "Service"
              and o["spec"].get("type") in ("LoadBalancer", "NodePort")]
    assert [o["metadata"]["name"] for o in public] == ["lobby"]
    lobby = public[0]["spec"]
    assert lobby["type"] == "LoadBalancer" and lobby["externalTrafficPolicy"] == "Local"
    assert sorted(p["port"] for p in lobby["ports"]) == sorted(
        [PROD["lobby"]["port"], PROD["lobby"]["ws_port"]])
    assert {p["targetPort"] for p in lobby["ports"]} == {"grpc", "web"}
    for port in lobby["ports"]:   # each targets the container port of the same number
        assert dict((p["name"], p["containerPort"]) for p in container(
            objs, "lobby")["ports"])[port["targetPort"]] == port["port"]


def test_metrics_stay_inside_and_no_service_carries_the_console(overlay) -> None:
    _, objs = overlay
    services = [o for o in objs if o["kind"] == "Service"]
    metrics = find(objs, "Service", "lobby-metrics")["spec"]
    assert metrics["type"] == "ClusterIP"
    assert metrics["selector"] == {"app.kubernetes.io/name": "lobby"}
    assert [(p["port"], p["targetPort"]) for p in metrics["ports"]] == [
        (PROD["lobby"]["metrics_port"], "metrics")]
    for service in services:
        spec = service["spec"]
        for p in spec["ports"]:
            assert p["port"] != CONSOLE_PORT and p["targetPort"] != "console"
            if p["targetPort"] == "metrics":
                assert spec.get("type", "ClusterIP") == "ClusterIP", service["metadata"]["name"]
    ports = {p["containerPort"] for p in container(objs, "lobby")["ports"]}
    assert CONSOLE_PORT not in ports, "a declared console port is one patch from exposure"


def test_the_console_policy_is_opt_in_and_narrow() -> None:
    (policy,) = load_all(K8S / "optional" / "lobby-console.yaml")
    for path in K8S.rglob("kustomization.yaml"):
        assert "lobby-console" not in path.read_text(encoding="utf-8"), path
    spec = policy["spec"]
    assert spec["podSelector"] == {"matchLabels": {"app.kubernetes.io/name": "lobby"}}
    (rule,) = spec["ingress"]
    assert [p["port"] for p in rule["ports"]] == [CONSOLE_PORT]
    assert rule["from"] and all(entry for entry in rule["from"]), "never from anywhere"


# ------------------------------------------------------------------ compose and docs
def test_compose_publishes_no_nats_and_no_metrics_port() -> None:
    doc = yaml.safe_load((ROOT / "deploy" / "compose.yaml").read_text(encoding="utf-8"))
    services = doc["services"]
    assert "ports" not in services["nats"], "compose's NATS is open: keep it off the host"
    private = {NATS_CLIENT, NATS_MONITOR} | {PROD[s]["metrics_port"] for s in SERVICES} \
        | {CONSOLE_PORT}
    for name, svc in services.items():
        for mapping in svc.get("ports", []):
            assert int(str(mapping).split(":")[-1]) not in private, (name, mapping)


def test_the_readme_tells_operators_what_to_set() -> None:
    readme = (ROOT / "deploy" / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Security", 1)[1].split("\n## ", 1)[0]
    for needle in ("paiju-nats", "token-secret", "PAIJU_LOBBY__CONSOLE_TOKEN",
                   "PAIJU_LOBBY__TRUSTED_PROXIES", "NetworkPolic", "LoadBalancer",
                   "values-auth.yaml", "Compose", "_INBOX"):
        assert needle in section, needle


def test_every_overlay_namespace_is_covered() -> None:
    assert set(NAMESPACES) == set(OVERLAYS)
    assert Path(K8S / "base" / "networkpolicy.yaml").exists()


# ------------------------------------------------------------------ egress
# Destinations outside the namespace's pods: the cluster DNS, a database in another namespace,
# and addresses outside the cluster (a managed PostgreSQL, the Kubernetes API, the internet).
DNS = 53


def egress_world(namespace: str, objs: list[dict]) -> dict[str, Peer]:
    world = peers(namespace, objs)
    world["records-migrate"] = Peer("records-migrate", namespace, tuple(sorted({
        **load_all(K8S / "migrate" / "job.yaml")[0]["spec"]["template"]["metadata"]["labels"],
    }.items())))
    world["kube-dns"] = Peer("kube-dns", "kube-system", (("k8s-app", "kube-dns"),))
    world["db-elsewhere"] = Peer("db-elsewhere", "databases", (("cnpg.io/cluster", "paiju"),))
    world["kube-api"] = Peer("kube-api", None)      # 10.96.0.1:443, the API server
    return world


def destination_matches(entry: dict, policy_ns: str, dst: Peer) -> bool:
    """An egress ``to`` entry against a destination: pods by namespace and pod selectors
    (as for ingress), addresses outside the cluster by ipBlock (every address is inside
    0.0.0.0/0; a pod's own IP is not matched by ipBlock, as most CNIs do)."""
    if "ipBlock" in entry:
        assert entry["ipBlock"]["cidr"] == "0.0.0.0/0" and not entry["ipBlock"].get("except")
        return dst.namespace is None
    return source_matches(entry, policy_ns, dst)


def egress_allowed(objs: list[dict], src: Peer, dst: Peer, port: int, protocol: str) -> bool:
    """Kubernetes NetworkPolicy egress semantics: open unless a policy of the source's
    namespace selects the source for Egress; then allowed if one of their rules allows it."""
    policies = [o for o in objs if o["kind"] == "NetworkPolicy"
                and o["metadata"]["namespace"] == src.namespace
                and selects(o["spec"]["podSelector"], src.label_map)
                and "Egress" in o["spec"].get("policyTypes", [])]
    if not policies:
        return True
    for policy in policies:
        for rule in policy["spec"].get("egress", []):
            tos = rule.get("to")
            if tos is not None and not any(
                    destination_matches(e, policy["metadata"]["namespace"], dst) for e in tos):
                continue
            ports = rule.get("ports")
            if ports is None or any(p.get("protocol", "TCP") == protocol and p["port"] == port
                                    for p in ports):
                return True
    return False


PAIJU_PODS = (*SERVICES, "records-migrate")


def expected_egress() -> dict[str, set[tuple[str, int, str]]]:
    """source -> the (destination, port, protocol) it may reach; everything else refused."""
    lobby, table, arbiter, records = (PROD[s] for s in SERVICES)
    dns = {("kube-dns", DNS, "UDP"), ("kube-dns", DNS, "TCP")}
    # PostgreSQL may be anywhere: any pod of any namespace, any address outside, on 5432
    postgres = {(d, POSTGRES, "TCP") for d in (
        "lobby", "table", "arbiter", "records", "records-migrate", "nats", "nats-box",
        "postgres", "other", "prometheus", "elsewhere", "kube-dns", "db-elsewhere",
        "internet", "kube-api")}
    return {
        "lobby": dns | {("table", table["port"], "TCP"), ("records", records["port"], "TCP"),
                        ("nats", NATS_CLIENT, "TCP")},
        # the arbiter's port for the previous release's tables (Arbiter.Decide); this
        # release's ask the arbiters over NATS, which the arbiters answer
        "table": dns | {("arbiter", arbiter["port"], "TCP"), ("nats", NATS_CLIENT, "TCP")},
        "arbiter": dns | {("nats", NATS_CLIENT, "TCP")},
        "records": dns | postgres | {("nats", NATS_CLIENT, "TCP")},
        "records-migrate": dns | postgres,
    }


def test_egress_matrix(overlay: tuple[str, list[dict]]) -> None:
    """Each Paiju pod reaches what its code dials and nothing else (no other service's port,
    no metrics, no NATS route or monitor port, no Kubernetes API, nothing outside but
    PostgreSQL); pods that are not Paiju's (NATS, nats-box, a database) keep their egress."""
    name, objs = overlay
    world = egress_world(NAMESPACES[name], objs)
    want = expected_egress()
    lobby = PROD["lobby"]
    ports = sorted({p for _, p, _ in set().union(*want.values())}
                   | {PROD[s][k] for s in SERVICES for k in ("port", "metrics_port")}
                   | {lobby["ws_port"], CONSOLE_PORT, PROBE_PORT, NATS_ROUTES, NATS_MONITOR,
                      NATS_EXPORTER, 443, 80, 22})
    wrong = []
    for src in world.values():
        if src.namespace != NAMESPACES[name]:
            continue
        for dst in world.values():
            for number in ports:
                for protocol in ("TCP", "UDP"):
                    ok = egress_allowed(objs, src, dst, number, protocol)
                    should = ((dst.name, number, protocol) in want[src.name]
                              if src.name in want else True)
                    if ok != should:
                        wrong.append(f"{src.name} -> {dst.name}:{number}/{protocol} "
                                     f"{'allowed' if ok else 'refused'}")
    assert not wrong, "\n".join(wrong)
    assert set(want) == set(PAIJU_PODS)


def test_egress_is_denied_by_default_for_paiju_pods_only(overlay) -> None:
    _, objs = overlay
    deny = find(objs, "NetworkPolicy", "default-deny-egress")["spec"]
    assert deny["podSelector"] == {"matchLabels": {"app.kubernetes.io/part-of": "paiju"}}
    assert deny["policyTypes"] == ["Egress"] and "egress" not in deny
    for svc in SERVICES:   # every service's pods carry the label the default denial selects
        labels = find(objs, "Deployment", svc)["spec"]["template"]["metadata"]["labels"]
        assert labels["app.kubernetes.io/part-of"] == "paiju", svc
