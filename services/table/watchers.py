"""The lobby sessions watching a room (观战), as the room's commands count them
(commands.py): the count goes to the room's directory entry (RoomInfo.spectators). Not in
the log: a rebuilt room counts again as the lobbies' watchers come back (a resync watches
again)."""

from __future__ import annotations

from paiju.v1 import common_pb2
from services.table.room import RoomError

MAX_WATCHERS = 1000         # watchers of one room


class Watchers:
    """Who watches: a lobby session (or, when the lobby names none, a user) -> the user."""

    def __init__(self, limit: int = MAX_WATCHERS) -> None:
        self.limit = limit
        self._by_key: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._by_key)

    @staticmethod
    def key(session_id: str, user_id: int) -> str:
        return session_id or f"user:{user_id}"

    def watch(self, session_id: str, user_id: int) -> bool:
        """The session watches (again: a resync changes nothing); whether the count changed.
        RoomError ERR_ROOM_FULL when a new watcher would pass the limit."""
        key = self.key(session_id, user_id)
        if key in self._by_key:
            self._by_key[key] = user_id
            return False
        if len(self._by_key) >= self.limit:
            raise RoomError(common_pb2.ERR_ROOM_FULL, "too many watchers in this room")
        self._by_key[key] = user_id
        return True

    def unwatch(self, session_id: str, user_id: int) -> bool:
        """The session stops watching; whether it was watching."""
        return self._by_key.pop(self.key(session_id, user_id), None) is not None
