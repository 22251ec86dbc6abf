"""A memory probe for one service process, a diagnostic of bench/bench_soak.py (``--probe``).

Python imports this module at start when ``bench/memprobe`` is on PYTHONPATH. It does
nothing unless ``PAIJU_MEMPROBE`` names the service it runs in (``table`` for
``python -m services.table``) and ``PAIJU_MEMPROBE_OUT`` names a file; then, with
``PAIJU_MEMPROBE_TRACE=1``, it starts tracemalloc (1 frame), and it answers two signals by
appending a section to that file:

- SIGUSR1: RSS, the collector's counts, pymalloc's arenas, the size and hits of every
  ``functools`` cache of our modules, and with tracemalloc its traced size and the 30
  allocation sites that grew most since the previous SIGUSR1 (by size). Taking a snapshot
  of a large heap stops the process for seconds: the table's stall fencing then rebuilds
  its rooms (services/table/lease.py), so only the first diffs of a run are the product's;
- SIGUSR2: what the collector alone would give back: RSS, then ``gc.unfreeze`` and a full
  collection that keeps what it finds (``gc.DEBUG_SAVEALL``; the 30 commonest types of that
  cyclic garbage), RSS, then glibc's ``malloc_trim(0)``, RSS; the services' freezing
  (services/common/runner.freeze_gc) freezes again on its next turn. This changes the
  process (it frees its cycles and trims), so it is a probe, not a measure.

Never loaded by the services themselves, the tests or make run.
"""

from __future__ import annotations

import collections
import ctypes
import gc
import os
import signal
import sys
import time
import tracemalloc
from typing import Any

_SERVICE = os.environ.get("PAIJU_MEMPROBE", "")
_OUT = os.environ.get("PAIJU_MEMPROBE_OUT", "")
_state: dict[str, Any] = {"snapshot": None, "n": 0}


def _rss_mib() -> float:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _write(lines: list[str]) -> None:
    with open(_OUT, "a", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n\n")


def _head(kind: str) -> list[str]:
    _state["n"] += 1
    traced, peak = tracemalloc.get_traced_memory()
    return [f"## {kind} #{_state['n']} at {time.strftime('%H:%M:%S')}",
            f"rss {_rss_mib():.1f} MiB; traced {traced / 2**20:.1f} MiB (peak {peak / 2**20:.1f}); "
            f"gc objects {len(gc.get_objects())}, frozen {gc.get_freeze_count()}, "
            f"counts {gc.get_count()}; pymalloc {_pymalloc()}", *_caches()]


def _caches() -> list[str]:
    """Every functools.lru_cache of our modules (games, services, paiju): its size and hits."""
    out = []
    for name, module in list(sys.modules.items()):
        if not name.startswith(("games.", "services.", "paiju.")):
            continue
        for attr, fn in list(vars(module).items()):
            if hasattr(fn, "cache_info") and getattr(fn, "__module__", "") == name:
                info = fn.cache_info()
                out.append(f"cache {name}.{attr}: {info.currsize} of {info.maxsize}, "
                           f"hits {info.hits}, misses {info.misses}")
    return out


def _pymalloc() -> str:
    """Arenas (1 MiB each) of CPython's small-object allocator in use now, and the most ever
    (``sys._debugmallocstats`` writes to the C stderr: caught through a file)."""
    import tempfile
    with tempfile.TemporaryFile() as f:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(f.fileno(), 2)
        try:
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        f.seek(0)
        text = f.read().decode(errors="replace")
    found = {line.split("=")[0].strip("# ").strip(): line.split("=")[-1].strip()
             for line in text.splitlines() if line.startswith("# arenas")}
    return (f"arenas current {found.get('arenas allocated current')}, "
            f"highwater {found.get('arenas highwater mark')}")


def _diff(signum: int, frame: Any) -> None:
    lines = _head("diff")
    if not tracemalloc.is_tracing():
        _write(lines)
        return
    snap = tracemalloc.take_snapshot().filter_traces(
        (tracemalloc.Filter(False, tracemalloc.__file__),))
    before = _state["snapshot"]
    if before is not None:
        stats = snap.compare_to(before, "lineno")
        lines += [f"{s.size_diff / 1024:+10.1f} KiB {s.count_diff:+8d} blocks  "
                  f"(now {s.size / 1024:.1f} KiB)  {s.traceback[0]}" for s in stats[:30]]
    _state["snapshot"] = snap
    _write(lines)


def _collect(signum: int, frame: Any) -> None:
    lines = _head("collect")
    gc.unfreeze()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        found = gc.collect()
        kinds = collections.Counter(type(o).__qualname__ for o in gc.garbage)
    finally:
        gc.garbage.clear()
        gc.set_debug(0)
    gc.collect()
    lines.append(f"cyclic garbage: {found} objects; rss after collect {_rss_mib():.1f} MiB")
    lines += [f"{n:9d}  {kind}" for kind, n in kinds.most_common(30)]
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
        lines.append(f"rss after malloc_trim(0) {_rss_mib():.1f} MiB")
    except OSError as exc:
        lines.append(f"no malloc_trim: {exc}")
    _write(lines)


if _SERVICE and _OUT and f"services.{_SERVICE}" in getattr(sys, "orig_argv", ()):
    if os.environ.get("PAIJU_MEMPROBE_TRACE") == "1":
        tracemalloc.start(1)
    signal.signal(signal.SIGUSR1, _diff)
    signal.signal(signal.SIGUSR2, _collect)
