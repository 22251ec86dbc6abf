"""The command line of deploy/'s generated files (the dashboard, the SLO rules, the
PrometheusRule): write the file, or with ``--check`` fail when the committed one differs
from what its generator makes now (the tests and CI run ``--check``)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path


def write_or_check(out: Path, render: Callable[[], str], script: str, description: str,
                   argv: list[str] | None = None) -> int:
    """``render`` makes the text; ``script`` is what to run to refresh ``out``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--check", action="store_true", help=f"fail if {out.name} is stale")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = out.read_text(encoding="utf-8") if out.exists() else ""
        if current != text:
            print(f"{out} is out of date: run python {script}", file=sys.stderr)
            return 1
        return 0
    out.write_text(text, encoding="utf-8")
    return 0
