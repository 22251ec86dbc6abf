"""Issue 24, fail closed: in prod a service without internal mutual TLS refuses to start,
unless ``tls.allow_plaintext_in_prod`` says so explicitly, which every start logs. A real
gRPC server (start_service) on loopback."""

from __future__ import annotations

import logging
from dataclasses import replace

import pytest

from services.common.config import ConfigError, load_config, require_internal_tls
from services.common.server import start_service

TLS_FILES = {"PAIJU_TLS__CA_FILE": "/etc/paiju/tls/ca.crt",
             "PAIJU_TLS__CERT_FILE": "/etc/paiju/tls/tls.crt",
             "PAIJU_TLS__KEY_FILE": "/etc/paiju/tls/tls.key"}


def test_prod_requires_internal_tls_or_the_explicit_opt_out() -> None:
    with pytest.raises(ConfigError, match="PAIJU_TLS__ALLOW_PLAINTEXT_IN_PROD"):
        require_internal_tls(load_config("prod", environ={}))
    assert require_internal_tls(load_config("prod", environ=TLS_FILES)) is False
    opted = load_config("prod", environ={"PAIJU_TLS__ALLOW_PLAINTEXT_IN_PROD": "true"})
    assert require_internal_tls(opted) is True
    for env in ("dev", "test"):   # plaintext by design (deploy/README.md, TLS)
        assert require_internal_tls(load_config(env, environ={})) is False


async def test_a_prod_service_without_tls_does_not_start(caplog: pytest.LogCaptureFixture) -> None:
    prod = load_config("prod", environ={})
    with pytest.raises(ConfigError, match="internal mutual TLS is required in prod"):
        await start_service("arbiter", "127.0.0.1", 0, -1, lambda server: [], cfg=prod)

    opted = replace(prod, tls=replace(prod.tls, allow_plaintext_in_prod=True))
    with caplog.at_level(logging.WARNING, logger="paiju.server"):
        host = await start_service("arbiter", "127.0.0.1", 0, -1, lambda server: [], cfg=opted)
    try:
        assert host.port > 0
        (warning,) = [r for r in caplog.records if "internal TLS is OFF" in r.getMessage()]
        assert warning.levelno == logging.WARNING and warning.service == "arbiter"
    finally:
        await host.stop(0)
