"""A Kubernetes Secret volume as the pod sees it, for tests of credentials read from files."""

from __future__ import annotations

import os
import time
from pathlib import Path


def update_secret_volume(directory: Path, files: dict[str, str]) -> None:
    """Swap the volume's files as the kubelet does: a new data directory, then one rename of
    the ``..data`` link, so a reader never sees half an update; each name a link into it."""
    stamp = f"..{time.monotonic_ns()}"
    (directory / stamp).mkdir(parents=True)
    for name, value in files.items():
        (directory / stamp / name).write_text(value + "\n", encoding="utf-8")
    tmp = directory / "..data_tmp"
    tmp.symlink_to(stamp)
    os.replace(tmp, directory / "..data")
    for name in files:
        if not (directory / name).is_symlink():
            (directory / name).symlink_to(f"..data/{name}")
