"""Rollouts end in bounded time: every Deployment sets a progressDeadlineSeconds that fits
the start-up its probes allow, and the runbook states those bounds.

Kubernetes marks a Deployment ``ProgressDeadlineExceeded`` when no new pod has become
available for ``progressDeadlineSeconds``; ``kubectl rollout status`` then fails ("exceeded
its progress deadline"), and make deploy (deploy/promote.py) rolls the release back
(tests/unit/deploy/test_deploy_rollback.py). Too short, and a pod that is only slow to start
(a table rebuilding its rooms, a surge pod waiting for a new node) is taken for a failure;
unset, Kubernetes waits 600 s.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest

from tests.unit.deploy.test_deploy_k8s import (
    K8S,
    OVERLAYS,
    ROOT,
    SERVICES,
    containers,
    find,
    migrate_job_objs,
    promote_module,
    render,
)

# Scheduling the surge pod (on a node the cluster autoscaler may have to add) and pulling
# its image, on top of what the probes allow: the deadline's margin.
SCHEDULE_MARGIN = 180
# Kubernetes' default deadline: an explicit one is never longer.
KUBERNETES_DEFAULT = 600
# Probe fields Kubernetes defaults when they are not set.
PROBE_DEFAULTS = {"initialDelaySeconds": 0, "periodSeconds": 10, "failureThreshold": 3}


def _probe(c: dict, kind: str) -> dict | None:
    probe = c.get(kind)
    return {**PROBE_DEFAULTS, **probe} if probe else None


def start_budget(dep: dict) -> int:
    """The seconds a new pod of ``dep`` may take to become available before its probes give
    up on it: the startup probe's whole allowance then one readiness period; without a
    startup probe, until liveness restarts a pod that does not answer. Plus minReadySeconds."""
    budget = 0
    for c in containers(dep):
        startup, ready, live = (_probe(c, k) for k in
                                ("startupProbe", "readinessProbe", "livenessProbe"))
        if startup:
            seconds = (startup["initialDelaySeconds"]
                       + startup["periodSeconds"] * startup["failureThreshold"]
                       + (ready["periodSeconds"] if ready else 0))
        elif live:
            seconds = live["initialDelaySeconds"] + live["periodSeconds"] * live["failureThreshold"]
        else:   # nothing restarts it: readiness alone decides, for as long as it takes
            seconds = (ready["initialDelaySeconds"] + ready["periodSeconds"]
                       * ready["failureThreshold"]) if ready else 0
        budget = max(budget, seconds)
    return budget + dep["spec"].get("minReadySeconds", 0)


def deadline_problems(objs: list[dict], rollout_timeout: float) -> list[str]:
    """What is wrong with the progress deadlines of the workloads in ``objs``."""
    problems = []
    for o in objs:
        name = f"{o['kind']}/{o['metadata']['name']}"
        if o["kind"] == "StatefulSet":
            # apps/v1 StatefulSets have no progress deadline: promote.py would wait for one
            # only up to --rollout-timeout. NATS's StatefulSet is the chart's, rolled by helm.
            problems.append(f"{name}: a StatefulSet has no progressDeadlineSeconds")
            continue
        if o["kind"] != "Deployment":
            continue
        deadline = o["spec"].get("progressDeadlineSeconds")
        if deadline is None:
            problems.append(f"{name}: no progressDeadlineSeconds (Kubernetes' 600 s)")
            continue
        need = start_budget(o) + SCHEDULE_MARGIN
        if deadline < need:
            problems.append(f"{name}: {deadline} s < start-up {start_budget(o)} s + "
                            f"{SCHEDULE_MARGIN} s to schedule and pull")
        if deadline > KUBERNETES_DEFAULT:
            problems.append(f"{name}: {deadline} s, longer than Kubernetes' default")
        if deadline >= rollout_timeout:
            problems.append(f"{name}: {deadline} s is not below the rollout timeout "
                            f"{rollout_timeout:.0f} s (the deadline should say why first)")
    return problems


def makefile_rollout_timeout() -> float:
    match = re.search(r"^ROLLOUT_TIMEOUT \?= (\d+)$",
                      (ROOT / "Makefile").read_text(encoding="utf-8"), re.M)
    assert match, "the Makefile's ROLLOUT_TIMEOUT"
    return float(match.group(1))


def release_objs(env: str, tmp_path: Path) -> list[dict]:
    digest = "sha256:" + "ab" * 32
    images = {svc: f"registry.example.com/paiju/paiju-{svc}@{digest}" for svc in SERVICES}
    dirs = promote_module().render(env, images, tmp_path / env)
    return [o for d in dirs for o in render(d)]


@pytest.mark.parametrize("name", OVERLAYS)
def test_every_deployment_has_a_progress_deadline_that_fits_its_start_up(
        name: str, tmp_path: Path) -> None:
    timeout = makefile_rollout_timeout()
    objs = render(K8S / "overlays" / name)
    assert not deadline_problems(objs, timeout)
    assert {o["metadata"]["name"] for o in objs if o["kind"] == "Deployment"} == set(SERVICES)
    assert not [o for o in objs if o["kind"] == "StatefulSet"]
    if name != "dev":   # what make deploy applies: the overlay under the release's images
        assert not deadline_problems(release_objs(name, tmp_path), timeout)
    assert not deadline_problems(migrate_job_objs(), timeout)   # a Job: activeDeadlineSeconds


def test_the_deadline_check_fails_on_a_missing_or_short_deadline() -> None:
    """The check above can fail: no deadline, one shorter than the start-up plus the margin,
    one past the rollout timeout, and a StatefulSet are each reported."""
    objs = render(K8S / "overlays" / "prod")
    table = find(objs, "Deployment", "table")
    budget = start_budget(table)
    assert budget >= 180, "the table's startup probe allows its rooms' rebuild"
    missing, short = copy.deepcopy(table), copy.deepcopy(table)
    del missing["spec"]["progressDeadlineSeconds"]
    short["spec"]["progressDeadlineSeconds"] = budget + SCHEDULE_MARGIN - 1
    assert deadline_problems([missing], 900) == [
        "Deployment/table: no progressDeadlineSeconds (Kubernetes' 600 s)"]
    assert "Deployment/table: 364 s < start-up" in deadline_problems([short], 900)[0]
    assert deadline_problems([table], table["spec"]["progressDeadlineSeconds"])
    assert deadline_problems([{**table, "kind": "StatefulSet"}], 900)
    # a probe the liveness check restarts: its allowance counts without a startup probe
    lobby = find(objs, "Deployment", "lobby")
    assert start_budget(lobby) == 10 + 10 * 3


def test_promote_fails_on_the_deadline_and_the_runbook_states_the_bounds() -> None:
    """deploy/promote.py polls ``kubectl rollout status --watch=false``, which fails once the
    deadline passed; the runbook and the README give each service's bound."""
    promote = (ROOT / "deploy" / "promote.py").read_text(encoding="utf-8")
    assert '"rollout", "status", f"deployment/{service}", "--watch=false"' in promote
    assert "exceeded its progress deadline" in promote
    objs = render(K8S / "overlays" / "prod")
    runbooks = (ROOT / "docs" / "runbooks.md").read_text(encoding="utf-8")
    section = " ".join(runbooks.split("## A failed rollout", 1)[1].split("\n## ", 1)[0].split())
    readme = " ".join((ROOT / "deploy" / "README.md").read_text(encoding="utf-8").split())
    for svc in SERVICES:
        deadline = find(objs, "Deployment", svc)["spec"]["progressDeadlineSeconds"]
        assert f"{svc} {deadline} s" in section, f"the runbook states {svc}'s deadline"
        assert f"{svc} {deadline} s" in readme, f"the README states {svc}'s deadline"
    assert "Kubernetes' default 600 s" not in section
