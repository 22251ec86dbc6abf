"""A TCP relay on loopback in front of a real lobby, which can freeze the connections open
now: they stay open and pass nothing more on, as a frozen process's or a cut network's do,
while new connections are relayed as usual (a client's way back to a live lobby). The
heartbeat tests of the Python and the web client use it."""

from __future__ import annotations

import asyncio
import contextlib


class FreezingRelay:
    def __init__(self, target: str) -> None:
        self.host, port = target.rsplit(":", 1)
        self.port = int(port)
        self.server: asyncio.Server | None = None
        self.pipes: list[dict[str, bool]] = []      # one flag per connection: frozen
        self.tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> str:
        """Listen; the relay's own address, ``127.0.0.1:<port>``."""
        self.server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        return f"127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    def freeze(self) -> int:
        """Freeze the connections open now; how many there are."""
        for state in self.pipes:
            state["frozen"] = True
        return len(self.pipes)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(self.host, self.port)
        state = {"frozen": False}
        self.pipes.append(state)
        for src, dst in ((reader, up_writer), (up_reader, writer)):
            task = asyncio.create_task(self._pipe(src, dst, state))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

    async def _pipe(self, src: asyncio.StreamReader, dst: asyncio.StreamWriter,
                    state: dict[str, bool]) -> None:
        with contextlib.suppress(ConnectionError):
            while data := await src.read(65536):
                if state["frozen"]:
                    await asyncio.Event().wait()     # held open, never passed on
                dst.write(data)
                await dst.drain()
        dst.close()

    async def close(self) -> None:
        for task in list(self.tasks):
            task.cancel()
        if self.server is not None:
            self.server.close()
