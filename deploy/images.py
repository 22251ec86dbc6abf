"""Container images of Paiju, built with buildah on bases the project makes itself.

    python deploy/images.py tools                      # install what is missing (apt, as root)
    python deploy/images.py base [--pin] [--allow-drift]
    python deploy/images.py build [TARGET ...] [--no-cache] [--tag TAG]
    python deploy/images.py sbom [TARGET ...] [--tag TAG]
    python deploy/images.py push TARGET --registry HOST[:PORT] [--tag TAG] [--insecure]

The commit (label org.opencontainers.image.revision) and SOURCE_DATE_EPOCH (every file's and
the image's date) come from git, or from IMAGE_REVISION and SOURCE_DATE_EPOCH when set.

TARGETs: lobby, table, arbiter, records (deploy/docker/Dockerfile, one per service) and nats
(the same file, --target nats); none named: all five. The Makefile's images, image-<svc>,
push-<svc> and base-image targets call this; the Jenkins library does too.

Bases. Two Debian bookworm root file systems made by mmdebstrap with a fixed
SOURCE_DATE_EPOCH: "base", what every image runs on (only Python 3.11, CA certificates, time
zones and the libraries they need: no shell, no apt), and "builder", the build
stages' (Debian's essential set with pip). Each is pinned twice in the repository: its package
list (deploy/docker/base/<kind>-packages.txt, name=version a line) and its image digest
(deploy/docker/base-image.txt, with the Dockerfile's ARG defaults the same). `base` rebuilds
both: when Debian's archive has moved on (the package list differs) it stops and says what
changed, and `--pin` writes the new lists and digests for review; `--allow-drift` (the image
test) builds on the moved archive with a warning and changes no pin. BASE_IMAGE=<ref@digest>
(e.g. docker.io/library/python:3.11-slim@sha256:...) builds every stage on that public image
instead (deploy/README.md).

podman and buildah run with deploy/docker/podman/*.conf (runc, cgroupfs, no default ulimits;
the overlay storage driver where the kernel mounts overlayfs, else vfs; a store of the
project's own under /var/lib/containers), which a sandboxed host needs and a normal one
tolerates; CONTAINERS_CONF / CONTAINERS_STORAGE_CONF from the environment win. Standard
library only.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCKER = ROOT / "deploy" / "docker"
PIN_FILE = DOCKER / "base-image.txt"
DOCKERFILE = DOCKER / "Dockerfile"
DIST = ROOT / "dist"
WORK = ROOT / "build" / "images"
SERVICES = ("lobby", "table", "arbiter", "records")
TARGETS = SERVICES + ("nats",)
KINDS = ("base", "builder")
# The ports each image exposes: its own gRPC and /metrics ports (config/prod.toml), the
# lobby's WebSocket front door; NATS: clients, routes, monitoring.
PORTS = {"lobby": (50051, 9101, 8080), "table": (50052, 9102), "arbiter": (50053, 9103),
         "records": (50054, 9104), "nats": (4222, 6222, 8222)}
SUITE = "bookworm"
# dpkg's filters while the runtime base is unpacked: documentation (but the copyright files),
# manuals, translations, iconv modules and the test suite of Python are never used. (The
# builder keeps them: its packages' scripts run, and it is never shipped.)
EXCLUDES = ("/usr/share/doc/*", "/usr/share/man/*", "/usr/share/info/*", "/usr/share/locale/*",
            "/usr/share/lintian/*", "/usr/lib/x86_64-linux-gnu/gconv/*",
            "/usr/lib/python3.11/test/*", "/usr/lib/python3.11/pydoc_data/*")
INCLUDES = ("/usr/share/doc/*/copyright",)
# What each base is made of (their dependencies come with them).
BASE_PACKAGES = {
    # libstdc++6: grpcio's and greenlet's extension modules link it
    "base": ("python3", "libstdc++6", "ca-certificates", "tzdata", "netbase", "base-files"),
    "builder": ("python3", "python3-pip", "libstdc++6", "ca-certificates"),
}
TOOLS = {"buildah": "buildah", "podman": "podman", "mmdebstrap": "mmdebstrap",
         "skopeo": "skopeo", "runc": "runc", "dpkg-deb": "dpkg"}


class Failure(SystemExit):
    """A clear error for the person at the terminal (exit 1), never a traceback."""

    def __init__(self, message: str) -> None:
        super().__init__(f"images: {message}")


# ------------------------------------------------------------------ running things
@functools.cache
def overlay_works() -> bool:
    """Whether this kernel lets us mount overlayfs (then the overlay driver, else vfs)."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    with tempfile.TemporaryDirectory() as tmp:
        dirs = [Path(tmp, d) for d in ("lower", "upper", "work", "merged")]
        for d in dirs:
            d.mkdir()
        lower, upper, work, merged = dirs
        done = subprocess.run(["mount", "-t", "overlay", "overlay", "-o",
                               f"lowerdir={lower},upperdir={upper},workdir={work}", str(merged)],
                              capture_output=True)
        if done.returncode != 0:
            return False
        subprocess.run(["umount", str(merged)], capture_output=True)
        return True


def container_env() -> dict[str, str]:
    """The environment of every podman, buildah and skopeo call (and of the tests')."""
    env = dict(os.environ)
    env.setdefault("CONTAINERS_CONF", str(DOCKER / "podman" / "containers.conf"))
    driver = "overlay" if overlay_works() else "vfs"
    env.setdefault("CONTAINERS_STORAGE_CONF", str(DOCKER / "podman" / f"storage-{driver}.conf"))
    return env


def run(cmd: list[str], *, capture: bool = False, what: str = "",
        env: dict[str, str] | None = None, check: bool = True) -> subprocess.CompletedProcess:
    try:
        done = subprocess.run(cmd, env=env or container_env(), text=True,
                              capture_output=capture)
    except FileNotFoundError as exc:
        raise Failure(f"{cmd[0]} is not installed: run `make image-tools` (or "
                      f"`python deploy/images.py tools`) as root") from exc
    if check and done.returncode != 0:
        detail = (done.stderr or "").strip().splitlines()[-5:] if capture else []
        raise Failure(f"{what or cmd[0]} failed (exit {done.returncode})"
                      + ("".join(f"\n  {line}" for line in detail)))
    return done


def tool_path(name: str) -> str | None:
    found = shutil.which(name)
    if found is None and name == "runc" and Path("/usr/sbin/runc").exists():
        found = "/usr/sbin/runc"
    return found


def ensure_tools(names: tuple[str, ...] = tuple(TOOLS)) -> None:
    """Install the missing tools from Debian (as root), or say what is missing."""
    missing = [n for n in names if tool_path(n) is None]
    if not missing:
        return
    packages = sorted({TOOLS[n] for n in missing})
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise Failure(f"missing {', '.join(missing)}; install the Debian packages "
                      f"{' '.join(packages)} (as root: apt-get install {' '.join(packages)})")
    print(f"images: installing {' '.join(packages)} from Debian", file=sys.stderr)
    quiet = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in (["apt-get", "update", "-qq"],
                ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *packages]):
        run(cmd, capture=True, env=quiet, what=" ".join(cmd[:2]))
    still = [n for n in names if tool_path(n) is None]
    if still:
        raise Failure(f"still missing after apt-get install: {', '.join(still)}")


# ------------------------------------------------------------------ pins
def read_pins() -> dict[str, str]:
    """deploy/docker/base-image.txt: ``epoch <seconds>``, ``base <ref@digest>``,
    ``builder <ref@digest>``."""
    pins = {}
    for line in PIN_FILE.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, _, value = line.partition(" ")
            pins[key] = value.strip()
    for key in ("epoch", *KINDS):
        if key not in pins:
            raise Failure(f"{shown(PIN_FILE)} has no '{key}' line")
    return pins


def shown(path: Path) -> str:
    """A path as the person at the terminal knows it (relative to the repository)."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def write_pins(pins: dict[str, str]) -> None:
    lines = PIN_FILE.read_text(encoding="utf-8").splitlines()
    out = [line for line in lines if not line.strip() or line.lstrip().startswith("#")]
    while out and not out[-1].strip():
        out.pop()
    out += [f"{key} {pins[key]}" for key in ("epoch", *KINDS)]
    PIN_FILE.write_text("\n".join(out) + "\n", encoding="utf-8")
    text = DOCKERFILE.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(text):
        for kind, arg in (("base", "BASE_IMAGE"), ("builder", "BUILDER_IMAGE")):
            if line.startswith(f"ARG {arg}="):
                text[i] = f"ARG {arg}={pins[kind]}"
    DOCKERFILE.write_text("\n".join(text) + "\n", encoding="utf-8")


def package_file(kind: str) -> Path:
    return DOCKER / "base" / f"{kind}-packages.txt"


# ------------------------------------------------------------------ the bases
def rootfs(kind: str, epoch: str, out: Path) -> None:
    """mmdebstrap: the root file system of one base as a tar (bit for bit the same for the
    same packages and epoch)."""
    ensure_tools(("mmdebstrap", "dpkg-deb"))
    cmd = ["mmdebstrap", "--mode=root", "--quiet", f"--include={','.join(BASE_PACKAGES[kind])}"]
    if kind == "base":
        cmd += [f"--dpkgopt=path-exclude={p}" for p in EXCLUDES]
        cmd += [f"--dpkgopt=path-include={p}" for p in INCLUDES]
        # only the packages' files: no maintainer script, no shell (finish-rootfs.sh makes
        # what those scripts would have: the dpkg database, users, CA bundle, byte code)
        cmd += ["--variant=extract",
                f"--extract-hook={DOCKER / 'base' / 'finish-rootfs.sh'} \"$1\""]
    else:
        cmd += ["--variant=essential",
                "--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr"]
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd += [SUITE, str(out)]
    env = {**os.environ, "SOURCE_DATE_EPOCH": epoch}
    run(cmd, capture=True, env=env, what=f"mmdebstrap ({kind})")


def debian_packages(status: str) -> list[tuple[str, str, str]]:
    """(name, version, architecture) of every installed package in a dpkg status file."""
    out = []
    for stanza in status.split("\n\n"):
        fields = {}
        for line in stanza.splitlines():
            if line and not line[0].isspace() and ":" in line:
                key, _, value = line.partition(":")
                fields[key] = value.strip()
        if "Package" in fields and "installed" in fields.get("Status", ""):
            out.append((fields["Package"], fields["Version"], fields.get("Architecture", "")))
    return sorted(out)


def tar_status(tar_path: Path) -> str:
    with tarfile.open(tar_path) as tar:
        for name in ("./var/lib/dpkg/status", "var/lib/dpkg/status"):
            try:
                member = tar.extractfile(name)
            except KeyError:
                continue
            if member is not None:
                return member.read().decode()
    raise Failure(f"{tar_path} has no /var/lib/dpkg/status")


def package_lines(status: str) -> list[str]:
    return [f"{name}={version}" for name, version, _ in debian_packages(status)]


def committed_packages(kind: str) -> list[str]:
    path = package_file(kind)
    if not path.exists():
        return []
    return [line for line in path.read_text(encoding="utf-8").splitlines()
            if line and not line.startswith("#")]


def diff_packages(old: list[str], new: list[str]) -> list[str]:
    before = dict(line.split("=", 1) for line in old)
    after = dict(line.split("=", 1) for line in new)
    out = []
    for name in sorted(before.keys() | after.keys()):
        if before.get(name) != after.get(name):
            out.append(f"{name}: {before.get(name, '(none)')} -> {after.get(name, '(none)')}")
    return out


def image_digest(ref: str) -> str:
    done = run(["podman", "image", "inspect", "--format", "{{.Digest}}", ref], capture=True,
               what=f"podman image inspect {ref}")
    return done.stdout.strip()


def image_exists(ref: str) -> bool:
    return run(["podman", "image", "exists", ref], check=False).returncode == 0


def build_base(pin: bool = False, allow_drift: bool = False) -> dict[str, str]:
    """Both bases, checked against their pins; the refs to build on."""
    ensure_tools()
    pins = read_pins()
    refs = {}
    for kind in KINDS:
        tar = WORK / kind / "rootfs.tar"
        rootfs(kind, pins["epoch"], tar)
        new = package_lines(tar_status(tar))
        changed = diff_packages(committed_packages(kind), new)
        drifted = bool(changed) and not pin
        if drifted and not allow_drift:
            raise Failure(
                f"Debian's archive has moved on since the {kind} base was pinned "
                f"({len(changed)} packages differ from {shown(package_file(kind))}):"
                + "".join(f"\n  {c}" for c in changed[:30])
                + "\nReview the changes, then `make base-image PIN=1` writes the new package "
                  "lists and digests (commit them).")
        (WORK / kind / "Containerfile").write_text(
            "# the root file system made by mmdebstrap (deploy/images.py base)\n"
            "FROM scratch\nADD rootfs.tar /\n"
            f'LABEL org.opencontainers.image.title="paiju-{kind}" '
            f'org.paiju.debian-suite="{SUITE}"\n', encoding="utf-8")
        tag = f"localhost/paiju-{kind}:{'drift' if drifted else 'pinned'}"
        run(["buildah", "bud", "--quiet", "--isolation", "chroot", "--format", "oci",
             "--no-cache", "--timestamp", pins["epoch"], "-t", tag, str(WORK / kind)],
            capture=True, what=f"buildah bud ({kind} base)")
        digest = image_digest(tag)
        ref = f"localhost/paiju-{kind}@{digest}"
        if drifted:
            print(f"images: WARNING: the {kind} base is built from a Debian archive that moved "
                  f"on ({len(changed)} packages differ from the pin); using {ref}, pins "
                  f"unchanged:" + "".join(f"\n  {c}" for c in changed[:10]), file=sys.stderr)
        elif pin:
            package_file(kind).write_text(
                f"# The {kind} image's Debian packages (deploy/images.py base --pin).\n"
                + "\n".join(new) + "\n", encoding="utf-8")
            pins[kind] = ref
        elif ref != pins[kind]:
            raise Failure(f"the {kind} base built from the pinned package list has digest "
                          f"{digest}, the pin says {pins[kind]}: the build is not reproducible "
                          f"here (a different mmdebstrap or hook?); nothing was changed")
        refs[kind] = ref
        print(f"{kind:8s} {ref}  {image_size(ref) / 1e6:.1f} MB", flush=True)
    if pin:
        write_pins(pins)
        print(f"images: pinned in {shown(PIN_FILE)} and the Dockerfile", file=sys.stderr)
    return refs


def bases(allow_drift: bool) -> dict[str, str]:
    """The refs of the bases to build on: BASE_IMAGE from the environment (a public base for
    every stage), else the pinned ones, built when they are not in local storage yet."""
    public = os.environ.get("BASE_IMAGE", "").strip()
    if public:
        if "@sha256:" not in public:
            raise Failure(f"BASE_IMAGE={public!r} is not an image by digest (name@sha256:...)")
        return {"base": public, "builder": public}
    pins = read_pins()
    if all(image_exists(pins[k]) for k in KINDS):
        return {k: pins[k] for k in KINDS}
    return build_base(allow_drift=allow_drift)


# ------------------------------------------------------------------ service images
def local_ref(target: str, tag: str) -> str:
    return f"localhost/paiju-{target}:{tag}"


def default_tag() -> str:
    done = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short=12", "HEAD"],
                          capture_output=True, text=True)
    return os.environ.get("IMAGE_TAG") or (done.stdout.strip() if done.returncode == 0
                                           else "local")


def source_date_epoch() -> str:
    if os.environ.get("SOURCE_DATE_EPOCH"):
        return os.environ["SOURCE_DATE_EPOCH"]
    done = subprocess.run(["git", "-C", str(ROOT), "log", "-1", "--format=%ct"],
                          capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else "0"


def build(targets: list[str], tag: str, no_cache: bool, allow_drift: bool) -> dict[str, str]:
    ensure_tools(("buildah", "podman", "runc"))
    refs = bases(allow_drift)
    epoch = source_date_epoch()
    revision = os.environ.get("IMAGE_REVISION") or subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
        text=True).stdout.strip() or "unknown"
    (ROOT / ".dockerignore").write_text(
        (DOCKER / "dockerignore.txt").read_text(encoding="utf-8"), encoding="utf-8")
    common = ["--isolation", "chroot", "--format", "oci", "--network", "host",
              "--build-arg", f"BASE_IMAGE={refs['base']}",
              "--build-arg", f"BUILDER_IMAGE={refs['builder']}", "-f", str(DOCKERFILE)]
    bundle = os.environ.get("BUILD_CA_BUNDLE", "/etc/ssl/certs/ca-certificates.crt")
    if bundle and Path(bundle).is_file():
        # the host's CA certificates for pip's downloads in RUN steps (a proxy's CA on
        # sandboxed hosts); a bind mount, never part of an image
        common += ["--volume", f"{bundle}:/etc/ssl/certs/ca-certificates.crt:ro"]
    # The build stage once, with the layer cache (buildah uses none with --timestamp, so
    # each target would install every package and generate the code again: about 20 s
    # each); the targets then take it as the stage named "build". Its files' dates do not
    # matter: each target's layers are written with the commit's time. Its name is this
    # build's own: two builds of one tag at once (two Jenkins jobs on one agent) never take
    # or untag each other's stage.
    stage = local_ref("build-stage", f"{tag}-{uuid.uuid4().hex[:12]}")
    run(["buildah", "bud", "--quiet", *common, "--layers", *(["--no-cache"] if no_cache else []),
         "--target", "build", "-t", stage, str(ROOT)],
        capture=True, what="buildah bud (build stage)")
    built = {}
    try:
        for target in targets:
            built[target] = build_target(target, tag, common, stage, epoch, revision)
    finally:
        # untagged, not removed: it stays the cache of the next build (`podman image prune`
        # removes the untagged stages; a build after it makes its stage again)
        run(["podman", "untag", stage], capture=True, check=False)
    return built


def build_target(target: str, tag: str, common: list[str], stage: str, epoch: str,
                 revision: str) -> str:
    """One image on the built stage: its digest."""
    # --layers: a layer per step (the packages every service imports are one layer that all
    # four share); --no-cache: never a cached layer, which would keep the dates of the
    # build that made it (the steps are copies: quick); --omit-history: the history would
    # name the intermediate images, whose ids differ from build to build
    cmd = ["buildah", "bud", "--quiet", *common, "--layers", "--no-cache", "--omit-history",
           "--timestamp", epoch,
           "--build-context", f"build=container-image://{stage}",
           "--label", f"org.opencontainers.image.revision={revision}",
           "-t", local_ref(target, tag)]
    if target == "nats":
        cmd += ["--target", "nats"]
    else:
        cmd += ["--build-arg", f"SERVICE={target}", "--label",
                f"org.paiju.inputs={inputs_digest(target)}"]
    cmd += ["--build-arg", f"PORTS={' '.join(map(str, PORTS[target]))}"]
    cmd.append(str(ROOT))
    run(cmd, capture=True, what=f"buildah bud ({target})")
    ref = local_ref(target, tag)
    digest = image_digest(ref)
    out = DIST / target
    out.mkdir(parents=True, exist_ok=True)
    (out / "image-id").write_text(image_id(ref) + "\n", encoding="utf-8")
    print(f"{target:8s} {ref}@{digest}  {image_size(ref) / 1e6:.1f} MB", flush=True)
    return digest


def inputs_digest(service: str) -> str:
    done = subprocess.run([sys.executable, str(ROOT / "deploy" / "inputs.py"), "digest", service],
                          capture_output=True, text=True, check=True)
    return done.stdout.strip()


def image_id(ref: str) -> str:
    return run(["podman", "image", "inspect", "--format", "{{.Id}}", ref],
               capture=True).stdout.strip()


def image_size(ref: str) -> int:
    """Unpacked size in bytes (every layer, as stored)."""
    return int(run(["podman", "image", "inspect", "--format", "{{.Size}}", ref],
                   capture=True).stdout.strip())


# ------------------------------------------------------------------ SBOM
def python_packages(root: Path) -> list[tuple[str, str, str]]:
    """(name, version, where) of every Python distribution in an image's file tree."""
    out = []
    for meta in sorted(root.glob("opt/paiju/*/*.dist-info/METADATA")):
        fields = {}
        for line in meta.read_text(encoding="utf-8", errors="replace").splitlines():
            if not line.strip():
                break
            key, _, value = line.partition(":")
            fields.setdefault(key, value.strip())
        out.append((fields.get("Name", meta.parent.name), fields.get("Version", ""),
                    f"/{meta.parent.parent.relative_to(root)}"))
    return out


def sbom_document(target: str, ref: str, digest: str, debs: list[tuple[str, str, str]],
                  wheels: list[tuple[str, str, str]], epoch: str) -> dict:
    """A CycloneDX 1.5 JSON document of what the image holds (its dpkg database and the
    Python distributions' metadata, read from the image itself)."""
    import datetime

    components = []
    for name, version, arch in debs:
        purl = f"pkg:deb/debian/{name}@{version}?arch={arch}&distro=debian-12"
        components.append({"type": "library", "bom-ref": purl, "name": name,
                           "version": version, "purl": purl,
                           "properties": [{"name": "paiju:source", "value": "dpkg"}]})
    for name, version, where in wheels:
        purl = f"pkg:pypi/{name.lower().replace('_', '-').replace('.', '-')}@{version}"
        components.append({"type": "library", "bom-ref": purl, "name": name,
                           "version": version, "purl": purl,
                           "properties": [{"name": "paiju:path", "value": where}]})
    stamp = datetime.datetime.fromtimestamp(int(epoch), datetime.UTC)
    return {
        "bomFormat": "CycloneDX", "specVersion": "1.5", "version": 1,
        "serialNumber": f"urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, ref + '@' + digest)}",
        "metadata": {
            "timestamp": stamp.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "tools": [{"vendor": "paiju", "name": "deploy/images.py"}],
            "component": {"type": "container", "bom-ref": f"{ref}@{digest}",
                          "name": f"paiju-{target}", "version": digest},
        },
        "components": components,
    }


def lock_versions() -> dict[str, str]:
    sys.path.insert(0, str(ROOT / "deploy"))
    import inputs  # deploy/inputs.py: the lock's parser

    out = {}
    for name, (entry, _) in inputs.lock_entries().items():
        out[name] = entry.split("==", 1)[1].split()[0].rstrip("\\").strip(" ;")
    return out


def sbom(target: str, tag: str) -> tuple[Path, list[str]]:
    """Write dist/<target>/sbom.cdx.json; the problems: a Python package the runtime lock
    does not have (or at another version), a Debian package the base's list does not."""
    ref = local_ref(target, tag)
    digest = image_digest(ref)
    mount = run(["podman", "image", "mount", ref], capture=True,
                what=f"podman image mount {ref}").stdout.strip()
    try:
        root = Path(mount)
        status = root / "var" / "lib" / "dpkg" / "status"
        debs = debian_packages(status.read_text(encoding="utf-8")) if status.exists() else []
        wheels = python_packages(root)
    finally:
        run(["podman", "image", "unmount", ref], capture=True, check=False)
    doc = sbom_document(target, ref.rsplit(":", 1)[0], digest, debs, wheels,
                        source_date_epoch())
    out = DIST / target / "sbom.cdx.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return out, lock_problems(wheels, [] if os.environ.get("BASE_IMAGE") else debs)


def lock_problems(wheels: list[tuple[str, str, str]],
                  debs: list[tuple[str, str, str]]) -> list[str]:
    """A Python package that requirements/runtime.txt does not lock at that version, a
    Debian package that the runtime base's pinned list does not have."""
    problems = []
    locked = lock_versions()
    for name, version, where in wheels:
        key = name.lower().replace("_", "-").replace(".", "-")
        if locked.get(key) != version:
            problems.append(f"{name}=={version} in {where} is not in requirements/runtime.txt"
                            + (f" (locked: {locked[key]})" if key in locked else ""))
    allowed = set(committed_packages("base"))
    for name, version, _ in debs:
        if f"{name}={version}" not in allowed:
            problems.append(f"Debian {name}={version} is not in "
                            f"{shown(package_file('base'))}")
    return problems


# ------------------------------------------------------------------ push
def push(target: str, registry: str, tag: str, insecure: bool, dist: Path = DIST) -> str:
    """Push by tag (a tag already in the registry is never pushed again), read the digest
    back from the registry, record ``<registry>/paiju-<target>@sha256:...`` in
    dist/<target>/image.txt (what make deploy reads)."""
    ensure_tools(("skopeo",))
    dest = f"docker://{registry}/paiju-{target}:{tag}"
    tls = ["--tls-verify=false"] if insecure else []
    existing = run(["skopeo", "inspect", *tls, "--format", "{{.Digest}}", dest],
                   capture=True, check=False)
    if existing.returncode == 0:
        print(f"images: {registry}/paiju-{target}:{tag} is already in the registry: tags are "
              f"immutable, not pushed again", file=sys.stderr)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            run(["skopeo", "copy", "--quiet", *[f"--dest-{t[2:]}" for t in tls],
                 "--digestfile", f"{tmp}/digest", f"containers-storage:{local_ref(target, tag)}",
                 dest], capture=True, what=f"push of paiju-{target}:{tag} to {registry}")
    back = run(["skopeo", "inspect", *tls, "--format", "{{.Digest}}", dest], capture=True,
               what=f"reading paiju-{target}:{tag} back from {registry}").stdout.strip()
    line = f"{registry}/paiju-{target}@{back}"
    out = dist / target
    out.mkdir(parents=True, exist_ok=True)
    (out / "image.txt").write_text(line + "\n", encoding="utf-8")
    print(line)
    return line


# ------------------------------------------------------------------ command line
def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="deploy/images.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("tools")
    base = sub.add_parser("base")
    base.add_argument("--pin", action="store_true")
    base.add_argument("--allow-drift", action="store_true")
    for name in ("build", "sbom"):
        p = sub.add_parser(name)
        p.add_argument("targets", nargs="*", metavar="TARGET", help=", ".join(TARGETS))
        p.add_argument("--tag", default="")
        if name == "build":
            p.add_argument("--no-cache", action="store_true")
            p.add_argument("--allow-drift", action="store_true")
    p = sub.add_parser("push")
    p.add_argument("target", choices=TARGETS)
    p.add_argument("--registry", required=True)
    p.add_argument("--tag", default="")
    p.add_argument("--insecure", action="store_true", help="plain HTTP (a registry on loopback)")
    p.add_argument("--dist", type=Path, default=DIST, help="where image.txt goes (dist/)")
    args = parser.parse_args(argv)
    for target in getattr(args, "targets", []):
        if target not in TARGETS:
            parser.error(f"unknown target {target!r}: one of {', '.join(TARGETS)}")
    if args.command == "tools":
        ensure_tools()
        print("images: buildah, podman, mmdebstrap, skopeo and runc are installed")
    elif args.command == "base":
        build_base(pin=args.pin, allow_drift=args.allow_drift)
    elif args.command == "build":
        build(list(args.targets) or list(TARGETS), args.tag or default_tag(), args.no_cache,
              args.allow_drift)
    elif args.command == "sbom":
        failed = False
        for target in list(args.targets) or list(TARGETS):
            path, problems = sbom(target, args.tag or default_tag())
            print(f"{target:8s} {path.relative_to(ROOT)}")
            for problem in problems:
                print(f"  {problem}", file=sys.stderr)
                failed = True
        if failed:
            raise Failure("an image holds a package its lock or base list does not")
    elif args.command == "push":
        push(args.target, args.registry, args.tag or default_tag(), args.insecure, args.dist)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
