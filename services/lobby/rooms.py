"""The room list cache: fed by the ``rooms`` KV bucket (watched) and by ``RoomChange`` frames
on ``lobby.rooms``. It answers AskRoomList, quick start and "who owns room N" without a
round trip. Entries carry the owner's address; the RoomInfo never has a password."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from google.protobuf import json_format

from paiju.frames import server_frame
from paiju.v1 import client_pb2, common_pb2, lobby_msgs_pb2

log = logging.getLogger("paiju.lobby.rooms")

SEATS = 4  # every game of the platform seats four players

# Statuses counted as "started" in RoomList.started_room_num.
_STARTED = frozenset({common_pb2.ROOM_PLAYING, common_pb2.ROOM_HAND_OVER,
                      common_pb2.ROOM_DISMISSING, common_pb2.ROOM_CHOOSING_ALONE})


@dataclass(frozen=True)
class RoomEntry:
    room_id: int
    address: str
    free_seats: int
    info: common_pb2.RoomInfo


def public_room(info: common_pb2.RoomInfo) -> common_pb2.RoomInfo:
    """A copy safe for the room list: no player's IP (the password has no field at all)."""
    out = common_pb2.RoomInfo()
    out.CopyFrom(info)
    for player in out.players:
        player.ip = ""
    return out


def parse_room_value(raw: bytes) -> RoomEntry | None:
    """A ``rooms`` bucket value (docs/services.md) as an entry; None if unusable."""
    try:
        value: Any = json.loads(raw)
    except ValueError:
        return None
    return room_entry(value) if isinstance(value, dict) else None


def room_entry(value: dict[str, Any]) -> RoomEntry | None:
    """A decoded ``rooms`` bucket value as an entry; None if unusable."""
    try:
        info = json_format.ParseDict(value.get("room") or {}, common_pb2.RoomInfo(),
                                     ignore_unknown_fields=True)
        room_id = int(value.get("room_id") or info.room_id)
    except (ValueError, TypeError, AttributeError, json_format.ParseError):
        return None
    if room_id <= 0:
        return None
    info.room_id = room_id
    if not info.game and value.get("game"):
        info.game = _game_of(value["game"])
    free = value.get("free_seats")
    free_seats = int(free) if isinstance(free, int) else _free_seats(info)
    return RoomEntry(room_id, str(value.get("address") or ""), free_seats, public_room(info))


def _game_of(game: Any) -> int:
    if isinstance(game, int):
        return game
    try:
        return int(common_pb2.Game.Value(str(game).upper()))
    except ValueError:
        return common_pb2.GAME_UNSPECIFIED


def _free_seats(info: common_pb2.RoomInfo) -> int:
    return max(0, SEATS - sum(1 for p in info.players if p.user_id))


class RoomCache:
    """Rooms by id, kept current by ``apply_kv`` (bucket watch) and ``apply_change``."""

    def __init__(self) -> None:
        self._rooms: dict[int, RoomEntry] = {}

    def __len__(self) -> int:
        return len(self._rooms)

    def get(self, room_id: int) -> RoomEntry | None:
        return self._rooms.get(room_id)

    def apply_kv(self, key: str, value: bytes | None, deleted: bool) -> None:
        if deleted or not value:
            if key.isascii() and key.isdigit():
                self._rooms.pop(int(key), None)
            return
        entry = parse_room_value(value)
        if entry is None:
            log.warning("unusable rooms entry", extra={"key": key})
            return
        self._rooms[entry.room_id] = entry

    def apply_change(self, change: lobby_msgs_pb2.RoomChange) -> None:
        """Fold a RoomChange frame in (the KV watch carries the owner address)."""
        room_id = change.room.room_id
        if change.reason == lobby_msgs_pb2.RoomChange.DISMISSED:
            self._rooms.pop(room_id, None)
            return
        old = self._rooms.get(room_id)
        if old is not None:
            info = public_room(change.room)
            self._rooms[room_id] = RoomEntry(room_id, old.address, _free_seats(info), info)

    def started(self) -> int:
        return sum(1 for e in self._rooms.values() if e.info.status in _STARTED)

    def room_list(self, game: int = common_pb2.GAME_UNSPECIFIED) -> lobby_msgs_pb2.RoomList:
        items = [e.info for _, e in sorted(self._rooms.items())
                 if e.info.status != common_pb2.ROOM_FINISHED
                 and (game == common_pb2.GAME_UNSPECIFIED or e.info.game == game)]
        return lobby_msgs_pb2.RoomList(items=items, started_room_num=self.started())

    def quick_pick(self, game: int, exclude: frozenset[int] = frozenset()) -> RoomEntry | None:
        """A waiting public room of ``game`` with a free seat: the fullest first, so rooms
        fill up and start; ties by lowest id."""
        candidates = [e for e in self._rooms.values()
                      if e.info.game == game and e.info.status == common_pb2.ROOM_WAITING
                      and not e.info.has_password and e.free_seats > 0 and e.address
                      and e.room_id not in exclude]
        if not candidates:
            return None
        return min(candidates, key=lambda e: (e.free_seats, e.room_id))

    def relay_frame(self, change: lobby_msgs_pb2.RoomChange) -> client_pb2.ServerFrame:
        """The RoomChange as relayed to clients: IPs cleared, this lobby's started count."""
        out = lobby_msgs_pb2.RoomChange(reason=change.reason, room=public_room(change.room),
                                        started_room_num=self.started())
        return server_frame(out)
