#!/usr/bin/env bash
# Create .venv, install graphshard, generate the small example graph if absent, and run the whole pipeline
# (ingest -> assign -> shuffle -> validate) on configs/example.yaml as a Prefect flow with no server running.
# Run it again: every step is reported Cached and nothing is recomputed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-system.sh  # OpenMPI, PT-Scotch, METIS, Chromium: installed as root, else one line on what is missing
if [ ! -x .venv/bin/graphshard ]; then
  python3 -m venv .venv
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -e .
fi
export DO_NOT_TRACK=1 PREFECT_SERVER_ANALYTICS_ENABLED=false
if [ ! -f data/example/metadata.json ]; then
  .venv/bin/graphshard generate rmat --out data/example --nodes 5000 --edges 50000 --chunks 4 --seed 0
fi
.venv/bin/graphshard run configs/example.yaml "$@"
