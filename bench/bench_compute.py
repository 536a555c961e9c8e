"""(f) Computing with storages: ufuncs against NumPy and xarray.

(f1) On 256 x 256 x 80 float64 fields, `a + b` (a new result) and
`np.add(a, b, out=c)` on storages against the same on NumPy arrays over the
same memory (np.asarray of the storages), once with C layout and once with
gt:cpu_ifirst (I contiguous; NumPy then works on F-ordered arrays).
Targets: `a + b` within 1.1x of NumPy's, `np.add(..., out=c)` within 1.05x.

(f2) The overhead per call on 8 x 8 x 8 fields: gtstore's time less NumPy's
for the same ufunc call on the same memory. Target: <= 3 us.

(f3) Broadcasting by dims, an IJ field plus a K field into an IJK result,
against xarray's DataArray arithmetic on the same data (DataArrays wrapping
np.asarray of the storages) and against NumPy with the axes inserted by
hand. Target: faster than xarray.
"""

from __future__ import annotations

from typing import List

import numpy as np

from _common import Table, fmt_ratio, fmt_time, time_interleaved, verdict

import gtstore as gts

LARGE = (256, 256, 80)
SMALL = (8, 8, 8)
BROADCAST = [(70, 70, 80), (256, 256, 80)]


def _fields(shape, defaults=None):
    kw = {} if defaults is None else {"defaults": defaults}
    rng = np.random.default_rng(0)
    a = gts.storage(rng.random(shape), dims="IJK", **kw)
    b = gts.storage(rng.random(shape), dims="IJK", **kw)
    c = gts.zeros(shape, dims="IJK", **kw)
    return a, b, c


def _namespace(a, b, c):
    return {"np": np, "a": a, "b": b, "c": c, "na": np.asarray(a), "nb": np.asarray(b),
            "nc": np.asarray(c)}


def large(quick: bool) -> Table:
    table = Table(
        f"(f1) ufuncs on {LARGE} float64 storages against NumPy on the same memory (ms per call)",
        ["call", "layout", "gtstore min ms", "gtstore median ms", "NumPy median ms",
         "ratio to NumPy (median)", "target"])
    worst = {"new": 0.0, "out": 0.0}
    for defaults in (None, "gt:cpu_ifirst"):
        a, b, c = _fields(LARGE, defaults)
        ns = _namespace(a, b, c)
        assert np.array_equal(np.asarray(a + b), ns["na"] + ns["nb"])
        cases = {"gts new": "a + b", "np new": "na + nb",
                 "gts out": "np.add(a, b, out=c)", "np out": "np.add(na, nb, out=nc)"}
        t = time_interleaved(cases, ns, repeat=5 if quick else 21,
                             batch_seconds=0.05 if quick else 0.25)
        for kind, label, target in (("new", "a + b", 1.1), ("out", "np.add(a, b, out=c)", 1.05)):
            mine, theirs = t[f"gts {kind}"], t[f"np {kind}"]
            ratio = mine.median / theirs.median
            worst[kind] = max(worst[kind], ratio)
            table.rows.append([label, defaults or "C (no preset)", fmt_time(mine.min, "ms"),
                               fmt_time(mine.median, "ms"), fmt_time(theirs.median, "ms"),
                               fmt_ratio(ratio), f"<= {target}x"])
        del a, b, c, ns
    table.notes.append(f"target a + b within 1.1x of NumPy: {verdict(worst['new'] <= 1.1)} "
                       f"(worst {worst['new']:.3f}x by median)")
    table.notes.append(f"target np.add(a, b, out=c) within 1.05x: "
                       f"{verdict(worst['out'] <= 1.05)} (worst {worst['out']:.3f}x by median)")
    table.notes.append("a + b allocates its result in both libraries (gtstore from its cache of "
                       "freed large blocks, NumPy from malloc); the NumPy arrays are "
                       "np.asarray of the storages, so both read the same memory")
    return table


SMALL_CALLS = {
    "a + b": ("a + b", "na + nb"),
    "np.add(a, b, out=c)": ("np.add(a, b, out=c)", "np.add(na, nb, out=nc)"),
    "a * 2.0": ("a * 2.0", "na * 2.0"),
    "np.sqrt(a)": ("np.sqrt(a)", "np.sqrt(na)"),
    "a < b": ("a < b", "na < nb"),
    "c += a": ("c.__iadd__(a)", "nc.__iadd__(na)"),
    "a.sum(axis=2)": ("a.sum(axis=2)", "na.sum(axis=2)"),
}


def small(quick: bool) -> Table:
    a, b, c = _fields(SMALL)
    ns = _namespace(a, b, c)
    cases = {}
    for label, (mine, theirs) in SMALL_CALLS.items():
        cases[f"gts {label}"] = mine
        cases[f"np {label}"] = theirs
    t = time_interleaved(cases, ns, repeat=7 if quick else 41,
                         batch_seconds=0.01 if quick else 0.05)
    table = Table(
        f"(f2) per-call overhead of ufuncs on {SMALL} float64 storages over NumPy's on the "
        f"same memory (us per call)",
        ["call", "gtstore min us", "gtstore median us", "NumPy median us",
         "overhead us (median)", "ratio (median)"])
    worst = 0.0
    for label in SMALL_CALLS:
        mine, theirs = t[f"gts {label}"], t[f"np {label}"]
        overhead = mine.median - theirs.median
        if label != "a.sum(axis=2)":  # a reduction, not a ufunc call: shown, not judged
            worst = max(worst, overhead)
        table.rows.append([label, fmt_time(mine.min, "us"), fmt_time(mine.median, "us"),
                           fmt_time(theirs.median, "us"), f"{overhead * 1e6:.2f}",
                           fmt_ratio(mine.median / theirs.median)])
    table.notes.append(f"target overhead per ufunc call <= 3 us: {verdict(worst <= 3e-6)} "
                       f"(worst {worst * 1e6:.2f} us by median, a.sum excluded)")
    table.notes.append(f"{len(t['np a + b'].samples)} batches per call, taken in turn")
    return table


def broadcast(quick: bool) -> Table:
    try:
        import xarray as xr
    except ImportError:
        xr = None
    table = Table(
        "(f3) broadcasting by dims: IJ field + K field -> IJK result, float64, against "
        "xarray.DataArray and NumPy on the same data (ms per call)",
        ["result shape", "gtstore median ms", "xarray median ms", "NumPy median ms",
         "xarray / gtstore (median)", "gtstore / NumPy (median)"])
    worst = float("inf")
    for shape in BROADCAST:
        rng = np.random.default_rng(1)
        a = gts.storage(rng.random(shape[:2]), dims="IJ")
        b = gts.storage(rng.random(shape[2:]), dims="K")
        ns = {"a": a, "b": b, "na": np.asarray(a), "nb": np.asarray(b)}
        cases = {"gts": "a + b", "np": "na[:, :, None] + nb[None, None, :]"}
        if xr is not None:
            ns["xa"] = xr.DataArray(np.asarray(a), dims=("I", "J"))
            ns["xb"] = xr.DataArray(np.asarray(b), dims=("K",))
            expected = (ns["xa"] + ns["xb"]).transpose("I", "J", "K").values
            assert np.array_equal(np.asarray(a + b), expected)
            cases["xr"] = "xa + xb"
        t = time_interleaved(cases, ns, repeat=5 if quick else 21,
                             batch_seconds=0.05 if quick else 0.2)
        speedup = t["xr"].median / t["gts"].median if xr is not None else float("nan")
        worst = min(worst, speedup)
        table.rows.append([str(shape), fmt_time(t["gts"].median, "ms"),
                           fmt_time(t["xr"].median, "ms") if xr is not None else "not installed",
                           fmt_time(t["np"].median, "ms"),
                           fmt_ratio(speedup) if xr is not None else "-",
                           fmt_ratio(t["gts"].median / t["np"].median)])
    if xr is None:
        table.notes.append("xarray is not installed: no comparison")
    else:
        table.notes.append(f"target faster than xarray: {verdict(worst > 1)} "
                           f"(xarray / gtstore {worst:.2f}x at worst, by median); "
                           f"xarray {xr.__version__}")
    table.notes.append("gtstore's result is a storage with dims I, J, K; xarray's a DataArray "
                       "with dims I, J, K; NumPy's the broadcast of a[:, :, None] + b")
    return table


def run(quick: bool) -> List[Table]:
    return [large(quick), small(quick), broadcast(quick)]
