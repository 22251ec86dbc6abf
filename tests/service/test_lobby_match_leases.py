"""One active matcher per game (issue 23; services/lobby/matchmaker.py, "The active
matchers"), with a real nats-server, arbiter, table and lobbies on loopback (records
in-test, as test_lobby_matchmaking.py): with two lobbies each game's lease is held by one
lobby at a time and the leases spread (a third lobby gets one); a lobby killed with
SIGKILL hands its games over to the other within a few seconds, while the game the other
lobby runs goes on untouched; no ticket is lost or matched twice; a pair of strangers
seated together by one game's matcher is remembered by another game's matcher on the other
lobby."""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from pathlib import Path
from typing import Any

import nats
from nats.js.errors import NotFoundError

from games import registry
from paiju.contracts.lobby import MatchLease
from paiju.contracts.typed import BadContract
from paiju.v1 import lobby_msgs_pb2
from services.common.natsd import EmbeddedNats
from services.lobby.matchmaker import BUCKET, LEASE_PREFIX
from services.lobby.server import LobbyHost
from tests.service.test_lobby_matchmaking import found, queued, stack
from tests.support.lobbyworld import SECRET
from tests.support.procs import make_service
from tests.support.waiting import eventually

LEASE = 1.0     # FAST's match_lease_seconds (test_lobby_matchmaking.py)


def holders(hosts: list[LobbyHost], game: str) -> list[LobbyHost]:
    return [h for h in hosts if game in h.app.matchmaking.leading]


async def record_holders(hosts: list[LobbyHost], games: set[str],
                         history: dict[str, list[str]], overlaps: list[str]) -> None:
    """Every 20 ms: who leads each game; a change of holder is appended to the game's
    history, two holders at once to ``overlaps``."""
    while True:
        for game in games:
            now = holders(hosts, game)
            if len(now) > 1:
                overlaps.append(f"{game}: {[h.app.matchmaking.instance for h in now]}")
            if now and (not history[game] or history[game][-1] != now[0].app.matchmaking.instance):
                history[game].append(now[0].app.matchmaking.instance)
        await asyncio.sleep(0.02)


async def lease_owners(nats_url: str, games: set[str]) -> dict[str, str]:
    """Who holds each game's lease, as the bucket says ("" free)."""
    nc = await nats.connect(nats_url)
    try:
        kv = await nc.jetstream().key_value(BUCKET)
        owners = {}
        for g in games:
            try:
                owners[g] = MatchLease.decode((await kv.get(LEASE_PREFIX + g)).value).owner
            except (NotFoundError, BadContract):
                owners[g] = ""      # free (given up a moment ago: deleted, no value)
        return owners
    finally:
        await nc.close()


async def test_each_games_matcher_is_elected_once_and_the_leases_spread(
        fresh_nats: EmbeddedNats) -> None:
    async with stack(fresh_nats.url) as s:
        a = await s.lobby()
        games = set(a.app.matchmaking.games)
        assert games == {spec.name for spec in registry.all()}
        n = len(games)
        share2, share3 = math.ceil(n / 2), math.ceil(n / 3)   # the fair share (matchmaker)
        await eventually(lambda: a.app.matchmaking.leading == games)      # alone: every game
        history: dict[str, list[str]] = {g: [] for g in games}
        overlaps: list[str] = []
        hosts = [a]
        recorder = asyncio.create_task(record_holders(hosts, games, history, overlaps))
        try:
            b = await s.lobby()
            hosts.append(b)
            # a lobby joined: A gives games up one by one down to its share (3 games over 2
            # lobbies: 2 at most), B takes them; every game keeps one holder
            await eventually(lambda: all(len(holders(hosts, g)) == 1 for g in games)
                        and len(b.app.matchmaking.leading) == n - share2, seconds=10 * n)
            settled = {g: holders(hosts, g)[0] for g in games}
            await asyncio.sleep(4 * LEASE)          # and it stays so: nobody moves again
            assert {g: holders(hosts, g) for g in games} == {g: [h] for g, h in settled.items()}
            assert len(a.app.matchmaking.leading) == share2
            moved = [g for g in games if len(history[g]) == 2]
            assert len(moved) == n - share2
            assert all(history[g] == [a.app.matchmaking.instance, b.app.matchmaking.instance]
                       for g in moved)
            assert all(len(history[g]) == 1 for g in games if g not in moved)
            assert await lease_owners(fresh_nats.url, games) == {
                g: h.app.matchmaking.instance for g, h in settled.items()}
            # a third lobby: nobody over the share (3 games: one each; 4: two, two, none)
            c = await s.lobby()
            hosts.append(c)
            await eventually(lambda: all(len(h.app.matchmaking.leading) <= share3 for h in hosts)
                        and all(len(holders(hosts, g)) == 1 for g in games), seconds=10 * n)
            await asyncio.sleep(2 * LEASE)
            assert all(len(h.app.matchmaking.leading) <= share3 for h in hosts)
            assert set().union(*(h.app.matchmaking.leading for h in hosts)) == games
            assert all(len(history[g]) <= 2 for g in games), history   # one move each at most
            assert not overlaps, overlaps
        finally:
            recorder.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await recorder


async def test_a_killed_lobby_hands_its_games_over_and_the_others_go_on(
        fresh_nats: EmbeddedNats, tmp_path: Path) -> None:
    """Lobby A, a real process, and lobby B, in-test, share the games' leases (A started
    first, so it holds its fair share, B the rest; Y is one of B's, X one of A's). Two tickets
    wait in X and two in Y, all from players on B. A is killed (SIGKILL:
    no lease given up); the rest of a table of each (one player for Dou Dizhu, two for the
    others) ask at once. Y's matcher on B
    never stops (the same matcher, passes all along) and matches Y at once; B takes X's
    lease over once it stood still and matches X, the tickets taken before the kill
    included. Every player is seated once."""
    lease = 2.0
    async with stack(fresh_nats.url) as s:
        proc = make_service("lobby", fresh_nats.url, tmp_path, **{
            "PAIJU_LOBBY__TOKEN_SECRET": SECRET, "PAIJU_RECORDS__ADDRESS": s.cfg.records.address,
            "PAIJU_LOBBY__WS_PORT": "-1", "PAIJU_LOBBY__MATCH_TICK_SECONDS": "0.2",
            "PAIJU_LOBBY__MATCH_LEASE_SECONDS": str(lease)})
        await asyncio.to_thread(proc.start)
        try:
            b = await s.lobby(match_lease_seconds=lease)
            mm = b.app.matchmaking
            games = set(mm.games)
            owners: dict[str, str] = {}

            b_share = len(games) - math.ceil(len(games) / 2)   # A keeps the larger half

            async def spread() -> bool:
                """A gives its games up one by one until it holds its share: B holds the
                rest, and the bucket agrees with B's own view."""
                owners.update(await lease_owners(fresh_nats.url, games))
                return len(mm.leading) == b_share and all(owners.values()) and \
                    {g for g, o in owners.items() if o == mm.instance} == mm.leading

            deadline = time.monotonic() + 20
            while not await spread():
                assert time.monotonic() < deadline, (owners, mm.leading)
                await asyncio.sleep(0.1)
            settled = set(mm.leading)
            await asyncio.sleep(2 * lease)          # and it stays so: nobody moves again
            assert await spread() and mm.leading == settled, (owners, mm.leading)
            y = sorted(mm.leading)[0]                        # one of B's games
            x = sorted(games - mm.leading)[0]                # one of A's
            assert owners[x] != mm.instance
            players = {g: [await s.player(b, base + i) for i in range(registry.get(g).seats)]
                       for g, base in ((x, 8101), (y, 8111))}   # a table's worth each
            first = {g: [(await queued(p, game=g)).ticket_id for p in players[g][:2]]
                     for g in (x, y)}
            y_matcher = mm.matchers[y]
            await asyncio.sleep(0.5)                # two waiting in each game's matcher

            passes: list[tuple[float, int]] = []

            async def count_passes() -> None:
                while True:
                    passes.append((time.monotonic(), mm.passes.get(y, 0)))
                    assert mm.matchers.get(y) is y_matcher, "Y's matcher was replaced"
                    await asyncio.sleep(0.02)
            counter = asyncio.create_task(count_passes())
            await asyncio.to_thread(proc.kill)
            killed = time.monotonic()
            for g in (x, y):
                for p in players[g][2:]:
                    await queued(p, game=g)

            async def seated(g: str) -> tuple[float, list[Any]]:
                results = await asyncio.gather(*(found(p, timeout=20) for p in players[g]))
                return time.monotonic() - killed, results
            try:
                (y_after, y_found), (x_after, x_found) = await asyncio.gather(
                    seated(y), seated(x))
            except TimeoutError:
                raise AssertionError(
                    f"no MatchFound in 20 s: x={x} y={y} B leads {sorted(mm.leading)}, "
                    f"owners {await lease_owners(fresh_nats.url, games)}, passes {mm.passes}, "
                    f"matches {mm.matches}, tickets {sorted(mm.view)}; seen " + repr(
                        {g: [[f.WhichOneof('payload') for f in p.seen] for p in players[g]]
                         for g in (x, y)})) from None
            counter.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await counter
            print(f"\nafter the kill: {y} (B's own game) matched in {y_after:.2f} s, {x} "
                  f"(taken over) in {x_after:.2f} s; lease {lease} s, tick 0.2 s")
            # Y went on: matched before any lease could have moved, its passes never paused
            assert y_after < lease, y_after
            during = [n for t, n in passes if t >= killed]
            gaps = [t1 - t0 for (t0, n0), (t1, n1) in zip(passes, passes[1:], strict=False)
                    if t0 >= killed and n1 == n0]
            assert during[-1] > during[0] and max(gaps, default=0) < lease / 2, max(gaps)
            # X was taken over within a few seconds, the tickets taken before the kill kept
            assert x in mm.leading and x_after < lease + 3, x_after
            for g, results in ((x, x_found), (y, y_found)):
                assert len({m.match_found.room_id for m, _ in results}) == 1, g
                assert {m.match_found.ticket_id for m, _ in results[:2]} == set(first[g])
            assert {m.match_found.room_id for m, _ in x_found} != \
                {m.match_found.room_id for m, _ in y_found}
            assert mm.matches == 2
            await asyncio.sleep(1.0)                # nobody is matched a second time
            for g in (x, y):
                for p in players[g]:
                    assert sum(f.WhichOneof("payload") == "match_found" for f in p.seen) == 1
            assert not any(k.startswith("t.") for k in mm.view), \
                [k for k in mm.view if k.startswith("t.")]
        finally:
            await asyncio.to_thread(proc.stop)


async def test_strangers_met_in_one_game_are_remembered_by_another_games_matcher(
        fresh_nats: EmbeddedNats) -> None:
    """``match_stranger_tables_per_day`` 1 counts across games: four strangers seated in X
    (matched on one lobby) are not seated together in Y, whose matcher runs on the other
    lobby."""
    once = {"match_stranger_tables_per_day": 1}
    async with stack(fresh_nats.url) as s:
        a, b = await s.lobby(**once), await s.lobby(**once)
        hosts = [a, b]
        games = set(a.app.matchmaking.games)
        await eventually(lambda: all(len(holders(hosts, g)) == 1 for g in games)
                    and all(h.app.matchmaking.leading for h in hosts), seconds=10)
        x = sorted(a.app.matchmaking.leading)[0]
        y = sorted(b.app.matchmaking.leading)[0]
        uids = [8201, 8202, 8203, 8204]
        players = [await s.player(b, u) for u in uids]
        for p in players:
            await queued(p, game=x)
        results = await asyncio.gather(*(found(p) for p in players))
        assert len({m.match_found.room_id for m, _ in results}) == 1
        assert a.app.matchmaking.matches == 1
        matcher = b.app.matchmaking.matchers[y]
        await eventually(lambda: matcher.encounters.count(8201, 8202) == 1)
        for p in players:                           # out of the room, and asking for Y
            await p.request(lobby_msgs_pb2.AskExit())
            await queued(p, game=y)
        passes = b.app.matchmaking.passes[y]
        await eventually(lambda: b.app.matchmaking.passes[y] >= passes + 5)
        assert a.app.matchmaking.matches + b.app.matchmaking.matches == 1
        assert all(b.app.matchmaking.view[f"t.{u}"][1].state == "waiting" for u in uids)
