"""The engine's views of storages in CUDA memory, with real CuPy
(engine_view.c): cupy.ndarray over a MemoryPointer into an UnownedMemory
made once per buffer. The emulated device runs the same steps with NumPy
(test_gpu_engine.py); this file checks what only CuPy shows: the arrays'
device pointers are the storages' own, the memory outlives the storage
where an array or a result does, every device block is released, and
Python kernels of GPU signatures get CuPy arrays.

Skipped, with the reason, where test_gpu_cuda.py is (no CUDA GPU, no CuPy,
or the fake driver); ./dev gpu-check runs it with GTSTORE_REQUIRE_CUDA=1,
under which it must not skip.
"""

import gc

import numpy as np
import pytest

import gtstore
from test_gpu_cuda import REASON

pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")

SHAPE = (6, 5, 4)


@pytest.fixture(autouse=True)
def cuda_gpu():
    gtstore.use_gpu("cuda")
    yield
    gtstore.use_gpu(None)


def device(values, **kwargs):
    kwargs.setdefault("managed", None)
    return gtstore.storage(np.asarray(values), device="gpu", **kwargs)


def values(s):
    import cupy

    return cupy.asnumpy(s.to_cupy())


@pytest.mark.parametrize("managed", [None, "gt4py", "cuda"])
def test_ufuncs_out_and_where(managed):
    rng = np.random.default_rng(3)
    x, y = rng.random(SHAPE), rng.random(SHAPE)
    a, b = device(x, managed=managed), device(y, managed=managed)
    c = device(np.zeros(SHAPE), managed=managed)
    np.testing.assert_array_equal(values(a + b), x + y)
    for _ in range(3):  # the cached views, reused
        np.add(a, b, out=c)
        np.testing.assert_array_equal(values(c), x + y)
    np.multiply(c, 2.0, out=c)
    np.testing.assert_array_equal(values(c), 2 * (x + y))
    mask = x > 0.5
    np.subtract(a, b, out=c, where=device(mask))
    np.testing.assert_array_equal(values(c), np.where(mask, x - y, 2 * (x + y)))


def test_in_place_calls_give_cupy_one_array():
    """An in-place call (`c += a`, `out=` an input) passes CuPy the same
    array as input and output: CuPy copies an input that is another array
    over its output's memory first, from its own memory pool."""
    import cupy

    rng = np.random.default_rng(4)
    x, y = rng.random(SHAPE), rng.random(SHAPE)
    a, c = device(x), device(y)
    c += a  # the views made and cached
    pool = cupy.get_default_memory_pool()
    cupy.cuda.get_current_stream().synchronize()
    pool.free_all_blocks()
    before = pool.total_bytes()  # blocks other arrays still hold
    for _ in range(3):
        c += a
        np.multiply(c, 0.5, out=c)
        np.sin(c, out=c)
    assert pool.total_bytes() == before  # no copy of c was made (it would stay cached)
    expected = y + x
    for _ in range(3):
        expected = np.sin((expected + x) * 0.5)
    np.testing.assert_allclose(values(c), expected, rtol=1e-12)


def test_alternating_views_of_one_buffer():
    x = np.arange(60.0).reshape(6, 10)
    a, out = device(x), device(np.zeros((6, 10)))
    expected = np.zeros((6, 10))
    for step in range(3):
        np.add(a[1:, :], a[:-1, :], out=out[1:, :])
        expected[1:, :] = x[1:, :] + x[:-1, :]
        np.testing.assert_array_equal(values(out), expected)
        np.add(a[:, ::2], step, out=out[:, ::2])
        expected[:, ::2] = x[:, ::2] + step
        np.testing.assert_array_equal(values(out), expected)


def test_reductions_at_and_sort():
    x = np.random.default_rng(4).random(SHAPE)
    a = device(x)
    assert float(a.sum()) == pytest.approx(x.sum())
    np.testing.assert_allclose(values(a.sum(axis=2)), x.sum(axis=2))
    out = device(np.zeros(SHAPE[:2]))
    a.max(axis=2, out=out)
    np.testing.assert_array_equal(values(out), x.max(axis=2))
    v = device(np.array([3.0, 1.0, 2.0]))
    np.add.at(v, [0, 0, 2], 1.0)
    v.sort()
    np.testing.assert_array_equal(values(v), [1.0, 3.0, 5.0])


def test_views_are_the_storages_memory():
    import cupy

    x = np.arange(48.0).reshape(4, 3, 4)
    a = device(x)
    inner = a[1:-1]
    r = np.positive(inner)  # computed from a view of a's own memory
    np.testing.assert_array_equal(values(r), x[1:-1])
    assert inner.to_cupy().data.ptr == a.to_cupy().data.ptr + a.strides[0]
    assert isinstance(a.to_cupy(), cupy.ndarray)


def test_lifetimes_and_freed_blocks():
    import cupy

    def live():
        gc.collect()
        cupy.cuda.get_current_stream().synchronize()
        gtstore.clear_cache()  # the spare blocks (test_engine_spares.py)
        stats = gtstore.memory_stats()
        return stats["live_buffers"], stats["live_bytes"]

    x = np.arange(24.0).reshape(2, 3, 4)
    before = live()
    a, b = device(x), device(2 * x)
    r = a + b
    v = b[1:]
    del a, b
    gc.collect()
    filler = [device(np.full(x.shape, 9.0)) for _ in range(4)]  # reuse freed memory, if any
    np.testing.assert_array_equal(values(r), 3 * x)
    np.testing.assert_array_equal(values(v + 1.0), 2 * x[1:] + 1)
    del filler, r, v
    assert live() == before  # the engine's cached objects hold no buffer beyond its storages


def test_spare_blocks_with_cupys_objects():
    """A result's block and CuPy's objects over it serve the next result of
    its size (engine_spares.c; the emulated device's case is
    test_engine_spares.py); a CuPy array a user kept, or a view of one,
    keeps the block its own."""
    import cupy

    def spares():
        gc.collect()
        stats = gtstore.memory_stats()
        return stats["spare_blocks"], stats["spare_hits"]

    x = np.arange(120.0).reshape(SHAPE)
    a, b = device(x), device(2 * x)
    gtstore.clear_cache()
    c = a + b
    address = c.to_cupy().data.ptr  # the array dies at once: nothing kept
    del c
    blocks, hits = spares()
    assert blocks == 1
    d = a + b
    assert d.to_cupy().data.ptr == address and spares() == (0, hits + 1)
    np.testing.assert_array_equal(values(d), 3 * x)
    as_array = lambda p: cupy.ndarray(SHAPE, cupy.float64, p)  # noqa: E731
    for keep, read, expected in [  # each pass from no spare block
        (lambda s: s.to_cupy(), lambda k: k, 2 * x),
        (lambda s: s.to_cupy()[1:], lambda k: k, 2 * x[1:]),  # another MemoryPointer
        (lambda s: s.to_cupy().data, as_array, 2 * x),  # the MemoryPointer alone
    ]:
        gtstore.clear_cache()
        r = a * 2.0
        kept = keep(r)
        del r
        assert spares()[0] == 0
        others = [a * 5.0 for _ in range(3)]
        np.testing.assert_array_equal(cupy.asnumpy(read(kept)), expected)
        for s in others:
            np.testing.assert_array_equal(values(s), 5 * x)
        del kept, others, s
    gtstore.clear_cache()


def test_a_spare_on_another_cupy_stream_waits_for_its_work():
    """The block of a result written on one CuPy stream, taken by a result
    written on another, holds the later values."""
    import cupy

    x = np.arange(120.0).reshape(SHAPE)
    a = device(x)
    big = device(np.zeros((256, 256, 64)))
    s1, s2 = cupy.cuda.Stream(non_blocking=True), cupy.cuda.Stream(non_blocking=True)
    for value in range(1, 6):
        with s1:
            for _ in range(4):
                np.sin(big, out=big)  # longer work first
            c = a + float(value)
            address = c.to_cupy().data.ptr
        del c
        with s2:
            r = a * 0.0
            assert r.to_cupy().data.ptr == address
        s1.synchronize()
        s2.synchronize()
        np.testing.assert_array_equal(values(r), 0.0)


def test_python_kernels_get_cupy_arrays():
    """Signature.call and KernelCaller on a GPU signature hand the kernel
    CuPy arrays over the fields' own memory in the kernel's order (a CuPy
    array already in that order as it is), and order it on CuPy's current
    stream: after a fill queued there, before the host's read."""
    import cupy
    from gtstore import Field, KernelCaller, Signature

    sig = Signature(out=Field["f8", "IJK"], inp=Field["f8", "IJK"], writes=["out"], device="gpu")
    seen = {}

    def kernel(domain, origins, out, inp):
        seen.update(out=out, inp=inp)
        out[...] = inp * 2.0 + 1.0

    x = np.arange(120.0).reshape(SHAPE)
    inp = gtstore.storage(x.T.copy(), device="gpu", managed=None, dims="KJI")
    out = gtstore.zeros(SHAPE, device="gpu")  # mirrored: the host side syncs from the kernel's
    sig.call(kernel, out, inp)
    assert type(seen["out"]) is cupy.ndarray and seen["inp"].shape == SHAPE
    assert seen["inp"].strides == tuple(reversed(inp.strides))
    assert seen["inp"].data.ptr == inp.__cuda_array_interface__["data"][0]
    np.testing.assert_array_equal(np.asarray(out), 2 * x + 1)
    raw = cupy.zeros(SHAPE)
    sig.call(kernel, raw, inp)
    assert seen["out"] is raw
    caller = KernelCaller(sig, kernel)
    big_in = device(np.zeros((256, 256, 64)))
    big_out = gtstore.zeros((256, 256, 64), device="gpu")
    with cupy.cuda.Stream(non_blocking=True):
        for value in range(1, 6):
            for _ in range(3):
                np.sin(big_in, out=big_in)  # longer work first
            big_in[...] = float(value)
            caller(big_out, big_in)
            assert (np.asarray(big_out) == 2 * value + 1).all()


def test_work_on_managed_memory_completes_on_return():
    """No event orders CUDA managed memory (libgtstore's own work on it
    waits for the device and completes on return): a ufunc that touches it
    on a CuPy stream has completed when it returns, so that work of another
    stream cannot overtake it."""
    import cupy

    big = (256, 256, 80)
    x = np.random.default_rng(4).random(big)
    managed = device(x, managed="cuda")
    plain = device(x)
    with cupy.cuda.Stream(non_blocking=True) as stream:
        for _ in range(3):
            result = managed * 2.0 + plain
            assert stream.done
    np.testing.assert_array_equal(values(result), 3 * x)
