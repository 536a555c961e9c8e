"""Thread stress (issue 8): creation, views, exports, DLPack and the preset
registry used from several threads at once, for a bounded time.

The stress runs in a child interpreter (``subprocess.run`` with a timeout),
so that a crash or a deadlock fails the test instead of killing or blocking
the test run; the child prints one line per thread and a final ``OK`` line,
and the test checks its exit status and that output. Every worker checks
its own results as it goes: values it wrote into its own storages read back
right through every view and export, and shapes, strides and alignment are
what they were asked for.

Free-threaded CPython (3.13t) cannot be installed here, so this runs on the
normal interpreter: the GIL serializes bytecode, but the extension releases
and reacquires it (allocation, fills, copies, capsule deleters) and user
callbacks (function presets, ``__index__``) run in the middle of C calls, so
a short switch interval (``sys.setswitchinterval``) still interleaves the
threads inside the C code. On a free-threaded build the same script runs
without the GIL.
"""

from __future__ import annotations

import signal
import sys

import pytest

from conftest import run_python

#: Seconds each stress run lasts (all its threads together); the child is
#: killed after TIMEOUT seconds (the ASan build is about 3x slower, and a
#: hang must fail the test rather than block the run).
DURATION = 1.2
TIMEOUT = 120
#: The device writers' stress runs longer: a lost write needs a sync to
#: land in the middle of a write (issue 19 saw it in 5 of 9 runs of a few
#: seconds).
DEVICE_DURATION = 4.0

COMMON = r"""
import gc, os, sys, threading, time, traceback, zlib
import numpy as np
import gtstore as gts
import gtstore.arrays as ga

sys.setswitchinterval(1e-5)
deadline = time.monotonic() + DURATION
errors = []
counts = {}
lock = threading.Lock()
start = threading.Barrier(NTHREADS)
at_end = []  # callables run once the threads are done


def worker(name, body):
    def run():
        n = 0
        try:
            start.wait()
            rng = np.random.default_rng(zlib.crc32(name.encode()))
            while time.monotonic() < deadline:
                body(rng, n)
                n += 1
        except BaseException:
            with lock:
                errors.append(f"{name}: {traceback.format_exc()}")
        with lock:
            counts[name] = n
    return threading.Thread(target=run, name=name)


def finish(threads):
    for t in threads:
        t.start()
    for t in threads:
        t.join(DURATION + 60)
    alive = [t.name for t in threads if t.is_alive()]
    for name in sorted(counts):
        print(f"{name}: {counts[name]} iterations")
    if alive:
        print("HUNG:", alive)
    for e in errors:
        print("ERROR", e)
    for f in at_end:
        f()
    gc.collect()
    gts.clear_cache()  # the spare GPU blocks are a cache (live until cleared)
    if not errors and not alive:
        print("OK", gts.memory_stats()["live_buffers"])
    sys.stdout.flush()
    # (os._exit: a hung thread must not keep the interpreter alive)
    os._exit(0 if not errors and not alive else 1)
"""

#: Creation, views, buffer and array-interface exports, DLPack round trips
#: and the cache, each thread in its own storages with its own values.
DATA_PATH = r"""
PRESETS = [None, "gt:cpu_ifirst", "gtmc", "dace:cpu", "F"]


def creation_and_views(rng, n):
    shape = tuple(int(x) for x in rng.integers(1, 9, size=int(rng.integers(1, 4))))
    preset = PRESETS[n % len(PRESETS)]
    halo = tuple((int(k) // 3, int(k) // 4) for k in shape)
    value = float(rng.integers(1, 1000))
    s = gts.full(shape, value, "f8", defaults=preset, halo=halo)
    a = np.asarray(s)
    assert a.shape == shape and (a == value).all(), "full"
    expected = rng.random(shape)
    s[...] = expected
    # views in several spellings read back the thread's own values
    np.testing.assert_array_equal(np.asarray(s), expected)
    np.testing.assert_array_equal(np.asarray(s[::-1]), expected[::-1])
    np.testing.assert_array_equal(np.asarray(s.transpose()), expected.transpose())
    np.testing.assert_array_equal(np.asarray(s[None, ..., ::2]), expected[None, ..., ::2])
    lo = tuple(h[0] for h in halo)
    d = s.domain_view
    inner = expected[tuple(slice(l, k - h[1]) for l, k, h in zip(lo, shape, halo))]
    np.testing.assert_array_equal(np.asarray(d), inner)
    if s.size:
        addr = np.asarray(s).__array_interface__["data"][0]
        point = addr + sum(i * st for i, st in zip(s.aligned_index, s.strides))
        assert point % s.alignment_size == 0, "aligned point"
    c = s.copy()
    c[...] = -1.0
    np.testing.assert_array_equal(np.asarray(s), expected)  # the copy is other memory


def exports(rng, n):
    shape = (int(rng.integers(1, 6)), int(rng.integers(1, 6)))
    dtype = ["f4", "i8", "u1", "c16", "?"][n % 5]
    s = gts.zeros(shape, dtype, dims="JK", defaults="gt:cpu_ifirst")
    values = (rng.integers(0, 100, size=shape)).astype(dtype)
    np.asarray(s)[...] = values
    m = memoryview(s)
    assert m.shape == shape and m.strides == s.strides
    iface = s.__array_interface__
    assert iface["shape"] == shape
    np.testing.assert_array_equal(np.array(m), values)
    np.testing.assert_array_equal(s.to_numpy(), values)
    np.testing.assert_array_equal(np.asarray(s.__array__()), values)
    m.release()
    view = s[1:, ::-1]
    np.testing.assert_array_equal(np.asarray(view), values[1:, ::-1])


def dlpack(rng, n):
    shape = (int(rng.integers(1, 7)), int(rng.integers(1, 7)), 3)
    values = rng.random(shape)
    s = gts.storage(values, defaults="gtmc" if n % 2 else None)
    t = np.from_dlpack(s)                       # export to NumPy
    np.testing.assert_array_equal(t, values)
    u = gts.from_dlpack(t, dims="IJK")          # and back: zero copy
    assert np.shares_memory(np.asarray(u), np.asarray(s))
    v = gts.from_dlpack(s[::-1, 1:], copy=True)  # a copy of a view
    np.testing.assert_array_equal(np.asarray(v), values[::-1, 1:])
    capsule = s.__dlpack__(max_version=(1, 0))
    del capsule                                  # an unconsumed capsule is freed
    a = ga.from_array(u, backend="gt:cpu_ifirst")
    np.testing.assert_array_equal(a, values)
    w = gts.from_dlpack(values)                 # NumPy memory wrapped
    w[0, 0, 0] = -1.0
    assert values[0, 0, 0] == -1.0 and s[0, 0, 0] != -1.0
    del s, t, u, v, w, a


def large(rng, n):
    # blocks of 2 MiB and more go through the huge-page cache
    k = int(rng.integers(2, 6))
    s = gts.full((k << 17,), float(n), "f8")
    assert s[-1] == float(n) and s[0] == float(n)
    s[::4096] = -1.0
    assert (np.asarray(s)[::4096] == -1.0).all()
    assert (np.asarray(s)[1::4096] == float(n)).all()
    if n % 16 == 0:
        gts.clear_cache()
    if n % 7 == 0:
        gts.memory_stats()


def arrays_api(rng, n):
    shape = (int(rng.integers(1, 8)), int(rng.integers(1, 8)), int(rng.integers(1, 8)))
    backend = ["gt:cpu_kfirst", "gt:cpu_ifirst", "gtmc", "dace:cpu"][n % 4]
    a = ga.ones(shape, "f4", backend=backend, aligned_index=(1 % shape[0], 0, 0))
    assert a.dtype == np.float32 and (a == 1).all()
    b = ga.empty_like(a)
    b[...] = n
    assert (b == n).all() and (a == 1).all()
    plan = ga.plan(shape, "f4", backend=backend)
    assert plan.strides == ga.empty(shape, "f4", backend=backend).strides


import queue

handoff = queue.Queue(maxsize=64)


def drain():
    while not handoff.empty():
        handoff.get()


at_end.append(drain)


def producer(rng, n):
    # storages, views and unconsumed capsules made here die in other threads
    shape = (int(rng.integers(1, 5)), int(rng.integers(1, 5)))
    s = gts.full(shape, float(n), "f8", defaults="gtmc", halo=(1 % shape[0], 0))
    item = [s, s[::-1], s.__dlpack__(max_version=(1, 0)), s.__dlpack__(), float(n)][n % 5]
    try:
        handoff.put((item, float(n)), timeout=0.05)
    except queue.Full:
        pass


def consumer(rng, n):
    try:
        item, value = handoff.get(timeout=0.05)
    except queue.Empty:
        return
    if isinstance(item, gts.Storage):
        assert (np.asarray(item) == value).all()
        t = gts.from_dlpack(item)
        assert (np.asarray(t) == value).all()
    # (a capsule is dropped unconsumed: its deleter runs in this thread)
    del item
"""

DATA_MAIN = r"""
bodies = {
    "create": creation_and_views, "exports": exports, "dlpack": dlpack,
    "large": large, "arrays": arrays_api, "producer": producer, "consumer": consumer,
}
threads = [worker(f"{name}{i}", body) for i in range(2) for name, body in bodies.items()]
finish(threads)
"""

#: The registry: one thread registers and unregisters function presets
#: (and plain ones), others allocate with those names, list and read them.
REGISTRY = r"""
NAMES = [f"stress_{i}" for i in range(4)]


def registrar(rng, n):
    name = NAMES[n % len(NAMES)]
    if n % 3 == 0:
        ga.register_preset(name, layout=lambda dims: tuple(range(len(dims))))
    elif n % 3 == 1:
        ga.register_preset(name, alignment=4, layout=lambda dims: tuple(range(len(dims)))[::-1])
    else:
        ga.register_preset(name, alignment=2, layout=(2, 1, 0), device="cpu")
    if n % 2:
        try:
            ga.unregister_preset(NAMES[(n + 1) % len(NAMES)])
        except ga.UnknownPresetError:
            pass
    time.sleep(0)  # (let the others run: registering is quick)


# A shape item whose __index__ runs Python code in the middle of the
# allocation call, after the preset was looked up: a thread switch there
# lets the registrar replace or drop the preset (and its callable).
class Extent:

    def __init__(self, value):
        self.value = value

    def __index__(self):
        sum(range(20))
        return self.value


def allocator(rng, n):
    name = NAMES[n % len(NAMES)]
    shape = (int(rng.integers(1, 6)), int(rng.integers(1, 6)), int(rng.integers(1, 6)))
    if n % 4 < 2:
        shape_arg = tuple(Extent(k) for k in shape)
    else:
        shape_arg = shape
    try:
        if n % 2:
            s = gts.zeros(shape_arg, "f8", defaults=name, halo=(1 % shape[0], 0, 0))
            a = np.asarray(s)
        else:
            a = ga.zeros(shape_arg, "f8", backend=name)
    except ga.UnknownPresetError:
        return
    assert a.shape == shape and not a.any()
    a[...] = n
    assert (a == n).all()


def reader(rng, n):
    for name in ga.presets():
        try:
            info = ga.get_preset(name)
        except ga.UnknownPresetError:
            continue
        assert isinstance(info, dict)
    try:
        ga.plan((3, 4, 5), backend=NAMES[n % len(NAMES)])
    except ga.UnknownPresetError:
        pass


threads = [worker("registrar", registrar)]
threads += [worker(f"allocator{i}", allocator) for i in range(4)]
threads += [worker(f"reader{i}", reader) for i in range(2)]
finish(threads)
"""


#: Writers on both sides of one SoftwareManagedGPUStorage (emulated
#: device), each in rows of its own: host writers assign (``s[row] = k``,
#: NumPy's copy, which releases the GIL), device writers add in place
#: (``np.add(v, 1, out=v)``, on the device while the host side was not
#: written last) or assign a device storage (libgtstore's copy on the
#: device); readers copy, print and pickle the whole storage meanwhile, so
#: syncs of either side run in the middle of writes. Every writer reads its
#: rows back before and after each write: a write lost to a sync that
#: copied half of it shows as a row that lacks it (issue 19, item 4).
DEVICE_WRITES = r"""
import pickle

gts.use_gpu("emulated")
ROW = 1 << 13  # elements: NumPy releases the GIL in loops of this size
s = gts.zeros((8, ROW), "f8", device="gpu")
assert type(s) is gts.SoftwareManagedGPUStorage
expected = [0.0] * 8


def check_row(row, when):
    got = np.asarray(s[row])
    if not (got == expected[row]).all():
        bad = got[got != expected[row]]
        raise AssertionError(f"row {row} {when}: {bad.size} elements lost the write of "
                             f"{expected[row]} (they hold {np.unique(bad)[:4]})")


def host_writer(row):
    def body(rng, n):
        check_row(row, "before a host write")
        expected[row] = float(n + 1)
        s[row] = float(n + 1)
        check_row(row, "after a host write")
    return body


def device_adder(row):
    def body(rng, n):
        check_row(row, "before a device add")
        v = s[row]
        np.add(v, 1.0, out=v)
        expected[row] += 1.0
        check_row(row, "after a device add")
    return body


def device_assigner(row):
    def body(rng, n):
        check_row(row, "before a device assignment")
        value = gts.full((ROW,), float(-n - 1), "f8", dims="J", device="gpu")  # on the device
        s[row] = value
        expected[row] = float(-n - 1)
        check_row(row, "after a device assignment")
    return body


def reader(rng, n):
    c = s.copy()
    assert c.shape == s.shape and type(c) is type(s)
    if n % 4 == 0:
        repr(s)
        assert pickle.loads(pickle.dumps(s)).shape == s.shape
    s.synchronize()


threads = [worker(f"host{r}", host_writer(r)) for r in (0, 1)]
threads += [worker(f"adder{r}", device_adder(r)) for r in (2, 3)]
threads += [worker(f"assigner{r}", device_assigner(r)) for r in (4, 5)]
threads += [worker(f"reader{i}", reader) for i in range(3)]


def final_check():
    global s
    for row in range(8):
        check_row(row, "at the end")
    print("rows", [int(x) for x in expected])
    del s


at_end.append(final_check)
finish(threads)
"""


def run_stress(body, nthreads, duration=DURATION):
    code = f"DURATION = {duration!r}\nNTHREADS = {nthreads}\n" + COMMON + body
    result = run_python(code, timeout=TIMEOUT)
    output = result.stdout + result.stderr
    status = result.returncode
    if status < 0:
        status = f"{status} ({signal.Signals(-status).name})"
    assert result.returncode == 0, f"exit status {status}:\n{output[-6000:]}"
    lines = result.stdout.splitlines()
    assert lines and lines[-1].startswith("OK"), output[-6000:]
    assert "ERROR" not in result.stdout and "HUNG" not in result.stdout
    return lines


def iterations(lines):
    return {
        line.split(":")[0]: int(line.split()[1]) for line in lines if line.endswith("iterations")
    }


def test_threads_create_view_export_and_dlpack():
    """Fourteen threads (two of each kind, storages and capsules handed
    from producers to consumers) for DURATION seconds: every kind made
    progress, every check passed, nothing leaked once they are done."""
    lines = run_stress(COMMON_DATA, nthreads=14)
    counts = iterations(lines)
    assert len(counts) == 14
    assert all(n > 0 for n in counts.values()), counts
    # every storage of the workers is gone: no buffer is alive at the end
    assert lines[-1] == "OK 0", lines[-1]


def test_threads_register_and_unregister_presets_while_others_allocate():
    """One thread registers and unregisters function presets (and plain
    ones) while four allocate with those names and two list and read the
    registry: allocations succeed or raise UnknownPresetError, nothing
    else, and never a crash."""
    lines = run_stress(REGISTRY, nthreads=7)
    counts = iterations(lines)
    assert counts["registrar"] > 0
    assert sum(n for name, n in counts.items() if name.startswith("allocator")) > 0


def test_threads_write_both_sides_of_a_software_managed_storage():
    """Host writers, device writers and readers of one
    SoftwareManagedGPUStorage for DEVICE_DURATION seconds: no write is
    lost, every thread made progress and nothing leaked."""
    lines = run_stress(DEVICE_WRITES, nthreads=9, duration=DEVICE_DURATION)
    counts = iterations(lines)
    assert len(counts) == 9
    assert all(n > 0 for n in counts.values()), counts
    assert lines[-1] == "OK 0", lines[-1]


COMMON_DATA = DATA_PATH + DATA_MAIN

if __name__ == "__main__":  # (run the stress by hand: python test_thread_stress.py)
    sys.exit(pytest.main([__file__, "-q"]))
