"""The service images' entry point: runs ``services.$SERVICE`` as ``python3 -m`` would.

The runtime base has no shell to expand ``$SERVICE`` in a command line, so this is the one
command every service image starts with (``ENTRYPOINT``); arguments after it are passed on.
A command given to the container (``python3 -m services.records.migrate``, the migration
Job) replaces it.
"""

from __future__ import annotations

import os
import runpy
import sys

SERVICES = ("lobby", "table", "arbiter", "records")


def main() -> None:
    service = os.environ.get("SERVICE", "")
    if service not in SERVICES:
        sys.exit(f"entry: SERVICE={service!r} is not a Paiju service ({', '.join(SERVICES)})")
    sys.argv[0] = f"services.{service}"
    runpy.run_module(f"services.{service}", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
