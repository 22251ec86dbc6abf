"""Lobby login tokens: HMAC mint/verify, tampering, expiry, the legacy md5 check, the CLI."""

from __future__ import annotations

import hashlib
import hmac
import subprocess
import sys

import pytest

from paiju.v1 import common_pb2
from services.lobby.tokens import (
    BadToken,
    Claims,
    TokenExpired,
    claims,
    legacy_secret_string,
    mint,
    verify,
    verify_legacy,
)

SECRET = "s3cret"
NOW = 1_800_000_000.0


def test_minted_token_verifies_to_its_user() -> None:
    token = mint(1001, SECRET, 60, now=NOW)
    assert verify(token, SECRET, now=NOW) == 1001
    assert verify(token, SECRET, now=NOW + 59) == 1001


def test_token_has_the_documented_shape() -> None:
    token = mint(42, SECRET, 100, now=NOW)
    uid, expiry, sig = token.split(".")
    assert (uid, expiry) == ("42", str(int(NOW) + 100))
    body = f"{uid}.{expiry}".encode()
    assert sig == hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()


def test_a_token_with_a_generation_has_the_documented_shape() -> None:
    token = mint(42, SECRET, 100, now=NOW, gen=7)
    uid, expiry, gen, sig = token.split(".")
    assert (uid, expiry, gen) == ("42", str(int(NOW) + 100), "7")
    body = f"{uid}.{expiry}.{gen}".encode()
    assert sig == hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    assert claims(token, SECRET, now=NOW) == Claims(42, int(NOW) + 100, 7)
    assert verify(token, SECRET, now=NOW) == 42
    # without one: generation 0, the three-part token of before
    assert claims(mint(42, SECRET, 100, now=NOW), SECRET, now=NOW).gen == 0


@pytest.mark.parametrize("tamper", [
    lambda t: t.replace(".7.", ".8.", 1),               # a higher generation, old signature
    lambda t: t.replace(".7.", ".", 1),                 # the generation dropped
    lambda t: t.replace(".7.", ".0.", 1),               # zero is not a generation
    lambda t: t.replace(".7.", ".x.", 1),
])
def test_a_tampered_generation_is_bad(tamper) -> None:  # type: ignore[no-untyped-def]
    token = mint(1001, SECRET, 60, now=NOW, gen=7)
    with pytest.raises(BadToken):
        claims(tamper(token), SECRET, now=NOW)


def test_a_generation_zero_token_signed_as_such_is_refused() -> None:
    body = f"1001.{int(NOW) + 60}.0"
    signed = f"{body}.{hmac.new(SECRET.encode(), body.encode(), hashlib.sha256).hexdigest()}"
    with pytest.raises(BadToken):
        claims(signed, SECRET, now=NOW)
    with pytest.raises(ValueError):
        mint(1001, SECRET, 60, gen=-1)


def test_expired_token_is_refused_with_its_own_code() -> None:
    token = mint(1001, SECRET, 60, now=NOW)
    with pytest.raises(TokenExpired) as err:
        verify(token, SECRET, now=NOW + 60)
    assert err.value.code == common_pb2.ERR_TOKEN_EXPIRED


@pytest.mark.parametrize("tamper", [
    lambda t: t.replace("1001.", "1002.", 1),          # other user, old signature
    lambda t: t[:-1] + ("0" if t[-1] != "0" else "1"),  # flipped signature digit
    lambda t: t.rsplit(".", 1)[0],                      # no signature
    lambda t: t + ".x",                                 # extra part
    lambda t: "abc." + t.split(".", 1)[1],              # non-numeric uid
    lambda t: "",
])
def test_tampered_token_is_bad(tamper) -> None:  # type: ignore[no-untyped-def]
    token = mint(1001, SECRET, 60, now=NOW)
    with pytest.raises(BadToken) as err:
        verify(tamper(token), SECRET, now=NOW)
    assert err.value.code == common_pb2.ERR_BAD_TOKEN


def test_token_signed_with_another_secret_is_bad() -> None:
    with pytest.raises(BadToken):
        verify(mint(1001, "other", 60, now=NOW), SECRET, now=NOW)


def test_empty_secret_refuses_to_mint_or_verify() -> None:
    with pytest.raises(ValueError):
        mint(1001, "", 60)
    with pytest.raises(BadToken):
        verify("1.2.3", "")


def test_legacy_md5_good_and_bad() -> None:
    good = hashlib.md5(b"1001" + SECRET.encode()).hexdigest()
    assert legacy_secret_string("1001", SECRET) == good
    assert verify_legacy("1001", good, SECRET) == 1001
    assert verify_legacy("1001", good.upper(), SECRET) == 1001
    with pytest.raises(BadToken):
        verify_legacy("1001", hashlib.md5(b"1001other").hexdigest(), SECRET)
    with pytest.raises(BadToken):
        verify_legacy("1002", good, SECRET)
    with pytest.raises(BadToken):
        verify_legacy("abc", legacy_secret_string("abc", SECRET), SECRET)


@pytest.mark.parametrize("uid", ["\u00b2", "\u0661\u0662", "\uff11\uff12", "1\u00b2"])
def test_non_ascii_digits_are_a_bad_token_not_a_crash(uid: str) -> None:
    """'²' passes str.isdigit() and then int() raises; '١٢' (Arabic-Indic) or '１２'
    (full width) int() would read as 12: a uid is ASCII decimal or nothing."""
    with pytest.raises(BadToken):   # the md5 check is right: only the uid's shape refuses it
        verify_legacy(uid, legacy_secret_string(uid, SECRET), SECRET)
    body = f"{uid}.{int(NOW) + 60}"
    signed = f"{body}.{hmac.new(SECRET.encode(), body.encode(), hashlib.sha256).hexdigest()}"
    with pytest.raises(BadToken):
        verify(signed, SECRET, now=NOW)


def test_cli_prints_a_token_that_verifies() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "services.lobby.tokens", "--user", "1001", "--ttl", "300",
         "--secret", SECRET], capture_output=True, text=True, check=True, timeout=60)
    assert verify(out.stdout.strip(), SECRET) == 1001


def test_cli_prints_a_token_with_a_generation() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "services.lobby.tokens", "--user", "1001", "--gen", "4",
         "--secret", SECRET], capture_output=True, text=True, check=True, timeout=60)
    assert claims(out.stdout.strip(), SECRET).gen == 4


def test_cli_default_secret_comes_from_config() -> None:
    from services.common.config import load_config

    out = subprocess.run(
        [sys.executable, "-m", "services.lobby.tokens", "--user", "7", "--env", "test"],
        capture_output=True, text=True, check=True, timeout=60)
    assert verify(out.stdout.strip(), load_config("test").lobby.token_secret) == 7
