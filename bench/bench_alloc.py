"""(a) Small allocation: a 16^3 float64 field with padding.

GT4Py's CPU presets have alignment 1, so nothing pads there; the padded case
registers the same preset in both libraries with gt:gpu's parameters
(alignment 32 elements = 256 bytes, I contiguous, device cpu). With shape
(16, 16, 16) and aligned_index (3, 3, 0) the I extent is padded to 32.
Targets: gtstore <= 3x np.empty, and >= 20x faster than gt4py.storage.empty.
"""

from __future__ import annotations

import numpy as np

from _common import Table, fmt_ratio, fmt_time, gt4py_storage, time_interleaved, verdict

import gtstore.arrays as ga

SHAPE = (16, 16, 16)
ALIGNED_INDEX = (3, 3, 0)
PADDED = "bench:cpu_aligned"


def register_presets(gs) -> None:
    """The padded preset in both libraries (gt:gpu's parameters, on the CPU)."""
    if PADDED in ga.presets():
        ga.unregister_preset(PADDED)
    ga.register_preset(PADDED, alignment=32, layout=(2, 1, 0), device="cpu")
    if gs is not None:
        from gt4py.storage.cartesian.layout import (
            LayoutInfo, layout_checker_factory, layout_maker_factory)

        maker = layout_maker_factory((2, 1, 0))
        gs.register(PADDED, LayoutInfo(alignment=32, device="cpu", layout_map=maker,
                                       is_optimal_layout=layout_checker_factory(maker)))


def check_same(gs, backend: str) -> str:
    """Both libraries give the same strides, and both align the aligned point."""
    a = ga.empty(SHAPE, np.float64, backend=backend, aligned_index=ALIGNED_INDEX)
    alignment = ga.plan(SHAPE, np.float64, backend=backend,
                        aligned_index=ALIGNED_INDEX).alignment_size
    offset = sum(i * s for i, s in zip(ALIGNED_INDEX, a.strides))
    assert (a.ctypes.data + offset) % alignment == 0, backend
    if gs is None:
        return f"{backend}: gtstore strides {a.strides}"
    b = gs.empty(SHAPE, np.float64, backend=backend, aligned_index=ALIGNED_INDEX)
    if a.shape != b.shape or a.strides != b.strides:
        raise AssertionError(f"{backend}: gtstore {a.shape} {a.strides}, "
                             f"GT4Py {b.shape} {b.strides}")
    assert (b.ctypes.data + offset) % alignment == 0, backend
    return (f"{backend}: identical strides {a.strides} in both libraries, aligned point "
            f"on {alignment} bytes in both")


def run(quick: bool) -> Table:
    gs = gt4py_storage()
    register_presets(gs)
    checks = [check_same(gs, PADDED), check_same(gs, "gt:cpu_ifirst")]

    ns = {"np": np, "ga": ga, "gs": gs, "shape": SHAPE, "ai": ALIGNED_INDEX, "f8": np.float64}
    cases = {
        "np.empty(shape, f8)": "np.empty(shape, f8)",
        f"ga.empty {PADDED}": f"ga.empty(shape, f8, backend='{PADDED}', aligned_index=ai)",
        "ga.empty gt:cpu_ifirst": "ga.empty(shape, f8, backend='gt:cpu_ifirst', aligned_index=ai)",
        "ga.empty (no preset)": "ga.empty(shape, f8)",
    }
    if gs is not None:
        cases[f"gs.empty {PADDED}"] = (
            f"gs.empty(shape, f8, backend='{PADDED}', aligned_index=ai)")
        cases["gs.empty gt:cpu_ifirst"] = (
            "gs.empty(shape, f8, backend='gt:cpu_ifirst', aligned_index=ai)")
    t = time_interleaved(cases, ns, repeat=7 if quick else 41,
                         batch_seconds=0.01 if quick else 0.05)

    base = t["np.empty(shape, f8)"]
    table = Table(
        f"(a) small allocation: shape {SHAPE} float64, aligned_index {ALIGNED_INDEX} "
        f"(ns per call)",
        ["call", "min ns", "median ns", "ratio to np.empty (median)", "GT4Py / gtstore (median)"])

    def row(name, label, gt4py_name=None):
        timing = t[name]
        if gt4py_name is None:
            speedup = "-"
        elif gs is None:
            speedup = "not installed"
        else:
            speedup = fmt_ratio(t[gt4py_name].median / timing.median)
        table.rows.append([label, fmt_time(timing.min, "ns"), fmt_time(timing.median, "ns"),
                           fmt_ratio(timing.median / base.median), speedup])

    def gt4py_row(name, label):
        if gs is None:
            table.rows.append([label, "not installed", "not installed", "not installed", "-"])
        else:
            row(name, label)

    row("np.empty(shape, f8)", "np.empty (C order, no padding)")
    row(f"ga.empty {PADDED}", f"gtstore empty, {PADDED} (padded)", f"gs.empty {PADDED}")
    gt4py_row(f"gs.empty {PADDED}", f"gt4py.storage.empty, {PADDED} (padded)")
    row("ga.empty gt:cpu_ifirst", "gtstore empty, gt:cpu_ifirst (no padding)",
        "gs.empty gt:cpu_ifirst")
    gt4py_row("gs.empty gt:cpu_ifirst", "gt4py.storage.empty, gt:cpu_ifirst (no padding)")
    row("ga.empty (no preset)", "gtstore empty, no preset (C order)")

    padded = t[f"ga.empty {PADDED}"]
    ratio = padded.median / base.median
    table.notes += checks
    table.notes.append(
        f"target gtstore padded <= 3x np.empty: {verdict(ratio <= 3)} "
        f"({ratio:.2f}x by median, {padded.min / base.min:.2f}x by min)")
    if gs is None:
        table.notes.append("target >= 20x faster than GT4Py: not measured, GT4Py not installed")
    else:
        gt = t[f"gs.empty {PADDED}"]
        speedup = gt.median / padded.median
        table.notes.append(
            f"target gtstore padded >= 20x faster than GT4Py: {verdict(speedup >= 20)} "
            f"({speedup:.1f}x by median, {gt.min / padded.min:.1f}x by min)")
    table.notes.append(
        f"{len(base.samples)} batches per call, taken in turn; each batch times many calls "
        "(timeit, gc off) and gives one per-call value; min and median over batches; "
        "the arrays are freed inside the loop")
    return table
