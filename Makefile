# The two commands: `make demo` (serve a live demo on http://127.0.0.1:8000, nothing else
# needed) and `make test` (the whole suite on PostgreSQL and Redis, plus lint and checks).

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

VENV := .venv
PY := $(VENV)/bin/python

# `make test` and `make bench` run on PostgreSQL and Redis unless the environment says otherwise.
DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/missionweave
REDIS_URL ?= redis://127.0.0.1:6379/0
# Local runs only: without DEBUG, the settings refuse to start without a SECRET_KEY unless told
# to use the public development key (issue 16 §5).
LOCAL_ENV := MWP_INSECURE_SECRET_KEY=$${MWP_INSECURE_SECRET_KEY:-1}
SERVER_ENV := $(LOCAL_ENV) DATABASE_URL=$(DATABASE_URL) REDIS_URL=$(REDIS_URL)
# Two workers, one test file per worker at a time (module fixtures stay on one worker), in
# collection order: tests/conftest.py puts the long proofs first so both workers share them.
PYTEST_ARGS ?= -n 2 --dist loadfile --no-loadscope-reorder --timeout 300

.PHONY: help demo test proofs scale chaos check lint format bench docs nginx-check bootstrap services chromium clean distclean

help:
	@echo "make demo   seed live demo data and serve it on http://127.0.0.1:8000 (SQLite, no servers)"
	@echo "make test   lint, migration and schema checks, the whole suite on PostgreSQL + Redis"
	@echo "make proofs the long proofs (contention, load, long property runs) at full size"
	@echo "make scale  scale-out with kill -9 of a server and a worker, full size, alone"
	@echo "make chaos  the faults injected on purpose (kill -9, PostgreSQL and Redis away,"
	@echo "            a full disk), full size, alone; figures in var/chaos/"
	@echo "make lint   ruff check, ruff format --check and the import layers (lint-imports)"
	@echo "make format ruff format and ruff check --fix"
	@echo "make check  makemigrations --check and the OpenAPI schema validation"
	@echo "make docs   regenerate docs/conformance.md (R-ID → code → tests)"
	@echo "make bench  the benchmarks (PostgreSQL + Redis); see docs/benchmarks.md"
	@echo "make nginx-check  docs/deploy.md's nginx block in a real nginx: its limits and timeouts"
	@echo "make clean  remove var/ (demo database, keys) and caches; distclean also .venv/"

bootstrap:
	@scripts/bootstrap.sh

services:
	@scripts/services.sh

chromium:
	@scripts/chromium.sh

# The embedded default: whatever DATABASE_URL / REDIS_URL the environment has, none needed.
# `make demo PORT=8101` serves on another port when 8000 is taken.
PORT ?= 8000
demo: bootstrap
	$(LOCAL_ENV) $(PY) manage.py migrate --no-input -v 0
	$(LOCAL_ENV) $(PY) manage.py demo --port $(PORT)

lint: bootstrap
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports

format: bootstrap
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

# docs/deploy.md's nginx block, run by a real nginx (apt-get install -y nginx) in front of a
# stub upstream: body limits per route and the header timeout (scripts/nginx_check.py).
nginx-check: bootstrap
	$(PY) scripts/nginx_check.py

# Model/migration drift and the OpenAPI document; neither needs a database server.
check: bootstrap
	env -u DATABASE_URL -u REDIS_URL MWP_VAR_DIR=var/checks $(LOCAL_ENV) \
		$(PY) manage.py makemigrations --check --dry-run
	env -u DATABASE_URL -u REDIS_URL MWP_VAR_DIR=var/checks $(LOCAL_ENV) \
		$(PY) manage.py spectacular --validate --fail-on-warn --file /dev/null

test: bootstrap services chromium lint check
	$(SERVER_ENV) $(VENV)/bin/pytest $(PYTEST_ARGS)

# The tests marked `proof` at full size (tests/proofs.py); `make test` runs them on a sample.
proofs: bootstrap services chromium
	MWP_PROOFS=full $(SERVER_ENV) $(VENV)/bin/pytest $(PYTEST_ARGS) --timeout 1800 -m proof

# Scale-out on one machine (issue 15 §6) at full size and alone, so its figures are the
# machine's: two servers, two Celery workers and a beat; kill -9 of a server and a worker
# mid-load. The figures go to var/scale/report.json (reported in docs/reliability.md).
scale: bootstrap services
	MWP_PROOFS=full MWP_SCALE_REPORT=var/scale/report.json $(SERVER_ENV) \
		$(VENV)/bin/pytest --timeout 1800 tests/scale
	cat var/scale/report.json

# The faults injected on purpose (issue 16 §8, tests marked `chaos`) at full size and alone:
# kill -9 of the server 20 times at random points of 1,000-command loads, PostgreSQL
# restarted and Redis stopped mid-load, the artifact disk full. Each writes its figures to
# var/chaos/<name>.json (reported in docs/reliability.md). `make test` runs them on a sample.
chaos: bootstrap services
	rm -rf var/chaos
	MWP_PROOFS=full MWP_CHAOS_REPORT=var/chaos $(SERVER_ENV) \
		$(VENV)/bin/pytest --timeout 1800 -m chaos tests/faults
	cat var/chaos/*.json

# docs/conformance.md is generated: rerun after citing an R-ID in code or a test.
docs: bootstrap
	$(PY) scripts/conformance.py

bench: bootstrap services
	$(SERVER_ENV) $(PY) -m benchmarks.run
	$(SERVER_ENV) $(PY) -m benchmarks.run --only floor
	$(PY) -m benchmarks.worker_scheduler --write
	$(PY) -m benchmarks.must_holds

clean:
	rm -rf var/ .pytest_cache/ .ruff_cache/ .hypothesis/ test-results/ build/ *.egg-info
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV)
