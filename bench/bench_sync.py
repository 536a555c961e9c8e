"""(e) Sync: the bookkeeping of host/device storages, on the device that plays the GPU.

Where no GPU is lent this is the emulated device (gtstore.use_gpu("emulated")):
its "device" memory is host memory behind device addresses, so a sync is a
memcpy and these numbers measure gtstore's bookkeeping, not a bus.

- A no-op sync (host_to_device on a clean storage): target <= 0.2 us.
- Host access to a SoftwareManagedGPUStorage whose host side is current
  (a scalar read s[i, j, k], a basic slice, np.asarray) against the same on
  a CPUStorage and on a NumPy array: what the sync rule costs per access.
- A whole sync of a 64 MiB field (host_to_device after a host write) against
  a plain copy of the same bytes (numpy.copyto), as bandwidth.
"""

from __future__ import annotations

from typing import List

import numpy as np

from _common import Table, fmt_ratio, fmt_time, gbps, time_interleaved, verdict

import gtstore as gts

SHAPE = (70, 70, 80)
BIG = (256, 256, 128)  # 64 MiB of float64


def host_access(quick: bool) -> Table:
    gpu = gts.zeros(SHAPE, device="gpu")
    cpu = gts.zeros(SHAPE)
    array = np.zeros(SHAPE)
    gpu.synchronize()
    ns = {"np": np, "gpu": gpu, "cpu": cpu, "a": array}
    cases = {
        "noop": "gpu.host_to_device()",
        "gpu scalar": "gpu[10, 10, 10]",
        "cpu scalar": "cpu[10, 10, 10]",
        "np scalar": "a[10, 10, 10]",
        "gpu slice": "gpu[3:-3, 3:-3, :]",
        "cpu slice": "cpu[3:-3, 3:-3, :]",
        "np slice": "a[3:-3, 3:-3, :]",
        "gpu asarray": "np.asarray(gpu); gpu.set_synchronized()",
        "cpu asarray": "np.asarray(cpu); cpu.set_synchronized()",
    }
    t = time_interleaved(cases, ns, repeat=7 if quick else 41,
                         batch_seconds=0.01 if quick else 0.05)
    table = Table(f"(e1) sync bookkeeping on the {gts.gpu()['name']} device: "
                  f"a {SHAPE} float64 field, host side current (ns per call)",
                  ["call", "min ns", "median ns", "ratio to the CPUStorage (median)",
                   "ratio to NumPy (median)"])
    for what, np_name in [("scalar", "np scalar"), ("slice", "np slice"),
                          ("asarray", None)]:
        for kind in ("gpu", "cpu"):
            timing = t[f"{kind} {what}"]
            label = f"{'SoftwareManagedGPUStorage' if kind == 'gpu' else 'CPUStorage'} {what}"
            table.rows.append([label, fmt_time(timing.min, "ns"), fmt_time(timing.median, "ns"),
                               fmt_ratio(timing.median / t[f"cpu {what}"].median),
                               "-" if np_name is None else
                               fmt_ratio(timing.median / t[np_name].median)])
    noop = t["noop"]
    table.rows.append(["host_to_device() on a clean storage (no-op)", fmt_time(noop.min, "ns"),
                       fmt_time(noop.median, "ns"), "-", "-"])
    table.notes.append(f"target no-op sync <= 0.2 us: {verdict(noop.median <= 0.2e-6)} "
                       f"({fmt_time(noop.median, 'ns')} ns by median, including the Python call)")
    table.notes.append("asarray rows include set_synchronized(): np.asarray is a writable "
                       "export and marks the host side, which would make the next one copy")
    return table


def whole_sync(quick: bool) -> Table:
    s = gts.zeros(BIG, device="gpu")
    s.synchronize()
    host = s.to_numpy()  # marks the host side; every host_to_device below copies
    src, dst = np.ones(BIG), np.empty(BIG)
    ns = {"s": s, "np": np, "src": src, "dst": dst}
    cases = {
        "sync": "s.set_host_modified(); s.host_to_device()",
        "copyto": "np.copyto(dst, src)",
    }
    t = time_interleaved(cases, ns, repeat=5 if quick else 21,
                         batch_seconds=0.01 if quick else 0.2)
    nbytes = host.nbytes
    table = Table(f"(e2) a whole sync of {nbytes >> 20} MiB on the {gts.gpu()['name']} device "
                  "against a plain copy of the same bytes",
                  ["call", "min ms", "median ms", "GB/s (median)", "ratio to the copy (bandwidth)"])
    for name, label in [("copyto", "numpy.copyto of the same bytes"),
                        ("sync", "set_host_modified(); host_to_device()")]:
        timing = t[name]
        table.rows.append([label, fmt_time(timing.min, "ms"), fmt_time(timing.median, "ms"),
                           gbps(nbytes, timing.median),
                           fmt_ratio(t["copyto"].median / timing.median)])
    table.notes.append("the sync moves the whole allocation (padding included), never one "
                       "view's extent")
    return table


def run(quick: bool) -> List[Table]:
    if gts.gpu() is None:
        gts.use_gpu("emulated")
    return [host_access(quick), whole_sync(quick)]
