"""Login tokens: ``"<uid>.<expiry_unix>.<hex hmac>"`` signed with HMAC-SHA256, optionally with
a generation, ``"<uid>.<expiry_unix>.<gen>.<hex hmac>"``, and the seed's legacy check
``secret_string == md5(token + secret)`` (docs/services.md, "Login tokens").

Key ids: a token signed by a named key carries its id before the signature,
``"<uid>.<expiry_unix>[.<gen>].<key id>:<hex hmac>"`` (the HMAC covers the same body). A lobby
holds a :class:`Keyring`: the current key (signs new tokens, verifies its own) and, during a
rotation, the previous key until a configured time (the overlap), so tokens signed before
the rotation keep working until then and no player is logged out. A token without a key id
is checked against the current key, and the previous one during the overlap.

The generation is how a sign-in revokes the tokens issued before it: whoever mints tokens
(an account service) gives each new sign-in of a user a higher generation, and the lobbies
refuse a token of a lower generation than the newest they have seen for that user (a token
without one is generation 0). See services/lobby/hub.py, ``Generations``.

Run ``python -m services.lobby.tokens --user 1001 [--ttl S] [--gen N] [--secret S]`` to print
a token; the secret defaults to ``lobby.token_secret`` of the current configuration.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import re
import time
from dataclasses import dataclass

from paiju.v1 import common_pb2

DEFAULT_TTL = 86400
KEY_ID = re.compile(r"[A-Za-z0-9_-]{1,32}")


class TokenError(Exception):
    """A login credential that is not accepted; ``code`` is the client ErrorCode."""

    code = common_pb2.ERR_BAD_TOKEN


class BadToken(TokenError):
    code = common_pb2.ERR_BAD_TOKEN


class TokenExpired(TokenError):
    code = common_pb2.ERR_TOKEN_EXPIRED


def decimal(text: str) -> bool:
    """ASCII digits only: ``str.isdigit`` also accepts "²" or "٣", which ``int`` refuses or
    reads as another number."""
    return text.isascii() and text.isdigit()


def _signature(secret: str, body: str) -> str:
    return hmac.new(secret.encode(), body.encode(), hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class Keyring:
    """The signing keys a lobby accepts: ``secret`` (id ``key_id``; empty: the tokens it
    signs carry no key id, as before key ids), and ``previous_secret`` (id
    ``previous_key_id``) until ``previous_until`` (Unix seconds), the rotation's overlap."""

    secret: str
    key_id: str = ""
    previous_secret: str = ""
    previous_key_id: str = ""
    previous_until: float = 0.0

    def candidates(self, key_id: str, now: float) -> list[str]:
        """The secrets that may have signed a token naming ``key_id`` ("": none named)."""
        previous = bool(self.previous_secret) and now < self.previous_until
        if not key_id:
            return [self.secret] + ([self.previous_secret] if previous else [])
        if key_id == self.key_id:
            return [self.secret]
        if previous and key_id == self.previous_key_id:
            return [self.previous_secret]
        return []


@dataclass(frozen=True)
class Claims:
    """What a valid token says: the user, its expiry (unix seconds) and generation."""

    user_id: int
    expiry: int
    gen: int = 0


def mint(user_id: int, secret: str, ttl: int = DEFAULT_TTL, *, now: float | None = None,
         gen: int = 0, key_id: str = "") -> str:
    """A token for ``user_id`` valid for ``ttl`` seconds from ``now``; ``gen`` > 0 gives it
    that generation (a newer sign-in's token revokes those of lower generations); a
    ``key_id`` names the key ``secret`` is (see :class:`Keyring`)."""
    if not secret:
        raise ValueError("token secret is empty")
    if key_id and not KEY_ID.fullmatch(key_id):
        raise ValueError(f"key id must be 1-32 of A-Z a-z 0-9 _ -, got {key_id!r}")
    if user_id <= 0:
        raise ValueError(f"user id must be positive, got {user_id}")
    if gen < 0:
        raise ValueError(f"generation must not be negative, got {gen}")
    expiry = int((time.time() if now is None else now) + ttl)
    body = f"{user_id}.{expiry}" if gen == 0 else f"{user_id}.{expiry}.{gen}"
    signature = _signature(secret, body)
    return f"{body}.{key_id}:{signature}" if key_id else f"{body}.{signature}"


def claims(token: str, secret: str | Keyring, *, now: float | None = None) -> Claims:
    """The claims of a valid token; BadToken (shape, signature, a key that is unknown or
    past its overlap) or TokenExpired otherwise. ``secret``: one key, or a :class:`Keyring`."""
    ring = secret if isinstance(secret, Keyring) else Keyring(secret)
    if not ring.secret:
        raise BadToken("token secret is not configured")
    now = time.time() if now is None else now
    parts = token.split(".")
    if len(parts) not in (3, 4) or not all(parts):
        raise BadToken("token is not <uid>.<expiry>[.<generation>].[<key id>:]<signature>")
    *fields, signed = parts
    if not all(decimal(f) for f in fields):
        raise BadToken("token uid, expiry and generation must be decimal")
    key_id, _, signature = signed.rpartition(":")
    if ":" in signed and not KEY_ID.fullmatch(key_id):
        raise BadToken("token key id is malformed")
    keys = ring.candidates(key_id, now)
    if not keys:
        raise BadToken(f"token signed by a key this lobby does not accept ({key_id!r}): "
                       "unknown, or retired after its overlap")
    body = ".".join(fields)
    if not any(hmac.compare_digest(_signature(key, body).encode(), signature.encode())
               for key in keys):
        raise BadToken("token signature does not match")
    expiry = int(fields[1])
    if expiry <= now:
        raise TokenExpired("token expired")
    user_id = int(fields[0])
    if user_id <= 0:
        raise BadToken("token user id must be positive")
    gen = int(fields[2]) if len(fields) == 3 else 0
    if len(fields) == 3 and gen <= 0:
        raise BadToken("token generation must be positive")
    return Claims(user_id, expiry, gen)


def token_id(token: str) -> str:
    """A token's identity for revocation (hub.Revocations): a digest, never the token, so
    announcing or logging it gives nobody a credential."""
    return hashlib.sha256(token.encode()).hexdigest()[:32]


def verify(token: str, secret: str, *, now: float | None = None) -> int:
    """The user id of a valid token; BadToken (shape, signature) or TokenExpired otherwise."""
    return claims(token, secret, now=now).user_id


def legacy_secret_string(token: str, secret: str) -> str:
    """The seed's client check value: hex md5 of token followed by the shared secret."""
    return hashlib.md5((token + secret).encode(), usedforsecurity=False).hexdigest()


def verify_legacy(token: str, secret_string: str, secret: str) -> int:
    """Legacy mode: the token is the decimal user id and secret_string its md5 check."""
    if not decimal(token) or int(token) <= 0:
        raise BadToken("legacy token must be a positive decimal user id")
    expected = legacy_secret_string(token, secret)
    if not hmac.compare_digest(expected.encode(), secret_string.lower().encode()):
        raise BadToken("md5 check failed")
    return int(token)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m services.lobby.tokens",
                                     description="print a signed lobby login token")
    parser.add_argument("--user", type=int, required=True, help="user id")
    parser.add_argument("--ttl", type=int, default=DEFAULT_TTL, help="seconds of validity")
    parser.add_argument("--gen", type=int, default=0,
                        help="generation (a sign-in's number: revokes tokens of lower ones)")
    parser.add_argument("--secret", default=None, help="default: lobby.token_secret from config")
    parser.add_argument("--key-id", default=None,
                        help="the key's id (default: lobby.token_key_id from config)")
    parser.add_argument("--env", default=None, help="config environment (dev, test, prod)")
    args = parser.parse_args(argv)
    secret, key_id = args.secret, args.key_id
    if secret is None or key_id is None:
        from services.common.config import load_config

        lobby = load_config(args.env).lobby
        secret = lobby.token_secret if secret is None else secret
        key_id = lobby.token_key_id if key_id is None else key_id
    try:
        print(mint(args.user, secret, args.ttl, gen=args.gen, key_id=key_id))
    except ValueError as exc:
        parser.error(str(exc))


if __name__ == "__main__":
    main()
