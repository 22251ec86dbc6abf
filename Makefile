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

.PHONY: setup protos run test lint bench chaos clean help $(addprefix test-,$(SERVICES)) $(addprefix build-,$(SERVICES)) \
	$(addprefix image-,$(SERVICES)) $(addprefix push-,$(SERVICES))

BENCH_ARGS ?=
# container images: <registry>/paiju-<svc>:<tag>, the tag being the commit by default
IMAGE_REGISTRY ?= paiju
IMAGE_TAG ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo local)
IMAGE = $(IMAGE_REGISTRY)/paiju-$*:$(IMAGE_TAG)

help:
	@echo "make run    - set up everything, start NATS, the four services and robot tables"
	@echo "make test   - set up everything and run the whole test suite"
	@echo "make lint | bench | protos | setup | test-<svc> | build-<svc> | clean"
	@echo "make image-<svc> | push-<svc> [IMAGE_REGISTRY=... IMAGE_TAG=...] - container image"

# The virtualenv and dependencies: redone only when pyproject.toml changes.
$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -e ".[dev]"
	touch $(STAMP)

# Generated protocol code: redone only when a .proto or the generator changes.
$(PROTO_STAMP): $(PROTOS) scripts/gen_protos.sh $(STAMP)
	PYTHON=$(PY) bash scripts/gen_protos.sh

setup: $(STAMP) $(PROTO_STAMP)

protos:
	PYTHON=$(PY) bash scripts/gen_protos.sh

run: setup
	$(PY) -m scripts.devrun

test: setup
	$(PY) -m pytest -q

lint: setup
	$(VENV)/bin/ruff check games services clients paiju/frames.py tests bench scripts deploy
	$(VENV)/bin/mypy games

bench: setup
	@for m in bench/bench_*.py; do n=$$(basename $$m .py); echo "== $$n"; $(PY) -m bench.$$n $(BENCH_ARGS) || exit 1; done
	@echo "reports in bench/reports/"

# the chaos suite at full length: a replicated cluster, faults mid-hand, bench/reports/chaos.md
chaos: setup
	$(PY) -m bench.bench_chaos --require-postgres $(BENCH_ARGS)

# static pattern rules: plain pattern rules are never searched for .PHONY targets
$(addprefix test-,$(SERVICES)): test-%: setup
	$(PY) -m pytest -q $(wildcard tests/service/test_$**.py) $(wildcard tests/unit/services/test_$**.py)

$(addprefix build-,$(SERVICES)): build-%: setup
	$(VENV)/bin/ruff check services/$* services/common
	$(PY) -m compileall -q services/$* services/common games paiju
	mkdir -p dist/$*
	$(PIP) wheel --quiet --no-deps -w dist/$* .
	@echo "built dist/$*/ (image: make image-$*)"

# push-<svc> expects a registry login (Jenkins does it with its credential)
$(addprefix image-,$(SERVICES)): image-%:
	docker build -f deploy/docker/Dockerfile --build-arg SERVICE=$* -t $(IMAGE) .

$(addprefix push-,$(SERVICES)): push-%:
	docker push $(IMAGE)

clean:
	rm -rf $(VENV) paiju/v1 dist build *.egg-info .pytest_cache .hypothesis var
