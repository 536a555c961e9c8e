"""Shared helpers of the benchmarks: timing, fresh subprocesses, tables."""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import textwrap
import time
import timeit
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence


@dataclass
class Timing:
    """Seconds per call: one value per batch (or per process)."""

    samples: List[float]

    @property
    def min(self) -> float:
        return min(self.samples)

    @property
    def median(self) -> float:
        return statistics.median(self.samples)


@dataclass
class Table:
    title: str
    columns: Sequence[str]
    rows: List[Sequence[str]] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)


def array_laplacian(out, inp):
    """The built-in laplacian as NumPy-style array expressions (NumPy or CuPy
    arrays): what stencil code written with array slices does."""
    out[1:-1, 1:-1] = inp[:-2, 1:-1] + inp[2:, 1:-1] + inp[1:-1, :-2] + inp[1:-1, 2:] \
        - 4 * inp[1:-1, 1:-1]


def array_hdiff(xp, out, inp, coeff):
    """GT4Py's hdiff with flux limiter as array expressions of module `xp`
    (numpy or cupy)."""
    lap = 4 * inp[1:-1, 1:-1] - (inp[:-2, 1:-1] + inp[2:, 1:-1] + inp[1:-1, :-2] + inp[1:-1, 2:])
    flx = lap[1:, 1:-1] - lap[:-1, 1:-1]
    flx = xp.where(flx * (inp[2:-1, 2:-2] - inp[1:-2, 2:-2]) > 0, 0, flx)
    fly = lap[1:-1, 1:] - lap[1:-1, :-1]
    fly = xp.where(fly * (inp[2:-2, 2:-1] - inp[2:-2, 1:-2]) > 0, 0, fly)
    out[2:-2, 2:-2] = inp[2:-2, 2:-2] - coeff[2:-2, 2:-2] * (
        flx[1:] - flx[:-1] + fly[:, 1:] - fly[:, :-1])


def gt4py_storage():
    """``gt4py.storage``, or ``None`` when GT4Py cannot be imported."""
    try:
        import gt4py.storage as gs
    except Exception:  # ImportError, or a broken installation
        return None
    return gs


def calls_per_batch(stmt: str, namespace: Dict, batch_seconds: float) -> int:
    """The number of calls of ``stmt`` that take about ``batch_seconds``."""
    timer = timeit.Timer(stmt, globals=namespace)
    number = 1
    while True:
        if timer.timeit(number) >= batch_seconds / 5 or number >= 10**7:
            break
        number *= 10
    per_call = timer.timeit(number) / number
    return max(1, int(batch_seconds / per_call))


def time_interleaved(cases: Dict[str, str], namespace: Dict, repeat: int,
                     batch_seconds: float, setup: Optional[Callable[[], None]] = None
                     ) -> Dict[str, Timing]:
    """Time each statement of ``cases`` (name -> statement) in ``repeat``
    batches, taking the cases in turn so that a disturbance of the machine
    hits all of them alike. Each batch runs the statement ``number`` times
    (timeit, garbage collector off) and gives one per-call sample."""
    timers = {name: timeit.Timer(stmt, globals=namespace) for name, stmt in cases.items()}
    numbers = {name: calls_per_batch(stmt, namespace, batch_seconds)
               for name, stmt in cases.items()}
    samples: Dict[str, List[float]] = {name: [] for name in cases}
    for _ in range(repeat):
        for name, timer in timers.items():
            if setup is not None:
                setup()
            samples[name].append(timer.timeit(numbers[name]) / numbers[name])
    return {name: Timing(values) for name, values in samples.items()}


def _package_path() -> str:
    """The directory that holds the ``gtstore`` package this process imported,
    so that subprocesses import the same build."""
    import gtstore

    return str(Path(gtstore.__file__).resolve().parent.parent)


def in_fresh_process(code: str, env: Optional[Dict[str, str]] = None) -> Dict:
    """Run ``code`` in a new interpreter (same executable, same gtstore) and
    return the JSON object it prints on its last line.

    OpenBLAS gets one thread there: NumPy starts its thread pool at import
    and those threads spin for a while, competing with gtstore's OpenMP
    threads on a small machine; no benchmark uses BLAS."""
    environment = dict(os.environ)
    environment["PYTHONPATH"] = os.pathsep.join(
        [_package_path(), *filter(None, [environment.get("PYTHONPATH")])])
    environment.setdefault("OPENBLAS_NUM_THREADS", "1")
    environment.update(env or {})
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=environment,
                            capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"benchmark subprocess failed:\n{result.stderr}")
    return json.loads(result.stdout.strip().splitlines()[-1])


# Seconds of idle before a "cold" first call. Linux reports free memory to
# the hypervisor in the background (free page reporting through
# virtio-balloon, after about 2 s); touching such memory again costs the
# host's page faults as well. On a machine without it, cold and warm agree.
COLD_WAIT = 3.0


def first_calls(code: str, processes: int, cold: bool) -> List[Dict]:
    """``code`` in ``processes`` fresh interpreters, one after another:
    "cold" waits COLD_WAIT seconds before each, so that the memory freed
    before has gone back to the host; "warm" starts each as soon as the last
    one ended, so that the kernel hands out pages just freed."""
    results = []
    for _ in range(processes):
        if cold:
            time.sleep(COLD_WAIT)
        results.append(in_fresh_process(code))
    return results


def page_reporting() -> str:
    """The kernel's free page reporting setting, as far as it can be read."""
    try:
        cmdline = Path("/proc/cmdline").read_text().split()
    except OSError:
        return "unknown"
    order = [x.split("=", 1)[1] for x in cmdline if x.startswith("page_reporting.")]
    balloon = Path("/sys/bus/virtio/drivers/virtio_balloon").exists()
    found = f"virtio_balloon {'present' if balloon else 'absent'}"
    return f"{found}, page_reporting_order={order[0]}" if order else f"{found}, no option"


def fmt_time(seconds: float, unit: str) -> str:
    scale = {"ns": 1e9, "us": 1e6, "ms": 1e3}[unit]
    value = seconds * scale
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}" if value >= 10 else f"{value:.2f}"


def fmt_ratio(value: float) -> str:
    return f"{value:.2f}" if value < 10 else f"{value:.1f}" if value < 100 else f"{value:.0f}"


def gbps(nbytes: int, seconds: float) -> str:
    return f"{nbytes / seconds / 1e9:.2f}"


def render(table: Table) -> str:
    """A Markdown table with its title and notes."""
    widths = [max(len(str(row[i])) for row in [table.columns, *table.rows])
              for i in range(len(table.columns))]

    def line(cells):
        return "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"

    out = [f"### {table.title}", "", line(table.columns),
           "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out += [line(row) for row in table.rows]
    if table.notes:
        out.append("")
        out += [f"- {note}" for note in table.notes]
    return "\n".join(out)


def verdict(met: bool) -> str:
    return "MET" if met else "NOT MET"


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


class OtherLoad:
    """CPU time that other processes used while a benchmark ran, as a share
    of all the machine's CPU time: the CPUs' busy time (/proc/stat, steal
    included) minus this process's and its children's (os.times)."""

    def __init__(self) -> None:
        self.start = self._sample()

    @staticmethod
    def _sample():
        try:
            fields = [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
        except (OSError, ValueError):
            return None
        busy = sum(fields[:8]) - fields[3] - fields[4]  # all but idle and iowait
        own = os.times()
        return (busy / os.sysconf("SC_CLK_TCK"), own.user + own.system + own.children_user
                + own.children_system, time.perf_counter())

    def fraction(self) -> float:
        """The share so far, 0 when unknown."""
        end = self._sample()
        if self.start is None or end is None:
            return 0.0
        busy, own, wall = (b - a for a, b in zip(self.start, end))
        return max(0.0, busy - own) / (wall * (os.cpu_count() or 1))

    def share(self) -> str:
        if self.start is None:
            return "an unknown share"
        return f"{100 * self.fraction():.0f}%"


def machine() -> List[str]:
    """What the numbers were measured on."""
    import numpy as np

    import gtstore

    def read(path: str) -> str:
        try:
            return Path(path).read_text().strip()
        except OSError:
            return "unknown"

    cpu = "unknown"
    for text_line in read("/proc/cpuinfo").splitlines():
        if text_line.startswith("model name"):
            cpu = text_line.split(":", 1)[1].strip()
            break
    mem_kib = next((int(x.split()[1]) for x in read("/proc/meminfo").splitlines()
                    if x.startswith("MemTotal:")), 0)
    gs = gt4py_storage()
    gt4py_version = "not installed"
    if gs is not None:
        import gt4py

        gt4py_version = getattr(gt4py, "__version__", "installed")
    try:
        root = Path(__file__).resolve().parent.parent
        commit = subprocess.run(["git", "-C", str(root), "describe", "--always", "--dirty"],
                                capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    try:
        compiler = subprocess.run(["cc", "--version"], capture_output=True, text=True,
                                  check=True).stdout.splitlines()[0]
    except (OSError, subprocess.CalledProcessError, IndexError):
        compiler = "unknown"
    return [
        f"cpu: {cpu}, {os.cpu_count()} logical cores; memory {mem_kib / 2**20:.1f} GiB",
        f"kernel: {platform.release()}; THP enabled: "
        f"{read('/sys/kernel/mm/transparent_hugepage/enabled')}; "
        f"THP defrag: {read('/sys/kernel/mm/transparent_hugepage/defrag')}",
        f"python {platform.python_version()}, numpy {np.__version__}, "
        f"gt4py {gt4py_version}, gtstore {gtstore.__version__} from {_package_path()}, "
        f"source tree at {commit}; cc on PATH: {compiler}",
        f"free page reporting to the hypervisor: {page_reporting()}",
        f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}, "
        f"GTSTORE_CACHE_LIMIT={os.environ.get('GTSTORE_CACHE_LIMIT', 'unset')}",
    ]
