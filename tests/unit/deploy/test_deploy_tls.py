"""TLS in the Kubernetes manifests (issue 9), checked against the code that reads it
(services/common/tls.py, services/common/config.py): in prod every service mounts its
cert-manager certificate and turns internal mutual TLS on, the kubelet's probes go where the
service answers them, each certificate stands for its own service and no other (the identity
the callers check), one issuer signs them all; the lobby serves its public certificate. dev and
test stay plaintext. cert-manager's kinds are custom resources: they are checked against the
fields of cert-manager's v1 CRDs (a subset of their schema, unknown fields refused)."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

import pytest

from services.common import tls
from services.common.config import load_config, require_internal_tls
from tests.unit.deploy.test_deploy_k8s import (
    K8S,
    NAMESPACES,
    OVERLAYS,
    ROOT,
    SERVICES,
    container,
    find,
    load_all,
    pod_environment,
    port,
    probes,
    render,
)

pytest.importorskip("yaml", reason="PyYAML is needed to parse deploy/ (PyYAML>=6,<7)")

INTERNAL = ("table", "arbiter", "records")   # the services with a caller check
CA_SECRET = "paiju-internal-ca"              # the CA key pair operators create (README)
PUBLIC_SECRET = "paiju-lobby-public-tls"     # the lobby's public certificate (README)
PUBLIC_CERTIFICATE = K8S / "optional" / "lobby-public-certificate.yaml"
README = ROOT / "deploy" / "README.md"
TLS_KEYS = {"cert_file": "tls.crt", "key_file": "tls.key", "ca_file": "ca.crt"}


@pytest.fixture(scope="module")
def prod() -> list[dict]:
    return render(K8S / "overlays" / "prod")


def certificates(objs: list[dict]) -> dict[str, dict]:
    """The cert-manager Certificates of an overlay by the Secret each one keeps."""
    certs = [o for o in objs if o["kind"] == "Certificate"]
    out = {c["spec"]["secretName"]: c for c in certs}
    assert len(out) == len(certs), "one Secret per Certificate"
    return out


def secret_of_file(objs: list[dict], svc: str, path: str) -> tuple[str, str]:
    """(Secret, key) that a file path of ``svc``'s container comes from: a read-only mount of
    a Secret volume, the file named as the Secret's key, readable by the pod's user."""
    pod = find(objs, "Deployment", svc)["spec"]["template"]["spec"]
    c = container(objs, svc)
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    file = PurePosixPath(path)
    hits = [m for m in c.get("volumeMounts", []) if PurePosixPath(m["mountPath"]) == file.parent]
    assert len(hits) == 1, f"{svc}: {path} is on no mount (or on several)"
    mount = hits[0]
    secret = volumes[mount["name"]].get("secret")
    assert secret, f"{svc}: {path} is not from a Secret"
    assert mount.get("readOnly") is True, f"{svc}: {mount['mountPath']} must be read-only"
    assert "items" not in secret, "files named as the Secret's keys"
    mode = secret.get("defaultMode", 0o644)
    security = pod["securityContext"]
    readable = mode & 0o004 or (mode & 0o040 and security.get("fsGroup") is not None
                                and security.get("fsGroup") == security.get("runAsGroup"))
    assert readable, f"{svc}: user {security['runAsUser']} cannot read {path} (mode {mode:o})"
    return secret["secretName"], file.name


def identities(cert: dict) -> set[str]:
    """The service names a peer presenting this certificate stands for, as the code reads a
    verified certificate (common name, first label of each DNS name)."""
    spec = cert["spec"]
    context = {"x509_common_name": [spec["commonName"].encode()],
               "x509_subject_alternative_name": [n.encode() for n in spec["dnsNames"]]}
    return tls.caller_names(context)


def hours(duration: str) -> float:
    """A Go duration as cert-manager takes it (h, m, s parts)."""
    parts = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?", duration)
    assert parts and duration, duration
    h, m, s = (int(x or 0) for x in parts.groups())
    return h + m / 60 + s / 3600


# ------------------------------------------------------------------ the services' side
def test_internal_services_are_the_code_s(prod) -> None:
    assert set(INTERNAL) == set(tls.CALLERS)


def test_prod_turns_internal_mutual_tls_on_for_every_service(prod) -> None:
    """Each service: PAIJU_TLS__CERT_FILE, KEY_FILE and CA_FILE name the files of its own
    cert-manager Secret, mounted read-only; table, records and arbiter then check their
    callers, open the plaintext probe port (a named container port) and every probe asks it."""
    certs = certificates(prod)
    for svc in SERVICES:
        c = container(prod, svc)
        env = pod_environment(prod, c)
        cfg = load_config(environ=env)
        assert tls.internal_enabled(cfg), f"{svc}: internal TLS is off"
        # the prod start-up check passes, and not by the plaintext opt-out
        assert require_internal_tls(cfg) is False and not cfg.tls.allow_plaintext_in_prod
        for field, key in TLS_KEYS.items():
            secret, file = secret_of_file(prod, svc, getattr(cfg.tls, field))
            assert (secret, file) == (f"paiju-{svc}-tls", key), f"{svc}: tls.{field}"
        assert f"paiju-{svc}-tls" in certs, f"{svc}: no Certificate keeps its Secret"
        if svc in INTERNAL:
            assert tls.interceptors(cfg, svc), f"{svc}: its callers are not checked"
            assert cfg.tls.probe_port == port(c, "probe") > 0
            assert cfg.tls.probe_port not in {p["containerPort"] for p in c["ports"]
                                              if p["name"] != "probe"}
            for kind, probe in probes(c).items():
                assert probe["grpc"]["port"] == cfg.tls.probe_port, f"{svc} {kind}"
        else:   # the lobby checks no caller, so it opens no probe port: none is declared
            assert "PAIJU_TLS__PROBE_PORT" not in env
            assert "probe" not in {p["name"] for p in c["ports"]}


def test_prod_lobby_serves_its_public_certificate_and_is_probed_over_https(prod) -> None:
    c = container(prod, "lobby")
    cfg = load_config(environ=pod_environment(prod, c))
    assert secret_of_file(prod, "lobby", cfg.lobby.public_cert_file) == (PUBLIC_SECRET, "tls.crt")
    assert secret_of_file(prod, "lobby", cfg.lobby.public_key_file) == (PUBLIC_SECRET, "tls.key")
    assert PUBLIC_SECRET not in certificates(prod), "the public certificate is the operator's"
    for kind in ("readinessProbe", "livenessProbe"):
        get = probes(c)[kind]["httpGet"]
        assert get["scheme"] == "HTTPS" and port(c, get["port"]) == cfg.lobby.ws_port, kind


@pytest.mark.parametrize("name", [o for o in OVERLAYS if o != "prod"])
def test_dev_and_test_stay_plaintext(name: str) -> None:
    objs = render(K8S / "overlays" / name)
    assert not [o for o in objs if o["apiVersion"].startswith("cert-manager.io/")]
    for svc in SERVICES:
        c = container(objs, svc)
        env = pod_environment(objs, c)
        assert not [k for k in env if k.startswith("PAIJU_TLS__")], svc
        cfg = load_config(environ=env)
        assert not tls.internal_enabled(cfg) and not cfg.lobby.public_cert_file, svc
        for probe in probes(c).values():
            assert probe.get("httpGet", {}).get("scheme", "HTTP") == "HTTP", svc


def test_prod_secret_volumes_come_from_certificates_or_the_operators(prod) -> None:
    """Every Secret a prod pod mounts is kept by a Certificate of the overlay or is one the
    README tells operators to create; none is in git."""
    certs = certificates(prod)
    readme = README.read_text(encoding="utf-8")
    assert not [o for o in prod if o["kind"] == "Secret"]
    for svc in SERVICES:
        pod = find(prod, "Deployment", svc)["spec"]["template"]["spec"]
        for volume in pod.get("volumes", []):
            if "secret" in volume:
                name = volume["secret"]["secretName"]
                assert name in certs or (name == PUBLIC_SECRET and name in readme), name


# ------------------------------------------------------------------ the certificates
def test_each_certificate_names_its_service_and_the_services_that_reach_it(prod) -> None:
    """commonName and a DNS name are the bare service name (the callers verify the peer as
    that name, whatever address they dial); the Services selecting its pods on a gRPC port are
    there too, short and qualified, in the overlay's namespace; usable as server and client."""
    namespace = NAMESPACES["prod"]
    certs = certificates(prod)
    assert set(certs) == {f"paiju-{svc}-tls" for svc in SERVICES}
    for svc in SERVICES:
        cert = certs[f"paiju-{svc}-tls"]
        spec = cert["spec"]
        assert cert["metadata"]["namespace"] == namespace
        assert spec["commonName"] == svc and spec["dnsNames"][0] == svc
        services = [o["metadata"]["name"] for o in prod if o["kind"] == "Service"
                    and o["spec"]["selector"] == {"app.kubernetes.io/name": svc}
                    and "grpc" in {p["name"] for p in o["spec"]["ports"]}]
        assert svc in services
        want = {f"{s}{suffix}" for s in services
                for suffix in ("", f".{namespace}.svc", f".{namespace}.svc.cluster.local")}
        assert set(spec["dnsNames"]) == want, svc
        usages = set(spec["usages"])
        assert {"server auth", "client auth"} <= usages, svc
        assert usages <= {"digital signature", "key encipherment", "server auth",
                          "client auth"}, svc
        assert not spec.get("isCA"), svc
        assert hours(spec["duration"]) > hours(spec["renewBefore"]) >= 24 * 7, \
            f"{svc}: a week at least between renewal and expiry, for a rollout to pick it up"
        assert spec["privateKey"]["rotationPolicy"] == "Always"


def test_certificate_identities_are_exactly_who_may_call_whom(prod) -> None:
    """What the code reads from each certificate: its own service's name and no other, so
    each service's callers are exactly those of tls.CALLERS (a table certificate must not
    pass for a lobby)."""
    certs = certificates(prod)
    names = {svc: identities(certs[f"paiju-{svc}-tls"]) for svc in SERVICES}
    for svc in SERVICES:
        assert names[svc] & set(SERVICES) == {svc}, (svc, names[svc])
    for server, callers in tls.CALLERS.items():
        accepted = {svc for svc in SERVICES if names[svc] & callers}
        assert accepted == set(callers), server


def test_one_issuer_named_once_signs_every_internal_certificate(prod) -> None:
    """Every internal Certificate has the same issuerRef, given by one patch file; it is the
    CA Issuer of the overlay whose key pair is the Secret the README says to create."""
    refs = [c["spec"]["issuerRef"] for c in certificates(prod).values()]
    assert refs and all(ref == refs[0] for ref in refs)
    ref = refs[0]
    assert ref.get("group", "cert-manager.io") == "cert-manager.io"
    assert ref.get("kind", "Issuer") == "Issuer"
    issuer = find(prod, "Issuer", ref["name"])
    assert issuer["spec"] == {"ca": {"secretName": CA_SECRET}}
    readme = README.read_text(encoding="utf-8")
    assert f"secret tls {CA_SECRET}" in readme, "document how operators create the CA Secret"
    prod_dir = K8S / "overlays" / "prod"
    naming = [p.name for p in prod_dir.glob("*.yaml")
              if any("issuerRef" in doc.get("spec", {}) for doc in load_all(p))]
    assert naming == ["tls-issuer.yaml"], naming


# A subset of cert-manager's v1 CRD schemas (deploy/crds/cert-manager.io_*.yaml of
# cert-manager): the fields these manifests may use, with their types and enums; any other
# field is refused, as kubectl would refuse a misspelt one.
USAGES = ["signing", "digital signature", "content commitment", "key encipherment",
          "key agreement", "data encipherment", "cert sign", "crl sign", "encipher only",
          "decipher only", "any", "server auth", "client auth", "code signing",
          "email protection", "s/mime", "ipsec end system", "ipsec tunnel", "ipsec user",
          "timestamping", "ocsp signing", "microsoft sgc", "netscape sgc"]
STRINGS = {"type": "array", "items": {"type": "string"}}
METADATA = {"type": "object", "required": ["name"],
            "properties": {"name": {"type": "string"}, "namespace": {"type": "string"},
                           "labels": {"type": "object",
                                      "additionalProperties": {"type": "string"}}},
            "additionalProperties": False}
ISSUER_REF = {"type": "object", "required": ["name"], "additionalProperties": False,
              "properties": {"group": {"type": "string"}, "kind": {"type": "string"},
                             "name": {"type": "string"}}}
CERTIFICATE_SCHEMA = {
    "type": "object", "required": ["apiVersion", "kind", "metadata", "spec"],
    "additionalProperties": False,
    "properties": {
        "apiVersion": {"const": "cert-manager.io/v1"}, "kind": {"const": "Certificate"},
        "metadata": METADATA,
        "spec": {
            "type": "object", "required": ["issuerRef", "secretName"],
            "additionalProperties": False,
            "properties": {
                "secretName": {"type": "string"}, "commonName": {"type": "string",
                                                                 "maxLength": 64},
                "dnsNames": STRINGS, "ipAddresses": STRINGS, "uris": STRINGS,
                "duration": {"type": "string"}, "renewBefore": {"type": "string"},
                "isCA": {"type": "boolean"}, "issuerRef": ISSUER_REF,
                "usages": {"type": "array", "items": {"enum": USAGES}},
                "privateKey": {
                    "type": "object", "additionalProperties": False,
                    "properties": {
                        "algorithm": {"enum": ["RSA", "ECDSA", "Ed25519"]},
                        "encoding": {"enum": ["PKCS1", "PKCS8"]},
                        "rotationPolicy": {"enum": ["Never", "Always"]},
                        "size": {"type": "integer"}}},
                "secretTemplate": {"type": "object"},
            }},
    },
}
ISSUER_SCHEMA = {
    "type": "object", "required": ["apiVersion", "kind", "metadata", "spec"],
    "additionalProperties": False,
    "properties": {
        "apiVersion": {"const": "cert-manager.io/v1"},
        "kind": {"enum": ["Issuer", "ClusterIssuer"]},
        "metadata": METADATA,
        "spec": {"type": "object", "additionalProperties": False,
                 "properties": {"ca": {"type": "object", "required": ["secretName"],
                                       "additionalProperties": False,
                                       "properties": {"secretName": {"type": "string"}}},
                                "selfSigned": {"type": "object"}}},
    },
}


def test_cert_manager_objects_match_their_schema() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    objs = render(K8S / "overlays" / "prod") + load_all(PUBLIC_CERTIFICATE)
    custom = [o for o in objs if o["apiVersion"].startswith("cert-manager.io/")]
    assert {o["kind"] for o in custom} == {"Issuer", "Certificate"}
    for obj in custom:
        schema = CERTIFICATE_SCHEMA if obj["kind"] == "Certificate" else ISSUER_SCHEMA
        jsonschema.validate(obj, schema)
    bad = {**custom[-1], "spec": {**custom[-1]["spec"], "dnsName": ["x"]}}
    with pytest.raises(jsonschema.ValidationError):   # a misspelt field is refused
        jsonschema.validate(bad, CERTIFICATE_SCHEMA)


def test_the_optional_public_certificate_feeds_the_lobby_and_is_opt_in(prod) -> None:
    (cert,) = load_all(PUBLIC_CERTIFICATE)
    for path in K8S.rglob("kustomization.yaml"):
        assert PUBLIC_CERTIFICATE.name not in path.read_text(encoding="utf-8"), path
    spec = cert["spec"]
    cfg = load_config(environ=pod_environment(prod, container(prod, "lobby")))
    assert secret_of_file(prod, "lobby", cfg.lobby.public_cert_file)[0] == spec["secretName"]
    assert "server auth" in spec["usages"] and "client auth" not in spec["usages"]
    assert spec["issuerRef"]["kind"] == "ClusterIssuer", "a public CA, not the internal one"
    assert spec["issuerRef"]["name"] != CA_SECRET


# ------------------------------------------------------------------ the README
def test_the_readme_explains_tls(prod) -> None:
    readme = README.read_text(encoding="utf-8")
    section = readme.split("### TLS", 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
    flat = " ".join(section.split())
    for server, callers in tls.CALLERS.items():
        for caller in callers:
            assert f"`{caller}` -> `{server}`" in flat, (caller, server)
    probe_port = load_config(environ=pod_environment(prod, container(prod, "table"))).tls.probe_port
    for needle in ("cert-manager", CA_SECRET, PUBLIC_SECRET, "PAIJU_TLS__CERT_FILE",
                   "PAIJU_TLS__PROBE_PORT", str(probe_port), "rollout", "ingress",
                   "PAIJU_LOBBY__TRUSTED_PROXIES", "ssl_target_name_override", "/healthz",
                   "HTTPS", "compose", "lobby-public-certificate.yaml"):
        assert needle in flat, needle
