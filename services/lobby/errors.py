"""The lobby's refusals: a request answered with an ErrorCode (a Return frame for the
client), and the table or directory not answering."""

from __future__ import annotations

from paiju.v1 import common_pb2


class Reject(Exception):
    """A request answered with an ErrorCode (becomes a Return frame for the client)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class Unavailable(Reject):
    def __init__(self, message: str) -> None:
        super().__init__(common_pb2.ERR_UNAVAILABLE, message)


class Unreachable(Unavailable):
    """The table could not be reached (gRPC UNAVAILABLE: in all likelihood the call never
    got there, so another table may be asked)."""
