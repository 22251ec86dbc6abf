"""Reconcile a restored records database with the SETTLE stream: write the settlements the
database lacks, each exactly once (runbook: docs/runbooks.md, "Restore the records database").

    python -m services.records.reconcile --manifest var/backups/records-<time>.json
    python -m services.records.reconcile --from-seq 1234
    python -m services.records.reconcile --since 2026-12-04T03:00:00Z   # a point-in-time
                                                                         # recovery's target
    python -m services.records.reconcile                  # the whole stream

The database and NATS are ``DATABASE_URL`` and ``NATS_URL`` (or config/<env>.toml), as for
records. It reads SETTLE message by message (direct gets by sequence: no consumer is made,
the records durable is left as it is) from the first sequence the backup may lack (the
manifest's ``settle.ack_floor`` + 1: every settlement up to the floor was committed before
the dump's snapshot), or from the first settlement JetStream stored at or after ``--since``
(for a point-in-time recovery: its target time, less a few minutes), to the stream's last
sequence when it starts, and writes each with the
records writer. Exactly once comes from the writer, not from the start point: the hand row
is unique on room + hand and a settlement already there writes nothing (counted as a
duplicate), so replaying too much is harmless and replaying from too late is the only
mistake; hence the check that the stream still holds the start (its retention, ``max_age``
30 days by default, must reach back to the backup). Settlements published after the start
are delivered by records' own durable consumer, which the restored database answers with
duplicates or writes.

Prints one JSON line (from_seq, to_seq, written, duplicates, malformed, missing) and exits
0; 2 with ``reconcile: <CODE>: <message>`` when it cannot do its job.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from nats.js import JetStreamContext
from nats.js.errors import NotFoundError
from sqlalchemy.exc import DataError, IntegrityError

from services.common.bus import SETTLE_STREAM, connect
from services.common.config import NatsConfig, RecordsConfig, load_config
from services.records.db import engine_for, migrate
from services.records.migrate import code_head, current_revision, known_revisions, usable
from services.records.settlement import MalformedSettlement, parse_settlement
from services.records.store import SettlementWriter

log = logging.getLogger("paiju.records.reconcile")


class ReconcileError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


@dataclass
class Outcome:
    from_seq: int
    to_seq: int
    written: int = 0
    duplicates: int = 0
    malformed: int = 0
    missing: int = 0       # sequences the stream no longer holds inside the range (deleted)


def start_from_manifest(path: Path) -> int:
    """The first SETTLE sequence a backup may lack, from its manifest."""
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ReconcileError("MANIFEST", f"{path}: {exc}") from exc
    settle = manifest.get("settle")
    if not isinstance(settle, dict) or not isinstance(settle.get("ack_floor"), int):
        raise ReconcileError("MANIFEST", f"{path}: no SETTLE position "
                             f"({manifest.get('settle_error') or 'settle missing'}); "
                             "replay the whole stream (no --manifest)")
    return int(settle["ack_floor"]) + 1


async def first_since(js: JetStreamContext, since: datetime, first: int, last: int) -> int:
    """The first sequence in ``first..last`` whose message JetStream stored at or after
    ``since`` (``last + 1`` when none): a binary search over the stored times, which grow
    with the sequence (deleted sequences count as their next message)."""
    lo, hi = first, last + 1
    while lo < hi:
        mid = (lo + hi) // 2
        try:
            msg = await js.get_msg(SETTLE_STREAM, mid, subject="settle.*", next=True)
        except NotFoundError:     # nothing at or after mid
            hi = mid
            continue
        if msg.time is not None and msg.time >= since:
            hi = mid
        else:
            lo = (msg.seq or mid) + 1
    return lo


async def reconcile(database_url: str | RecordsConfig, nats_url: str | NatsConfig,
                    from_seq: int | None, *,
                    do_migrate: bool = False, since: datetime | None = None,
                    nats_wait: float = 15.0) -> Outcome:
    engine = engine_for(database_url)
    try:
        if do_migrate:
            await migrate(engine)
        revision = await current_revision(engine)
        if not usable(revision, code_head(), known_revisions()):
            raise ReconcileError("SCHEMA", f"database at revision {revision or 'none'}, this "
                                 f"code needs {code_head()}: run python -m "
                                 "services.records.migrate first (or --migrate)")
        try:
            # bus.connect retries without end (a service waits for NATS); a command gives up
            nc = await asyncio.wait_for(connect(nats_url, "records-reconcile"), nats_wait)
        except Exception as exc:
            where = nats_url.url if isinstance(nats_url, NatsConfig) else nats_url
            raise ReconcileError("NATS_UNREACHABLE", f"{where}: {exc!r}") from exc
        try:
            js = nc.jetstream()
            state = (await js.stream_info(SETTLE_STREAM)).state
            start = state.first_seq if from_seq is None else from_seq
            if since is not None:
                start = await first_since(js, since, state.first_seq, state.last_seq)
            if start < state.first_seq and state.messages:
                raise ReconcileError(
                    "RETENTION", f"{SETTLE_STREAM} starts at sequence {state.first_seq}, the "
                    f"database may lack {start} onwards: settlements {start}.."
                    f"{state.first_seq - 1} are gone from the stream (max_age) and cannot be "
                    "replayed")
            out = Outcome(from_seq=start, to_seq=state.last_seq)
            writer = SettlementWriter(engine)
            for seq in range(start, state.last_seq + 1):
                try:
                    msg = await js.get_msg(SETTLE_STREAM, seq)
                except NotFoundError:
                    out.missing += 1
                    continue
                try:
                    settlement = parse_settlement(msg.data or b"")
                    written = await writer.write(settlement)
                except (MalformedSettlement, IntegrityError, DataError) as exc:
                    # what the consumer terminates: never written, never will be
                    log.error("settlement cannot be written, skipped",
                              extra={"seq": seq, "error": str(exc)[:300]})
                    out.malformed += 1
                    continue
                if written:
                    out.written += 1
                else:
                    out.duplicates += 1
            return out
        finally:
            await nc.close()
    finally:
        await engine.dispose()


def _utc(text: str) -> datetime:
    moment = datetime.fromisoformat(text)
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m services.records.reconcile",
                                     description=__doc__.split("\n\n")[0])
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--manifest", type=Path,
                       help="the backup's manifest (deploy/db_backup.py): from its SETTLE floor")
    where.add_argument("--from-seq", type=int, help="the first SETTLE sequence to replay")
    where.add_argument("--since", type=_utc,
                       help="replay what SETTLE stored from this time (ISO 8601, UTC if no zone)")
    parser.add_argument("--migrate", action="store_true",
                        help="bring the schema to this code's head first")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(levelname)s %(name)s %(message)s")
    cfg = load_config()
    try:
        start = start_from_manifest(args.manifest) if args.manifest else args.from_seq
        if start is not None and start < 1:
            raise ReconcileError("USAGE", f"--from-seq {start}: sequences start at 1")
        out = asyncio.run(reconcile(cfg.records, cfg.nats, start,
                                    do_migrate=args.migrate, since=args.since))
    except ReconcileError as exc:
        print(f"reconcile: {exc.code}: {exc.message}", file=sys.stderr)
        return 2
    print(json.dumps(asdict(out), sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
