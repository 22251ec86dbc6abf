"""Wire form of response windows and decisions (paiju.v1.Arbiter) <-> games.arbitration.

Shared by the arbiter service and the table's client (services/table/arbiter_client.py)."""

from __future__ import annotations

from games.arbitration import Decision, Response, Rules, Window
from paiju.v1 import arbiter_pb2 as pb


def window_to_pb(window: Window, rules: Rules) -> pb.ResolveRequest:
    return pb.ResolveRequest(
        window=pb.ArbWindow(
            id=window.id, source_seat=window.source_seat, tile=window.tile,
            trigger=window.trigger, num_seats=window.num_seats,
            candidates=[pb.SeatCandidates(seat=s, kinds=sorted(k))
                        for s, k in sorted(window.candidates.items())],
            responses=[pb.SeatResponse(seat=s, response=pb.ArbResponse(kind=r.kind, tiles=r.tiles))
                       for s, r in sorted(window.responses.items())]),
        rules=pb.ArbRules(multi_win=rules.multi_win, gang_over_peng=rules.gang_over_peng))


def window_from_pb(request: pb.ResolveRequest) -> tuple[Window, Rules]:
    w = request.window
    window = Window(
        w.id, w.source_seat, w.tile, w.trigger,
        {c.seat: frozenset(c.kinds) for c in w.candidates},
        {r.seat: Response(r.response.kind, tuple(r.response.tiles)) for r in w.responses},
        w.num_seats)
    rules = Rules(request.rules.multi_win, request.rules.gang_over_peng)
    return window, rules


def decision_to_pb(decision: Decision) -> pb.ResolveReply:
    reply = pb.ResolveReply(
        window_id=decision.window_id, final=decision.final, action=decision.action,
        winners=decision.winners, passed_win=decision.passed_win, pending=decision.pending)
    if decision.claim is not None:
        reply.claim.CopyFrom(pb.ArbResponse(kind=decision.claim.kind, tiles=decision.claim.tiles))
    return reply


def decision_from_pb(reply: pb.ResolveReply) -> Decision:
    claim = Response(reply.claim.kind, tuple(reply.claim.tiles)) if reply.HasField("claim") else None
    return Decision(reply.window_id, reply.final, reply.action, tuple(reply.winners), claim,
                    tuple(reply.passed_win), tuple(reply.pending))
