"""deploy/db_backup.py against a private PostgreSQL (initdb + pg_ctl, tests/support/pgctl.py):
a dump and its manifest restore into a fresh database with the same rows, and each way a
backup or a restore can go wrong ends with its code and a message."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from deploy import db_backup
from services.common.natsd import free_port
from tests.support.pgctl import PrivatePostgres, private_postgres

pytestmark = pytest.mark.postgres
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def pg() -> Iterator[PrivatePostgres]:
    with private_postgres() as server:
        yield server


def psql(pg: PrivatePostgres, database: str, sql: str) -> None:
    subprocess.run([db_backup.find_tool("psql"), "-h", "127.0.0.1", "-p", str(pg.port), "-U",
                    "postgres", "-d", database, "-v", "ON_ERROR_STOP=1", "-q", "-c", sql],
                   check=True, capture_output=True)


def cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], url: str | None,
        *args: str, nats_url: str | None = None) -> tuple[int, str, str]:
    if url is None:
        monkeypatch.delenv("DATABASE_URL", raising=False)
    else:
        monkeypatch.setenv("DATABASE_URL", url)
    if nats_url is None:
        monkeypatch.delenv("NATS_URL", raising=False)
    else:
        monkeypatch.setenv("NATS_URL", nats_url)
    code = db_backup.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def source(pg: PrivatePostgres) -> str:
    """A migrated records database with a few rows."""
    url = pg.createdb("source")
    subprocess.run([sys.executable, "-m", "services.records.migrate"],
                   cwd=ROOT, check=True, capture_output=True,
                   env={"PATH": "/usr/bin:/bin", "PAIJU_ENV": "test", "DATABASE_URL": url})
    psql(pg, "source", "INSERT INTO players (user_id, nickname, head_url, sex, coins, "
         "created_at, updated_at) SELECT g, 'p' || g, '', 0, 100000, now(), now() "
         "FROM generate_series(1, 25) g")
    return url


def backup(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], url: str,
           out: Path) -> tuple[Path, dict]:
    code, stdout, err = cli(monkeypatch, capsys, url, "backup", "--out", str(out))
    assert code == 0, err
    manifest = json.loads(stdout)
    return out / manifest["dump"], manifest


def test_a_backup_restores_into_a_fresh_database_with_the_same_rows(
        pg: PrivatePostgres, source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    dump, manifest = backup(monkeypatch, capsys, source, tmp_path)
    assert dump.name.startswith("records-") and dump.suffix == ".dump"
    assert manifest["alembic_revision"] == manifest["code_head"]
    assert manifest["row_counts"]["players"] == 25
    assert manifest["settle"] is None and manifest["settle_error"] == "NATS_URL not set"
    code, out, err = cli(monkeypatch, capsys, pg.url("copy"), "restore", str(dump), "--create")
    assert code == 0, err
    assert json.loads(out)["row_counts"] == manifest["row_counts"]
    # a second restore into the same (now full) database is refused
    code, _, err = cli(monkeypatch, capsys, pg.url("copy"), "restore", str(dump))
    assert code == 2 and err.startswith("db_backup: TARGET_NOT_EMPTY: "), err


def test_a_changed_dump_or_manifest_is_refused(
        pg: PrivatePostgres, source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    dump, manifest = backup(monkeypatch, capsys, source, tmp_path)
    path = dump.with_suffix(".json")
    # a manifest naming another revision than the dump holds
    path.write_text(json.dumps({**manifest, "alembic_revision": "0001"}), encoding="utf-8")
    code, _, err = cli(monkeypatch, capsys, pg.url("c1"), "restore", str(dump), "--create")
    assert code == 2 and err.startswith("db_backup: SCHEMA_MISMATCH: the dump holds"), err
    # a dump whose bytes changed
    path.write_text(json.dumps(manifest), encoding="utf-8")
    data = bytearray(dump.read_bytes())
    data[-10] ^= 0xFF
    dump.write_bytes(bytes(data))
    code, _, err = cli(monkeypatch, capsys, pg.url("c1"), "restore", str(dump), "--create")
    assert code == 2 and err.startswith("db_backup: DUMP_CORRUPT: "), err
    dump.with_suffix(".json").unlink()
    code, _, err = cli(monkeypatch, capsys, pg.url("c1"), "restore", str(dump), "--create")
    assert code == 2 and err.startswith("db_backup: MANIFEST_MISSING: "), err


@pytest.mark.parametrize("revision, allowed", [("0002", False), ("0002", True),
                                               ("9999_future", False)])
def test_a_dump_at_another_schema_revision_than_the_code_is_refused(
        pg: PrivatePostgres, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], revision: str, allowed: bool) -> None:
    name = f"rev_{revision}_{int(allowed)}"
    url = pg.createdb(name)
    psql(pg, name, "CREATE TABLE alembic_version (version_num varchar(32) PRIMARY KEY); "
         f"INSERT INTO alembic_version VALUES ('{revision}')")
    dump, manifest = backup(monkeypatch, capsys, url, tmp_path)
    assert manifest["alembic_revision"] == revision
    args = ["restore", str(dump), "--create", *(["--allow-older"] if allowed else [])]
    code, out, err = cli(monkeypatch, capsys, pg.url(name + "_copy"), *args)
    if allowed:
        assert code == 0, err
        assert json.loads(out)["alembic_revision"] == revision
    else:
        assert code == 2 and err.startswith("db_backup: SCHEMA_MISMATCH: the dump is at "
                                            f"revision {revision}"), err


def test_errors_name_their_cause(pg: PrivatePostgres, tmp_path: Path,
                                 monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(monkeypatch, capsys, None, "backup", "--out", str(tmp_path))
    assert code == 2 and err.startswith("db_backup: NO_DATABASE_URL: "), err
    code, _, err = cli(monkeypatch, capsys, f"sqlite+aiosqlite:///{tmp_path}/x.db", "backup")
    assert code == 2 and err.startswith("db_backup: NOT_POSTGRESQL: "), err
    dead = f"postgresql+asyncpg://postgres@127.0.0.1:{free_port()}/records"
    code, _, err = cli(monkeypatch, capsys, dead, "backup", "--out", str(tmp_path))
    assert code == 2 and err.startswith("db_backup: DB_UNREACHABLE: 127.0.0.1:"), err
    # a database that is not records'
    code, _, err = cli(monkeypatch, capsys, pg.url("postgres"), "backup", "--out", str(tmp_path))
    assert code == 2 and err.startswith("db_backup: NOT_RECORDS: "), err
    monkeypatch.setenv("PG_BIN", str(tmp_path / "nowhere"))
    code, _, err = cli(monkeypatch, capsys, pg.url("postgres"), "backup", "--out", str(tmp_path))
    assert code == 2 and err.startswith("db_backup: TOOL_MISSING: "), err
    assert list(tmp_path.glob("*.dump")) == []


def test_the_tools_are_found_off_the_path_under_usr_lib_postgresql(
        monkeypatch: pytest.MonkeyPatch) -> None:
    if not list(Path("/usr/lib/postgresql").glob("*/bin/pg_dump")):
        pytest.skip("no /usr/lib/postgresql/*/bin/pg_dump on this machine")
    monkeypatch.delenv("PG_BIN", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    assert db_backup.find_tool("pg_restore").startswith("/usr/lib/postgresql/")
    with pytest.raises(db_backup.BackupError) as caught:
        db_backup.find_tool("pg_no_such_tool")
    assert caught.value.code == "TOOL_MISSING"


def test_make_has_the_backup_and_restore_targets() -> None:
    run = subprocess.run(["make", "-n", "-C", str(ROOT), "db-backup", "BACKUP_DIR=/b"],
                         capture_output=True, text=True, check=True)
    assert "deploy/db_backup.py backup --out /b" in run.stdout
    run = subprocess.run(["make", "-n", "-C", str(ROOT), "db-restore", "DUMP=/b/r.dump",
                          "CREATE=1"], capture_output=True, text=True, check=True)
    assert "deploy/db_backup.py restore /b/r.dump --create" in run.stdout
    run = subprocess.run(["make", "-s", "-C", str(ROOT), "db-restore"], capture_output=True,
                         text=True, check=False)
    assert run.returncode != 0 and "DUMP=" in run.stderr


def test_a_backup_without_the_settle_position_says_why_and_is_still_a_backup(
        source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    dead = f"nats://127.0.0.1:{free_port()}"
    code, out, err = cli(monkeypatch, capsys, source, "backup", "--out", str(tmp_path),
                         nats_url=dead)
    assert code == 0, err
    manifest = json.loads(out)
    assert manifest["settle"] is None and manifest["settle_error"], manifest
    assert (tmp_path / manifest["dump"]).stat().st_size == manifest["bytes"] > 0
