# Two entry points from a fresh clone: `make demo` and `make test`. Both bootstrap .venv from python3.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

# No telemetry, no price-list download at litellm import, no Prefect banner noise.
export PREFECT_SERVER_ANALYTICS_ENABLED := false
export LITELLM_LOCAL_MODEL_COST_MAP := True
export DO_NOT_TRACK := 1

.PHONY: venv demo test serve stop bench clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/evalduck run datasets/demo.jsonl --name demo

# A local Prefect server (unless PREFECT_API_URL names one), the deployments of prefect.yaml and a worker.
serve: $(STAMP)
	$(BIN)/evalduck serve

# Ends what `make serve` started, by the process ids it recorded in .evalduck/serve.json.
stop:
	$(BIN)/evalduck stop

test: $(STAMP)
	$(BIN)/python -m pytest -q

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis *.egg-info
