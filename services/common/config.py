"""Typed configuration: ``config/<env>.toml`` overridden by ``PAIJU_*`` environment variables.

The environment is chosen by ``PAIJU_ENV`` (dev, test, prod; default dev), as the seed kept
one conf file per environment. Any key can be overridden as ``PAIJU_<SECTION>__<KEY>``
(``PAIJU_TABLE__TURN_SECONDS=30``); ``DATABASE_URL`` and ``NATS_URL`` are accepted as the
usual short forms. A bad value is a :class:`ConfigError` naming the key, the value and the
expected type, raised at start-up, never a crash later.

Secrets as mounted files: any key ``<key>`` may instead be given as ``<key>_file``, the path
of a file holding its value (``PAIJU_LOBBY__TOKEN_SECRET_FILE=/etc/paiju/secrets/token-secret``,
one trailing newline dropped), read once at start-up; a missing file is an error, except for
the optional keys of a rotation (:data:`OPTIONAL_FILES`), which are then left unset. The
credentials that rotate while a service runs are declared ``*_file`` keys of their own and
read again at each connection: ``nats.user_file``, ``nats.password_file``, ``nats.token_file``
(services/common/bus.py) and ``records.database_password_file`` (services/records/db.py).
"""

from __future__ import annotations

import ipaddress
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, is_dataclass, replace
from pathlib import Path
from typing import Any, get_type_hints
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[2]
CONFIG_DIR = ROOT / "config"
ENVIRONMENTS = ("dev", "test", "prod")


class ConfigError(ValueError):
    """A configuration file or variable that cannot be used."""


@dataclass(frozen=True)
class LogConfig:
    level: str = "INFO"


@dataclass(frozen=True)
class NatsConfig:
    # server URLs only: no user, password or token inside (refused in prod); credentials are
    # the keys below, passed to nats-py apart from the URL
    url: str = "nats://127.0.0.1:4222"
    user: str = ""
    password: str = ""
    token: str = ""
    # files holding the user, password or token (Kubernetes Secrets mounted read-only): read
    # at every (re)connect, and a change of their content makes the connection reconnect
    # with the new credential (docs/runbooks.md, "Rotate a NATS password"); a file given
    # wins over the plain key, and nats.user stands while user_file does not exist (a NATS
    # user name changes only in a rotation: one password per user name); "{user}" in
    # password_file is the current user ("/etc/paiju/secrets/nats/{user}-password")
    user_file: str = ""
    password_file: str = ""
    token_file: str = ""
    credentials_poll_seconds: float = 5.0   # how often those files are checked for a change
    connect_timeout: float = 2.0
    replicas: int = 1          # JetStream stream and bucket replicas (3 on a prod cluster)
    # readiness fails at once while NATS is unreachable; liveness fails once it has been
    # unreachable this long (the pod is then restarted)
    liveness_seconds: float = 60.0


@dataclass(frozen=True)
class LobbyConfig:
    host: str = "127.0.0.1"
    port: int = 50051
    metrics_port: int = 9101
    token_secret: str = ""
    # signing key rotation (services/lobby/tokens.py, Keyring): the id of token_secret (empty:
    # its tokens carry no key id), and the previous key, accepted until token_previous_until
    # (Unix seconds: the overlap in which tokens it signed stay valid)
    token_key_id: str = ""
    token_previous_secret: str = ""
    token_previous_key_id: str = ""
    token_previous_until: float = 0.0
    legacy_md5: bool = False
    heartbeat_seconds: int = 15
    offline_after_seconds: int = 45
    reconnect_grace_seconds: int = 120
    chat_max_len: int = 200
    chat_per_minute: int = 20
    geo_alert_meters: int = 100
    dev_profiles: bool = True
    dismiss_vote_seconds: int = 90
    idle_room_seconds: int = 1800
    ws_port: int = 8080          # WebSocket front door and static web client; -1 = off
    # CIDRs of reverse proxies / ingresses whose X-Forwarded-For is believed (empty: none)
    trusted_proxies: tuple[str, ...] = ()
    # read-only operator console (HTTP + JSON API) on a port of its own, never public:
    # -1 = off, 0 = a free port; its API needs ``Authorization: Bearer <console_token>``
    console_port: int = -1
    console_token: str = ""
    # the console's write actions (add robots, dismiss, kick, mute; audited in records):
    # only with this token; empty = the console stays read-only
    console_admin_token: str = ""
    # SIGTERM: stop accepting, send every client a Reconnect frame, close after this long
    drain_seconds: float = 2.0
    # TLS on the public ports (gRPC Connect and WebSocket): certificate and key (PEM);
    # empty = plaintext (dev, or TLS ended at an ingress)
    public_cert_file: str = ""
    public_key_file: str = ""
    # Player limits, per lobby replica (docs/services.md, "Lobby: limits"); 0 turns one off. Beyond
    # a rate the request gets ERR_RATE_LIMITED saying what and when to try again.
    logins_per_ip_per_minute: int = 300      # login attempts from one client IP
    creates_per_user_per_minute: int = 20    # rooms created by one user (quick start too)
    creates_per_ip_per_minute: int = 120     # rooms created from one client IP
    joins_per_user_per_minute: int = 60      # JoinRoom by id and quick start, per user
    room_change_seconds: float = 5.0         # room-list pushes: each room at most once per this long
    # a connection not logged in this long after it opened is closed (on the WebSocket port
    # the HTTP request must also be complete by then)
    login_deadline_seconds: float = 10.0
    max_connections_per_ip: int = 256        # open connections (gRPC and WebSocket) per IP
    max_connections: int = 10000             # open connections in all
    # dev guest login: ``POST /guest`` on the WebSocket port answers a short-lived token for
    # a fresh guest id (services/common/reserved.py); refused in prod (_validate)
    guest_login: bool = False
    guest_token_seconds: int = 14400
    # spectators (观战) get a room's public messages this many positions late (0 = live)
    spectator_delay: int = 0
    # rated matchmaking (services/lobby/matchmaker.py): the active matcher's pass period,
    # its lease in the match bucket (a standby lobby takes over when it lapses), how long a
    # ticket may wait before it is timed out, after how long an unranked queue's oldest
    # ticket gets robots in its free seats (-1 = never), how many stakes a player's coins
    # must cover, and the hands of a matched room
    match_tick_seconds: float = 1.0
    match_lease_seconds: float = 5.0
    match_timeout_seconds: float = 300.0
    match_robot_fill_seconds: float = -1.0
    match_stake_cover: int = 20
    match_total_hands: int = 8
    match_stranger_tables_per_day: int = 3   # strangers seated together at most this often a day


@dataclass(frozen=True)
class TableConfig:
    host: str = "127.0.0.1"
    port: int = 50052
    metrics_port: int = 9102
    instance: str = ""
    advertise: str = ""
    turn_seconds: float = 20
    window_seconds: float = 10
    alone_seconds: float = 15
    entrust_cancels: int = 3
    entrust_delay_seconds: float = 1.0
    lease_ttl_seconds: int = 10
    arbiter_timeout_seconds: float = 0.5
    # SIGTERM: hand every room to a live table that is not draining, within this bound
    drain_seconds: float = 20.0
    # between hands, seats not ready this long after a hand ended are readied (0 = never)
    ready_seconds: float = 30.0
    # a room's creator may seat robots (AddRobots) in its free seats
    robots_allowed: bool = False


def _dial(address: str, host: str, port: int) -> str:
    """Where other services reach a service: its ``address`` key, else host:port (a wildcard
    bind host is reached on loopback)."""
    if address:
        return address
    return f"{'127.0.0.1' if host in ('0.0.0.0', '::', '') else host}:{port}"


class _Dialled:
    """A service other services dial: its ``address`` key, else host:port."""

    host: str
    port: int
    address: str

    @property
    def dial(self) -> str:
        return _dial(self.address, self.host, self.port)


@dataclass(frozen=True)
class ArbiterConfig(_Dialled):
    host: str = "127.0.0.1"
    port: int = 50053
    metrics_port: int = 9103
    # where the previous release's tables dial its Decide stream, e.g. "arbiter:50053"
    # (empty: host:port); this release's tables ask over NATS and never dial it
    address: str = ""


@dataclass(frozen=True)
class RecordsConfig(_Dialled):
    host: str = "127.0.0.1"
    port: int = 50054
    metrics_port: int = 9104
    database_url: str = "sqlite+aiosqlite:///var/paiju.db"
    # PostgreSQL password apart from the URL: the file is read each time a connection opens,
    # so a rotated password (ALTER ROLE ... PASSWORD, then the new file) is used by the next
    # connection while open sessions go on (docs/runbooks.md, "Rotate the database password");
    # a file that does not exist (an optional Secret key) leaves the URL's password
    database_password: str = ""
    database_password_file: str = ""
    # during a rotation: the password still in force, tried when the new one is refused
    # (optional file: absent = none)
    database_previous_password_file: str = ""
    ack_wait_seconds: float = 10.0   # a settlement not acknowledged in this time is redelivered
    address: str = ""          # dial address for lobbies, e.g. "records:50054" (empty: host:port)


@dataclass(frozen=True)
class TlsConfig:
    # mutual TLS between services: this service's certificate and key (PEM), and the CA of
    # the internal certificates; an empty ca_file turns internal TLS off (dev, test)
    cert_file: str = ""
    key_file: str = ""
    ca_file: str = ""
    # with internal TLS on: a plaintext port that answers health checks only (the kubelet's
    # gRPC probes cannot present a certificate); -1 = off
    probe_port: int = -1
    # prod refuses to start without internal TLS (require_internal_tls); true is the explicit
    # opt-out (e.g. a service mesh does mutual TLS instead), logged at every start
    allow_plaintext_in_prod: bool = False


@dataclass(frozen=True)
class Config:
    env: str = "dev"
    log: LogConfig = field(default_factory=LogConfig)
    nats: NatsConfig = field(default_factory=NatsConfig)
    lobby: LobbyConfig = field(default_factory=LobbyConfig)
    table: TableConfig = field(default_factory=TableConfig)
    arbiter: ArbiterConfig = field(default_factory=ArbiterConfig)
    records: RecordsConfig = field(default_factory=RecordsConfig)
    tls: TlsConfig = field(default_factory=TlsConfig)

    def service(self, name: str) -> Any:
        return getattr(self, name)


_SHORT_ENV = {"DATABASE_URL": ("records", "database_url"), "NATS_URL": ("nats", "url")}
_STRINGS = tuple[str, ...]
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _coerce(value: Any, typ: Any, where: str) -> Any:
    """Turn a TOML or environment value into ``typ``; ConfigError when it does not fit.
    A list of strings is a TOML array, or in the environment one comma-separated string."""
    if typ == _STRINGS:
        if isinstance(value, str):
            return tuple(item.strip() for item in value.split(",") if item.strip())
        if isinstance(value, list) and all(isinstance(item, str) for item in value):
            return tuple(item.strip() for item in value)
        raise ConfigError(f"{where}: {value!r} is not a list of strings")
    try:
        if typ is bool:
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text in _TRUE:
                return True
            if text in _FALSE:
                return False
            raise ValueError
        if typ is int:
            if isinstance(value, bool):
                raise ValueError
            if isinstance(value, float) and not value.is_integer():
                raise ValueError
            return int(str(value).strip()) if isinstance(value, str) else int(value)
        if typ is float:
            if isinstance(value, bool):
                raise ValueError
            return float(value)
        if typ is str:
            if not isinstance(value, str):
                raise ValueError
            return value
    except (TypeError, ValueError):
        raise ConfigError(f"{where}: {value!r} is not a valid {typ.__name__}") from None
    raise ConfigError(f"{where}: unsupported type {typ!r}")


# keys that a rotation sets only for a while: given as ``<key>_file``, a missing file means
# "not set" (a Kubernetes Secret key marked optional) instead of an error
OPTIONAL_FILES: frozenset[tuple[type, str]] = frozenset(
    (LobbyConfig, key) for key in ("token_key_id", "token_previous_secret",
                                   "token_previous_key_id", "token_previous_until"))


def read_secret_file(path: str, where: str = "secret file") -> str:
    """The value a mounted secret file holds: its text without one trailing newline (what
    ``echo`` and ``kubectl create secret --from-file`` leave). ConfigError when unreadable."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read {path!r} ({exc.strerror or exc})") from None
    return text[:-1] if text.endswith("\n") else text


def _from_files(section: Any, values: Mapping[str, Any], where: str) -> dict[str, Any]:
    """Replace ``<key>_file`` (for a key that has no ``_file`` key of its own) by ``<key>``
    with the file's content; both in one layer is an error."""
    known = {f.name for f in fields(section)}
    out: dict[str, Any] = {}
    for key, value in values.items():
        stem = key[:-len("_file")] if key.endswith("_file") else ""
        if key in known or not stem or stem not in known or is_dataclass(getattr(section, stem)):
            out[key] = value
            continue
        if stem in values:
            raise ConfigError(f"{where}.{key}: {stem} is given too; give one of them")
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(f"{where}.{key}: expected a file path, got {value!r}")
        path = value.strip()
        if (type(section), stem) in OPTIONAL_FILES and not Path(path).exists():
            continue
        out[stem] = read_secret_file(path, f"{where}.{key}")
    return out


def _apply(section: Any, values: Mapping[str, Any], where: str) -> Any:
    hints = get_type_hints(type(section))
    known = {f.name for f in fields(section)}
    changes: dict[str, Any] = {}
    values = _from_files(section, values, where)
    for key, value in values.items():
        if key not in known:
            raise ConfigError(f"{where}.{key}: unknown key (known: {', '.join(sorted(known))})")
        typ = hints[key]
        current = getattr(section, key)
        if is_dataclass(current):
            if not isinstance(value, Mapping):
                raise ConfigError(f"{where}.{key}: expected a table")
            changes[key] = _apply(current, value, f"{where}.{key}")
        else:
            changes[key] = _coerce(value, typ, f"{where}.{key}")
    return replace(section, **changes)


def _env_overrides(environ: Mapping[str, str]) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for name, value in environ.items():
        if name in _SHORT_ENV:
            sec, key = _SHORT_ENV[name]
            out.setdefault(sec, {})[key] = value
        elif name.startswith("PAIJU_") and "__" in name:
            sec, _, key = name[len("PAIJU_"):].partition("__")
            out.setdefault(sec.lower(), {})[key.lower()] = value
    return out


def load_config(env: str | None = None, *, environ: Mapping[str, str] | None = None,
                path: Path | None = None) -> Config:
    """Load ``config/<env>.toml`` and apply environment overrides; validate everything."""
    environ = os.environ if environ is None else environ
    env = env or environ.get("PAIJU_ENV", "dev")
    if path is None:
        if env not in ENVIRONMENTS:
            raise ConfigError(f"PAIJU_ENV={env!r}: expected one of {', '.join(ENVIRONMENTS)}")
        path = CONFIG_DIR / f"{env}.toml"
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: configuration file not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from None
    cfg: Config = _apply(Config(), data, path.name)
    overrides = _env_overrides(environ)
    for section, values in overrides.items():
        if not hasattr(cfg, section) or not is_dataclass(getattr(cfg, section)):
            raise ConfigError(f"environment: unknown section {section!r} in a PAIJU_ variable")
        cfg = replace(cfg, **{section: _apply(getattr(cfg, section), values,
                                              f"environment {section}")})
    _validate(cfg)
    return cfg


DEV_TOKEN_SECRET = "dev-secret-change-me"   # config/dev.toml's and test.toml's: public
MIN_PROD_SECRET = 16


def require_token_secret(cfg: Config) -> None:
    """The lobby refuses to start in prod without a login token secret of its own: the
    public dev secret (anyone could mint a token for any user with it) or a short one is
    refused. Everywhere: key ids of the rotation well formed and apart."""
    c = cfg.lobby
    for key in ("token_key_id", "token_previous_key_id"):
        value = getattr(c, key)
        if value and not re.fullmatch(r"[A-Za-z0-9_-]{1,32}", value):   # tokens.KEY_ID
            raise ConfigError(f"lobby.{key}: 1-32 of A-Z a-z 0-9 _ -, got {value!r}")
    if c.token_previous_secret and c.token_previous_key_id == c.token_key_id \
            and c.token_key_id:
        raise ConfigError("lobby.token_previous_key_id: must differ from token_key_id")
    if cfg.env != "prod":
        return
    secret = cfg.lobby.token_secret
    if not secret:
        raise ConfigError("lobby.token_secret: required in prod (set PAIJU_LOBBY__TOKEN_SECRET)")
    if secret == DEV_TOKEN_SECRET:
        raise ConfigError("lobby.token_secret: the public dev secret is not allowed in prod "
                          "(set PAIJU_LOBBY__TOKEN_SECRET to a long random secret)")
    if len(secret) < MIN_PROD_SECRET:
        raise ConfigError(f"lobby.token_secret: at least {MIN_PROD_SECRET} characters in prod")
    previous = cfg.lobby.token_previous_secret
    if previous and (previous == DEV_TOKEN_SECRET or len(previous) < MIN_PROD_SECRET
                     or previous == secret):
        raise ConfigError("lobby.token_previous_secret: a long random secret in prod, not the "
                          "dev one, and not the current token_secret")


def require_internal_tls(cfg: Config) -> bool:
    """Fail closed: in prod a service refuses to start without internal mutual TLS
    (``tls.ca_file``, with ``cert_file`` and ``key_file``): without it table, records and
    arbiter would serve every inter-service call (Table.CreateRoom, Records.GetReplay, ...) to
    any caller without an identity, and the lobby and the table would dial them in
    plaintext. ``tls.allow_plaintext_in_prod = true`` is the explicit opt-out; True means it
    is in force (the caller logs it), False that there is nothing to say."""
    if cfg.env != "prod" or cfg.tls.ca_file:
        return False
    if cfg.tls.allow_plaintext_in_prod:
        return True
    raise ConfigError("tls.ca_file, tls.cert_file, tls.key_file: internal mutual TLS is "
                      "required in prod (PAIJU_TLS__CA_FILE, ..._CERT_FILE, ..._KEY_FILE; "
                      "deploy/README.md, TLS); to run without it on purpose set "
                      "PAIJU_TLS__ALLOW_PLAINTEXT_IN_PROD=true")


DEV_CONSOLE_TOKEN = "dev-console-token"   # config/dev.toml's; refused outside dev
DEV_CONSOLE_ADMIN_TOKEN = "dev-console-admin-token"   # the same for write actions


def require_console_token(cfg: Config) -> None:
    """The operator console (``lobby.console_port`` >= 0) refuses to start without a token,
    and outside dev with the well-known dev token. Checked by the console itself (only the
    lobby runs it), so other services sharing the file are not held up by these keys."""
    c = cfg.lobby
    if c.console_port < 0:
        return
    if not c.console_token.strip():
        raise ConfigError("lobby.console_token: required when lobby.console_port is on "
                          "(set PAIJU_LOBBY__CONSOLE_TOKEN, or console_port = -1)")
    if cfg.env != "dev" and c.console_token == DEV_CONSOLE_TOKEN:
        raise ConfigError(f"lobby.console_token: the dev token is not allowed in {cfg.env} "
                          "(set PAIJU_LOBBY__CONSOLE_TOKEN to a secret)")
    admin = c.console_admin_token.strip()
    if admin and admin == c.console_token.strip():
        raise ConfigError("lobby.console_admin_token: must differ from lobby.console_token "
                          "(reading must not grant writing)")
    if admin and cfg.env != "dev" and admin == DEV_CONSOLE_ADMIN_TOKEN:
        raise ConfigError(f"lobby.console_admin_token: the dev token is not allowed in "
                          f"{cfg.env} (set PAIJU_LOBBY__CONSOLE_ADMIN_TOKEN to a secret, or "
                          "leave it empty: read-only)")


def _url_has_password(url: str) -> bool:
    """Whether a URL carries a password (a NATS URL: also a user or token)."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return False
    return bool(parts.password) or (bool(parts.username) and parts.scheme.startswith("nats"))


def _validate_credentials(cfg: Config) -> None:
    """Credentials apart from the URLs: NATS_URL carries no user, password or token in prod
    (they would sit in the environment and in every log line that prints the URL), and a
    credential is given once (URL or key, key or file)."""
    n = cfg.nats
    in_url = [u for u in n.url.split(",") if _url_has_password(u)]
    given = [k for k in ("user", "password", "token", "user_file", "password_file",
                         "token_file") if getattr(n, k)]
    if in_url and cfg.env == "prod":
        raise ConfigError("nats.url: credentials inside the URL are refused in prod: give "
                          "nats.user and nats.password_file (or nats.token_file) instead")
    if in_url and given:
        raise ConfigError(f"nats.url carries credentials and {', '.join('nats.' + k for k in given)}"
                          " is set too: give them once")
    for key in ("password", "token"):   # nats.user is the default when user_file is absent
        if getattr(n, key) and getattr(n, f"{key}_file"):
            raise ConfigError(f"nats.{key} and nats.{key}_file are both set: give one")
    has_user = bool(n.user or n.user_file)
    has_password = bool(n.password or n.password_file)
    if has_user != has_password:
        raise ConfigError("nats.user (or user_file) and nats.password (or password_file) go "
                          "together")
    if has_password and (n.token or n.token_file):
        raise ConfigError("nats: a user and password, or a token, not both")
    if n.credentials_poll_seconds <= 0:
        raise ConfigError("nats.credentials_poll_seconds: must be positive")
    r = cfg.records
    if r.database_password and r.database_password_file:
        raise ConfigError("records.database_password and records.database_password_file are "
                          "both set: give one")
    if (r.database_password or (r.database_password_file
                                and Path(r.database_password_file).exists())) and \
            _url_has_password(r.database_url):
        raise ConfigError("records.database_url carries a password and "
                          "records.database_password(_file) is set too: give it once")


def _validate(cfg: Config) -> None:
    for name in ("lobby", "table", "arbiter", "records"):
        sec = getattr(cfg, name)
        for port_name in ("port", "metrics_port"):
            port = getattr(sec, port_name)
            if not 0 <= port <= 65535:
                raise ConfigError(f"{name}.{port_name}: {port} is not a TCP port")
    if cfg.log.level.upper() not in {"DEBUG", "INFO", "WARNING", "ERROR"}:
        raise ConfigError(f"log.level: {cfg.log.level!r} is not DEBUG/INFO/WARNING/ERROR")
    if not -1 <= cfg.lobby.ws_port <= 65535:
        raise ConfigError(f"lobby.ws_port: {cfg.lobby.ws_port} is not a TCP port (-1 = off)")
    if not -1 <= cfg.lobby.console_port <= 65535:
        raise ConfigError(f"lobby.console_port: {cfg.lobby.console_port} is not a TCP port "
                          "(-1 = off)")
    for cidr in cfg.lobby.trusted_proxies:
        try:
            ipaddress.ip_network(cidr.strip(), strict=True)
        except ValueError as exc:
            raise ConfigError(f"lobby.trusted_proxies: {cidr!r} is not a CIDR ({exc})") from None
    for key in ("logins_per_ip_per_minute", "creates_per_user_per_minute",
                "creates_per_ip_per_minute", "joins_per_user_per_minute", "room_change_seconds",
                "login_deadline_seconds", "max_connections_per_ip", "max_connections",
                "drain_seconds"):
        if getattr(cfg.lobby, key) < 0:
            raise ConfigError(f"lobby.{key}: {getattr(cfg.lobby, key)} must not be negative "
                              "(0 turns a limit off)")
    for key in ("drain_seconds", "ready_seconds"):
        if getattr(cfg.table, key) < 0:
            raise ConfigError(f"table.{key}: must not be negative")
    if cfg.env == "prod" and cfg.lobby.guest_login:
        raise ConfigError("lobby.guest_login: not allowed in prod (anyone could log in without "
                          "an account)")
    if cfg.lobby.guest_token_seconds <= 0:
        raise ConfigError("lobby.guest_token_seconds: must be positive")
    if cfg.lobby.spectator_delay < 0:
        raise ConfigError("lobby.spectator_delay: must not be negative (0 = live)")
    if not (cfg.lobby.match_tick_seconds > 0 and cfg.lobby.match_lease_seconds
            > cfg.lobby.match_tick_seconds and cfg.lobby.match_timeout_seconds > 0):
        raise ConfigError("lobby.match_*: tick and timeout positive, lease longer than a tick")
    if cfg.lobby.match_stake_cover < 0 or cfg.lobby.match_total_hands < 1:
        raise ConfigError("lobby.match_stake_cover >= 0 and match_total_hands >= 1")
    if cfg.lobby.match_stranger_tables_per_day < 0:
        raise ConfigError("lobby.match_stranger_tables_per_day >= 0")
    _validate_credentials(cfg)
    if cfg.nats.liveness_seconds <= 0:
        raise ConfigError("nats.liveness_seconds: must be positive")
    if not 1 <= cfg.nats.replicas <= 5:
        raise ConfigError(f"nats.replicas: {cfg.nats.replicas} must be 1..5")
    if cfg.table.turn_seconds <= 0 or cfg.table.window_seconds <= 0:
        raise ConfigError("table.turn_seconds and table.window_seconds must be positive")
