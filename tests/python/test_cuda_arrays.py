"""Other libraries' GPU arrays in every entry point (docs/arrays.md, "GPU
arrays"), the two sides of a storage given apart (``device_data=``,
docs/storage.md) and pickling GPU storages.

The arrays are objects that describe the memory of a gtstore GPU storage
the way CuPy, Numba or torch do: through ``__cuda_array_interface__`` only
(``CudaArray``) or through ``__dlpack__`` on a device (``DLPackArray``). On
every machine that memory is the emulated device's (its addresses fault if
read as host memory); ``test_fake_driver`` runs the CUDA path on the fake
driver (tests/c/fake_cuda.c) in a child process. Real CuPy arrays are
tested in test_gpu_cuda.py where CuPy and a GPU exist.
"""

import glob
import json
import os
import pickle
import textwrap

import numpy as np
import pytest

import gtstore
import gtstore.arrays as ga
from conftest import CudaArray, device_address, run_python

S = gtstore.SyncState
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(autouse=True)
def emulated_gpu():
    gtstore.use_gpu("emulated")
    yield
    gtstore.use_gpu(None)


class DLPackArray:
    """A GPU array that speaks DLPack only (as JAX does): its capsules are
    those of a gtstore storage on the device."""

    def __init__(self, storage):
        self.storage = storage
        self.calls = []

    def __dlpack__(self, **kwargs):
        self.calls.append(kwargs)
        return self.storage.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.storage.__dlpack_device__()


def device_values(shape=(4, 5, 3), dtype="f8", **kwargs):
    """A device-only storage holding 1, 2, 3, ... (and the values)."""
    values = np.arange(1, np.prod(shape) + 1).astype(dtype).reshape(shape)
    return gtstore.storage(values, device="gpu", managed=None, **kwargs), values


def on_host(storage):
    return np.asarray(gtstore.storage(storage, device="cpu"))


# ---- the CUDA array interface ------------------------------------------------------------------


@pytest.mark.parametrize("version", [2, 3])
def test_as_storage_wraps_cuda_array_interface_without_copy(version):
    memory, values = device_values()
    producer = CudaArray(memory, version=version)
    gtstore.reset_transfer_counts()
    s = gtstore.as_storage(producer)
    assert type(s) is gtstore.GPUStorage and s.device == "emulated"
    assert device_address(s) == device_address(memory)  # the same memory
    assert gtstore.transfer_counts()["to_device"] == 0
    assert s.dims == ("I", "J", "K") and s.strides == memory.strides
    np.testing.assert_array_equal(on_host(s), values)
    s[1, 1, 1] = -1.0  # a write through the storage is the producer's
    assert float(on_host(memory)[1, 1, 1]) == -1.0


def test_as_storage_keeps_the_producer_alive():
    memory, values = device_values()
    s = gtstore.as_storage(CudaArray(memory))
    del memory  # only the producer (held by s) keeps the memory now
    import gc

    gc.collect()
    np.testing.assert_array_equal(on_host(s), values)


def assert_read_only(s):
    with pytest.raises(ValueError, match="read-only"):
        s[0, 0, 0] = 1.0


def test_read_only_producers_stay_read_only():
    memory, _ = device_values()
    s = gtstore.as_storage(CudaArray(memory, readonly=True))
    assert_read_only(s)
    assert_read_only(s[1:])  # and its views
    gtstore.storage(CudaArray(memory, readonly=True))[0, 0, 0] = 1.0  # a copy is ours
    dl = gtstore.as_storage(DLPackArray(s))
    assert_read_only(dl)  # DLPack 1.x carries the flag


def test_dims_from_gt_dims_else_the_argument():
    memory, values = device_values((3, 4))
    assert gtstore.as_storage(CudaArray(memory, dims="KJ")).dims == ("K", "J")
    assert gtstore.as_storage(CudaArray(memory), dims="IK").dims == ("I", "K")
    assert gtstore.storage(CudaArray(memory, dims="JK")).dims == ("J", "K")
    assert gtstore.zeros_like(CudaArray(memory, dims="KI")).dims == ("K", "I")


def test_storage_copies_onto_the_device_device_names():
    memory, values = device_values()
    c = gtstore.storage(CudaArray(memory))  # the data's device: the GPU
    assert type(c) is gtstore.SoftwareManagedGPUStorage
    assert device_address(c) != device_address(memory)
    np.testing.assert_array_equal(np.asarray(c), values)
    h = gtstore.storage(CudaArray(memory), device="cpu")
    assert type(h) is gtstore.CPUStorage
    np.testing.assert_array_equal(np.asarray(h), values)
    cast = gtstore.storage(CudaArray(memory), dtype="f4", device="cpu", dims="KJI")
    assert cast.dtype == np.float32 and cast.dims == ("K", "J", "I")
    np.testing.assert_array_equal(np.asarray(cast), values.astype("f4"))  # by position
    g = gtstore.storage(CudaArray(memory), managed=None, defaults="gt:gpu")
    assert type(g) is gtstore.GPUStorage and g.alignment_size == 256


def test_like_functions_take_the_device_and_geometry():
    memory, _ = device_values((6, 5))
    z = gtstore.zeros_like(CudaArray(memory))
    assert z.shape == (6, 5) and z.device == "emulated"
    assert float(on_host(z).sum()) == 0.0
    f = gtstore.full_like(CudaArray(memory), 2.0, device="cpu")
    assert type(f) is gtstore.CPUStorage and float(np.asarray(f).sum()) == 60.0


def test_from_dlpack_and_arrays_functions():
    memory, values = device_values((4, 3))
    v = gtstore.from_dlpack(DLPackArray(memory))
    assert device_address(v) == device_address(memory)
    a = ga.from_array(CudaArray(memory), backend="gt:cpu_ifirst")  # a host array
    assert isinstance(a, np.ndarray)
    np.testing.assert_array_equal(a, values)
    e = ga.zeros_like(CudaArray(memory), dtype="f4")
    assert e.shape == (4, 3) and e.dtype == np.float32


# ---- GDP-3's data interface with a "gpu" entry --------------------------------------------------


class GpuInterface:
    """GDP-3's data interface of device memory: a "gpu" entry (the CUDA
    array interface of ``memory``) and, given ``host``, a host entry; every
    entry's "acquire" records its key (``acquired``)."""

    def __init__(self, memory, host=None, **keys):
        self.memory, self.host, self.acquired = memory, host, []
        self.__gt_data_interface__ = {
            "gpu": {**CudaArray(memory).__cuda_array_interface__, **keys,
                    "acquire": lambda: self.acquired.append("gpu")}}
        if host is not None:
            self.__gt_data_interface__[None] = {
                **host.__array_interface__, **keys, "acquire": lambda: self.acquired.append(None)}


def test_as_storage_reads_a_gpu_data_interface_entry():
    """Only a "gpu" entry: a storage over that device memory, as a CUDA
    array is imported (as_storage said the object had no memory)."""
    memory, values = device_values((4, 5))
    obj = GpuInterface(memory, dims="JK", halo=((1, 0), (0, 2)))
    s = gtstore.as_storage(obj)
    assert obj.acquired == ["gpu"]
    assert type(s) is gtstore.GPUStorage and device_address(s) == device_address(memory)
    assert s.dims == ("J", "K") and s.halo == ((1, 0), (0, 2))
    c = gtstore.storage(obj, device="cpu")  # a copy from the device
    assert type(c) is gtstore.CPUStorage and c.dims == ("J", "K")
    np.testing.assert_array_equal(np.asarray(c), values)
    assert obj.acquired == ["gpu", "gpu"]


def test_the_entry_read_is_the_asked_devices():
    """Both entries: the host one unless the call asks for the GPU (device=,
    gpu=, a GPU preset); only the entry read is acquired."""
    memory, values = device_values((4, 5))
    host_copy = values.copy()
    obj = GpuInterface(memory, host=host_copy)
    s = gtstore.as_storage(obj)
    assert type(s) is gtstore.CPUStorage and np.shares_memory(np.asarray(s), host_copy)
    assert obj.acquired == [None]
    for asked in ({"device": "gpu"}, {"gpu": True}):
        obj.acquired.clear()
        g = gtstore.as_storage(obj, **asked)
        assert device_address(g) == device_address(memory) and obj.acquired == ["gpu"], asked
    obj.acquired.clear()
    host_copy[...] = -1  # the entry not read
    np.testing.assert_array_equal(on_host(gtstore.storage(obj, defaults="gt:gpu")), values)
    assert obj.acquired == ["gpu"]


def test_assignment_reads_the_gpu_entry_first():
    """GDP-3's "Choosing the Device": a value with a "gpu" entry is on the
    GPU: that entry is acquired and read (a device copy into a GPU storage,
    no host transfer), whatever its host entry says."""
    memory, values = device_values((4, 5))
    stale = np.zeros((4, 5))
    obj = GpuInterface(memory, host=stale)
    for target in (gtstore.zeros((4, 5)), gtstore.zeros((4, 5), device="gpu"),
                   gtstore.zeros((4, 5), device="gpu", managed=None)):
        obj.acquired.clear()
        gtstore.reset_transfer_counts()
        target[...] = obj
        counts = gtstore.transfer_counts()
        assert obj.acquired == ["gpu"]
        if type(target) is not gtstore.CPUStorage:
            assert counts["to_device"] == counts["to_host"] == 0, counts
        np.testing.assert_array_equal(on_host(target), values)
    broadcast = gtstore.zeros((4, 5, 2), device="gpu", managed=None)
    broadcast[..., 1] = GpuInterface(memory, dims="IJ")
    np.testing.assert_array_equal(on_host(broadcast)[..., 1], values)
    by_position = gtstore.zeros((3, 4, 5), device="gpu", managed=None)
    by_position[...] = GpuInterface(memory)  # NumPy's broadcasting, through the host
    np.testing.assert_array_equal(on_host(by_position), np.broadcast_to(values, (3, 4, 5)))


def test_ufunc_operands_read_the_gpu_entry():
    """Labelled, a "gpu" entry is a device operand: the result is computed
    on the GPU; without dims it is an array without dims (host values)."""
    memory, values = device_values((4,))
    s = gtstore.storage(np.arange(12.0).reshape(3, 4), dims="JK")
    obj = GpuInterface(memory, dims="K")
    r = s + obj
    assert obj.acquired == ["gpu"] and type(r) is gtstore.GPUStorage
    np.testing.assert_array_equal(on_host(r), np.asarray(s) + values)
    flat, flat_values = device_values((1, 4))
    r = np.subtract(s, GpuInterface(flat))
    np.testing.assert_array_equal(on_host(r), np.asarray(s) - flat_values)


def test_assignment_values_from_device_arrays():
    memory, values = device_values((4, 5))
    for target in (gtstore.zeros((4, 5)), gtstore.zeros((4, 5), device="gpu"),
                   gtstore.zeros((4, 5), device="gpu", managed=None)):
        target[...] = CudaArray(memory)
        np.testing.assert_array_equal(on_host(target), values)
        target[...] = DLPackArray(memory)
        np.testing.assert_array_equal(on_host(target), values)


def test_dlpack_device_producers_are_wrapped():
    memory, values = device_values()
    producer = DLPackArray(memory)
    s = gtstore.as_storage(producer)
    assert type(s) is gtstore.GPUStorage and device_address(s) == device_address(memory)
    assert producer.calls and "max_version" in producer.calls[0]
    np.testing.assert_array_equal(on_host(gtstore.storage(producer, device="cpu")), values)


def test_stream_is_waited_on_and_checked():
    memory, _ = device_values()
    for stream in (1, 2):  # the default streams: nothing pending on the emulated device
        assert gtstore.as_storage(CudaArray(memory, stream=stream)).shape == memory.shape
    with pytest.raises(ValueError, match=r"data.__cuda_array_interface__\['stream'\]: 0 is not"):
        gtstore.as_storage(CudaArray(memory, stream=0))
    with pytest.raises(ValueError, match="data: stream: 12345 names a CUDA stream, and the memory "
                                         "is on emulated"):
        gtstore.as_storage(CudaArray(memory, stream=12345))
    with pytest.raises(TypeError, match="stream"):
        gtstore.storage(CudaArray(memory, stream="default"))


def test_bad_interfaces_are_clear_errors():
    memory, _ = device_values((3, 4))
    with pytest.raises(ValueError, match=r"\['mask'\]: masked arrays are not supported"):
        gtstore.as_storage(CudaArray(memory, mask=object()))
    with pytest.raises(TypeError, match="needs 'shape', 'typestr' and 'data'"):
        gtstore.as_storage(_Bare({"shape": (3, 4)}))
    host = np.zeros((3, 4))
    with pytest.raises(ValueError, match="data: address .* is not the memory of a device"):
        gtstore.as_storage(_Bare({"shape": (3, 4), "typestr": "<f8",
                                  "data": (host.ctypes.data, False), "version": 3}))
    with pytest.raises(ValueError, match=r"strides'\]: 1 strides for 2 dimensions"):
        gtstore.as_storage(CudaArray(memory, strides=(8,)))


class _Bare:
    def __init__(self, interface):
        self.__cuda_array_interface__ = interface


def test_binding_reads_device_arrays():
    from gtstore import Field, FieldWarning, Signature

    sig = Signature(out=Field["f8", "IJK"], inp=Field["f8", "IJK"], writes=["out"])
    memory, values = device_values((3, 4, 2))
    out = gtstore.zeros((3, 4, 2))
    with pytest.warns(FieldWarning, match="inp: no buffer on the cpu"):
        call = sig.bind(out, CudaArray(memory))  # copied in for a host stencil
    assert call["inp"].shape == (3, 4, 2)
    gpu = Signature(out=Field["f8", "IJK"], inp=Field["f8", "IJK"], writes=["out"], device="gpu")
    call = gpu.bind(CudaArray(memory), DLPackArray(memory))
    assert call["inp"].data == device_address(memory) == call["out"].data


# ---- both sides at once (GDP-3's final text) ------------------------------------------------------


def test_wrap_host_and_device_buffers_as_one_storage():
    memory, values = device_values((4, 5))
    host = np.zeros((4, 5))
    s = gtstore.as_storage(data=host, device_data=CudaArray(memory),
                           sync_state=S.SYNC_DEVICE_DIRTY)
    assert type(s) is gtstore.GT4PySyncedGPUStorage
    assert s.sync_state.state == S.SYNC_DEVICE_DIRTY
    assert device_address(s) == device_address(memory)
    np.testing.assert_array_equal(s.to_numpy(), values)  # synced into the user's host buffer
    np.testing.assert_array_equal(host, values)
    host[...] = 0.0  # behind gtstore's back: declared, then synced
    s.set_host_modified()
    s.host_to_device()
    np.testing.assert_array_equal(on_host(memory), np.zeros((4, 5)))  # the device side follows


def test_empty_sides_of_any_strides():
    """An array of no elements has no offsets to agree on: its two sides
    wrap whatever strides they have (NumPy's export of an empty array gives
    C-order strides, a device storage its layout's)."""
    device = gtstore.zeros((4, 0, 6), device="gpu", managed=None, layout="KJI")
    host = np.zeros((4, 0, 6))
    assert device.strides != memoryview(host).strides
    s = gtstore.as_storage(host, CudaArray(device))
    assert s.shape == (4, 0, 6) and s.size == 0


def test_device_data_default_state_is_data_current():
    memory, _ = device_values((2, 3))
    host = np.full((2, 3), 7.0)
    s = gtstore.as_storage(host, CudaArray(memory))
    assert s.sync_state.state == S.SYNC_HOST_DIRTY
    s.host_to_device()
    np.testing.assert_array_equal(on_host(memory), host)


def test_sync_state_of_a_storage_shares_its_state():
    original = gtstore.zeros((4, 5), device="gpu", halo=((1, 1), (0, 0)))
    original[...] = 1.0
    host, device = original.to_numpy(), original  # the buffers, extracted
    s = gtstore.as_storage(host, device, sync_state=original.sync_state)
    assert s.sync_state is original.sync_state
    s[0, 0] = 5.0  # a host write through the new storage
    assert original.sync_state.state == S.SYNC_HOST_DIRTY
    assert float(on_host(original)[0, 0]) == 5.0
    inner = gtstore.as_storage(host[1:3], CudaArray(original[1:3]), sync_state=original.sync_state)
    assert inner.sync_state is original.sync_state and inner.shape == (2, 5)
    other = gtstore.zeros((4, 5), device="gpu")
    with pytest.raises(ValueError, match="sync_state: data .* and device_data .* are not the same"):
        gtstore.as_storage(host, other, sync_state=original.sync_state)
    with pytest.raises(ValueError, match="sync_state: the state of a storage without a host"):
        gtstore.as_storage(host, device, sync_state=gtstore.zeros((4, 5)).sync_state)


def test_both_sides_of_one_storage_keep_its_state():
    """as_storage(t, t): the two sides are t's, whose host side may be
    stale; the new storage shares t's SyncState (GDP-3: views of one buffer
    share one), and a copy starts from t's state. Before, it declared the
    host side current and a sync overwrote t's device values."""
    t = gtstore.full((3, 4), 2.0, device="gpu")
    assert t.sync_state.state == S.SYNC_DEVICE_DIRTY  # the fill ran on the device
    v = gtstore.as_storage(t, t)
    assert v.sync_state is t.sync_state
    v.synchronize()
    assert float(t[0, 0]) == 2.0 and float(v[0, 0]) == 2.0
    u = gtstore.full((3, 4), 3.0, device="gpu")
    c = gtstore.storage(u, u)
    assert c.sync_state is not u.sync_state and c.sync_state.state == S.SYNC_DEVICE_DIRTY
    np.testing.assert_array_equal(np.asarray(c), np.full((3, 4), 3.0))
    with pytest.raises(ValueError, match="sync_state: data and device_data are the two sides "
                                         "of one storage, whose state is its own"):
        gtstore.as_storage(u, u, sync_state=S.SYNC_CLEAN)
    assert gtstore.as_storage(u, u, sync_state=u.sync_state).sync_state is u.sync_state
    inner = gtstore.as_storage(u[1:], u[1:])  # two views of the same elements
    assert inner.sync_state is u.sync_state and inner.shape == (2, 4)
    with pytest.raises(ValueError, match="^device_data: other elements of data's storage"):
        gtstore.as_storage(u[0:1], u[2:3])


def test_storage_copies_both_sides():
    memory, values = device_values((3, 4))
    host = np.full((3, 4), 2.0)
    c = gtstore.storage(host, CudaArray(memory), sync_state=S.SYNC_CLEAN)
    assert type(c) is gtstore.SoftwareManagedGPUStorage and c.sync_state.state == S.SYNC_CLEAN
    assert device_address(c) != device_address(memory)
    c.set_device_modified()
    c.device_to_host()  # the device side holds device_data's values
    np.testing.assert_array_equal(c.to_numpy(), values)
    w = gtstore.storage(host, CudaArray(memory), copy=False)  # wraps
    assert device_address(w) == device_address(memory)


def test_both_sides_are_checked():
    memory, _ = device_values((4, 5))
    with pytest.raises(ValueError, match=r"device_data: shape \(4, 5\) .* data has shape \(4, 4\)"):
        gtstore.as_storage(np.zeros((4, 4)), CudaArray(memory))
    with pytest.raises(ValueError, match="dtype float64, and data has shape .* dtype float32"):
        gtstore.as_storage(np.zeros((4, 5), "f4"), CudaArray(memory))
    with pytest.raises(ValueError, match="device_data: stride 40 bytes in dimension 0, and data's"):
        gtstore.as_storage(np.zeros((4, 5), order="F"), CudaArray(memory))
    with pytest.raises(ValueError, match="layout: .* does not match"):
        gtstore.as_storage(np.zeros((4, 5)), CudaArray(memory), layout=(1, 0))
    with pytest.raises(ValueError, match="device_data: got numpy.ndarray, which is not in device "
                                         "memory"):
        gtstore.as_storage(np.zeros((4, 5)), np.zeros((4, 5)))
    with pytest.raises(ValueError, match="managed: a host and a device buffer"):
        gtstore.as_storage(np.zeros((4, 5)), CudaArray(memory), managed=None)
    with pytest.raises(ValueError, match="sync_state: expected None, .* got 7"):
        gtstore.as_storage(np.zeros((4, 5)), CudaArray(memory), sync_state=7)
    with pytest.raises(TypeError, match="sync_state: expected None"):
        gtstore.as_storage(np.zeros((4, 5)), CudaArray(memory), sync_state="host")
    with pytest.raises(ValueError, match="sync_state: .* needs both"):
        gtstore.as_storage(np.zeros((4, 5)), sync_state=S.SYNC_CLEAN)
    with pytest.raises(ValueError, match="sync_state: .* needs both"):
        gtstore.as_storage(device_data=CudaArray(memory), sync_state=S.SYNC_CLEAN)


def test_device_data_alone():
    """GDP-3's final text: device_data is the device buffer; alone,
    as_storage wraps it (a device-only storage) and storage copies it into
    a new storage with a device side."""
    memory, values = device_values((3, 4))
    w = gtstore.as_storage(device_data=CudaArray(memory))
    assert type(w) is gtstore.GPUStorage and device_address(w) == device_address(memory)
    assert gtstore.storage(device_data=CudaArray(memory), copy=False).data == w.data
    c = gtstore.storage(device_data=CudaArray(memory), dims="JI")
    assert type(c) is gtstore.SoftwareManagedGPUStorage and c.dims == ("J", "I")
    assert device_address(c) != device_address(memory)
    np.testing.assert_array_equal(on_host(c), values)
    only = gtstore.storage(device_data=memory, managed=None)  # a storage on the GPU is one too
    assert type(only) is gtstore.GPUStorage
    np.testing.assert_array_equal(on_host(only), values)
    with pytest.raises(ValueError, match="device='cpu': storage\\(device_data=...\\) copies a "
                                         "device buffer into a storage with a device side"):
        gtstore.storage(device_data=CudaArray(memory), device="cpu")
    with pytest.raises(ValueError, match="device_data: got numpy.ndarray, which is not in device "
                                         "memory"):
        gtstore.as_storage(device_data=np.zeros((3, 4)))
    with pytest.raises(ValueError, match="dtype: storage\\(copy=False\\) wraps"):
        gtstore.storage(device_data=CudaArray(memory), copy=False, dtype="f4")


def test_device_data_alone_reads_a_data_interface_once_on_the_gpu():
    """device_data is device memory: of an object with both entries its
    "gpu" entry is read (as_storage gave a CPUStorage over the host entry),
    and acquired once (the check and the read each acquired it)."""
    memory, values = device_values((3, 4))
    for copy, kind in ((False, gtstore.GPUStorage), (True, gtstore.SoftwareManagedGPUStorage)):
        obj = GpuInterface(memory, host=np.zeros((3, 4)), dims="JK")
        s = gtstore.storage(device_data=obj, copy=copy)
        assert type(s) is kind and s.dims == ("J", "K") and obj.acquired == ["gpu"], copy
        np.testing.assert_array_equal(on_host(s), values)
    obj = GpuInterface(memory, host=np.zeros((3, 4)))
    w = gtstore.as_storage(device_data=obj)
    assert type(w) is gtstore.GPUStorage and device_address(w) == device_address(memory)
    assert obj.acquired == ["gpu"]


# ---- pickling ----------------------------------------------------------------------------


@pytest.mark.parametrize("managed, kind", [
    ("gt4py", gtstore.SoftwareManagedGPUStorage),
    (None, gtstore.GPUStorage),
    ("cuda", gtstore.CudaManagedGPUStorage),
])
def test_pickling_keeps_type_device_and_parameters(managed, kind):
    s = gtstore.zeros((6, 5, 3), defaults="gt:gpu", halo=((2, 2), (1, 1), (0, 0)), managed=managed,
                      dims="IJK", aligned_index=(2, 1, 0))
    s[...] = np.arange(90.0).reshape(6, 5, 3)
    t = pickle.loads(pickle.dumps(s))
    assert type(t) is kind and t.device == s.device
    for name in ("shape", "strides", "dims", "halo", "layout", "alignment_size", "aligned_index",
                 "defaults"):
        assert getattr(t, name) == getattr(s, name), name
    np.testing.assert_array_equal(on_host(t), on_host(s))
    assert t.sync_state.state == s.sync_state.state


def test_pickling_keeps_the_sync_state():
    s = gtstore.zeros((3, 4), device="gpu")
    s[...] = 1.0  # host write: the host side is ahead
    t = pickle.loads(pickle.dumps(s))
    assert t.sync_state.state == S.SYNC_HOST_DIRTY
    s.to_ndarray()  # the device side is ahead now; pickling reads it (synced to the host)
    u = pickle.loads(pickle.dumps(s))
    assert u.sync_state.state == S.SYNC_CLEAN == s.sync_state.state
    np.testing.assert_array_equal(on_host(u), np.ones((3, 4)))


def test_unpickling_without_a_gpu_falls_back_to_the_host_with_a_warning():
    s = gtstore.full((3, 4), 2.5, device="gpu", halo=((1, 1), (0, 0)))
    data = pickle.dumps(s)
    gtstore.use_gpu(None)
    if gtstore.gpu() is not None:  # a CUDA GPU plays it now: the storage goes there
        assert type(pickle.loads(data)) is gtstore.SoftwareManagedGPUStorage
        return
    with pytest.warns(RuntimeWarning, match=r"without a GPU .* CPUStorage .*device='cpu'"):
        t = pickle.loads(data)
    assert type(t) is gtstore.CPUStorage and t.halo == s.halo
    np.testing.assert_array_equal(np.asarray(t), np.full((3, 4), 2.5))


# ---- GDP-3's final names ----------------------------------------------------------------


def test_final_gdp3_names():
    assert gtstore.GT4PySyncedGPUStorage is gtstore.SoftwareManagedGPUStorage
    assert gtstore.CUDASyncedGPUStorage is gtstore.CudaManagedGPUStorage
    assert gtstore.CUDAManagedGPUStorage is gtstore.CudaManagedGPUStorage
    assert gtstore.Storage.SyncState is gtstore.SyncState
    assert gtstore.CPUStorage.SyncState.SYNC_HOST_DIRTY == S.SYNC_HOST_DIRTY
    assert type(gtstore.zeros((2,), device="gpu", managed="cuda")) is gtstore.CUDASyncedGPUStorage


# ---- the CUDA path on the fake driver -----------------------------------------------------


def sanitized(build):
    """Whether a meson build directory was configured with sanitizers (its
    libraries cannot load into an uninstrumented interpreter)."""
    try:
        with open(os.path.join(build, "meson-info", "intro-buildoptions.json")) as f:
            options = {o["name"]: o["value"] for o in json.load(f)}
    except (OSError, ValueError, KeyError):
        return True
    return options.get("b_sanitize", "none") not in ("none", [])


def fake_driver():
    """The fake CUDA driver library built with the C tests, or None."""
    given = os.environ.get("GTSTORE_LIBCUDA", "")
    if "fake_cuda" in os.path.basename(given):
        return given
    for library in sorted(glob.glob(os.path.join(REPO, "build", "*", "tests", "c",
                                                 "libfake_cuda.so"))):
        if not sanitized(os.path.dirname(os.path.dirname(os.path.dirname(library)))):
            return library
    return None


FAKE_CHECKS = textwrap.dedent("""
    import ctypes, pickle, sys
    import numpy as np
    import gtstore
    sys.path.insert(0, {tests!r})
    from conftest import CudaArray, device_address

    fake = ctypes.CDLL({library!r})
    fake.fake_cuda_stat.restype = ctypes.c_longlong
    fake.fake_cuda_stat.argtypes = [ctypes.c_char_p]

    class stats:  # the fake driver's counters, read by name when made
        def __init__(self):
            for name in "stream_syncs htod dtod pointer_queries".split():
                setattr(self, name, fake.fake_cuda_stat(name.encode()))

    assert gtstore.gpu()["name"] == "cuda:0", gtstore.gpu()
    memory = gtstore.storage(np.arange(12.0).reshape(3, 4), device="gpu", managed=None)
    cai = memory.__cuda_array_interface__
    assert cai["data"][0] >= 2**52  # the fake's device addresses

    # wrapped, not copied; located by the driver
    before = stats()
    s = gtstore.as_storage(CudaArray(memory, stream=1))
    after = stats()
    assert type(s) is gtstore.GPUStorage and s.device == "cuda:0"
    assert device_address(s) == cai["data"][0]
    assert after.pointer_queries > before.pointer_queries
    assert after.stream_syncs == before.stream_syncs + 1  # the stream was waited on
    assert after.htod == before.htod and after.dtod == before.dtod
    np.testing.assert_array_equal(np.asarray(gtstore.storage(s, device="cpu")),
                                  np.arange(12.0).reshape(3, 4))
    try:
        gtstore.as_storage(CudaArray(memory, readonly=True))[0, 0] = 1.0
    except ValueError as error:
        assert "read-only" in str(error)
    else:
        raise AssertionError("a read-only producer was written")
    assert gtstore.as_storage(CudaArray(memory, version=2)).shape == (3, 4)
    # device_data alone: wrapped, or copied into a storage with a device side
    assert device_address(gtstore.as_storage(device_data=CudaArray(memory))) == cai["data"][0]
    copied = gtstore.storage(device_data=CudaArray(memory))
    assert type(copied) is gtstore.SoftwareManagedGPUStorage and copied.device == "cuda:0"
    assert device_address(copied) != cai["data"][0]
    np.testing.assert_array_equal(np.asarray(copied), np.arange(12.0).reshape(3, 4))

    # a CUDA DLPack capsule (gtstore's own export)
    class Producer:
        def __dlpack__(self, **kw):
            return memory.__dlpack__(**kw)
        def __dlpack_device__(self):
            return memory.__dlpack_device__()
    d = gtstore.as_storage(Producer())
    assert d.device == "cuda:0" and device_address(d) == cai["data"][0]
    c = gtstore.storage(Producer(), device="cpu")
    assert type(c) is gtstore.CPUStorage and float(np.asarray(c).sum()) == 66.0

    # memory of another GPU
    gtstore.use_gpu("cuda:1")
    other = gtstore.zeros((2, 2), device="gpu", managed=None)
    gtstore.use_gpu(None)
    for wrap in (lambda: gtstore.as_storage(CudaArray(other)),
                 lambda: gtstore.from_dlpack(other),
                 lambda: gtstore.storage(CudaArray(other), device="cpu")):
        try:
            wrap()
        except ValueError as error:
            assert "another GPU than gtstore's" in str(error) and "cuda:0" in str(error), error
        else:
            raise AssertionError("memory of cuda:1 accepted")

    # both sides, and pickling, on the fake GPU
    host = np.zeros((3, 4))
    b = gtstore.as_storage(host, CudaArray(memory), sync_state=gtstore.SyncState.SYNC_DEVICE_DIRTY)
    assert type(b) is gtstore.GT4PySyncedGPUStorage and b.device == "cuda:0"
    b.device_to_host()
    np.testing.assert_array_equal(host, np.arange(12.0).reshape(3, 4))
    for managed in ("gt4py", None, "cuda"):
        g = gtstore.full((5, 4), 3.0, defaults="gt:gpu", managed=managed, halo=((1, 1), (0, 0)))
        t = pickle.loads(pickle.dumps(g))
        assert type(t) is type(g) and t.device == g.device and t.halo == g.halo, (t, g)
        assert t.strides == g.strides and t.alignment_size == g.alignment_size

    # on the legacy default stream (the current stream without CuPy) the
    # buffers' events are recorded only when something waits for them
    records = lambda: fake.fake_cuda_stat(b"event_records")
    x = gtstore.zeros((64,), device="gpu", managed=None)
    y = gtstore.ones((64,), device="gpu", managed=None)
    before = records()
    for _ in range(10):
        x[...] = y
    assert records() == before, records() - before
    np.testing.assert_array_equal(np.asarray(gtstore.storage(x, device="cpu")), 1.0)
    assert records() == before + 1, records() - before  # the host's wait recorded it

    # host memory bound to a stencil on the GPU is copied in once per run:
    # binding makes the device copy, and each `with` fills it
    import warnings
    gpu = gtstore.Signature(out=gtstore.Field["f8", "IJK"], inp=gtstore.Field["f8", "IJK"],
                            writes=["out"], device="gpu")
    inp = np.ones((4, 3, 2))
    out = gtstore.zeros((4, 3, 2), device="gpu", managed=None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gtstore.FieldWarning)
        before = stats()
        call = gpu.bind(out, inp)
        assert stats().htod == before.htod  # nothing copied yet
        for run in (1, 2):
            with call:
                assert stats().htod == before.htod + run
    print("fake driver: ok")
""")


def test_fake_driver():
    library = fake_driver()
    if library is None:
        pytest.skip("the fake CUDA driver is not built (meson compile -C build/release)")
    code = FAKE_CHECKS.format(library=library, tests=os.path.dirname(os.path.abspath(__file__)))
    done = run_python(code, GTSTORE_LIBCUDA=library, FAKE_CUDA="devices=2", GTSTORE_GPU="")
    assert done.returncode == 0 and "fake driver: ok" in done.stdout, done.stderr[-3000:]
