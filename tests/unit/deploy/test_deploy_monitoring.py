"""Prometheus and Grafana files name metrics the services really export, scrape the real
metrics ports, and the dashboard JSON is the one its generator writes."""

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


def unknown_metrics(expr: str) -> set[str]:
    return set(USED.findall(expr)) - set(SERIES)


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
            assert USED.search(expr), f"{p['title']}: no paiju metric in {expr}"
            assert not unknown_metrics(expr), f"{p['title']}: {unknown_metrics(expr)}"
            assert balanced(expr), f"{p['title']}: {expr}"


def test_dashboard_covers_the_required_views() -> None:
    used = {SERIES[m] for p in dashboard_panels() for t in p["targets"]
            for m in USED.findall(t["expr"])}
    required = {"paiju_grpc_requests_total", "paiju_grpc_request_seconds",
                "paiju_table_action_seconds", "paiju_table_log_append_seconds",
                "paiju_table_arbiter_seconds", "paiju_table_arbiter_fallback_total",
                "paiju_table_fanout_seconds", "paiju_table_rooms", "paiju_table_hands_total",
                "paiju_table_settlements_total", "paiju_records_settlements_written_total",
                "paiju_stream_replicas", "paiju_stream_replicas_target", "paiju_ready",
                "paiju_dependency_up", "paiju_table_rooms_handed_over_total",
                "paiju_table_rooms_adopted_total", "paiju_table_log_append_retries_total"}
    assert required <= used, sorted(required - used)
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
    (job,) = config["scrape_configs"]
    sources = {s for r in job["relabel_configs"] for s in r.get("source_labels", [])}
    for annotation in ("scrape", "port", "path"):
        assert f"__meta_kubernetes_pod_annotation_prometheus_io_{annotation}" in sources
    targets = {r.get("target_label") for r in job["relabel_configs"]}
    assert {"__address__", "__metrics_path__", "job"} <= targets


def test_alert_rules_use_existing_metrics(yaml) -> None:
    groups = load(yaml, DEPLOY / "prometheus" / "alerts.yml")["groups"]
    rules = {r["alert"]: r for g in groups for r in g["rules"]}
    expected = {"PaijuArbiterFallbackRising": "paiju_table_arbiter_fallback_total",
                "PaijuSettlementBacklog": "paiju_records_settlements_written_total",
                "PaijuNoTablesRegistered": "paiju_table_rooms",
                "PaijuActionLatencyHigh": "paiju_table_action_seconds_bucket",
                "PaijuStreamReplicasBelowTarget": "paiju_stream_replicas_target",
                "PaijuDependencyDown": "paiju_dependency_up"}
    for name, metric in expected.items():
        assert metric in rules[name]["expr"], name
    assert "paiju_stream_replicas)" in rules["PaijuStreamReplicasBelowTarget"]["expr"]
    assert rules["PaijuStreamReplicasBelowTarget"]["for"] == "5m"
    for name, rule in rules.items():
        assert USED.search(rule["expr"]) and not unknown_metrics(rule["expr"]), name
        assert balanced(rule["expr"]), name
        assert rule["labels"]["severity"] in ("warning", "critical")
        assert rule["annotations"]["summary"]


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


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed")
def test_promtool_replica_alert_fires_only_below_target(yaml, tmp_path: Path) -> None:
    """PaijuStreamReplicasBelowTarget on sample series: ROOMLOG created R1 while R3 is
    configured (as a table and a records pod report it) fires after 5 minutes; SETTLE at
    its target does not; nor does a stream whose replicas were raised."""
    series = [
        ('paiju_stream_replicas{stream="ROOMLOG", pod="table-a"}', "1x10"),
        ('paiju_stream_replicas{stream="ROOMLOG", pod="table-b"}', "1x10"),
        ('paiju_stream_replicas_target{stream="ROOMLOG", pod="table-a"}', "3x10"),
        ('paiju_stream_replicas_target{stream="ROOMLOG", pod="table-b"}', "3x10"),
        ('paiju_stream_replicas{stream="SETTLE", pod="records-a"}', "3x10"),
        ('paiju_stream_replicas_target{stream="SETTLE", pod="records-a"}', "3x10"),
        ('paiju_stream_replicas{stream="KV_rooms", pod="table-a"}', "1 1 1 3 3 3 3 3 3 3 3"),
        ('paiju_stream_replicas_target{stream="KV_rooms", pod="table-a"}', "3x10"),
    ]
    (rule,) = [r for g in load(yaml, DEPLOY / "prometheus" / "alerts.yml")["groups"]
               for r in g["rules"] if r.get("alert") == "PaijuStreamReplicasBelowTarget"]
    annotations = {k: v.replace("{{ $labels.stream }}", "ROOMLOG")
                   for k, v in rule["annotations"].items()}
    tests = {"rule_files": [str(DEPLOY / "prometheus" / "alerts.yml")],
             "evaluation_interval": "1m",
             "tests": [{"interval": "1m",
                        "input_series": [{"series": s, "values": v} for s, v in series],
                        "alert_rule_test": [
                            {"eval_time": "3m", "alertname": "PaijuStreamReplicasBelowTarget",
                             "exp_alerts": []},
                            {"eval_time": "8m", "alertname": "PaijuStreamReplicasBelowTarget",
                             "exp_alerts": [{"exp_labels": {"stream": "ROOMLOG",
                                                            "severity": "critical"},
                                             "exp_annotations": annotations}]}]}]}
    path = tmp_path / "replicas_test.json"   # JSON is YAML
    path.write_text(json.dumps(tests), encoding="utf-8")
    run = subprocess.run(["promtool", "test", "rules", str(path)],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr
