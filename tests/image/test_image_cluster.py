"""The cluster run from its images, configured the way deploy/ configures it.

Three NATS servers (the paiju-nats image, configured from deploy/k8s/nats/values-prod.yaml
and values-auth.yaml as the chart renders them), the records migration (the Job of
deploy/k8s/migrate, in the records image, on a fresh PostgreSQL database of this machine),
then two replicas of every service from the prod overlay's Deployments (their environment,
Secrets as mounted files, each service's own NATS user, the tables asking the arbiters over
NATS, TLS between the services and on the lobby, user, read-only root),
each container started with ``podman run`` from what the rendered manifest says
(tests/support/containers.py). Robots play every game through both lobbies from outside the
containers over TLS; one container of each service is killed with SIGKILL mid-hand and started
again; every hand the robots saw must be in PostgreSQL exactly once and zero-sum, every room
must finish, and no robot may give up.

``podman kube play`` (podman 4.3) is not used: on the host network two replicas of a pod
would bind the same ports, and it has no way to give each pod its own loopback address or
the Services' DNS names; this test applies the same manifests itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from clients.robot.robot import GAMES, RobotStats, run_tables
from tests.image.conftest import ROOT, Built
from tests.support.certs import Authority
from tests.support.cluster import (
    PostgresUnavailable,
    create_database,
    drop_database,
    sql_hands,
    uid_parts,
)
from tests.support.containers import (
    FLEET_LABEL,
    Container,
    Fleet,
    Pod,
    podman,
    remove_orphans,
    run_args,
)
from tests.unit.deploy.test_deploy_k8s import render

pytestmark = [pytest.mark.image, pytest.mark.postgres, pytest.mark.timeout(1500)]

SERVICES = ("records", "arbiter", "table", "lobby")      # start order
REPLICAS = 2
HANDS = 20                 # long enough that the four kills (about 17-23 s) fall inside play
ROOMS_PER_GAME = 2
TOKEN_SECRET = "image-test-token-secret"
NATS_IPS = [f"127.0.10.{i + 1}" for i in range(3)]
POD_NET = {"lobby": 11, "table": 12, "arbiter": 13, "records": 14}
K8S = ROOT / "deploy" / "k8s"


def pod_ip(service: str, replica: int) -> str:
    return f"127.0.{POD_NET[service]}.{replica + 1}"


def nats_config(index: int, store: str) -> str:
    """nats.conf of server ``index`` as the chart writes it from the prod values and the
    users of values-auth.yaml (``<< $VAR >>`` left for nats-server to read from the
    passwords file it includes); each server on its own loopback address."""
    prod = yaml.safe_load((K8S / "nats" / "values-prod.yaml").read_text(encoding="utf-8"))
    auth = yaml.safe_load((K8S / "nats" / "values-auth.yaml").read_text(encoding="utf-8"))
    ip = NATS_IPS[index]
    doc = {
        "server_name": f"nats-{index}",
        "listen": f"{ip}:4222",
        "http": f"{ip}:8222",
        "jetstream": {"store_dir": store},
        "cluster": {"name": "nats", "listen": f"{ip}:6222",
                    "routes": [f"nats://{other}:6222" for other in NATS_IPS if other != ip],
                    **prod["config"]["cluster"].get("merge", {})},
        "lame_duck_grace_period": "1s",
        **auth["config"]["merge"],
    }
    assert prod["config"]["jetstream"]["enabled"] and prod["config"]["cluster"]["replicas"] == 3
    text = re.sub(r'".*\$include": "(.*)",?', r"include \1;", json.dumps(doc, indent=2,
                                                                         sort_keys=True))
    return re.sub(r'"<<\s+(.*)\s+>>"', r"\1", text)


@dataclass
class Cluster:
    fleet: Fleet
    nats: list[Container]
    pods: dict[str, list[Container]]
    db: Any
    ca: Authority
    public_ca: Path
    spawn: Any = None                 # (service, replica, generation) -> Container
    kills: dict[str, float] = field(default_factory=dict)
    restarts: dict[str, float] = field(default_factory=dict)
    results: list[RobotStats] = field(default_factory=list)
    started: float = 0.0
    ended: float = 0.0                # when the last robot finished (from the start)

    def lobbies(self) -> list[str]:
        return [f"{pod_ip('lobby', r)}:50051" for r in range(REPLICAS)]


def secrets_for(db_url: str, ca: Authority, public: Any, docs: list[dict]) -> dict[str, dict]:
    """The Secrets the prod overlay names and leaves to the operator, filled for this run;
    each service's certificate carries the DNS names of its Certificate resource."""
    passwords = {u: f"pw-{u}-image-test" for u in ("lobby", "table", "records", "arbiter",
                                                   "admin", "lobby-b", "table-b", "records-b",
                                                   "arbiter-b")}
    secrets: dict[str, dict[str, str]] = {
        "paiju-secrets": {"token-secret": TOKEN_SECRET, "database-url": db_url},
        "paiju-migrate": {"database-url": db_url},
        "paiju-nats": {f"{u}-password": p for u, p in passwords.items()},
        "paiju-lobby-public-tls": {"tls.crt": public.cert.read_text(),
                                   "tls.key": public.key.read_text()},
    }
    for doc in docs:
        if doc["kind"] != "Certificate" or doc["spec"].get("isCA"):
            continue
        spec = doc["spec"]
        names = [n for n in spec.get("dnsNames", []) if n != spec["commonName"]]
        pem = ca.issue(spec["commonName"], *names, days=1)
        secrets[spec["secretName"]] = {"tls.crt": pem.cert.read_text(),
                                       "tls.key": pem.key.read_text(),
                                       "ca.crt": ca.ca_file.read_text()}
    return secrets


def hosts() -> dict[str, str]:
    """The Services' DNS names (one address each: the first replica, or NATS server 0)."""
    out = {f"nats-{i}.nats-headless": ip for i, ip in enumerate(NATS_IPS)}
    out["nats"] = NATS_IPS[0]
    out["postgres"] = "127.0.0.1"
    for service in SERVICES:
        out[service] = out[f"{service}-headless"] = pod_ip(service, 0)
    return out


def wait_healthy(c: Container, timeout: float = 90) -> None:
    """The image's health check (its label org.paiju.healthcheck), run in the container."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not c.alive():
            raise AssertionError(f"{c.label} exited {c.exit_code()}:\n{c.logs()}")
        if c.exec_ok("python3", "/app/healthcheck.py"):
            return
        time.sleep(1)
    raise AssertionError(f"{c.label} not healthy in {timeout} s:\n{c.logs()}")


def wait_nats(c: Container, timeout: float = 60) -> None:
    import urllib.request

    ip = NATS_IPS[int(c.label.split("-")[1])]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            with urllib.request.urlopen(f"http://{ip}:8222/healthz?js-enabled-only=true",
                                        timeout=2) as reply:
                if reply.status == 200:
                    return
        assert c.alive(), c.logs()
        time.sleep(0.5)
    raise AssertionError(f"{c.label} not healthy:\n{c.logs()}")


@pytest.fixture(scope="module")
def cluster(built: dict[str, Built], tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[Cluster]:
    tmp = tmp_path_factory.mktemp("image-cluster")
    try:
        db = asyncio.run(create_database())
    except PostgresUnavailable as exc:
        pytest.skip(str(exc))
    fleet = Fleet()
    try:
        yield start(fleet, built, db, tmp)
    finally:
        fleet.cleanup()
        asyncio.run(drop_database(db))


def start(fleet: Fleet, built: dict[str, Built], db: Any, tmp: Path) -> Cluster:
    app = render(K8S / "overlays" / "prod")
    migrate = render(K8S / "migrate")
    deployments = {d["metadata"]["name"]: d for d in app if d["kind"] == "Deployment"}
    config_maps = {d["metadata"]["name"]: d["data"] for d in app if d["kind"] == "ConfigMap"}
    ca = Authority(tmp / "ca")
    public_ca = Authority(tmp / "public-ca", name="players-ca")
    public = public_ca.issue("lobby", ips=[pod_ip("lobby", r) for r in range(REPLICAS)])
    db_url = f"postgresql+asyncpg://postgres@postgres:5432/{db.name}"
    secrets = secrets_for(db_url, ca, public, app)
    # NATS: three servers, their passwords in the file they include (the Secret
    # paiju-nats-server, mounted as the chart's values-auth.yaml mounts it)
    nats = []
    auth = (K8S / "nats" / "values-auth.yaml").read_text(encoding="utf-8")
    passwords = tmp / "paiju-nats-auth" / "passwords.conf"
    passwords.parent.mkdir(parents=True)
    passwords.write_text("".join(
        f'{v}: "{secrets["paiju-nats"][f"{u}-password"]}"\n'
        for u, v in re.findall(r"user: ([\w-]+)\n\s+password: << \$(\w+) >>", auth)),
        encoding="utf-8")
    for path in (passwords.parent, passwords):
        os.chown(path, 10001, 10001)
    for i in range(3):
        conf = tmp / f"nats-{i}" / "nats.conf"
        (tmp / f"nats-{i}" / "js").mkdir(parents=True)
        conf.write_text(nats_config(i, "/data/js"), encoding="utf-8")
        for path in (conf.parent, conf.parent / "js", conf):
            os.chown(path, 10001, 10001)
        args = ["--name", f"nats-{i}-{os.getpid()}", "--read-only",
                "--volume", f"{conf.parent}:/data",
                "--volume", f"{passwords.parent}:/paiju-nats-auth:ro",
                built["nats"].ref, "--config", "/data/nats.conf"]
        nats.append(fleet.run(f"nats-{i}", args))
    for c in nats:
        wait_nats(c)
    base_pod = {"hosts": hosts(), "secrets": secrets, "config_maps": config_maps,
                "volumes_dir": tmp / "volumes"}
    # the migration Job, then the services
    job = next(d for d in migrate if d["kind"] == "Job")
    job_pod = Pod(name="records-migrate", ip="127.0.14.9", **base_pod)
    migration = fleet.run("records-migrate", run_args(job, built["records"].ref, job_pod))
    deadline = time.monotonic() + 120
    while migration.exit_code() is None and time.monotonic() < deadline:
        time.sleep(1)
    assert migration.exit_code() == 0, f"the migration failed:\n{migration.logs()}"
    def spawn(service: str, replica: int, generation: int = 0) -> Container:
        """A pod of the Deployment; a replacement gets a new name, as a Deployment's does
        (the table's instance is its pod name), on the same address."""
        ip = pod_ip(service, replica)
        name = f"{service}-{replica}" + (f"-r{generation}" if generation else "")
        pod = Pod(name=name, ip=ip, **base_pod,
                  env_overrides={f"PAIJU_{service.upper()}__HOST": ip})
        return fleet.run(name, run_args(deployments[service], built[service].ref, pod))

    pods: dict[str, list[Container]] = {}
    for service in SERVICES:
        pods[service] = [spawn(service, r) for r in range(REPLICAS)]
        for c in pods[service]:
            wait_healthy(c)
    return Cluster(fleet, nats, pods, db, ca, public_ca.ca_file, spawn=spawn)


FIRST_UID = 700000


def robot_uids() -> list[int]:
    return [FIRST_UID + 1000 * n + i for n in range(len(GAMES))
            for i in range(4 * ROOMS_PER_GAME)]


async def provision_players(db: Any) -> None:
    """The players, as an operator's account system creates them: prod makes no profile at
    login (lobby.dev_profiles is off)."""
    import asyncpg

    conn = await asyncpg.connect(db.dsn, timeout=5)
    try:
        await conn.executemany(
            "INSERT INTO players (user_id, nickname, head_url, sex, coins, created_at, "
            "updated_at) VALUES ($1, $2, '', 0, 100000, now(), now())",
            [(uid, f"robot {uid}") for uid in robot_uids()])
    finally:
        await conn.close()


async def play_with_kills(cl: Cluster) -> None:
    """Robots of every game through both lobbies; once hands are in flight, SIGKILL one
    container of each service, each started again a few seconds later."""
    async def robots(game: str, n: int) -> list[RobotStats]:
        return await run_tables(cl.lobbies(), game, ROOMS_PER_GAME, TOKEN_SECRET, hands=HANDS,
                                first_uid=FIRST_UID + 1000 * n, ca_file=str(cl.public_ca))

    await provision_players(cl.db)
    cl.started = time.monotonic()
    play = asyncio.gather(*(robots(g, n) for n, g in enumerate(sorted(GAMES))))
    play.add_done_callback(lambda _: setattr(cl, "ended", time.monotonic() - cl.started))
    await asyncio.sleep(4)
    for service in ("table", "lobby", "arbiter", "records"):
        cl.kills[service] = time.monotonic() - cl.started
        cl.pods[service][0].kill()
        await asyncio.sleep(2)
        fresh = cl.spawn(service, 0, generation=1)
        cl.pods[service][0] = fresh
        await asyncio.to_thread(wait_healthy, fresh)
        cl.restarts[service] = time.monotonic() - cl.started
    done = await asyncio.wait_for(play, timeout=600)
    cl.results = [s for group in done for s in group]


@pytest.fixture(scope="module")
def played(cluster: Cluster) -> Cluster:
    asyncio.run(play_with_kills(cluster))
    took = cluster.ended
    refused = sum(len(s.errors) for s in cluster.results)
    print(f"\nimage cluster: kills at {fmt(cluster.kills)} s, healthy again at "
          f"{fmt(cluster.restarts)} s; {len(hands_seen(cluster))} hands in "
          f"{len({r for s in cluster.results for r in s.rooms})} rooms played in {took:.0f} s; "
          f"{sum(s.reconnects for s in cluster.results)} robot reconnects, "
          f"{sum(s.overtaken for s in cluster.results)} answers overtaken, "
          f"{refused} refused actions")
    return cluster


def fmt(times: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:.1f}" for k, v in times.items())


def hands_seen(cl: Cluster) -> set[tuple[int, int]]:
    seen = set()
    for stats in cl.results:
        for frame in stats.received:
            parts = uid_parts(frame.event_uid) if frame.event_uid else None
            if parts is not None and parts[1] > 0:
                seen.add((parts[0], parts[1]))
    return seen


def container_ids() -> set[str]:
    return {c["Id"] for c in json.loads(podman("ps", "--all", "--format", "json") or "[]")}


def test_a_killed_runs_containers_are_removed_and_a_live_ones_kept(
        built: dict[str, Built]) -> None:
    """A pytest killed before its teardown leaves its fleet running on the pods' addresses:
    the next fleet removes those, never the containers of a test process still running."""
    gone = subprocess.Popen(["true"])
    gone.wait()
    ref = built["nats"].ref
    left = podman("create", "--label", f"{FLEET_LABEL}={gone.pid}", ref).splitlines()[-1]
    ours = podman("create", "--label", f"{FLEET_LABEL}={os.getpid()}", ref).splitlines()[-1]
    try:
        assert {left, ours} <= container_ids()
        assert left in remove_orphans()
        ids = container_ids()
        assert left not in ids and ours in ids
    finally:
        podman("rm", "--force", left, ours, check=False)


def test_every_service_ran_from_its_image_with_two_replicas(cluster: Cluster) -> None:
    for service in SERVICES:
        assert len(cluster.pods[service]) == REPLICAS
        assert all(c.alive() for c in cluster.pods[service]), service
    assert all(c.alive() for c in cluster.nats)


def test_robots_finish_every_room_through_the_kills(played: Cluster) -> None:
    rooms = Counter(room for s in played.results for room in s.rooms)
    gave_up = [f"{s.user_id}: {s.errors[-1]}" for s in played.results
               if s.hands < HANDS and s.errors]
    assert not gave_up, gave_up
    assert len(rooms) == ROOMS_PER_GAME * len(GAMES), rooms
    # every room played all its hands (as the robots that saw most of it count them); a robot
    # that counted fewer hand ends than its room (a resume across a kill that showed it the
    # room without one hand's end) is printed: a known gap of the resume path, issue 22
    most: dict[int, int] = {}
    for s in played.results:
        for room in s.rooms:
            most[room] = max(most.get(room, 0), s.hands)
    assert all(n >= HANDS for n in most.values()), most
    short = [(s.user_id, s.hands) for s in played.results if s.hands < HANDS]
    print(f"robots that counted fewer than {HANDS} hand ends: {short}")
    assert set(played.kills) == {"table", "lobby", "arbiter", "records"}
    late = {k: t for k, t in played.kills.items() if t >= played.ended}
    assert not late, f"killed after play ended at {played.ended:.1f} s: {late}"


def test_every_hand_is_settled_once_and_zero_sum_in_postgres(played: Cluster) -> None:
    rooms = sorted({room for s in played.results for room in s.rooms})
    seen = hands_seen(played)
    deadline = time.monotonic() + 90
    while True:
        stored, not_zero = asyncio.run(sql_hands(played.db, rooms))
        keys = Counter((h["room_id"], h["hand_no"]) for h in stored if h["hand_no"] > 0)
        if seen <= set(keys) or time.monotonic() > deadline:
            break
        time.sleep(2)
    assert seen, "the robots saw no hand"
    assert seen <= set(keys), f"lost: {sorted(seen - set(keys))}"
    assert all(n == 1 for n in keys.values()), f"doubled: {keys.most_common(3)}"
    assert not not_zero, not_zero
    assert len(keys) >= ROOMS_PER_GAME * len(GAMES) * HANDS
