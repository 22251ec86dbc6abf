"""The NATS chart's values (deploy/k8s/nats/values-<env>.yaml) as tests and benches read
them: what an environment adds to nats.conf, and NATS's durations in seconds."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

NATS_VALUES = Path(__file__).resolve().parents[2] / "deploy" / "k8s" / "nats"


def environment_merge(env: str) -> dict[str, Any]:
    """What an environment's values add to nats.conf (config.merge)."""
    import yaml  # PyYAML: dev only, as the deploy tests that need it

    values = yaml.safe_load((NATS_VALUES / f"values-{env}.yaml").read_text(encoding="utf-8"))
    merge: dict[str, Any] = values["config"]["merge"]
    return merge


def duration_seconds(duration: str) -> int:
    """A NATS duration as the values write it ("15s", "2m") in seconds."""
    found = re.fullmatch(r"(\d+)([sm])", duration)
    if found is None:
        raise ValueError(f"not a NATS duration of seconds or minutes: {duration!r}")
    return int(found[1]) * (60 if found[2] == "m" else 1)
