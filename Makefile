# Two entry points from a fresh clone: `make demo` and `make test`. Both bootstrap .venv from python3.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev

# No telemetry, no price-list download at litellm import, no Prefect banner noise.
export PREFECT_SERVER_ANALYTICS_ENABLED := false
export LITELLM_LOCAL_MODEL_COST_MAP := True
export DO_NOT_TRACK := 1

.PHONY: venv venv-dev venv-shared demo sweep-demo test test-fast test-shared lint serve stop bench clean

venv: $(STAMP)

venv-dev: $(DEV_STAMP)

# The shared store's environment (docs/scale-out.md): evalduck with duckdb 1.5.5 and the DuckLake and
# PostgreSQL extensions, for the machines that write or query a ducklake: store, and its tests; with the dask
# extra, since the scale-out tests run Dask workers.
SHARED := .venv-shared
SHARED_STAMP := $(SHARED)/.installed

venv-shared: $(SHARED_STAMP)

$(SHARED_STAMP): pyproject.toml
	test -x $(SHARED)/bin/python || $(PYTHON) -m venv $(SHARED)
	$(SHARED)/bin/python -m pip install --quiet --upgrade pip
	$(SHARED)/bin/python -m pip install --quiet -e '.[shared,dask]' 'pytest>=8.3,<10' 'pytest-timeout>=2.3,<3'
	touch $(SHARED_STAMP)

# The shared-store tests (a PostgreSQL they start themselves): skipped by `make test`, which runs on duckdb
# 2.0; EVALDUCK_REQUIRE_SHARED=1 makes a missing PostgreSQL a failure here.
test-shared: $(SHARED_STAMP)
	EVALDUCK_REQUIRE_SHARED=1 $(SHARED)/bin/python -m pytest -q tests/store/test_shared_store.py tests/e2e/test_scale_out.py

# `make demo` installs evalduck alone (what a run needs), with pip's progress shown; `make test` adds the
# test tools and the dask extra ('.[dev]', its own stamp) and marks the base as installed too.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --disable-pip-version-check -e .
	touch $(STAMP)

$(DEV_STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --disable-pip-version-check -e '.[dev]'
	touch $(DEV_STAMP) $(STAMP)

demo: $(STAMP)
	$(BIN)/evalduck run datasets/demo.jsonl --name demo

# The shipped sweep: two bots (examples/support_bots.py) x two system prompts over the demo dataset, then its
# leaderboard (docs/sweeps.md). No model needed; set EVALDUCK_JUDGE_MODEL to judge answer relevancy too.
sweep-demo: $(STAMP)
	$(BIN)/evalduck sweep datasets/sweep-demo.yaml

# A local Prefect server (unless PREFECT_API_URL names one), the deployments of prefect.yaml and a worker.
serve: $(STAMP)
	$(BIN)/evalduck serve

# Ends what `make serve` started, by the process ids it recorded in .evalduck/serve.json.
stop:
	$(BIN)/evalduck stop

# The suite as two pytest processes at once, one per core (a single one left a third of the 2 cores idle:
# docs/benchmarks.md): the tests that run the product as a user does (tests/cli, tests/install, tests/e2e,
# whose slow set-ups start in the background, tests/e2e/early.py) and all the others (tests/ but those). The
# first prints as it goes; the second's output follows once both ended. Fails when either fails.
TEST_USER_SIDE := tests/cli tests/install tests/e2e
test: $(DEV_STAMP)
	@rest=$$(mktemp "$${TMPDIR:-/tmp}/evalduck-test-rest.XXXXXX"); \
	$(BIN)/python -m pytest -q --durations=15 tests $(TEST_USER_SIDE:%=--ignore=%) > "$$rest" 2>&1 & \
	other=$$!; \
	trap 'kill $$other 2>/dev/null' INT TERM; \
	echo "== $(TEST_USER_SIDE) (the rest of tests/ runs alongside; its output follows)"; \
	$(BIN)/python -m pytest -q --durations=15 $(TEST_USER_SIDE); first=$$?; \
	wait $$other; second=$$?; \
	echo "== the rest of tests/"; cat "$$rest"; rm -f "$$rest"; \
	test $$first = 0 && test $$second = 0

# The everyday loop (under a minute here): the tests that start nothing, i.e. neither a Prefect server (e2e, harness), a
# Dask cluster nor a process (markers set by tests/conftest.py from each test's fixtures and module).
test-fast: $(DEV_STAMP)
	$(BIN)/python -m pytest -q -m "not e2e and not harness and not dask and not subprocess"

# ruff's checks ([tool.ruff] in pyproject.toml): pyflakes, bugbear, import order, google docstrings. It
# only reports; `$(BIN)/ruff check --fix .` applies the safe fixes. CI fails on any finding.
lint: $(DEV_STAMP)
	$(BIN)/ruff check .

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .ruff_cache *.egg-info
