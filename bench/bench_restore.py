"""How long restoring records' database takes: ``python -m bench.bench_restore [--quick]``.

A private PostgreSQL (initdb + pg_ctl, tests/support/pgctl.py) and an embedded nats-server;
N settlements (5,000; 1,000 with --quick) of four hands and a final per room, each hand with
200 replay events of 60 random bytes (a played XueZhan hand stores about that many), are
published to SETTLE. Then, timed, the steps of docs/runbooks.md ("Restore the records
database"):

1. reconcile into an empty database: every settlement new (the replay rate that bounds how
   long a restore from an old backup takes);
2. ``deploy/db_backup.py backup`` of that database (pg_dump, manifest);
3. ``deploy/db_backup.py restore --create`` into a fresh database of the same server;
4. reconcile over the restored database: every settlement already there (the cost of
   replaying from too early, e.g. the whole stream when no floor is known).

Writes bench/reports/restore.md.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import nats

from bench.common import command, machine, parse_options, write_report
from services.common.bus import SETTLE_SUBJECT, ensure_streams
from services.common.natsd import EmbeddedNats
from services.records.reconcile import reconcile
from tests.support.pgctl import PrivatePostgres

ROOT = Path(__file__).resolve().parents[1]
EVENTS = 200
DELTAS = [[3, -1, -1, -1], [-2, 2, 0, 0], [0, 0, -4, 4], [1, 1, -1, -1]]


def seats(room: int) -> list[int]:
    return [10_000 + (room % 50) * 4 + i for i in range(4)]


def hand(room: int, hand_no: int) -> dict[str, Any]:
    deltas = DELTAS[hand_no - 1]
    payments = [{"reason": "win", "payer": s, "payee": deltas.index(max(deltas)),
                 "amount": -d, "ref": ""} for s, d in enumerate(deltas) if d < 0]
    events = [{"i": i, "kind": "draw", "to": None if i % 3 else i % 4, "event_id": 9600,
               "frame": base64.b64encode(os.urandom(60)).decode(), "json": "{}"}
              for i in range(EVENTS)]
    return {"room_id": room, "hand_no": hand_no, "final": False, "game": "xuezhan",
            "base_score": 1, "seats": seats(room), "nicknames": [f"p{u}" for u in seats(room)],
            "deltas": deltas, "payments": payments, "details": {}, "seed": "01" * 32, "dealer": 0,
            "next_dealer": 0, "settled_at": "2026-12-04T03:04:05Z", "events": events}


def final(room: int) -> dict[str, Any]:
    totals = [sum(col) for col in zip(*DELTAS, strict=True)]
    return {"room_id": room, "hand_no": 0, "final": True, "game": "xuezhan",
            "base_score": 1, "seats": seats(room), "nicknames": [f"p{u}" for u in seats(room)],
            "totals": totals, "hands_played": 4, "reason": 2,
            "doc": "all hands have been played", "settled_at": "2026-12-04T03:05:00Z"}


async def publish(url: str, count: int) -> tuple[int, int]:
    nc = await nats.connect(url)
    js = nc.jetstream()
    await ensure_streams(js, room_log=False)
    room, n = 1_000_000, 0
    while n < count:
        room += 1
        for message in [*(hand(room, h) for h in range(1, 5)), final(room)]:
            await js.publish(SETTLE_SUBJECT, json.dumps(message).encode())
            n += 1
    state = (await js.stream_info("SETTLE")).state
    await nc.close()
    return state.last_seq, state.bytes


def tool(args: list[str], env: dict[str, str]) -> tuple[float, str]:
    started = time.monotonic()
    run = subprocess.run([sys.executable, "deploy/db_backup.py", *args], cwd=ROOT, env=env,
                         capture_output=True, text=True, check=False)
    if run.returncode != 0:
        raise SystemExit(run.stderr)
    return time.monotonic() - started, run.stdout


async def main() -> None:
    options = parse_options(__doc__)
    count = 1000 if options.quick else 5000
    pg = PrivatePostgres().start()
    natsd = EmbeddedNats().start()
    try:
        live = pg.createdb("records")
        published, size = await publish(natsd.url, count)
        started = time.monotonic()
        fill = await reconcile(live, natsd.url, None, do_migrate=True)
        fill_s = time.monotonic() - started
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("PAIJU_")},
               "PAIJU_ENV": "test", "DATABASE_URL": live}
        backup_s, out = tool(["backup", "--out", str(pg.dir / "backups")], env)
        manifest = json.loads(out)
        restored = pg.url("restored")
        restore_s, _ = tool(["restore", str(pg.dir / "backups" / manifest["dump"]), "--create"],
                            {**env, "DATABASE_URL": restored})
        started = time.monotonic()
        again = await reconcile(restored, natsd.url, None)
        again_s = time.monotonic() - started
    finally:
        natsd.close()
        pg.stop()
    assert fill.written == published and again.duplicates == published
    rows = manifest["row_counts"]
    lines = [
        "# Restoring records' database", "",
        f"{command('bench_restore', options.quick)} on {machine()}, {os.cpu_count()} cores, "
        f"{manifest['server_version'].split()[0]} (private, fsync off); "
        f"{published} settlements ({size / 1e6:.0f} MB in SETTLE), {EVENTS} replay events "
        "per hand. Rows: "
        + ", ".join(f"{k} {v}" for k, v in rows.items() if k != "alembic_version") + ".", "",
        "| step | seconds | rate |", "|---|---|---|",
        f"| reconcile, every settlement new | {fill_s:.1f} | {published / fill_s:.0f} /s |",
        f"| `db_backup.py backup` (dump {manifest['bytes'] / 1e6:.1f} MB) | {backup_s:.1f} | |",
        f"| `db_backup.py restore --create` | {restore_s:.1f} | |",
        f"| reconcile, every settlement already there | {again_s:.1f} | "
        f"{published / again_s:.0f} /s |", "",
        "The backup and restore times include the script's start (about 0.5 s). A restore from "
        "a backup of age T replays what records wrote in T at the first rate, from the "
        "manifest's floor; without a floor (no NATS_URL at backup time) the whole stream is "
        "read, the part already in the dump at the second rate.",
    ]
    write_report(options.report("restore.md"), lines)


if __name__ == "__main__":
    asyncio.run(main())
