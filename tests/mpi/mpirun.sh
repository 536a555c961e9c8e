#!/usr/bin/env bash
# Runs a command on N MPI ranks with a hard time limit, so that a hang fails
# instead of blocking:   tests/mpi/mpirun.sh N SECONDS COMMAND [ARGS...]
# Open MPI's mpirun is told to place more ranks than there are cores
# (--oversubscribe), to skip its UCX one-sided component (see below) and, for
# root (containers, CI), that it may run; MPICH's mpiexec needs none of it.
# MPIRUN names another launcher; else the
# mpirun beside COMMAND is used where there is one (.venv/bin/python runs
# under .venv/bin/mpirun, Open MPI's wheel, with .venv/bin on PATH for its
# helpers), else the mpirun on PATH.
set -euo pipefail
if [ $# -lt 3 ]; then
    sed -n '2,10p' "$0"
    exit 2
fi
n=$1 seconds=$2
shift 2
mpirun=${MPIRUN:-}
if [ -z "$mpirun" ]; then
    beside=$(dirname -- "$1")/mpirun
    if [[ "$1" == */* ]] && [ -x "$beside" ]; then
        mpirun=$beside
        PATH="$(cd -- "$(dirname -- "$1")" && pwd):$PATH"
        export PATH
    elif command -v mpirun >/dev/null; then
        mpirun=mpirun
    else
        echo "mpirun.sh: no mpirun on PATH or beside $1 (set MPIRUN, or install the" \
            "test group: ./dev test)" >&2
        exit 127
    fi
fi
args=(-n "$n")
if "$mpirun" --version 2>&1 | grep -q 'Open MPI'; then
    # osc ucx: the one-sided component that UCX drives, which without a UCX
    # device prints an error when a window is made (halo exchanges through
    # shared memory make one) and is then passed over anyway
    args+=(--oversubscribe --mca osc ^ucx)
    if [ "$(id -u)" = 0 ]; then
        args+=(--allow-run-as-root)
    fi
fi
status=0
timeout --kill-after=10 "$seconds" "$mpirun" "${args[@]}" "$@" || status=$?
if [ "$status" = 124 ] || [ "$status" = 137 ]; then
    echo "mpirun.sh: timed out after $seconds s on $n ranks: $*" >&2
fi
exit "$status"
