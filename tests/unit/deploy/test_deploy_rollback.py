"""make deploy rolls a failed rollout back (deploy/promote.py), against a fake kubectl.

No cluster here: a fake ``kubectl`` first on PATH records every call and answers as kubectl
does for the calls promote.py makes (a Deployment's revision and image, the migration Job,
server-side apply, ``rollout status --watch=false`` with its progress-deadline error, the
pods' waiting reasons and phases, ``auth can-i`` and ``exec`` of the smoke check, ``rollout
undo --to-revision``). A scenario file says which rollout fails and how. What a real cluster would add (the controller really restoring pods) is not
exercised; the commands and their order are.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SERVICES = ("lobby", "table", "arbiter", "records")
OLD = "sha256:" + "0" * 64
NEW = "sha256:" + "1" * 64

FAKE_KUBECTL = r'''#!PYTHON
"""A fake kubectl: logs argv (one JSON list a line) and answers from a scenario."""
import json, os, sys
argv = sys.argv[1:]
with open(os.environ["FAKE_KUBECTL_LOG"], "a") as log:
    log.write(json.dumps(argv) + "\n")
scenario = json.load(open(os.environ["FAKE_KUBECTL_SCENARIO"]))
state_file = os.environ["FAKE_KUBECTL_LOG"] + ".state"
state = json.load(open(state_file)) if os.path.exists(state_file) else {"applied": False, "undone": []}
def save():
    json.dump(state, open(state_file, "w"))
ns = argv[1] if argv[:1] == ["-n"] else None
rest = argv[2:] if ns else argv
if rest[:2] == ["get", "deployment"]:
    svc = rest[2]
    prev = scenario["previous"].get(svc)
    if prev and "revision" in rest[-1]:
        print(f"{prev['revision']} {prev['image']}", end="")
    elif prev:
        print(prev["image"], end="")
    sys.exit(0)
if rest[:2] == ["get", "job"]:
    print("1," if "succeeded" in rest[-1] else "", end="")
    sys.exit(0)
if rest[:1] == ["delete"]:
    print('job.batch "records-migrate" deleted')
    sys.exit(0)
if rest[:1] == ["apply"]:
    if scenario.get("fail", {}).get("apply") and rest[-1].endswith("app"):
        print('Error from server (Forbidden): deployments.apps "table" is forbidden', file=sys.stderr)
        sys.exit(1)
    state["applied"] = True
    save()
    print("deployment.apps/lobby serverside-applied")
    sys.exit(0)
if rest[:2] == ["rollout", "status"]:
    svc = rest[2].split("/")[1]
    fail = scenario.get("fail", {}).get(svc)
    if svc in state["undone"] or "--watch=false" not in rest:
        print(f'deployment "{svc}" successfully rolled out')
        sys.exit(0)
    if fail == "deadline":
        print(f'error: deployment "{svc}" exceeded its progress deadline', file=sys.stderr)
        sys.exit(1)
    if fail in ("crashloop", "slow"):
        print(f'Waiting for deployment "{svc}" rollout to finish: 1 old replicas are pending termination...')
        sys.exit(0)
    print(f'deployment "{svc}" successfully rolled out')
    sys.exit(0)
if rest[:2] == ["auth", "can-i"]:
    allowed = not scenario.get("fail", {}).get("exec")
    print("yes" if allowed else "no")
    sys.exit(0 if allowed else 1)
if rest[:2] == ["get", "pods"] and "phase" in rest[-1]:      # the smoke check's listing
    svc = rest[3].split("=")[1]
    if scenario.get("fail", {}).get(svc) != "nopod":
        print(f"{svc}-7d9f-abcde {scenario['new'][svc]} Running ")
        print(f"{svc}-7d9f-klmno {scenario['new'][svc]} Pending ")
    # the old release's pod, terminating
    print(f"{svc}-5c4b-fghij {scenario['previous'][svc]['image']} Running 2030-01-01T00:00:00Z")
    sys.exit(0)
if rest[:1] == ["exec"]:
    pod, svc = rest[1], rest[3]
    if scenario.get("fail", {}).get(svc) == "unhealthy":
        print(f"healthcheck: {svc} at 127.0.0.1:50060 (grpc) is not healthy", file=sys.stderr)
        sys.exit(1)
    sys.exit(0)
if rest[:2] == ["get", "pods"]:
    svc = rest[3].split("=")[1]
    if scenario.get("fail", {}).get(svc) == "crashloop":
        print(f"{svc}-7d9f-abcde {scenario['new'][svc]} CrashLoopBackOff")
        print(f"{svc}-5c4b-fghij {scenario['previous'][svc]['image']} ")
    sys.exit(0)
if rest[:2] == ["rollout", "undo"]:
    svc = rest[2].split("/")[1]
    state["undone"].append(svc)
    save()
    rev = rest[3].split("=")[1]
    if scenario.get("fail", {}).get(svc) or svc in scenario.get("changed", []):
        print(f"deployment.apps/{svc} rolled back")
    else:
        print(f"deployment.apps/{svc} skipped rollback (current template already matches revision {rev})")
    sys.exit(0)
print("fake kubectl: unexpected call " + " ".join(argv), file=sys.stderr)
sys.exit(3)
'''


def image(svc: str, digest: str) -> str:
    return f"registry.example.com/paiju/paiju-{svc}@{digest}"


def deploy(tmp_path: Path, fail: dict[str, str], *extra: str,
           given: tuple[str, ...] = ("table",)) -> tuple[subprocess.CompletedProcess, list[list[str]]]:
    """make deploy ENV=prod IMAGES=<given>=NEW, the others kept as the cluster runs them."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "kubectl"
    fake.write_text(FAKE_KUBECTL.replace("#!PYTHON", "#!" + sys.executable), encoding="utf-8")
    fake.chmod(0o755)
    previous = {svc: {"revision": str(3 + i), "image": image(svc, OLD)}
                for i, svc in enumerate(SERVICES)}
    new = {svc: image(svc, NEW if svc in given else OLD) for svc in SERVICES}
    scenario = tmp_path / "scenario.json"
    scenario.write_text(json.dumps({"previous": previous, "new": new, "fail": fail,
                                    "changed": list(given)}))
    log = tmp_path / "kubectl.log"
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
           "FAKE_KUBECTL_LOG": str(log), "FAKE_KUBECTL_SCENARIO": str(scenario)}
    out = tmp_path / "release"
    images = " ".join(f"{svc}={new[svc]}" for svc in given)
    run = subprocess.run(["make", "-s", "-C", str(ROOT), "deploy", "ENV=prod", f"IMAGES={images}",
                          f"DIST={tmp_path / 'nodist'}", f"RELEASE_OUT={out}",
                          "ROLLOUT_TIMEOUT=5", f"PYTHON={sys.executable}", *extra],
                         capture_output=True, text=True, timeout=120, env=env)
    calls = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    # "-n paiju" dropped: every namespaced call names the prod namespace
    assert all(c[1] == "paiju" for c in calls if c[0] == "-n")
    return run, [c[2:] if c[0] == "-n" else c for c in calls]


def verbs(calls: list[list[str]]) -> list[str]:
    return [" ".join(c[:3]) for c in calls]


def undos(calls: list[list[str]]) -> list[tuple[str, str]]:
    return [(c[2], c[3]) for c in calls if c[:2] == ["rollout", "undo"]]


def test_a_healthy_rollout_records_the_previous_release_and_rolls_nothing_back(
        tmp_path: Path) -> None:
    stale = tmp_path / "release" / "rollback.txt"
    stale.parent.mkdir()
    stale.write_text("a previous run's rollback\n")
    run, calls = deploy(tmp_path, {})
    assert run.returncode == 0, run.stderr
    assert not undos(calls)
    order = verbs(calls)
    # what runs now is read before anything is applied
    assert order.index("get deployment records") < order.index("delete job records-migrate")
    applies = [c[-1] for c in calls if c[:2] == ["apply", "--server-side"]]
    assert [Path(a).name for a in applies] == ["migrate", "app"]
    assert order.index("get job records-migrate") < len(order) - 1 - order[::-1].index(
        "apply --server-side --field-manager=paiju-deploy")
    assert order.index("get deployment table") < order.index("apply --server-side --field-manager=paiju-deploy")
    previous = json.loads((tmp_path / "release" / "previous.json").read_text())
    assert previous["table"] == {"revision": "4", "image": image("table", OLD)}
    release = json.loads((tmp_path / "release" / "release.json").read_text())
    assert release["images"]["table"] == image("table", NEW)
    assert release["images"]["lobby"] == image("lobby", OLD), "the others kept as they run"
    assert not (tmp_path / "release" / "rollback.txt").exists()


@pytest.mark.parametrize(("fail", "why"), [
    ("deadline", 'deployment "table" exceeded its progress deadline'),
    ("crashloop", "pod table-7d9f-abcde of the new image is in CrashLoopBackOff"),
])
def test_a_failed_rollout_is_undone_to_the_recorded_revisions_and_fails_the_job(
        tmp_path: Path, fail: str, why: str) -> None:
    run, calls = deploy(tmp_path, {"table": fail})
    assert run.returncode != 0, "the job fails"
    assert "the rollout to prod (paiju) failed and was rolled back:" in run.stderr
    assert why in run.stderr
    assert f"table    failed image {image('table', NEW)}" in run.stderr
    assert f"table    restored     {image('table', OLD)} (revision 4)" in run.stderr
    assert "lobby    failed image" not in run.stderr, "unchanged services are not named"
    assert "NOT RESTORED" not in run.stderr
    # every Deployment back to the revision it ran before the release
    assert undos(calls) == [(f"deployment/{svc}", f"--to-revision={3 + i}")
                            for i, svc in enumerate(SERVICES)]
    order = verbs(calls)
    first_undo = next(i for i, c in enumerate(calls) if c[:2] == ["rollout", "undo"])
    assert any(c[:2] == ["apply", "--server-side"] for c in calls[:first_undo])
    # the restored rollouts are awaited (a blocking status with a timeout)
    waits = [c for c in calls[first_undo:] if c[:2] == ["rollout", "status"]]
    assert [c[2] for c in waits] == [f"deployment/{svc}" for svc in SERVICES]
    assert all(c[3].startswith("--timeout=") for c in waits)
    assert "rollout status deployment/lobby" in order, "the services before table were checked"
    assert (tmp_path / "release" / "rollback.txt").read_text() in run.stderr + "\n"


def execs(calls: list[list[str]]) -> list[list[str]]:
    return [c[1:] for c in calls if c[:1] == ["exec"]]


def test_a_healthy_release_passes_the_health_check_of_every_running_pod_of_its_image(
        tmp_path: Path) -> None:
    """The default smoke check: each service's running pods of the release's image run the
    image's own health check; the old release's terminating pod and a Pending one are left
    alone. The right to exec is checked before anything changes."""
    run, calls = deploy(tmp_path, {})
    assert run.returncode == 0, run.stderr
    assert execs(calls) == [[f"{svc}-7d9f-abcde", "-c", svc, "--", "python3",
                             "/app/healthcheck.py"] for svc in SERVICES]
    order = verbs(calls)
    assert order.index("auth can-i create") < order.index("delete job records-migrate")
    last_rollout = max(i for i, c in enumerate(calls) if c[:2] == ["rollout", "status"])
    first_exec = next(i for i, c in enumerate(calls) if c[:1] == ["exec"])
    assert last_rollout < first_exec, "after every rollout"


@pytest.mark.parametrize(("fail", "why"), [
    ("unhealthy", "failed  smoke: the health check failed: pod records-7d9f-abcde failed its "
                  "health check (exit 1): healthcheck: records at 127.0.0.1:50060 (grpc) is "
                  "not healthy"),
    ("nopod", "failed  smoke: the health check failed: no running pod of records runs the "
              "release's image"),
])
def test_a_pod_of_the_release_that_fails_its_health_check_rolls_back(
        tmp_path: Path, fail: str, why: str) -> None:
    run, calls = deploy(tmp_path, {"records": fail})
    assert run.returncode != 0
    assert "the rollout to prod (paiju) failed and was rolled back:" in run.stderr
    assert why in run.stderr
    assert len(undos(calls)) == 4
    assert [e[0] for e in execs(calls)] == [f"{svc}-7d9f-abcde"
                                            for svc in ("lobby", "table", "arbiter", "records")
                                            if not (svc == "records" and fail == "nopod")]


def test_without_the_right_to_exec_nothing_is_applied_and_smoke_none_skips_the_check(
        tmp_path: Path) -> None:
    run, calls = deploy(tmp_path, {"exec": "forbidden"})
    assert run.returncode != 0
    assert "deploy/promote.py: the smoke check needs pods/exec in paiju" in run.stderr
    assert "rolled back" not in run.stderr
    assert "SMOKE=none" in run.stderr
    assert not any(c[:1] in (["apply"], ["delete"]) for c in calls), "nothing changed"
    (tmp_path / "none").mkdir()
    run, calls = deploy(tmp_path / "none", {"exec": "forbidden", "records": "unhealthy"},
                        "SMOKE=none")
    assert run.returncode == 0, run.stderr
    assert not execs(calls) and "auth can-i create" not in verbs(calls)
    assert not undos(calls)


def test_a_failed_smoke_check_rolls_back_too(tmp_path: Path) -> None:
    run, calls = deploy(tmp_path, {}, "SMOKE=test \"$$PAIJU_NAMESPACE\" = nope")
    assert run.returncode != 0
    assert "the smoke check failed" in run.stderr
    assert f"table    restored     {image('table', OLD)} (revision 4)" in run.stderr
    assert len(undos(calls)) == 4
    (tmp_path / "ok").mkdir()
    passed, calls = deploy(tmp_path / "ok", {}, "SMOKE=test \"$$PAIJU_NAMESPACE\" = paiju")
    assert passed.returncode == 0, passed.stderr
    assert not undos(calls)


def test_a_release_that_does_not_apply_whole_is_rolled_back(tmp_path: Path) -> None:
    run, calls = deploy(tmp_path, {"apply": "forbidden"})
    assert run.returncode != 0
    assert "failed  apply: kubectl apply of the release failed (exit 1)" in run.stderr
    assert len(undos(calls)) == 4
    assert not any(c[:3] == ["rollout", "status", "deployment/lobby"] and "--watch=false" in c
                   for c in calls), "no rollout is awaited after a failed apply"


def test_a_rollout_that_never_finishes_is_rolled_back_after_the_timeout(tmp_path: Path) -> None:
    run, calls = deploy(tmp_path, {"lobby": "slow"}, "ROLLOUT_TIMEOUT=0")
    assert run.returncode != 0
    assert "lobby: not rolled out in 0 s" in run.stderr
    assert len(undos(calls)) == 4


def test_the_pipeline_reports_the_rollback_and_make_passes_the_checks() -> None:
    library = (ROOT / "deploy" / "jenkins" / "vars" / "paijuService.groovy").read_text()
    promote = library.split("def promote(", 1)[1]
    assert "returnStatus: true" in promote
    assert promote.index("archiveArtifacts") < promote.index("error(")
    assert "rollback.txt" in promote
    makefile = (ROOT / "Makefile").read_text()
    assert "--rollout-timeout $(ROLLOUT_TIMEOUT)" in makefile
    assert "$(if $(SMOKE),--smoke '$(SMOKE)')" in makefile
