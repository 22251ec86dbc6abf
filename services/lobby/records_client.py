"""The lobby's client of the records service: profiles, history scores, replays."""

from __future__ import annotations

import grpc

from paiju.v1 import common_pb2, lobby_msgs_pb2, records_pb2, records_pb2_grpc
from services.lobby.directory import Reject, Unavailable


class RecordsClient:
    def __init__(self, address: str, timeout: float = 5.0) -> None:
        self.address = address
        self.timeout = timeout
        self.channel = grpc.aio.insecure_channel(address)
        self.stub = records_pb2_grpc.RecordsStub(self.channel)

    async def profile(self, user_id: int, nickname: str, *, create: bool,
                      ) -> records_pb2.PlayerRecord:
        """The player's profile; ``create`` (dev profiles) makes it on first login."""
        if create:
            req = records_pb2.EnsurePlayerRequest(user_id=user_id,
                                                  nickname=nickname or f"player{user_id}")
            return await self._call(self.stub.EnsurePlayer, req)
        return await self._call(self.stub.GetPlayer, records_pb2.GetPlayerRequest(user_id=user_id),
                                not_found=common_pb2.ERR_BAD_TOKEN)

    async def history(self, room_id: int) -> lobby_msgs_pb2.UseHistoryScore:
        return await self._call(self.stub.GetHistoryScores,
                                records_pb2.HistoryRequest(room_id=room_id))

    async def replay(self, room_id: int, hand_no: int, user_id: int) -> lobby_msgs_pb2.Replay:
        return await self._call(self.stub.GetReplay, records_pb2.ReplayRequest(
            room_id=room_id, hand_no=hand_no, user_id=user_id))

    async def _call(self, method, request,  # type: ignore[no-untyped-def]
                    not_found: int = common_pb2.ERR_NO_SUCH_ROOM):
        try:
            return await method(request, timeout=self.timeout)
        except grpc.aio.AioRpcError as exc:
            if exc.code() == grpc.StatusCode.NOT_FOUND:
                raise Reject(not_found, exc.details() or "not found") from None
            if exc.code() == grpc.StatusCode.INVALID_ARGUMENT:
                raise Reject(common_pb2.ERR_BAD_FRAME, exc.details() or "bad request") from None
            raise Unavailable(f"records: {exc.code().name} {exc.details() or ''}".strip()) from None

    async def close(self) -> None:
        await self.channel.close()
