# Two commands do all set-up: `make run` and `make test` (see README.md).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PIP_FLAGS ?= --quiet --disable-pip-version-check

.PHONY: run test test-all lint bench install clean

$(BIN)/python:
	$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "CEMS needs Python 3.11 or newer")'
	$(PYTHON) -m venv $(VENV)

# Hooks run on every tool call: precompiled, so that no run pays for compiling (or cannot cache it).
define install_cems
	$(BIN)/python -m pip install $(PIP_FLAGS) --upgrade pip
	$(BIN)/python -m pip install $(PIP_FLAGS) -e '$(1)'
	$(BIN)/python -m compileall -q cems_cli hooks
endef

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(call install_cems,.)
	touch $@

# In one pip run, not on top of the plain install: a fresh clone's `make test` saves a second resolution.
$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(call install_cems,.[test])
	touch $@ $(VENV)/.installed

install: $(VENV)/.installed

## Remember a few memories on the embedded PostgreSQL and search them.
run: $(VENV)/.installed
	$(BIN)/cems demo

## Install with test extras, lint, then run the test suite (benchmarks excluded) on every core, type-checked
## beside it:
## pytest-xdist hands whole files to its workers, each with its own embedded PostgreSQL (tests/conftest.py);
## `make test TEST_WORKERS=0` runs it in one process. One worker more than the cores: a third of the suite's
## time is spent waiting on the processes it starts (servers, Claude Code, hooks), and on 2 cores 3 workers
## ran it in 215 s where 2 took 252 s (4 took 236 s: more servers than the cores can start in time).
TEST_WORKERS ?= $(shell $(PYTHON) -c 'import os; f = getattr(os, "sched_getaffinity", None); \
	print((len(f(0)) if f else os.cpu_count() or 1) + 1)')
## Ruff and the layers' contracts first (a second): they fail fast. mypy (12-16 s on a fresh clone) runs
## beside the tests, on the CPU their waits leave idle, and fails `make test` as well, after them.
## The one collection before the workers start writes pytest's rewritten test modules to __pycache__ (even
## where PYTHONDONTWRITEBYTECODE is set, as in some CI images): each worker then collects in 4 s, not 9.
test: $(VENV)/.installed-test
	$(BIN)/ruff check .
	$(BIN)/lint-imports --no-logo
	$(BIN)/mypy >$(VENV)/mypy.log 2>&1 & mypy=$$!; \
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -q --collect-only -p no:xdist >/dev/null 2>&1; \
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder; tests=$$?; \
	wait $$mypy; typed=$$?; cat $(VENV)/mypy.log; test $$tests -eq 0 && test $$typed -eq 0

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
