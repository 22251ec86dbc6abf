"""How long a frozen arbiter keeps taking the tables' requests:
``python -m bench.bench_frozen_arbiter [--quick]``.

An arbiter that stops answering without closing its connection (its node lost, a network
cut that sends no reset, the process frozen) stays in the queue group "arbiter" until
nats-server drops it; meanwhile the server hands it its share of the requests, and each of
those windows waits out the table's ``arbiter_timeout_seconds`` before the table decides it
itself. The server drops a client that leaves ``ping_max`` PINGs ``ping_interval`` apart
unanswered: the settings of deploy/k8s/nats/values-prod.yaml (config.merge), or with
``--defaults`` NATS's own (2 minutes, 2 PINGs: a run of 5-7 minutes).

One nats-server with those settings, two real arbiter processes, the table's own client
(services/table/arbiter_client.py) asking a window every 100 ms; one arbiter is frozen
(SIGSTOP) and the run goes on until the server has dropped it and 10 s more. Reported: the
windows decided locally after a timeout, and when the last of them was asked.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import tempfile
import time
from pathlib import Path

import nats

from bench.common import REPORTS, machine, write_report
from games.arbitration import Response, Rules, Window
from services.common.config import load_config
from services.common.natsd import EmbeddedNats
from services.table.arbiter_client import ArbiterClient
from tests.support.natsvalues import duration_seconds, environment_merge
from tests.support.procs import make_service, start_together, stop_together

REPORT = "frozen_arbiter.md"   # frozen_arbiter_defaults.md with --defaults
ASK_EVERY = 0.1
NATS_DEFAULTS = {"ping_interval": "2m", "ping_max": 2}


def window() -> Window:
    cands = {1: frozenset({"peng", "pass"}), 2: frozenset({"hu", "pass"})}
    return Window(7, 0, 4, "discard", cands, {2: Response("hu"), 1: Response("pass")})


async def measure(settings: dict[str, object], tmp: Path, quick: bool) -> dict[str, float]:
    conf = tmp / "nats.conf"
    # quoted: unquoted, NATS reads "2m" as 2 mega(seconds), not 2 minutes
    conf.write_text("".join(f"{k}: {json.dumps(v)}\n" for k, v in settings.items()),
                    encoding="utf-8")
    natsd = EmbeddedNats(args=["-c", str(conf)]).start()
    arbiters = [make_service("arbiter", natsd.url, tmp) for _ in range(2)]
    nc = None
    try:
        start_together(*arbiters)
        timeout = load_config("test").table.arbiter_timeout_seconds
        nc = await nats.connect(natsd.url)
        client = ArbiterClient(nc, timeout)
        for _ in range(20):   # both answer
            await client.resolve(window(), Rules())
        frozen = arbiters[0].proc
        assert frozen is not None
        os.kill(frozen.pid, signal.SIGSTOP)
        t0 = time.monotonic()
        expected = (duration_seconds(str(settings["ping_interval"]))
                    * (int(str(settings["ping_max"])) + 1))
        until = t0 + (min(expected, 20.0) if quick else expected + 10.0)
        asked = late = 0
        last_late = 0.0
        while time.monotonic() < until:
            at = time.monotonic()
            await client.resolve(window(), Rules())
            asked += 1
            if time.monotonic() - at >= timeout:
                late += 1
                last_late = at - t0
            await asyncio.sleep(max(0.0, at + ASK_EVERY - time.monotonic()))
        os.kill(frozen.pid, signal.SIGCONT)
        return {"asked": asked, "late": late, "last_late": last_late, "timeout": timeout,
                "run": time.monotonic() - t0, "bound": expected}
    finally:
        if nc is not None:
            await nc.close()
        for svc in arbiters:
            if svc.proc is not None and svc.proc.poll() is None:
                os.kill(svc.proc.pid, signal.SIGCONT)
        stop_together(*arbiters)
        natsd.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a 20-second run")
    parser.add_argument("--defaults", action="store_true",
                        help="NATS's default ping settings instead of the values'")
    parser.add_argument("--out", default=str(REPORTS))
    args = parser.parse_args()
    values = environment_merge("prod")
    settings = NATS_DEFAULTS if args.defaults else {
        "ping_interval": values["ping_interval"], "ping_max": values["ping_max"]}
    with tempfile.TemporaryDirectory(prefix="paiju-frozen-") as tmp:
        got = asyncio.run(measure(settings, Path(tmp), args.quick))
    flags = " --quick" if args.quick else ""
    flags += " --defaults" if args.defaults else ""
    lines = [
        "# A frozen arbiter in the queue group",
        "",
        f"`python -m bench.bench_frozen_arbiter{flags}` on {machine()}. One nats-server with "
        f"`ping_interval: {settings['ping_interval']}`, `ping_max: {settings['ping_max']}` "
        f"({'NATS defaults' if args.defaults else 'deploy/k8s/nats/values-prod.yaml'}), two "
        "arbiter processes, the table's arbiter client asking a window every "
        f"{ASK_EVERY * 1000:.0f} ms with its timeout of {got['timeout']} s; one arbiter "
        "frozen with SIGSTOP at 0 s.",
        "",
        "| run s | windows asked | decided locally after a timeout | last such window asked at s "
        "| the server's bound (interval x (max + 1)) s |",
        "|---:|---:|---:|---:|---:|",
        f"| {got['run']:.0f} | {got['asked']:.0f} | {got['late']:.0f} | {got['last_late']:.1f} "
        f"| {got['bound']:.0f} |",
        "",
        "After the last of them the frozen arbiter was out of the queue group: every window "
        f"went to the live one ({got['run'] - got['last_late']:.0f} s to the end of the run)."
        if got["run"] - got["last_late"] >= 5 else
        "The run ended before the server dropped the frozen arbiter.",
    ]
    name = REPORT.replace(".md", "_defaults.md") if args.defaults else REPORT
    write_report(Path(args.out) / name, lines)


if __name__ == "__main__":
    main()
