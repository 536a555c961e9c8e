"""Run gtstore's benchmarks side by side with NumPy and GT4Py.

    python bench/run.py [--quick] [alloc] [zeros] [from_array] [storage] [sync] [calls] [compute] [gpu] [gpu_engine]

Prints the machine, then one Markdown table per benchmark with its ratios
and targets, and the load average before and after each. See bench/README.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_alloc  # noqa: E402
import bench_calls  # noqa: E402
import bench_compute  # noqa: E402
import bench_gpu_engine  # noqa: E402
import bench_from_array  # noqa: E402
import bench_gpu  # noqa: E402
import bench_storage  # noqa: E402
import bench_sync  # noqa: E402
import bench_zeros  # noqa: E402
from _common import OtherLoad, load, machine, render  # noqa: E402

BENCHMARKS = {"alloc": bench_alloc, "zeros": bench_zeros, "from_array": bench_from_array,
              "storage": bench_storage, "sync": bench_sync, "calls": bench_calls,
              "compute": bench_compute, "gpu": bench_gpu,
              "gpu_engine": bench_gpu_engine}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few repetitions (a smoke run)")
    parser.add_argument("only", nargs="*", metavar="benchmark",
                        help=f"run only these ({', '.join(BENCHMARKS)}); default all")
    args = parser.parse_args()
    unknown = [name for name in args.only if name not in BENCHMARKS]
    if unknown:
        parser.error(f"unknown benchmark {unknown[0]!r}; choose from {', '.join(BENCHMARKS)}")

    print("## Machine\n")
    print("\n".join(f"- {line}" for line in machine()))
    print(f"- command: {' '.join([os.path.basename(sys.executable), *sys.argv])}")
    start = time.perf_counter()
    for name in args.only or BENCHMARKS:
        before, others = load(), OtherLoad()
        began = time.perf_counter()
        result = BENCHMARKS[name].run(args.quick)
        tables = result if isinstance(result, list) else [result]
        last = tables[-1]
        last.notes.append(f"load average (1, 5, 15 min) before: {before}, after: {load()}; "
                          f"other processes used {others.share()} of the CPU time meanwhile; "
                          f"{time.perf_counter() - began:.0f} s")
        if others.fraction() > 0.10:
            last.notes.append("WARNING: other processes took more than 10% of the CPU time; "
                              "the parallel kernels use every core, so re-run on a quiet machine")
        for table in tables:
            print("\n" + render(table), flush=True)
    print(f"\ntotal {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
