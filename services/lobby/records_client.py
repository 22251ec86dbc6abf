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
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from typing import Any

import grpc

from paiju.v1 import common_pb2, lobby_msgs_pb2, records_pb2, records_pb2_grpc
from services.common import tls
from services.common.config import Config
from services.lobby.errors import Reject, Unavailable

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

    async def profile(self, user_id: int, nickname: str, *, create: bool,
                      ) -> records_pb2.PlayerRecord:
        """The player's profile; ``create`` (dev profiles) makes it on first login."""
        player: records_pb2.PlayerRecord
        if create:
            req = records_pb2.EnsurePlayerRequest(user_id=user_id,
                                                  nickname=nickname or f"player{user_id}")
            player = await self._call(lambda s: s.EnsurePlayer, req)
        else:
            player = await self._call(lambda s: s.GetPlayer,
                                      records_pb2.GetPlayerRequest(user_id=user_id),
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
                    not_found: int = common_pb2.ERR_NO_SUCH_ROOM) -> Any:
        """One call, on the next channel in turn (one known to be failing last);
        UNAVAILABLE moves on to the next one."""
        last: grpc.aio.AioRpcError | None = None
        for stub in self._in_turn():
            try:
                return await method(stub)(request, timeout=self.timeout)
            except grpc.aio.AioRpcError as exc:
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
