"""The Dockerfile, the proposed .dockerignore, the container health check and the Jenkinsfile
of each service (no Docker engine or Jenkins here: the files are parsed and cross-checked)."""

from __future__ import annotations

import fnmatch
import importlib.util
import json
import re
import shlex
import shutil
import socket
import subprocess
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


def final_stage() -> list[tuple[str, str]]:
    steps = instructions()
    start = max(i for i, (word, _) in enumerate(steps) if word == "FROM")
    return steps[start:]


# ------------------------------------------------------------------ Dockerfile
def test_cmd_runs_the_selected_service_as_pid_1() -> None:
    (cmd,) = [args for word, args in final_stage() if word == "CMD"]
    argv = json.loads(cmd)
    assert argv[:2] == ["sh", "-c"]
    assert shlex.split(argv[2]) == ["exec", "python", "-m", "services.$SERVICE"]


def test_service_is_a_build_argument_checked_against_the_makefile() -> None:
    stage = final_stage()
    words = [w for w, _ in stage]
    assert ("ARG", "SERVICE") in stage and ("ENV", "SERVICE=${SERVICE}") in stage
    assert words.index("ARG") < words.index("CMD")
    check = next(args for w, args in stage if w == "RUN" and "$SERVICE" in args)
    allowed = re.search(r"case \"\$SERVICE\" in\s+([\w|]+)\)", check).group(1).split("|")
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert sorted(allowed) == sorted(re.search(r"^SERVICES := (.+)$", makefile, re.M)
                                     .group(1).split())


def test_image_is_python_311_slim_non_root_and_generates_protos() -> None:
    steps = instructions()
    assert all(args.split()[0] == "python:3.11-slim" for w, args in steps if w == "FROM")
    (user,) = [args for w, args in final_stage() if w == "USER"]
    assert user.split(":")[0] not in ("0", "root")
    runs = " ".join(args for w, args in steps if w == "RUN")
    assert "scripts/gen_protos.sh" in runs and "pip install" in runs
    exposed = {int(p) for w, args in final_stage() if w == "EXPOSE" for p in args.split()}
    assert exposed == ({PROD[s][k] for s in SERVICES for k in ("port", "metrics_port")}
                       | {PROD["lobby"]["ws_port"]})


def test_copied_sources_exist_and_are_not_in_the_proposed_dockerignore() -> None:
    patterns = [line.strip() for line in
                (DOCKER / "dockerignore.txt").read_text(encoding="utf-8").splitlines()
                if line.strip() and not line.startswith("#")]
    assert {".git", ".venv", "var"} <= set(patterns)

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
    assert "services" in sources and "config" in sources
    for source in sources:
        assert (ROOT / source).exists(), source
        assert not ignored(source), f"{source} would be left out of the build context"


def parents(path: str) -> Iterator[str]:
    parts = path.split("/")
    for i in range(1, len(parts)):
        yield "/".join(parts[:i])


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


# ------------------------------------------------------------------ Jenkins and make
PIPELINE = ROOT / "deploy" / "jenkins" / "pipeline.groovy"


def jenkinsfile(svc: str) -> str:
    return (ROOT / "services" / svc / "Jenkinsfile").read_text(encoding="utf-8")


def code_only(text: str) -> str:
    """Groovy without // comments and string contents (for brace counting)."""
    text = re.sub(r"'''.*?'''", "''", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r"'[^'\n]*'|\"[^\"\n]*\"", "''", text)


def make_dry_run(*args: str) -> list[str]:
    """The commands ``make -n`` would run from the repository root."""
    out = subprocess.run(["make", "-n", "-C", str(ROOT), "--no-print-directory", *args],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    return out.splitlines()


@pytest.mark.parametrize("svc", SERVICES)
def test_jenkinsfile_runs_the_shared_pipeline_for_its_own_service(svc: str) -> None:
    text = jenkinsfile(svc)
    code = code_only(text)
    assert code.count("{") == code.count("}") and code.lstrip().startswith("node(")
    assert "checkout scm" in code
    calls = re.findall(r"load\('([^']+)'\)\.run\('(\w+)'\)", text)
    assert calls == [(PIPELINE.relative_to(ROOT).as_posix(), svc)]
    for other in set(SERVICES) - {svc}:
        assert not re.search(rf"\b{other}\b", text), f"{svc}'s Jenkinsfile mentions {other}"


def test_shared_pipeline_builds_tests_and_ships_through_make() -> None:
    text = PIPELINE.read_text(encoding="utf-8")
    code = code_only(text)
    assert code.count("{") == code.count("}") and code.rstrip().endswith("return this")
    assert re.search(r"^def run\(String service\)", text, re.M)
    stages = re.findall(r"stage\('([^']+)'\)", text)
    assert stages == ["Build", "Test", "Image", "Archive"]
    targets = re.findall(r'make "(\w+)-\$SERVICE"', text)
    assert targets == ["build", "test", "image", "push"]
    assert '"SERVICE=${service}"' in text, "the make targets read the job's service"
    assert "archiveArtifacts artifacts: \"dist/${service}/**\"" in text
    assert not re.search(r"\b(lobby|table|arbiter|records)\b", code), "no service is special"


def test_shared_pipeline_keeps_the_registry_password_out_of_groovy_strings() -> None:
    text = PIPELINE.read_text(encoding="utf-8")
    (shell,) = re.findall(r"sh '''(.*?)'''", text, re.S)
    assert "credentialsId: 'paiju-registry'" in text
    assert "--password-stdin" in shell and '"$REGISTRY_PASSWORD"' in shell
    assert shell.index("docker login") < shell.index("make \"push-")
    assert "docker logout" in shell, "the login does not outlive the push"
    groovy = re.sub(r"'''.*?'''", "", text, flags=re.S)
    assert groovy.count("REGISTRY_PASSWORD") == 1, "only as the credential's variable name"


@pytest.mark.skipif(shutil.which("make") is None, reason="make not installed")
@pytest.mark.parametrize("svc", SERVICES)
def test_make_builds_and_pushes_each_service_image(svc: str) -> None:
    image = f"r/paiju-{svc}:t"
    assert make_dry_run(f"image-{svc}", "IMAGE_REGISTRY=r", "IMAGE_TAG=t") == [
        f"docker build -f deploy/docker/Dockerfile --build-arg SERVICE={svc} -t {image} ."]
    assert make_dry_run(f"push-{svc}", "IMAGE_REGISTRY=r", "IMAGE_TAG=t") == [
        f"docker push {image}"]


@pytest.mark.skipif(shutil.which("make") is None or shutil.which("git") is None,
                    reason="make or git not installed")
def test_image_tag_defaults_to_the_12_character_commit() -> None:
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short=12", "HEAD"],
                            capture_output=True, text=True, timeout=30, check=True).stdout.strip()
    (line,) = make_dry_run("push-table", "IMAGE_REGISTRY=registry.example.com/paiju")
    assert line == f"docker push registry.example.com/paiju/paiju-table:{commit}"
