"""GPU storages on the emulated device, which plays the GPU here.

Its memory is separate host memory that gtstore reaches only through the
device's copies, and it counts them (gtstore.transfer_counts()), so these
tests check the storage types, the sync rule of docs/storage.md (no write
is ever lost, and no transfer is made that the rule does not need) and the
errors, on every machine. On a CUDA machine the same storages live in GPU
memory (test_gpu_cuda.py).
"""

import os
import random
import subprocess
import sys

import numpy as np
import pytest

import gtstore

HALO = ((2, 2), (2, 2), (0, 0))


@pytest.fixture(autouse=True)
def emulated_gpu():
    gtstore.use_gpu("emulated")
    gtstore.reset_transfer_counts()
    yield
    gtstore.use_gpu(None)


def transfers():
    counts = gtstore.transfer_counts()
    return counts["to_device"], counts["to_host"]


# ---- types -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, kind",
    [
        ({"device": "gpu"}, gtstore.SoftwareManagedGPUStorage),
        ({"device": "gpu", "managed": "gt4py"}, gtstore.SoftwareManagedGPUStorage),
        ({"device": "gpu", "managed": None}, gtstore.GPUStorage),
        ({"device": "gpu", "managed": False}, gtstore.GPUStorage),
        ({"device": "gpu", "managed": "cuda"}, gtstore.CudaManagedGPUStorage),
        ({"defaults": "gt:gpu"}, gtstore.SoftwareManagedGPUStorage),
        ({"defaults": "gt:gpu", "device": "cpu"}, gtstore.CPUStorage),
        ({"device": "cpu", "managed": "cuda"}, gtstore.CPUStorage),  # no effect on the CPU
        ({}, gtstore.CPUStorage),
    ],
)
def test_type_follows_device_and_managed(kwargs, kind):
    s = gtstore.zeros((5, 4, 3), **kwargs)
    assert type(s) is kind
    assert isinstance(s, gtstore.Storage)
    assert type(s[1:]) is kind  # views keep it
    device, dlpack = {
        gtstore.CPUStorage: (None, (1, 0)),
        gtstore.CudaManagedGPUStorage: ("emulated_managed", (12, 1)),
    }.get(kind, ("emulated", (12, 0)))
    assert s.device == device and s.__dlpack_device__() == dlpack


SYNC_METHODS = [
    ("host_to_device", {}), ("host_to_device", {"force": True}),
    ("device_to_host", {}), ("device_to_host", {"force": True}),
    ("synchronize", {}), ("set_host_modified", {}), ("set_device_modified", {}),
    ("set_synchronized", {}), ("set_device_synchronized", {}),
]
TYPES = {
    gtstore.CPUStorage: {"device": "cpu"},
    gtstore.SoftwareManagedGPUStorage: {"device": "gpu"},
    gtstore.GPUStorage: {"device": "gpu", "managed": None},
    gtstore.CudaManagedGPUStorage: {"device": "gpu", "managed": "cuda"},
}


@pytest.mark.parametrize("kind", list(TYPES), ids=lambda k: k.__name__)
@pytest.mark.parametrize("method, kwargs", SYNC_METHODS, ids=lambda m: str(m))
def test_every_type_every_sync_method(kind, method, kwargs):
    """Seed 000's sync methods exist on every type; only a software-managed
    storage has two sides to sync, elsewhere they are no-ops that move
    nothing and leave the state clean."""
    s = gtstore.full((3, 4), 2.0, **TYPES[kind])
    s.synchronize()
    gtstore.reset_transfer_counts()
    assert getattr(s, method)(**kwargs) is None
    if kind is not gtstore.SoftwareManagedGPUStorage:
        assert transfers() == (0, 0)
        assert s.sync_state.state == gtstore.SyncState.SYNC_CLEAN
    else:
        forced = kwargs.get("force", False)
        assert transfers() == {"host_to_device": (int(forced), 0),
                               "device_to_host": (0, int(forced))}.get(method, (0, 0))
        assert s.sync_state.state == {
            "set_host_modified": gtstore.SyncState.SYNC_HOST_DIRTY,
            "set_device_modified": gtstore.SyncState.SYNC_DEVICE_DIRTY,
        }.get(method, gtstore.SyncState.SYNC_CLEAN)
    np.testing.assert_array_equal(s.to_ndarray(), np.full((3, 4), 2.0))


@pytest.mark.parametrize("kind", list(TYPES), ids=lambda k: k.__name__)
def test_every_type_attributes(kind):
    s = gtstore.full((3, 4), 2.0, **TYPES[kind])
    host_side = kind is not gtstore.GPUStorage
    assert (s.data is not None) == host_side
    assert (s.device_data is None) == (kind is gtstore.CPUStorage)
    assert isinstance(s.sync_state, gtstore.SyncState) and s[1:].sync_state is s.sync_state
    if host_side:
        assert np.asarray(s).sum() == 24.0
    assert s.to_ndarray().sum() == 24.0


def test_managed_memory_is_one_memory_both_sides_reach():
    """managed="cuda" on the emulated device: its managed memory, host
    memory under the device id (12, 1), as CUDA managed memory is one
    memory the host and the GPU reach: no transfers, no sync state."""
    u = gtstore.zeros((4, 5), device="gpu", managed="cuda", halo=((1, 1), (1, 1)))
    gtstore.reset_transfer_counts()
    device = u.to_ndarray()
    assert np.shares_memory(device, np.asarray(u))
    device[1, 1] = 3.0  # "the device" writes; the host sees it at once
    u[2, 2] = 4.0
    assert u[1, 1] == 3.0 and device[2, 2] == 4.0
    u[:, 0] = gtstore.full((4,), 5.0, device="gpu")  # a device value, copied over
    assert (device[:, 0] == 5.0).all()
    assert transfers() == (0, 1)  # read out of the value's device memory, nothing else
    assert u.sync_state.state == gtstore.SyncState.SYNC_CLEAN
    assert type(u.copy()) is gtstore.CudaManagedGPUStorage and type(u[1:]) is type(u)
    assert not hasattr(u, "__cuda_array_interface__")  # not CUDA memory
    with pytest.raises(gtstore.GTNoSuchBufferError, match="no CUDA buffer"):
        u.to_cupy()
    v = gtstore.from_dlpack(u)  # imports the managed memory itself
    assert type(v) is gtstore.CudaManagedGPUStorage and np.shares_memory(np.asarray(v), device)


def test_gpu_preset_has_its_geometry():
    s = gtstore.empty((5, 4, 3), defaults="gt:gpu", halo=HALO[:2] + ((0, 0),))
    host = gtstore.empty((5, 4, 3), defaults="gt:gpu", device="cpu", halo=HALO[:2] + ((0, 0),))
    assert s.strides == host.strides and s.layout == host.layout
    assert s.alignment_size == host.alignment_size == 32 * 8


#: A CUDA driver that cannot be loaded: no GPU, also on a machine with one.
NO_CUDA = "/nonexistent/gtstore-test/libcuda.so.1"


def without_a_gpu(code):
    """Runs ``code`` in a child Python where no GPU exists (GTSTORE_LIBCUDA
    names no library, GTSTORE_GPU is unset); returns its output lines."""
    env = dict(os.environ, GTSTORE_LIBCUDA=NO_CUDA,
               PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    env.pop("GTSTORE_GPU", None)
    run = subprocess.run([sys.executable, "-c", "import gtstore\n" + code], env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    return run.stdout.splitlines()


def test_no_gpu_without_emulation():
    lines = without_a_gpu("""
print(gtstore.gpu())
for kwargs in (dict(device="gpu"), dict(defaults="gt:gpu"), dict(device="gpu", managed="cuda"),
               dict(gpu=True)):
    try:
        gtstore.zeros((3,), **kwargs)
    except NotImplementedError as error:
        print(error)
    else:
        print("no error")
""")
    assert lines[0] == "None", lines
    assert "device: 'gpu' asks for a GPU" in lines[1], lines
    assert "'gt:gpu' is for the GPU" in lines[2], lines
    assert "device: 'gpu' asks for a GPU" in lines[3], lines  # managed memory needs one too
    assert "gpu: True asks for a GPU" in lines[4], lines  # GDP-3's first draft's spelling
    assert NO_CUDA in lines[1], lines  # the reason: the driver that could not be loaded
    with pytest.raises(ValueError, match="gpu: expected None, 'emulated', 'cuda' or 'cuda:N'"):
        gtstore.use_gpu("tpu")
    with pytest.raises(ValueError, match="gpu: expected None"):
        gtstore.use_gpu("cuda:x")
    for name in (1, "cuda:1x", "emulated\0", "cpu"):  # names libgtstore reads (device_name.c)
        with pytest.raises(ValueError, match=r"gpu: expected None, .* got " + repr(name)[:6]):
            gtstore.use_gpu(name)


@pytest.mark.parametrize("managed", ["gt4", "CUDA", 1, True])
def test_bad_managed(managed):
    with pytest.raises(ValueError, match="managed"):
        gtstore.zeros((3,), device="gpu", managed=managed)


def test_environment_variable_selects_the_emulated_device():
    code = "import gtstore; print(type(gtstore.zeros((2,), device='gpu')).__name__, gtstore.gpu())"
    env = dict(os.environ, GTSTORE_GPU="emulated")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120, check=True).stdout
    assert out.startswith("SoftwareManagedGPUStorage {'name': 'emulated', 'dlpack': (12, 0), "
                          "'kind': 'gpu', 'cuda_array_interface': False}")
    env["GTSTORE_GPU"] = "quantum"
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode != 0 and "GTSTORE_GPU: expected 'cuda' or 'emulated'" in run.stderr


# ---- values and the sync rule ---------------------------------------------------------------


@pytest.mark.parametrize("managed", ["gt4py", None])
@pytest.mark.parametrize("make, expected", [
    (lambda **kw: gtstore.zeros((6, 5, 4), **kw), 0.0),
    (lambda **kw: gtstore.ones((6, 5, 4), **kw), 1.0),
    (lambda **kw: gtstore.full((6, 5, 4), 2.5, **kw), 2.5),
])
def test_creation_values(make, expected, managed):
    s = make(device="gpu", managed=managed)
    np.testing.assert_array_equal(s.to_ndarray(), np.full((6, 5, 4), expected))


@pytest.mark.parametrize("managed", ["gt4py", None])
def test_storage_copies_data_to_the_device(managed):
    data = np.arange(60.0).reshape(3, 4, 5)
    s = gtstore.storage(data, device="gpu", managed=managed)
    np.testing.assert_array_equal(s.to_ndarray(), data)
    if managed:
        np.testing.assert_array_equal(np.asarray(s), data)


def test_host_write_then_device_read():
    assert gtstore.ones((2,), device="gpu").sync_state.state == gtstore.SyncState.SYNC_DEVICE_DIRTY
    s = gtstore.zeros((8, 8, 4), device="gpu", halo=HALO)
    assert s.sync_state.state == gtstore.SyncState.SYNC_CLEAN  # both sides start as zeros
    gtstore.reset_transfer_counts()
    s[2:-2, 2:-2, :] = 1.0  # the host is current: marked, nothing moves
    assert transfers() == (0, 0)
    assert s.sync_state.state == gtstore.SyncState.SYNC_HOST_DIRTY
    device = s.to_ndarray()  # the device side: synced, then marked written
    assert transfers() == (1, 0)
    assert device[2:-2, 2:-2].sum() == 4 * 4 * 4 and device.sum() == 4 * 4 * 4
    assert s.sync_state.state == gtstore.SyncState.SYNC_DEVICE_DIRTY
    device[0, 0, 0] = 5.0  # written as a kernel would
    assert float(s[0, 0, 0]) == 5.0  # a host read syncs
    assert transfers() == (1, 1)
    assert s.sync_state.state == gtstore.SyncState.SYNC_CLEAN  # a read does not mark


def test_views_share_the_sync_state_and_syncs_move_the_whole_allocation():
    s = gtstore.zeros((10, 10, 10), device="gpu")
    s.synchronize()
    inner = s[2:4, 2:4, 2:4]
    assert inner.sync_state is s.sync_state
    inner[...] = 3.0
    nbytes = gtstore.transfer_counts()
    s.host_to_device()
    counts = gtstore.transfer_counts()
    assert counts["to_device"] - nbytes["to_device"] == 1
    assert counts["to_device_bytes"] - nbytes["to_device_bytes"] >= s.nbytes  # all of it
    assert s.to_ndarray().sum() == 3.0 * 8


def test_sync_methods_and_force():
    s = gtstore.ones((4, 4), device="gpu")
    s.device_to_host()
    before = transfers()
    s.device_to_host()
    s.host_to_device()
    s.synchronize()
    assert transfers() == before  # clean: nothing moves
    s.device_to_host(force=True)
    s.host_to_device(force=True)
    assert transfers() == (before[0] + 1, before[1] + 1)
    s.set_device_modified()
    assert s.sync_state.state == gtstore.SyncState.SYNC_DEVICE_DIRTY
    s.set_host_modified()
    assert s.sync_state.state == gtstore.SyncState.SYNC_HOST_DIRTY
    s.set_synchronized()
    assert s.sync_state.state == gtstore.SyncState.SYNC_CLEAN
    # GDP-3's first draft's name of set_synchronized: marks, copies nothing
    s.set_host_modified()
    before = transfers()
    s.set_device_synchronized()
    assert s.sync_state.state == gtstore.SyncState.SYNC_CLEAN
    assert transfers() == before


def test_exports_mark_the_side_they_expose():
    s = gtstore.zeros((3, 3), device="gpu")
    s.synchronize()
    for export in (np.asarray, memoryview, lambda x: x.__array_interface__, lambda x: x.data):
        s.set_synchronized()
        export(s)
        assert s.sync_state.state == gtstore.SyncState.SYNC_HOST_DIRTY, export
    for export in (lambda x: x.to_ndarray(), lambda x: x.__dlpack__(), lambda x: x.device_data):
        s.set_synchronized()
        export(s)
        assert s.sync_state.state == gtstore.SyncState.SYNC_DEVICE_DIRTY, export
    s.set_synchronized()
    repr(s), float(s[1, 1]), s.copy()  # reads mark nothing
    assert s.sync_state.state == gtstore.SyncState.SYNC_CLEAN


def test_exports_of_a_read_only_storage_mark_nothing():
    # a read-only view of a software-managed storage: its exports are synced,
    # never marked written, on either side (gts_storage_access)
    s = gtstore.zeros((3, 3), device="gpu")
    host = np.asarray(s).view()
    host.flags.writeable = False
    r = gtstore.as_storage(host, device_data=s, sync_state=s.sync_state)
    exports = (lambda x: x.to_ndarray(), lambda x: x.__dlpack__(max_version=(1, 0)),
               lambda x: x.device_data, np.asarray, lambda x: x.__array_interface__)
    for export in exports:
        s.set_synchronized()
        export(r)
        assert s.sync_state.state == gtstore.SyncState.SYNC_CLEAN, export
    assert not r.to_ndarray().flags.writeable


def test_copy_keeps_type_values_and_sync():
    s = gtstore.zeros((4, 5), device="gpu", halo=((1, 1), (1, 1)))
    s[1:-1, 1:-1] = 2.0
    c = s.copy()
    assert type(c) is gtstore.SoftwareManagedGPUStorage and c.halo == s.halo
    assert c.sync_state is not s.sync_state
    np.testing.assert_array_equal(np.asarray(c), np.asarray(s))


def test_device_only_storage_has_no_host_buffer():
    g = gtstore.full((3, 4), 1.5, device="gpu", managed=None)
    assert g.data is None and g.sync_state.state == gtstore.SyncState.SYNC_CLEAN
    for host_access in (np.asarray, memoryview, lambda x: x.to_numpy(), lambda x: x[0, 0]):
        with pytest.raises(gtstore.GTNoSuchBufferError, match="no host buffer"):
            host_access(g)
    assert not hasattr(g, "__array_interface__")  # absent, not failing
    g[0] = np.ones(4)  # through host memory
    expected = np.full((3, 4), 1.5)
    expected[0] = 1.0
    assert "1.5" in repr(g)  # displayed through a host copy
    import pickle

    back = pickle.loads(pickle.dumps(g))  # a GPUStorage again, on the device
    assert type(back) is gtstore.GPUStorage
    np.testing.assert_array_equal(back.to_ndarray(), expected)
    np.testing.assert_array_equal(g.to_ndarray(), expected)
    with pytest.raises(gtstore.GTNoSuchBufferError, match="emulated"):
        g.to_cupy()
    assert not hasattr(g, "__cuda_array_interface__")  # not CUDA memory


def test_dlpack_of_device_memory():
    s = gtstore.ones((2, 3), device="gpu")
    s.__dlpack__(dl_device=(12, 0))
    assert s.__dlpack_device__() == (12, 0)  # the device side, which is no host memory:
    with pytest.raises(Exception):  # noqa: B017 - NumPy refuses it (RuntimeError, BufferError
        np.from_dlpack(s)  # since 2.5: its type and message are NumPy's, not this test's)
    with pytest.raises(ValueError, match="stream"):
        s.__dlpack__(stream=5)


def test_dlpack_to_cpu_exports_the_host_side():
    """dl_device=(1, 0) of a software-managed storage is its host side: a
    host access like any other (synced first, marked written after)."""
    s = gtstore.zeros((2, 3), device="gpu")
    s.to_ndarray()[...] = 3.0  # a kernel's write on the device
    s.set_device_modified()
    gtstore.reset_transfer_counts()
    a = np.from_dlpack(s, device="cpu")
    assert gtstore.transfer_counts()["to_host"] == 1 and (a == 3.0).all()
    assert s.sync_state.state == gtstore.SyncState.SYNC_HOST_DIRTY
    a[1, 2] = 7.0  # the consumer writes the host side itself
    assert np.shares_memory(a, np.asarray(s))
    np.testing.assert_array_equal(s.to_ndarray()[1], [3.0, 3.0, 7.0])  # synced on the way
    np.testing.assert_array_equal(np.from_dlpack(s[::-1, 1:], device="cpu"),
                                  [[3.0, 7.0], [3.0, 3.0]])
    with pytest.raises(BufferError, match="max_version"):
        s.__dlpack__(dl_device=(1, 0))  # a legacy capsule cannot be asked for a device
    with pytest.raises(ValueError, match="stream"):
        s.__dlpack__(dl_device=(1, 0), max_version=(1, 0), stream=5)  # host memory: None or -1


def test_dlpack_to_cpu_of_device_only_memory_copies():
    g = gtstore.full((2, 3), 2.0, device="gpu", managed=None)
    b = np.from_dlpack(g, device="cpu")  # copy=None: a copy where there is no host side
    b[0, 0] = 9.0  # the copy's, not the device's
    assert (g.to_ndarray() == 2.0).all() and b.sum() == 9.0 + 5 * 2.0
    with pytest.raises(BufferError, match=r"without a copy \(copy=False\)"):
        g.__dlpack__(dl_device=(1, 0), copy=False, max_version=(1, 0))
    s = gtstore.full((2,), 1.0, device="gpu")
    state = s.sync_state.state
    c = np.from_dlpack(s, device="cpu", copy=True)
    c[0] = 5.0
    assert (s.to_ndarray() == 1.0).all() and s.sync_state.state == state  # a read


def test_no_lost_write_random_sequence():
    """Random reads, writes, syncs and declarations across views of one
    buffer, on both sides, against a model of the values and of the state:
    every read sees the last write, and the transfers are exactly the ones
    the state required."""
    rng = random.Random(20261125)
    shape = (6, 7, 5)
    s = gtstore.zeros(shape, device="gpu")
    s.synchronize()
    truth = np.zeros(shape)
    state = "clean"
    expected = list(transfers())
    views = [(slice(None),) * 3, (slice(1, 4), slice(None), 2), (0,), (slice(None, None, 2),),
             (slice(2, 5), slice(3, 7), slice(None, None, -1))]
    for step in range(3000):
        key = rng.choice(views)
        view = s[key]
        side = rng.choice(["host", "device"])
        stale = "device" if side == "host" else "host"
        action = rng.random()
        if action < 0.35:  # a write
            value = float(step)
            if state == f"{stale}_dirty":
                expected[0 if side == "device" else 1] += 1
            if side == "host":
                view[...] = value
            else:
                view.to_ndarray()[...] = value
            truth[key] = value
            state = f"{side}_dirty"
        elif action < 0.7:  # a read, through an export that could write: it marks
            if state == f"{stale}_dirty":
                expected[0 if side == "device" else 1] += 1
            got = np.array(view) if side == "host" else np.array(view.to_ndarray())
            state = f"{side}_dirty"
            np.testing.assert_array_equal(got, truth[key], err_msg=f"step {step}")
        elif action < 0.9:  # an explicit sync
            if side == "host":
                if state == "device_dirty":
                    expected[1] += 1
                    state = "clean"
                s.device_to_host()
            else:
                if state == "host_dirty":
                    expected[0] += 1
                    state = "clean"
                s.host_to_device()
        else:
            s.synchronize()
            if state != "clean":
                expected[0 if state == "host_dirty" else 1] += 1
            state = "clean"
        assert list(transfers()) == expected, f"step {step}"
        names = {"clean": "SYNC_CLEAN", "host_dirty": "SYNC_HOST_DIRTY",
                 "device_dirty": "SYNC_DEVICE_DIRTY"}
        assert s.sync_state.state == getattr(gtstore.SyncState, names[state]), f"step {step}"
    np.testing.assert_array_equal(s.to_ndarray(), truth)
    np.testing.assert_array_equal(np.asarray(s), truth)


# ---- where __setitem__ writes (GDP-3's final text, "Choosing the Device") --------------------------------


def test_setitem_with_a_device_value_writes_on_the_device():
    d = gtstore.zeros((4, 5), device="gpu", managed=None)
    d[1:3] = 2.0  # a GPUStorage takes numbers on the device
    m = gtstore.ones((4, 5), device="gpu")
    m.synchronize()
    gtstore.reset_transfer_counts()
    m[1] = d[1]  # a value on the device: written there, nothing crosses
    assert transfers() == (0, 0)
    assert m.sync_state.state == gtstore.SyncState.SYNC_DEVICE_DIRTY
    expected = np.ones((4, 5))
    expected[1] = 2.0
    np.testing.assert_array_equal(np.asarray(m), expected)
    m[2] = np.full(5, 3.0)  # a host value: written on the host
    assert m.sync_state.state == gtstore.SyncState.SYNC_HOST_DIRTY
    m.host_to_device()
    host_written = gtstore.zeros((5,), device="gpu", dims="J")
    host_written[...] = 4.0  # host side ahead: not a device value
    m[3] = host_written
    assert m.sync_state.state == gtstore.SyncState.SYNC_HOST_DIRTY
    expected[2], expected[3] = 3.0, 4.0
    np.testing.assert_array_equal(m.to_ndarray(), expected)
    with pytest.raises(ValueError, match="the output has no dim 'I'"):
        m[3] = gtstore.zeros((5,), device="gpu")  # an I field into a J row: by dims, not position


def test_device_only_setitem():
    d = gtstore.zeros((4, 5), device="gpu", managed=None)
    d[0] = d[3]
    d[...] = 1.5
    d[2, 1:3] = gtstore.full((2,), 7.0, device="gpu", dims="J")
    expected = np.full((4, 5), 1.5)
    expected[2, 1:3] = 7.0
    np.testing.assert_array_equal(d.to_ndarray(), expected)
    gtstore.reset_transfer_counts()
    d[0] = np.arange(5)  # NumPy's values (cast to float64) through the host, one transfer
    d[1:3, ::2] = [[8], [9]]  # broadcast
    assert gtstore.transfer_counts()["to_device"] == 2
    expected[0] = np.arange(5)
    expected[1:3, ::2] = [[8], [9]]
    np.testing.assert_array_equal(d.to_ndarray(), expected)
    gtstore.reset_transfer_counts()
    d[[0, 3], 1:3] = [[5.0], [6.0]]  # an advanced key: the whole storage read, set, written
    d[d.to_ndarray() > 8.0] = -1.0
    expected[[0, 3], 1:3] = [[5.0], [6.0]]
    expected[expected > 8.0] = -1.0
    assert gtstore.transfer_counts()["to_device"] == 2 and gtstore.transfer_counts()["to_host"] == 2
    np.testing.assert_array_equal(d.to_ndarray(), expected)
    with pytest.raises(IndexError):
        d[[0, 9]] = 1.0
    np.testing.assert_array_equal(d.to_ndarray(), expected)  # a failed assignment writes nothing
    with pytest.raises(ValueError):
        d[0] = np.ones(4)  # NumPy's broadcasting error
    with pytest.raises(IndexError):
        d[9] = 1.0


# ---- gtstore.arrays on the GPU ---------------------------------------------------------------


def test_arrays_gpu_presets_allocate_device_memory():
    import gtstore.arrays as ga

    a = ga.full((5, 4, 3), 2.0, backend="gt:gpu", aligned_index=(1, 1, 0))
    plan = ga.plan((5, 4, 3), backend="gt:gpu", aligned_index=(1, 1, 0))
    assert type(a) is np.ndarray and a.strides == plan.strides  # the preset's geometry
    np.testing.assert_array_equal(a, np.full((5, 4, 3), 2.0))
    assert type(a.base).__name__ == "CPUStorage"  # NumPy's view of the emulated memory
    data = np.arange(12.0).reshape(3, 4)
    gtstore.reset_transfer_counts()
    b = ga.from_array(data, backend="gt:gpu")
    np.testing.assert_array_equal(b, data)
    assert gtstore.transfer_counts()["to_device"] == 1  # staged on the host, one transfer
    c = ga.zeros((3,), device="gpu")
    np.testing.assert_array_equal(c, np.zeros(3))


# ---- DLPack and wrapping of device memory, copies between sides -------------------------------


def test_from_dlpack_and_as_storage_view_device_memory():
    g = gtstore.full((3, 4), 2.0, device="gpu", managed=None)
    v = gtstore.from_dlpack(g)  # no copy: the same device memory
    assert type(v) is gtstore.GPUStorage and v.device == "emulated"
    v[1] = 5.0
    np.testing.assert_array_equal(g.to_ndarray()[1], np.full(4, 5.0))
    w = gtstore.as_storage(g, dims="IJ")
    assert type(w) is gtstore.GPUStorage and w.sync_state is g.sync_state
    m = gtstore.ones((2, 3), device="gpu")
    imported = gtstore.from_dlpack(m)  # the device side of a mirrored storage
    assert type(imported) is gtstore.GPUStorage
    assert m.sync_state.state == gtstore.SyncState.SYNC_DEVICE_DIRTY  # exported: marked
    with pytest.raises(NotImplementedError, match="asks for host memory"):
        gtstore.as_storage(g, device="cpu")


@pytest.mark.parametrize("managed", ["gt4py", None])
def test_storage_copies_between_sides(managed):
    g = gtstore.full((3, 4), 5.0, device="gpu", managed=managed)
    c = gtstore.storage(g)  # the data's device kind: a GPU storage again
    assert c.device == "emulated" and c.to_ndarray().sum() == 60.0
    h = gtstore.storage(g, device="cpu")  # a host copy
    assert type(h) is gtstore.CPUStorage and np.asarray(h).sum() == 60.0
    back = gtstore.storage(h, device="gpu", managed=None)
    assert type(back) is gtstore.GPUStorage and back.to_ndarray().sum() == 60.0


def test_wrapping_device_memory_needs_no_gpu_choice():
    g = gtstore.full((2, 2), 3.0, device="gpu", managed=None)
    gtstore.use_gpu(None)  # whatever plays the GPU now: the memory is where it is
    if gtstore.gpu() is not None:  # a real (or the fake) CUDA GPU: another GPU's memory
        with pytest.raises(ValueError, match=r"x: memory on emulated .* another GPU than"):
            gtstore.from_dlpack(g)
        gtstore.use_gpu("emulated")
    v = gtstore.from_dlpack(g)
    assert v.device == "emulated" and v.to_ndarray().sum() == 12.0
    assert gtstore.as_storage(g).device == "emulated"
    assert np.asarray(gtstore.storage(g, device="cpu")).sum() == 12.0  # a host copy
    if gtstore.gpu() is None:  # a copy on "the GPU" needs one
        with pytest.raises(NotImplementedError, match="data: a storage on the GPU"):
            gtstore.storage(g)
    else:  # the copy goes to the GPU there is, from the emulated device's memory
        c = gtstore.storage(g)
        assert c.device == gtstore.gpu()["name"]
        assert np.asarray(gtstore.storage(c, device="cpu")).sum() == 12.0


# ---- computing (GDP-3's first draft, "Mixing Devices") ---------------------------------------------------


def test_compute_device_follows_the_inputs():
    """The device computes when an input is a GPU array: a storage on the
    device whose host side was not written last. Inputs written on the host
    are computed there. Either way the output is of the inputs' type and
    nothing is copied that the sync rule does not need."""
    s = gtstore.full((4, 5), 2.0, device="gpu")  # filled on the device
    gtstore.reset_transfer_counts()
    t = s + 1
    assert type(t) is gtstore.SoftwareManagedGPUStorage and transfers() == (0, 0)
    assert t.sync_state.state == gtstore.SyncState.SYNC_DEVICE_DIRTY
    np.testing.assert_array_equal(t.to_ndarray(), 3.0)
    s[...] = 5.0  # now the host side is the one written last
    gtstore.reset_transfer_counts()
    u = s * 2
    assert type(u) is gtstore.SoftwareManagedGPUStorage and transfers() == (0, 0)
    assert u.sync_state.state == gtstore.SyncState.SYNC_HOST_DIRTY
    np.testing.assert_array_equal(np.asarray(u), 10.0)
    np.testing.assert_array_equal(u.to_ndarray(), 10.0)  # one sync on the way
    assert transfers() == (1, 0)


def test_in_place_on_the_device_loses_no_write():
    s = gtstore.zeros((3, 4), device="gpu")
    s.to_ndarray()[...] = 1.0  # a kernel's write
    s += 2.0  # the device is current: computed there
    assert s.sync_state.state == gtstore.SyncState.SYNC_DEVICE_DIRTY
    s[0, 0] = 10.0  # host write: synced first, then marked
    s += 1.0  # host written last: computed on the host
    expected = np.full((3, 4), 4.0)
    expected[0, 0] = 11.0
    np.testing.assert_array_equal(np.asarray(s), expected)
    np.testing.assert_array_equal(s.to_ndarray(), expected)


def test_mixed_host_and_device_inputs():
    s = gtstore.full((4, 5), 1.0, device="gpu", dims="IJ")
    h = gtstore.full((5,), 2.0, dims="J")  # a host storage joins the device's computation
    r = s + h + np.arange(4.0).reshape(4, 1)
    assert type(r) is gtstore.SoftwareManagedGPUStorage and r.dims == ("I", "J")
    np.testing.assert_array_equal(r.to_ndarray(), np.broadcast_to(3.0 + np.arange(4.0)[:, None], (4, 5)))


def test_device_only_storages_compute_on_the_device():
    g = gtstore.full((4, 5), 1.5, device="gpu", managed=None)
    r = g * 2
    assert type(r) is gtstore.GPUStorage
    np.testing.assert_array_equal(r.to_ndarray(), 3.0)
    out = gtstore.zeros((4, 5), device="gpu", managed=None)
    assert np.add(gtstore.ones((4, 5)), g, out=out) is out  # into memory without a host side
    np.testing.assert_array_equal(out.to_ndarray(), 2.5)
    column = g.sum(axis=0)
    assert type(column) is gtstore.GPUStorage and column.dims == ("J",)
    np.testing.assert_array_equal(column.to_ndarray(), 6.0)
    assert g.sum() == 30.0 and (g == 1.5).all()


def test_managed_memory_computes_without_transfers():
    m = gtstore.full((3, 3), 2.0, device="gpu", managed="cuda")
    gtstore.reset_transfer_counts()
    r = m * m
    assert type(r) is gtstore.CudaManagedGPUStorage and transfers() == (0, 0)
    np.testing.assert_array_equal(np.asarray(r), 4.0)


@pytest.mark.parametrize("kind", list(TYPES), ids=lambda k: k.__name__)
def test_array_priority(kind):
    s = gtstore.zeros((2,), **TYPES[kind])
    managed = kind in (gtstore.SoftwareManagedGPUStorage, gtstore.CudaManagedGPUStorage)
    assert s.__array_priority__ == (11 if managed else 10)


# ---- issue 19: assignments across dtypes and ufunc methods on device-only storages ------------


def device_values(s):
    """The values of a storage on any device, as a host ndarray."""
    return np.array(s.to_ndarray()) if s.data is None else np.array(s)


def test_assigning_another_dtype_into_a_device_only_storage_keeps_the_dims():
    """The host staging storage of an assignment into a GPUStorage carries the
    view's dims: a value with dims is assigned by them, as into a host
    storage (it was stored transposed, and a 1-d "J" view raised)."""
    values = np.arange(9).reshape(3, 3)
    for dims, shape, data in (("JI", (3, 3), values), ("J", (3,), values[0]),
                              ("IJ", (3, 3), values)):
        b = gtstore.storage(data, dims=dims)  # int64
        host = gtstore.zeros(shape, "f8", dims=dims)
        host[...] = b
        g = gtstore.zeros(shape, "f8", dims=dims, device="gpu", managed=None)
        g[...] = b
        np.testing.assert_array_equal(device_values(g), np.asarray(host))
        np.testing.assert_array_equal(device_values(g), data)
    # a value with the dims in the other order: by dims, into the view of a key too
    g = gtstore.zeros((2, 3, 3), "f8", dims="KJI", device="gpu", managed=None)
    g[1] = gtstore.storage(values.T.copy(), dims="IJ")
    np.testing.assert_array_equal(device_values(g)[1], values)
    assert not device_values(g)[0].any()


def test_assigning_a_device_only_storage_of_another_dtype_into_a_host_storage():
    values = np.arange(6).reshape(2, 3)
    g = gtstore.storage(values, device="gpu", managed=None)  # int64
    for target in (gtstore.zeros((2, 3), "f4"), gtstore.zeros((2, 3), "f4", device="gpu")):
        target[...] = g
        np.testing.assert_array_equal(np.asarray(target), values.astype("f4"))
        target[0, 1:2] = g[1, 2:]  # a view
        assert float(np.asarray(target)[0, 1]) == 5.0
        target[[0, 1], 0] = g[:, 2]  # an advanced key
        np.testing.assert_array_equal(np.asarray(target)[:, 0], [2.0, 5.0])


@pytest.mark.parametrize("index_dtype", ["i8", "i4"])
def test_ufunc_at_on_a_device_only_storage(index_dtype):
    """np.add.at and friends on a GPUStorage run on its device, with the
    result of the same call on a host storage."""
    indices = np.array([0, 1, 1, 4, 4, 4], dtype=index_dtype)
    host = gtstore.zeros((5,), "f8")
    g = gtstore.zeros((5,), "f8", device="gpu", managed=None)
    for a in (host, g):
        np.add.at(a, indices, 1.5)
        np.multiply.at(a, [0, 4], gtstore.full((2,), 2.0, device="gpu", managed=None))
        np.negative.at(a, [1])
    np.testing.assert_array_equal(device_values(g), np.asarray(host))
    np.testing.assert_array_equal(np.asarray(host), [3.0, -3.0, 0.0, 0.0, 9.0])
    # a host storage with a device-only value: read through a host copy
    np.add.at(host, [2, 3], gtstore.full((2,), 1.0, device="gpu", managed=None))
    np.testing.assert_array_equal(np.asarray(host)[2:4], [1.0, 1.0])


@pytest.mark.parametrize("method", ["accumulate", "reduce"])
def test_ufunc_methods_with_a_device_only_out(method):
    values = np.arange(12.0).reshape(3, 4)
    expected = getattr(np.add, method)(values, axis=0)
    for source in (gtstore.storage(values), gtstore.storage(values, device="gpu"),
                   gtstore.storage(values, device="gpu", managed=None)):
        dims = "IJ" if method == "accumulate" else "J"  # reduce: along I
        out = gtstore.zeros(expected.shape, "f8", dims=dims, device="gpu", managed=None)
        result = getattr(np.add, method)(source, axis=0, out=out)
        assert result is out
        np.testing.assert_array_equal(device_values(out), expected)


def test_dlpack_to_cpu_of_managed_memory_is_the_memory_itself():
    """dl_device=(1, 0) of managed memory exports that memory (the buffer
    protocol's zero copy): writes through it are the storage's."""
    s = gtstore.full((2, 3), 1.0, device="gpu", managed="cuda")
    a = np.from_dlpack(s, device="cpu")
    assert np.shares_memory(a, np.asarray(s))
    a[1, 2] = 7.0
    assert float(np.asarray(s)[1, 2]) == 7.0 and s.to_ndarray()[1, 2] == 7.0
    v = np.from_dlpack(s[::-1, 1:], device="cpu")  # a view
    np.testing.assert_array_equal(v, [[1.0, 7.0], [1.0, 1.0]])
    c = np.from_dlpack(s, device="cpu", copy=True)  # asked for a copy: one
    c[0, 0] = -1.0
    assert not np.shares_memory(c, np.asarray(s)) and float(np.asarray(s)[0, 0]) == 1.0
    capsule = s.__dlpack__(dl_device=(1, 0), max_version=(1, 0), copy=False)
    del capsule  # no copy needed: served
