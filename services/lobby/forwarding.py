"""Commands to the table that owns a room, over the directory's links, following the room
while it moves between tables (an adoption after a table died, a table's drain): its old
owner is gone or answers "not on this table", the new one may answer ERR_ROOM_MOVING until
it has rebuilt the room."""

from __future__ import annotations

import asyncio
import logging

from paiju.v1 import common_pb2, table_pb2
from services.lobby.directory import Directory
from services.lobby.errors import Reject, Unavailable
from services.lobby.rooms import RoomCache

log = logging.getLogger("paiju.lobby.forwarding")

# A command follows a moving room for this long, pausing MOVE_FIRST seconds, then twice as
# long each time up to MOVE_LONGEST, re-reading the owner each time; a pause ends early when
# the directory's watch names another table, and the pauses start again from MOVE_FIRST at a
# new owner.
MOVE_SECONDS = 15.0
MOVE_FIRST = 0.1
MOVE_LONGEST = 1.0
MOVING = "the room is moving to another table, a moment"


class Forwarder:
    """Who owns a room (the room cache, else the ``rooms`` bucket) and the owner's reply to
    a command."""

    def __init__(self, directory: Directory, cache: RoomCache,
                 move_seconds: float = MOVE_SECONDS) -> None:
        self.directory = directory
        self.cache = cache
        self.move_seconds = move_seconds

    async def owner_address(self, room_id: int, *, fresh: bool = False) -> str:
        """The address of the table owning ``room_id``: the cache, else the rooms bucket."""
        entry = None if fresh else self.cache.get(room_id)
        if entry is not None and entry.address:
            return entry.address
        value = await self.directory.room(room_id)
        if value is None or not value.address:   # the leader's word before "no room"
            value = await self.directory.room(room_id, leader=True)
        if value is None or not value.address:
            raise Reject(common_pb2.ERR_NO_SUCH_ROOM, f"room {room_id} does not exist")
        return value.address

    async def command(self, room_id: int, cmd: table_pb2.TableCommand,
                      address: str = "") -> table_pb2.TableReply:
        """The owning table's reply to ``cmd``; ``address`` is where the room is thought to
        be (empty: ask the directory).

        A room moves when its table dies (another adopts it) or drains: the old owner's link
        fails or it answers "not on this table" (ERR_NO_SUCH_ROOM), the new one answers
        ERR_ROOM_MOVING until it has rebuilt the room. Then the command is sent again to the
        owner the directory names now, after a short pause growing from MOVE_FIRST to
        MOVE_LONGEST seconds, for up to ``move_seconds``; past that the answer is
        ERR_ROOM_MOVING ("a moment"), never an internal error. ERR_NO_SUCH_ROOM is the
        answer only once the directory has no such room."""
        if not address:
            entry = self.cache.get(room_id)
            address = entry.address if entry is not None else ""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.move_seconds
        pause = MOVE_FIRST
        problem = ""
        moving = False   # a table answered ERR_ROOM_MOVING: the room exists, whatever we read
        tries = 0
        asked: set[str] = set()   # the tables tried for this command
        while True:
            if address:
                tries += 1
                asked.add(address)
                link = self.directory.link(address)
                # the watch showing the room at another table ends the wait for this one (a
                # table frozen or killed with the command: its adopter answers it at once)
                gone = self.cache.left(room_id, address)
                try:
                    reply = await link.command(cmd, timeout=min(
                        link.timeout, max(0.5, deadline - loop.time())), gone=gone)
                except Unavailable as exc:
                    problem = exc.message   # the table died or is cut off: who owns it now?
                else:
                    if reply.code not in (common_pb2.ERR_ROOM_MOVING, common_pb2.ERR_NO_SUCH_ROOM):
                        if tries > 1:
                            log.info("command followed a moving room",
                                     extra={"room": room_id, "tries": tries, "address": address})
                        return reply
                    problem = reply.message
                    moving = moving or reply.code == common_pb2.ERR_ROOM_MOVING
                finally:
                    self.cache.unwatch(room_id, gone)
            tried, address = address, ""
            try:
                owner = await self._owner(room_id)
            except Unavailable as exc:
                owner, problem = "", exc.message
            if owner is None and not moving:
                # the directory has no such room (closed, dismissed, never was), and no table
                # said it is on its way
                return table_pb2.TableReply(
                    request_id=cmd.request_id, code=common_pb2.ERR_NO_SUCH_ROOM,
                    message=f"room {room_id} does not exist", seat=-1)
            owner = owner or ""
            if owner and owner != tried and loop.time() < deadline:
                address = owner   # a new owner (or a stale cache): ask it at once
                pause = MOVE_FIRST   # its rebuild takes a moment, not the back-off so far
                continue
            left = deadline - loop.time()
            if left <= 0:
                log.warning("room still moving, command not delivered",
                            extra={"room": room_id, "tries": tries, "problem": problem})
                return table_pb2.TableReply(request_id=cmd.request_id,
                                            code=common_pb2.ERR_ROOM_MOVING, message=MOVING,
                                            seat=-1)
            # the last try is at the deadline; the table the watch named meanwhile, else the
            # owner read ("": the directory is read again next time)
            moved = await self._moved_or(room_id, tried, min(pause, left), asked)
            pause = MOVE_FIRST if moved else min(pause * 2, MOVE_LONGEST)
            address = moved or owner

    async def _moved_or(self, room_id: int, tried: str, seconds: float, asked: set[str]) -> str:
        """Wait ``seconds``, or less: until the watch shows the room at another table than
        ``tried`` (its adopter has claimed it: the claim comes a lease after the death, not
        on the pauses' beat); that table's address, "" when the wait ran out. A table the
        watch names already (its claim came in while the owner was read, or the read was of
        a replica behind) is not waited for, unless this command has tried it: two tables
        each naming the other are asked at the pauses' beat, not in a tight loop."""
        entry = self.cache.get(room_id)
        if entry is not None and entry.address and entry.address not in asked:
            return entry.address
        moved = self.cache.left(room_id, tried)
        try:
            await asyncio.wait((moved,), timeout=seconds)
        finally:
            self.cache.unwatch(room_id, moved)
        entry = self.cache.get(room_id)
        return entry.address if moved.done() and entry is not None else ""

    async def _owner(self, room_id: int) -> str | None:
        """The owner's address from the ``rooms`` bucket read now; None when the room is not
        there (closed, dismissed, never was); Unavailable when the directory cannot tell."""
        try:
            value = await self.directory.room(room_id)
            if value is None:   # maybe a replica catching up: the leader's word before "no room"
                value = await self.directory.room(room_id, leader=True)
        except Exception as exc:  # NATS away or a KV timeout: not an answer about the room
            raise Unavailable(f"directory: {exc!r}") from None
        if value is None or value.status == common_pb2.ROOM_FINISHED:
            return None
        return value.address
