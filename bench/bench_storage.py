"""(d) Storages: small creation, basic slicing and views as NumPy arrays.

Creation of a 16^3 float64 storage with a halo of 3 in I and J (aligned
index = lower halo = (3, 3, 0)) against np.empty of the same shape and
against GT4Py's allocation with the same parameters (gt4py.storage.empty,
the arrays API GT4Py adopted in place of GDP-3's storages; it returns a
NumPy array and knows no halo). The padded case uses the preset of (a),
gt:gpu's parameters on the CPU, which pads I from 16 to 32.

Slicing a 70 x 70 x 80 storage (halo 3 in I and J) against the same key on
a NumPy array: the interior, a column, a strided slice and the domain view.
Targets: creation <= 3x np.empty, slicing <= 3x NumPy's slicing.

Wrapping a NumPy array without a copy (as_storage, with and without dims
and a halo) against NumPy's own view of it and xarray's DataArray over
it (no target: how much a labelled view of existing memory costs).
"""

from __future__ import annotations

from typing import List

import numpy as np

from _common import Table, fmt_ratio, fmt_time, gt4py_storage, time_interleaved, verdict
from bench_alloc import PADDED, register_presets

import gtstore as gts

SHAPE = (16, 16, 16)
HALO = ((3, 3), (3, 3), (0, 0))
ALIGNED_INDEX = (3, 3, 0)
FIELD = (70, 70, 80)

SLICES = {
    "interior [3:-3, 3:-3, :]": "[3:-3, 3:-3, :]",
    "column [10, 10, :]": "[10, 10, :]",
    "strided [::2, 1:-1, ::-1]": "[::2, 1:-1, ::-1]",
}


def check_creation(gs) -> str:
    """gtstore's storage and GT4Py's array have the same strides and aligned point."""
    s = gts.empty(SHAPE, np.float64, defaults=PADDED, halo=HALO)
    assert s.aligned_index == ALIGNED_INDEX and s.alignment_size == 256
    address = s.__array_interface__["data"][0]
    assert (address + sum(i * st for i, st in zip(ALIGNED_INDEX, s.strides))) % 256 == 0
    if gs is None:
        return f"{PADDED}: gtstore strides {s.strides}"
    b = gs.empty(SHAPE, np.float64, backend=PADDED, aligned_index=ALIGNED_INDEX)
    if b.strides != s.strides:
        raise AssertionError(f"gtstore {s.strides}, GT4Py {b.strides}")
    return f"{PADDED}: identical strides {s.strides} in both libraries, aligned point on 256 bytes"


def creation(quick: bool, gs) -> Table:
    ns = {"np": np, "gts": gts, "gs": gs, "shape": SHAPE, "halo": HALO,
          "ai": ALIGNED_INDEX, "f8": np.float64}
    cases = {
        "np.empty": "np.empty(shape, f8)",
        "gts padded": f"gts.empty(shape, f8, defaults='{PADDED}', halo=halo)",
        "gts ifirst": "gts.empty(shape, f8, defaults='gt:cpu_ifirst', halo=halo)",
        "gts plain": "gts.empty(shape, f8)",
    }
    if gs is not None:
        cases["gs padded"] = f"gs.empty(shape, f8, backend='{PADDED}', aligned_index=ai)"
        cases["gs ifirst"] = "gs.empty(shape, f8, backend='gt:cpu_ifirst', aligned_index=ai)"
    t = time_interleaved(cases, ns, repeat=7 if quick else 41,
                         batch_seconds=0.01 if quick else 0.05)
    base = t["np.empty"]
    table = Table(
        f"(d1) storage creation: shape {SHAPE} float64, halo {HALO} (ns per call)",
        ["call", "min ns", "median ns", "ratio to np.empty (median)", "GT4Py / gtstore (median)"])

    def row(name, label, gt4py_name=None):
        timing = t[name]
        speedup = "-" if gt4py_name is None else (
            "not installed" if gs is None else fmt_ratio(t[gt4py_name].median / timing.median))
        table.rows.append([label, fmt_time(timing.min, "ns"), fmt_time(timing.median, "ns"),
                           fmt_ratio(timing.median / base.median), speedup])

    row("np.empty", "np.empty (C order, no padding, no halo)")
    row("gts padded", f"gts.empty, {PADDED} (padded), halo", "gs padded")
    row("gts ifirst", "gts.empty, gt:cpu_ifirst, halo", "gs ifirst")
    row("gts plain", "gts.empty, no preset, no halo")
    for name, label in (("gs padded", f"gt4py.storage.empty, {PADDED}, aligned_index"),
                        ("gs ifirst", "gt4py.storage.empty, gt:cpu_ifirst, aligned_index")):
        if gs is None:
            table.rows.append([label, "not installed", "not installed", "not installed", "-"])
        else:
            row(name, label)
    worst = max(t["gts padded"].median, t["gts ifirst"].median) / base.median
    table.notes.append(check_creation(gs))
    table.notes.append(f"target storage creation <= 3x np.empty: {verdict(worst <= 3)} "
                       f"(worst preset {worst:.2f}x by median)")
    table.notes.append(
        f"{len(base.samples)} batches per call, taken in turn; each batch times many calls "
        "(timeit, gc off); min and median over batches; the storages are freed inside the loop")
    return table


def slicing(quick: bool) -> Table:
    a = np.zeros(FIELD)
    s = gts.zeros(FIELD, defaults="gt:cpu_ifirst", halo=((3, 3), (3, 3), (0, 0)))
    ns = {"a": a, "s": s, "np": np}
    cases = {}
    for label, key in SLICES.items():
        cases[f"np {label}"] = f"a{key}"
        cases[f"gts {label}"] = f"s{key}"
    cases["np view"] = "a.view()"
    cases["gts domain_view"] = "s.domain_view"
    cases["np interior"] = "a[3:-3, 3:-3, :]"
    cases["np.asarray(storage)"] = "np.asarray(s)"
    cases["storage.to_numpy()"] = "s.to_numpy()"
    cases["memoryview(storage)"] = "memoryview(s)"
    t = time_interleaved(cases, ns, repeat=7 if quick else 41,
                         batch_seconds=0.01 if quick else 0.05)
    table = Table(
        f"(d2) views of a {FIELD} float64 storage (halo 3 in I and J) against the same "
        f"on a NumPy array (ns per call)",
        ["call", "gtstore min ns", "gtstore median ns", "NumPy median ns",
         "ratio to NumPy (median)"])
    worst = 0.0
    for label in SLICES:
        mine, theirs = t[f"gts {label}"], t[f"np {label}"]
        ratio = mine.median / theirs.median
        worst = max(worst, ratio)
        table.rows.append([label, fmt_time(mine.min, "ns"), fmt_time(mine.median, "ns"),
                           fmt_time(theirs.median, "ns"), fmt_ratio(ratio)])
    mine, theirs = t["gts domain_view"], t["np interior"]
    table.rows.append(["s.domain_view (NumPy: a[3:-3, 3:-3, :])", fmt_time(mine.min, "ns"),
                       fmt_time(mine.median, "ns"), fmt_time(theirs.median, "ns"),
                       fmt_ratio(mine.median / theirs.median)])
    for name in ("np.asarray(storage)", "storage.to_numpy()", "memoryview(storage)"):
        mine, theirs = t[name], t["np view"]
        table.rows.append([f"{name} (NumPy: a.view())", fmt_time(mine.min, "ns"),
                           fmt_time(mine.median, "ns"), fmt_time(theirs.median, "ns"),
                           fmt_ratio(mine.median / theirs.median)])
    table.notes.append(f"target basic slicing <= 3x NumPy's: {verdict(worst <= 3)} "
                       f"(worst key {worst:.2f}x by median)")
    table.notes.append(
        "np.asarray(storage) goes through the buffer protocol (NumPy tries it first: a "
        "memoryview, then PEP 3118 format parsing); to_numpy() makes the ndarray with NumPy's "
        "C API directly")
    table.notes.append(f"{len(t['np view'].samples)} batches per call, taken in turn")
    return table


def wrapping(quick: bool) -> Table:
    try:
        import xarray as xr
    except ImportError:
        xr = None
    a = np.zeros(SHAPE)
    ns = {"a": a, "np": np, "gts": gts, "xr": xr, "halo": HALO}
    cases = {
        "np view": "a.view()",
        "gts": "gts.as_storage(a)",
        "gts dims halo": "gts.as_storage(a, dims='IJK', halo=halo)",
    }
    if xr is not None:
        cases["xr"] = "xr.DataArray(a, dims=('I', 'J', 'K'))"
    t = time_interleaved(cases, ns, repeat=7 if quick else 41,
                         batch_seconds=0.01 if quick else 0.05)
    table = Table(f"(d3) wrapping a {SHAPE} float64 NumPy array without a copy (ns per call)",
                  ["call", "min ns", "median ns", "ratio to a.view() (median)",
                   "xarray / gtstore (median)"])
    for name, label in (("np view", "a.view()"), ("gts", "gts.as_storage(a)"),
                        ("gts dims halo", "gts.as_storage(a, dims='IJK', halo=...)")):
        timing = t[name]
        speedup = "-" if name == "np view" else (
            "not installed" if xr is None else fmt_ratio(t["xr"].median / timing.median))
        table.rows.append([label, fmt_time(timing.min, "ns"), fmt_time(timing.median, "ns"),
                           fmt_ratio(timing.median / t["np view"].median), speedup])
    if xr is not None:
        table.rows.append(["xarray.DataArray(a, dims=('I', 'J', 'K'))",
                           fmt_time(t["xr"].min, "ns"), fmt_time(t["xr"].median, "ns"),
                           fmt_ratio(t["xr"].median / t["np view"].median), "-"])
    table.notes.append(f"{len(t['np view'].samples)} batches per call, taken in turn; "
                       "the storages are freed inside the loop")
    return table


def run(quick: bool) -> List[Table]:
    gs = gt4py_storage()
    register_presets(gs)
    return [creation(quick, gs), slicing(quick), wrapping(quick)]
