"""What the table's background parts (lease.py, adoption.py) use of the table
(core.TableCore), as a protocol: they need not import the core that wires them."""

from __future__ import annotations

from typing import Any, Protocol

from services.common.config import Config
from services.table.directory import DirectoryWriter
from services.table.dirview import DirectoryView
from services.table.lifecycle import Rooms


class TableHost(Protocol):
    cfg: Config
    instance: str
    address: str
    started_at: float
    rooms: Rooms                # every room's state here; as a mapping, the rooms it runs
    tenure: dict[int, int]      # room -> the lease epoch it is held under (lease.py)
    nc: Any
    js: Any
    kv_tables: Any
    view: DirectoryView
    directory: DirectoryWriter

    def has_pending(self) -> bool: ...

    async def retry_pending(self) -> None: ...

    async def rebuild_safely(self, room_id: int) -> bool: ...

    async def let_go_lost(self, room_id: int) -> None: ...

    async def reverify(self) -> None: ...

    def forget(self, room_id: int, *, stop: bool = False, lapsed: bool = False) -> None: ...
