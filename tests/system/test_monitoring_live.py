"""Issue 24: the dashboard and the rules against real metrics. Debian's ``prometheus`` scrapes
the four services of a running stack (real processes) while robots play a room, with the
alert and SLO rule files loaded; then every dashboard panel's expressions are asked of its
HTTP API: each evaluates without error, and each panel returns series, but those that need
what this stack does not run (kube-state-metrics, the NATS exporter, TLS) or that only an
incident fills (listed below, each with its reason). Every alerting and recording rule
evaluates without error, and the SLO recording rules give a ratio for each objective.

A panel or rule naming a metric no service exports, or a label the services do not set,
fails here (the static checks of tests/unit/deploy only compare names)."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from clients.robot.robot import run_tables
from services.common.natsd import free_port
from tests.system.conftest import SECRET, Stack

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "deploy" / "grafana" / "dashboards" / "paiju.json"
RULES = (ROOT / "deploy" / "prometheus" / "alerts.yml",
         ROOT / "deploy" / "prometheus" / "slo-rules.yml")
NAMESPACE = "paiju-live"
# Panels that may show nothing on this stack, and why.
MAY_BE_EMPTY = {
    "Certificates: days left by pod and use": "the stack runs without TLS",
    "gRPC server-side errors by service and method": "no server-side error happens",
    "Errors by method and code (code != OK)": "no call need fail",
    "Timeouts (entrust) per minute by game": "robots answer before their timers",
}
# Series other exporters provide (tests/unit/deploy/test_deploy_monitoring.py, EXTERNAL)
FOREIGN = ("kube_", "nats_")

pytestmark = pytest.mark.skipif(shutil.which("prometheus") is None,
                                reason="prometheus not installed (Debian's prometheus package; "
                                       ".ci/run installs it)")


def api(port: int, path: str, **params: str) -> Any:
    query = f"?{urllib.parse.urlencode(params)}" if params else ""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/{path}{query}",
                                timeout=10) as reply:
        body = json.loads(reply.read())
    assert body["status"] == "success", body
    return body["data"]


def start_prometheus(stack: Stack, tmp: Path) -> tuple[subprocess.Popen[bytes], int]:
    jobs = {"lobby": stack.lobby, "table": stack.table, "arbiter": stack.arbiter,
            "records": stack.records}
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(p) for p in RULES],
        # the labels deploy/prometheus/prometheus-k8s.yml and the ServiceMonitor give
        "scrape_configs": [{"job_name": job, "static_configs": [{
            "targets": [f"127.0.0.1:{svc.metrics_port}"],
            "labels": {"namespace": NAMESPACE, "pod": f"{job}-0"}}]}
            for job, svc in jobs.items()],
    }
    path = tmp / "prometheus.yml"
    path.write_text(json.dumps(config), encoding="utf-8")   # JSON is YAML
    port = free_port()
    log = open(tmp / "prometheus.log", "ab")  # noqa: SIM115 - kept open for the child's life
    proc = subprocess.Popen(["prometheus", f"--config.file={path}",
                             f"--storage.tsdb.path={tmp / 'tsdb'}",
                             f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=log, stderr=log, start_new_session=True)
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/-/ready", timeout=2):
                return proc, port
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise AssertionError((tmp / "prometheus.log").read_text()[-3000:]) from None
            time.sleep(0.2)


def panels() -> list[dict]:
    return [p for p in json.loads(DASHBOARD.read_text(encoding="utf-8"))["panels"]
            if p["type"] != "row"]


def concrete(expr: str) -> str:
    return expr.replace("$namespace", NAMESPACE).replace("$__rate_interval", "5m")


async def test_every_panel_and_rule_evaluates_against_a_playing_stack(
        stack: Stack, tmp_path: Path) -> None:
    proc, port = start_prometheus(stack, tmp_path)
    try:
        results = await asyncio.wait_for(
            run_tables(stack.lobby_address, "xuezhan", 1, SECRET, hands=2, first_uid=31_000),
            timeout=300)
        assert all(not r.errors for r in results), [r.errors for r in results]

        async def settled() -> bool:   # records wrote them, and a scrape saw it
            data = await asyncio.to_thread(
                api, port, "query",
                query=f'sum(paiju_records_settlement_delay_seconds_count{{namespace="{NAMESPACE}"}})')
            return bool(data["result"]) and float(data["result"][0]["value"][1]) >= 2

        deadline = time.monotonic() + 60
        while not await settled():
            assert time.monotonic() < deadline, "no settlement reached Prometheus"
            await asyncio.sleep(0.5)
        await asyncio.sleep(3)   # a few rule evaluations after the last scrape

        empty, failed = [], []
        for panel in panels():
            returned = 0
            for target in panel["targets"]:
                try:
                    data = await asyncio.to_thread(api, port, "query",
                                                   query=concrete(target["expr"]))
                except (OSError, AssertionError) as exc:
                    failed.append(f"{panel['title']}: {target['expr']}: {exc}")
                    continue
                returned += len(data["result"])
            foreign = all(any(f in t["expr"] for f in FOREIGN) for t in panel["targets"])
            if not returned and not foreign and panel["title"] not in MAY_BE_EMPTY:
                empty.append(panel["title"])
        assert not failed, "\n".join(failed)
        assert not empty, f"panels without data on a playing stack: {empty}"

        groups = (await asyncio.to_thread(api, port, "rules"))["groups"]
        rules = [r for g in groups for r in g["rules"]]
        assert len(rules) > 50
        broken = [f"{r['name']}: {r.get('lastError')}" for r in rules if r["health"] != "ok"]
        assert not broken, "\n".join(broken)
        ratios = await asyncio.to_thread(api, port, "query",
                                         query="paiju:slo_errors:ratio_rate5m")
        objectives = {s["metric"]["slo"] for s in ratios["result"]
                      if s["metric"].get("namespace") == NAMESPACE}
        assert objectives == {"moves", "settlements", "logins", "grpc"}, ratios
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
