"""Login tokens: ``"<uid>.<expiry_unix>.<hex hmac>"`` signed with HMAC-SHA256, optionally with
a generation, ``"<uid>.<expiry_unix>.<gen>.<hex hmac>"``, and the seed's legacy check
``secret_string == md5(token + secret)`` (docs/services.md, "Login tokens").

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
import time
from dataclasses import dataclass

from paiju.v1 import common_pb2

DEFAULT_TTL = 86400


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
class Claims:
    """What a valid token says: the user, its expiry (unix seconds) and generation."""

    user_id: int
    expiry: int
    gen: int = 0


def mint(user_id: int, secret: str, ttl: int = DEFAULT_TTL, *, now: float | None = None,
         gen: int = 0) -> str:
    """A token for ``user_id`` valid for ``ttl`` seconds from ``now``; ``gen`` > 0 gives it
    that generation (a newer sign-in's token revokes those of lower generations)."""
    if not secret:
        raise ValueError("token secret is empty")
    if user_id <= 0:
        raise ValueError(f"user id must be positive, got {user_id}")
    if gen < 0:
        raise ValueError(f"generation must not be negative, got {gen}")
    expiry = int((time.time() if now is None else now) + ttl)
    body = f"{user_id}.{expiry}" if gen == 0 else f"{user_id}.{expiry}.{gen}"
    return f"{body}.{_signature(secret, body)}"


def claims(token: str, secret: str, *, now: float | None = None) -> Claims:
    """The claims of a valid token; BadToken (shape, signature) or TokenExpired otherwise."""
    if not secret:
        raise BadToken("token secret is not configured")
    parts = token.split(".")
    if len(parts) not in (3, 4) or not all(parts):
        raise BadToken("token is not <uid>.<expiry>[.<generation>].<signature>")
    *fields, signature = parts
    if not all(decimal(f) for f in fields):
        raise BadToken("token uid, expiry and generation must be decimal")
    expected = _signature(secret, ".".join(fields))
    if not hmac.compare_digest(expected.encode(), signature.encode()):
        raise BadToken("token signature does not match")
    expiry = int(fields[1])
    if expiry <= (time.time() if now is None else now):
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
    parser.add_argument("--env", default=None, help="config environment (dev, test, prod)")
    args = parser.parse_args(argv)
    secret = args.secret
    if secret is None:
        from services.common.config import load_config

        secret = load_config(args.env).lobby.token_secret
    try:
        print(mint(args.user, secret, args.ttl, gen=args.gen))
    except ValueError as exc:
        parser.error(str(exc))


if __name__ == "__main__":
    main()
