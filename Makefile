# The two commands of the README: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test lint bench clean

$(BIN)/acceptmon: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q -e '.[all]'
	touch $@

$(VENV)/.dev: $(BIN)/acceptmon
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

## demo: install and replay the bundled EAGLE-3 incident log
demo: $(BIN)/acceptmon
	$(BIN)/acceptmon demo

## test: install everything (pip and apt) and run lint, mypy --strict and the whole suite
test: $(VENV)/.dev
	./scripts/system-deps.sh
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy --strict acceptmon
	$(BIN)/pytest -q

lint: $(VENV)/.dev
	$(BIN)/ruff check . && $(BIN)/ruff format --check . && $(BIN)/mypy acceptmon

bench: $(VENV)/.dev
	$(BIN)/python bench/parse_throughput.py

clean:
	rm -rf $(VENV) build *.egg-info
