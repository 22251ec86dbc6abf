"""The arbiter service over a real nats-server: the seed-002 examples, early answers, bad
input, the queue group; the table's client and its local arbitration."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import grpc
import nats
import pytest
from nats.aio.client import Client
from nats.aio.msg import Msg
from prometheus_client import REGISTRY

from games.arbitration import Decision, InvalidWindow, Response, Rules, Window, resolve
from games.engine import IllegalAction
from paiju.v1 import arbiter_pb2, arbiter_pb2_grpc
from services.arbiter.server import start
from services.common.arbwire import decision_from_pb, window_to_pb
from services.common.bus import ARBITER_DECIDE as SUBJECT
from services.common.bus import ARBITER_QUEUE, sync
from services.common.config import Config, load_config
from services.common.natsd import EmbeddedNats
from services.common.server import ServiceHost
from services.table.arbiter_client import ArbiterClient


def config(natsd: EmbeddedNats, **env: str) -> Config:
    return load_config("test", environ={"NATS_URL": natsd.url, **env})


async def arbiter(natsd: EmbeddedNats) -> ServiceHost:
    return await start(config(natsd), port=0, metrics_port=-1)


@pytest.fixture
async def asker(fresh_nats: EmbeddedNats) -> AsyncIterator[Client]:
    """A connection that asks an arbiter that is running on the same nats-server."""
    svc = await arbiter(fresh_nats)
    nc = await nats.connect(fresh_nats.url)
    yield nc
    await nc.close()
    await svc.stop(0)


def window(responses: dict[int, Response], candidates: dict[int, set[str]] | None = None) -> Window:
    cands = candidates or {1: {"peng", "pass"}, 2: {"hu", "pass"}, 3: {"peng", "pass"}}
    return Window(7, 0, 4, "discard", {s: frozenset(k) for s, k in cands.items()}, responses)


async def send(nc: Client, request: arbiter_pb2.ResolveRequest) -> arbiter_pb2.ResolveReply:
    msg = await nc.request(SUBJECT, request.SerializeToString(), timeout=5)
    return arbiter_pb2.ResolveReply.FromString(msg.data)


async def reply(nc: Client, w: Window, rules: Rules | None = None) -> arbiter_pb2.ResolveReply:
    return await send(nc, window_to_pb(w, rules or Rules()))


async def ask(nc: Client, w: Window, rules: Rules | None = None) -> Decision:
    got = await reply(nc, w, rules)
    assert not got.error
    return decision_from_pb(got)


async def test_nearest_peng_wins_and_matches_the_pure_function(asker: Client) -> None:
    w = window({1: Response("peng"), 2: Response("pass"), 3: Response("peng")})
    got = await ask(asker, w)
    assert got == resolve(w)
    assert got.final and got.action == "peng" and got.winners == (1,)


async def test_hu_beats_peng_and_early_answer(asker: Client) -> None:
    # seat 2 can only hu or pass; once it says hu, pending seat 3 (peng) cannot change it
    got = await ask(asker, window({2: Response("hu")}))
    assert got.action == "hu" and got.winners == (2,) and got.final
    # a pending hu seat keeps the window open
    open_ = await ask(asker, window({1: Response("peng")}))
    assert not open_.final and 2 in open_.pending


async def test_multi_win_and_pass_then_no_win(asker: Client) -> None:
    cands = {1: {"hu", "pass"}, 2: {"hu", "pass"}, 3: {"hu", "pass"}}
    w = window({1: Response("hu"), 2: Response("pass"), 3: Response("hu")}, cands)
    got = await ask(asker, w)
    assert got.winners == (1, 3) and got.passed_win == (2,)
    single = await ask(asker, w, Rules(multi_win=False))
    assert single.winners == (1,)


async def test_bad_input_is_answered_with_an_error_and_the_arbiter_goes_on(asker: Client) -> None:
    bad = window({1: Response("hu")})  # seat 1 may not hu
    got = await reply(asker, bad)
    assert "hu" in got.error and got.window_id == bad.id and not got.final
    request = window_to_pb(window({2: Response("hu")}), Rules())
    request.window.ClearField("num_seats")   # every table names it: no default of 4
    got = await send(asker, request)
    assert "num_seats" in got.error and not got.final
    msg = await asker.request(SUBJECT, b"\xff\xff not a message", timeout=5)
    assert arbiter_pb2.ResolveReply.FromString(msg.data).error == "undecodable ResolveRequest"
    w = window({2: Response("hu")})
    assert await ask(asker, w) == resolve(w)


async def test_windows_asked_at_once_get_their_own_answers_from_the_replicas(
        fresh_nats: EmbeddedNats) -> None:
    """Two replicas in the queue group: every request is answered once, by one of them, with
    the decision on its own window."""
    replicas = [await arbiter(fresh_nats), await arbiter(fresh_nats)]
    nc = await nats.connect(fresh_nats.url)
    try:
        asked = [window({1: Response("peng"), 2: Response("pass"), 3: Response("peng")}),
                 window({2: Response("hu")}), window({1: Response("peng")})] * 20
        before = decisions()
        got = await asyncio.gather(*(ask(nc, w) for w in asked))
        assert got == [resolve(w) for w in asked]
        assert decisions() == before + len(asked)   # each decided once, by one replica
    finally:
        await nc.close()
        for svc in replicas:
            await svc.stop(0)


async def test_a_replica_stopping_drains_no_window_waits_or_is_decided_locally(
        fresh_nats: EmbeddedNats) -> None:
    """A rolling update: one replica stops (its SIGTERM path, ServiceHost.stop) while the
    table's client keeps asking. The requests it had taken are answered, the next ones go
    to the other replica: no timeout, no local decision, every window its own decision.
    (The race bus.drain closes rarely shows here, where the askers share the arbiters' event
    loop: tests/service/test_bus_drain.py is its test.)"""
    stopping, staying = await arbiter(fresh_nats), await arbiter(fresh_nats)
    nc = await nats.connect(fresh_nats.url)
    client = ArbiterClient(nc, timeout=5)
    asked = [window({1: Response("peng"), 2: Response("pass"), 3: Response("peng")}),
             window({2: Response("hu")}), window({1: Response("peng")})]
    local = {reason: fallbacks(reason) for reason in ("timeout", "unavailable", "refused")}
    done = asyncio.Event()
    rounds = [0]

    async def keep_asking(w: Window) -> None:
        while not done.is_set():
            assert await client.resolve(w, Rules()) == resolve(w)
            rounds[0] += 1

    try:
        askers = [asyncio.create_task(keep_asking(w)) for w in asked * 20]
        await asyncio.sleep(0.3)
        before = rounds[0]
        await stopping.stop(5)
        assert rounds[0] > before   # asked all along the stop
        after_stop = rounds[0]
        await asyncio.sleep(0.3)
        done.set()
        await asyncio.gather(*askers)
        assert rounds[0] > after_stop + 30   # the other replica answers on
        assert {r: fallbacks(r) for r in local} == local
        assert not client.local
    finally:
        done.set()
        await nc.close()
        await staying.stop(0)


def decisions() -> float:
    """Every decision made in this process, by any arbiter replica of it."""
    return sum(sample.value for metric in REGISTRY.collect()
               if metric.name == "paiju_arbiter_decisions"
               for sample in metric.samples if sample.name == "paiju_arbiter_decisions_total")


def fallbacks(reason: str) -> float:
    return REGISTRY.get_sample_value("paiju_table_arbiter_fallback_total",
                                     {"reason": reason}) or 0.0


async def test_the_table_s_client_arbitrates_locally_while_no_arbiter_is_there_and_after(
        fresh_nats: EmbeddedNats) -> None:
    """Local arbitration, the degraded mode: named (ArbiterClient.local, logged), measured
    (paiju_table_arbiter_fallback_total by reason) and over once an arbiter answers again.
    With no arbiter subscribed NATS says so at once: no wait for the timeout."""
    svc = await arbiter(fresh_nats)
    nc = await nats.connect(fresh_nats.url)
    client = ArbiterClient(nc, timeout=2)
    try:
        w = window({2: Response("hu")})
        ws = [w, window({1: Response("peng")})]   # rooms ask at once: each its own decision
        got = await asyncio.gather(*(client.resolve(x, Rules()) for x in ws))
        assert got == [resolve(ws[0]), resolve(ws[1])] and not client.local
        with pytest.raises(InvalidWindow, match="hu"):   # the arbiter's verdict, no fallback
            await client.resolve(window({1: Response("hu")}), Rules())
        assert not client.local
        await svc.stop(0)
        before = fallbacks("unavailable")
        started = asyncio.get_running_loop().time()
        assert await client.resolve(w, Rules()) == resolve(w)   # none there: decided here
        assert asyncio.get_running_loop().time() - started < 1
        assert client.local and fallbacks("unavailable") == before + 1
        svc = await arbiter(fresh_nats)
        assert await client.resolve(w, Rules()) == resolve(w) and not client.local
    finally:
        await nc.close()
        await svc.stop(0)


async def test_a_decision_the_engine_refuses_is_never_taken_the_window_is_decided_locally(
        fresh_nats: EmbeddedNats) -> None:
    """The room's check (its state's verify_decision) refuses the arbiter's final decision
    (an arbiter gone wrong): local arbitration, reason "refused"."""
    svc = await arbiter(fresh_nats)
    nc = await nats.connect(fresh_nats.url)
    client = ArbiterClient(nc, timeout=2)
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
        await nc.close()
        await svc.stop(0)


async def test_a_hung_arbiter_is_a_timeout_and_the_window_is_decided_locally(
        fresh_nats: EmbeddedNats) -> None:
    hung = await nats.connect(fresh_nats.url)
    await hung.subscribe(SUBJECT, queue=ARBITER_QUEUE)   # takes every request, answers none
    await sync(hung)   # subscribed before the table asks (else: "no responders")
    nc = await nats.connect(fresh_nats.url)
    client = ArbiterClient(nc, timeout=0.3)
    try:
        w = window({2: Response("hu")})
        before = fallbacks("timeout")
        assert await client.resolve(w, Rules()) == resolve(w)
        assert client.local and fallbacks("timeout") == before + 1
    finally:
        await nc.close()
        await hung.close()


async def test_an_undecodable_answer_is_refused_and_the_window_is_decided_locally(
        fresh_nats: EmbeddedNats) -> None:
    wrong = await nats.connect(fresh_nats.url)

    async def junk(msg: Msg) -> None:
        await wrong.publish(msg.reply, b"\xff\xff not a reply")

    await wrong.subscribe(SUBJECT, queue=ARBITER_QUEUE, cb=junk)
    await sync(wrong)   # subscribed before the table asks
    nc = await nats.connect(fresh_nats.url)
    client = ArbiterClient(nc, timeout=2)
    try:
        w = window({2: Response("hu")})
        before = fallbacks("refused")
        assert await client.resolve(w, Rules()) == resolve(w)
        assert client.local and fallbacks("refused") == before + 1
    finally:
        await nc.close()
        await wrong.close()


async def test_the_arbiter_is_ready_only_while_its_nats_connection_is_up(
        fresh_nats: EmbeddedNats) -> None:
    svc = await start(config(fresh_nats, PAIJU_NATS__LIVENESS_SECONDS="30"), port=0,
                      metrics_port=-1)
    try:
        assert svc.watch is not None and svc.watch.ready
        fresh_nats.stop()
        for _ in range(100):
            await svc.watch.poll()
            if not svc.watch.ready:
                break
            await asyncio.sleep(0.05)
        assert not svc.watch.ready
    finally:
        await svc.stop(0)


async def test_the_decide_stream_answers_the_previous_release_s_tables(
        fresh_nats: EmbeddedNats) -> None:
    """The tables of the previous release ask over one gRPC stream: a reply per request, in
    order, with its request_id; a bad window is answered with ``error`` and the stream goes
    on (protos/paiju/v1/arbiter.proto)."""
    svc = await arbiter(fresh_nats)
    asked = [window({1: Response("peng"), 2: Response("pass"), 3: Response("peng")}),
             window({1: Response("hu")}),              # seat 1 may not hu: refused
             window({2: Response("hu")}),
             window({1: Response("peng")})]
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{svc.port}") as channel:
            call = arbiter_pb2_grpc.ArbiterStub(channel).Decide()
            for i, w in enumerate(asked, start=1):
                request = window_to_pb(w, Rules())
                request.request_id = 100 + i
                await call.write(request)
            await call.done_writing()
            replies = [r async for r in call]
        assert [r.request_id for r in replies] == [101, 102, 103, 104]
        assert "hu" in replies[1].error
        for w, got in zip(asked, replies, strict=True):
            if not got.error:
                assert decision_from_pb(got) == resolve(w)
    finally:
        await svc.stop(0)
