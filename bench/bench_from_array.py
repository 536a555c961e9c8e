"""(c) from_array: a 64 MiB C-ordered float64 array into an I-contiguous
preset (gt:cpu_ifirst), a layout change (K contiguous -> I contiguous).

Compared, per call, with
- a contiguous copy of the same bytes: ``np.copyto`` between two
  C-contiguous arrays, both already mapped (the bandwidth reference);
- ``np.copyto`` into the same kind of target (an I-contiguous gt:cpu_ifirst
  array, allocated once and already mapped): NumPy's transposing copy.
gtstore's calls allocate, copy and free (the free is inside the timing);
after the first call the block comes from gtstore's cache of freed large
blocks. The first from_array of this size in a process is measured in fresh
subprocesses, with the memory "cold" and "warm" (see bench_zeros.py), and
the steady state again in fresh processes under other OpenMP settings.
GB/s count bytes read + written: 2 x 64 MiB per call.
Target: gtstore's steady state >= 75% of the contiguous-copy bandwidth.
"""

from __future__ import annotations

import numpy as np

from _common import COLD_WAIT, Table, Timing, first_calls, fmt_ratio, fmt_time, gbps, \
    gt4py_storage, in_fresh_process, time_interleaved, verdict

import gtstore.arrays as ga

SHAPE = (256, 256, 128)  # float64: 64 MiB
NBYTES = int(np.prod(SHAPE)) * 8
MOVED = 2 * NBYTES  # read + written
BACKEND = "gt:cpu_ifirst"

FIRST_CALL = f"""
import json, time
import numpy as np
import gtstore.arrays as ga
src = np.arange({int(np.prod(SHAPE))}, dtype=np.float64).reshape({SHAPE!r})
t0 = time.perf_counter()
a = ga.from_array(src, backend={BACKEND!r})
t1 = time.perf_counter()
del a
t2 = time.perf_counter()
b = ga.from_array(src, backend={BACKEND!r})
t3 = time.perf_counter()
print(json.dumps({{"first": t1 - t0, "second": t3 - t2}}))
"""

# The steady state again in a fresh process under other OpenMP settings
# (read when the OpenMP runtime starts): the contiguous copy and from_array
# taken in turn, as in the main process; the first round is dropped.
STEADY = f"""
import json, time
import numpy as np
import gtstore.arrays as ga
src = np.arange({int(np.prod(SHAPE))}, dtype=np.float64).reshape({SHAPE!r})
dst_c = np.zeros({SHAPE!r})
samples = {{{{"contiguous": [], "ga": []}}}}
for _ in range({{calls}}):
    t0 = time.perf_counter()
    np.copyto(dst_c, src)
    t1 = time.perf_counter()
    a = ga.from_array(src, backend={BACKEND!r})
    del a
    t2 = time.perf_counter()
    samples["contiguous"].append(t1 - t0)
    samples["ga"].append(t2 - t1)
print(json.dumps({{{{k: v[1:] for k, v in samples.items()}}}}))
"""
VARIANTS = {
    "default settings": {},
    "OMP_WAIT_POLICY=active": {"OMP_WAIT_POLICY": "active"},
    "OMP_NUM_THREADS=1": {"OMP_NUM_THREADS": "1"},
}


def run(quick: bool) -> Table:
    gs = gt4py_storage()
    src = np.arange(int(np.prod(SHAPE)), dtype=np.float64).reshape(SHAPE)
    dst_c = np.zeros(SHAPE)
    dst_i = ga.zeros(SHAPE, np.float64, backend=BACKEND)
    assert dst_i.strides == (8, 8 * SHAPE[0], 8 * SHAPE[0] * SHAPE[1]), dst_i.strides
    check = ga.from_array(src, backend=BACKEND)
    assert check.strides == dst_i.strides and np.array_equal(check, src)
    del check

    ns = {"np": np, "ga": ga, "gs": gs, "src": src, "dst_c": dst_c, "dst_i": dst_i}
    cases = {
        "contiguous": "np.copyto(dst_c, src)",
        "ga": f"a = ga.from_array(src, backend='{BACKEND}'); del a",
        "ga C": "a = ga.from_array(src); del a",
    }
    # The slow calls in loops of their own, so that they do not set the
    # rhythm of the fast ones: an 85 ms single-threaded copy leaves the other
    # cores idle. The "after" row shows from_array right after it.
    slow = {
        "np transposing": "np.copyto(dst_i, src)",
        "ga after": f"a = ga.from_array(src, backend='{BACKEND}'); del a",
    }
    repeat = 5 if quick else 61
    t = time_interleaved(cases, ns, repeat=repeat, batch_seconds=0.0)
    slow_repeat = 5 if quick else 21
    t.update(time_interleaved(slow, ns, repeat=slow_repeat, batch_seconds=0.0))
    if gs is not None:
        t.update(time_interleaved(
            {"gs": f"a = gs.from_array(src, backend='{BACKEND}'); del a"}, ns,
            repeat=2 if quick else 5, batch_seconds=0.0))

    processes = 2 if quick else 7
    firsts = {cold: first_calls(FIRST_CALL, processes, cold) for cold in (True, False)}
    variants = {}
    for name, env in VARIANTS.items():
        result = in_fresh_process(STEADY.format(calls=repeat + 1), env=env)
        variants[name] = (Timing(result["contiguous"]), Timing(result["ga"]))
    first = {cold: Timing([f["first"] for f in firsts[cold]]) for cold in firsts}
    second = {cold: Timing([f["second"] for f in firsts[cold]]) for cold in firsts}

    base = t["contiguous"]
    base_bw = MOVED / base.median
    table = Table(
        f"(c) from_array, {NBYTES >> 20} MiB float64, shape {SHAPE}, C order -> "
        f"{BACKEND} (I contiguous) (ms per call; GB/s = (read + written bytes) / time)",
        ["call", "min ms", "median ms", "GB/s (median)",
         "ratio to contiguous copy (bandwidth, median)"])

    def row(label, timing, baseline=None):
        if timing is None:
            table.rows.append([label, "not installed", "not installed", "not installed",
                               "not installed"])
            return
        ratio = fmt_ratio((baseline or base).median / timing.median)
        table.rows.append([label, fmt_time(timing.min, "ms"), fmt_time(timing.median, "ms"),
                           gbps(MOVED, timing.median),
                           ratio if baseline is None else f"{ratio} (*)"])

    row("contiguous copy: np.copyto(C -> C), preallocated", base)
    row(f"gtstore: ga.from_array(src, backend='{BACKEND}'), steady state", t["ga"])
    row(f"NumPy: np.copyto(C -> {BACKEND} target), preallocated", t["np transposing"])
    row("gtstore: the same from_array, each call right after the NumPy copy above",
        t["ga after"])
    for name, (contiguous, timing) in variants.items():
        row(f"gtstore: steady state, fresh process, {name}", timing, contiguous)
    for cold in (True, False):
        state = "cold" if cold else "warm"
        row(f"gtstore: first call in a fresh process, memory {state}", first[cold])
        row(f"gtstore: second call in that process ({state})", second[cold])
    row("gtstore: ga.from_array(src) without preset (C -> C), steady state", t["ga C"])
    row(f"gt4py.storage.from_array(src, backend='{BACKEND}')", t.get("gs"))

    ratio = base.median / t["ga"].median
    table.notes.append(
        f"target gtstore steady state >= 75% of the contiguous copy: {verdict(ratio >= 0.75)} "
        f"({100 * ratio:.0f}% by median, {100 * base.min / t['ga'].min:.0f}% by min); "
        f"NumPy's transposing copy: {100 * base.median / t['np transposing'].median:.1f}%")
    table.notes.append(
        f"steady-state rows: one call per sample, the calls taken in turn: the contiguous copy, "
        f"from_array and from_array without preset {repeat} times; NumPy's transposing copy "
        f"and from_array {slow_repeat} times; GT4Py alone, {2 if quick else 5} times; gtstore "
        "and GT4Py allocate, copy and free inside the timing")
    table.notes.append(
        f"first-call rows: {processes} fresh subprocesses per state; each builds the source, "
        "then times its first ga.from_array of this size (no gtstore allocation before it) "
        "and a second one after freeing the first; min and median over processes; 'cold': "
        f"started after {COLD_WAIT:.0f} s idle, when the kernel has reported the memory freed "
        "before to the hypervisor; 'warm': started right after the previous one ended")
    table.notes.append(
        "the contiguous and NumPy copies run on one thread; gtstore's kernels use "
        "OMP_NUM_THREADS threads (unset: every core)")
    table.notes.append(
        f"(*) 'fresh process' rows: {repeat} rounds of a contiguous copy then a from_array, "
        "after one dropped round, in a fresh subprocess with these OpenMP settings; their "
        "ratio is to the contiguous copy of that process, whose medians were " + ", ".join(
            f"{name} {fmt_time(c.median, 'ms')} ms" for name, (c, _) in variants.items()))
    return table
