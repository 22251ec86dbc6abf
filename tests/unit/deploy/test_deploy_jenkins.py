"""The Jenkins jobs and the make targets they call: each job tests everything its image ships,
fails on a missing report, builds only when an input changed, pushes only from main, records
the digest and promotes by digest (no Jenkins or Docker here: the files are parsed and the
make recipes dry-run; the Groovy parse check is in test_deploy_lint.py)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SERVICES = ("lobby", "table", "arbiter", "records")
LIBRARY = ROOT / "deploy" / "jenkins" / "vars" / "paijuService.groovy"


def jenkinsfile(svc: str) -> str:
    return (ROOT / "services" / svc / "Jenkinsfile").read_text(encoding="utf-8")


def code_only(text: str) -> str:
    """Groovy without // comments and string contents (for brace counting and searches)."""
    text = re.sub(r"'''.*?'''", "''", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r"'[^'\n]*'|\"[^\"\n]*\"", "''", text)


def library() -> str:
    return LIBRARY.read_text(encoding="utf-8")


def make_dry_run(*args: str, cwd: Path = ROOT) -> list[str]:
    out = subprocess.run(["make", "-n", "-C", str(cwd), "--no-print-directory", *args],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    return out.splitlines()


# ------------------------------------------------------------------ the Jenkinsfiles
@pytest.mark.parametrize("svc", SERVICES)
def test_jenkinsfile_calls_the_trusted_library_for_its_own_service(svc: str) -> None:
    """Nothing but the library step: the pipeline comes from the global library (main), not
    from a file of the branch being built (no load(), no stages of its own)."""
    text = jenkinsfile(svc)
    code = [line for line in code_only(text).splitlines() if line.strip()]
    assert code == ["@Library('') _", "paijuService(service: '')"], code
    assert "@Library('paiju-pipeline') _" in text
    assert re.findall(r"paijuService\(service: '(\w+)'\)", text) == [svc]
    assert "load(" not in text
    for other in set(SERVICES) - {svc}:
        assert not re.search(rf"\b{other}\b", text), f"{svc}'s Jenkinsfile mentions {other}"


def test_the_library_is_a_global_step_and_names_no_service() -> None:
    text = library()
    code = code_only(text)
    assert code.count("{") == code.count("}")
    assert re.search(r"^def call\(Map args\)", text, re.M)
    assert not re.search(r"\b(lobby|table|arbiter|records)\b", code), "no service is special"
    assert not (ROOT / "deploy" / "jenkins" / "pipeline.groovy").exists()


def test_stages_in_order_each_through_make() -> None:
    text = library()
    build = text.split("boolean stages(String service) {", 1)[1]
    assert re.findall(r"stage\('([^']+)'\)", build) == [
        "Changes", "Build", "Test", "Image", "Push", "Archive", "Promote"]
    call = text.split("def call(Map args) {", 1)[1].split("\n}\n", 1)[0]
    assert re.findall(r"stage\('([^']+)'\)", call) == ["Promote prod"]
    assert re.findall(r'make "(\w+)-\$SERVICE"', text) == [
        "changed", "build", "test", "image", "push"]
    assert '"SERVICE=${service}"' in text
    assert 'make deploy ENV="$DEPLOY_ENV" IMAGES="$SERVICE=$(cat dist/$SERVICE/image.txt)"' in text


def test_a_missing_junit_report_fails_the_build() -> None:
    text = library()
    assert "PYTEST_ADDOPTS=--junitxml=reports/junit-${service}.xml" in text
    (call,) = re.findall(r"junit [^\n]+", text)
    assert "allowEmptyResults: false" in call and "reports/junit-${service}.xml" in call
    assert "allowEmptyResults: true" not in text
    test_stage = text.split("stage('Test')", 1)[1].split("stage('Image')", 1)[0]
    assert test_stage.index("try") < test_stage.index("finally") < test_stage.index("junit")


def test_nothing_is_built_when_no_input_changed() -> None:
    text = library()
    changes = text.split("stage('Changes')", 1)[1].split("stage('Build')", 1)[0]
    assert "GIT_PREVIOUS_SUCCESSFUL_COMMIT" in changes and "CHANGE_TARGET" in changes
    assert "returnStatus: true" in changes and "NOT_BUILT" in changes
    assert re.search(r"if \(!changed\) \{\s+return false\s+\}", changes)


def test_push_and_promote_only_from_main_with_the_credentials_inside() -> None:
    """The registry credential and the kubeconfigs are bound only after the main-branch
    check: no other branch and no pull request reaches them."""
    text = library()
    assert re.search(r"env\.BRANCH_NAME == 'main' && !env\.CHANGE_ID", text)
    gate = text.index("if (!onMain())")
    after = text[gate:]
    assert re.match(r"if \(!onMain\(\)\) \{\s+echo [^\n]+\n\s+return false\s+\}", after)
    for needle in ("credentialsId: 'paiju-registry'", "stage('Push')", "stage('Promote')",
                   "stage('Archive')"):
        assert text.index(needle) > gate, needle
    assert text.count("withCredentials") == 2
    promote = text.split("def promote(", 1)[1]
    assert 'credentialsId: "paiju-kubeconfig-${environment}"' in promote
    stage = text.split("stage('Promote')", 1)[1].split("\n    }\n", 1)[0]
    assert "'test')" in stage and "'prod')" not in stage


def test_the_prod_approval_waits_outside_any_agent_and_deploys_hold_one_lock() -> None:
    """test, then the approval with no agent held and a long timeout of its own, then prod on
    a fresh agent with the digest test got (never rebuilt); every deploy inside the lock."""
    text = library()
    call = text.split("def call(Map args) {", 1)[1].split("\n}\n", 1)[0]
    first_node_end = call.index("if (!promoted)")
    approval = call.index("input message")
    assert first_node_end < approval < call.index("node('paiju-build')", approval)
    before = call[first_node_end:approval]
    assert "timeout(time: 7, unit: 'DAYS')" in before and "node(" not in before
    prod = call[approval:]
    assert "unarchive" in prod and "image.txt" in prod and "promote(service, 'prod')" in prod
    assert "make \"image-" not in prod and "make \"push-" not in prod
    promote = text.split("def promote(", 1)[1]
    assert promote.index("lock('paiju-deploy')") < promote.index("make deploy")


def test_registry_password_stays_out_of_groovy_strings() -> None:
    text = library()
    (shell,) = re.findall(r"sh '''(.*?)'''", text, re.S)
    assert "--password-stdin" in shell and '"$REGISTRY_PASSWORD"' in shell
    assert shell.index("skopeo login") < shell.index('make "push-')
    assert "skopeo logout" in shell and "docker" not in text
    groovy = re.sub(r"'''.*?'''", "", text, flags=re.S)
    assert groovy.count("REGISTRY_PASSWORD") == 1, "only as the credential's variable name"


# ------------------------------------------------------------------ what each job tests
def test_each_job_runs_every_test_of_what_its_image_ships(inputs) -> None:
    """table and arbiter ship the engines: their jobs run the engines' tests (those that
    import games/; the tests of scripts/ tools do not); every job runs the tests named after
    its service and the image's own checks."""
    tests = {svc: set(inputs.tests(svc)) for svc in SERVICES}
    engine_tests = {p.relative_to(ROOT).as_posix()
                    for p in (ROOT / "tests" / "unit" / "games").rglob("test_*.py")
                    if any(m.split(".")[0] == "games" for m in inputs.imports_of(p))}
    assert len(engine_tests) >= 10, "tests/unit/games"
    for svc in ("table", "arbiter"):
        assert engine_tests <= tests[svc], sorted(engine_tests - tests[svc])[:5]
    for svc in SERVICES:
        own = {p.relative_to(ROOT).as_posix()
               for p in (ROOT / "tests").rglob(f"test_{svc}*.py")
               if "def test_" in p.read_text(encoding="utf-8")}
        assert own <= tests[svc], (svc, sorted(own - tests[svc])[:5])
        assert "tests/unit/deploy/test_deploy_build.py" in tests[svc]   # the image itself


def test_make_test_svc_runs_the_selected_files() -> None:
    lines = make_dry_run("test-table", "STAMP=/dev/null", "PROTO_STAMP=/dev/null")
    assert any("deploy/inputs.py tests table" in line for line in lines)
    assert any("-m pytest -q $(cat .venv/tests-table.txt)" in line for line in lines)


# ------------------------------------------------------------------ changes
@pytest.mark.parametrize(("path", "rebuilt"), [
    ("services/lobby/hub.py", {"lobby"}),
    ("services/table/server.py", {"table"}),
    # lobby and records check game names with games.registry, which imports every engine
    ("games/mahjong/flow.py", set(SERVICES)),
    ("services/common/config.py", set(SERVICES)),
    ("requirements/runtime.txt", set(SERVICES)),
    ("deploy/docker/Dockerfile", set(SERVICES)),
    ("deploy/docker/base-image.txt", set(SERVICES)),
    ("protos/paiju/v1/lobby.proto", set(SERVICES)),
    ("config/prod.toml", set(SERVICES)),
    ("deploy/jenkins/vars/paijuService.groovy", set(SERVICES)),
    ("services/records/migrations/versions/0001_initial.py", {"records"}),
    ("services/records/Jenkinsfile", {"records"}),
    ("clients/web/app.js", {"lobby"}),
    ("docs/services.md", set()),
    ("deploy/k8s/base/table.yaml", set()),
    ("bench/bench_system.py", set()),
])
def test_a_change_rebuilds_the_images_it_is_an_input_of(inputs, path: str, rebuilt: set) -> None:
    assert {svc for svc in SERVICES if inputs.touches(svc, [path])} == rebuilt


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_make_changed_against_head_builds_nothing_and_without_base_builds() -> None:
    head = subprocess.run(["make", "-s", "-C", str(ROOT), "changed-table", "BASE=HEAD"],
                          capture_output=True, text=True, timeout=60)
    assert head.returncode != 0 and "nothing to build" in head.stderr
    first = subprocess.run(["make", "-s", "-C", str(ROOT), "changed-table", "BASE="],
                           capture_output=True, text=True, timeout=60)
    assert first.returncode == 0 and "first build" in first.stderr
    unknown = subprocess.run(["make", "-s", "-C", str(ROOT), "changed-table", "BASE=0" * 1 + "abc"],
                             capture_output=True, text=True, timeout=60)
    assert unknown.returncode == 0, "an unknown base builds"


# ------------------------------------------------------------------ make image / push
@pytest.mark.skipif(shutil.which("make") is None, reason="make not installed")
@pytest.mark.parametrize("svc", SERVICES)
def test_make_builds_with_buildah_and_pushes_each_tag_once_by_digest(svc: str) -> None:
    lines = make_dry_run(f"image-{svc}", "IMAGE_TAG=t")
    assert any(f"deploy/images.py build --tag t {svc}" in line for line in lines), lines
    assert any(f"deploy/images.py sbom --tag t {svc}" in line for line in lines), lines
    push = " ".join(make_dry_run(f"push-{svc}", "IMAGE_REGISTRY=r", "IMAGE_TAG=t"))
    assert f"deploy/images.py push {svc} --registry r --tag t --dist dist" in push
    refused = subprocess.run(["make", "-s", "-C", str(ROOT), f"push-{svc}"],
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode != 0 and "IMAGE_REGISTRY=" in refused.stderr


@pytest.mark.skipif(shutil.which("make") is None or shutil.which("git") is None,
                    reason="make or git not installed")
def test_image_tag_defaults_to_the_12_character_commit() -> None:
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short=12", "HEAD"],
                            capture_output=True, text=True, timeout=30, check=True).stdout.strip()
    push = "\n".join(make_dry_run("push-table", "IMAGE_REGISTRY=registry.example.com/paiju"))
    assert f"--registry registry.example.com/paiju --tag {commit}" in push


