"""(g) GPU: gtstore's device work against CuPy on the same memory, on a CUDA GPU.

gtstore queues its device work on CuPy's current stream (the legacy
default stream) and returns, as CuPy does, so each statement of either is
followed by a synchronisation of that stream: both sides are timed to
completion. The CuPy arrays are views of
the storages' own memory (``to_cupy()``), so both work on the same bytes.

- (g1) strided work on device memory: ``gt:gpu`` storages of 256 x 256 x 80
  float64 (I contiguous, padded), halo 3 in I and J, device memory only: a
  view assignment, the fill of a view, a copy that changes the layout
  (into a C-layout storage), ``a.copy()``. Target: within 1.2x of CuPy.
- (g2) allocation: ``empty`` on the device, 256 x 256 x 80 and 16^3,
  against ``cupy.empty`` (both freed in the same statement). Target: the
  large one at most 2x CuPy's.
- (g3) whole syncs of a 256 MiB software-managed storage, both ways, against
  CuPy's copy between device memory and pinned host memory, and the no-op
  sync. Target: at least 85% of CuPy's pinned bandwidth.
- (g4) the halo exchange of 3 such fields on 1 rank, periodic (every
  neighbour is the rank itself), of device fields against the same exchange
  of host fields (``gt:cpu_ifirst``) and an NDSL-style CuPy update (per
  neighbour and field a slice copied into a packed buffer and back: 48
  copies per exchange). Target: at most 0.2 ms. Needs mpi4py.
- (g5) the built-in stencils on the GPU (``stencils.laplacian`` and
  ``stencils.hdiff`` with ``device="gpu"``, one kernel each) on ``gt:gpu``
  storages of 256 x 256 x 80 float64, against the same stencils written as
  CuPy array expressions (as NumPy-style stencil code runs on a GPU with
  CuPy: a kernel and a temporary per operation), and the share of the
  bandwidth bound: the bytes the stencil must move (its fields over the
  domain) at the speed of CuPy's copy of a field. Target: faster than the
  CuPy expressions.

Without a CUDA GPU or without CuPy the table says "not run" and why.
"""

from __future__ import annotations

from typing import List

import numpy as np

from _common import (Table, array_hdiff, array_laplacian, fmt_ratio, fmt_time, gbps,
                     time_interleaved, verdict)

import gtstore as gts

SHAPE = (256, 256, 80)
HALO = ((3, 3), (3, 3), (0, 0))
BIG = (256, 256, 512)  # 256 MiB of float64


def why_not() -> str | None:
    info = gts.gpu()
    if info is None or info["dlpack"][0] != 2:
        return f"no CUDA GPU (gtstore.gpu() is {info})"
    try:
        import cupy  # noqa: F401
    except ImportError as error:
        return f"CuPy is not installed ({error})"
    return None


def namespace():
    import cupy
    stream = cupy.cuda.get_current_stream()
    return {"np": np, "gts": gts, "cupy": cupy, "sync": stream.synchronize}


def strided(quick: bool) -> Table:
    ns = namespace()
    make = dict(defaults="gt:gpu", halo=HALO, managed=None)
    a, b = gts.zeros(SHAPE, **make), gts.zeros(SHAPE, **make)
    c = gts.zeros(SHAPE, device="gpu", managed=None)  # C layout: K contiguous
    ns.update(a=a, b=b, c=c, ca=a.to_cupy(), cb=b.to_cupy(), cc=c.to_cupy())
    cases = {
        "gts view": "b[3:-3, 3:-3] = a[3:-3, 3:-3]; sync()",
        "cupy view": "cb[3:-3, 3:-3] = ca[3:-3, 3:-3]; sync()",
        "gts fill": "b[3:-3, 3:-3] = 2.0; sync()",
        "cupy fill": "cb[3:-3, 3:-3] = 2.0; sync()",
        "gts layout": "c[...] = a; sync()",
        "cupy layout": "cc[...] = ca; sync()",
        "gts copy": "a.copy(); sync()",
        "cupy copy": "ca.copy(); sync()",
    }
    t = time_interleaved(cases, ns, repeat=5 if quick else 21,
                         batch_seconds=0.02 if quick else 0.1)
    table = Table(f"(g1) strided work on {gts.gpu()['name']}: {SHAPE} float64, gt:gpu "
                  f"(strides {a.strides}), halo 3, device memory only; the C-layout target has "
                  f"strides {c.strides}",
                  ["operation", "gtstore median us", "CuPy median us", "gtstore / CuPy",
                   "target <= 1.2x"])
    for key, what in [("view", "b[3:-3, 3:-3] = a[3:-3, 3:-3]"),
                      ("fill", "b[3:-3, 3:-3] = 2.0"),
                      ("layout", "c[...] = a (layout change)"), ("copy", "a.copy()")]:
        ours, theirs = t[f"gts {key}"].median, t[f"cupy {key}"].median
        table.rows.append([what, fmt_time(ours, "us"), fmt_time(theirs, "us"),
                           fmt_ratio(ours / theirs),
                           verdict(ours <= 1.2 * theirs) if key != "copy" else "-"])
    return table


def allocation(quick: bool) -> Table:
    ns = namespace()
    ns.update(SHAPE=SHAPE, SMALL=(16, 16, 16))
    cases = {
        "gts large": "gts.empty(SHAPE, defaults='gt:gpu', managed=None)",
        "cupy large": "cupy.empty(SHAPE)",
        "gts small": "gts.empty(SMALL, defaults='gt:gpu', managed=None)",
        "gts small mirrored": "gts.empty(SMALL, defaults='gt:gpu')",
        "cupy small": "cupy.empty(SMALL)",
    }
    t = time_interleaved(cases, ns, repeat=5 if quick else 21,
                         batch_seconds=0.02 if quick else 0.1)
    table = Table("(g2) allocation on the device, freed in the same statement",
                  ["call", "gtstore median us", "cupy.empty median us", "ratio",
                   "target"])
    for key, label, target in [("large", f"empty({SHAPE}) device only", 2.0),
                               ("small", "empty((16, 16, 16)) device only", None),
                               ("small mirrored", "empty((16, 16, 16)) with a host side",
                                None)]:
        ours = t[f"gts {key}"].median
        theirs = t[f"cupy {key.split()[0]}"].median
        table.rows.append([label, fmt_time(ours, "us"), fmt_time(theirs, "us"),
                           fmt_ratio(ours / theirs),
                           f"<= {target}x: {verdict(ours <= target * theirs)}" if target
                           else "-"])
    return table


def syncs(quick: bool) -> Table:
    import cupy
    ns = namespace()
    s = gts.zeros(BIG, defaults="gt:gpu")  # software-managed: a host side
    s.synchronize()
    nbytes = int(np.prod(BIG)) * 8
    pinned = cupy.cuda.alloc_pinned_memory(nbytes)
    host = np.frombuffer(pinned, np.float64, int(np.prod(BIG))).reshape(BIG)
    device = cupy.empty(BIG)
    ns.update(s=s, host=host, device=device)
    cases = {
        "gts to device": "s.set_host_modified(); s.host_to_device(); sync()",
        "gts to host": "s.set_device_modified(); s.device_to_host(); sync()",
        "cupy to device": "device.set(host); sync()",
        "cupy to host": "device.get(out=host); sync()",
        "noop": "s.host_to_device()",
    }
    t = time_interleaved(cases, ns, repeat=3 if quick else 11,
                         batch_seconds=0.1 if quick else 0.5)
    table = Table(f"(g3) whole syncs of {BIG} float64 ({nbytes >> 20} MiB) against CuPy's copy "
                  "from and to pinned memory",
                  ["direction", "gtstore GB/s", "CuPy pinned GB/s", "gtstore / CuPy",
                   "target >= 85%"])
    for key in ("to device", "to host"):
        ours, theirs = t[f"gts {key}"].median, t[f"cupy {key}"].median
        table.rows.append([key, gbps(nbytes, ours), gbps(nbytes, theirs),
                           f"{theirs / ours:.0%}", verdict(theirs / ours >= 0.85)])
    table.notes.append(f"no-op sync (host_to_device of a clean storage): "
                       f"{fmt_time(t['noop'].median, 'us')} us")
    return table


class CupyHaloUpdater:
    """NDSL's GPU halo update on one rank, periodic: per neighbour and field a
    CuPy slice copied into a packed device buffer, then out of it into the
    halo of the opposite side (48 copies per exchange for 3 fields)."""

    def __init__(self, arrays, halo):
        import cupy
        self.arrays, self.moves = arrays, []
        n = (arrays[0].shape[0] - 2 * halo, arrays[0].shape[1] - 2 * halo)
        for oi in (-1, 0, 1):
            for oj in (-1, 0, 1):
                if (oi, oj) == (0, 0):
                    continue
                send, recv = [], []
                for o, m in ((oi, n[0]), (oj, n[1])):
                    send.append({-1: slice(halo, 2 * halo), 0: slice(halo, halo + m),
                                 1: slice(m, m + halo)}[o])
                    recv.append({1: slice(0, halo), 0: slice(halo, halo + m),
                                 -1: slice(m + halo, m + 2 * halo)}[o])
                size = sum(a[tuple(send)].size for a in arrays)
                self.moves.append((tuple(send), tuple(recv), cupy.empty(size)))
        self.sync = cupy.cuda.get_current_stream().synchronize

    def exchange(self):
        for send, recv, buffer in self.moves:
            offset = 0
            for a in self.arrays:
                part = a[send]
                buffer[offset:offset + part.size].reshape(part.shape)[...] = part
                offset += part.size
            offset = 0
            for a in self.arrays:
                target = a[recv]
                target[...] = buffer[offset:offset + target.size].reshape(target.shape)
                offset += target.size
        self.sync()


def exchange(quick: bool) -> Table:
    table = Table(f"(g4) halo exchange of 3 fields of {SHAPE} float64, halo 3, 1 rank periodic",
                  ["method", "median ms", "vs gtstore device fields", "target"])
    try:
        from mpi4py import MPI
    except ImportError as error:
        table.rows.append(["all", f"not run: mpi4py is not installed ({error})", "-", "-"])
        return table
    from gtstore import distributed as gd
    if MPI.COMM_WORLD.size != 1:
        table.rows.append(["all", "not run: needs 1 rank", "-", "-"])
        return table
    part = gd.CartesianPartitioner(MPI.COMM_WORLD, (SHAPE[0] - 6, SHAPE[1] - 6, SHAPE[2]),
                                   halo=3, periodic=(True, True))
    values = np.random.default_rng(0).random(part.global_shape)
    device = [part.full(0.0, "f8", defaults="gt:gpu", managed=None) for _ in range(3)]
    host = [part.full(0.0, "f8", defaults="gt:cpu_ifirst") for _ in range(3)]
    cupy_fields = [part.full(0.0, "f8", defaults="gt:gpu", managed=None) for _ in range(3)]
    for fields in (device, host, cupy_fields):
        for f in fields:
            part.scatter(values, f)
    ex_device, ex_host = part.halo_exchange(device), part.halo_exchange(host)
    ndsl = CupyHaloUpdater([f.to_cupy() for f in cupy_fields], 3)
    ex_device.exchange()
    ndsl.exchange()
    same = all(np.array_equal(a.to_cupy().get(), b.to_cupy().get())
               for a, b in zip(device, cupy_fields))
    ns = {"dev": ex_device.exchange, "host": ex_host.exchange, "ndsl": ndsl.exchange,
          "sync": namespace()["sync"]}
    t = time_interleaved({"dev": "dev(); sync()", "host": "host()", "ndsl": "ndsl()"}, ns,
                         repeat=5 if quick else 21, batch_seconds=0.05 if quick else 0.2)
    base = t["dev"].median
    table.rows.append(["gtstore, device fields (gt:gpu, device memory only)",
                       fmt_time(base, "ms"), "1.00",
                       f"<= 0.2 ms: {verdict(base <= 2e-4)}"])
    table.rows.append(["gtstore, host fields (gt:cpu_ifirst)", fmt_time(t["host"].median, "ms"),
                       fmt_ratio(t["host"].median / base), "-"])
    table.rows.append(["NDSL-style CuPy slices (48 copies)", fmt_time(t["ndsl"].median, "ms"),
                       fmt_ratio(t["ndsl"].median / base), "-"])
    table.notes.append(f"the CuPy update's halos equal gtstore's: {same}; the rank's own "
                       f"neighbours: {len(ex_device.local_neighbors)} of "
                       f"{len(ex_device.neighbors)} (no message travels)")
    part.close()
    return table


def builtin_stencils(quick: bool) -> Table:
    ns = namespace()
    cupy = ns["cupy"]
    make = dict(defaults="gt:gpu", managed=None)
    rng = np.random.default_rng(0)
    inp = gts.storage(rng.random(SHAPE), **make)
    coeff = gts.full(SHAPE, 0.05, **make)
    out, theirs = gts.zeros(SHAPE, **make), gts.zeros(SHAPE, **make)
    ns.update(stencils=gts.stencils, out=out, inp=inp, coeff=coeff, cout=theirs.to_cupy(),
              cinp=inp.to_cupy(), ccoeff=coeff.to_cupy(), lap=array_laplacian, hdiff=array_hdiff)
    cases = {
        "gts lap": "stencils.laplacian(out, inp, origin=(1, 1, 0), device='gpu'); sync()",
        "cupy lap": "lap(cout, cinp); sync()",
        "gts hdiff": "stencils.hdiff(out, inp, coeff, origin=(2, 2, 0), device='gpu'); sync()",
        "cupy hdiff": "hdiff(cupy, cout, cinp, ccoeff); sync()",
        "copy": "cout[...] = cinp; sync()",
    }
    same = {}
    for name, inner in (("lap", 1), ("hdiff", 2)):
        exec(cases[f"gts {name}"], ns)
        exec(cases[f"cupy {name}"], ns)
        cut = (slice(inner, -inner), slice(inner, -inner))
        same[name] = bool(cupy.allclose(out.to_cupy()[cut], ns["cout"][cut], rtol=1e-12))
    t = time_interleaved(cases, ns, repeat=5 if quick else 21,
                         batch_seconds=0.02 if quick else 0.1)
    field_bytes = 8 * np.prod(SHAPE)
    copy_bw = 2 * field_bytes / t["copy"].median
    table = Table(f"(g5) built-in stencils on {gts.gpu()['name']}: {SHAPE} float64, gt:gpu "
                  f"(strides {inp.strides}), device memory only (ms per call)",
                  ["stencil", "gtstore kernel", "CuPy expressions", "CuPy / gtstore",
                   "bandwidth bound", "gtstore % of bound", "target"])
    for name, nfields, inner in (("lap", 2, 1), ("hdiff", 3, 2)):
        ours, cupys = t[f"gts {name}"].median, t[f"cupy {name}"].median
        points = (SHAPE[0] - 2 * inner) * (SHAPE[1] - 2 * inner) * SHAPE[2]
        bound = nfields * 8 * points / copy_bw
        table.rows.append(["laplacian" if name == "lap" else "hdiff", fmt_time(ours, "ms"),
                           fmt_time(cupys, "ms"), fmt_ratio(cupys / ours),
                           fmt_time(bound, "ms"), f"{100 * bound / ours:.0f}%",
                           f"faster than CuPy: {verdict(ours < cupys)}"])
    table.notes.append(f"CuPy's copy of a field: {copy_bw / 1e9:.0f} GB/s (bytes read + written); "
                       f"the results agree with CuPy's (rtol 1e-12): {same}")
    return table


def run(quick: bool) -> List[Table]:
    reason = why_not()
    if reason:
        return [Table("(g) GPU benchmarks", ["benchmark", "result"],
                      [["all", f"not run: {reason}"]])]
    return [strided(quick), allocation(quick), syncs(quick), exchange(quick),
            builtin_stencils(quick)]
