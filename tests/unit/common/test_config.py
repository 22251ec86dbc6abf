"""Configuration: files per environment, environment overrides, clear errors."""

from pathlib import Path

import pytest

from services.common.config import ConfigError, load_config, require_token_secret


def test_each_environment_file_loads() -> None:
    dev = load_config("dev", environ={})
    test = load_config("test", environ={})
    assert dev.env == "dev" and test.env == "test"
    assert test.table.turn_seconds < dev.table.turn_seconds
    prod = load_config("prod", environ={"PAIJU_LOBBY__TOKEN_SECRET": "s3cret"})
    assert prod.lobby.token_secret == "s3cret"
    assert prod.records.database_url.startswith("postgresql+asyncpg://")


def test_environment_overrides_file_values() -> None:
    cfg = load_config("dev", environ={
        "PAIJU_TABLE__TURN_SECONDS": "7.5",
        "PAIJU_LOBBY__LEGACY_MD5": "yes",
        "PAIJU_LOBBY__PORT": "6000",
        "DATABASE_URL": "sqlite+aiosqlite:///x.db",
        "NATS_URL": "nats://127.0.0.1:1",
    })
    assert cfg.table.turn_seconds == 7.5
    assert cfg.lobby.legacy_md5 is True
    assert cfg.lobby.port == 6000
    assert cfg.records.database_url == "sqlite+aiosqlite:///x.db"
    assert cfg.nats.url == "nats://127.0.0.1:1"


@pytest.mark.parametrize(("name", "value", "fragment"), [
    ("PAIJU_TABLE__TURN_SECONDS", "soon", "table.turn_seconds: 'soon' is not a valid float"),
    ("PAIJU_LOBBY__PORT", "70000", "lobby.port: 70000 is not a TCP port"),
    ("PAIJU_LOBBY__LEGACY_MD5", "maybe", "lobby.legacy_md5"),
    ("PAIJU_LOBBY__NO_SUCH_KEY", "1", "unknown key"),
    ("PAIJU_NOSECTION__X", "1", "unknown section"),
])
def test_bad_environment_value_is_a_clear_error(name: str, value: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_config("dev", environ={name: value})
    assert fragment in str(err.value)


def test_bad_file_and_unknown_environment(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[table]\nturn_seconds = "fast"\n')
    with pytest.raises(ConfigError, match="bad.toml.table.turn_seconds"):
        load_config(path=bad, environ={})
    broken = tmp_path / "broken.toml"
    broken.write_text("[table\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(path=broken, environ={})
    with pytest.raises(ConfigError, match="PAIJU_ENV"):
        load_config("staging", environ={})


def test_prod_lobby_requires_a_token_secret() -> None:
    cfg = load_config("prod", environ={})  # other services do not need the lobby's secret
    with pytest.raises(ConfigError, match="token_secret"):
        require_token_secret(cfg)
    require_token_secret(load_config("prod", environ={
        "PAIJU_LOBBY__TOKEN_SECRET": "a-long-random-operator-secret"}))


def test_prod_lobby_refuses_the_public_dev_secret_and_short_ones() -> None:
    # issue 9, defect 7: with config/dev.toml's secret anyone can mint a token for any user
    for secret, why in (("dev-secret-change-me", "public dev secret"), ("short", "16")):
        cfg = load_config("prod", environ={"PAIJU_LOBBY__TOKEN_SECRET": secret})
        with pytest.raises(ConfigError, match=why):
            require_token_secret(cfg)
    require_token_secret(load_config("dev", environ={}))   # dev keeps its public secret


def test_dial_addresses() -> None:
    prod = load_config("prod", environ={"PAIJU_RECORDS__ADDRESS": "records:50054"})
    assert prod.records.dial == "records:50054"
    assert prod.arbiter.dial == "127.0.0.1:50053"  # a wildcard bind is dialled on loopback
    assert load_config("dev", environ={}).records.dial == "127.0.0.1:50054"


def test_limits_must_not_be_negative() -> None:
    for key in ("PAIJU_LOBBY__MAX_CONNECTIONS", "PAIJU_LOBBY__JOINS_PER_USER_PER_MINUTE",
                "PAIJU_TABLE__READY_SECONDS"):
        with pytest.raises(ConfigError, match="negative"):
            load_config("test", environ={key: "-1"})
    assert load_config("test", environ={"PAIJU_LOBBY__MAX_CONNECTIONS": "0"}).lobby.max_connections == 0
