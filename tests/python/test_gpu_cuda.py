"""GPU storages on a CUDA GPU, with CuPy: the same rules as on the emulated
device (test_gpu_emulated.py), checked through CuPy, plus what only CUDA
has (managed memory, the CUDA array interface, CuPy and DLPack exchange).

Skipped, with the reason, where there is no CUDA GPU, no CuPy, or where
gtstore's driver is another library than CuPy's (GTSTORE_LIBCUDA: CI runs
the suite on the fake driver of tests/c). ./dev gpu-check runs it with
GTSTORE_REQUIRE_CUDA=1, under which a missing GPU is an error, not a skip.
"""

import os

import numpy as np
import pytest

import gtstore


def cuda_reason():
    """Why these tests cannot run here, or None."""
    gtstore.use_gpu(None)
    try:
        gtstore.use_gpu("cuda")
    except Exception as error:  # noqa: BLE001 - the reason is the message
        reason = f"no CUDA GPU: {error}"
        if os.environ.get("GTSTORE_REQUIRE_CUDA"):  # ./dev gpu-check: a skip would hide it
            raise RuntimeError(f"GTSTORE_REQUIRE_CUDA is set, but there is {reason}") from error
        return reason
    finally:
        gtstore.use_gpu(None)
    if os.environ.get("GTSTORE_LIBCUDA"):
        # CuPy talks to the machine's driver: its memory and gtstore's are
        # not the same GPU's (CI loads the fake driver of tests/c this way)
        return (f"gtstore's CUDA driver is GTSTORE_LIBCUDA={os.environ['GTSTORE_LIBCUDA']}, "
                "not the one CuPy uses")
    try:
        import cupy
    except ImportError:
        return "CuPy is not installed"
    try:
        cupy.cuda.runtime.getDeviceCount()
    except Exception as error:  # noqa: BLE001 - CuPy's CUDA error, whatever its version
        return f"CuPy finds no GPU: {error}"
    return None


REASON = cuda_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")


@pytest.fixture(autouse=True)
def cuda_gpu():
    gtstore.use_gpu("cuda")
    yield
    gtstore.use_gpu(None)


def on_host(x):
    import cupy

    return cupy.asnumpy(x)


@pytest.mark.parametrize("managed, kind", [
    ("gt4py", gtstore.SoftwareManagedGPUStorage),
    (None, gtstore.GPUStorage),
    ("cuda", gtstore.CudaManagedGPUStorage),
])
def test_types_and_values(managed, kind):
    import cupy

    s = gtstore.full((6, 5, 4), 2.5, defaults="gt:gpu", managed=managed)
    assert type(s) is kind and s.device.startswith("cuda")
    device = s.to_cupy()
    assert isinstance(device, cupy.ndarray) and device.strides == s.strides
    np.testing.assert_array_equal(on_host(device), np.full((6, 5, 4), 2.5))
    assert s.__cuda_array_interface__["version"] == 3
    # the current stream: the legacy default stream (1), where the storage's
    # device work was queued; managed memory is ordered by the host (None)
    assert s.__cuda_array_interface__["stream"] == (None if managed == "cuda" else 1)


def test_sync_rule_through_cupy():
    s = gtstore.zeros((8, 8, 4), device="gpu")
    s[2:-2, 2:-2, :] = 1.0  # host
    assert s.sync_state.state == gtstore.SyncState.SYNC_HOST_DIRTY
    device = s.to_cupy()  # synced to the device, then marked
    assert float(device.sum()) == 4 * 4 * 4
    device[0, 0, 0] = 5.0  # a kernel's write
    assert float(s[0, 0, 0]) == 5.0  # synced back for the host read


def test_cupy_and_dlpack_exchange():
    import cupy

    s = gtstore.ones((3, 4), device="gpu", managed=None)
    a = cupy.asarray(s)  # the CUDA array interface: no copy
    a[1] = 7.0
    np.testing.assert_array_equal(on_host(s.to_cupy())[1], np.full(4, 7.0))
    b = cupy.from_dlpack(s)
    assert b.data.ptr == a.data.ptr
    c = gtstore.from_dlpack(cupy.arange(6.0).reshape(2, 3))  # a CUDA producer, no copy
    assert type(c) is gtstore.GPUStorage
    np.testing.assert_array_equal(on_host(c.to_cupy()), np.arange(6.0).reshape(2, 3))


def test_managed_memory_is_reachable_from_both_sides():
    s = gtstore.zeros((4, 4), device="gpu", managed="cuda")
    s.to_cupy()[...] = 3.0
    np.testing.assert_array_equal(np.asarray(s), np.full((4, 4), 3.0))


def test_arrays_gpu_presets_give_cupy_arrays():
    import cupy
    import gtstore.arrays as ga

    a = ga.full((5, 4, 3), 2.0, backend="gt:gpu", aligned_index=(1, 1, 0))
    assert isinstance(a, cupy.ndarray)
    assert a.strides == ga.plan((5, 4, 3), backend="gt:gpu", aligned_index=(1, 1, 0)).strides
    assert float(a.sum()) == 120.0


# ---- computing with storages: CuPy is the engine (docs/storage.md) ----------------------------


@pytest.mark.parametrize("managed, kind", [
    ("gt4py", gtstore.SoftwareManagedGPUStorage),
    (None, gtstore.GPUStorage),
    ("cuda", gtstore.CudaManagedGPUStorage),
])
def test_cupy_computes_by_dims(managed, kind):
    ij = gtstore.full((4, 5), 1.5, device="gpu", managed=managed, dims="IJ",
                      halo=((1, 1), (0, 0)))
    ij.to_cupy()  # the device side is current (a software-managed one computes there)
    k = gtstore.storage(np.arange(3.0), dims="K", device="gpu", managed=managed)
    r = ij * 2 + k  # IJ + K: an IJK storage, on the device
    assert type(r) is kind and r.dims == ("I", "J", "K") and r.shape == (4, 5, 3)
    np.testing.assert_array_equal(on_host(r.to_cupy()),
                                  np.broadcast_to(3.0 + np.arange(3.0), (4, 5, 3)))
    np.sqrt(r, out=r)  # in place
    np.testing.assert_allclose(on_host(r.to_cupy()),
                               np.sqrt(np.broadcast_to(3.0 + np.arange(3.0), (4, 5, 3))))


def test_cupy_with_host_operands_outputs_and_where():
    import cupy

    g = gtstore.full((4, 5), 1.5, device="gpu", managed=None, dims="IJ")
    h = gtstore.zeros((4, 5), dims="IJ")  # a host output: the result is copied to it
    with pytest.raises(ValueError, match="operand 1 is an array without dims of shape"):
        np.add(g, np.arange(5.0), out=h)  # 1-d against a 2-d result (the broadcasting rule)
    assert np.add(g, np.arange(5.0).reshape(1, 5), out=h) is h
    np.testing.assert_array_equal(np.asarray(h), 1.5 + np.broadcast_to(np.arange(5.0), (4, 5)))
    out = gtstore.full((4, 5), 7.0, device="gpu", managed=None, dims="IJ")
    mask = gtstore.storage(np.array([True, False, True, False, True]), dims="J")
    np.add(g, cupy.ones((4, 5)), out=out, where=mask)  # a CuPy array operand, where=
    expected = np.where(np.array([True, False, True, False, True]), 2.5, 7.0)
    np.testing.assert_array_equal(on_host(out.to_cupy()), np.broadcast_to(expected, (4, 5)))
    with pytest.raises(TypeError, match="not supported on a CUDA GPU"):
        np.add(g, g, order="F")


def test_cupy_reductions_and_assignment():
    g = gtstore.storage(np.arange(20.0).reshape(4, 5), dims="IJ", device="gpu", managed=None)
    column = g.sum(axis=0)
    assert type(column) is gtstore.GPUStorage and column.dims == ("J",)
    np.testing.assert_array_equal(on_host(column.to_cupy()), np.arange(20.0).reshape(4, 5).sum(0))
    assert float(g.max()) == 19.0
    t = gtstore.zeros((5, 4), dims="JI", device="gpu", managed=None)
    t[...] = g  # by dims, on the device
    np.testing.assert_array_equal(on_host(t.to_cupy()), np.arange(20.0).reshape(4, 5).T)
    import cupy

    with pytest.raises(ValueError, match=r"\(4,\)"):
        t[1:3] = cupy.arange(4.0)  # 1-d into a 2-d selection (the broadcasting rule)
    t[1:3] = cupy.arange(4.0).reshape(1, 4)  # a CuPy value, by position, broadcast
    np.testing.assert_array_equal(on_host(t.to_cupy())[1:3], np.broadcast_to(np.arange(4.0), (2, 4)))


# ---- CUDA arrays in every entry point; pickling; both sides (issue 20) -------------------------


def test_cupy_arrays_are_wrapped_copied_and_assigned():
    import cupy

    a = cupy.arange(24.0).reshape(2, 3, 4)
    s = gtstore.as_storage(a)  # no copy: the same device memory, kept alive
    assert type(s) is gtstore.GPUStorage and s.device == "cuda:0"
    assert s.__cuda_array_interface__["data"][0] == a.data.ptr
    s[0, 0, 0] = 100.0
    assert float(a[0, 0, 0]) == 100.0
    c = gtstore.storage(a)  # a copy, on the GPU like the data
    assert c.device == "cuda:0" and c.to_cupy().data.ptr != a.data.ptr
    h = gtstore.storage(a, device="cpu")
    assert type(h) is gtstore.CPUStorage
    np.testing.assert_array_equal(np.asarray(h), on_host(a))
    assert gtstore.zeros_like(a).device == "cuda:0"
    t = gtstore.zeros((2, 3, 4), device="gpu")
    t[...] = a
    np.testing.assert_array_equal(np.asarray(t), on_host(a))
    assert gtstore.as_storage(a, dims="KJI").dims == ("K", "J", "I")


def test_cupy_work_on_a_stream_is_complete_before_use():
    import cupy

    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        a = cupy.ones((2000, 2000))
        for _ in range(20):
            a *= 1.5
        h = gtstore.storage(a, device="cpu")  # DLPack: the producer orders its work first
        expected = 1.5 ** 20
    assert float(np.asarray(h).min()) == expected == float(np.asarray(h).max())


def test_torch_cuda_tensors_are_wrapped():
    torch = pytest.importorskip("torch")
    t = torch.arange(6.0, device="cuda").reshape(2, 3)
    s = gtstore.as_storage(t)
    assert s.device == "cuda:0"
    s[0, 0] = 5.0
    assert t[0, 0].item() == 5.0
    np.testing.assert_array_equal(np.asarray(gtstore.storage(t, device="cpu")),
                                  t.cpu().numpy())


def test_pickling_keeps_the_gpu():
    import pickle

    for managed, kind in (("gt4py", gtstore.SoftwareManagedGPUStorage),
                          (None, gtstore.GPUStorage), ("cuda", gtstore.CudaManagedGPUStorage)):
        s = gtstore.full((5, 4, 3), 2.0, defaults="gt:gpu", managed=managed, halo=(1, 1, 0))
        t = pickle.loads(pickle.dumps(s))
        assert type(t) is kind and t.device == s.device and t.halo == s.halo
        assert t.strides == s.strides and t.alignment_size == s.alignment_size
        np.testing.assert_array_equal(on_host(t.to_cupy()), on_host(s.to_cupy()))


def test_both_sides_from_numpy_and_cupy():
    import cupy

    host = np.zeros((3, 4))
    device = cupy.arange(12.0).reshape(3, 4)
    s = gtstore.as_storage(host, device, sync_state=gtstore.SyncState.SYNC_DEVICE_DIRTY)
    assert type(s) is gtstore.GT4PySyncedGPUStorage
    assert s.to_cupy().data.ptr == device.data.ptr
    s.device_to_host()
    np.testing.assert_array_equal(host, on_host(device))


def test_memory_of_another_gpu_is_refused():
    import cupy

    if cupy.cuda.runtime.getDeviceCount() < 2:
        pytest.skip("one CUDA GPU")
    with cupy.cuda.Device(1):
        a = cupy.zeros((2, 2))
    with pytest.raises(ValueError, match="another GPU than gtstore's"):
        gtstore.as_storage(a)


@pytest.mark.parametrize("managed", [None, "gt4py"])
def test_torch_reads_gpu_storages_through_dlpack(managed):
    """torch.from_dlpack of a GPU storage: a CUDA tensor over the same
    memory (the host side of a software-managed storage is not what it
    reads), with the storage's values, ordered after the work that wrote
    them on the default stream. (Managed memory is DLPack's
    kDLCUDAManaged, which torch does not import.)"""
    torch = pytest.importorskip("torch")
    s = gtstore.zeros((40, 30, 5), defaults="gt:gpu", managed=managed)
    s[...] = 2.5
    np.multiply(s, 3.0, out=s)  # queued: the export waits for it
    t = torch.from_dlpack(s)
    assert t.device.type == "cuda" and t.shape == s.shape
    assert t.data_ptr() == s.__cuda_array_interface__["data"][0]
    assert float(t.min()) == 7.5 == float(t.max())


def test_work_on_the_default_stream_is_queued_and_ordered():
    """Without a current Stream, ufuncs queue on CuPy's default stream (the
    legacy default stream) and return without synchronising; a host read
    waits for them."""
    import cupy

    assert cupy.cuda.get_current_stream().ptr == 0
    a = gtstore.ones((2000, 2000), device="gpu", managed=None)
    for _ in range(20):
        np.multiply(a, 1.5, out=a)
    assert a.__cuda_array_interface__["stream"] == 1  # what a consumer waits on
    h = gtstore.storage(a, device="cpu")
    assert float(np.asarray(h).min()) == 1.5 ** 20 == float(np.asarray(h).max())
    b = a + a  # a new storage, written on the same stream
    assert float(np.asarray(gtstore.storage(b, device="cpu")).max()) == 2 * 1.5 ** 20
