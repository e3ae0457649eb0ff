# triggerbench: the two commands a newcomer needs are `make build-dataset` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.setup-stamp
VERSION := $(shell sed -n 's/^version: *//p' configs/default.yaml)
RELEASE ?= releases/$(VERSION)
OFFLINE := HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1

.PHONY: setup build-dataset test bench audit publish clean

setup: $(STAMP)

# torch first, pinned to the CPU build that lies on these machines' disk; then the project.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -e '.[test]'
	$(BIN)/python -c "from pipeline.tokenizer import ensure_offline_ranks; print('o200k ranks:', ensure_offline_ranks())"
	touch $(STAMP)

build-dataset: setup
	@if [ -d "$(RELEASE)" ]; then echo "$(RELEASE) already exists (releases are never overwritten)"; \
	else $(OFFLINE) $(BIN)/triggerbench build; fi

test: setup
	$(OFFLINE) $(BIN)/python -m pytest -q -p no:cacheprovider

bench: setup
	$(OFFLINE) $(BIN)/python bench/run_all.py

audit: setup
	$(OFFLINE) $(BIN)/triggerbench audit $(RELEASE)

# make publish REPO_ID=org/name [PUBLISH_FLAGS=--dry-run]
publish: setup
	$(BIN)/triggerbench publish $(RELEASE) --repo-id $(REPO_ID) $(PUBLISH_FLAGS)

clean:
	rm -rf .cache
