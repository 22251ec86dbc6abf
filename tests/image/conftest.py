"""The image tests: the images ``make images`` builds, built once per run (layers cached
between runs of one machine), and what they need from the host (podman, buildah, skopeo,
Debian's docker-registry), installed by deploy/images.py when missing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.containers import podman

ROOT = Path(__file__).resolve().parents[2]
IMAGES = [sys.executable, str(ROOT / "deploy" / "images.py")]
TARGETS = ("lobby", "table", "arbiter", "records", "nats")
TAG = f"test-{os.getpid()}"


@dataclass(frozen=True)
class Built:
    target: str
    ref: str            # localhost/paiju-<target>:<tag>
    digest: str
    size: int           # bytes, unpacked


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True,
                          text=True).stdout.strip()


# One commit and date for every build of this run (HEAD may move while it runs).
PINNED_ENV = {"IMAGE_REVISION": _git("rev-parse", "HEAD") or "unknown",
              "SOURCE_DATE_EPOCH": _git("log", "-1", "--format=%ct") or "0"}


def images(*args: str, timeout: float = 1500, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run([*IMAGES, *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **PINNED_ENV})
    if check and done.returncode != 0:
        raise AssertionError(f"deploy/images.py {' '.join(args)} failed:\n"
                             f"{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    return done


def _can_build() -> str:
    """Why the images cannot be built here ('' when they can)."""
    if os.geteuid() != 0:
        missing = [t for t in ("buildah", "podman", "mmdebstrap", "skopeo")
                   if subprocess.run(["which", t], capture_output=True).returncode != 0]
        if missing:
            return (f"not root and {', '.join(missing)} missing: the image tests need root "
                    f"(mmdebstrap, podman with runc) and those Debian packages")
    return ""


@pytest.fixture(scope="session")
def built() -> Iterator[dict[str, Built]]:
    """Every image, built from this checkout (the bases built from their pinned package lists
    first when they are not in local storage; a Debian archive that moved on since the pin is
    a warning here, a failure of `make base-image`)."""
    why = _can_build()
    if why:
        pytest.skip(why)
    images("tools", timeout=900)
    images("build", "--tag", TAG, "--allow-drift")
    out = {}
    for target in TARGETS:
        ref = f"localhost/paiju-{target}:{TAG}"
        info = json.loads(podman("image", "inspect", ref))[0]
        out[target] = Built(target, ref, info["Digest"], int(info["Size"]))
    yield out
    for b in out.values():
        podman("rmi", "--force", b.ref, check=False)
