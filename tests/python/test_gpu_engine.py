"""The engine's views of device storages (engine_view.c), on the emulated
device, whose engine is NumPy over the host memory behind the device's
addresses: the same steps as CuPy's on a CUDA GPU (test_gpu_engine_cuda.py).

Each view is one array over a per-buffer block object that the storage's
SyncState keeps; ufunc operands reuse the last view of their buffer with
the same shape, strides, offset and writability. These tests check the
values through every path that builds such views (ufuncs, out=, where=,
assignment, reductions, ufunc.at, sort), that alternating views of one
buffer are never mixed up, read-only storages, and lifetimes: results,
views and arrays outlive the storages they came from, and every device
block is freed once nothing refers to it.
"""

import gc
import os
import subprocess
import sys

import numpy as np
import pytest

import gtstore
import gtstore.arrays as ga

SHAPE = (6, 5, 4)


pytestmark = pytest.mark.usefixtures("emulated_gpu")  # conftest.py


def device(values, **kwargs):
    """A device-only storage (a GPUStorage) holding `values`."""
    kwargs.setdefault("managed", None)
    return gtstore.storage(np.asarray(values), device="gpu", **kwargs)


def values(s):
    """A host copy of a device storage's values (the device memory as NumPy
    sees it on the emulated device)."""
    return np.array(s.to_ndarray())


def live_blocks():
    """Device blocks alive, without the spares (a cache: test_engine_spares.py)."""
    gc.collect()
    gtstore.clear_cache()
    return gtstore.transfer_counts()["live_blocks"]


@pytest.mark.parametrize("preset", ga.presets())
def test_ufuncs_on_every_preset(preset):
    rng = np.random.default_rng(1)
    x, y = rng.random(SHAPE), rng.random(SHAPE)
    a = gtstore.storage(x, defaults=preset, device="gpu", managed=None)
    b = gtstore.storage(y, defaults=preset, device="gpu", managed=None)
    c = gtstore.zeros(SHAPE, defaults=preset, device="gpu", managed=None)
    assert type(a) is gtstore.GPUStorage
    np.testing.assert_array_equal(values(a + b), x + y)
    for _ in range(3):  # the views are made once, then reused: the same values each time
        np.add(a, b, out=c)
        np.testing.assert_array_equal(values(c), x + y)
    np.multiply(c, 2.0, out=c)  # c read and written in one call
    np.testing.assert_array_equal(values(c), 2 * (x + y))
    np.testing.assert_array_equal(values(np.sqrt(a)), np.sqrt(x))
    np.testing.assert_array_equal(values(a < b), x < y)


def test_managed_and_device_only_storages_together():
    x = np.arange(12.0)
    m = device(x, managed="cuda")
    d = device(2 * x)
    assert type(m) is gtstore.CudaManagedGPUStorage
    np.testing.assert_array_equal(values(m + d), 3 * x)
    np.add(d, 1.0, out=m)
    np.testing.assert_array_equal(np.asarray(m), 2 * x + 1)
    assert m.sum() == (2 * x + 1).sum()


def test_alternating_views_of_one_buffer_are_not_mixed_up():
    x = np.arange(60.0).reshape(6, 10)
    a = device(x)
    out = device(np.zeros((6, 10)))
    expected = np.zeros((6, 10))
    for step in range(4):  # each call's views differ from the last one's in offset or shape
        np.add(a[1:, :], a[:-1, :], out=out[1:, :])
        expected[1:, :] = x[1:, :] + x[:-1, :]
        np.testing.assert_array_equal(values(out), expected)
        np.add(a[:, ::2], step, out=out[:, ::2])
        expected[:, ::2] = x[:, ::2] + step
        np.testing.assert_array_equal(values(out), expected)
        np.add(a.T, out.T, out=out.T)
        expected += x
        np.testing.assert_array_equal(values(out), expected)


def test_broadcasting_by_dims():
    a = device(np.arange(12.0).reshape(3, 4), dims="IJ")
    k = device(np.array([10.0, 20.0]), dims="K")
    np.testing.assert_array_equal(values(a + k),
                                  np.arange(12.0).reshape(3, 4)[:, :, None] + [10.0, 20.0])


def test_inputs_in_host_memory_and_host_outputs():
    x = np.arange(24.0).reshape(2, 3, 4)
    a = device(x)
    host = gtstore.zeros(x.shape)
    np.add(a, x, out=host)  # a host output receives the device's result
    np.testing.assert_array_equal(np.asarray(host), 2 * x)
    np.testing.assert_array_equal(values(a + np.ones(x.shape)), x + 1)


def test_where_with_a_device_mask_and_a_host_mask():
    x = np.arange(24.0).reshape(2, 3, 4)
    a = device(x)
    mask = x % 3 == 0
    for where in (device(mask), mask):
        c = device(np.full(x.shape, -1.0))
        np.add(a, 1.0, out=c, where=where)
        np.testing.assert_array_equal(values(c), np.where(mask, x + 1, -1.0))


def test_assignment_by_dims():
    a = device(np.zeros((3, 4)), dims="IJ")
    a[...] = device(np.array([1.0, 2.0, 3.0, 4.0]), dims="J")
    np.testing.assert_array_equal(values(a), np.tile([1.0, 2.0, 3.0, 4.0], (3, 1)))


def test_reductions():
    x = np.random.default_rng(2).random(SHAPE)
    a = device(x)
    assert a.sum() == pytest.approx(x.sum())
    np.testing.assert_allclose(values(a.sum(axis=2)), x.sum(axis=2))
    np.testing.assert_allclose(values(np.add.reduce(a, axis=0)), x.sum(axis=0))
    assert a.argmax() == x.argmax()
    out = device(np.zeros(SHAPE[:2]))
    a.max(axis=2, out=out)
    np.testing.assert_array_equal(values(out), x.max(axis=2))
    np.testing.assert_allclose(values(np.add.accumulate(a, axis=1)), np.cumsum(x, axis=1))


def test_ufunc_at_and_sort_on_the_device():
    a = device(np.array([3.0, 1.0, 2.0]))
    np.add.at(a, [0, 0, 2], 1.0)
    np.testing.assert_array_equal(values(a), [5.0, 1.0, 3.0])
    a.sort()
    np.testing.assert_array_equal(values(a), [1.0, 3.0, 5.0])


def read_only_of(s):
    """A read-only storage over the memory of a software-managed `s`, whose
    device side is current: computing with it happens on the device."""
    host = np.asarray(s).view()
    host.flags.writeable = False
    r = gtstore.as_storage(host, device_data=s, sync_state=s.sync_state)
    s.host_to_device()
    s.set_device_modified()
    return r


def test_read_only_storages_are_read_not_written():
    s = gtstore.storage(np.arange(6.0), device="gpu")
    r = read_only_of(s)
    out = device(np.zeros(6))
    np.add(r, 1.0, out=out)
    assert s.sync_state.state == gtstore.SyncState.SYNC_DEVICE_DIRTY  # read on the device
    np.testing.assert_array_equal(values(out), np.arange(6.0) + 1)
    with pytest.raises(ValueError, match="read-only"):
        np.add(out, 1.0, out=r)
    np.testing.assert_array_equal(np.asarray(s), np.arange(6.0))


def test_results_and_views_outlive_their_storages():
    before = live_blocks()
    x = np.arange(24.0).reshape(2, 3, 4)
    a, b = device(x), device(2 * x)
    r = a + b
    v = b[1:]
    del a, b
    gc.collect()
    filler = [device(np.full(x.shape, 9.0)) for _ in range(4)]  # reuse freed memory, if any
    np.testing.assert_array_equal(values(r), 3 * x)
    np.testing.assert_array_equal(values(v + 1.0), 2 * x[1:] + 1)
    del filler, r, v
    assert live_blocks() == before


def test_intermediates_are_freed():
    before = live_blocks()
    x = np.arange(24.0).reshape(2, 3, 4)
    a = device(x)
    for _ in range(3):
        r = ((a + 1.0) * 2.0).sum(axis=2)  # the intermediates die within the statement
        np.testing.assert_array_equal(values(r), ((x + 1) * 2).sum(axis=2))
    del a, r
    assert live_blocks() == before


def test_an_array_of_the_device_memory_keeps_it_alive():
    before = live_blocks()
    x = np.arange(12.0)
    a = device(x)
    np.add(a, 1.0, out=a)  # a view cached on a's buffer
    array = a.to_ndarray()
    del a
    gc.collect()
    np.testing.assert_array_equal(array, x + 1)
    del array
    assert live_blocks() == before


def test_without_numpys_c_api():
    """GTSTORE_NUMPY_CAPI=0: the engine's views are made by numpy.ndarray
    over the block's buffer protocol, read-only where the storage is."""
    code = (
        "import numpy as np, gtstore as gts\n"
        "gts.use_gpu('emulated')\n"
        "x = np.arange(12.0)\n"
        "a = gts.storage(x, device='gpu', managed=None)\n"
        "c = gts.zeros((12,), device='gpu', managed=None)\n"
        "np.add(a, a, out=c); np.add(a, a, out=c)\n"
        "assert np.array_equal(c.to_ndarray(), 2 * x)\n"
        "assert a.sum() == x.sum()\n"
        "s = gts.storage(x, device='gpu')\n"
        "h = np.asarray(s).view(); h.flags.writeable = False\n"
        "r = gts.as_storage(h, device_data=s, sync_state=s.sync_state)\n"
        "s.host_to_device(); s.set_device_modified()\n"
        "assert np.array_equal((r + 1.0).to_ndarray(), x + 1)\n"
        "try:\n"
        "    np.add(a, 1.0, out=r)\n"
        "except ValueError as e:\n"
        "    assert 'read-only' in str(e), e\n"
        "else:\n"
        "    raise AssertionError('a read-only storage was written')\n"
        "print('ok')\n")
    env = dict(os.environ, GTSTORE_NUMPY_CAPI="0")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120,
                            env=env, text=True)
    assert result.returncode == 0 and "ok" in result.stdout, result.stderr[-2000:]
