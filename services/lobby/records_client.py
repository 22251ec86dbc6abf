"""The lobby's client of the records service: profiles, history scores, replays, ratings.

Records runs as several replicas. The dial address (``records.address``) may be:

- one address, ``records:50054`` (a Kubernetes Service: a DNS name whose addresses are all
  used, round robin);
- a gRPC target naming several replicas, ``ipv4:127.0.0.1:5001,127.0.0.1:5002`` (or any
  target with a scheme, e.g. ``dns:///records-headless:50054``), balanced round robin;
- a plain comma-separated list, ``records-0:50054,records-1:50054``: one channel per address,
  tried in turn.

A dead replica costs no call: round robin only picks connected backends, a call that fails
with UNAVAILABLE is retried by gRPC (``RETRY_POLICY``; every records call is a read or an
idempotent upsert), and then on the next channel of a plain list.

Profile reads of concurrent logins are coalesced (:class:`ProfileBatcher`): a burst of
reconnecting players costs records one ``GetPlayers`` (one ``SELECT ... IN``) per loop turn
instead of one ``GetPlayer`` each. A records of the previous release has no ``GetPlayers``
(UNIMPLEMENTED): the lobby then reads profiles one by one again for ``FALLBACK_SECONDS``
before it tries again (deploy/README.md, "Releasing protocol changes").
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import time
from collections.abc import Callable
from typing import Any

import grpc

from paiju.v1 import common_pb2, lobby_msgs_pb2, records_pb2, records_pb2_grpc
from services.common import tls
from services.common.config import Config
from services.lobby.errors import Reject, Unavailable

log = logging.getLogger("paiju.lobby.records")

SERVICE = records_pb2.DESCRIPTOR.services_by_name["Records"].full_name
SCHEMES = ("ipv4:", "ipv6:", "dns:", "unix:", "unix-abstract:", "vsock:")

# gRPC service config: balance over every address of the target, and retry a call refused
# as UNAVAILABLE (a replica going away) on another one
SERVICE_CONFIG = json.dumps({
    "loadBalancingConfig": [{"round_robin": {}}],
    "methodConfig": [{
        "name": [{"service": SERVICE}],
        "retryPolicy": {"maxAttempts": 4, "initialBackoff": "0.1s", "maxBackoff": "1s",
                        "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]},
    }],
})
CHANNEL_OPTIONS = (("grpc.lb_policy_name", "round_robin"), ("grpc.enable_retries", 1),
                   ("grpc.service_config", SERVICE_CONFIG))
MAX_BATCH = 500          # profiles per GetPlayers (records refuses more: INVALID_ARGUMENT)
MAX_IN_FLIGHT = 4        # GetPlayers calls at once; more reads wait for one to return
FALLBACK_SECONDS = 60.0  # after UNIMPLEMENTED, GetPlayer one by one this long


def dial_targets(address: str) -> list[str]:
    """The gRPC targets of a dial address (see the module doc): a target with a scheme is
    one target (gRPC balances over its addresses); a plain list is one target each."""
    address = address.strip()
    if address.startswith(SCHEMES):
        return [address]
    targets = [a.strip() for a in address.split(",") if a.strip()]
    if not targets:
        raise ValueError("no records address given")
    return targets


def balanced_channel(target: str, cfg: Config | None = None) -> grpc.aio.Channel:
    """A channel that balances over every address of ``target`` and retries UNAVAILABLE;
    mutual TLS as the lobby when ``cfg`` turns internal TLS on (services/common/tls.py)."""
    if cfg is None:
        return grpc.aio.insecure_channel(target, options=CHANNEL_OPTIONS)
    return tls.channel(cfg, target, "records", CHANNEL_OPTIONS)


class RecordsClient:
    def __init__(self, address: str, timeout: float = 5.0, *, cfg: Config | None = None) -> None:
        self.address = address
        self.timeout = timeout
        self.channels = [balanced_channel(t, cfg) for t in dial_targets(address)]
        self.stubs = [records_pb2_grpc.RecordsStub(c) for c in self.channels]
        self._turn = itertools.count()
        self.profiles = ProfileBatcher(self)

    async def profile(self, user_id: int, nickname: str, *, create: bool,
                      ) -> records_pb2.PlayerRecord:
        """The player's profile; ``create`` (dev profiles) makes it on first login. A read
        joins the pending batch of concurrent logins (:class:`ProfileBatcher`)."""
        player: records_pb2.PlayerRecord
        if create:
            req = records_pb2.EnsurePlayerRequest(user_id=user_id,
                                                  nickname=nickname or f"player{user_id}")
            player = await self._call(lambda s: s.EnsurePlayer, req)
        else:
            player = await self.profiles.get(user_id)
        return player

    async def get_player(self, user_id: int) -> records_pb2.PlayerRecord:
        """One profile by one GetPlayer (a missing one: ERR_BAD_TOKEN)."""
        player: records_pb2.PlayerRecord = await self._call(
            lambda s: s.GetPlayer, records_pb2.GetPlayerRequest(user_id=user_id),
            not_found=common_pb2.ERR_BAD_TOKEN)
        return player

    async def history(self, room_id: int, user_id: int = 0) -> lobby_msgs_pb2.UseHistoryScore:
        """A room's history scores for ``user_id`` (records answers only for a room he sat
        in: ERR_NO_SUCH_ROOM otherwise); user 0 is the operator (the console)."""
        scores: lobby_msgs_pb2.UseHistoryScore = await self._call(
            lambda s: s.GetHistoryScores,
            records_pb2.HistoryRequest(room_id=room_id, user_id=user_id))
        return scores

    async def replay(self, room_id: int, hand_no: int, user_id: int) -> lobby_msgs_pb2.Replay:
        replay: lobby_msgs_pb2.Replay = await self._call(
            lambda s: s.GetReplay,
            records_pb2.ReplayRequest(room_id=room_id, hand_no=hand_no, user_id=user_id))
        return replay

    async def rating(self, user_id: int, scope: records_pb2.RatingScope,
                     ) -> records_pb2.RatingRecord:
        """A player's rating and rank in a game and season (hands 0 before his first rated
        hand there)."""
        rating: records_pb2.RatingRecord = await self._call(
            lambda s: s.GetRating, records_pb2.RatingRequest(user_id=user_id, scope=scope))
        return rating

    async def leaderboard(self, scope: records_pb2.RatingScope, limit: int, offset: int,
                          ) -> records_pb2.LeaderboardReply:
        board: records_pb2.LeaderboardReply = await self._call(
            lambda s: s.ListLeaderboard,
            records_pb2.LeaderboardRequest(scope=scope, limit=limit, offset=offset))
        return board

    async def start_season(self, game: str, operator: str) -> records_pb2.SeasonRecord:
        """An operator starts the game's next rating season."""
        season: records_pb2.SeasonRecord = await self._call(
            lambda s: s.StartSeason, records_pb2.StartSeasonRequest(game=game, operator=operator))
        return season

    async def append_audit(self, entry: records_pb2.AuditRecord) -> records_pb2.AuditRecord:
        """One operator action into the audit log (the console's write actions)."""
        stored: records_pb2.AuditRecord = await self._call(lambda s: s.AppendAudit, entry)
        return stored

    async def list_audit(self, request: records_pb2.ListAuditRequest,
                         ) -> records_pb2.ListAuditReply:
        page: records_pb2.ListAuditReply = await self._call(lambda s: s.ListAudit, request)
        return page

    async def _call(self, method: Callable[[records_pb2_grpc.RecordsStub], Any], request: Any,
                    not_found: int = common_pb2.ERR_NO_SUCH_ROOM,
                    passed: tuple[grpc.StatusCode, ...] = ()) -> Any:
        """One call, on the next channel in turn (one known to be failing last);
        UNAVAILABLE moves on to the next one. A status in ``passed`` is raised as it is
        (grpc.aio.AioRpcError)."""
        last: grpc.aio.AioRpcError | None = None
        for stub in self._in_turn():
            try:
                return await method(stub)(request, timeout=self.timeout)
            except grpc.aio.AioRpcError as exc:
                if exc.code() in passed:
                    raise
                if exc.code() == grpc.StatusCode.NOT_FOUND:
                    raise Reject(not_found, exc.details() or "not found") from None
                if exc.code() == grpc.StatusCode.INVALID_ARGUMENT:
                    raise Reject(common_pb2.ERR_BAD_FRAME, exc.details() or "bad request") from None
                last = exc
                if exc.code() != grpc.StatusCode.UNAVAILABLE:
                    break
        assert last is not None
        raise Unavailable(f"records: {last.code().name} {last.details() or ''}".strip())

    def _in_turn(self) -> list[records_pb2_grpc.RecordsStub]:
        n = len(self.stubs)
        if n == 1:
            return self.stubs
        first = next(self._turn)
        order = [(first + i) % n for i in range(n)]
        failing = grpc.ChannelConnectivity.TRANSIENT_FAILURE
        order.sort(key=lambda i: self.channels[i].get_state() == failing)   # stable
        return [self.stubs[i] for i in order]

    async def close(self) -> None:
        for channel in self.channels:
            await channel.close()


class ProfileBatcher:
    """Profile reads (``create=False``) of concurrent logins answered by one GetPlayers.

    The first read of an empty batch schedules its flush on the next loop turn; a batch
    that reaches ``MAX_BATCH`` users is flushed at once. While ``MAX_IN_FLIGHT`` calls are
    out, the batch grows until one of them returns (group commit: logins arriving one a
    loop turn still share calls under a burst, and a lone login waits for nothing). Each read waits on a future of its
    own (a cancelled login leaves the others alone). Outcomes are those of one GetPlayer
    each: a user missing from the answer is refused with ERR_BAD_TOKEN, a failed call fails
    every read of its batch as ``_call`` fails one (ERR_UNAVAILABLE, ERR_BAD_FRAME). A
    records without GetPlayers (UNIMPLEMENTED, the previous release) has the batch answered
    by GetPlayer per user, and reads go one by one for ``FALLBACK_SECONDS``.
    """

    def __init__(self, client: RecordsClient) -> None:
        self.client = client
        self.pending: dict[int, list[asyncio.Future[records_pb2.PlayerRecord]]] = {}
        self.single_until = 0.0      # monotonic time until which reads go one by one
        self.flushes = 0             # GetPlayers calls made (tests, benchmarks)
        self._tasks: set[asyncio.Task[None]] = set()    # batches out (their calls)

    async def get(self, user_id: int) -> records_pb2.PlayerRecord:
        if user_id <= 0 or time.monotonic() < self.single_until:
            # an id records refuses (INVALID_ARGUMENT) must not fail a whole batch
            return await self.client.get_player(user_id)
        loop = asyncio.get_running_loop()
        if not self.pending:
            loop.call_soon(self._flush)
        future: asyncio.Future[records_pb2.PlayerRecord] = loop.create_future()
        self.pending.setdefault(user_id, []).append(future)
        if len(self.pending) >= MAX_BATCH:
            self._flush(full=True)
        return await future

    def _flush(self, full: bool = False) -> None:
        """Send the pending batch, unless it went already (full) or ``MAX_IN_FLIGHT`` calls
        are out (then the first of them to return sends it)."""
        if not self.pending or (len(self._tasks) >= MAX_IN_FLIGHT and not full):
            return
        batch, self.pending = self.pending, {}
        task = asyncio.get_running_loop().create_task(self._answer(batch))
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        self._flush()

    async def _answer(self, batch: dict[int, list[asyncio.Future[records_pb2.PlayerRecord]]],
                      ) -> None:
        try:
            await self._ask(batch)
        finally:   # cancelled (closing) or a bug: no read waits forever
            for futures in batch.values():
                _fail(futures, Unavailable("records: the profile read was abandoned"))

    async def _ask(self, batch: dict[int, list[asyncio.Future[records_pb2.PlayerRecord]]],
                   ) -> None:
        self.flushes += 1
        request = records_pb2.GetPlayersRequest(user_ids=list(batch))
        try:
            reply = await self.client._call(lambda s: s.GetPlayers, request,
                                            passed=(grpc.StatusCode.UNIMPLEMENTED,))
        except grpc.aio.AioRpcError as exc:   # UNIMPLEMENTED: a records of the last release
            self.single_until = time.monotonic() + FALLBACK_SECONDS
            log.warning("records has no GetPlayers (%s): profiles read one by one for %.0f s",
                        exc.details() or exc.code().name, FALLBACK_SECONDS)
            await asyncio.gather(*(self._one(uid, futures) for uid, futures in batch.items()))
            return
        except Reject as exc:
            for futures in batch.values():
                _fail(futures, exc)
            return
        found = {p.user_id: p for p in reply.players}
        for uid, futures in batch.items():
            player = found.get(uid)
            if player is None:
                _fail(futures, Reject(common_pb2.ERR_BAD_TOKEN, f"no player {uid}"))
            else:
                _answer_all(futures, player)

    async def _one(self, user_id: int,
                   futures: list[asyncio.Future[records_pb2.PlayerRecord]]) -> None:
        try:
            player = await self.client.get_player(user_id)
        except Reject as exc:
            _fail(futures, exc)
        else:
            _answer_all(futures, player)


def _answer_all(futures: list[asyncio.Future[Any]], player: records_pb2.PlayerRecord) -> None:
    for future in futures:
        if not future.done():
            future.set_result(player)


def _fail(futures: list[asyncio.Future[Any]], exc: Reject) -> None:
    """Each waiting read fails with an error like ``exc`` (its own instance)."""
    for future in futures:
        if not future.done():
            future.set_exception(type(exc)(exc.message) if isinstance(exc, Unavailable)
                                 else Reject(exc.code, exc.message))
