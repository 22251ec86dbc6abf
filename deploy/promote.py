"""Promote images to an environment by digest: `make deploy ENV=<env>` runs this.

    python deploy/promote.py --env prod --image table=<registry>/paiju-table@sha256:<64 hex> \
        [--from-dist dist] [--out build/release/prod] [--dry-run | --render-only]

1. Images: each service's image by digest, from --image, else dist/<svc>/image.txt (written
   by `make push-<svc>`), else what the cluster runs now (a release of one service keeps the
   others as they are). A tag is refused: only a digest names one image for ever.
2. Writes build/release/<env>/ (ignored by git): ``app/kustomization.yaml``, the overlay
   deploy/k8s/overlays/<env> with ``images:`` set by digest, ``migrate/kustomization.yaml``
   (test, prod) with the records image for the Job records-migrate, and ``release.json``.
   No tracked file is edited; the Jenkins job archives the directory.
3. Applies (unless --render-only; --dry-run prints the commands): records what each
   Deployment runs now (its revision and image: ``previous.json``), the migration Job (the
   old one deleted first: a Job cannot change), waits for it to complete (its logs and a
   failure if it does not), then the services (server-side apply: fields the HPAs own are
   left alone), then waits for every Deployment's rollout.
4. Smoke check after the rollouts: every running pod of each service's release image runs
   the image's own health check (``kubectl exec <pod> -- python3 /app/healthcheck.py``:
   gRPC health, over the probe port or TLS as the pod is configured; the lobby's HTTPS
   /healthz with public TLS), then --smoke (a shell command) when given; ``--smoke none``
   runs neither. Before anything changes, the deployer's right to exec into pods is checked
   (``kubectl auth can-i``): without it the release is refused, not applied.
5. Rolls back by itself: an apply of the services that fails, a rollout that exceeds its
   progress deadline (kubectl rollout status fails), a pod of the new image in
   CrashLoopBackOff, a rollout not done in --rollout-timeout, or a smoke check that fails:
   every Deployment goes back to its
   recorded revision (``kubectl rollout undo --to-revision``; a template that did not change
   is skipped by kubectl), the restored rollouts are awaited, ``rollback.txt`` names the
   failed and the restored images, and the exit status is 2. The migration is not undone
   (migrations are expand-only: the previous release runs on the new schema).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
K8S = ROOT / "deploy" / "k8s"
SERVICES = ("lobby", "table", "arbiter", "records")
ENVIRONMENTS = ("dev", "test", "prod")
MIGRATING = ("test", "prod")          # dev: SQLite in the pod, records migrates at start
DIGEST_REF = re.compile(r"^(?P<name>[a-z0-9][a-z0-9._/:-]*?)@(?P<digest>sha256:[0-9a-f]{64})$")
JOB = "records-migrate"
APPLY = ["apply", "--server-side", "--field-manager=paiju-deploy", "--force-conflicts"]


class PromoteError(RuntimeError):
    """A release that cannot be made; the message says why."""


def namespace(env: str) -> str:
    text = (K8S / "overlays" / env / "kustomization.yaml").read_text(encoding="utf-8")
    match = re.search(r"^namespace:\s*(\S+)", text, re.M)
    if not match:
        raise PromoteError(f"overlays/{env}: no namespace")
    return match.group(1)


def parse_ref(service: str, ref: str) -> tuple[str, str]:
    """(repository, sha256:...) of ``<repository>@sha256:<64 hex>``; anything else refused."""
    ref = ref.strip()
    match = DIGEST_REF.match(ref)
    if not match:
        raise PromoteError(f"{service}: {ref!r} is not an image by digest "
                           "(<registry>/paiju-<svc>@sha256:<64 hex>)")
    name = match.group("name")
    if ":" in name.rsplit("/", 1)[-1]:
        name = name.rsplit(":", 1)[0]    # repo:tag@digest: the digest decides, drop the tag
    if not name.endswith(f"paiju-{service}"):
        raise PromoteError(f"{service}: {ref!r} is not a paiju-{service} image")
    return name, match.group("digest")


def kubectl(*args: str) -> list[str]:
    return ["kubectl", *args]


def running_image(env: str, service: str) -> str | None:
    """The image the cluster's Deployment runs now (None when it has none)."""
    try:
        out = subprocess.run(kubectl("-n", namespace(env), "get", "deployment", service, "-o",
                                     "jsonpath={.spec.template.spec.containers[0].image}"),
                             capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def collect(env: str, given: list[str], dist: Path | None, ask_cluster: bool) -> dict[str, str]:
    images: dict[str, str] = {}
    for item in given:
        service, sep, ref = item.partition("=")
        if not sep or service not in SERVICES:
            raise PromoteError(f"--image {item!r}: expected <service>=<image by digest>")
        parse_ref(service, ref)
        images[service] = ref
    for service in SERVICES:
        if service in images:
            continue
        recorded = dist / service / "image.txt" if dist else None
        if recorded and recorded.is_file():
            images[service] = recorded.read_text(encoding="utf-8").strip()
        elif ask_cluster and (running := running_image(env, service)):
            images[service] = running
    missing = [s for s in SERVICES if s not in images]
    if missing:
        raise PromoteError(f"no image for {', '.join(missing)}: give --image <svc>=<ref@digest>, "
                           "dist/<svc>/image.txt, or deploy to a namespace that runs them")
    for service, ref in images.items():
        parse_ref(service, ref)
    return images


def _relative(target: Path, start: Path) -> str:
    return os.path.relpath(target, start).replace(os.sep, "/")


def _images_yaml(images: dict[str, str], services: tuple[str, ...]) -> str:
    lines = ["images:"]
    for service in services:
        name, digest = parse_ref(service, images[service])
        lines += [f"  - name: paiju-{service}", f"    newName: {name}", f"    digest: {digest}"]
    return "\n".join(lines) + "\n"


def render(env: str, images: dict[str, str], out: Path) -> list[Path]:
    """Write the release's kustomizations; returns the directories to apply, in order."""
    if env not in ENVIRONMENTS:
        raise PromoteError(f"ENV={env!r}: one of {', '.join(ENVIRONMENTS)}")
    out.mkdir(parents=True, exist_ok=True)
    (out / "rollback.txt").unlink(missing_ok=True)     # a previous run's, never this one's
    header = ("# Written by deploy/promote.py (make deploy ENV={env}); not tracked, not edited "
              "by hand.\napiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n")
    dirs = []
    if env in MIGRATING:
        migrate = out / "migrate"
        migrate.mkdir(exist_ok=True)
        (migrate / "kustomization.yaml").write_text(
            header.format(env=env) + f"namespace: {namespace(env)}\nresources:\n"
            f"  - {_relative(K8S / 'migrate', migrate)}\n" + _images_yaml(images, ("records",)),
            encoding="utf-8")
        dirs.append(migrate)
    app = out / "app"
    app.mkdir(exist_ok=True)
    (app / "kustomization.yaml").write_text(
        header.format(env=env) + f"resources:\n  - {_relative(K8S / 'overlays' / env, app)}\n"
        + _images_yaml(images, SERVICES), encoding="utf-8")
    dirs.append(app)
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    (out / "release.json").write_text(json.dumps(
        {"env": env, "namespace": namespace(env), "commit": commit, "images": images},
        indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return dirs


def run(argv: list[str], dry_run: bool) -> subprocess.CompletedProcess | None:
    print("+ " + shlex.join(argv), flush=True)
    if dry_run:
        return None
    return subprocess.run(argv, check=True)


def wait_for_job(ns: str, timeout: float, dry_run: bool) -> None:
    argv = kubectl("-n", ns, "get", "job", JOB, "-o",
                   "jsonpath={.status.succeeded},{.status.failed}")
    print("+ " + shlex.join(argv) + "   # until succeeded, or failed past its backoffLimit")
    if dry_run:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=60).stdout
        succeeded, _, failed = out.partition(",")
        if succeeded.strip() not in ("", "0"):
            return
        condition = subprocess.run(kubectl("-n", ns, "get", "job", JOB, "-o",
                                           "jsonpath={.status.conditions[?(@.type==\"Failed\")].status}"),
                                   capture_output=True, text=True, timeout=60).stdout
        if condition.strip() == "True":
            subprocess.run(kubectl("-n", ns, "logs", f"job/{JOB}", "--tail=200"))
            raise PromoteError(f"the migration Job {JOB} failed ({failed or 0} pods): "
                               "the services were not updated")
        time.sleep(5)
    raise PromoteError(f"the migration Job {JOB} did not finish in {timeout:.0f} s")


class RolloutFailed(PromoteError):
    """A rollout that failed its checks; the Deployments were rolled back (or tried to)."""


REVISION = r"{.metadata.annotations.deployment\.kubernetes\.io/revision}"
IMAGE = "{.spec.template.spec.containers[0].image}"
POD_STATES = ('{range .items[*]}{.metadata.name}{" "}{.spec.containers[0].image}{" "}'
              '{.status.containerStatuses[0].state.waiting.reason}{"\\n"}{end}')


def current_state(ns: str, dry_run: bool) -> dict[str, dict[str, str]]:
    """Each Deployment's revision and image before the release (absent: a first deploy)."""
    state: dict[str, dict[str, str]] = {}
    for service in SERVICES:
        argv = kubectl("-n", ns, "get", "deployment", service, "--ignore-not-found", "-o",
                       f"jsonpath={REVISION} {IMAGE}")
        print("+ " + shlex.join(argv), flush=True)
        if dry_run:
            continue
        out = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        if out.returncode != 0:
            raise PromoteError(f"cannot read deployment/{service}: {out.stderr.strip()}")
        revision, _, image = out.stdout.strip().partition(" ")
        if revision and image:
            state[service] = {"revision": revision, "image": image.strip()}
    return state


def rollout_problem(ns: str, service: str, image: str, timeout: float,
                    poll: float) -> str | None:
    """None once deployment/<service> rolled out; otherwise what went wrong."""
    status = kubectl("-n", ns, "rollout", "status", f"deployment/{service}", "--watch=false")
    pods = kubectl("-n", ns, "get", "pods", "-l", f"app.kubernetes.io/name={service}", "-o",
                   f"jsonpath={POD_STATES}")
    deadline = time.monotonic() + timeout
    while True:
        out = subprocess.run(status, capture_output=True, text=True, timeout=60)
        if out.returncode != 0:       # "exceeded its progress deadline", or gone
            return (out.stderr or out.stdout).strip().removeprefix("error: ") or "rollout failed"
        if "successfully rolled out" in out.stdout:
            return None
        listed = subprocess.run(pods, capture_output=True, text=True, timeout=60).stdout
        for line in listed.splitlines():
            name, _, rest = line.strip().partition(" ")
            pod_image, _, reason = rest.partition(" ")
            # by digest: the pod names it as kustomize wrote it (<name>@sha256:...)
            if same_image(pod_image, image) and reason.strip() == "CrashLoopBackOff":
                return f"pod {name} of the new image is in CrashLoopBackOff"
        if time.monotonic() >= deadline:
            return f"not rolled out in {timeout:.0f} s"
        time.sleep(poll)


# The default smoke check: the health check every service image ships (deploy/docker/
# healthcheck.py, the image's HEALTHCHECK; it asks what the pod's own configuration says:
# gRPC health on the gRPC or probe port, with TLS when on, the lobby's HTTPS /healthz).
SMOKE_NONE = "none"
HEALTH_CHECK = ("python3", "/app/healthcheck.py")
SMOKE_PODS = ('{range .items[*]}{.metadata.name}{" "}{.spec.containers[0].image}{" "}'
              '{.status.phase}{" "}{.metadata.deletionTimestamp}{"\\n"}{end}')
CAN_EXEC = ("auth", "can-i", "create", "pods", "--subresource=exec")


def same_image(pod_image: str, image: str) -> bool:
    """A pod runs ``image`` (a ref by digest): the pod names it as kustomize wrote it."""
    return bool(image) and pod_image.endswith("@" + image.rsplit("@", 1)[-1])


def check_exec_allowed(ns: str, dry_run: bool) -> None:
    """Refuse the release before anything changes when the health check could not run."""
    argv = kubectl("-n", ns, *CAN_EXEC)
    print("+ " + shlex.join(argv) + "   # the smoke check execs into the pods", flush=True)
    if dry_run:
        return
    out = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    if out.returncode != 0 or out.stdout.strip() != "yes":
        raise PromoteError(
            f"the smoke check needs pods/exec in {ns}, which this kubeconfig may not do "
            f"({(out.stdout + out.stderr).strip() or 'no answer'}): grant the deployer "
            "create on pods/exec, or deploy with SMOKE=none (no smoke check)")


def health_smoke(ns: str, images: dict[str, str], dry_run: bool) -> str | None:
    """None when every running pod of each service's release image answers its health
    check; otherwise what failed. Terminating pods (the old release's) are skipped."""
    for service in SERVICES:
        listing = kubectl("-n", ns, "get", "pods", "-l", f"app.kubernetes.io/name={service}",
                          "-o", f"jsonpath={SMOKE_PODS}")
        print("+ " + shlex.join(listing) + "   # then, in each running pod of the release:",
              flush=True)
        print("+ " + shlex.join(kubectl("-n", ns, "exec", f"<{service} pod>", "-c", service,
                                        "--", *HEALTH_CHECK)), flush=True)
        if dry_run:
            continue
        out = subprocess.run(listing, capture_output=True, text=True, timeout=60)
        if out.returncode != 0:
            return f"cannot list the pods of {service}: {out.stderr.strip()}"
        pods = []
        for line in out.stdout.splitlines():
            fields = line.split()     # name, image, phase[, deletionTimestamp]
            if len(fields) < 3:
                continue              # a pod not yet given a phase
            name, pod_image, phase, *deleting = fields
            if phase == "Running" and not deleting and same_image(pod_image,
                                                                   images.get(service, "")):
                pods.append(name)
        if not pods:
            return f"no running pod of {service} runs the release's image"
        for pod in pods:
            check = subprocess.run(kubectl("-n", ns, "exec", pod, "-c", service, "--",
                                           *HEALTH_CHECK),
                                   capture_output=True, text=True, timeout=60)
            if check.returncode != 0:
                said = (check.stderr or check.stdout).strip().splitlines()
                return (f"pod {pod} failed its health check (exit {check.returncode})"
                        + (f": {said[-1]}" if said else ""))
    return None


def roll_back(ns: str, previous: dict[str, dict[str, str]], timeout: float) -> list[str]:
    """Every recorded Deployment back to its revision; returns what did not come back."""
    broken = []
    for service in SERVICES:
        if service not in previous:
            broken.append(f"{service}: no previous revision (a first deploy), left as it is")
            continue
        undo = kubectl("-n", ns, "rollout", "undo", f"deployment/{service}",
                       f"--to-revision={previous[service]['revision']}")
        print("+ " + shlex.join(undo), flush=True)
        if subprocess.run(undo).returncode != 0:
            broken.append(f"{service}: kubectl rollout undo failed")
    for service in previous:
        wait = kubectl("-n", ns, "rollout", "status", f"deployment/{service}",
                       f"--timeout={timeout:.0f}s")
        print("+ " + shlex.join(wait), flush=True)
        if subprocess.run(wait).returncode != 0:
            broken.append(f"{service}: the restored revision did not become ready either")
    return broken


def apply(env: str, dirs: list[Path], dry_run: bool, job_timeout: float,
          images: dict[str, str] | None = None, rollout_timeout: float = 900.0,
          smoke: str | None = None, poll: float = 5.0) -> None:
    ns = namespace(env)
    out = dirs[-1].parent
    previous = current_state(ns, dry_run)
    if smoke != SMOKE_NONE:
        check_exec_allowed(ns, dry_run)
    if not dry_run:
        (out / "previous.json").write_text(json.dumps(previous, indent=2, sort_keys=True) + "\n",
                                           encoding="utf-8")
    failed: dict[str, str] = {}
    for directory in dirs:
        if directory.name == "migrate":
            run(kubectl("-n", ns, "delete", "job", JOB, "--ignore-not-found", "--wait=true"),
                dry_run)
            run(kubectl(*APPLY, "-k", str(directory)), dry_run)
            wait_for_job(ns, job_timeout, dry_run)
        else:
            try:
                run(kubectl(*APPLY, "-k", str(directory)), dry_run)
            except subprocess.CalledProcessError as exc:   # some objects may be applied
                failed["apply"] = f"kubectl apply of the release failed (exit {exc.returncode})"
    for service in SERVICES:
        if failed:
            break
        print("+ " + shlex.join(kubectl("-n", ns, "rollout", "status", f"deployment/{service}",
                                         "--watch=false"))
              + f"   # until rolled out; fails past the progress deadline, on a crash loop, "
              f"or after {rollout_timeout:.0f} s", flush=True)
        if dry_run:
            continue
        problem = rollout_problem(ns, service, (images or {}).get(service, ""),
                                  rollout_timeout, poll)
        if problem:
            failed[service] = problem
            break                  # one failure decides: no need to wait for the others
    if smoke != SMOKE_NONE and not failed:
        problem = health_smoke(ns, images or {}, dry_run)
        if problem:
            failed["smoke"] = f"the health check failed: {problem}"
    if smoke and smoke != SMOKE_NONE:
        print(f"+ {smoke}   # the smoke check (PAIJU_NAMESPACE={ns})", flush=True)
        if not dry_run and not failed:
            env_vars = {**os.environ, "PAIJU_NAMESPACE": ns, "PAIJU_ENV": env}
            if subprocess.run(smoke, shell=True, env=env_vars).returncode != 0:
                failed["smoke"] = f"the smoke check failed: {smoke}"
    if not failed:
        return
    broken = roll_back(ns, previous, rollout_timeout)
    lines = [f"the rollout to {env} ({ns}) failed and was rolled back"
             + (" INCOMPLETELY" if broken else "") + ":"]
    lines += [f"  failed  {name}: {problem}" for name, problem in failed.items()]
    for service in SERVICES:
        new = (images or {}).get(service, "?")
        old = previous.get(service, {}).get("image")
        if old and old != new:
            lines.append(f"  {service:8} failed image {new}")
            lines.append(f"  {service:8} restored     {old} (revision {previous[service]['revision']})")
    lines += [f"  NOT RESTORED {item}" for item in broken]
    message = "\n".join(lines)
    (out / "rollback.txt").write_text(message + "\n", encoding="utf-8")
    raise RolloutFailed(message)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="deploy/promote.py", description=__doc__.split("\n")[0])
    parser.add_argument("--env", required=True, choices=ENVIRONMENTS)
    parser.add_argument("--image", action="append", default=[],
                        help="<service>=<registry>/paiju-<service>@sha256:<digest> (repeatable)")
    parser.add_argument("--from-dist", type=Path, default=None,
                        help="read dist/<svc>/image.txt for services not given")
    parser.add_argument("--out", type=Path, default=None, help="default build/release/<env>")
    parser.add_argument("--dry-run", action="store_true", help="print the kubectl commands")
    parser.add_argument("--render-only", action="store_true", help="write the release, apply nothing")
    parser.add_argument("--job-timeout", type=float, default=3600.0)
    parser.add_argument("--rollout-timeout", type=float, default=900.0,
                        help="seconds for each rollout (the progress deadline usually ends it)")
    parser.add_argument("--smoke", default=None,
                        help="a shell command run after the rollouts and the pods' health "
                        "checks; failing rolls back. 'none': no smoke check at all")
    parser.add_argument("--poll", type=float, default=5.0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    out = args.out or ROOT / "build" / "release" / args.env
    try:
        images = collect(args.env, args.image, args.from_dist,
                         ask_cluster=not (args.render_only or args.dry_run))
        dirs = render(args.env, images, out)
        print(f"release {args.env} in {out}:")
        for service in SERVICES:
            print(f"  {service:8} {images[service]}")
        if not args.render_only:
            apply(args.env, dirs, args.dry_run, args.job_timeout, images,
                  args.rollout_timeout, args.smoke, args.poll)
    except RolloutFailed as exc:
        print(f"deploy/promote.py: {exc}", file=sys.stderr)
        return 2
    except (PromoteError, subprocess.CalledProcessError) as exc:
        print(f"deploy/promote.py: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
