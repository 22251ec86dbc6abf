"""``python -m clients.hands``: the latest settled hands from records (operators, demos).

    python -m clients.hands [--records 127.0.0.1:50054] [--limit 10] [--room 123456] [--follow]
"""

from __future__ import annotations

import argparse
import sys
import time

import grpc

from paiju.v1 import records_pb2, records_pb2_grpc


def line(h: records_pb2.HandRecord) -> str:
    what = "final" if h.final else f"hand {h.hand_no}"
    cells = ", ".join(f"{uid}:{d:+d}" for uid, d in zip(h.user_ids, h.deltas, strict=False))
    return f"{h.settled_at}  room {h.room_id} {h.game:8s} {what:8s} {cells}"


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m clients.hands")
    parser.add_argument("--records", default="127.0.0.1:50054")
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--room", type=int, default=0)
    parser.add_argument("--follow", action="store_true", help="print new hands as they land")
    args = parser.parse_args()
    stub = records_pb2_grpc.RecordsStub(grpc.insecure_channel(args.records))
    seen: set[tuple[int, int]] = set()
    while True:
        try:
            reply = stub.ListHands(records_pb2.ListHandsRequest(room_id=args.room,
                                                                limit=args.limit), timeout=5)
        except grpc.RpcError as err:
            sys.exit(f"records at {args.records} did not answer ({err.code().name}: "
                     f"{err.details()}); is `make run` going?")
        fresh = [h for h in reversed(reply.hands) if (h.room_id, h.hand_no) not in seen]
        for h in fresh:
            seen.add((h.room_id, h.hand_no))
            print(line(h), flush=True)
        if not args.follow:
            print(f"{reply.total} records in all", flush=True)
            return
        time.sleep(1)


if __name__ == "__main__":
    main()
