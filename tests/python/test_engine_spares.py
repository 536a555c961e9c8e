"""Spare GPU blocks (engine_spares.c), on the emulated device.

When the last holder of a device-only GPU storage goes, its block and the
engine's arrays over it are kept, and the next storage of the same size on
the same device takes both. These tests check that a result reuses the
block and gives the right values; that nothing a user still holds (an array
over the device memory, a DLPack export, a SyncState) lets the block be
reused; that a reused block waits for the work still queued on it on
another stream (with the detector: the same rounds with the waits skipped
see wrong values); that zeroed allocations never take one and mirrored
ones take only mirrored ones, in sync; and
that the cache limit, clear_cache and the count bound the spares. The CUDA
case, with CuPy's objects, is in test_gpu_engine_cuda.py.
"""

import gc
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import gtstore
from conftest import device_address
from gtstore._gtstore import _skip_stream_waits_for_testing as skip_waits

SHAPE = (6, 5, 4)

pytestmark = pytest.mark.usefixtures("emulated_gpu")  # conftest.py


@pytest.fixture(autouse=True)
def no_spares_before_and_after():
    """Each test starts without spares and leaves the cache limit as it was."""
    limit = gtstore.cache_limit()
    gtstore.clear_cache()
    yield
    gtstore.set_cache_limit(limit)
    gtstore.clear_cache()


def device(values, **kwargs):
    kwargs.setdefault("managed", None)
    return gtstore.storage(np.asarray(values, dtype=float), device="gpu", **kwargs)


def values(s):
    return np.array(s.to_ndarray())


def spares():
    gc.collect()
    stats = gtstore.memory_stats()
    return stats["spare_blocks"], stats["spare_hits"]


def test_a_result_takes_the_block_of_the_last_one():
    x = np.arange(120.0).reshape(SHAPE)
    a, b = device(x), device(2 * x)
    c = a + b
    address = device_address(c)
    del c
    blocks, hits = spares()
    assert blocks == 1
    d = a + b
    assert device_address(d) == address
    assert spares() == (0, hits + 1)
    np.testing.assert_array_equal(values(d), 3 * x)
    np.multiply(d, a, out=d)  # the block's cached views serve the new storage
    np.testing.assert_array_equal(values(d), 3 * x * x)


def test_every_allocation_that_does_not_zero_takes_one():
    x = np.arange(120.0).reshape(SHAPE)
    a = device(x)
    for make, expected in [
        (lambda: a + 1.0, x + 1),
        (lambda: a.sum(axis=2, keepdims=True), x.sum(axis=2, keepdims=True)),
        (lambda: a.astype(np.float64, copy=True), x),
        (lambda: gtstore.storage(x[::-1].copy(), device="gpu", managed=None), x[::-1]),
        (lambda: gtstore.full(SHAPE, 7.0, device="gpu", managed=None), np.full(SHAPE, 7.0)),
    ]:
        c = make()
        c += 0.0  # computed on: the engine's objects over it, which make it a spare
        address = device_address(c)
        del c
        _, hits = spares()
        r = make()
        assert device_address(r) == address and spares()[1] == hits + 1
        np.testing.assert_array_equal(values(r), expected)


def test_another_shape_of_the_same_size_takes_it():
    x = np.arange(120.0).reshape(SHAPE)
    c = device(x)  # made as b is (a result's spec may ask for a padded block)
    np.add(c, 1.0, out=c)  # a cached writable view of c's shape
    address = device_address(c)
    del c
    _, hits = spares()
    y = np.arange(120.0).reshape(4, 30)
    b = device(y)
    assert device_address(b) == address and spares()[1] == hits + 1
    np.add(b, 1.0, out=b)  # not through c's view
    np.testing.assert_array_equal(values(b), y + 1)
    np.testing.assert_array_equal(values(b * 2.0), 2 * (y + 1))


def test_zeros_take_none_and_mirrored_storages_take_mirrored_ones():
    a = device(np.ones(SHAPE))
    c = a + 1.0
    del c
    blocks, hits = spares()
    z = gtstore.zeros(SHAPE, device="gpu", managed=None)  # a spare holds old values
    assert spares() == (blocks, hits)
    np.testing.assert_array_equal(values(z), 0.0)
    m = gtstore.storage(np.ones(SHAPE), device="gpu")  # mirrored: a host side
    m.host_to_device()  # current on the device: computed there
    r = m + m
    assert spares() == (blocks, hits)  # not the device-only spare
    address = device_address(r)
    del r
    assert spares()[0] == blocks + 1
    r = m * 3.0
    assert device_address(r) == address and spares() == (blocks, hits + 1)
    assert r.sync_state.state == 2  # written on the device, from a spare in sync
    np.testing.assert_array_equal(np.asarray(r), 3.0)
    d = a * 3.0  # the device-only spare
    assert spares() == (blocks - 1, hits + 2)
    np.testing.assert_array_equal(values(d), 3.0)


def test_changing_the_host_sides_kind_releases_the_spares():
    m = gtstore.storage(np.ones(SHAPE), device="gpu")
    m.host_to_device()
    r = m + m
    del r
    assert spares()[0] == 1
    pinned = gtstore.pinned_host_sides()
    gtstore.set_pinned_host_sides(pinned)  # no change: kept
    assert spares()[0] == 1
    try:
        gtstore.set_pinned_host_sides(not pinned)
        assert spares()[0] == 0
    finally:
        gtstore.set_pinned_host_sides(pinned)


def test_an_array_of_the_device_memory_keeps_the_block_its_own():
    x = np.arange(120.0).reshape(SHAPE)
    a = device(x)
    c = a + 1.0
    address = device_address(c)
    array = c.to_ndarray()  # over the device memory, through the engine's block
    del c
    assert spares()[0] == 0
    d = a * 5.0
    assert device_address(d) != address
    np.testing.assert_array_equal(array, x + 1)
    np.testing.assert_array_equal(values(d), 5 * x)


def test_a_kept_operand_view_keeps_the_block_its_own():
    x = np.arange(120.0).reshape(SHAPE)
    a = device(x)
    c = a + 1.0
    np.add(c, 1.0, out=c)  # a cached writable view
    view = c.to_ndarray()
    del c
    assert spares()[0] == 0
    r = [a * 3.0 for _ in range(3)]
    np.testing.assert_array_equal(view, x + 2)
    for s in r:
        np.testing.assert_array_equal(values(s), 3 * x)


def test_a_dlpack_export_or_a_sync_state_keeps_the_block_its_own():
    x = np.arange(120.0).reshape(SHAPE)
    a = device(x)
    c = a + 1.0
    capsule = c.__dlpack__(max_version=(1, 0))  # holds the buffer
    del c
    assert spares()[0] == 0
    del capsule
    c = a + 1.0
    state = c.sync_state
    del c
    assert spares()[0] == 0  # the SyncState keeps the buffer, so the engine's objects stay
    del state
    assert spares()[0] == 1


def test_limits():
    a = device(np.ones(SHAPE))
    gtstore.set_cache_limit(0)  # turns the caches off, the spares with them
    c = a + 1.0
    del c
    assert spares()[0] == 0
    gtstore.set_cache_limit(10 * 8 * a.size)
    results = [gtstore.full((n,), 1.0, device="gpu", managed=None) + 1.0
               for n in range(100, 112)]
    sizes = [r.nbytes for r in results]
    del results
    blocks = gtstore.memory_stats()["spare_blocks"]
    held = gtstore.memory_stats()["spare_bytes"]
    assert 0 < blocks <= 8 and held <= 10 * 8 * a.size
    assert held >= sizes[-1]  # the newest kept, the oldest let go
    gtstore.set_cache_limit(0)
    assert gtstore.memory_stats()["spare_blocks"] == 0
    gtstore.set_cache_limit(1 << 30)
    c = a + 1.0
    del c
    assert spares()[0] == 1
    gtstore.clear_cache()
    assert gtstore.memory_stats()["spare_blocks"] == 0


def test_spares_are_live_buffers_until_cleared():
    gc.collect()
    gtstore.clear_cache()
    a = device(np.ones(SHAPE))
    before = gtstore.memory_stats()["live_buffers"]
    c = a + 1.0
    del c
    gc.collect()
    assert gtstore.memory_stats()["live_buffers"] == before + 1
    gtstore.clear_cache()
    assert gtstore.memory_stats()["live_buffers"] == before


def reuse_rounds(rounds):
    """Rounds in which a result whose last write is still queued on stream
    s1 (behind longer work) is released, and its block taken by a result
    computed on the host (NumPy's engine; device-only or mirrored) or
    filled on stream s2: wrong values counted."""
    s1, s2 = gtstore.Stream(), gtstore.Stream()
    busy = gtstore.zeros((128, 128, 16), device="gpu", managed=None)
    a = device(np.full(SHAPE, 3.0))
    m = gtstore.storage(np.full(SHAPE, 3.0), device="gpu")  # mirrored
    m.host_to_device()
    sources = [gtstore.full(SHAPE, float(v), device="gpu", managed=None)
               for v in range(1, rounds + 1)]
    wrong = 0
    for value in range(1, rounds + 1):
        for make, expected in [(lambda: a - a, 0.0),
                               (lambda: gtstore.full(SHAPE, -1.0, device="gpu", managed=None),
                                -1.0),
                               (lambda: m - m, 0.0)]:
            c = make()
            c += 0.0  # computed on: a spare once released
            address = device_address(c)
            with s1:
                for n in range(4):
                    busy[...] = float(n)
                c[...] = sources[value - 1]  # a device copy (a mirrored c: its device side)
            del c  # a spare while s1 may still write its device memory
            with s2:
                r = make()
            assert device_address(r) == address
            s1.synchronize()  # a write that ran late has landed by now
            wrong += not (values(r) == expected).all()
    return wrong


def test_a_spare_taken_on_another_stream_waits_for_its_work():
    assert reuse_rounds(8) == 0


def test_detector_a_spare_taken_without_the_wait_gives_wrong_values():
    skip_waits(True)
    try:
        wrong = reuse_rounds(8)
    finally:
        skip_waits(False)
    assert wrong > 0


@pytest.mark.skipif("libasan" in os.environ.get("LD_PRELOAD", ""),
                    reason="AddressSanitizer aborts where an allocation fails, and keeps freed "
                    "memory in quarantine")
def test_an_allocation_out_of_memory_releases_the_spares():
    """In a child process whose address space is capped: three spares of
    64 MiB are released, and their memory serves a 200 MiB storage that did
    not fit beside them."""
    code = textwrap.dedent(
        """
        import resource
        import numpy as np
        import gtstore as gts

        gts.use_gpu("emulated")
        a = gts.empty((8 << 20,), device="gpu", managed=None)  # 64 MiB
        results = [a + float(i) for i in range(3)]
        del results
        assert gts.memory_stats()["spare_blocks"] == 3
        with open("/proc/self/status") as f:
            vm = next(int(line.split()[1]) << 10 for line in f if line.startswith("VmSize"))
        resource.setrlimit(resource.RLIMIT_AS, (vm + (100 << 20), resource.RLIM_INFINITY))
        big = gts.empty((25 << 20,), device="gpu", managed=None)  # 200 MiB
        assert gts.memory_stats()["spare_blocks"] == 0
        big[...] = 1.0
        assert float(big.sum()) == 25 << 20
        print("ok")
        """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0 and "ok" in result.stdout, result.stderr[-2000:]
