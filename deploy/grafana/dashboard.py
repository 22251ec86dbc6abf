"""Writes dashboards/paiju.json, the Grafana dashboard of Paiju, from the panel list below.

    python deploy/grafana/dashboard.py            # rewrite dashboards/paiju.json
    python deploy/grafana/dashboard.py --check    # exit 1 if the file is out of date

Every expression names metrics the services export, or the exporters' of the cluster
(kube-state-metrics, the NATS exporter; tests/unit/deploy checks it). Every series is
filtered by the dashboard's namespace variable (one environment per namespace).
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent / "dashboards" / "paiju.json"
_SLO_SPEC = importlib.util.spec_from_file_location(
    "paiju_slo", Path(__file__).resolve().parents[1] / "prometheus" / "slo.py")
assert _SLO_SPEC is not None and _SLO_SPEC.loader is not None
slo = importlib.util.module_from_spec(_SLO_SPEC)
_SLO_SPEC.loader.exec_module(slo)   # the SLOs (docs/slo.md) and their recording rules
DS = {"type": "prometheus", "uid": "${datasource}"}
RATE = "[$__rate_interval]"
# Stream RPCs are timed over their whole life: keep them out of latency quantiles.
UNARY = 'method!~".*/(Connect|Session|Watch)"'
NAMESPACE = 'namespace=~"$namespace"'
SERVICES = 'lobby|table|arbiter|records'
# A series name: the services' paiju_* and process_* (prometheus_client's process
# collector), the SLO recording rules' paiju:*, Prometheus' up, kube-state-metrics' kube_*,
# and the NATS exporter's nats_* (deploy/prometheus/alerts.yml lists the sources).
SELECTOR = re.compile(
    r'\b(paiju_\w+|paiju:[\w:]+|process_\w+|kube_\w+|nats_\w+|up)\b(\{[^}]*\})?(?!\s*\()')


def scoped(expr: str) -> str:
    """``expr`` with every series selector limited to the chosen namespaces."""
    def one(m: re.Match) -> str:
        labels = m.group(2)
        if labels is None:
            return f"{m.group(1)}{{{NAMESPACE}}}"
        return f"{m.group(1)}{{{NAMESPACE}, {labels[1:]}" if labels != "{}" else \
            f"{m.group(1)}{{{NAMESPACE}}}"
    return SELECTOR.sub(one, expr)


def quantiles(metric: str, by: str = "", qs: tuple[float, ...] = (0.5, 0.95, 0.99)) -> list:
    """(expr, legend) pairs: quantiles of histogram ``metric``, per value of label ``by``."""
    group = f"le, {by}" if by else "le"
    suffix = f" {{{{{by}}}}}" if by else ""
    return [(f"histogram_quantile({q}, sum by ({group}) (rate({metric}_bucket{RATE})))",
             f"p{round(q * 100)}{suffix}") for q in qs]


# (title, unit, [(expr, legend)]) per panel; None starts a new row, named by the next item.
# docs/runbooks.md names panels by their titles (a test checks that they exist).
PANELS: list = [
    ("Service levels (docs/slo.md) and what players feel", None, None),
    ("SLO error ratio over 1 h (budget: 0.1% over 30 days)", "percentunit", [
        ("max by (namespace, slo) (paiju:slo_errors:ratio_rate1h)", "{{namespace}} {{slo}} 1h"),
        ("max by (namespace, slo) (paiju:slo_errors:ratio_rate5m)", "{{namespace}} {{slo}} 5m")]),
    ("SLO budget burn rate over 1 h (page at 14.4, ticket at 3 over 1 d)", "short", [
        (f'max by (namespace) (paiju:slo_errors:ratio_rate1h{{slo="{s.name}"}}) / '
         f"{1 - s.objective:.6g}", f"{{{{namespace}}}} {s.name}") for s in slo.SLOS]),
    ("Rooms stuck mid-hand by table pod", "short", [
        ("sum by (namespace, pod) (paiju_table_rooms_stuck)", "{{namespace}} {{pod}}")]),
    ("Settlement delay from the hand's end", "s",
     quantiles("paiju_records_settlement_delay_seconds", "", (0.5, 0.99, 0.999))),
    ("Login attempts by result (share of all)", "percentunit", [
        (f"sum by (namespace, result) (rate(paiju_lobby_logins_total{RATE})) / ignoring (result) "
         f"group_left sum by (namespace) (rate(paiju_lobby_logins_total{RATE}))",
         "{{namespace}} {{result}}")]),
    ("Open sessions now and 10 minutes before", "short", [
        ("sum by (namespace) (paiju_lobby_sessions)", "{{namespace}} now"),
        ("sum by (namespace) (paiju_lobby_sessions offset 10m)", "{{namespace}} 10 min before")]),
    ("gRPC server-side errors by service and method", "reqps", [
        (f'sum by (namespace, service, method, code) (rate(paiju_grpc_requests_total{{code=~"'
         f'{slo.SERVER_FAULTS}"}}{RATE}))', "{{namespace}} {{service}} {{method}} {{code}}")]),
    ("Certificates: days left by pod and use", "short", [
        ("min by (namespace, pod, use) (paiju_tls_certificate_expiry_seconds) / 86400",
         "{{namespace}} {{pod}} {{use}}")]),
    ("gRPC", None, None),
    ("Requests by method and code", "reqps", [
        (f"sum by (service, method, code) (rate(paiju_grpc_requests_total{RATE}))",
         "{{service}} {{method}} {{code}}")]),
    ("Errors by method and code (code != OK)", "reqps", [
        (f'sum by (service, method, code) (rate(paiju_grpc_requests_total{{code!="OK"}}{RATE}))',
         "{{service}} {{method}} {{code}}")]),
    ("Unary latency p95 by method and code", "s", [
        (f"histogram_quantile(0.95, sum by (le, service, method, code) "
         f"(rate(paiju_grpc_request_seconds_bucket{{{UNARY}}}{RATE})))",
         "{{service}} {{method}} {{code}}")]),
    ("Lobby to table command round trip", "s",
     quantiles("paiju_lobby_table_forward_seconds", "kind", (0.5, 0.95))),
    ("Lobby to table commands answered, sent again, and copies the table answered once", "ops", [
        (f"sum(rate(paiju_lobby_table_commands_total{RATE}))", "answered"),
        (f"sum(rate(paiju_lobby_table_commands_resent_total{RATE}))", "sent again"),
        (f"sum by (outcome) (rate(paiju_table_command_copies_total{RATE}))",
         "copies {{outcome}}")]),
    ("Lobby's wait before a copy of a command, by table (0.5 s: the table answers in time)",
     "s", [("max by (table) (paiju_lobby_table_resend_wait_seconds)", "{{table}}")]),
    ("Table", None, None),
    ("Action round trip (received to logged and fanned out)", "s",
     quantiles("paiju_table_action_seconds", "game")),
    ("JetStream append (room log, acknowledged)", "s",
     quantiles("paiju_table_log_append_seconds")),
    ("Event fan-out to NATS", "s", quantiles("paiju_table_fanout_seconds")),
    ("Arbiter decision round trip", "s", quantiles("paiju_table_arbiter_seconds")),
    ("Arbiter fallback and decisions", "ops", [
        (f"sum(rate(paiju_table_arbiter_fallback_total{RATE}))", "local arbitration"),
        (f"sum(rate(paiju_table_arbiter_seconds_count{RATE}))", "answered by arbiter"),
        (f"sum by (action) (rate(paiju_arbiter_decisions_total{RATE}))", "arbiter: {{action}}")]),
    ("Rooms", "short", [
        ("sum(paiju_table_rooms)", "all tables"),
        ("sum by (instance) (paiju_table_rooms)", "{{instance}}")]),
    ("Hands per minute by game", "short", [
        (f"sum by (game) (rate(paiju_table_hands_total{RATE})) * 60", "{{game}}")]),
    ("Timeouts (entrust) per minute by game", "short", [
        (f"sum by (game) (rate(paiju_table_timeouts_total{RATE})) * 60", "{{game}}")]),
    ("Settlements and records", None, None),
    ("Settlements per minute", "short", [
        (f"sum by (final) (rate(paiju_table_settlements_total{RATE})) * 60",
         "published final={{final}}"),
        (f"sum(rate(paiju_records_settlements_written_total{RATE})) * 60", "written"),
        (f"sum(rate(paiju_records_duplicates_ignored_total{RATE})) * 60", "duplicates"),
        (f"sum by (result) (rate(paiju_records_prompt_settlements_total{RATE})) * 60",
         "prompt copy {{result}}"),
        (f"sum(rate(paiju_records_malformed_total{RATE})) * 60", "malformed"),
        (f"sum(rate(paiju_records_write_failures_total{RATE})) * 60", "write failures")]),
    ("Settlement write latency", "s", quantiles("paiju_records_write_seconds")),
    ("Replication, health and failover", None, None),
    ("Stream replicas: in force and configured", "short", [
        ("min by (stream) (paiju_stream_replicas)", "{{stream}} in force"),
        ("max by (stream) (paiju_stream_replicas_target)", "{{stream}} configured")]),
    ("Ready pods and dependencies up", "short", [
        ("sum by (job) (paiju_ready)", "{{job}} ready"),
        ("sum by (job, dependency) (1 - paiju_dependency_up)", "{{job}} {{dependency}} down")]),
    ("Rooms moved between tables per minute", "short", [
        (f"sum(rate(paiju_table_rooms_handed_over_total{RATE})) * 60", "handed over (drain)"),
        (f"sum(rate(paiju_table_rooms_adopted_total{RATE})) * 60", "adopted (table lost)"),
        (f"sum(rate(paiju_table_rooms_rebuilt_total{RATE})) * 60", "rebuilt from the log")]),
    ("Room-log appends retried (NATS leader elections) per minute", "short", [
        (f"sum(rate(paiju_table_log_append_retries_total{RATE})) * 60", "retries")]),
    ("Operations: what the alerts watch (deploy/prometheus/alerts.yml)", None, None),
    ("Service pods answering scrapes, and NATS servers", "short", [
        (f'sum by (namespace, job) (up{{job=~"{SERVICES}|nats"}})', "{{namespace}} {{job}} up"),
        (f'count by (namespace, job) (up{{job=~"{SERVICES}|nats"}} == 0)',
         "{{namespace}} {{job}} down")]),
    ("Available and wanted pods (kube-state-metrics)", "short", [
        (f'max by (namespace, deployment) '
         f'(kube_deployment_status_replicas_available{{deployment=~"{SERVICES}"}})',
         "{{namespace}} {{deployment}} available"),
        (f'max by (namespace, deployment) (kube_deployment_spec_replicas{{deployment=~"{SERVICES}"}})',
         "{{namespace}} {{deployment}} wanted")]),
    ("Container restarts in 15 minutes (crash loops)", "short", [
        (f'sum by (namespace, pod, container) (increase(kube_pod_container_status_restarts_total'
         f'{{container=~"{SERVICES}|migrate"}}[15m])) > 0', "{{namespace}} {{pod}}")]),
    ("JetStream: storage used and enabled", "percentunit", [
        ("max by (namespace, server_name) (nats_server_total_message_bytes) / "
         "max by (namespace, server_name) (nats_server_max_storage)",
         "{{namespace}} {{server_name}} storage"),
        ("max by (namespace, server_name) (nats_server_jetstream_disabled)",
         "{{namespace}} {{server_name}} disabled")]),
    ("records lag: settlements pending in SETTLE", "short", [
        ('max by (namespace) (nats_consumer_num_pending{stream_name="SETTLE", '
         'consumer_name="records"})', "{{namespace}} pending"),
        ('max by (namespace) (nats_consumer_num_ack_pending{stream_name="SETTLE", '
         'consumer_name="records"})', "{{namespace}} delivered, not acknowledged")]),
    ("Table outbox: writes waiting for NATS", "short", [
        ("sum by (namespace, kind) (paiju_table_pending_writes)", "{{namespace}} {{kind}}")]),
    ("Arbiter fallback ratio", "percentunit", [
        (f"sum by (namespace) (rate(paiju_table_arbiter_fallback_total{RATE})) / "
         f"clamp_min(sum by (namespace) (rate(paiju_table_arbiter_fallback_total{RATE})) + "
         f"sum by (namespace) (rate(paiju_table_arbiter_seconds_count{RATE})), 1e-9)",
         "{{namespace}}")]),
    ("Action latency p99 by namespace and game", "s", [
        (f"histogram_quantile(0.99, sum by (namespace, game, le) "
         f"(rate(paiju_table_action_seconds_bucket{RATE})))", "{{namespace}} {{game}}")]),
    ("Scaling signals: rooms per table, sessions per lobby", "short", [
        ("sum by (namespace) (paiju_table_rooms) / "
         "count by (namespace) (count by (namespace, pod) (paiju_table_rooms))",
         "{{namespace}} rooms per table (scale table)"),
        ("sum by (namespace) (paiju_lobby_sessions) / "
         "count by (namespace) (paiju_lobby_sessions)",
         "{{namespace}} sessions per lobby (HPA target 2000)")]),
    ("Lobby", None, None),
    ("Sessions", "short", [("sum(paiju_lobby_sessions)", "open sessions")]),
    ("Logins and kicks per minute", "short", [
        (f"sum by (result) (rate(paiju_lobby_logins_total{RATE})) * 60", "login {{result}}"),
        (f"sum by (origin) (rate(paiju_lobby_kicks_total{RATE})) * 60", "kick {{origin}}"),
        (f"sum(rate(paiju_lobby_slow_clients_total{RATE})) * 60", "slow clients dropped")]),
    ("Frames per client write (batching clients) and room-list pushes", "short", [
        (f"sum(rate(paiju_lobby_frames_out_total{RATE})) / clamp_min(sum(rate("
         f"paiju_lobby_frames_out_total{RATE})) - sum(rate(paiju_lobby_batched_frames_total"
         f"{RATE})) + sum(rate(paiju_lobby_batches_total{RATE})), 1e-9)", "frames per write"),
        (f"sum by (result) (rate(paiju_lobby_room_changes_total{RATE}))",
         "room changes {{result}} /s")]),
    ("Process", None, None),
    ("Garbage-collector pauses by service (a pause stops the whole process)", "s",
     quantiles("paiju_gc_pause_seconds", "job", (0.5, 0.99))),
    ("CPU per pod (cores)", "short", [
        (f'sum by (namespace, pod) (rate(process_cpu_seconds_total{{job=~"{SERVICES}"}}{RATE}))',
         "{{namespace}} {{pod}}")]),
    ("Memory (RSS) per pod, and its limit", "bytes", [
        (f'max by (namespace, pod) (process_resident_memory_bytes{{job=~"{SERVICES}"}})',
         "{{namespace}} {{pod}} RSS"),
        (f'max by (namespace, pod) (kube_pod_container_resource_limits{{resource="memory", '
         f'container=~"{SERVICES}"}})', "{{namespace}} {{pod}} limit")]),
]


def panel(pid: int, title: str, unit: str, targets: list, x: int, y: int) -> dict:
    return {
        "id": pid, "type": "timeseries", "title": title, "datasource": DS,
        "gridPos": {"h": 8, "w": 12, "x": x, "y": y},
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "options": {"legend": {"displayMode": "list", "placement": "bottom"},
                    "tooltip": {"mode": "multi"}},
        "targets": [{"datasource": DS, "expr": scoped(expr), "legendFormat": legend,
                     "refId": chr(ord("A") + i)} for i, (expr, legend) in enumerate(targets)],
    }


def build() -> dict:
    panels, pid, x, y = [], 1, 0, 0
    for title, unit, targets in PANELS:
        if unit is None:  # a row header starts on a fresh line
            y += 8 if x else 0
            panels.append({"id": pid, "type": "row", "title": title, "collapsed": False,
                           "gridPos": {"h": 1, "w": 24, "x": 0, "y": y}, "panels": []})
            x, y = 0, y + 1
        else:
            panels.append(panel(pid, title, unit, targets, x, y))
            x, y = (12, y) if x == 0 else (0, y + 8)
        pid += 1
    return {
        "uid": "paiju", "title": "Paiju", "tags": ["paiju"], "timezone": "browser",
        "schemaVersion": 39, "version": 1, "editable": True, "refresh": "30s",
        "time": {"from": "now-1h", "to": "now"},
        "templating": {"list": [
            {"name": "datasource", "label": "Data source", "type": "datasource",
             "query": "prometheus"},
            {"name": "namespace", "label": "Namespace", "type": "query", "datasource": DS,
             "query": {"query": "label_values(paiju_ready, namespace)", "refId": "namespace"},
             "definition": "label_values(paiju_ready, namespace)", "refresh": 2,
             "multi": True, "includeAll": True, "allValue": ".*",
             "current": {"selected": True, "text": ["All"], "value": ["$__all"]},
             "sort": 1}]},
        "annotations": {"list": []},
        "panels": panels,
    }


def render() -> str:
    return json.dumps(build(), indent=2, ensure_ascii=False) + "\n"


def main() -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from generated import write_or_check

    return write_or_check(OUT, render, "deploy/grafana/dashboard.py", __doc__.splitlines()[0])


if __name__ == "__main__":
    sys.exit(main())
