"""The table's re-read of the ``rooms`` bucket (DirectoryView.resync) on a real nats-server:
every key's last value in one watch; deleted and unreadable entries left out; a re-read that
fails leaves the view as it was."""

from __future__ import annotations

import nats
import pytest

from paiju.contracts.directory import RoomEntry
from services.common import bus
from services.common.natsd import EmbeddedNats
from services.table.dirview import DirectoryView


def entry(room_id: int, owner: str) -> bytes:
    return RoomEntry(room_id=room_id, owner=owner, address="127.0.0.1:1", game="xuezhan",
                     status=1, free_seats=4, has_password=False, room={}).encode()


async def test_a_re_read_holds_each_room_s_last_value_and_no_deleted_one(
        fresh_nats: EmbeddedNats) -> None:
    nc = await nats.connect(fresh_nats.url)
    try:
        js = nc.jetstream()
        kv = await bus.ensure_bucket(js, bus.ROOMS_BUCKET)
        tables = await bus.ensure_bucket(js, bus.TABLES_BUCKET)
        view = DirectoryView(kv, tables, 2.0)
        await view.resync()
        assert view.rooms == {}                            # an empty bucket
        await kv.put("11", entry(11, "table-a"))
        moved = await kv.put("11", entry(11, "table-b"))   # its last value counts
        await kv.put("12", entry(12, "table-a"))
        await kv.delete("12")                              # closed
        await kv.put("13", b"not a room entry")            # unreadable: logged, left out
        await view.resync()
        assert set(view.rooms) == {11}
        assert view.rooms[11][0].owner == "table-b" and view.rooms[11][1] == moved
        await nc.close()                                   # the next re-read fails ...
        with pytest.raises(Exception):  # noqa: B017  (whatever nats-py raises for it)
            await view.resync()
        assert set(view.rooms) == {11}                     # ... and changes nothing
    finally:
        if not nc.is_closed:
            await nc.close()
