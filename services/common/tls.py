"""TLS outside, mutual TLS inside: credentials and the check of who may call whom.

Internal calls (lobby -> table, lobby -> records, and the previous release's table -> arbiter;
this release's tables ask the arbiters over NATS) carry an identity: each
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

Renewal: the gRPC servers' certificates are read again when their files change
(:class:`CertificateFiles`, through gRPC's dynamic server credentials), so a certificate
that cert-manager renews is served from the next handshake on, without a restart; open
connections are not touched. A pair that does not load (a key that does not match its
certificate, a file half written) is refused and the previous one stays in use. Channels
to other services present the renewed certificate from their next call on
(:class:`ReloadingChannel`: gRPC Python has no reloading channel credentials, so a new
channel per certificate; streams already open stay on theirs).
``paiju_tls_certificate_expiry_seconds`` says how long each certificate in use has left.
"""

from __future__ import annotations

import calendar
import logging
import os
import ssl
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import grpc
from prometheus_client import Counter, Gauge

from services.common.config import Config, ConfigError

log = logging.getLogger("paiju.tls")

CERT_EXPIRY = Gauge(
    "paiju_tls_certificate_expiry_seconds",
    "Seconds until a certificate this process uses expires (use: server = the internal one its "
    "gRPC port serves, client = the oldest its channels to other services were made with, "
    "public = the lobby's public one)", ["use"])
CERT_RELOADS = Counter("paiju_tls_certificate_reloads_total", "Certificates read again after "
                       "their files changed (refused: a changed pair that did not load)",
                       ["use", "result"])
# How often at most the files are looked at (a stat of each per check): handshakes and
# scrapes ask, and renewals are rare.
RELOAD_CHECK_SECONDS = 1.0

# Who may call each service's gRPC methods (health checks excepted).
CALLERS: dict[str, frozenset[str]] = {
    "table": frozenset({"lobby"}),
    "records": frozenset({"lobby"}),
    "arbiter": frozenset({"table"}),
}
OPEN_PREFIXES = ("/grpc.health.v1.Health/",)


def _tlv(der: bytes, pos: int) -> tuple[int, int, int]:
    """One DER element at ``pos``: its tag, where its content starts and where it ends."""
    tag, length = der[pos], der[pos + 1]
    pos += 2
    if length & 0x80:
        size = length & 0x7F
        length = int.from_bytes(der[pos:pos + size], "big")
        pos += size
    if pos + length > len(der):
        raise ValueError("truncated DER")
    return tag, pos, pos + length


def not_after(pem: bytes) -> float:
    """The end of validity (Unix time) of the first certificate of a PEM file. The standard
    library has no public certificate parser and the images ship no ``cryptography``, so
    this walks the DER to TBSCertificate.validity.notAfter (RFC 5280 4.1)."""
    text = pem.decode("ascii", "replace")
    start = text.find("-----BEGIN CERTIFICATE-----")
    end = text.find("-----END CERTIFICATE-----", start)
    if start < 0 or end < 0:
        raise ValueError("no PEM certificate")
    der = ssl.PEM_cert_to_DER_cert(text[start:end + len("-----END CERTIFICATE-----")])
    _, pos, _ = _tlv(der, 0)                      # Certificate
    _, pos, _ = _tlv(der, pos)                    # TBSCertificate
    if der[pos] == 0xA0:                          # [0] version, when present
        pos = _tlv(der, pos)[2]
    for _ in range(3):                            # serialNumber, signature, issuer
        pos = _tlv(der, pos)[2]
    _, pos, _ = _tlv(der, pos)                    # validity
    pos = _tlv(der, pos)[2]                       # notBefore
    tag, s, e = _tlv(der, pos)                    # notAfter
    stamp = der[s:e].decode("ascii")
    if tag == 0x17:                               # UTCTime YYMMDDHHMMSSZ
        year = int(stamp[:2])
        stamp = f"{1900 + year if year >= 50 else 2000 + year}{stamp[2:]}"
    elif tag != 0x18:                             # GeneralizedTime YYYYMMDDHHMMSSZ
        raise ValueError(f"unexpected time tag {tag:#x}")
    return float(calendar.timegm(time.strptime(stamp, "%Y%m%d%H%M%SZ")))


def _stamp(paths: Sequence[str]) -> tuple[tuple[int, int, int], ...] | None:
    """What changes when a file is replaced: the kubelet swaps a symlink to a new directory
    (new inode), an editor or ``cp`` rewrites in place (new mtime, often a new size)."""
    try:
        stats = [os.stat(p) for p in paths]
    except OSError:
        return None
    return tuple((s.st_ino, s.st_mtime_ns, s.st_size) for s in stats)


class CertificateFiles:
    """A certificate chain and its key (and, for mutual TLS, the CA that verifies peers),
    read from files and read again when they change.

    :meth:`refresh` looks at the files at most every ``check_seconds``; a changed set is
    loaded only if the key matches the certificate (``ssl`` loads the pair) and the files
    did not change while they were read, otherwise the previous set stays and the next
    check tries again. Thread-safe: gRPC calls :meth:`fetch` from its own threads."""

    def __init__(self, cert_file: str, key_file: str, ca_file: str = "", *, use: str,
                 check_seconds: float = RELOAD_CHECK_SECONDS) -> None:
        self.paths = tuple(p for p in (cert_file, key_file, ca_file) if p)
        self.cert_file, self.key_file, self.ca_file = cert_file, key_file, ca_file
        self.use = use
        self.check_seconds = check_seconds
        self._lock = threading.Lock()
        self.generation = 0          # bumped at each reload
        self._served = 0             # the generation gRPC was last given
        self._stamp = _stamp(self.paths)
        self._refused: tuple[tuple[int, int, int], ...] | None = None   # said once
        self.cert, self.key, self.ca = self._load()
        self.not_after = not_after(self.cert)
        self._checked = time.monotonic()

    def _load(self) -> tuple[bytes, bytes, bytes | None]:
        cert = _read(self.cert_file, "certificate")
        key = _read(self.key_file, "key")
        ca = _read(self.ca_file, "ca") if self.ca_file else None
        try:
            ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(self.cert_file, self.key_file)
            if ca is not None:
                ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_verify_locations(
                    cadata=ca.decode("ascii"))
            not_after(cert)
        except (ssl.SSLError, ValueError, UnicodeDecodeError, IndexError) as exc:
            raise ConfigError(f"{self.cert_file} / {self.key_file}: not a usable pair: {exc}") \
                from None
        if (cert, key) != (_read(self.cert_file, "certificate"), _read(self.key_file, "key")):
            raise ConfigError(f"{self.cert_file}: changed while it was read")
        return cert, key, ca

    def refresh(self, *, force: bool = False) -> bool:
        """Reads the files again if they changed since the last load; True if a new set is
        now in use."""
        with self._lock:
            now = time.monotonic()
            if not force and now - self._checked < self.check_seconds:
                return False
            self._checked = now
            stamp = _stamp(self.paths)
            if stamp is None or stamp == self._stamp or stamp == self._refused:
                return False
            try:
                cert, key, ca = self._load()
            except ConfigError as exc:   # e.g. the key written, its certificate not yet
                self._refused = stamp     # tried again once the files change again
                CERT_RELOADS.labels(self.use, "refused").inc()
                log.warning("changed certificate not loaded, keeping the previous one",
                            extra={"use": self.use, "error": str(exc)})
                return False
            self._stamp = stamp
            self.cert, self.key, self.ca = cert, key, ca
            self.not_after = not_after(cert)
            self.generation += 1
            CERT_RELOADS.labels(self.use, "loaded").inc()
            log.info("certificate reloaded", extra={
                "use": self.use, "file": self.cert_file,
                "not_after": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.not_after))})
            return True

    def seconds_left(self) -> float:
        self.refresh()
        return self.not_after - time.time()

    def server_configuration(self) -> grpc.ServerCertificateConfiguration:
        return grpc.ssl_server_certificate_configuration([(self.key, self.cert)],
                                                         root_certificates=self.ca)

    def fetch(self) -> grpc.ServerCertificateConfiguration | None:
        """gRPC's certificate configuration fetcher, called before each handshake: the new
        set when it changed since gRPC last took one, else None (keep the current one)."""
        try:
            self.refresh()
            with self._lock:
                if self._served == self.generation:
                    return None
                self._served = self.generation
                return self.server_configuration()
        except Exception:  # an exception here would fail the handshake: keep serving
            log.exception("certificate fetch failed")
            return None

    def server_credentials(self, *, require_client_auth: bool) -> grpc.ServerCredentials:
        self._served = self.generation
        return grpc.dynamic_ssl_server_credentials(
            self.server_configuration(), self.fetch,
            require_client_authentication=require_client_auth)

    def export_expiry(self) -> None:
        """``paiju_tls_certificate_expiry_seconds{use}`` follows these files (read at scrape
        time, which also picks up a renewal when no handshake came)."""
        CERT_EXPIRY.labels(self.use).set_function(self.seconds_left)


# This process's own certificate as its channels present it, one set of files per process
# (tls.cert_file, key_file, ca_file), shared by every channel.
_client_files: dict[tuple[str, str, str], CertificateFiles] = {}


def _client_identity(cfg: Config) -> CertificateFiles:
    t = cfg.tls
    key = (t.cert_file, t.key_file, t.ca_file)
    files = _client_files.get(key)
    if files is None:
        files = _client_files[key] = CertificateFiles(*key, use="client")
        files.export_expiry()
    return files


class _Call:
    """A multi-callable of a :class:`ReloadingChannel` (what a stub holds): each call goes
    to the channel's current underlying channel."""

    def __init__(self, owner: ReloadingChannel, kind: str, method: str,
                 kwargs: dict[str, Any]) -> None:
        self._owner, self._kind, self._method, self._kwargs = owner, kind, method, kwargs

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        channel = self._owner.current()
        return getattr(channel, self._kind)(self._method, **self._kwargs)(*args, **kwargs)


def _kwargs(request_serializer: Any, response_deserializer: Any,
            registered: Any) -> dict[str, Any]:
    return {"request_serializer": request_serializer,
            "response_deserializer": response_deserializer, "_registered_method": registered}


class ReloadingChannel(grpc.aio.Channel):  # type: ignore[misc]  # grpc has no type hints: Any
    """A channel to an internal service that presents this service's certificate as the
    files have it now: when they change (a renewal), the next calls go over a new channel
    made with the new certificate; calls and streams already open stay on the channel they
    started on, kept until :meth:`close` (one per renewal). gRPC Python has no reloading
    channel credentials, hence a channel per certificate."""

    def __init__(self, files: CertificateFiles, target: str, service: str,
                 options: Sequence[tuple[str, Any]]) -> None:
        self._files, self._target = files, target
        self._options = [*options, ("grpc.ssl_target_name_override", service)]
        self._generation = files.generation
        self._channel = self._make()
        self._retired: list[grpc.aio.Channel] = []

    def _make(self) -> grpc.aio.Channel:
        f = self._files
        creds = grpc.ssl_channel_credentials(root_certificates=f.ca, private_key=f.key,
                                             certificate_chain=f.cert)
        return grpc.aio.secure_channel(self._target, creds, options=self._options)

    def current(self) -> grpc.aio.Channel:
        """The channel new calls take (a new one once the certificate files changed)."""
        self._files.refresh()   # at most one look at the files a second
        if self._generation != self._files.generation:
            self._retired.append(self._channel)
            self._generation = self._files.generation
            self._channel = self._make()
            log.info("channel renewed with the reloaded certificate",
                     extra={"target": self._target})
        return self._channel

    def unary_unary(self, method: str, request_serializer: Any = None,
                    response_deserializer: Any = None, _registered_method: Any = False) -> Any:
        return _Call(self, "unary_unary", method,
                     _kwargs(request_serializer, response_deserializer, _registered_method))

    def unary_stream(self, method: str, request_serializer: Any = None,
                     response_deserializer: Any = None, _registered_method: Any = False) -> Any:
        return _Call(self, "unary_stream", method,
                     _kwargs(request_serializer, response_deserializer, _registered_method))

    def stream_unary(self, method: str, request_serializer: Any = None,
                     response_deserializer: Any = None, _registered_method: Any = False) -> Any:
        return _Call(self, "stream_unary", method,
                     _kwargs(request_serializer, response_deserializer, _registered_method))

    def stream_stream(self, method: str, request_serializer: Any = None,
                      response_deserializer: Any = None, _registered_method: Any = False) -> Any:
        return _Call(self, "stream_stream", method,
                     _kwargs(request_serializer, response_deserializer, _registered_method))

    def get_state(self, try_to_connect: bool = False) -> grpc.ChannelConnectivity:
        return self._channel.get_state(try_to_connect)

    async def wait_for_state_change(self, last_observed_state: grpc.ChannelConnectivity) -> None:
        await self._channel.wait_for_state_change(last_observed_state)

    async def channel_ready(self) -> None:
        await self.current().channel_ready()

    async def close(self, grace: float | None = None) -> None:
        for channel in (*self._retired, self._channel):
            await channel.close(grace)
        self._retired.clear()

    async def __aenter__(self) -> ReloadingChannel:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close(None)


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
    certificate asked), mutual TLS for the internal services, or None (plaintext).
    Both are re-read when their files change (:class:`CertificateFiles`)."""
    if service == "lobby":
        c = cfg.lobby
        if not c.public_cert_file:
            return None
        _read(c.public_cert_file, "lobby.public_cert_file")
        _read(c.public_key_file, "lobby.public_key_file")
        files = CertificateFiles(c.public_cert_file, c.public_key_file, use="public")
        files.export_expiry()
        return files.server_credentials(require_client_auth=False)
    if not internal_enabled(cfg):
        return None
    _identity_files(cfg)   # each file named and readable, with the setting's name if not
    t = cfg.tls
    files = CertificateFiles(t.cert_file, t.key_file, t.ca_file, use="server")
    files.export_expiry()
    return files.server_credentials(require_client_auth=True)


def channel(cfg: Config, target: str, service: str,
            options: Sequence[tuple[str, Any]] = ()) -> grpc.aio.Channel:
    """A channel to an internal ``service`` at ``target``: mutual TLS with this service's
    certificate when internal TLS is on (the peer must present ``service``'s certificate,
    whatever address it is dialled at; a renewed certificate is presented from the next
    call on: :class:`ReloadingChannel`), else plaintext."""
    if not internal_enabled(cfg):
        return grpc.aio.insecure_channel(target, options=list(options))
    _identity_files(cfg)   # each file named and readable, with the setting's name if not
    return ReloadingChannel(_client_identity(cfg), target, service, options)


def caller_names(auth_context: dict[str, Iterable[bytes]]) -> set[str]:
    """The service names a verified client certificate stands for: its common name and the
    first label of each DNS name."""
    names = {v.decode() for v in auth_context.get("x509_common_name", ())}
    for san in auth_context.get("x509_subject_alternative_name", ()):
        names.add(san.decode().split(".", 1)[0])
    return names


class CallerCheck(grpc.aio.ServerInterceptor):  # type: ignore[misc]  # grpc has no type hints: Any
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
