"""Runs a piece of the web client's JavaScript in node (the unit tests of clients/web)."""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any

NODE = shutil.which("node")


def run_node(script: str) -> Any:
    """Run ``script`` as an ES module; what it printed, as JSON."""
    assert NODE is not None, "node is not installed"
    out = subprocess.run([NODE, "--input-type=module", "-e", script], capture_output=True,
                         text=True, timeout=30, check=True)
    return json.loads(out.stdout)
