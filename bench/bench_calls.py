"""(e) The stencil-call side: binding cost, whole-call overhead, built-in stencils.

(e1) Binding from Python, per field: ``Signature.bind`` of 1 and of 5 fields
(every check done: labels, dtype, device, write access, origins, domain and
bounds), on NumPy arrays and on gtstore Storages; the cost per field is the
slope (t5 - t1) / 4. Target: <= 0.3 us per field.

(e2) The whole call of a 5-field GT4Py stencil (out = a + b + c + d) on
small fields (8 x 8 x 4), where the call's overhead dominates: GT4Py's own
``__call__`` (steady state: its argument cache hit on every call) against
``gtstore.gt4py.stencil`` around the same stencil object, and the generated
``run()`` called directly (GT4Py's floor: no checks at all). Overhead =
call time - run() time. Target: gtstore's overhead >= 3x smaller.

(e3) ``laplacian`` and ``hdiff`` on 256 x 256 x 80 float64: gtstore's C
stencils, the same stencils in GT4Py's ``gt:cpu_ifirst`` backend, and NumPy
slicing expressions, on the same arrays (gt:cpu_ifirst's layout), against
the copy bandwidth of the machine (the faster of gtstore's parallel copy
stencil and np.copyto of one field, bytes read + written) as bound:
laplacian moves 2 fields, hdiff 3.
Target: >= 70% of that bound.

(e4) GT4Py's own ``__call__`` of the same 5-field stencil, for users who keep
its call path: gtstore Storages as arguments against an ndarray subclass
carrying the same ``__gt_dims__`` and ``__gt_origin__`` attributes.
Target: Storages cost <= 1.1x.
"""


import os
from typing import List

import numpy as np

from _common import (Table, array_hdiff, array_laplacian, fmt_ratio, fmt_time, time_interleaved,
                     verdict)

import gtstore as gts
from gtstore import Field, Signature

SMALL = (8, 8, 4)
LARGE = (256, 256, 80)


def _gt4py():
    try:
        from gt4py.cartesian import gtscript
    except Exception:  # ImportError, or a broken installation
        return None
    return gtscript


def binding(quick: bool) -> Table:
    one = Signature(a=Field["f8", "IJK"])
    five = Signature(**{n: Field["f8", "IJK"] for n in "abcde"}, writes=["a"])
    arrays = [np.zeros(SMALL) for _ in range(5)]
    storages = [gts.zeros(SMALL, halo=(1, 1, 0)) for _ in range(5)]
    ns = {"one": one, "five": five, "A": arrays, "S": storages}
    cases = {
        "nd 1": "one.bind(A[0])",
        "nd 5": "five.bind(A[0], A[1], A[2], A[3], A[4])",
        "st 1": "one.bind(S[0])",
        "st 5": "five.bind(S[0], S[1], S[2], S[3], S[4])",
        "st 5 with": "c = five.bind(S[0], S[1], S[2], S[3], S[4])\nwith c: pass",
    }
    t = time_interleaved(cases, ns, repeat=7 if quick else 31,
                         batch_seconds=0.01 if quick else 0.05)
    table = Table("(e1) binding from Python (Signature.bind, every check done; us per call)",
                  ["objects", "1 field us", "5 fields us", "per field us (slope)",
                   "5 fields + acquire/touch/release us"])
    slopes = {}
    for kind, label in (("nd", "NumPy arrays"), ("st", "gtstore Storages (halo)")):
        t1, t5 = t[f"{kind} 1"].median, t[f"{kind} 5"].median
        slopes[kind] = (t5 - t1) / 4
        protocol = fmt_time(t["st 5 with"].median, "us") if kind == "st" else "-"
        table.rows.append([label, fmt_time(t1, "us"), fmt_time(t5, "us"),
                           fmt_time(slopes[kind], "us"), protocol])
    worst = max(slopes.values())
    table.notes.append(f"target <= 0.3 us per field: {verdict(worst <= 0.3e-6)} "
                       f"(worst {worst * 1e6:.3f} us)")
    table.notes.append("medians over batches taken in turn; each batch many calls (timeit)")
    return table


def _five_field_stencil(gtscript, backend):
    from gt4py.cartesian.gtscript import PARALLEL, computation, interval

    F64 = gtscript.Field[np.float64]

    def add4(out: F64, a: F64, b: F64, c: F64, d: F64):  # noqa: ANN202
        with computation(PARALLEL), interval(...):
            out = a + b + c + d  # noqa: F841

    return gtscript.stencil(backend=backend, definition=add4)


def whole_call(quick: bool, gtscript) -> Table:
    table = Table("(e2) whole call of a 5-field stencil, 8 x 8 x 4 float64 (us per call)",
                  ["backend", "run() alone", "GT4Py __call__", "gtstore.gt4py.stencil",
                   "GT4Py overhead", "gtstore overhead", "overhead ratio GT4Py / gtstore"])
    if gtscript is None:
        table.notes.append("GT4Py not installed")
        return table
    import gt4py.storage as gs

    ratios = []
    for backend in ("numpy", "gt:cpu_ifirst"):
        st = _five_field_stencil(gtscript, backend)
        fast = gts.gt4py.stencil(st)
        f = [gs.zeros(SMALL, np.float64, backend=backend) for _ in range(5)]
        origin = {n: (0, 0, 0) for n in ("out", "a", "b", "c", "d")}
        ns = {"st": st, "fast": fast, "f": f, "origin": origin, "domain": SMALL}
        cases = {
            "run": "st.run(_domain_=domain, _origin_=origin, exec_info=None, "
                   "out=f[0], a=f[1], b=f[2], c=f[3], d=f[4])",
            "gt4py": "st(f[0], f[1], f[2], f[3], f[4])",
            "gtstore": "fast(f[0], f[1], f[2], f[3], f[4])",
        }
        t = time_interleaved(cases, ns, repeat=7 if quick else 31,
                             batch_seconds=0.01 if quick else 0.05)
        run, theirs, ours = t["run"].median, t["gt4py"].median, t["gtstore"].median
        ratio = (theirs - run) / max(ours - run, 1e-9)
        ratios.append(ratio)
        table.rows.append([backend, fmt_time(run, "us"), fmt_time(theirs, "us"),
                           fmt_time(ours, "us"), fmt_time(theirs - run, "us"),
                           fmt_time(ours - run, "us"), fmt_ratio(ratio)])
    table.notes.append(f"target gtstore overhead >= 3x smaller: {verdict(min(ratios) >= 3)} "
                       f"(worst {min(ratios):.2f}x)")
    table.notes.append("GT4Py's __call__ in its steady state (domain/origin cache hit: it skips "
                       "validation); gtstore checks everything on every call")
    return table


class _LabelledArray(np.ndarray):
    """An ndarray subclass with GT4Py's dims and origin attributes."""

    __gt_dims__ = ("I", "J", "K")
    __gt_origin__ = (0, 0, 0)


def gt4py_call_with_storages(quick: bool, gtscript) -> Table:
    table = Table("(e4) GT4Py's __call__ of a 5-field stencil, 8 x 8 x 4 float64 (us per call)",
                  ["backend", "ndarray subclass", "gtstore Storage", "Storage / subclass"])
    if gtscript is None:
        table.notes.append("GT4Py not installed")
        return table
    import gt4py.storage as gs

    ratios = []
    for backend in ("numpy", "gt:cpu_ifirst"):
        st = _five_field_stencil(gtscript, backend)
        storages = [gts.zeros(SMALL, "f8", defaults=backend) for _ in range(5)]
        labelled = [gs.zeros(SMALL, np.float64, backend=backend).view(_LabelledArray)
                    for _ in range(5)]
        ns = {"st": st, "s": storages, "l": labelled}
        cases = {"subclass": "st(l[0], l[1], l[2], l[3], l[4])",
                 "storage": "st(s[0], s[1], s[2], s[3], s[4])"}
        t = time_interleaved(cases, ns, repeat=7 if quick else 31,
                             batch_seconds=0.01 if quick else 0.05)
        sub, ours = t["subclass"].median, t["storage"].median
        ratios.append(ours / sub)
        table.rows.append([backend, fmt_time(sub, "us"), fmt_time(ours, "us"),
                           fmt_ratio(ours / sub)])
    table.notes.append(f"target Storage <= 1.1x the subclass: {verdict(max(ratios) <= 1.1)} "
                       f"(worst {max(ratios):.2f}x)")
    return table


def _numpy_hdiff(out, inp, coeff):
    array_hdiff(np, out, inp, coeff)


def _gt4py_large(gtscript):
    from gt4py.cartesian.gtscript import PARALLEL, computation, interval

    F64 = gtscript.Field[np.float64]

    def lap(out: F64, inp: F64):  # noqa: ANN202
        with computation(PARALLEL), interval(...):
            out = inp[-1, 0, 0] + inp[1, 0, 0] + inp[0, -1, 0] + inp[0, 1, 0] - 4.0 * inp[0, 0, 0]  # noqa: F841

    def hdiff(out: F64, inp: F64, coeff: F64):  # noqa: ANN202
        with computation(PARALLEL), interval(...):
            lap = 4.0 * inp[0, 0, 0] - (inp[1, 0, 0] + inp[-1, 0, 0] + inp[0, 1, 0] + inp[0, -1, 0])
            res = lap[1, 0, 0] - lap[0, 0, 0]
            flx = 0 if (res * (inp[1, 0, 0] - inp[0, 0, 0])) > 0 else res
            res = lap[0, 1, 0] - lap[0, 0, 0]
            fly = 0 if (res * (inp[0, 1, 0] - inp[0, 0, 0])) > 0 else res
            out = inp[0, 0, 0] - coeff[0, 0, 0] * (  # noqa: F841
                flx[0, 0, 0] - flx[-1, 0, 0] + fly[0, 0, 0] - fly[0, -1, 0])

    return (gtscript.stencil(backend="gt:cpu_ifirst", definition=lap),
            gtscript.stencil(backend="gt:cpu_ifirst", definition=hdiff))


def builtin(quick: bool, gtscript) -> Table:
    if gtscript is not None:
        import gt4py.storage as gs

        def alloc():
            return gs.zeros(LARGE, np.float64, backend="gt:cpu_ifirst")
    else:
        def alloc():
            return np.zeros(LARGE)
    rng = np.random.default_rng(0)
    out, inp, coeff, dst = alloc(), alloc(), alloc(), alloc()
    inp[...] = rng.random(LARGE)
    coeff[...] = 0.1
    ns = {"gts": gts, "np": np, "out": out, "inp": inp, "coeff": coeff, "dst": dst,
          "nlap": array_laplacian, "nhdiff": _numpy_hdiff}
    d1 = (LARGE[0] - 2, LARGE[1] - 2, LARGE[2])
    d2 = (LARGE[0] - 4, LARGE[1] - 4, LARGE[2])
    cases = {
        "copy": "gts.stencils.copy(dst, inp)",
        "np copy": "np.copyto(dst, inp)",
        "gts lap": "gts.stencils.laplacian(out, inp, origin=(1, 1, 0))",
        "gts hdiff": "gts.stencils.hdiff(out, inp, coeff, origin=(2, 2, 0))",
        "np lap": "nlap(out, inp)",
        "np hdiff": "nhdiff(out, inp, coeff)",
    }
    if gtscript is not None:
        ns["glap"], ns["ghdiff"] = _gt4py_large(gtscript)
        ns["d1"], ns["d2"] = d1, d2
        cases["gt lap"] = "glap(out, inp, origin=(1, 1, 0), domain=d1)"
        cases["gt hdiff"] = "ghdiff(out, inp, coeff, origin=(2, 2, 0), domain=d2)"
    t = time_interleaved(cases, ns, repeat=5 if quick else 15,
                         batch_seconds=0.05 if quick else 0.3)
    field_bytes = 8 * np.prod(LARGE)
    # bytes read + written per second: the faster of gtstore's parallel
    # stencil copy and NumPy's copy of the whole block (which memcpy can do
    # with non-temporal stores, saving the write-allocate reads)
    copy_bw = 2 * field_bytes / min(t["copy"].median, t["np copy"].median)
    table = Table(f"(e3) built-in stencils, {LARGE} float64, gt:cpu_ifirst layout (ms per call)",
                  ["stencil", "gtstore C", "GT4Py gt:cpu_ifirst", "NumPy",
                   "GT4Py / gtstore", "NumPy / gtstore", "bandwidth bound", "gtstore % of bound"])
    shares = []
    for name, nfields, domain in (("lap", 2, d1), ("hdiff", 3, d2)):
        ours = t[f"gts {name}"].median
        theirs = t[f"gt {name}"].median if f"gt {name}" in t else None
        numpy = t[f"np {name}"].median
        bound = nfields * 8 * np.prod(domain) / copy_bw
        shares.append(bound / ours)
        table.rows.append([
            "laplacian" if name == "lap" else "hdiff", fmt_time(ours, "ms"),
            fmt_time(theirs, "ms") if theirs else "not installed", fmt_time(numpy, "ms"),
            fmt_ratio(theirs / ours) if theirs else "-", fmt_ratio(numpy / ours),
            fmt_time(bound, "ms"), f"{100 * bound / ours:.0f}%"])
    table.notes.append(
        f"copy bandwidth, bytes read + written: gtstore.stencils.copy "
        f"{2 * field_bytes / t['copy'].median / 1e9:.2f} GB/s, np.copyto "
        f"{2 * field_bytes / t['np copy'].median / 1e9:.2f} GB/s; the bound uses the faster; "
        f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}, {os.cpu_count()} CPUs")
    table.notes.append(f"target >= 70% of the bandwidth bound: {verdict(min(shares) >= 0.7)} "
                       f"(worst {100 * min(shares):.0f}%)")
    return table


def run(quick: bool) -> List[Table]:
    gtscript = _gt4py()
    return [binding(quick), whole_call(quick, gtscript), builtin(quick, gtscript),
            gt4py_call_with_storages(quick, gtscript)]
