"""Secrets as mounted files (services/common/config.py): any key as ``<key>_file``, the
rotating credentials as ``*_file`` keys read at connection time, and no password inside
NATS_URL in prod."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.common.bus import NatsAuth
from services.common.config import ConfigError, load_config

PROD = {"PAIJU_ENV": "prod", "PAIJU_TLS__ALLOW_PLAINTEXT_IN_PROD": "true"}


def secret(tmp_path: Path, name: str, value: str) -> str:
    path = tmp_path / name
    path.write_text(value + "\n", encoding="utf-8")   # as `kubectl create secret` from echo
    return str(path)


def test_any_key_as_a_file(tmp_path: Path) -> None:
    cfg = load_config("test", environ={
        "PAIJU_LOBBY__TOKEN_SECRET_FILE": secret(tmp_path, "token", "from-a-file-1234567"),
        "PAIJU_LOBBY__CONSOLE_TOKEN_FILE": secret(tmp_path, "console", "console-from-file"),
        "PAIJU_RECORDS__DATABASE_URL_FILE": secret(tmp_path, "url",
                                                   "postgresql+asyncpg://paiju@db/paiju"),
        "PAIJU_LOBBY__TOKEN_PREVIOUS_UNTIL_FILE": secret(tmp_path, "until", "1700000000"),
    })
    assert cfg.lobby.token_secret == "from-a-file-1234567"   # one trailing newline dropped
    assert cfg.lobby.console_token == "console-from-file"
    assert cfg.records.database_url == "postgresql+asyncpg://paiju@db/paiju"
    assert cfg.lobby.token_previous_until == 1700000000.0     # typed like the key


def test_a_file_key_in_toml(tmp_path: Path) -> None:
    toml = tmp_path / "x.toml"
    toml.write_text(f'[lobby]\ntoken_secret_file = "{secret(tmp_path, "t", "toml-file-secret")}"\n',
                    encoding="utf-8")
    assert load_config("test", environ={}, path=toml).lobby.token_secret == "toml-file-secret"


def test_missing_file_is_an_error_naming_key_and_path(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope")
    with pytest.raises(ConfigError, match=r"token_secret_file.*nope"):
        load_config("test", environ={"PAIJU_LOBBY__TOKEN_SECRET_FILE": missing})


def test_rotation_keys_are_optional_files(tmp_path: Path) -> None:
    """A Secret key marked optional and absent: the rotation key stays unset."""
    cfg = load_config("test", environ={
        "PAIJU_LOBBY__TOKEN_PREVIOUS_SECRET_FILE": str(tmp_path / "absent"),
        "PAIJU_LOBBY__TOKEN_KEY_ID_FILE": str(tmp_path / "absent-too"),
    })
    assert cfg.lobby.token_previous_secret == "" and cfg.lobby.token_key_id == ""


def test_value_and_file_in_one_layer_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="give one"):
        load_config("test", environ={
            "PAIJU_LOBBY__TOKEN_SECRET": "x" * 20,
            "PAIJU_LOBBY__TOKEN_SECRET_FILE": secret(tmp_path, "t", "y" * 20)})


def test_the_environment_file_overrides_the_toml_value(tmp_path: Path) -> None:
    cfg = load_config("dev", environ={
        "PAIJU_LOBBY__TOKEN_SECRET_FILE": secret(tmp_path, "t", "env-file-secret-123")})
    assert cfg.lobby.token_secret == "env-file-secret-123"


def test_existing_file_keys_keep_their_meaning(tmp_path: Path) -> None:
    """tls.cert_file and friends are paths, not secrets read in."""
    cfg = load_config("test", environ={"PAIJU_TLS__CERT_FILE": "/etc/paiju/tls/tls.crt"})
    assert cfg.tls.cert_file == "/etc/paiju/tls/tls.crt"


def test_prod_refuses_a_password_in_nats_url(tmp_path: Path) -> None:
    token = secret(tmp_path, "t", "p" * 32)
    env = {**PROD, "PAIJU_LOBBY__TOKEN_SECRET_FILE": token}
    with pytest.raises(ConfigError, match="nats.url: credentials inside the URL"):
        load_config(environ={**env, "NATS_URL": "nats://lobby:pw@nats:4222"})
    with pytest.raises(ConfigError, match="nats.url: credentials inside the URL"):
        load_config(environ={**env, "NATS_URL": "nats://n0:4222,nats://lobby:pw@n1:4222"})
    cfg = load_config(environ={**env, "NATS_URL": "nats://nats:4222",
                               "PAIJU_NATS__USER": "lobby",
                               "PAIJU_NATS__PASSWORD_FILE": secret(tmp_path, "pw", "s3cret")})
    assert cfg.nats.password_file.endswith("pw") and cfg.nats.password == ""  # read at connect
    auth = NatsAuth.of(cfg.nats)
    assert auth.connect_options()["password"]() == "s3cret"


@pytest.mark.parametrize("env, match", [
    ({"NATS_URL": "nats://a:b@h:4222", "PAIJU_NATS__USER": "a",
      "PAIJU_NATS__PASSWORD": "b"}, "give them once"),
    ({"PAIJU_NATS__USER": "a"}, "go together"),
    ({"PAIJU_NATS__PASSWORD_FILE": "/x"}, "go together"),
    ({"PAIJU_NATS__USER": "a", "PAIJU_NATS__PASSWORD": "b", "PAIJU_NATS__TOKEN": "t"},
     "not both"),
    ({"PAIJU_NATS__TOKEN": "t", "PAIJU_NATS__TOKEN_FILE": "/t"}, "give one"),
    ({"PAIJU_RECORDS__DATABASE_PASSWORD": "a", "PAIJU_RECORDS__DATABASE_PASSWORD_FILE": "/a"},
     "give one"),
    ({"DATABASE_URL": "postgresql+asyncpg://u:pw@h/d",
      "PAIJU_RECORDS__DATABASE_PASSWORD": "a"}, "give it once"),
])
def test_credentials_given_once(env: dict[str, str], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        load_config("test", environ=env)


def test_database_password_file_and_a_url_password(tmp_path: Path) -> None:
    """Both: refused; the file absent (an optional Secret key): the URL's password stands."""
    env = {"DATABASE_URL": "postgresql+asyncpg://u:pw@h/d",
           "PAIJU_RECORDS__DATABASE_PASSWORD_FILE": str(tmp_path / "database-password")}
    assert load_config("test", environ=env).records.database_url.endswith("u:pw@h/d")
    secret(tmp_path, "database-password", "other")
    with pytest.raises(ConfigError, match="give it once"):
        load_config("test", environ=env)


def test_nats_auth_reads_the_file_at_each_call(tmp_path: Path) -> None:
    user = secret(tmp_path, "user", "table")
    pw = secret(tmp_path, "pw", "old")
    auth = NatsAuth(user_file=user, password_file=pw)
    opts = auth.connect_options()
    before = auth.fingerprint()
    assert (opts["user"](), opts["password"]()) == ("table", "old")
    Path(pw).write_text("new\n", encoding="utf-8")
    assert opts["password"]() == "new" and auth.fingerprint() != before
    assert NatsAuth(token_file=secret(tmp_path, "tok", "t0k")).connect_options()["token"]() \
        == "t0k"
    assert NatsAuth().connect_options() == {}


def test_the_user_file_falls_back_to_the_user(tmp_path: Path) -> None:
    """An optional Secret key ``<svc>-user``: absent, the configured user stands."""
    pw = secret(tmp_path, "pw", "pw")
    cfg = load_config("test", environ={"PAIJU_NATS__USER": "lobby",
                                       "PAIJU_NATS__USER_FILE": str(tmp_path / "user"),
                                       "PAIJU_NATS__PASSWORD_FILE": pw})
    opts = NatsAuth.of(cfg.nats).connect_options()
    assert opts["user"]() == "lobby"
    secret(tmp_path, "user", "lobby-2")
    assert opts["user"]() == "lobby-2"


def test_the_password_file_may_follow_the_user(tmp_path: Path) -> None:
    """``{user}`` in nats.password_file: the password of whichever user the user file names
    (a rotation to another NATS user changes one file)."""
    secret(tmp_path, "table-password", "old")
    auth = NatsAuth(user="table", user_file=str(tmp_path / "user"),
                    password_file=str(tmp_path / "{user}-password"))
    opts = auth.connect_options()
    assert (opts["user"](), opts["password"]()) == ("table", "old")
    before = auth.fingerprint()
    secret(tmp_path, "table-b-password", "new")
    assert auth.fingerprint() == before            # another user's file: not in force yet
    secret(tmp_path, "user", "table-b")
    assert (opts["user"](), opts["password"]()) == ("table-b", "new")
    assert auth.fingerprint() != before
