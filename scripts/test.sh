#!/usr/bin/env bash
# Create .venv, install graphshard with its test extras, run the test suite (fast tests; add -m slow for the rest).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/pip install -q --upgrade pip
.venv/bin/pip install -q -e ".[test,mpi]"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 DO_NOT_TRACK=1 PREFECT_SERVER_ANALYTICS_ENABLED=false
.venv/bin/python -m pytest -q -m "not dgl" "$@"
