#!/usr/bin/env bash
# The system packages graphshard's methods and tests use, beyond Python: OpenMPI and PT-Scotch's ParMETIS interface
# (assign.method parmetis, tests marked mpi), Debian's METIS and its tools (metis; its gpmetis checks our METIS
# wrapper against the library's own tool) and Chromium (the browser tests: report.html, the Dask dashboard).
# Run by scripts/example.sh and scripts/test.sh. As root with apt-get it installs what is missing; otherwise it
# prints one line naming what is missing and what that skips, and carries on.
set -euo pipefail

PACKAGES=(openmpi-bin libopenmpi-dev libscotchparmetis-dev libmetis5 metis chromium)
MPI="assign.method parmetis and its tests (-m mpi)"
METIS="the tests of Debian's METIS (cmeel-metis's is used)"
declare -A SKIPS=(
  [openmpi-bin]=$MPI [libopenmpi-dev]=$MPI [libscotchparmetis-dev]=$MPI [libmetis5]=$METIS [metis]=$METIS
  [chromium]="the browser tests (report.html, Dask dashboard)"
)

installed() {
  if command -v dpkg-query >/dev/null 2>&1; then
    [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]
  else
    case "$1" in
      chromium) command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 ;;
      openmpi-bin) command -v mpirun >/dev/null 2>&1 ;;
      metis) command -v gpmetis >/dev/null 2>&1 ;;
      *) return 1 ;;
    esac
  fi
}

missing=()
for p in "${PACKAGES[@]}"; do installed "$p" || missing+=("$p"); done
[ ${#missing[@]} -eq 0 ] && exit 0

if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  echo "setup-system: apt-get install ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  exit 0
fi

skipped=$(for p in "${missing[@]}"; do echo "${SKIPS[$p]}"; done | sort -u | paste -sd ';' | sed 's/;/; /g')
how="as root: apt-get install ${missing[*]}"
command -v apt-get >/dev/null 2>&1 || how="install them with this system's package manager"
echo "setup-system: missing ${missing[*]} ($how); skipped: $skipped" >&2
