"""Prometheus and Grafana files name metrics the services really export (or, named here
with their source, the cluster's exporters), scrape the real metrics ports, group every
alert by namespace, make every alert fire and stay silent under promtool, and the generated
files (dashboard JSON, PrometheusRule) are what their generators write."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
DEPLOY = ROOT / "deploy"
DASHBOARD = DEPLOY / "grafana" / "dashboards" / "paiju.json"
SERVICES = ("lobby", "table", "arbiter", "records")
PROD = tomllib.loads((ROOT / "config" / "prod.toml").read_text(encoding="utf-8"))
DECLARED = re.compile(r"\b(Counter|Gauge|Histogram|Summary)\(\s*\"(paiju_\w+)\"")
USED = re.compile(r"\bpaiju_\w+")


def exported_series() -> dict[str, str]:
    """Every series name the code exports (grepped from services/**/*.py) -> metric name."""
    out: dict[str, str] = {}
    for path in (ROOT / "services").rglob("*.py"):
        for kind, name in DECLARED.findall(path.read_text(encoding="utf-8")):
            if kind == "Counter":
                base = name.removesuffix("_total")
                out[base + "_total"] = name
            elif kind in ("Histogram", "Summary"):
                for suffix in ("_count", "_sum") + (("_bucket",) if kind == "Histogram" else ()):
                    out[name + suffix] = name
            else:
                out[name] = name
    return out


SERIES = exported_series()
# Series that other exporters provide, which alerts and panels may name besides paiju_*:
EXTERNAL = {
    # Prometheus: one per scrape target (job = app.kubernetes.io/name, or "nats")
    "up",
    # kube-state-metrics (kube-prometheus-stack ships it)
    "kube_deployment_status_replicas_available", "kube_deployment_spec_replicas",
    "kube_pod_container_status_restarts_total", "kube_pod_container_status_waiting_reason",
    # prometheus-nats-exporter as the NATS chart runs it (-prefix=nats -varz -jsz=all):
    # varz as nats_varz_<field>, jsz as nats_server_*, nats_stream_*, nats_consumer_*
    "nats_server_jetstream_disabled", "nats_server_total_message_bytes",
    "nats_server_max_storage", "nats_varz_slow_consumers", "nats_consumer_num_pending",
    "nats_consumer_num_ack_pending",
}
PROMQL_WORDS = {"by", "on", "without", "ignoring", "group_left", "group_right", "and", "or",
                "unless", "bool", "offset", "le", "inf", "nan"}


def series_names(expr: str) -> set[str]:
    """The series an expression selects: identifiers that are neither functions, keywords,
    label names (inside {} or by/on/without lists), strings nor durations."""
    text = re.sub(r'"[^"]*"', '""', expr)
    text = re.sub(r"\{[^}]*\}", "", text)
    text = re.sub(r"\b(by|on|without|ignoring|group_left|group_right)\s*\([^)]*\)", "", text)
    text = re.sub(r"\[[^\]]*\]", "", text)
    names = set(re.findall(r"\b([a-zA-Z_:][a-zA-Z0-9_:]*)\b(?!\s*\()", text))
    return {n for n in names if n.lower() not in PROMQL_WORDS and not n[0].isdigit()}


def unknown_metrics(expr: str) -> set[str]:
    return (set(USED.findall(expr)) - set(SERIES)) | (series_names(expr) - set(SERIES) - EXTERNAL)


def balanced(expr: str) -> bool:
    stack, pairs = [], {")": "(", "]": "[", "}": "{"}
    for ch in re.sub(r'"[^"]*"', '""', expr):
        if ch in "([{":
            stack.append(ch)
        elif ch in pairs and (not stack or stack.pop() != pairs[ch]):
            return False
    return not stack


def test_the_grep_finds_the_metrics_of_every_service() -> None:
    names = set(SERIES.values())
    for prefix in ("paiju_grpc_", "paiju_table_", "paiju_lobby_", "paiju_arbiter_",
                   "paiju_records_"):
        assert any(n.startswith(prefix) for n in names), prefix
    assert "paiju_table_action_seconds_bucket" in SERIES
    assert "paiju_table_arbiter_fallback_total" in SERIES


def test_the_checks_reject_a_made_up_metric_and_broken_brackets() -> None:
    assert unknown_metrics("rate(paiju_table_hands_total[5m])") == set()
    assert unknown_metrics("rate(paiju_table_hand_total[5m])") == {"paiju_table_hand_total"}
    assert unknown_metrics('sum by (namespace) (up{job="x"} == 0) > 0') == set()
    assert unknown_metrics("max by (namespace) (kube_pod_made_up)") == {"kube_pod_made_up"}
    assert unknown_metrics('nats_consumer_num_pending{stream_name="SETTLE"}') == set()
    assert not balanced("sum(rate(paiju_table_hands_total[5m])")


# ------------------------------------------------------------------ Grafana
def dashboard_panels() -> list[dict]:
    return [p for p in json.loads(DASHBOARD.read_text(encoding="utf-8"))["panels"]
            if p["type"] != "row"]


def test_every_panel_expression_names_existing_metrics() -> None:
    panels = dashboard_panels()
    assert len(panels) >= 10
    for p in panels:
        assert p["targets"], p["title"]
        for target in p["targets"]:
            expr = target["expr"]
            assert series_names(expr), f"{p['title']}: no metric in {expr}"
            assert not unknown_metrics(expr), f"{p['title']}: {unknown_metrics(expr)}"
            assert balanced(expr), f"{p['title']}: {expr}"


def test_every_dashboard_series_is_filtered_by_the_namespace_variable() -> None:
    data = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    (var,) = [v for v in data["templating"]["list"] if v["name"] == "namespace"]
    assert var["includeAll"] and var["allValue"] == ".*" and var["multi"]
    assert "namespace" in var["definition"]
    for p in dashboard_panels():
        for target in p["targets"]:
            expr = target["expr"]
            selectors = re.findall(r"\b([a-z_]+)(\{[^}]*\})?(?=[\s\[)]|$)", expr)
            for name, labels in selectors:
                if name in SERIES or name in EXTERNAL:
                    assert 'namespace=~"$namespace"' in labels, (p["title"], name)


def test_dashboard_covers_the_required_views() -> None:
    used = {SERIES[m] for p in dashboard_panels() for t in p["targets"]
            for m in USED.findall(t["expr"]) if m in SERIES}
    required = {"paiju_grpc_requests_total", "paiju_grpc_request_seconds",
                "paiju_table_action_seconds", "paiju_table_log_append_seconds",
                "paiju_table_arbiter_seconds", "paiju_table_arbiter_fallback_total",
                "paiju_table_fanout_seconds", "paiju_table_rooms", "paiju_table_hands_total",
                "paiju_table_settlements_total", "paiju_records_settlements_written_total",
                "paiju_stream_replicas", "paiju_stream_replicas_target", "paiju_ready",
                "paiju_dependency_up", "paiju_table_rooms_handed_over_total",
                "paiju_table_rooms_adopted_total", "paiju_table_log_append_retries_total"}
    assert required <= used, sorted(required - used)
    exprs = " ".join(t["expr"] for p in dashboard_panels() for t in p["targets"])
    for signal in ("paiju_table_pending_writes", "nats_consumer_num_pending",
                   "kube_pod_container_status_restarts_total", "nats_server_max_storage",
                   "kube_deployment_spec_replicas", "histogram_quantile(0.99",
                   "paiju_lobby_sessions"):
        assert signal in exprs, f"a panel for {signal}"
    grpc = [t["expr"] for p in dashboard_panels() for t in p["targets"]
            if "paiju_grpc_" in t["expr"]]
    assert any("method" in e and "code" in e for e in grpc)
    hands = [t["expr"] for p in dashboard_panels() for t in p["targets"]
             if "paiju_table_hands_total" in t["expr"]]
    assert any("by (game)" in e and "* 60" in e for e in hands), "hands per minute by game"


def test_dashboard_layout_ids_and_datasource() -> None:
    data = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    ids = [p["id"] for p in data["panels"]]
    assert len(ids) == len(set(ids)) and data["uid"]
    cells = set()
    for p in data["panels"]:
        g = p["gridPos"]
        assert 0 <= g["x"] and g["x"] + g["w"] <= 24
        mine = {(x, y) for x in range(g["x"], g["x"] + g["w"])
                for y in range(g["y"], g["y"] + g["h"])}
        assert not cells & mine, f"panel {p['title']} overlaps another"
        cells |= mine
    variables = {v["name"] for v in data["templating"]["list"]}
    for p in dashboard_panels():
        assert p["datasource"]["uid"].strip("${}") in variables


def test_dashboard_json_is_what_the_generator_writes() -> None:
    spec = importlib.util.spec_from_file_location("paiju_dashboard",
                                                  DEPLOY / "grafana" / "dashboard.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert DASHBOARD.read_text(encoding="utf-8") == module.render(), \
        "stale: run python deploy/grafana/dashboard.py"


# ------------------------------------------------------------------ Prometheus (YAML)
@pytest.fixture(scope="module")
def yaml():
    return pytest.importorskip("yaml", reason="PyYAML is needed to parse deploy/ (PyYAML>=6,<7)")


def load(yaml, path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def test_prometheus_scrapes_the_four_metrics_ports(yaml) -> None:
    config = load(yaml, DEPLOY / "prometheus" / "prometheus.yml")
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    assert sorted(jobs) == sorted(SERVICES)
    compose = load(yaml, DEPLOY / "compose.yaml")["services"]
    for svc in SERVICES:
        (static,) = jobs[svc]["static_configs"]
        assert static["targets"] == [f"{svc}:{PROD[svc]['metrics_port']}"]
        assert svc in compose
    for rule_file in config["rule_files"]:
        assert (DEPLOY / "prometheus" / Path(rule_file).name).is_file()


def test_kubernetes_scrape_config_uses_the_pod_annotations(yaml) -> None:
    config = load(yaml, DEPLOY / "prometheus" / "prometheus-k8s.yml")
    jobs = {j["job_name"]: j for j in config["scrape_configs"]}
    assert sorted(jobs) == ["nats", "paiju-pods"]
    nats = jobs["nats"]["relabel_configs"]
    assert {"target_label": "job", "replacement": "nats"} in nats
    assert any(r.get("regex") == "prom-metrics" and r.get("action") == "keep" for r in nats)
    for job in jobs.values():
        assert {"source_labels": ["__meta_kubernetes_namespace"],
                "target_label": "namespace"} in job["relabel_configs"]
    job = jobs["paiju-pods"]
    sources = {s for r in job["relabel_configs"] for s in r.get("source_labels", [])}
    for annotation in ("scrape", "port", "path"):
        assert f"__meta_kubernetes_pod_annotation_prometheus_io_{annotation}" in sources
    targets = {r.get("target_label") for r in job["relabel_configs"]}
    assert {"__address__", "__metrics_path__", "job"} <= targets


ALERTS = {
    # alert: a series its expression must read
    "PaijuServiceDown": "kube_deployment_status_replicas_available",
    "PaijuNoTablesRegistered": "paiju_table_rooms",
    "PaijuCrashLooping": "kube_pod_container_status_restarts_total",
    "PaijuReplicasBelowTarget": "kube_deployment_spec_replicas",
    "PaijuDependencyDown": "paiju_dependency_up",
    "PaijuNatsServerDown": "up",
    "PaijuJetStreamQuorumLost": "up",
    "PaijuJetStreamDisabled": "nats_server_jetstream_disabled",
    "PaijuJetStreamStorageFilling": "nats_server_max_storage",
    "PaijuNatsSlowConsumers": "nats_varz_slow_consumers",
    "PaijuStreamReplicasBelowTarget": "paiju_stream_replicas_target",
    "PaijuRecordsLagging": "nats_consumer_num_pending",
    "PaijuSettlementBacklog": "paiju_records_settlements_written_total",
    "PaijuSettlementWriteFailures": "paiju_records_write_failures_total",
    "PaijuOutboxGrowing": "paiju_table_pending_writes",
    "PaijuArbiterFallbackRising": "paiju_table_arbiter_fallback_total",
    "PaijuActionLatencyHigh": "paiju_table_action_seconds_bucket",
}


def alert_rules(yaml) -> dict[str, dict]:
    groups = load(yaml, DEPLOY / "prometheus" / "alerts.yml")["groups"]
    return {r["alert"]: r for g in groups for r in g["rules"]}


def test_alert_rules_use_existing_metrics_and_group_by_namespace(yaml) -> None:
    rules = alert_rules(yaml)
    assert set(rules) == set(ALERTS)
    for name, metric in ALERTS.items():
        assert metric in series_names(rules[name]["expr"]), name
    assert "paiju_stream_replicas" in series_names(rules["PaijuStreamReplicasBelowTarget"]["expr"])
    assert "histogram_quantile(0.99" in rules["PaijuActionLatencyHigh"]["expr"]
    for name, rule in rules.items():
        expr = rule["expr"]
        assert series_names(expr) and not unknown_metrics(expr), (name, unknown_metrics(expr))
        assert balanced(expr), name
        for clause in re.findall(r"\b(?:by|on)\s*\(([^)]*)\)", expr):
            assert "namespace" in clause, f"{name}: every grouping keeps the namespace ({clause})"
        assert "namespace" in expr, name
        assert rule["labels"]["severity"] in ("warning", "critical")
        assert rule["annotations"]["summary"]
        assert "{{ $labels.namespace }}" in rule["annotations"]["summary"] or \
            "{{ $labels.namespace }}" in rule["annotations"].get("description", ""), name


def test_every_alert_has_a_firing_and_a_silent_promtool_case(yaml) -> None:
    tests = load(yaml, DEPLOY / "prometheus" / "tests" / "alerts_test.yml")
    assert tests["rule_files"] == ["../alerts.yml"]
    fired, silent = set(), set()
    for case in tests["tests"]:
        for check in case["alert_rule_test"]:
            (fired if check["exp_alerts"] else silent).add(check["alertname"])
            for alert in check["exp_alerts"]:
                assert alert["exp_labels"].get("namespace"), case["name"]
    assert fired == set(ALERTS) and silent == set(ALERTS), (set(ALERTS) - fired, set(ALERTS) - silent)


@pytest.mark.skipif(shutil.which("promtool") is None,
                    reason="promtool not installed (Debian's prometheus package; .ci/run installs it)")
def test_promtool_unit_tests_of_every_alert_pass() -> None:
    run = subprocess.run(["promtool", "test", "rules", "alerts_test.yml"],
                         cwd=DEPLOY / "prometheus" / "tests",
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]


def test_the_prometheusrule_is_what_its_generator_writes(yaml) -> None:
    from tests.unit.deploy.conftest import deploy_script

    module = deploy_script("prometheus/operator.py")
    path = DEPLOY / "k8s" / "monitoring" / "prometheusrule.yaml"
    assert path.read_text(encoding="utf-8") == module.render(), \
        "stale: run python deploy/prometheus/operator.py"
    rule = load(yaml, path)
    assert rule["apiVersion"] == "monitoring.coreos.com/v1" and rule["kind"] == "PrometheusRule"
    assert rule["spec"]["groups"] == load(yaml, DEPLOY / "prometheus" / "alerts.yml")["groups"]


def test_monitors_scrape_every_service_once_as_its_job_and_nats(yaml) -> None:
    """The ServiceMonitor selects the Services that carry a "metrics" port: exactly one per
    service (so each pod is scraped once), named job=<service> by app.kubernetes.io/name;
    the PodMonitor scrapes the NATS exporter port of the chart's pods as job=nats."""
    from tests.unit.deploy.test_deploy_k8s import K8S, render

    docs = {d["kind"]: d for d in yaml.safe_load_all(
        (DEPLOY / "k8s" / "monitoring" / "servicemonitor.yaml").read_text(encoding="utf-8")) if d}
    monitor, pods = docs["ServiceMonitor"], docs["PodMonitor"]
    assert monitor["spec"]["jobLabel"] == "app.kubernetes.io/name"
    (expr,) = monitor["spec"]["selector"]["matchExpressions"]
    assert sorted(expr["values"]) == sorted(SERVICES)
    (endpoint,) = monitor["spec"]["endpoints"]
    objs = render(K8S / "overlays" / "prod")
    for svc in SERVICES:
        carrying = [o for o in objs if o["kind"] == "Service"
                    and o["metadata"]["labels"]["app.kubernetes.io/name"] == svc
                    and any(p["name"] == endpoint["port"] for p in o["spec"]["ports"])]
        assert len(carrying) == 1, (svc, [o["metadata"]["name"] for o in carrying])
    assert pods["spec"]["selector"]["matchLabels"]["app.kubernetes.io/name"] == "nats"
    assert pods["spec"]["podMetricsEndpoints"][0]["port"] == "prom-metrics"
    kustomization = load(yaml, DEPLOY / "k8s" / "monitoring" / "kustomization.yaml")
    assert sorted(kustomization["resources"]) == ["prometheusrule.yaml", "servicemonitor.yaml"]
    values = load(yaml, DEPLOY / "k8s" / "nats" / "values-prod.yaml")
    assert values["promExporter"]["enabled"] is True


def test_grafana_provisioning_points_at_the_mounted_dashboards(yaml) -> None:
    base = DEPLOY / "grafana" / "provisioning"
    (provider,) = load(yaml, base / "dashboards" / "paiju.yaml")["providers"]
    (source,) = load(yaml, base / "datasources" / "prometheus.yaml")["datasources"]
    assert source["type"] == "prometheus"
    grafana = load(yaml, DEPLOY / "compose.yaml")["services"]["grafana"]
    mounts = dict(v.rsplit(":", 1)[0].split(":", 1) for v in grafana["volumes"]
                  if v.startswith("./"))
    assert mounts["./grafana/dashboards"] == provider["options"]["path"]
    assert mounts["./grafana/provisioning"] == "/etc/grafana/provisioning"
    prometheus = load(yaml, DEPLOY / "compose.yaml")["services"]["prometheus"]
    assert source["url"].endswith(":9090") and "prometheus" in source["url"]
    assert any(v.startswith("./prometheus:") for v in prometheus["volumes"])


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed")
def test_promtool_accepts_the_alerts_and_every_dashboard_expression(tmp_path: Path) -> None:
    run = subprocess.run(["promtool", "check", "rules", str(DEPLOY / "prometheus" / "alerts.yml")],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr
    exprs = [t["expr"].replace("$__rate_interval", "5m")
             for p in dashboard_panels() for t in p["targets"]]
    rules = {"groups": [{"name": "dashboard", "rules": [
        {"record": f"paiju:dashboard_expr_{i}", "expr": e} for i, e in enumerate(exprs)]}]}
    path = tmp_path / "dashboard_rules.json"  # JSON is YAML: no PyYAML needed
    path.write_text(json.dumps(rules), encoding="utf-8")
    run = subprocess.run(["promtool", "check", "rules", str(path)],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr
