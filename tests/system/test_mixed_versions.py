"""A rolling release mixes versions: an old lobby with a new table, and a new lobby with an
old table, still play hands to their settlement. "Old" is the release running in prod, the
commit that deploy/protos-base.txt names (the protocol `make test` keeps compatible with,
deploy/protocompat.py): its files (git archive) with their generated code, run as real
processes beside this checkout's services, robots of this checkout playing through the
lobby (deploy/README.md, "Releasing protocol changes")."""

from __future__ import annotations

import asyncio
import io
import subprocess
import sys
import tarfile
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from prometheus_client.parser import text_string_to_metric_families

from clients.robot.robot import run_tables
from paiju.v1 import common_pb2, records_pb2, records_pb2_grpc
from services.common.natsd import EmbeddedNats
from services.lobby.errors import Reject
from services.lobby.records_client import RecordsClient
from tests.support.procs import ROOT, ServiceProc, make_service
from tests.system.conftest import SECRET

pytestmark = pytest.mark.timeout(300)


def released_commit() -> str:
    lines = (ROOT / "deploy/protos-base.txt").read_text(encoding="utf-8").splitlines()
    return next(line.split()[0] for line in lines if line.strip() and not line.startswith("#"))


@pytest.fixture(scope="module")
def released(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The released commit's files, its protobuf code generated, in a directory of its own."""
    commit = released_commit()
    root = tmp_path_factory.mktemp("released")
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", commit],
                             capture_output=True, check=False)
    assert archive.returncode == 0, (
        f"the released commit {commit} (deploy/protos-base.txt) is not in this clone: "
        f"{archive.stderr.decode(errors='replace')}")
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(root, filter="data")
    subprocess.run(["bash", "scripts/gen_protos.sh"], cwd=root, check=True,
                   env={"PATH": "/usr/bin:/bin", "PYTHON": sys.executable}, capture_output=True)
    # the services started from there import that checkout, not this one
    probe = subprocess.run([sys.executable, "-c", "import services; print(services.__file__)"],
                           cwd=root, env={"PYTHONPATH": str(root)}, capture_output=True,
                           text=True, check=True)
    assert probe.stdout.strip().startswith(str(root)), probe.stdout
    yield root


def service(name: str, nats: EmbeddedNats, tmp: Path, root: Path, **env: str) -> ServiceProc:
    svc = make_service(name, nats.url, tmp, **{"PAIJU_LOBBY__TOKEN_SECRET": SECRET,
                                               "PAIJU_TABLE__INSTANCE": "table-mixed", **env})
    svc.root = root
    return svc.start()


def table_metric(table: ServiceProc, name: str) -> float:
    """The sum of a sample's values over its labels, from the table's /metrics."""
    url = f"http://127.0.0.1:{table.metrics_port}/metrics"
    with urllib.request.urlopen(url, timeout=5) as reply:
        text = reply.read().decode()
    return sum(sample.value for family in text_string_to_metric_families(text)
               for sample in family.samples if sample.name == name)


@pytest.mark.parametrize("old", ["lobby", "table"])
def test_an_old_and_a_new_service_play_hands_together(released: Path, tmp_path: Path,
                                                      old: str) -> None:
    nats = EmbeddedNats().start()
    procs: list[ServiceProc] = []
    try:
        procs.append(records := service("records", nats, tmp_path, ROOT))
        procs.append(arbiter := service("arbiter", nats, tmp_path, ROOT))
        wired = {"PAIJU_RECORDS__PORT": str(records.port),
                 "PAIJU_ARBITER__PORT": str(arbiter.port)}
        # a slow round trip on this busy machine is not a fallback this test is after
        procs.append(table := service("table", nats, tmp_path,
                                      released if old == "table" else ROOT, **wired,
                                      PAIJU_TABLE__ARBITER_TIMEOUT_SECONDS="5"))
        procs.append(lobby := service("lobby", nats, tmp_path,
                                      released if old == "lobby" else ROOT, **wired))
        rooms: set[int] = set()
        for k, game in enumerate(("xuezhan", "changsha", "dadun")):
            results = asyncio.run(asyncio.wait_for(run_tables(
                lobby.address, game, 1, SECRET, hands=1, first_uid=70_000 + 100 * k), 120))
            assert all(not r.errors for r in results), (game, [r.errors for r in results])
            assert all(r.hands == 1 for r in results), (game, [r.hands for r in results])
            rooms |= {room for r in results for room in r.rooms}
        assert len(rooms) == 3

        async def settled() -> list[records_pb2.HandRecord]:
            async with grpc.aio.insecure_channel(records.address) as channel:
                stub = records_pb2_grpc.RecordsStub(channel)
                for _ in range(100):
                    listing = await stub.ListHands(records_pb2.ListHandsRequest(limit=100))
                    hands = [h for h in listing.hands if h.room_id in rooms and not h.final]
                    if len(hands) == 3:
                        return hands
                    await asyncio.sleep(0.2)
            return hands

        hands = asyncio.run(settled())
        assert sorted(h.room_id for h in hands) == sorted(rooms), hands
        # the windows were the arbiter's, whichever way the table asked it (the released
        # table over its Decide stream, this one over NATS): none decided in the table
        asked = table_metric(table, "paiju_table_arbiter_seconds_count")
        fell_back = table_metric(table, "paiju_table_arbiter_fallback_total")
        assert asked > 0 and fell_back == 0, (asked, fell_back)
    finally:
        for proc in reversed(procs):
            proc.stop()
        nats.close()


def test_a_new_lobby_reads_profiles_from_the_released_records(released: Path,
                                                               tmp_path: Path) -> None:
    """The released records has no GetPlayers (UNIMPLEMENTED): the new lobby's profile
    reads fall back to GetPlayer, with the outcomes GetPlayer gives, and keep to it."""
    nats = EmbeddedNats().start()
    records = service("records", nats, tmp_path, released)
    try:
        async def reads() -> None:
            client = RecordsClient(records.address, timeout=5)
            try:
                for uid in (7001, 7002):
                    await client.profile(uid, f"n{uid}", create=True)
                got = await asyncio.gather(*(client.profile(uid, "", create=False)
                                             for uid in (7001, 7002, 7003)),
                                           return_exceptions=True)
                assert [g.nickname for g in got[:2]] == ["n7001", "n7002"], got  # type: ignore[union-attr]
                assert isinstance(got[2], Reject) and got[2].code == common_pb2.ERR_BAD_TOKEN
                assert client.profiles.flushes == 1 and client.profiles.single_until > 0
                assert (await client.profile(7001, "", create=False)).nickname == "n7001"
                assert client.profiles.flushes == 1          # remembered: GetPlayer only
            finally:
                await client.close()

        asyncio.run(reads())
    finally:
        records.stop()
        nats.close()
