"""Fixtures of the service tests."""

from __future__ import annotations

import shutil
import subprocess

import pytest


def node_with_websocket() -> list[str] | None:
    """The node command (with the flag it needs) whose global WebSocket runs the web client
    (clients/web/app.js) outside a browser; None without one (node >= 20)."""
    node = shutil.which("node")
    if node is None:
        return None
    for flags in ([], ["--experimental-websocket"]):
        probe = subprocess.run([node, *flags, "-e",
                                "process.exit(typeof WebSocket === 'function' ? 0 : 1)"],
                               capture_output=True, timeout=20)
        if probe.returncode == 0:
            return [node, *flags]
    return None


@pytest.fixture
def node() -> list[str]:
    found = node_with_websocket()
    if found is None:
        pytest.skip("needs node (>= 20 with WebSocket) to run clients/web/app.js")
    return found
