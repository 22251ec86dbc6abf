"""What the table's background parts (lease.py, adoption.py) use of the table
(core.TableCore), as a protocol: they need not import the core that wires them."""

from __future__ import annotations

from typing import Any, Protocol

from services.common.config import Config
from services.table.actor import RoomActor
from services.table.directory import DirectoryWriter
from services.table.dirview import DirectoryView


class TableHost(Protocol):
    cfg: Config
    instance: str
    address: str
    started_at: float
    draining: bool
    rooms: dict[int, RoomActor]
    tenure: dict[int, int]      # room -> the lease epoch it is held under (lease.py)
    moving: set[int]            # rooms being claimed, rebuilt or handed away
    logless: set[int]           # directory entries without a room log
    failed_rebuilds: set[int]
    nc: Any
    js: Any
    kv_tables: Any
    view: DirectoryView
    directory: DirectoryWriter

    def has_pending(self) -> bool: ...

    async def retry_pending(self) -> None: ...

    async def rebuild_safely(self, room_id: int) -> bool: ...

    async def reverify(self) -> None: ...

    def forget(self, room_id: int, *, stop: bool = False, keep_directory: bool = False) -> None: ...
