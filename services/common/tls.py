"""TLS outside, mutual TLS inside: credentials and the check of who may call whom.

Internal calls (lobby -> table, lobby -> records, table -> arbiter) carry an identity: each
service has a certificate signed by the deployment's internal CA, whose subject common name
or a DNS name (first label) is the service's name (``table``, ``lobby``, ...). A server
whose ``tls.ca_file`` is set requires a client certificate from that CA and
:class:`CallerCheck` lets through only the callers listed for it in :data:`CALLERS`; a
connection without a certificate, or with one from another CA, fails its handshake.
Health checks are open to any connection, so that the kubelet's plaintext gRPC probe can
use the optional health-only port (``tls.probe_port``): on that port every other method is
refused, since it has no identity.

The lobby's public ports (players) use a server certificate only (``lobby.public_cert_file``
and ``lobby.public_key_file``): players have no client certificate.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import grpc

from services.common.config import Config, ConfigError

# Who may call each service's gRPC methods (health checks excepted).
CALLERS: dict[str, frozenset[str]] = {
    "table": frozenset({"lobby"}),
    "records": frozenset({"lobby"}),
    "arbiter": frozenset({"table"}),
}
OPEN_PREFIXES = ("/grpc.health.v1.Health/",)


def _read(path: str, key: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(f"{key}: cannot read {path!r}: {exc.strerror}") from None


def internal_enabled(cfg: Config) -> bool:
    return bool(cfg.tls.ca_file)


def _identity_files(cfg: Config) -> tuple[bytes, bytes, bytes]:
    t = cfg.tls
    if not (t.cert_file and t.key_file):
        raise ConfigError("tls.cert_file and tls.key_file: required when tls.ca_file is set")
    return (_read(t.cert_file, "tls.cert_file"), _read(t.key_file, "tls.key_file"),
            _read(t.ca_file, "tls.ca_file"))


def server_credentials(cfg: Config, service: str) -> grpc.ServerCredentials | None:
    """Credentials of a service's gRPC port: the lobby's public certificate (no client
    certificate asked), mutual TLS for the internal services, or None (plaintext)."""
    if service == "lobby":
        c = cfg.lobby
        if not c.public_cert_file:
            return None
        cert = _read(c.public_cert_file, "lobby.public_cert_file")
        key = _read(c.public_key_file, "lobby.public_key_file")
        return grpc.ssl_server_credentials([(key, cert)])
    if not internal_enabled(cfg):
        return None
    cert, key, ca = _identity_files(cfg)
    return grpc.ssl_server_credentials([(key, cert)], root_certificates=ca,
                                       require_client_auth=True)


def channel(cfg: Config, target: str, service: str,
            options: Sequence[tuple[str, Any]] = ()) -> grpc.aio.Channel:
    """A channel to an internal ``service`` at ``target``: mutual TLS with this service's
    certificate when internal TLS is on (the peer must present ``service``'s certificate,
    whatever address it is dialled at), else plaintext."""
    if not internal_enabled(cfg):
        return grpc.aio.insecure_channel(target, options=list(options))
    cert, key, ca = _identity_files(cfg)
    creds = grpc.ssl_channel_credentials(root_certificates=ca, private_key=key,
                                         certificate_chain=cert)
    return grpc.aio.secure_channel(
        target, creds, options=[*options, ("grpc.ssl_target_name_override", service)])


def caller_names(auth_context: dict[str, Iterable[bytes]]) -> set[str]:
    """The service names a verified client certificate stands for: its common name and the
    first label of each DNS name."""
    names = {v.decode() for v in auth_context.get("x509_common_name", ())}
    for san in auth_context.get("x509_subject_alternative_name", ()):
        names.add(san.decode().split(".", 1)[0])
    return names


class CallerCheck(grpc.aio.ServerInterceptor):
    """Refuses (PERMISSION_DENIED) every call but a health check from a caller that is not
    one of ``allowed`` (a verified certificate identity), including calls with no identity
    at all (the plaintext probe port)."""

    def __init__(self, allowed: frozenset[str]) -> None:
        self.allowed = allowed

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(details)
        if handler is None or details.method.startswith(OPEN_PREFIXES):
            return handler
        allowed, method = self.allowed, details.method

        async def check(context: grpc.aio.ServicerContext) -> None:
            names = caller_names(context.auth_context())
            if not names & allowed:
                who = ", ".join(sorted(names)) or "no certificate"
                await context.abort(grpc.StatusCode.PERMISSION_DENIED,
                                    f"{method} is not for this caller ({who})")

        if handler.unary_unary:
            inner = handler.unary_unary

            async def unary_unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
                await check(context)
                return await inner(request, context)

            return grpc.unary_unary_rpc_method_handler(
                unary_unary, handler.request_deserializer, handler.response_serializer)
        if handler.stream_stream:
            inner_ss = handler.stream_stream

            async def stream_stream(request_iterator: Any,
                                    context: grpc.aio.ServicerContext) -> Any:
                await check(context)
                async for item in inner_ss(request_iterator, context):
                    yield item

            return grpc.stream_stream_rpc_method_handler(
                stream_stream, handler.request_deserializer, handler.response_serializer)
        if handler.unary_stream:
            inner_us = handler.unary_stream

            async def unary_stream(request: Any, context: grpc.aio.ServicerContext) -> Any:
                await check(context)
                async for item in inner_us(request, context):
                    yield item

            return grpc.unary_stream_rpc_method_handler(
                unary_stream, handler.request_deserializer, handler.response_serializer)
        if handler.stream_unary:
            inner_su = handler.stream_unary

            async def stream_unary(request_iterator: Any,
                                   context: grpc.aio.ServicerContext) -> Any:
                await check(context)
                return await inner_su(request_iterator, context)

            return grpc.stream_unary_rpc_method_handler(
                stream_unary, handler.request_deserializer, handler.response_serializer)
        return handler


def interceptors(cfg: Config, service: str) -> list[grpc.aio.ServerInterceptor]:
    """The caller check of an internal service when internal TLS is on."""
    if service in CALLERS and internal_enabled(cfg):
        return [CallerCheck(CALLERS[service])]
    return []
