"""Containers for the image tests: podman on this host, and a Kubernetes Deployment's container
turned into a ``podman run`` (tests/image/).

Every container runs on the host network (podman's bridge networks need what a sandbox lacks).
A pod's address is a loopback address of its own (127.0.x.y), so that two replicas keep the
ports their manifests give them; the Services' DNS names are ``--add-host`` entries. What the
manifests say about the container is applied as it is: its environment (values, ConfigMap and
Secret references, ``$(VAR)`` expansion, the pod's name and IP), its Secret volumes mounted as
files with their mode, the emptyDirs as tmpfs, the user, a read-only root file system, no
capabilities, no privilege escalation, and its command. What a test replaces is named where it
is: the bind address (``0.0.0.0`` on the pod network is the pod's own address here).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def podman_env() -> dict[str, str]:
    """The settings deploy/images.py builds with (the same store of images)."""
    sys.path.insert(0, str(ROOT / "deploy"))
    import images

    return images.container_env()


def podman(*args: str, check: bool = True, timeout: float = 120) -> str:
    done = subprocess.run(["podman", *args], env=podman_env(), capture_output=True, text=True,
                          timeout=timeout)
    if check and done.returncode != 0:
        raise RuntimeError(f"podman {' '.join(args[:3])} failed: {done.stderr.strip()[-800:]}")
    return done.stdout.strip()


@dataclass
class Container:
    """A container this test started (by id; never by a name another run could share)."""

    label: str
    id: str
    spec: list[str] = field(repr=False, default_factory=list)

    def alive(self) -> bool:
        out = podman("inspect", "--format", "{{.State.Running}}", self.id, check=False)
        return out == "true"

    def kill(self) -> None:
        podman("kill", "--signal", "KILL", self.id, check=False)

    def stop(self, timeout: int = 10) -> None:
        podman("stop", "--time", str(timeout), self.id, check=False, timeout=timeout + 30)

    def remove(self) -> None:
        podman("rm", "--force", "--time", "0", self.id, check=False)

    def logs(self, tail: int = 40) -> str:
        return podman("logs", "--tail", str(tail), self.id, check=False)

    def exec_ok(self, *cmd: str, timeout: float = 15) -> bool:
        done = subprocess.run(["podman", "exec", self.id, *cmd], env=podman_env(),
                              capture_output=True, text=True, timeout=timeout)
        return done.returncode == 0

    def exit_code(self) -> int | None:
        out = podman("inspect", "--format", "{{.State.Running}} {{.State.ExitCode}}", self.id,
                     check=False)
        running, _, code = out.partition(" ")
        return None if running == "true" else int(code or -1)


# The label of a Fleet's containers: the pid of the test process that started them.
FLEET_LABEL = "paiju.test.fleet"


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:   # another user's process
        return True
    return True


def remove_orphans() -> list[str]:
    """Remove the containers a Fleet of a test process that is gone left (a pytest killed
    before its teardown); their ids. Left running they would hold the pods' addresses and
    ports, and the next run's services would fail to bind or meet the old ones. The pid is
    looked for in this process's pid namespace: runs of the image tests share a host, not a
    podman store across containers."""
    out = podman("ps", "--all", "--filter", f"label={FLEET_LABEL}", "--format", "json",
                 check=False)
    gone = []
    for c in json.loads(out or "[]"):
        owner = (c.get("Labels") or {}).get(FLEET_LABEL, "")
        if owner.isdigit() and int(owner) != os.getpid() and not _running(int(owner)):
            podman("rm", "--force", "--time", "0", c["Id"], check=False)
            gone.append(c["Id"])
    return gone


class Fleet:
    """The containers of one test run: started, watched, and removed at the end by id;
    those an earlier run left behind, removed when it starts."""

    def __init__(self) -> None:
        self.containers: list[Container] = []
        remove_orphans()

    def run(self, label: str, args: list[str]) -> Container:
        cid = podman("run", "--detach", "--network", "host",
                     "--label", f"{FLEET_LABEL}={os.getpid()}", *args)
        c = Container(label, cid.splitlines()[-1], args)
        self.containers.append(c)
        return c

    def cleanup(self) -> None:
        for c in self.containers:
            c.remove()


# ------------------------------------------------------------------ pod spec -> podman run
@dataclass
class Pod:
    """A pod of a Deployment as this host runs it."""

    name: str
    ip: str
    hosts: dict[str, str]             # Service DNS name -> loopback address
    secrets: dict[str, dict[str, str]]
    config_maps: dict[str, dict[str, str]]
    volumes_dir: Path
    env_overrides: dict[str, str] = field(default_factory=dict)


_REF = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


def container_env(container: dict[str, Any], pod: Pod) -> dict[str, str]:
    """The container's environment as the kubelet makes it (envFrom first, then env in order,
    ``$(VAR)`` of earlier variables expanded), then the pod's overrides."""
    env: dict[str, str] = {}
    for source in container.get("envFrom", []):
        if "configMapRef" in source:
            env.update(pod.config_maps[source["configMapRef"]["name"]])
        elif "secretRef" in source:
            env.update(pod.secrets[source["secretRef"]["name"]])
    for item in container.get("env", []):
        if "value" in item:
            value = _REF.sub(lambda m: env.get(m.group(1), m.group(0)), str(item["value"]))
        else:
            ref = item["valueFrom"]
            if "secretKeyRef" in ref:
                key_ref = ref["secretKeyRef"]
                secret = pod.secrets.get(key_ref["name"], {})
                if key_ref["key"] not in secret and key_ref.get("optional"):
                    continue                      # an optional key that is not there: unset
                value = secret[key_ref["key"]]
            elif "configMapKeyRef" in ref:
                value = pod.config_maps[ref["configMapKeyRef"]["name"]][
                    ref["configMapKeyRef"]["key"]]
            elif "fieldRef" in ref:
                value = {"status.podIP": pod.ip, "metadata.name": pod.name}[
                    ref["fieldRef"]["fieldPath"]]
            else:
                raise ValueError(f"unsupported valueFrom {ref}")
        env[item["name"]] = value
    env.update(pod.env_overrides)
    return env


def run_args(deployment: dict[str, Any], image: str, pod: Pod,
             command: list[str] | None = None) -> list[str]:
    """``podman run`` arguments for the pod's first container."""
    spec = deployment["spec"]["template"]["spec"]
    container = spec["containers"][0]
    args = ["--name", f"{pod.name}-{os.getpid()}-{int(time.monotonic() * 1000) % 100000}"]
    sec = {**spec.get("securityContext", {}), **container.get("securityContext", {})}
    user = sec.get("runAsUser")
    if user is not None:
        args += ["--user", f"{user}:{sec.get('runAsGroup', user)}"]
    if sec.get("fsGroup") is not None:
        args += ["--group-add", str(sec["fsGroup"])]
    if sec.get("readOnlyRootFilesystem"):
        args.append("--read-only")
    if sec.get("allowPrivilegeEscalation") is False:
        args += ["--security-opt", "no-new-privileges"]
    for cap in sec.get("capabilities", {}).get("drop", []):
        args += ["--cap-drop", cap]
    for host, ip in sorted(pod.hosts.items()):
        args += ["--add-host", f"{host}:{ip}"]
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    for mount in container.get("volumeMounts", []):
        volume = volumes[mount["name"]]
        if "emptyDir" in volume:
            args += ["--tmpfs", f"{mount['mountPath']}:rw,size=64m,mode=1777"]
        elif "secret" in volume:
            src = secret_dir(pod, volume["secret"]["secretName"],
                             volume["secret"].get("defaultMode", 0o644),
                             int(sec.get("fsGroup", 0)))
            args += ["--volume", f"{src}:{mount['mountPath']}:ro"]
        elif "projected" in volume:
            src = projected_dir(pod, mount["name"], volume["projected"],
                                int(sec.get("fsGroup", 0)))
            args += ["--volume", f"{src}:{mount['mountPath']}:ro"]
        else:
            raise ValueError(f"unsupported volume {volume}")
    for name, value in sorted(container_env(container, pod).items()):
        args += ["--env", f"{name}={value}"]
    args.append(image)
    cmd = command or container.get("command")
    if cmd:
        args[-1:-1] = ["--entrypoint", json.dumps([cmd[0]])]
        args += [*cmd[1:], *container.get("args", [])]
    return args


def projected_dir(pod: Pod, name: str, projected: dict[str, Any], group: int) -> Path:
    """A projected volume of Secret sources: each listed key at its path, with the volume's
    mode, owned by the pod's fsGroup; an optional key the Secret lacks is left out."""
    out = pod.volumes_dir / pod.name / f"projected-{name}"
    out.mkdir(parents=True, exist_ok=True)
    for source in projected["sources"]:
        secret = source["secret"]
        data = pod.secrets.get(secret["name"], {})
        for item in secret.get("items") or [{"key": k, "path": k} for k in data]:
            if item["key"] not in data:
                if secret.get("optional"):
                    continue
                raise KeyError(f"Secret {secret['name']} has no key {item['key']}")
            path = out / item["path"]   # a path may name a folder (nats/records-password)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(data[item["key"]], encoding="utf-8")
            os.chown(path, 0, group)
            path.chmod(projected.get("defaultMode", 0o644))
    return out


def secret_dir(pod: Pod, name: str, mode: int, group: int) -> Path:
    """A Secret volume: one file a key, with the volume's mode, owned by the pod's fsGroup."""
    out = pod.volumes_dir / pod.name / name
    out.mkdir(parents=True, exist_ok=True)
    for key, value in pod.secrets[name].items():
        path = out / key
        path.write_text(value, encoding="utf-8")
        os.chown(path, 0, group)
        path.chmod(mode)
    return out
