"""Builders of SETTLE messages (paiju/contracts/settle.py), as JSON objects the way any
writer's bytes arrive, and database fixtures for the records tests. No tests here."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import random
import uuid
from collections.abc import Iterator
from typing import Any

PG_ADMIN_URL = os.environ.get("PAIJU_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")


def payments_for(deltas: list[int]) -> list[dict[str, Any]]:
    """Payments from losers to winners that net exactly to ``deltas`` (greedy matching)."""
    owe = [[seat, -d] for seat, d in enumerate(deltas) if d < 0]
    gain = [[seat, d] for seat, d in enumerate(deltas) if d > 0]
    out = []
    while owe and gain:
        amount = min(owe[0][1], gain[0][1])
        out.append({"reason": "hu", "payer": owe[0][0], "payee": gain[0][0],
                    "amount": amount, "ref": ""})
        owe[0][1] -= amount
        gain[0][1] -= amount
        if owe[0][1] == 0:
            owe.pop(0)
        if gain[0][1] == 0:
            gain.pop(0)
    return out


def hand_message(room_id: int, hand_no: int, seats: list[int], deltas: list[int], *,
                 events: list[dict[str, Any]] | None = None,
                 payments: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "room_id": room_id, "hand_no": hand_no, "final": False, "game": "xuezhan",
        "base_score": 1, "seats": seats, "nicknames": [f"p{uid}" for uid in seats],
        "deltas": deltas, "payments": payments_for(deltas) if payments is None else payments,
        "details": {"winners": [s for s, d in enumerate(deltas) if d > 0]},
        "seed": "2a" * 32, "dealer": 0, "next_dealer": 0, "settled_at": "2026-11-30T03:04:05Z",
        "events": events if events is not None else [],
    }


def final_message(room_id: int, seats: list[int], totals: list[int],
                  hands_played: int) -> dict[str, Any]:
    return {"room_id": room_id, "hand_no": 0, "final": True, "game": "xuezhan",
            "base_score": 1, "seats": seats, "nicknames": [f"p{uid}" for uid in seats],
            "totals": totals, "hands_played": hands_played, "reason": 2,
            "doc": "all hands have been played", "settled_at": "2026-11-30T04:00:00Z"}


def event(i: int, to: int | None, frame: bytes, kind: str = "draw") -> dict[str, Any]:
    return {"i": i, "kind": kind, "to": to, "event_id": 9600 + i,
            "frame": base64.b64encode(frame).decode(), "json": json.dumps({"i": i, "to": to})}


def encode(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode()


async def _admin(sql: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(PG_ADMIN_URL, timeout=3)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


def postgres_database() -> Iterator[str]:
    """A fresh PostgreSQL database (async URL), dropped afterwards; skips the test when the
    server at PAIJU_TEST_POSTGRES (default: postgres@127.0.0.1:5432/test) is unreachable."""
    import pytest

    name = f"paiju_test_{uuid.uuid4().hex[:12]}"
    try:
        asyncio.run(_admin(f'CREATE DATABASE "{name}"'))
    except Exception as exc:  # refused, timed out, no such role, asyncpg missing...
        pytest.skip(f"PostgreSQL not reachable at {PG_ADMIN_URL}: {exc!r}")
    base = PG_ADMIN_URL.rsplit("/", 1)[0].replace("postgresql://", "postgresql+asyncpg://")
    try:
        yield f"{base}/{name}"
    finally:
        asyncio.run(_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def random_settlements(rooms: list[int], hands: int, users: list[int],
                       seed: int) -> list[dict[str, Any]]:
    """``hands`` settled hands of each room, hand by hand across the rooms: four of
    ``users`` seated at random, zero-sum deltas, a public and a private event each."""
    rng = random.Random(seed)
    out = []
    for hand_no in range(1, hands + 1):
        for room in rooms:
            deltas = [rng.randint(-30, 30) for _ in range(3)]
            deltas.append(-sum(deltas))
            seats = rng.sample(users, 4)
            events = [event(0, None, b"deal"), event(1, rng.randrange(4), b"tiles")]
            out.append(hand_message(room, hand_no, seats, deltas, events=events))
    return out
