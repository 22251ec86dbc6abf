"""Verify a hand's deal fetched from records: ``python -m clients.verify_deal --records
HOST:PORT --room R --hand H [--user U]``.

Fetches the hand's replay (records ``GetReplay``; ``--user``: a player who sat in the room,
0 for an operator's public view) and runs the same checks as ``python -m
games.tools.verify_deal`` on its fair-deal record (docs/fairness.md). ``--save FILE`` keeps
the record, so the check can be run again offline. Exit 0 when every check passes."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence

import grpc

from games.tools.verify_deal import verify
from paiju.v1 import records_pb2, records_pb2_grpc


async def fetch(records: str, room_id: int, hand_no: int, user_id: int) -> str:
    """The hand's fair-deal record as JSON ("" for a hand dealt before fair deals)."""
    async with grpc.aio.insecure_channel(records) as channel:
        stub = records_pb2_grpc.RecordsStub(channel)
        replay = await stub.GetReplay(records_pb2.ReplayRequest(
            room_id=room_id, hand_no=hand_no, user_id=user_id), timeout=10)
    fair_json: str = replay.fair_json
    return fair_json


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m clients.verify_deal", description=__doc__)
    parser.add_argument("--records", default="127.0.0.1:50054", help="records' gRPC address")
    parser.add_argument("--room", type=int, required=True)
    parser.add_argument("--hand", type=int, required=True)
    parser.add_argument("--user", type=int, default=0, help="a player of the room (0: operator)")
    parser.add_argument("--save", help="write the fair-deal record to this file")
    args = parser.parse_args(argv)
    try:
        text = asyncio.run(fetch(args.records, args.room, args.hand, args.user))
    except grpc.RpcError as exc:
        print(f"records: {exc.code().name}: {exc.details()}", file=sys.stderr)
        return 2
    if not text:
        print(f"room {args.room} hand {args.hand} has no fair-deal record", file=sys.stderr)
        return 1
    if args.save:
        with open(args.save, "w", encoding="utf-8") as fh:
            fh.write(text)
    report = verify(json.loads(text))
    print(report.text())
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
