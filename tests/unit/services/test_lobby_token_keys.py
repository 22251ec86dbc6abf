"""Issue 24: the token signing key rotates with key ids. New tokens name the key that signed
them; a lobby accepts its current key, and the previous one until the configured end of the
overlap; tokens without a key id (issued before key ids) keep working with either key
during the overlap; an unknown or retired key, or a key id swapped onto another key's
signature, is refused."""

from __future__ import annotations

import pytest

from services.common.config import ConfigError, load_config, require_token_secret
from services.lobby import tokens
from services.lobby.login import keyring

OLD, NEW = "old-secret-0123456789abcdef", "new-secret-0123456789abcdef"
NOW = 1_800_000_000.0
RING = tokens.Keyring(NEW, "k2", OLD, "k1", previous_until=NOW + 3600)


def test_a_token_names_the_key_that_signed_it() -> None:
    tok = tokens.mint(7, NEW, 600, now=NOW, key_id="k2")
    body, signed = tok.rsplit(".", 1)
    assert signed.startswith("k2:") and body == f"7.{int(NOW) + 600}"
    assert tokens.claims(tok, RING, now=NOW).user_id == 7
    assert tokens.mint(7, NEW, 600, now=NOW).count(":") == 0   # no key id: as before
    with pytest.raises(ValueError):
        tokens.mint(7, NEW, 600, now=NOW, key_id="k 2")


def test_the_previous_key_is_accepted_until_the_end_of_the_overlap() -> None:
    old = tokens.mint(7, OLD, 7200, now=NOW, key_id="k1", gen=3)
    got = tokens.claims(old, RING, now=NOW + 3599)
    assert (got.user_id, got.gen) == (7, 3)
    with pytest.raises(tokens.BadToken, match="retired after its overlap"):
        tokens.claims(old, RING, now=NOW + 3600)
    # a lobby that never had the previous key refuses it at once
    with pytest.raises(tokens.BadToken, match="does not accept"):
        tokens.claims(old, tokens.Keyring(NEW, "k2"), now=NOW)


def test_tokens_without_a_key_id_verify_with_the_current_or_the_previous_key() -> None:
    before_ids = tokens.mint(7, OLD, 7200, now=NOW)
    current = tokens.mint(8, NEW, 7200, now=NOW)
    assert tokens.claims(before_ids, RING, now=NOW).user_id == 7
    assert tokens.claims(current, RING, now=NOW + 5000).user_id == 8
    with pytest.raises(tokens.BadToken, match="signature does not match"):
        tokens.claims(before_ids, RING, now=NOW + 3600)          # the overlap is over
    assert tokens.claims(current, NEW, now=NOW).user_id == 8    # a plain secret still works


def test_a_key_id_cannot_vouch_for_another_key_s_signature() -> None:
    forged = tokens.mint(7, OLD, 600, now=NOW, key_id="k1").replace("k1:", "k2:")
    with pytest.raises(tokens.BadToken, match="signature does not match"):
        tokens.claims(forged, RING, now=NOW)
    unknown = tokens.mint(7, "someone-else-0123456789", 600, now=NOW, key_id="k9")
    with pytest.raises(tokens.BadToken, match="does not accept"):
        tokens.claims(unknown, RING, now=NOW)
    body, signature = tokens.mint(7, NEW, 600, now=NOW).rsplit(".", 1)
    with pytest.raises(tokens.BadToken, match="key id is malformed"):
        tokens.claims(f"{body}.k!:{signature}", RING, now=NOW)


def test_the_lobby_configuration_gives_the_keyring_and_checks_it() -> None:
    env = {"PAIJU_LOBBY__TOKEN_SECRET": NEW, "PAIJU_LOBBY__TOKEN_KEY_ID": "k2",
           "PAIJU_LOBBY__TOKEN_PREVIOUS_SECRET": OLD, "PAIJU_LOBBY__TOKEN_PREVIOUS_KEY_ID": "k1",
           "PAIJU_LOBBY__TOKEN_PREVIOUS_UNTIL": str(NOW + 3600)}
    cfg = load_config("prod", environ=env)
    require_token_secret(cfg)
    assert keyring(cfg.lobby) == RING
    for bad in ({"PAIJU_LOBBY__TOKEN_PREVIOUS_SECRET": NEW},            # the same key twice
                {"PAIJU_LOBBY__TOKEN_PREVIOUS_SECRET": "short"},
                {"PAIJU_LOBBY__TOKEN_PREVIOUS_KEY_ID": "k2"},           # the same id twice
                {"PAIJU_LOBBY__TOKEN_KEY_ID": "not valid"}):
        with pytest.raises(ConfigError):
            require_token_secret(load_config("prod", environ={**env, **bad}))
