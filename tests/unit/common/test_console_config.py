"""The operator console's configuration keys: lobby.console_port and lobby.console_token."""

import pytest

from services.common.config import (
    DEV_CONSOLE_TOKEN,
    ConfigError,
    load_config,
    require_console_token,
)

PROD = {"PAIJU_LOBBY__TOKEN_SECRET": "s3cret"}


def test_defaults_per_environment() -> None:
    dev = load_config("dev", environ={})
    assert dev.lobby.console_port == 8090 and dev.lobby.console_token == DEV_CONSOLE_TOKEN
    require_console_token(dev)   # the fixed dev token is fine in dev
    for env, environ in (("test", {}), ("prod", PROD)):
        cfg = load_config(env, environ=environ)
        assert cfg.lobby.console_port == -1 and cfg.lobby.console_token == ""
        require_console_token(cfg)   # off: nothing required


def test_environment_overrides() -> None:
    cfg = load_config("prod", environ={**PROD, "PAIJU_LOBBY__CONSOLE_PORT": "9000",
                                       "PAIJU_LOBBY__CONSOLE_TOKEN": "a-long-random-secret"})
    assert cfg.lobby.console_port == 9000
    assert cfg.lobby.console_token == "a-long-random-secret"
    require_console_token(cfg)
    assert load_config("test", environ={"PAIJU_LOBBY__CONSOLE_PORT": "0"}).lobby.console_port == 0


@pytest.mark.parametrize(("value", "fragment"), [
    ("-2", "lobby.console_port: -2 is not a TCP port"),
    ("65536", "lobby.console_port: 65536 is not a TCP port"),
    ("eighty", "lobby.console_port: 'eighty' is not a valid int"),
    ("80.5", "lobby.console_port: '80.5' is not a valid int"),
])
def test_bad_port_is_a_clear_error(value: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_config("dev", environ={"PAIJU_LOBBY__CONSOLE_PORT": value})
    assert fragment in str(err.value)


@pytest.mark.parametrize(("env", "token", "fragment"), [
    ("prod", "", "lobby.console_token: required"),
    ("prod", "   ", "lobby.console_token: required"),
    ("prod", DEV_CONSOLE_TOKEN, "the dev token is not allowed in prod"),
    ("test", DEV_CONSOLE_TOKEN, "the dev token is not allowed in test"),
    ("dev", "", "lobby.console_token: required"),
])
def test_a_console_that_is_on_needs_a_real_token(env: str, token: str, fragment: str) -> None:
    cfg = load_config(env, environ={**PROD, "PAIJU_LOBBY__CONSOLE_PORT": "8090",
                                    "PAIJU_LOBBY__CONSOLE_TOKEN": token})
    with pytest.raises(ConfigError) as err:
        require_console_token(cfg)
    assert fragment in str(err.value)


def test_the_token_check_does_not_hold_up_other_services() -> None:
    # the table and the others load the same file: a console that is on without its token
    # is the lobby's problem (start_console refuses), not a load error
    cfg = load_config("prod", environ={**PROD, "PAIJU_LOBBY__CONSOLE_PORT": "8090"})
    assert cfg.lobby.console_port == 8090 and cfg.lobby.console_token == ""
