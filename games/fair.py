"""Provably fair deals (issue 14): commit to a server seed, mix in the players' seeds, and
turn the result into every shuffle, die and draw of the hand. Pure: no I/O, no clock, and no
randomness of its own. The complete specification, with worked examples, is
``docs/fairness.md``; the constants and functions below are its reference implementation.

What a table does (the only caller that holds a server seed)::

    server_seed = secrets.token_bytes(fair.SEED_BYTES)     # the caller draws it: games/ never
    commit = fair.commitment(room_id, hand_no, server_seed)  # published before the deal
    seeds = fair.check_client_seeds(received)  # per seat; None or b"" for a seat that sent none
    seed = fair.hand_seed(room_id, hand_no, server_seed, seeds)
    dealer = fair.first_dealer(seed)           # only when the room draws its first dealer
    state = variant.new_hand(options, seed, dealer)
    ...                                        # at settlement:
    reveal = fair.reveal(room_id, hand_no, server_seed, seeds)

Engines accept a seed of either kind (:data:`Seed`): a 32-byte hand seed (this module's
generator, :class:`FairStream`) or, for tests, tools and benches, an ``int`` (the
SplitMix64 stream of :mod:`games.rng` under the same label). :func:`stream` picks the right
one.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping, Sequence
from typing import Any

from games.engine import BadInput
from games.rng import Stream, derive

VERSION = 1
SEED_BYTES = 32          # server seed and hand seed
MAX_CLIENT_SEED = 64     # bytes a seat may contribute
SEATS = 4
SEAT_COUNTS = (3, 4)   # the seats of a table: three or four
COMMIT_TAG = b"paiju/fair/v1/commit"
HAND_TAG = b"paiju/fair/v1/hand"
# The labelled sub-streams of a hand seed (docs/fairness.md, "Sub-streams").
LABELS = ("wall", "deck", "dice", "dealer", "token")

Seed = int | bytes


class FairError(BadInput):
    """A seed, commitment or reveal that breaks docs/fairness.md (code ``bad_input``)."""


# ---------------------------------------------------------------------- inputs


def check_server_seed(seed: object) -> bytes:
    """``seed`` if it is exactly :data:`SEED_BYTES` bytes, else FairError."""
    if not isinstance(seed, bytes) or len(seed) != SEED_BYTES:
        raise FairError(f"a server seed is {SEED_BYTES} bytes, got {_describe(seed)}")
    return seed


def check_client_seed(seed: object) -> bytes:
    """A seat's contribution: at most :data:`MAX_CLIENT_SEED` bytes (``None`` or ``b""``:
    the seat sent none, and contributes the empty value)."""
    if seed is None:
        return b""
    if not isinstance(seed, bytes):
        raise FairError(f"a client seed is bytes, got {_describe(seed)}")
    if len(seed) > MAX_CLIENT_SEED:
        raise FairError(f"a client seed is at most {MAX_CLIENT_SEED} bytes, got {len(seed)}")
    return seed


def check_client_seeds(seeds: Sequence[bytes | None],
                       seats: int | None = None) -> tuple[bytes, ...]:
    """One checked client seed per seat, seat 0 first: ``seats`` of them, or (None) one per
    seat of a table of any of :data:`SEAT_COUNTS` (Dou Dizhu's three, the others' four)."""
    if isinstance(seeds, bytes | str) or (
            len(seeds) != seats if seats is not None else len(seeds) not in SEAT_COUNTS):
        raise FairError(f"client seeds: expected one per seat ({seats}), got {_describe(seeds)}")
    return tuple(check_client_seed(s) for s in seeds)


def _u64(value: object, name: str) -> bytes:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 1 << 64:
        raise FairError(f"{name} must be an integer in [0, 2**64), got {value!r}")
    return value.to_bytes(8, "big")


def _describe(value: object) -> str:
    if isinstance(value, bytes | list | tuple):
        return f"{type(value).__name__} of length {len(value)}"
    return type(value).__name__


# ---------------------------------------------------------------------- commit and combine


def commitment_input(room_id: int, hand_no: int, server_seed: bytes) -> bytes:
    """The committed bytes: COMMIT_TAG || 0x00 || room_id (u64 BE) || hand_no (u64 BE) ||
    server_seed (32 bytes) - 69 bytes in all."""
    return (COMMIT_TAG + b"\x00" + _u64(room_id, "room_id") + _u64(hand_no, "hand_no")
            + check_server_seed(server_seed))


def commitment(room_id: int, hand_no: int, server_seed: bytes) -> str:
    """SHA-256 of :func:`commitment_input`, as 64 lowercase hex digits (published
    before any client seed for the hand is taken: when the room is created or the previous
    hand settles; it reveals nothing about the seed before the reveal)."""
    return hashlib.sha256(commitment_input(room_id, hand_no, server_seed)).hexdigest()


def hand_seed_input(room_id: int, hand_no: int, server_seed: bytes,
                    client_seeds: Sequence[bytes | None]) -> bytes:
    """HAND_TAG || 0x00 || room_id (u64 BE) || hand_no (u64 BE) || server_seed (32 bytes) ||
    for each seat of the table, 0 first: len(client_seed) (one byte) || client_seed."""
    out = bytearray(HAND_TAG + b"\x00" + _u64(room_id, "room_id") + _u64(hand_no, "hand_no")
                    + check_server_seed(server_seed))
    for seed in check_client_seeds(client_seeds):
        out.append(len(seed))
        out += seed
    return bytes(out)


def hand_seed(room_id: int, hand_no: int, server_seed: bytes,
              client_seeds: Sequence[bytes | None]) -> bytes:
    """The 32-byte seed of the hand: SHA-256 of :func:`hand_seed_input`."""
    return hashlib.sha256(hand_seed_input(room_id, hand_no, server_seed, client_seeds)).digest()


# ---------------------------------------------------------------------- the generator


class FairStream(Stream):
    """The hand's generator for one labelled sub-stream.

    Block ``k`` is HMAC-SHA256(key = hand seed, message = label (ASCII) || 0x00 || k (u64
    BE)); its 32 bytes are four 64-bit big-endian words, so word ``w`` is bytes
    ``8*(w%4) .. 8*(w%4)+8`` of block ``w//4``. ``state`` counts the words used (a JSON-ready
    int, like :class:`~games.rng.Stream`'s). ``below`` (rejection sampling: a word x is used
    only when x < 2**64 - 2**64 % n, then x % n) and ``shuffle`` (Fisher-Yates from the last
    index down: for i = n-1 .. 1, swap i with below(i+1)) are :class:`~games.rng.Stream`'s.
    """

    __slots__ = ("key", "label", "_cached", "_block")

    def __init__(self, seed: bytes, label: str) -> None:
        self.key = check_server_seed(seed)
        if not label.isascii() or "\x00" in label or not label:
            raise FairError(f"a sub-stream label is non-empty ASCII without NUL: {label!r}")
        self.label = label.encode("ascii")
        self.state = 0
        self._cached = -1
        self._block = b""

    def block(self, k: int) -> bytes:
        """The 32 bytes of block ``k``."""
        return hmac.digest(self.key, self.label + b"\x00" + k.to_bytes(8, "big"), "sha256")

    def next64(self) -> int:
        k, w = divmod(self.state, 4)
        if k != self._cached:
            self._block, self._cached = self.block(k), k
        self.state += 1
        return int.from_bytes(self._block[8 * w : 8 * w + 8], "big")


def check_seed(seed: object) -> Seed:
    """A seed an engine accepts: an int (tests, tools) or 32 bytes (a hand seed); else BadInput."""
    if isinstance(seed, int) and not isinstance(seed, bool):
        return seed
    if isinstance(seed, bytes):
        return check_server_seed(seed)
    raise FairError(f"a seed is an int or {SEED_BYTES} bytes, got {_describe(seed)}")


def stream(seed: Seed, label: str) -> Stream:
    """The sub-stream ``label`` of a hand: :class:`FairStream` for a 32-byte seed; for an int
    seed the SplitMix64 stream ``Stream(derive(seed, label))``."""
    seed = check_seed(seed)
    if isinstance(seed, bytes):
        return FairStream(seed, label)
    return Stream(derive(seed, label))


def sub_seed(seed: Seed, label: str) -> int:
    """A 64-bit value for ``label``: the first word of the sub-stream for a 32-byte seed;
    ``derive(seed, label)`` for an int seed."""
    seed = check_seed(seed)
    if isinstance(seed, bytes):
        return FairStream(seed, label).next64()
    return derive(seed, label)


def first_dealer(seed: bytes, seats: int = SEATS) -> int:
    """The dealer of a room's first hand when the room draws it: ``below(seats)`` of
    "dealer" (four seats, or Dou Dizhu's three)."""
    return FairStream(seed, "dealer").below(seats)


# ---------------------------------------------------------------------- serialized forms


def seed_to_json(seed: Seed) -> int | str:
    """How engines keep a seed in serialized state: an int as it is, bytes as hex."""
    return seed.hex() if isinstance(seed, bytes) else seed


def seed_from_json(value: int | str) -> Seed:
    """The inverse of :func:`seed_to_json`."""
    return bytes.fromhex(value) if isinstance(value, str) else value


def reveal(room_id: int, hand_no: int, server_seed: bytes,
           client_seeds: Sequence[bytes | None]) -> dict[str, Any]:
    """The fields the settlement and the replay carry after the hand (hex strings)."""
    seeds = check_client_seeds(client_seeds)
    return {
        "fair_version": VERSION,
        "room_id": room_id,
        "hand_no": hand_no,
        "commitment": commitment(room_id, hand_no, server_seed),
        "server_seed": server_seed.hex(),
        "client_seeds": [s.hex() for s in seeds],
    }


def parse_hex(value: object, name: str) -> bytes:
    """Hex text as bytes; FairError naming ``name`` when it is not."""
    if not isinstance(value, str):
        raise FairError(f"{name}: expected a hex string, got {_describe(value)}")
    try:
        return bytes.fromhex(value)
    except ValueError:
        raise FairError(f"{name}: not hex: {value[:80]!r}") from None


def parse_reveal(data: Mapping[str, Any]) -> tuple[int, int, bytes, tuple[bytes, ...], str]:
    """``(room_id, hand_no, server_seed, client_seeds, commitment)`` from a reveal (or a
    replay carrying its fields); FairError on a missing or malformed field."""
    for name in ("room_id", "hand_no", "server_seed", "commitment"):
        if name not in data:
            raise FairError(f"{name}: missing")
    room_id, hand_no = data["room_id"], data["hand_no"]
    _u64(room_id, "room_id")
    _u64(hand_no, "hand_no")
    server = check_server_seed(parse_hex(data["server_seed"], "server_seed"))
    raw = data.get("client_seeds")
    if raw is None:
        raw = [""] * SEATS
    if not isinstance(raw, list):
        raise FairError(f"client_seeds: expected a list, got {_describe(raw)}")
    clients = check_client_seeds([parse_hex(s, f"client_seeds[{i}]") for i, s in enumerate(raw)])
    commit = data["commitment"]
    if not isinstance(commit, str):
        raise FairError(f"commitment: expected a hex string, got {_describe(commit)}")
    return room_id, hand_no, server, clients, commit.lower()
