"""What a bench's nats-server holds in memory: its monitoring and profiling ports, read.

``flags()`` gives the nats-server flags that open them (``EmbeddedNats(args=...)``);
``sample`` reads, at one moment, the server's RSS as it reports it (``/varz``), the Go
runtime's heap (the MemStats that ``/debug/pprof/heap?debug=1`` ends with), the heap that
was live at the last collection (the profile's in-use bytes: garbage made since is not in
it, so it does not swing with the collector's cycle as HeapAlloc does) by allocation site,
and each JetStream stream's messages, bytes and distinct subjects (``/jsz?streams=true``).
Go samples one allocation per 512 KiB on average (the profile's ``heap/1048576`` header is
twice that rate), so each record's bytes are scaled back by the chance that an allocation
of its average size was sampled, as pprof does.
"""

from __future__ import annotations

import json
import math
import re
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from services.common.natsd import free_port

MEMSTATS = ("HeapAlloc", "HeapInuse", "HeapIdle", "HeapReleased", "Sys", "NumGC")
RECORD = re.compile(r"^(\d+): (\d+) \[\d+: \d+\] @")
FRAME = re.compile(r"^#\t+0x[0-9a-f]+\t+(\S+)\+0x")
RUNTIME = ("runtime.", "sync.", "bytes.", "strings.", "encoding/", "reflect.", "fmt.",
           "internal/", "slices.", "maps.", "path/filepath.")


@dataclass
class Ports:
    monitor: int = field(default_factory=free_port)
    profile: int = field(default_factory=free_port)

    def flags(self) -> list[str]:
        return ["-m", str(self.monitor), "--profile", str(self.profile)]


@dataclass(frozen=True)
class Sample:
    rss_mib: float
    memstats: dict[str, float]      # MEMSTATS, bytes (NumGC a count)
    streams: dict[str, dict[str, float]]   # name: messages, bytes, subjects, deleted
    sites: dict[str, float]         # live bytes at the last collection, by allocation site

    @property
    def live_at_gc(self) -> float:
        return sum(self.sites.values())


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=10) as reply:
        return bytes(reply.read())


def sample(ports: Ports, depth: int = 6, collect: bool = False) -> Sample:
    """Everything at one moment; allocation sites named by ``depth`` frames (``sites``).
    ``collect``: the server collects its garbage first, so that the live heap is now's."""
    varz = json.loads(_get(f"http://127.0.0.1:{ports.monitor}/varz"))
    jsz = json.loads(_get(f"http://127.0.0.1:{ports.monitor}/jsz?streams=true"))
    streams: dict[str, dict[str, float]] = {}
    for account in jsz.get("account_details", []):
        for detail in account.get("stream_detail", []):
            state: dict[str, Any] = detail.get("state", {})
            streams[detail["name"]] = {"messages": state.get("messages", 0),
                                       "bytes": state.get("bytes", 0),
                                       "subjects": state.get("num_subjects", 0),
                                       "deleted": state.get("num_deleted", 0)}
    query = "debug=1&gc=1" if collect else "debug=1"
    profile = _get(f"http://127.0.0.1:{ports.profile}/debug/pprof/heap?{query}").decode()
    stats: dict[str, float] = {}
    for line in profile.splitlines():
        if line.startswith("# ") and " = " in line:
            key, _, text = line[2:].partition(" = ")
            if key in MEMSTATS:
                stats[key] = float(text)
    return Sample(varz.get("mem", 0) / 2 ** 20, stats, streams, sites(profile, depth))


def sites(profile: str, depth: int) -> dict[str, float]:
    """Live heap bytes by allocation site: the first ``depth`` frames outside Go's runtime
    and standard containers, joined by " < " (callee first)."""
    out: dict[str, float] = {}
    objects = size = 0
    frames: list[str] = []

    def close() -> None:
        if objects and frames:
            average = size / objects
            scaled = size / (1 - math.exp(-average / (512 * 1024)))
            own = [f for f in frames if not f.startswith(RUNTIME)][:depth] or frames[:depth]
            key = " < ".join(f.rsplit("/", 1)[-1] for f in own)
            out[key] = out.get(key, 0.0) + scaled

    for line in profile.splitlines():
        record = RECORD.match(line)
        if record:
            close()
            objects, size, frames = int(record.group(1)), int(record.group(2)), []
            continue
        frame = FRAME.match(line)
        if frame:
            frames.append(frame.group(1))
    close()
    return out
