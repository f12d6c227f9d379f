#!/usr/bin/env bash
# System packages (scripts/setup-system.sh), .venv, graphshard with its test extras, the linter (ruff, configured in
# pyproject.toml), then the whole test suite, whose output must end cleanly.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-system.sh  # OpenMPI, PT-Scotch, METIS, Chromium: installed as root, else one line on what is skipped
python3 -m venv .venv
.venv/bin/pip install -q --upgrade pip
.venv/bin/pip install -q -e ".[test,mpi]"
.venv/bin/ruff check .  # line length, import order, pyflakes: a lint failure stops here
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 DO_NOT_TRACK=1 PREFECT_SERVER_ANALYTICS_ENABLED=false
# The run must end cleanly: nothing after pytest's summary line, no traceback anywhere (scripts/clean_output.py).
out="$(mktemp -t graphshard-tests-XXXXXX.log)"
status=0
.venv/bin/python -m pytest -q -m "not dgl" "$@" 2>&1 | tee "$out" || status=$?
.venv/bin/python scripts/clean_output.py "$out" || status=1
exit "$status"
