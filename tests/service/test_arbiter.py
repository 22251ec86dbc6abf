"""The arbiter service over real gRPC: the seed-002 examples, early answers, bad input."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import grpc
import pytest
from prometheus_client import REGISTRY

from games.arbitration import Decision, InvalidWindow, Response, Rules, Window, resolve
from games.engine import IllegalAction
from paiju.v1 import arbiter_pb2, arbiter_pb2_grpc
from services.arbiter.server import start
from services.common.arbwire import decision_from_pb, window_to_pb
from services.common.config import load_config


@pytest.fixture
async def stub() -> AsyncIterator[arbiter_pb2_grpc.ArbiterStub]:
    svc = await start(load_config("test", environ={}), port=0, metrics_port=-1)
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{svc.port}")
    yield arbiter_pb2_grpc.ArbiterStub(channel)
    await channel.close()
    await svc.stop(0)


def window(responses: dict[int, Response], candidates: dict[int, set[str]] | None = None) -> Window:
    cands = candidates or {1: {"peng", "pass"}, 2: {"hu", "pass"}, 3: {"peng", "pass"}}
    return Window(7, 0, 4, "discard", {s: frozenset(k) for s, k in cands.items()}, responses)


async def reply(stub: arbiter_pb2_grpc.ArbiterStub, w: Window,
                rules: Rules | None = None) -> arbiter_pb2.ResolveReply:
    """The arbiter's reply to one request on a Decide stream of its own."""
    call = stub.Decide()
    request = window_to_pb(w, rules or Rules())
    request.request_id = 1
    await call.write(request)
    await call.done_writing()
    replies = [r async for r in call]
    assert [r.request_id for r in replies] == [1]
    return replies[0]


async def ask(stub: arbiter_pb2_grpc.ArbiterStub, w: Window, rules: Rules | None = None):  # noqa: ANN201
    got = await reply(stub, w, rules)
    assert not got.error
    return decision_from_pb(got)


async def test_nearest_peng_wins_and_matches_the_pure_function(stub: arbiter_pb2_grpc.ArbiterStub) -> None:
    w = window({1: Response("peng"), 2: Response("pass"), 3: Response("peng")})
    got = await ask(stub, w)
    assert got == resolve(w)
    assert got.final and got.action == "peng" and got.winners == (1,)


async def test_hu_beats_peng_and_early_answer(stub: arbiter_pb2_grpc.ArbiterStub) -> None:
    # seat 2 can only hu or pass; once it says hu, pending seat 3 (peng) cannot change it
    got = await ask(stub, window({2: Response("hu")}))
    assert got.action == "hu" and got.winners == (2,) and got.final
    # a pending hu seat keeps the window open
    open_ = await ask(stub, window({1: Response("peng")}))
    assert not open_.final and 2 in open_.pending


async def test_multi_win_and_pass_then_no_win(stub: arbiter_pb2_grpc.ArbiterStub) -> None:
    cands = {1: {"hu", "pass"}, 2: {"hu", "pass"}, 3: {"hu", "pass"}}
    w = window({1: Response("hu"), 2: Response("pass"), 3: Response("hu")}, cands)
    got = await ask(stub, w)
    assert got.winners == (1, 3) and got.passed_win == (2,)
    single = await ask(stub, w, Rules(multi_win=False))
    assert single.winners == (1,)


async def test_a_bad_window_is_answered_with_an_error(stub: arbiter_pb2_grpc.ArbiterStub) -> None:
    bad = window({1: Response("hu")})  # seat 1 may not hu
    got = await reply(stub, bad)
    assert "hu" in got.error and got.window_id == bad.id and not got.final


async def test_a_window_without_its_number_of_seats_is_refused(
        stub: arbiter_pb2_grpc.ArbiterStub) -> None:
    request = window_to_pb(window({2: Response("hu")}), Rules())
    request.window.ClearField("num_seats")   # every table names it: no default of 4
    call = stub.Decide()
    await call.write(request)
    await call.done_writing()
    (got,) = [r async for r in call]
    assert "num_seats" in got.error and not got.final


async def test_one_stream_answers_every_request_in_order_and_outlives_a_bad_one(
        stub: arbiter_pb2_grpc.ArbiterStub) -> None:
    asked = [window({1: Response("peng"), 2: Response("pass"), 3: Response("peng")}),
             window({1: Response("hu")}),              # seat 1 may not hu: refused
             window({2: Response("hu")}),
             window({1: Response("peng")})]
    call = stub.Decide()
    for i, w in enumerate(asked, start=1):
        request = window_to_pb(w, Rules())
        request.request_id = 100 + i
        await call.write(request)
    await call.done_writing()
    replies = [reply async for reply in call]
    assert [r.request_id for r in replies] == [101, 102, 103, 104]
    assert "hu" in replies[1].error
    for w, reply in zip(asked, replies, strict=True):
        if not reply.error:
            assert decision_from_pb(reply) == resolve(w)


def fallbacks(reason: str) -> float:
    return REGISTRY.get_sample_value("paiju_table_arbiter_fallback_total",
                                     {"reason": reason}) or 0.0


async def test_the_table_s_client_arbitrates_locally_while_the_arbiter_is_down_and_reopens(
        ) -> None:
    """Local arbitration, the degraded mode: named (ArbiterClient.local, logged), measured
    (paiju_table_arbiter_fallback_total by reason) and over once an arbiter answers again."""
    from services.table.arbiter_client import ArbiterClient
    svc = await start(load_config("test", environ={}), port=0, metrics_port=-1)
    port = svc.port
    cfg = load_config("test", environ={"PAIJU_ARBITER__PORT": str(port),
                                       "PAIJU_TABLE__ARBITER_TIMEOUT_SECONDS": "2"})
    client = ArbiterClient(cfg)
    try:
        w = window({2: Response("hu")})
        # rooms ask at once over the one stream: each gets its own decision
        ws = [w, window({1: Response("peng")})]
        got = await asyncio.gather(*(client.resolve(x, Rules()) for x in ws))
        assert got == [resolve(ws[0]), resolve(ws[1])] and not client.local
        with pytest.raises(InvalidWindow, match="hu"):   # the arbiter's verdict, no fallback
            await client.resolve(window({1: Response("hu")}), Rules())
        assert not client.local
        await svc.stop(0)
        before = fallbacks("unavailable")
        assert await client.resolve(w, Rules()) == resolve(w)   # down: decided here
        assert client.local and fallbacks("unavailable") == before + 1
        svc = await start(load_config("test", environ={}), port=port, metrics_port=-1)
        for _ in range(50):                                  # back: a new stream
            again = await client.resolve(w, Rules())
            if not client.local:
                break
            await asyncio.sleep(0.1)
        assert again == resolve(w) and not client.local
    finally:
        await client.close()
        await svc.stop(0)


async def test_a_decision_the_engine_refuses_is_never_taken_the_window_is_decided_locally(
        ) -> None:
    """The room's check (its state's verify_decision) refuses the arbiter's final decision
    (an arbiter gone wrong): local arbitration, reason "refused"."""
    from services.table.arbiter_client import ArbiterClient
    svc = await start(load_config("test", environ={}), port=0, metrics_port=-1)
    client = ArbiterClient(load_config("test", environ={"PAIJU_ARBITER__PORT": str(svc.port)}))
    checked: list[Decision] = []

    def refuse(decision: Decision) -> None:
        checked.append(decision)
        raise IllegalAction("not for this state")

    try:
        w = window({2: Response("hu")})
        before = fallbacks("refused")
        assert await client.resolve(w, Rules(), refuse) == resolve(w)
        assert checked == [resolve(w)] and client.local
        assert fallbacks("refused") == before + 1
        assert await client.resolve(w, Rules(), checked.append) == resolve(w)   # passed
        assert not client.local and fallbacks("refused") == before + 1
    finally:
        await client.close()
        await svc.stop(0)


async def test_a_hung_arbiter_is_a_timeout_and_the_window_is_decided_locally() -> None:
    from services.table.arbiter_client import ArbiterClient

    class Hung(arbiter_pb2_grpc.ArbiterServicer):
        async def Decide(self, requests, context):  # type: ignore[no-untyped-def]  # noqa: N802
            async for _ in requests:
                await asyncio.sleep(3600)
            yield arbiter_pb2.ResolveReply()

    server = grpc.aio.server()
    arbiter_pb2_grpc.add_ArbiterServicer_to_server(Hung(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    cfg = load_config("test", environ={"PAIJU_ARBITER__PORT": str(port),
                                       "PAIJU_TABLE__ARBITER_TIMEOUT_SECONDS": "0.3"})
    client = ArbiterClient(cfg)
    try:
        w = window({2: Response("hu")})
        before = fallbacks("timeout")
        assert await client.resolve(w, Rules()) == resolve(w)
        assert client.local and fallbacks("timeout") == before + 1
    finally:
        await client.close()
        await server.stop(0)
