"""python -m clients.hands says plainly when records does not answer (no traceback)."""

from __future__ import annotations

import socket
import subprocess
import sys


def test_records_down_is_a_one_line_error() -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    run = subprocess.run([sys.executable, "-m", "clients.hands", "--records", f"127.0.0.1:{port}"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 1
    assert "did not answer" in run.stderr and "Traceback" not in run.stderr
