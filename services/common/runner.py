"""``python -m services.<svc>``: load config, set up logs, start, serve until SIGTERM."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Awaitable, Callable

from services.common.config import Config, load_config
from services.common.logs import setup_logging
from services.common.server import ServiceHost, run_until_signalled

Starter = Callable[[Config], Awaitable[ServiceHost]]


def main(name: str, start: Starter) -> None:
    parser = argparse.ArgumentParser(prog=f"python -m services.{name}")
    parser.add_argument("--env", default=None, help="dev, test or prod (default: $PAIJU_ENV or dev)")
    args = parser.parse_args()
    cfg = load_config(args.env)
    setup_logging(name, cfg.log.level)

    async def serve() -> None:
        svc = await start(cfg)
        await run_until_signalled(svc)

    asyncio.run(serve())
