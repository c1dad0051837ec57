#!/usr/bin/env bash
# Set up stoker on a fresh Debian machine: system tools (as root), then a virtual
# environment in .venv with stoker and its Python dependencies.
# Usage: ./install.sh            (idempotent; re-run after pulling)
set -euo pipefail
cd "$(dirname "$0")"

DEBS=(fio iperf3 iproute2 procps util-linux e2fsprogs
      slurmctld slurmd slurm-client munge libpmix-dev
      openmpi-bin libopenmpi-dev chromium)

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  missing=()
  for p in "${DEBS[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "install.sh: apt-get install ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
else
  echo "install.sh: not root; skipping Debian packages (need: ${DEBS[*]})" >&2
fi

PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
# torch is pinned: an unpinned torch pulls a multi-GB CUDA build.
.venv/bin/pip install -q --disable-pip-version-check 'torch==2.13.0'
.venv/bin/pip install -q --disable-pip-version-check -e '.[test,mpi]'
echo "install.sh: ready — run .venv/bin/stoker run" >&2
