"""The reference for bench_table_views: the table's per-record paths done the plain way, as
they were before they were made cheaper (services/table/views.py prompt, effects' engine
events and hand_settlement, logrec.encode, the Dadun hints' lowest fill), so the benchmark
can time both in one process and check that they give the same bytes. It lives here and
imports no test; the unit tests that hold the cheap paths to the plain ones use its
:func:`prompt` and :func:`lowest_fill` as their oracles (tests/unit/services/
test_table_shortcuts.py, tests/unit/games/dadun/test_legal.py).
:func:`before` puts the shared ones (logrec.encode, which the fold's fair deals call too,
and the Dadun hints) in place for the reference pass."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from games import fair
from games.arbitration import Decision
from games.dadun import legal
from games.engine import Action
from paiju import frames
from paiju.contracts import settle as sm
from paiju.v1 import client_pb2
from paiju.v1 import game_msgs_pb2 as g
from paiju.v1 import lobby_msgs_pb2 as lm
from services.common import reserved
from services.table import facts as ft
from services.table import logrec as lr
from services.table import room as rm
from services.table import views
from services.table.codec import event_frame

__all__ = ["apply", "before", "encode", "hand_settlement", "lowest_fill", "prompt"]


def prompt(room: rm.Room, seat: int, seconds: float) -> client_pb2.ServerFrame:
    """The engine asked for the legal actions and for the observation apart (mahjong's
    observation computes them a second time), the observation encoded by json.dumps."""
    assert room.state is not None
    actions = [g.ActionSpec(kind=a.kind, tiles=list(a.tiles), ref=a.ref, choice=a.choice)
               for a in room.state.legal_actions(seat)]
    return frames.server_frame(g.Prompt(
        game=room.game, phase=room.state.phase(), actions=actions,
        observation_json=json.dumps(room.state.observation(seat), ensure_ascii=False),
        seconds=int(seconds), seat=seat, hand_no=room.hand_no, room_id=room.room_id,
        decision=room.timer_key()))


def lowest_fill(hand: legal.Hand, fixed: legal.Bounds, total: int,
                free: bool) -> tuple[int, ...] | None:
    """legal._lowest_fill as first written (every rank's bounds, then one sorted pass)."""
    counts = []
    for r in range(legal.NUM_RANKS):
        lo, hi = fixed.get(r, (0, hand.ranks[r] if free else 0))
        counts.append([lo, min(hi, hand.ranks[r])])
    left = total - sum(lo for lo, _ in counts)
    if left < 0 or any(lo > hi for lo, hi in counts):
        return None
    for r in sorted(range(legal.NUM_RANKS), key=lambda r: (r in fixed, r)):
        extra = min(left, counts[r][1] - counts[r][0])
        counts[r][0] += extra
        left -= extra
    if left:
        return None
    return sum((hand.picks(r, c)[0] for r, (c, _) in enumerate(counts) if c), ())


def encode(rec: lr.Record) -> dict[str, Any]:
    if rec.i < 0:
        raise lr.LogRecordError(f"a {rec.KIND} record has no log index yet (logrec.stamp)")
    out: dict[str, Any] = {"i": rec.i, "t": rec.KIND}
    for f in dataclasses.fields(rec):
        if f.name == "i":
            continue
        value = getattr(rec, f.name)
        omit = f.metadata.get("omit")
        if (omit == "empty" and not value) or (omit == "session" and not getattr(rec, "session", "")):
            continue
        out[f.name] = _value(value)
    return out


def _value(value: Any) -> Any:
    if isinstance(value, Action | Decision):
        return value.to_dict()
    if isinstance(value, lr.Profile):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(lr.Profile)}
    if isinstance(value, Mapping):
        return dict(value)
    return value


def apply(room: rm.Room, rec: lr.Record) -> views.Effects:
    """views.apply with the engine events' frames and the hand's settlement as before."""
    facts = room.apply(rec)
    fx = views.Effects()
    for fact in facts:
        if isinstance(fact, ft.EngineEvents):
            for e in fact.events:
                frame = _event_frame(room, e)
                if e.event.to is None:
                    fx.public.append(frame)
                elif e.ctx.user_ids[e.event.to] and not reserved.is_robot(
                        e.ctx.user_ids[e.event.to]):
                    fx.private.append((e.ctx.user_ids[e.event.to], frame))
        elif isinstance(fact, ft.HandEnded):
            fx.settle.append(hand_settlement(room, fact))
            if fact.fair is not None:
                fx.public.append(frames.server_frame(lm.FairReveal(
                    hand_no=fact.hand_no, commitment=fact.fair.commitment,
                    server_seed=fact.fair.server_seed,
                    client_seeds=fact.fair.client_seeds, fair_version=fair.VERSION)))
        else:
            views.effects(room, [fact], fx)
    return fx


def _event_frame(room: rm.Room, e: ft.HandEvent) -> client_pb2.ServerFrame:
    uid = f"{e.ctx.room_id}:{e.ctx.hand_no}:{e.index}"
    return event_frame(room.game, e.event, uid, e.ctx.mapping())


def hand_settlement(room: rm.Room, hand: ft.HandEnded) -> sm.HandSettlement:
    events = []
    for e in hand.events:
        frame = _event_frame(room, e)
        events.append(sm.ReplayEvent(
            idx=e.index, kind=e.event.kind, to_seat=e.event.to, event_id=frame.event_id,
            frame=frame.SerializeToString(),
            json=json.dumps(e.event.to_dict(), ensure_ascii=False, sort_keys=True)))
    return sm.HandSettlement(
        room_id=room.room_id, hand_no=hand.hand_no, game=room.game, base_score=room.base_score,
        seats=hand.user_ids, nicknames=hand.nicknames, deltas=hand.deltas,
        payments=tuple(sm.Payment(**p.to_dict()) for p in hand.payments),
        details=sm.plain({**hand.details, **({"fair": hand.fair} if hand.fair else {})}),
        seed=fair.seed_to_json(hand.seed), dealer=hand.dealer, next_dealer=hand.next_dealer,
        events=tuple(events))


@contextmanager
def before() -> Iterator[None]:
    """The shared functions as they were, for the time of the reference pass."""
    saved = lr.encode, legal._lowest_fill
    lr.encode, legal._lowest_fill = encode, lowest_fill   # type: ignore[assignment]
    try:
        yield
    finally:
        lr.encode, legal._lowest_fill = saved   # type: ignore[assignment]
