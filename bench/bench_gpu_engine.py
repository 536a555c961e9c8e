"""(h) The GPU engine's per-call overhead: ufuncs on device storages against
the engine library's own call on the same memory.

On a CUDA GPU the engine is CuPy: ``a + b`` and ``np.add(a, b, out=c)`` on
device-only storages (``device="gpu", managed=None``) against the same CuPy
call on ``to_cupy()`` views of the same memory, each followed by a
synchronisation of CuPy's current stream (gtstore queues its work there
and returns without synchronising, as CuPy does). Without a CUDA GPU
with CuPy, the same runs on the emulated device (``gtstore.use_gpu("emulated")``),
whose engine is NumPy over the device memory's host alias, against NumPy on
``to_ndarray()`` views: that measures the Python-side cost of building the
engine's views, which is the same code on both.

Shapes: 8^3 (the call's fixed cost) and 256 x 256 x 80 float64. Target on a
CUDA GPU: at most 3 us per call over CuPy's. On the emulated device the
numbers are shown, not judged. A note says how many of 100 new results
took a spare block (engine_spares.c): each should, and where one does not,
a new result pays an allocation and new engine arrays.
"""

from __future__ import annotations

from typing import List

import numpy as np

from _common import Table, fmt_ratio, fmt_time, time_interleaved, verdict

import gtstore as gts

SHAPES = [(8, 8, 8), (256, 256, 80)]


def engine() -> tuple:
    """(name, whether on CUDA, why CUDA was not used or None)."""
    info = gts.gpu()
    if info is None or info["dlpack"][0] != 2:
        return "NumPy (emulated device)", False, f"no CUDA GPU (gtstore.gpu() is {info})"
    try:
        import cupy  # noqa: F401
    except ImportError as error:
        return "NumPy (emulated device)", False, f"CuPy is not installed ({error})"
    return "CuPy", True, None


def _namespace(shape, cuda: bool) -> dict:
    rng = np.random.default_rng(0)
    make = dict(device="gpu", managed=None)
    a, b, c = (gts.storage(rng.random(shape), **make) for _ in range(3))
    ns = {"np": np, "a": a, "b": b, "c": c}
    if cuda:
        import cupy
        ns.update(ea=a.to_cupy(), eb=b.to_cupy(), ec=c.to_cupy(),
                  sync=cupy.cuda.get_current_stream().synchronize)
    else:
        ns.update(ea=a.to_ndarray(), eb=b.to_ndarray(), ec=c.to_ndarray(), sync=lambda: None)
    return ns


def spare_hits(ns: dict, calls: int = 100) -> int:
    """How many of `calls` new results of ``a + b`` took a spare block (the
    block and the engine's arrays of the result before it): all of them
    unless something outside the engine keeps a reference to those."""
    ns["a"] + ns["b"]  # the first leaves a spare
    before = gts.memory_stats()["spare_hits"]
    for _ in range(calls):
        ns["a"] + ns["b"]
    return gts.memory_stats()["spare_hits"] - before


def overhead(quick: bool) -> Table:
    name, cuda, why = engine()
    if not cuda:
        gts.use_gpu("emulated")
    try:
        rows, worst, reused = [], 0.0, []
        for shape in SHAPES:
            ns = _namespace(shape, cuda)
            reused.append(f"{spare_hits(ns)} of 100 for {shape}")
            xp = __import__("cupy") if cuda else np
            assert bool(xp.array_equal((ns["a"] + ns["b"]).to_ndarray(), ns["ea"] + ns["eb"]))
            cases = {"gts new": "a + b; sync()", "engine new": "ea + eb; sync()",
                     "gts out": "np.add(a, b, out=c); sync()",
                     "engine out": "np.add(ea, eb, out=ec); sync()"}
            small = shape == SHAPES[0]
            t = time_interleaved(cases, ns, repeat=7 if quick else 31,
                                 batch_seconds=(0.01 if quick else 0.05) * (1 if small else 4))
            for kind, label in (("new", "a + b"), ("out", "np.add(a, b, out=c)")):
                mine, theirs = t[f"gts {kind}"].median, t[f"engine {kind}"].median
                worst = max(worst, mine - theirs)
                rows.append([f"{label}, {shape}", fmt_time(mine, "us"), fmt_time(theirs, "us"),
                             f"{(mine - theirs) * 1e6:.2f}", fmt_ratio(mine / theirs)])
    finally:
        if not cuda:
            gts.use_gpu(None)  # back to GTSTORE_GPU, else CUDA device 0
    table = Table(f"(h) per-call overhead of ufuncs on device storages over {name}'s own call "
                  "on the same memory (us per call, medians)",
                  ["call", "gtstore us", f"{name} us", "overhead us", "ratio"], rows)
    table.notes.append("new results that took a spare block: " + ", ".join(reused))
    if cuda:
        table.notes.append(f"target overhead <= 3 us per call: {verdict(worst <= 3e-6)} "
                           f"(worst {worst * 1e6:.2f} us)")
    else:
        table.notes.append(f"not judged: {why}; the emulated device's engine is NumPy, so this "
                           "is the cost of building the engine's views and the sync bookkeeping")
    return table


LOOP_SHAPE = (256, 256, 80)


def loops(quick: bool) -> Table:
    """N calls in a loop with one synchronisation at the end, on CuPy's
    current stream as it is (the legacy default stream) and inside
    ``with cupy.cuda.Stream():``: the stream order's targets (``a + b``
    within 1.1x of CuPy's loop, ``out=`` within 1.05x)."""
    name, cuda, why = engine()
    if not cuda:
        return Table("(h) loops of ufuncs on device storages, one synchronisation at the end",
                     ["loop"], [], notes=[f"not run: {why}"])
    import cupy

    n = 20 if quick else 100
    rows, met = [], True
    for where in ("legacy default stream", "a cupy.cuda.Stream()"):
        stream = cupy.cuda.Stream(non_blocking=True) if where != "legacy default stream" else None
        with (stream if stream is not None else cupy.cuda.Stream.null):
            ns = _namespace(LOOP_SHAPE, True)
            ns["n"] = n
            cases = {"gts new": "for _ in range(n): a + b\nsync()",
                     "engine new": "for _ in range(n): ea + eb\nsync()",
                     "gts out": "for _ in range(n): np.add(a, b, out=c)\nsync()",
                     "engine out": "for _ in range(n): np.add(ea, eb, out=ec)\nsync()"}
            t = time_interleaved(cases, ns, repeat=5 if quick else 15,
                                 batch_seconds=0.05 if quick else 0.2)
        for kind, label, target in (("new", "a + b", 1.1), ("out", "np.add(a, b, out=c)", 1.05)):
            mine, theirs = t[f"gts {kind}"].median / n, t[f"engine {kind}"].median / n
            ratio = mine / theirs
            met = met and ratio <= target
            rows.append([f"{label}, {where}", fmt_time(mine, "us"), fmt_time(theirs, "us"),
                         fmt_ratio(ratio), f"<= {target}"])
    table = Table(f"(h) loops of {n} ufunc calls on {LOOP_SHAPE} float64 device storages, one "
                  "synchronisation at the end (us per call, medians)",
                  ["loop", "gtstore us", "CuPy us", "ratio", "target"], rows)
    table.notes.append(f"targets: {verdict(met)}")
    return table


def run(quick: bool) -> List[Table]:
    return [overhead(quick), loops(quick)]
