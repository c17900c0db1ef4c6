# Two commands do all set-up: `make run` and `make test` (see README.md).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PIP_FLAGS ?= --quiet --disable-pip-version-check

.PHONY: run test test-all lint bench install clean

$(BIN)/python:
	$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "CEMS needs Python 3.11 or newer")'
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install $(PIP_FLAGS) --upgrade pip
	$(BIN)/python -m pip install $(PIP_FLAGS) -e .
	# Hooks run on every tool call: precompile so no run pays for compiling (or cannot cache it).
	$(BIN)/python -m compileall -q cems_cli hooks
	touch $@

$(VENV)/.installed-test: pyproject.toml $(VENV)/.installed
	$(BIN)/python -m pip install $(PIP_FLAGS) -e '.[test]'
	touch $@

install: $(VENV)/.installed

## Remember a few memories on the embedded PostgreSQL and search them.
run: $(VENV)/.installed
	$(BIN)/cems demo

## Install with test extras, lint and type-check, then run the test suite (benchmarks excluded) on every core:
## pytest-xdist hands whole files to its workers, each with its own embedded PostgreSQL (tests/conftest.py);
## `make test TEST_WORKERS=0` runs it in one process.
TEST_WORKERS ?= auto
test: lint
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

## Ruff-clean, mypy-clean and the layers kept (import-linter's contracts), all set in pyproject.toml:
## `make test`, and so CI, fails on any of them.
lint: $(VENV)/.installed-test
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/lint-imports --no-logo

bench: $(VENV)/.installed-test
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache .import_linter_cache build dist *.egg-info
