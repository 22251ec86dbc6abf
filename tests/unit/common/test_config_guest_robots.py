"""The keys of guest login, robots and spectators (services/common/config.py): on in dev and
test, off by default; guest login is refused in prod like the dev token secret."""

from __future__ import annotations

import pytest

from services.common.config import ConfigError, load_config


def test_dev_and_test_allow_guests_and_robots_prod_does_not() -> None:
    for env in ("dev", "test"):
        cfg = load_config(env, environ={})
        assert cfg.lobby.guest_login and cfg.table.robots_allowed
        assert cfg.lobby.spectator_delay == 0
    prod = load_config("prod", environ={})
    assert not prod.lobby.guest_login and not prod.table.robots_allowed
    assert prod.lobby.spectator_delay > 0


def test_guest_login_is_refused_in_prod() -> None:
    with pytest.raises(ConfigError, match="guest_login"):
        load_config("prod", environ={"PAIJU_LOBBY__GUEST_LOGIN": "true"})
    assert load_config("prod", environ={"PAIJU_TABLE__ROBOTS_ALLOWED": "true"}).table.robots_allowed


def test_bad_values_are_refused() -> None:
    with pytest.raises(ConfigError, match="spectator_delay"):
        load_config("dev", environ={"PAIJU_LOBBY__SPECTATOR_DELAY": "-1"})
    with pytest.raises(ConfigError, match="guest_token_seconds"):
        load_config("dev", environ={"PAIJU_LOBBY__GUEST_TOKEN_SECONDS": "0"})
