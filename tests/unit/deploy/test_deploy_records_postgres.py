"""The optional CloudNativePG manifests of records' database (deploy/k8s/optional/
records-postgres.yaml, records-postgres-recovery.yaml).

kubernetes-validate knows no custom resources, so their structure is checked here against a
schema of the fields they use, written from the CloudNativePG and Barman Cloud Plugin CRDs
(unknown fields refused, types and enums as the CRDs have them), and their references
against each other, deploy/sql/roles.sql and the SETTLE stream's retention. With the real
CRDs at hand (``kubectl get crd clusters.postgresql.cnpg.io scheduledbackups.postgresql.cnpg.io
objectstores.barmancloud.cnpg.io -o yaml`` split into files in ``PAIJU_CNPG_CRDS``) they are
also validated against the CRDs' own schemas. The NetworkPolicies go through
kubernetes-validate like every other manifest."""

from __future__ import annotations

import os
import re
from datetime import datetime
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from services.common import bus

ROOT = Path(__file__).resolve().parents[3]
OPTIONAL = ROOT / "deploy" / "k8s" / "optional"
MAIN = OPTIONAL / "records-postgres.yaml"
RECOVERY = OPTIONAL / "records-postgres-recovery.yaml"
PLUGIN = "barman-cloud.cloudnative-pg.io"
SCHEMA_VERSIONS = ("1.27.0", "1.37.0")


def docs(path: Path) -> dict[str, dict]:
    return {d["kind"] + "/" + d["metadata"]["name"]: d
            for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d}


def obj(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "additionalProperties": False,
            "required": list(required)}


STR, INT, BOOL = {"type": "string"}, {"type": "integer"}, {"type": "boolean"}
SECRET_REF = obj({"name": STR}, ("name",))
KEY_REF = obj({"name": STR, "key": STR}, ("name", "key"))
METADATA = obj({"name": STR, "labels": {"type": "object",
                                        "additionalProperties": {"type": "string"}}}, ("name",))
PLUGINS = {"type": "array", "items": obj({
    "name": {"enum": [PLUGIN]}, "isWALArchiver": BOOL, "enabled": BOOL,
    "parameters": {"type": "object", "additionalProperties": {"type": "string"}}}, ("name",))}
QUANTITY = {"type": "string", "pattern": r"^[0-9]+(m|Mi|Gi|Ti)?$"}
CLUSTER_SPEC = {
    "instances": {"type": "integer", "minimum": 1}, "imageName": STR,
    "primaryUpdateStrategy": {"enum": ["unsupervised", "supervised"]},
    "minSyncReplicas": {"type": "integer", "minimum": 0},
    "maxSyncReplicas": {"type": "integer", "minimum": 0},
    "postgresql": obj({"parameters": {"type": "object",
                                      "additionalProperties": {"type": "string"}}}),
    "bootstrap": obj({
        "initdb": obj({"database": STR, "owner": STR, "secret": SECRET_REF,
                       "postInitApplicationSQL": {"type": "array", "items": STR}}),
        "recovery": obj({"source": STR, "recoveryTarget": obj({"targetTime": STR})}),
    }),
    "externalClusters": {"type": "array", "items": obj({
        "name": STR, "plugin": obj({"name": {"enum": [PLUGIN]}, "parameters": {
            "type": "object", "additionalProperties": {"type": "string"}}}, ("name",))},
        ("name",))},
    "managed": obj({"roles": {"type": "array", "items": obj({
        "name": STR, "ensure": {"enum": ["present", "absent"]}, "login": BOOL,
        "passwordSecret": SECRET_REF}, ("name",))}}),
    "plugins": PLUGINS,
    "storage": obj({"size": QUANTITY, "storageClass": STR}),
    "walStorage": obj({"size": QUANTITY, "storageClass": STR}),
    "affinity": obj({"enablePodAntiAffinity": BOOL, "topologyKey": STR,
                     "podAntiAffinityType": {"enum": ["preferred", "required"]}}),
    "resources": obj({"requests": obj({"cpu": QUANTITY, "memory": QUANTITY}),
                      "limits": obj({"cpu": QUANTITY, "memory": QUANTITY})}),
}
SCHEMAS: dict[tuple[str, str], dict[str, Any]] = {
    ("barmancloud.cnpg.io/v1", "ObjectStore"): obj({
        "apiVersion": STR, "kind": STR, "metadata": METADATA, "spec": obj({
            "retentionPolicy": {"type": "string", "pattern": r"^[1-9][0-9]*[dwm]$"},
            "configuration": obj({
                "destinationPath": STR, "endpointURL": STR,
                "s3Credentials": obj({"accessKeyId": KEY_REF, "secretAccessKey": KEY_REF}),
                "wal": obj({"compression": {"enum": ["bzip2", "gzip", "lz4", "snappy", "xz",
                                                     "zstd"]}, "maxParallel": INT}),
                "data": obj({"compression": {"enum": ["bzip2", "gzip", "lz4", "snappy"]},
                             "jobs": INT}),
            }, ("destinationPath",))}, ("configuration",))}, ("spec",)),
    ("postgresql.cnpg.io/v1", "Cluster"): obj({
        "apiVersion": STR, "kind": STR, "metadata": METADATA,
        "spec": obj(CLUSTER_SPEC, ("instances", "storage"))}, ("spec",)),
    ("postgresql.cnpg.io/v1", "ScheduledBackup"): obj({
        "apiVersion": STR, "kind": STR, "metadata": METADATA, "spec": obj({
            "schedule": STR, "immediate": BOOL,
            "backupOwnerReference": {"enum": ["none", "self", "cluster"]},
            "cluster": obj({"name": STR}, ("name",)),
            "method": {"enum": ["barmanObjectStore", "volumeSnapshot", "plugin"]},
            "pluginConfiguration": obj({"name": {"enum": [PLUGIN]}}, ("name",)),
        }, ("cluster", "schedule"))}, ("spec",)),
}


def custom(path: Path) -> list[dict]:
    return [d for d in docs(path).values() if d["kind"] != "NetworkPolicy"]


@pytest.mark.parametrize("path", [MAIN, RECOVERY], ids=lambda p: p.name)
def test_the_custom_resources_have_the_crds_structure(path: Path) -> None:
    for doc in custom(path):
        schema = SCHEMAS[(doc["apiVersion"], doc["kind"])]
        errors = [f"{list(e.path)}: {e.message}"
                  for e in jsonschema.Draft7Validator(schema).iter_errors(doc)]
        assert not errors, (doc["kind"], errors)


def test_the_structure_check_refuses_a_misspelt_or_mistyped_field() -> None:
    cluster = docs(MAIN)["Cluster/paiju-records"]
    schema = jsonschema.Draft7Validator(SCHEMAS[("postgresql.cnpg.io/v1", "Cluster")])
    bad = {**cluster, "spec": {**cluster["spec"], "instance": 3}}
    assert any("instance" in e.message for e in schema.iter_errors(bad))
    bad = {**cluster, "spec": {**cluster["spec"], "instances": "3"}}
    assert any(e.path and list(e.path)[-1] == "instances" for e in schema.iter_errors(bad))


def settle_max_age_days() -> float:
    """SETTLE's max_age as services/common/bus.py creates the stream."""
    import asyncio

    from nats.js.errors import NotFoundError

    made: list[Any] = []

    class FakeJS:
        async def stream_info(self, name: str) -> Any:
            if not made:
                raise NotFoundError
            return type("Info", (), {"config": made[-1]})()

        async def add_stream(self, config: Any) -> Any:
            made.append(config)
            return type("Info", (), {"config": config})()

    asyncio.run(bus.ensure_streams(FakeJS(), room_log=False))  # type: ignore[arg-type]
    (settle,) = made
    assert settle.name == bus.SETTLE_STREAM
    return float(settle.max_age) / 86400


def test_wal_archiving_daily_base_backups_and_a_retention_settle_covers() -> None:
    d = docs(MAIN)
    store, cluster = d["ObjectStore/paiju-records-backups"], d["Cluster/paiju-records"]
    scheduled = d["ScheduledBackup/paiju-records-daily"]
    (plugin,) = cluster["spec"]["plugins"]
    assert plugin["isWALArchiver"] is True
    assert plugin["parameters"]["barmanObjectName"] == store["metadata"]["name"]
    assert scheduled["spec"]["cluster"]["name"] == cluster["metadata"]["name"]
    assert scheduled["spec"]["method"] == "plugin"
    assert scheduled["spec"]["pluginConfiguration"]["name"] == plugin["name"]
    fields = scheduled["spec"]["schedule"].split()
    assert len(fields) == 6, "CloudNativePG schedules have six fields, seconds first"
    assert all(re.fullmatch(r"[0-9*/,-]+", f) for f in fields)
    # what can be recovered can be reconciled: SETTLE keeps at least the backups' window
    m = re.fullmatch(r"([1-9][0-9]*)([dwm])", store["spec"]["retentionPolicy"])
    assert m
    days = int(m.group(1)) * {"d": 1, "w": 7, "m": 31}[m.group(2)]
    assert days <= settle_max_age_days()
    assert int(cluster["spec"]["postgresql"]["parameters"]["archive_timeout"].rstrip("s")) <= 300
    assert cluster["spec"]["instances"] >= 3
    assert cluster["spec"]["affinity"]["topologyKey"] == "topology.kubernetes.io/zone"


def test_roles_and_secrets_match_roles_sql_and_the_documented_commands() -> None:
    text = MAIN.read_text(encoding="utf-8")
    cluster = docs(MAIN)["Cluster/paiju-records"]
    initdb = cluster["spec"]["bootstrap"]["initdb"]
    assert initdb["owner"] == "paiju_migrator" and initdb["database"] == "paiju"
    roles_sql = " ".join((ROOT / "deploy" / "sql" / "roles.sql").read_text().split())
    for statement in initdb["postInitApplicationSQL"]:
        if not statement.startswith("CREATE ROLE"):
            assert " ".join(statement.split()) + ";" in roles_sql, statement
    (role,) = cluster["spec"]["managed"]["roles"]
    assert role["name"] == "paiju" and role["login"] is True
    store = docs(MAIN)["ObjectStore/paiju-records-backups"]
    secrets = {initdb["secret"]["name"], role["passwordSecret"]["name"],
               store["spec"]["configuration"]["s3Credentials"]["accessKeyId"]["name"]}
    for name in secrets:
        assert f"create secret generic {name} " in text, name
    assert "paiju-records-rw:5432/paiju" in text


def test_the_recovery_cluster_reads_the_archive_of_the_first() -> None:
    main, recovery = docs(MAIN), docs(RECOVERY)
    cluster = recovery["Cluster/paiju-records-restored"]
    spec = cluster["spec"]
    (source,) = spec["externalClusters"]
    assert spec["bootstrap"]["recovery"]["source"] == source["name"]
    assert source["plugin"]["parameters"] == {
        "barmanObjectName": "paiju-records-backups", "serverName": "paiju-records"}
    assert "ObjectStore/paiju-records-backups" in main
    target = datetime.fromisoformat(spec["bootstrap"]["recovery"]["recoveryTarget"]["targetTime"])
    assert target.utcoffset() is not None, "a target time names its zone"
    assert spec["imageName"] == main["Cluster/paiju-records"]["spec"]["imageName"]
    # its own pods get their own ingress policy
    policy = recovery["NetworkPolicy/records-postgres-restored"]
    assert policy["spec"]["podSelector"]["matchLabels"] == {
        "cnpg.io/cluster": cluster["metadata"]["name"]}


@pytest.mark.parametrize("path", [MAIN, RECOVERY], ids=lambda p: p.name)
def test_the_network_policies_validate(path: Path) -> None:
    validator = pytest.importorskip("kubernetes_validate",
                                    reason="kubernetes-validate is not installed")
    policies = [d for d in docs(path).values() if d["kind"] == "NetworkPolicy"]
    assert policies
    for version in SCHEMA_VERSIONS:
        for policy in policies:
            validator.validate(policy, version, strict=True)


def _strict(schema: Any) -> Any:
    """A CRD's structural schema with unknown fields refused (the API server prunes them)."""
    if isinstance(schema, dict):
        if schema.get("type") == "object" and "properties" in schema \
                and "additionalProperties" not in schema \
                and not schema.get("x-kubernetes-preserve-unknown-fields"):
            schema = {**schema, "additionalProperties": False}
        return {k: _strict(v) for k, v in schema.items()}
    if isinstance(schema, list):
        return [_strict(v) for v in schema]
    return schema


def test_against_the_real_crds_when_given() -> None:
    where = os.environ.get("PAIJU_CNPG_CRDS")
    if not where:
        pytest.skip("PAIJU_CNPG_CRDS (a directory of the CloudNativePG and Barman Cloud "
                    "Plugin CRD files) is not set")
    crds: dict[tuple[str, str], Any] = {}
    for path in Path(where).glob("*.yaml"):
        for crd in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if crd and crd.get("kind") == "CustomResourceDefinition":
                for version in crd["spec"]["versions"]:
                    schema = _strict(version["schema"]["openAPIV3Schema"])
                    schema["properties"]["metadata"] = {"type": "object"}
                    crds[(f"{crd['spec']['group']}/{version['name']}",
                          crd["spec"]["names"]["kind"])] = schema
    for path in (MAIN, RECOVERY):
        for doc in custom(path):
            schema = crds[(doc["apiVersion"], doc["kind"])]
            errors = [f"{list(e.path)}: {e.message}"
                      for e in jsonschema.Draft7Validator(schema).iter_errors(doc)]
            assert not errors, (path.name, doc["kind"], errors)
