"""Benchmark of the table's own work per room-log record: ``python -m bench.bench_table_views [--quick]``.

For each game, a room of four players plays seeded hands (greedy bots, fair deals, response
windows decided by ``games.arbitration.resolve``) and its log records are kept. The timed
pass folds those records into a fresh room and does what a table does for each of them,
without NATS or gRPC: the record's log bytes (``json.dumps(logrec.encode(rec))``), the fold
and its frames (``views.apply``), the room's stream message and its bytes, the settlement
bytes at a hand's end, and a prompt (``views.prompt``) for every seat that has a new
decision, with its message and bytes. An arbiter's decision is checked by the state's
``verify_decision`` (the table's way) or tried on a full clone of the state (the reference).

Baseline, in the same process: the same pass with the straightforward code the table ran
before these paths were made cheaper (:mod:`bench.table_views_ref`: each prompt computes the
legal actions twice and encodes afresh, the record's fields are listed per call, a hand's
settlement makes its events' frames again, a Dadun hint builds every rank's bounds of every
shape it tries; a window decision is tried on a full clone of the state). The two passes must produce the same bytes for
every record (checked, not timed). Writes bench/reports/table_views.md.
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass

from bench import table_views_ref as ref
from bench.common import best_of_each, command, machine, parse_options, write_report
from games import fair
from games.arbitration import Decision, resolve
from games.rng import Stream, derive
from paiju.v1 import client_pb2
from services.table import logrec as lr
from services.table import views
from services.table.room import Room
from services.table.stream import RoomStream

REPORT = "table_views.md"
GAMES = ("xuezhan", "changsha", "dadun")
ROOM_ID = 31415926
SECONDS = 15.0


def profile(uid: int) -> lr.Profile:
    return lr.Profile(nickname=f"player{uid}", head_url=f"https://img.example/{uid}.png",
                      coins=100000, ip=f"10.0.0.{uid % 250}", lat=30.66, lng=104.06,
                      login_address="成都")


def room_log(game: str, hands: int, seed: int) -> list[lr.Record]:
    """The records of a room of four players who play ``hands`` hands (greedy bots)."""
    rng = Stream(derive(seed, f"bench.table_views.{game}"))
    records: list[lr.Record] = []
    room: Room | None = None

    def add(rec: lr.Record) -> None:
        nonlocal room
        rec = lr.stamp(rec, len(records))
        records.append(rec)
        if room is None:
            assert isinstance(rec, lr.Create)
            room = Room(rec)
        room.apply(rec)

    add(lr.Create(ROOM_ID, game, {}, {"turn_seconds": SECONDS}, total_hands=hands,
                  creator_id=1001, play_desc=game))
    assert room is not None
    for seat in range(4):
        add(lr.Join(seat, 1001 + seat, profile(1001 + seat), f"s{seat}", 1.0e9))
    for hand_no in range(1, hands + 1):
        server_seed = bytes(rng.below(256) for _ in range(fair.SEED_BYTES))
        add(lr.Commit(hand_no, server_seed.hex(),
                      fair.commitment(ROOM_ID, hand_no, server_seed)))
        for seat in range(4):
            add(lr.ClientSeed(seat, hand_no, bytes(rng.below(256) for _ in range(16)).hex()))
            add(lr.Ready(seat, True))
        hand_seed = room.fair.hand_seed(ROOM_ID, hand_no)
        assert hand_seed is not None
        dealer = fair.first_dealer(hand_seed) if hand_no == 1 else room.dealer
        add(lr.Start(hand_no, hand_seed.hex(), dealer, dealer_from_seed=hand_no == 1))
        for _ in range(3000):
            if not room.in_hand():
                break
            assert room.state is not None
            seat = room.to_act()[0]
            response = room.is_response(seat)
            add(lr.Act(seat, room.spec.greedy_policy(room.state, seat), "player", response))
            window, rules = room.pending_window(), room.arbitration_rules()
            if response and window is not None and rules is not None:
                decision = resolve(window, rules)
                if decision.final:
                    add(lr.Resolve(decision))
    return records


@dataclass
class Path:
    """One way of doing the table's per-record work (the table's own, or the reference)."""

    log_bytes: Callable[[lr.Record], bytes]
    apply: Callable[[Room, lr.Record], views.Effects]
    prompt: Callable[[Room, int, float], client_pb2.ServerFrame]
    decision_ok: Callable[[Room, Decision], bool]
    context: Callable[[], AbstractContextManager[None]] = contextlib.nullcontext


def _verified(room: Room, decision: Decision) -> bool:
    """The table: the state's check of the decision (RuleError: refused), nothing cloned."""
    assert room.state is not None
    room.state.verify_decision(decision)
    return True


def _tried_on_a_clone(room: Room, decision: Decision) -> bool:
    """The table before: every decision tried on a clone of the state (RuleError: refused)."""
    assert room.state is not None
    room.state.clone().resolve_window(decision)
    return True


TABLE = Path(
    log_bytes=lambda rec: json.dumps(lr.encode(rec)).encode(),
    apply=views.apply,
    prompt=views.prompt,
    decision_ok=_verified,
)
REFERENCE = Path(
    log_bytes=lambda rec: json.dumps(ref.encode(rec)).encode(),
    apply=ref.apply,
    prompt=ref.prompt,
    decision_ok=_tried_on_a_clone,
    context=ref.before,
)


def replay(path: Path, records: list[lr.Record], out: list[bytes] | None = None) -> int:
    """Fold ``records`` into a fresh room doing the table's work for each; the number of
    prompts. ``out`` (if given) gets every byte string the pass produced, in order."""
    with path.context():
        return _replay(path, records, out)


def _replay(path: Path, records: list[lr.Record], out: list[bytes] | None) -> int:
    first = records[0]
    assert isinstance(first, lr.Create)
    room = Room(first)
    stream = RoomStream(room.room_id)
    prompted: dict[int, tuple[object, ...]] = {}
    acted: dict[int, int] = {}
    prompts = 0
    for rec in records:
        data = path.log_bytes(rec)
        if isinstance(rec, lr.Resolve) and not path.decision_ok(room, rec.decision):
            raise AssertionError(f"decision {rec.decision} refused")
        fx = path.apply(room, rec)
        msg = stream.record(rec.i, fx.public, fx.private, fx.closed).SerializeToString()
        settle = [s.encode() for s in fx.settle]
        if out is not None:
            out += [data, msg, *settle]
        if isinstance(rec, lr.Act):
            acted[rec.seat] = acted.get(rec.seat, 0) + 1
        if not room.in_hand():
            continue
        window = room.pending_window()
        step = window.id if window is not None else (0 if room.simultaneous() else room.decision)
        private = []
        for seat in room.to_act():   # as Automation.send_prompts: one per new decision
            key = (acted.get(seat, 0), room.phase(), step)
            if prompted.get(seat) == key:
                continue
            prompted[seat] = key
            private.append((1001 + seat, path.prompt(room, seat, SECONDS)))
        if private:
            prompts += len(private)
            msg = stream.follow_up((), private).SerializeToString()
            if out is not None:
                out.append(msg)
    return prompts


def main() -> None:
    args = parse_options(__doc__)
    hands, rounds = (2, 3) if args.quick else (8, 7)
    rows = []
    for game in GAMES:
        records = room_log(game, hands, 2026)
        mine: list[bytes] = []
        theirs: list[bytes] = []
        prompts = replay(TABLE, records, mine)
        replay(REFERENCE, records, theirs)
        if mine != theirs:
            bad = next(i for i, (a, b) in enumerate(zip(mine, theirs, strict=False)) if a != b)
            raise SystemExit(f"{game}: the table's bytes differ from the reference at "
                             f"message {bad}")
        table_s, ref_s = best_of_each(rounds, [functools.partial(replay, TABLE, records),
                                               functools.partial(replay, REFERENCE, records)])
        rows.append((game, len(records), prompts, table_s, ref_s))
    lines = [
        "# The table's work per room-log record",
        "",
        f"{command('bench_table_views', args.quick)} on {machine()}; per game one room of "
        f"four players, {hands} seeded hands with greedy bots and fair deals, replayed from "
        f"its log records; best of {rounds} interleaved rounds. Per record: the log bytes, "
        "`views.apply` and the stream message's bytes, settlements, the check of each "
        "window decision, and a prompt (with its message's bytes) for each seat with a new "
        "decision. Baseline: the same pass with the reference code (`bench/table_views_ref.py`, "
        "the table's code before); both passes produce the same bytes (checked).",
        "",
        "| game | records | prompts | table µs/record | reference µs/record | "
        "table ms/hand | reference ms/hand | ratio |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for game, n, prompts, table_s, ref_s in rows:
        lines.append(f"| {game} | {n} | {prompts} | {table_s / n * 1e6:.1f} | "
                     f"{ref_s / n * 1e6:.1f} | {table_s / hands * 1e3:.2f} | "
                     f"{ref_s / hands * 1e3:.2f} | {ref_s / table_s:.2f}x |")
    lines += ["", "Ratio = reference time / table time (above 1: the table's path is cheaper)."]
    write_report(args.report(REPORT), lines)


if __name__ == "__main__":
    main()
