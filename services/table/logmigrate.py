"""Move the room logs from one stream (``ROOMLOG``, subjects ``room.<id>.log``) to the
sharded streams that tables read and write (``bus.ROOM_LOG_STREAMS``,
``room.<id>.log.<shard>``): an upgrade step for a cluster whose logs were written into a
single stream.

Run it with every table stopped (no room is written meanwhile), as a NATS user that may
read and delete that stream (the operators' ``admin``; no service user may):

    PAIJU_ENV=prod PAIJU_NATS__USER=admin PAIJU_NATS__PASSWORD_FILE=... \\
        python -m services.table.logmigrate [--delete]

Each room's records are copied in order, the first append fenced on an empty subject. A
room already copied whole is skipped and one copied in part (an interrupted run) is purged
and copied again, so the step can be repeated. ``--delete`` removes the old stream once
every room is in place. docs/runbooks.md, "Move the room logs to their shards"."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import uuid
from dataclasses import dataclass
from typing import Any

from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.errors import NotFoundError

from services.common import bus
from services.common.config import load_config

log = logging.getLogger("paiju.table.logmigrate")

SINGLE_STREAM = "ROOMLOG"
SINGLE_SUBJECTS = "room.*.log"


@dataclass
class Moved:
    rooms: int = 0        # rooms copied now
    records: int = 0      # records copied now
    in_place: int = 0     # rooms found already copied whole
    deleted: bool = False  # the single stream was removed


async def _count(js: Any, stream: str, subject: str) -> int:
    info = await js.stream_info(stream, subjects_filter=subject)
    return int((info.state.subjects or {}).get(subject, 0))


async def _records(js: Any, subject: str, total: int) -> list[bytes]:
    sub = await js.pull_subscribe(
        subject, durable=None, stream=SINGLE_STREAM,
        config=ConsumerConfig(deliver_policy=DeliverPolicy.ALL, ack_policy=AckPolicy.NONE,
                              inactive_threshold=30))
    out: list[bytes] = []
    try:
        while len(out) < total:
            out.extend(m.data for m in await sub.fetch(min(512, total - len(out)), timeout=5))
    finally:
        await sub.unsubscribe()
    return out


async def migrate(js: Any, *, delete: bool = False) -> Moved:
    """Copy every room of the single stream to its shard (see the module's text); what was
    done. Nothing to do when the single stream does not exist."""
    moved = Moved()
    run = uuid.uuid4().hex[:12]   # message ids of this run: a purged room's copy is no duplicate
    try:
        info = await js.stream_info(SINGLE_STREAM, subjects_filter=SINGLE_SUBJECTS)
    except NotFoundError:
        return moved
    await bus.ensure_streams(js, info.config.num_replicas or 1)
    for subject, total in sorted((info.state.subjects or {}).items()):
        room_id = int(subject.split(".")[1])
        target, stream = bus.room_log(room_id), bus.room_log_stream(room_id)
        there = await _count(js, stream, target)
        if there >= total:   # copied whole (and maybe played on since)
            moved.in_place += 1
            continue
        if there:   # an interrupted copy: start the room again
            await js.purge_stream(stream, subject=target)
        last = 0
        for data in await _records(js, subject, total):
            index = json.loads(data)["i"]
            ack = await js.publish(target, data, headers={
                "Nats-Msg-Id": f"{room_id}:{index}:migrated-{run}",
                "Nats-Expected-Last-Subject-Sequence": str(last)})
            last = int(ack.seq)
            moved.records += 1
        moved.rooms += 1
        log.info("room log moved to its shard",
                 extra={"room": room_id, "records": total, "stream": stream})
    if delete:
        await js.delete_stream(SINGLE_STREAM)
        moved.deleted = True
    return moved


async def _main(delete: bool) -> Moved:
    cfg = load_config()
    nc = await bus.connect(cfg.nats, "logmigrate")
    try:
        return await migrate(nc.jetstream(), delete=delete)
    finally:
        await nc.close()


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m services.table.logmigrate",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--delete", action="store_true",
                        help="remove the single stream once every room is copied")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO)
    moved = asyncio.run(_main(args.delete))
    print(f"rooms copied {moved.rooms} ({moved.records} records), already in place "
          f"{moved.in_place}, single stream {'deleted' if moved.deleted else 'kept'}")


if __name__ == "__main__":
    main()
