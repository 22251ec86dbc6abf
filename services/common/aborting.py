"""The one fact about ``grpc.aio.ServicerContext`` that mypy needs: ``abort`` never returns.

grpcio ships no type stubs, so a handler's context is ``Any`` to mypy and code after
``await context.abort(...)`` still looks reachable: a value checked for None before the
abort stays ``X | None`` after it. A helper that takes its context as :class:`Aborting`
and is declared ``NoReturn`` lets mypy narrow at the call site.
"""

from __future__ import annotations

from typing import NoReturn, Protocol

import grpc


class Aborting(Protocol):
    """Any gRPC servicer context: ``abort`` raises and ends the RPC with ``code``."""

    async def abort(self, code: grpc.StatusCode, details: str = ...) -> NoReturn: ...


async def abort(context: Aborting, code: grpc.StatusCode, details: str) -> NoReturn:
    """End the RPC with ``code`` and ``details`` (raises, as grpc.aio's abort does)."""
    await context.abort(code, details)
