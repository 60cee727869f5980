# Workbench tasks. The two that matter:
#   make report   run the notebooks, write reports/ (HTML, executed notebooks, charts)
#   make test     lint and format check (ruff), type-check the package (mypy) and run the test suite
# Both create .venv (python3.11) and install the project into it when needed.
#   make lab      start JupyterLab on lab/ (working copies of notebooks/) with the project's kernel (ARGS='--port 8890' ...)
#
# Parameters for `make report`:
#   make report ARGS='-p host myalias -p concurrency_levels "[1,2,4]"'
#   make report P='requests_per_level=8 concurrency_levels=[1,2,4]'   (NAME=VALUE, no spaces in VALUE)
#   make report ARGS='notebooks/spec_vs_baseline.ipynb --params-file my.yaml'
# Extra pytest arguments: make test ARGS='-k report'

SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3.11
VENV   ?= .venv
# The other supported Python, checked by `make check-py312` in its own venv.
PYTHON312 ?= python3.12
VENV312   ?= .venv-py312
BIN    := $(VENV)/bin
# Two installs, each with its stamp: the core and the notebooks' dependencies (`make report`, `make lab`),
# then the test and fleet extras on top (`make test`, `make venv`); either order works from a fresh clone.
STAMP  := $(VENV)/.make-installed
TEST_STAMP := $(VENV)/.make-installed-test
ARGS   ?=
P      ?=
# Debian packages the tests use: chromium (rendered-report check), openssh-server (SSH tests).
DEB_PACKAGES := chromium fonts-liberation openssh-server

PIP_QUIET := $(if $(CI),--progress-bar off -q,-q)
# P='a=1 b=[2,3]'  ->  -p a '1' -p b '[2,3]'
P_ARGS := $(foreach kv,$(P),-p $(firstword $(subst =, ,$(kv))) '$(patsubst $(firstword $(subst =, ,$(kv)))=%,%,$(kv))')

.PHONY: help report test lab venv system-deps clean distclean check-py312 sglang-payload

help:
	@echo "make report   run every notebook in notebooks/ -> reports/*.html, *.ipynb, charts (ARGS=..., P=...)"
	@echo "make test     ruff check and ruff format --check, mypy over workbench/, then the tests (installs chromium/openssh-server when root and missing)"
	@echo "make lab      start JupyterLab on lab/ (working copies of notebooks/; 127.0.0.1) with the project's kernel (ARGS=...)"
	@echo "make venv     create .venv and install the project with its test and fleet extras (uv; INSTALLER=pip for pip); make report installs the core alone"
	@echo "make check-py312  install into a Python 3.12 venv ($(VENV312)), import everything, run a fast test subset"
	@echo "make sglang-payload  download real SGLang 0.5.17 and what it imports into .sgl/ (~48 MB) for a GPU machine without network (docs/REAL_SGLANG.md)"
	@echo "make clean    remove reports/ and caches; make distclean also removes .venv"

# compileall: the package's bytecode, written once and read by every kernel and simulated server the
# report starts (they compile it again in memory otherwise when PYTHONDONTWRITEBYTECODE is set)
report: $(STAMP)
	@$(BIN)/python -m compileall -q workbench >/dev/null
	$(BIN)/workbench report $(ARGS) $(P_ARGS)

# Three pytest workers (pytest-xdist): most tests wait on servers, kernels, sshd and Ray (the suite's own
# processes used about half of one core over a whole run), so three share 2 cores.
# --dist loadfile keeps each test module on one worker: a module-scoped fixture (the fleet tests' Ray
# cluster) starts once, and a module's tests never run beside each other (xdist 3.8's loadgroup did not
# keep a group together under pytest 9.2). --no-loadscope-reorder keeps the modules in the order
# tests/conftest.py gives them (the slowest first). TEST_WORKERS=0 runs them in this process, one at a time.
TEST_WORKERS ?= 3
test: $(TEST_STAMP) system-deps
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m mypy
	$(BIN)/python -m pytest -q $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder) $(ARGS)

# JupyterLab from the venv: its kernel "python3" (installed into the venv by $(STAMP)) is the
# project's interpreter, so notebooks import this checkout. Loopback only unless ARGS says otherwise.
# It serves lab/ (ignored by git): working copies of notebooks/, so running them leaves the committed
# notebooks unchanged (tools/lab_notebooks.py copies the missing ones and keeps yours).
lab: $(STAMP)
	$(BIN)/python tools/lab_notebooks.py
	$(BIN)/jupyter lab --ServerApp.ip=127.0.0.1 --ServerApp.root_dir=lab $(if $(filter 0,$(shell id -u)),--allow-root) $(ARGS)

venv: $(TEST_STAMP)

$(BIN)/python:
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "error: $(PYTHON) not found; install Python 3.11 or run make PYTHON=/path/to/python3.11" >&2; exit 1; }
	$(PYTHON) -m venv $(VENV)

# Re-install whenever pyproject.toml changes; register the venv's own IPython kernel
# as "python3" inside the venv, so papermill runs notebooks with the venv's interpreter.
# INSTALLER=uv (the default): pip installs uv (from PyPI) into the venv, and uv installs the project,
# about 25 s from a cold cache on 2 cores against pip's 70 s (docs/PERFORMANCE.md); INSTALLER=pip: pip alone.
# tools/warm_bytecode.py then writes the .pyc files of what a report imports (uv writes none), so no
# kernel or server compiles pandas, altair or aiohttp from source at every start where
# PYTHONDONTWRITEBYTECODE is set (about 5 s of CPU a kernel; docs/PERFORMANCE.md).
INSTALLER ?= uv
UV := VIRTUAL_ENV=$(abspath $(VENV)) $(BIN)/uv pip install -q
$(STAMP): pyproject.toml | $(BIN)/python
ifeq ($(INSTALLER),uv)
	$(BIN)/python -m pip install $(PIP_QUIET) --upgrade pip uv
	$(UV) -e .
else
	$(BIN)/python -m pip install $(PIP_QUIET) --upgrade pip
	$(BIN)/python -m pip install $(PIP_QUIET) -e .
endif
	$(BIN)/python tools/warm_bytecode.py
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (workbench .venv)"
	@touch $@

# The test extra (mypy, pytest, playwright, openai) and the fleet extra (Ray), on top of the core.
$(TEST_STAMP): $(STAMP)
ifeq ($(INSTALLER),uv)
	$(UV) -e '.[test,fleet]'
else
	$(BIN)/python -m pip install $(PIP_QUIET) -e '.[test,fleet]'
endif
	@touch $@

# Python 3.12 is supported besides the 3.11 of .venv: install the project into its own venv, import
# every module, run the CLI and a fast subset of the tests (about 3 minutes on 2 cores, most of it pip).
# PYTHON312=/path/to/python3.12 when `python3.12` is not on PATH (e.g. ~/.pyenv/versions/3.12.1/bin/python3.12).
check-py312:
	@$(PYTHON312) -c 'import sys; assert sys.version_info[:2] == (3, 12), sys.version' 2>/dev/null || { echo "error: $(PYTHON312) is not a working Python 3.12; run make check-py312 PYTHON312=/path/to/python3.12" >&2; exit 1; }
	[ -x $(VENV312)/bin/python ] || $(PYTHON312) -m venv $(VENV312)
	$(VENV312)/bin/python -m pip install $(PIP_QUIET) -e '.[test]'
	$(VENV312)/bin/python -c 'import pkgutil, importlib, workbench; [importlib.import_module(m.name) for m in pkgutil.walk_packages(workbench.__path__, "workbench.") if not m.name.endswith("__main__")]; print("imported every workbench module under", __import__("sys").version.split()[0])'
	$(VENV312)/bin/workbench --version
	$(VENV312)/bin/python -m pytest -q -p no:cacheprovider tests/test_python_versions.py tests/test_exports.py tests/test_catalogue.py tests/test_variants_grid.py tests/test_store.py tests/test_analysis_repeats.py

system-deps:
	@missing=""; \
	command -v chromium >/dev/null 2>&1 || missing="$$missing chromium"; \
	[ -d /usr/share/fonts/truetype/liberation ] || missing="$$missing fonts-liberation"; \
	[ -x /usr/sbin/sshd ] || missing="$$missing openssh-server"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing Debian packages:$$missing"; \
	    apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing; \
	  else \
	    echo "error: the tests need Debian packages:$$missing" >&2; \
	    echo "install them with: sudo apt-get update && sudo apt-get install -y$$missing" >&2; \
	    exit 1; \
	  fi; \
	fi

clean:
	rm -rf reports .pytest_cache
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV) $(VENV312) *.egg-info build

# Real SGLang 0.5.17 for a GPU machine without network: the wheels launch_server imports, unpacked, trimmed and
# xz-compressed into .sgl/ (ignored by git), with the recipe files; benchmarks/real_sglang_gpu.py runs there.
sglang-payload:
	bash benchmarks/real_sglang/build_payload.sh .sgl
