#!/usr/bin/env bash
# DGL compatibility harness: builds a separate venv with DGL 2.1.0 (numpy<2) and graphshard, then runs tests/dgl.
# Usage: bash bench/dgl_compat.sh [setup|test|all] [pytest args...]   (default: all)
# Env: DGL_VENV (default /work/dgl-venv), DGL_PYTHON_BASE (interpreter used to create the venv, default python3.11).
set -euo pipefail
set -f  # no globbing: requirement strings like dask[dataframe] stay literal

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DGL_VENV="${DGL_VENV:-/work/dgl-venv}"
BASE_PY="${DGL_PYTHON_BASE:-$(command -v python3.11 || command -v python3)}"
ACTION="${1:-all}"
[ $# -gt 0 ] && shift
# The machine-wide pip constraint file caps torch; this venv pins its own versions instead.
export PIP_CONSTRAINT=
export PIP_CONFIG_FILE=/dev/null

# First choice per issue 4; the fallback is the combination recorded in shared/reference/figures.md.
PRIMARY=("dgl==2.1.0" "torch==2.1.2" "torchdata==0.7.1")
FALLBACK=("dgl==2.1.0" "torch==2.2.1" "torchdata==0.8.0")
# pyarrow 26 refuses numpy < 2 at import ("requires NumPy 2.0 or newer"); 20.0 is checked to work with numpy 1.26.
COMMON=("numpy<2" "setuptools<70" pydantic pyyaml "pyarrow<21" psutil xxhash pytest pytest-timeout)

setup() {
    local pip="$DGL_VENV/bin/pip"
    if [ ! -x "$DGL_VENV/bin/python" ]; then
        "$BASE_PY" -m venv "$DGL_VENV"
        "$pip" install --upgrade pip wheel
    fi
    local pins
    if "$pip" install "${PRIMARY[@]}" "${COMMON[@]}"; then
        pins=("${PRIMARY[@]}")
    else
        echo "dgl_compat: ${PRIMARY[*]} failed to install; falling back to ${FALLBACK[*]}" >&2
        "$pip" install "${FALLBACK[@]}" "${COMMON[@]}"
        pins=("${FALLBACK[@]}")
    fi
    # Keep later installs from moving numpy/torch/dgl.
    local constraints="$DGL_VENV/dgl-constraints.txt"
    printf '%s\n' "${pins[@]}" "numpy<2" "setuptools<70" "pyarrow<21" > "$constraints"
    "$pip" install --no-deps -e "$REPO"
    # graphshard's other dependencies, each only if it resolves under numpy<2 (dask runs the dispatch, numba the
    # multilevel kernels and the geometric generator; prefect, s3fs and moto, the S3 server of the fetch tests, are
    # optional here; s3fs and moto resolve together, so that botocore stays within aiobotocore's pin; PyG, whose
    # Data/HeteroData the Python API takes).
    local dep
    for dep in "dask[dataframe,distributed]" pymetis cmeel-metis kaminpar "numba>=0.60" "fsspec>=2024.6 s3fs>=2024.6 moto[server]" \
               "torch_geometric==2.5.3" \
               "prefect==3.8.8 prefect-dask==0.3.7 fastapi<0.151"; do
        # shellcheck disable=SC2086  # the prefect group is three requirements installed together
        "$pip" install -c "$constraints" $dep || echo "dgl_compat: optional dependency $dep not installed" >&2
    done
    "$DGL_VENV/bin/python" - <<'PY'
import dgl, torch, numpy, pyarrow, graphshard.formats.readers, graphshard.formats.dgl_binary
print(f"dgl {dgl.__version__} torch {torch.__version__} numpy {numpy.__version__} pyarrow {pyarrow.__version__}: "
      "graphshard.formats imports")
PY
}

run_tests() {
    cd "$REPO"
    DGL_DIST_DEBUG=1 DGLBACKEND=pytorch "$DGL_VENV/bin/python" -m pytest -m dgl tests/dgl -p no:cacheprovider "$@"
}

case "$ACTION" in
    setup) setup ;;
    test) run_tests "$@" ;;
    all) setup; run_tests "$@" ;;
    *) echo "usage: $0 [setup|test|all] [pytest args...]" >&2; exit 2 ;;
esac
