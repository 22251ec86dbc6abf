"""The attacks of issue 9 run against a real stack: NATS, records, arbiter, table and lobby
as processes, reached as a player would, over the lobby's Connect stream."""

from tests.system.conftest import stack  # noqa: F401 - the fixture, shared with the system tests
