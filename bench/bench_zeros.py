"""(b) zeros of 256 MiB, including the first full write.

One call = allocate a zeroed float64 field of 256 MiB, write every element
once (``a.fill(1.0)``, NumPy's own single-threaded loop, the same for both)
and free it. NumPy's ``np.zeros`` gets lazily zeroed pages from the kernel,
so its cost is in the page faults of the first write; gtstore writes the
zeros itself but, after the first call, takes the block from its cache of
freed large blocks, which is already mapped. The first call of a process is
measured in fresh subprocesses, with the memory "cold" (returned to the
hypervisor by the kernel's free page reporting) and "warm" (just freed by
the previous process). GB/s = array bytes (256 MiB) / time per call.
"""

from __future__ import annotations

import numpy as np

from _common import COLD_WAIT, Table, Timing, first_calls, fmt_ratio, fmt_time, gbps, \
    time_interleaved

import gtstore.arrays as ga

SHAPE = (512, 256, 256)  # float64: 256 MiB
NBYTES = int(np.prod(SHAPE)) * 8
BACKEND = "gt:cpu_ifirst"

# The first call of a process: gtstore's and NumPy's in separate processes.
FIRST_CALL = f"""
import json, time
import numpy as np
import gtstore.arrays as ga
shape = {SHAPE!r}
t0 = time.perf_counter()
a = {{call}}; a.fill(1.0); del a
print(json.dumps(time.perf_counter() - t0))
"""
FIRST_GA = FIRST_CALL.format(call=f"ga.zeros(shape, np.float64, backend={BACKEND!r})")
FIRST_NP = FIRST_CALL.format(call="np.zeros(shape, np.float64)")


def run(quick: bool) -> Table:
    ns = {"np": np, "ga": ga, "shape": SHAPE, "f8": np.float64}
    prefaulted = np.ones(SHAPE)
    ns["b"] = prefaulted
    cases = {
        "np": "a = np.zeros(shape, f8); a.fill(1.0); del a",
        "ga": f"a = ga.zeros(shape, f8, backend='{BACKEND}'); a.fill(1.0); del a",
        "np zeros": "a = np.zeros(shape, f8); del a",
        "ga zeros": f"a = ga.zeros(shape, f8, backend='{BACKEND}'); del a",
        "write": "b.fill(1.0)",
    }
    repeat = 5 if quick else 21
    t = time_interleaved(cases, ns, repeat=repeat, batch_seconds=0.0)
    del ns["b"], prefaulted

    processes = 2 if quick else 7
    first = {(lib, cold): Timing(first_calls(code, processes, cold))
             for cold in (True, False) for lib, code in (("ga", FIRST_GA), ("np", FIRST_NP))}

    base = t["np"]
    table = Table(f"(b) zeros of {NBYTES >> 20} MiB float64, shape {SHAPE}, "
                  "with a first full write (ms per call)",
                  ["call", "min ms", "median ms", "GB/s (median)",
                   "ratio to NumPy (median time)"])

    def row(label, timing):
        table.rows.append([label, fmt_time(timing.min, "ms"), fmt_time(timing.median, "ms"),
                           gbps(NBYTES, timing.median), fmt_ratio(timing.median / base.median)])

    row("NumPy: np.zeros + a.fill(1.0), repeated", base)
    row(f"gtstore: ga.zeros({BACKEND}) + a.fill(1.0), repeated", t["ga"])
    for cold in (True, False):
        state = "cold" if cold else "warm"
        row(f"NumPy: first call in a fresh process, memory {state}", first["np", cold])
        row(f"gtstore: first call in a fresh process, memory {state}", first["ga", cold])
    row("parts: np.zeros alone (lazy, no write)", t["np zeros"])
    row(f"parts: ga.zeros({BACKEND}) alone, repeated", t["ga zeros"])
    row("parts: a.fill(1.0) into memory already mapped", t["write"])

    table.notes.append(
        f"repeated rows: {repeat} calls each, one call per sample, taken in turn; "
        "each call allocates, writes and frees (the free is inside the timing)")
    table.notes.append(
        f"first-call rows: the same call (zeros + fill + free), the only one of its process; "
        f"{processes} fresh subprocesses per row, min and median over them; 'cold': started "
        f"after {COLD_WAIT:.0f} s idle, when the kernel has reported the memory freed before "
        "to the hypervisor; 'warm': started right after the previous one ended")
    table.notes.append(
        f"gtstore vs NumPy, by median: repeated {base.median / t['ga'].median:.2f}x faster; "
        f"first call cold {first['np', True].median / first['ga', True].median:.2f}x, "
        f"warm {first['np', False].median / first['ga', False].median:.2f}x faster")
    return table
