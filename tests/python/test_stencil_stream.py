"""Stencil calls on the GPU in the stream order (docs/stencils.md, "Stencils
on the GPU and the stream order").

A GPU stencil call accesses each Storage's device side on the current
stream: acquiring orders that stream after the buffer's device work
(without a host wait), and after the kernel every field's buffer records
its event there. The kernels here do what a GPU kernel does: they queue
their work on the binding's stream and return. Their work is gtstore's own
device copy and fill over views of the bound memory (the addresses the
kernel gets, described by the CUDA array interface), so that on the
emulated device it runs on the stream's worker thread after a random
delay: a missing wait or record gives a wrong value. Random sequences of
such stencils on one stream, then reads on another stream and on the host,
fills and assignments on every stream, are checked against a NumPy model.
A kernel written with the emulated device's engine (NumPy over the host
memory behind the device addresses) runs too: it starts once its stream's
queued work, the waits included, is done, and completes before it returns.
Python kernels (Signature.call, KernelCaller) get the engine's arrays of
their fields: NumPy's over the emulated device's memory, computed on the
host once the fields' device work is done; CuPy's on a CUDA GPU, computed
on CuPy's current stream.
"""

import contextlib
import ctypes
import random
import types

import numpy as np
import pytest

import gtstore
from gtstore import Field, Signature
from gtstore._gtstore import _skip_stream_waits_for_testing as skip_waits

from conftest import CudaArray, device_address, refused, run_random_sequences
from test_gpu_cuda import REASON as NO_CUPY_ON_CUDA

SHAPE = (6, 5, 4)
COPY = Signature(out=Field["f8", "IJK"], inp=Field["f8", "IJK"], writes=["out"], device="gpu")
FILL = Signature(out=Field["f8", "IJK"], writes=["out"], device="gpu")


@pytest.fixture
def emulated():
    gtstore.use_gpu("emulated")
    yield
    gtstore.use_gpu(None)


def cuda_gpu():
    gtstore.use_gpu(None)
    gpu = gtstore.gpu()
    return gpu is not None and gpu["cuda_array_interface"]


class DeviceView:
    """A bound field's memory over the domain as a kernel reaches it (its
    device address at the origin, the kernel's strides), described by the
    CUDA array interface: imported, it is a storage of its own over that
    memory, with no stream order of the bound Storage's."""

    def __init__(self, bound, domain):
        self.__cuda_array_interface__ = {
            "shape": tuple(domain),
            "typestr": "<f8",
            "data": (bound.data, False),
            "strides": bound.strides,
            "version": 3,
            "stream": None,
        }


def on_stream(handle):
    """The binding's stream made current (None: the default stream)."""
    return gtstore.Stream(ptr=handle) if handle is not None else contextlib.nullcontext()


def copy_kernel(call, keep):
    """out = inp over the domain, queued on the binding's stream."""
    out = gtstore.as_storage(DeviceView(call["out"], call.domain))
    inp = gtstore.as_storage(DeviceView(call["inp"], call.domain))
    with on_stream(call.stream):
        out[...] = inp
    keep += [out, inp]  # freeing a view would wait for its work on the host


def numpy_kernel(call):
    """out = 2 inp + 1 over the domain with the emulated device's engine:
    NumPy over the host memory behind the device addresses (to_ndarray of
    a view, which waits for nothing of the bound Storages'). The kernel
    starts once the work queued before it on its stream is done, the
    stream's waits for the fields' device work included, and completes
    before it returns (the record then finds it done)."""
    out = gtstore.as_storage(DeviceView(call["out"], call.domain)).to_ndarray()
    inp = gtstore.as_storage(DeviceView(call["inp"], call.domain)).to_ndarray()
    if call.stream is not None:
        gtstore.Stream(ptr=call.stream).synchronize()
    np.multiply(inp, 2.0, out=out)
    out += 1.0


def fill_kernel(call, value, keep):
    """out = value over the domain, queued on the binding's stream."""
    out = gtstore.as_storage(DeviceView(call["out"], call.domain))
    with on_stream(call.stream):
        out[...] = value
    keep.append(out)


def region(origin, domain):
    return tuple(slice(o, o + d) for o, d in zip(origin, domain))


def engine_kernel(domain, origins, out, inp):
    """out = 2 inp + 1 over the domain, with the arrays a Python kernel
    gets (the engine's: NumPy's or CuPy's, in the kernel's order)."""
    out[region(origins["out"], domain)] = inp[region(origins["inp"], domain)] * 2.0 + 1.0
    return type(out)


ENGINE_COPY = gtstore.KernelCaller(COPY, engine_kernel)


# ---- the stream a kernel gets ------------------------------------------------------------------


def test_binding_stream_is_the_current_stream(emulated):
    a = gtstore.zeros(SHAPE, device="gpu")
    b = gtstore.ones(SHAPE, device="gpu", managed=None)
    s = gtstore.Stream()
    call = COPY.bind(a, b)
    assert call.stream is None
    with call:  # no current stream: the default one, where the host waited
        assert call.stream is None
    with s:
        with call:
            assert call.stream == s.ptr
    cpu = Signature(out=Field["f8", "IJK"], writes=["out"])
    with s, cpu.bind(gtstore.zeros(SHAPE)) as host_call:
        assert host_call.stream is None  # host stencils have no stream


def test_storages_bind_their_device_side(emulated):
    """A Storage on the GPU is read from its own fields (no export), the
    device address of its element 0 plus the origin's offset."""

    a = gtstore.zeros(SHAPE, device="gpu", halo=(1, 1, 0))
    b = gtstore.ones(SHAPE, device="gpu", managed=None)
    call = COPY.bind(a, b)
    assert call.domain == (4, 3, 4)
    assert call["out"].data == device_address(a) + sum(
        o * s for o, s in zip((1, 1, 0), a.strides))
    assert call["inp"].data == device_address(b)  # no halo: origin 0
    with pytest.warns(gtstore.FieldWarning, match="out: no buffer on the gpu, where the stencil "
                                                  "computes: copied to device memory and back"):
        call = COPY.bind(gtstore.zeros(SHAPE), b)  # host memory: a copy on the GPU (GDP-3)
    assert call["out"].data != device_address(b)


def filled_behind_work(stream, value):
    """A new device-only field filled with `value` on `stream`, behind
    longer work queued there."""
    inp = gtstore.zeros((64, 64, 8), device="gpu", managed=None)
    with stream:
        for n in range(4):
            inp[...] = float(-n)
        inp[...] = float(value)
    return inp


def test_a_stencil_on_a_stream_is_ordered_both_ways(emulated):
    """The stencil's stream waits for a fill queued on another stream, and
    a copy on a third stream and the host wait for the stencil."""
    s1, s2, s3 = gtstore.Stream(), gtstore.Stream(), gtstore.Stream()
    keep = []
    for value in range(1, 6):
        inp = filled_behind_work(s1, value)
        out = gtstore.zeros((64, 64, 8), device="gpu")
        with s2:
            with COPY.bind(out, inp) as call:
                copy_kernel(call, keep)
        with s3:
            copied = out.copy()
        assert (np.asarray(gtstore.storage(copied, device="cpu")) == value).all()
        assert (np.asarray(out) == value).all()


def test_a_written_mirrored_field_is_synced_back(emulated):
    """The device side written by a stencil is the current one: the host
    side syncs from it (the touch marks the write)."""
    a = gtstore.zeros(SHAPE, device="gpu", managed="gt4py")
    np.asarray(a)[...] = 1.0  # the host side written: the device side is stale
    s = gtstore.Stream()
    keep = []
    with s, FILL.bind(a, origin=(1, 1, 1), domain=(2, 2, 2)) as call:
        fill_kernel(call, 7.0, keep)
    want = np.ones(SHAPE)
    want[1:3, 1:3, 1:3] = 7.0
    np.testing.assert_array_equal(np.asarray(a), want)


def test_a_numpy_kernel_starts_after_its_streams_waits(emulated):
    """The NumPy kernel reads what a fill queued on another stream wrote."""
    s1, s2 = gtstore.Stream(), gtstore.Stream()
    for value in range(1, 6):
        inp = filled_behind_work(s1, value)
        out = gtstore.zeros((64, 64, 8), device="gpu")
        with s2, COPY.bind(out, inp) as call:
            numpy_kernel(call)
        assert (np.asarray(out) == 2 * value + 1).all()


def test_a_failed_kernel_touches_nothing_and_records_its_work(emulated):
    S = gtstore.SyncState
    a = gtstore.zeros(SHAPE, device="gpu")
    b = gtstore.zeros(SHAPE, device="gpu", managed=None)
    s = gtstore.Stream()
    keep = []
    with pytest.raises(RuntimeError, match="kernel failed"):
        with s, COPY.bind(a, b) as call:
            fill_kernel(call, 3.0, keep)  # queued, then the kernel fails
            raise RuntimeError("kernel failed")
    assert a.sync_state.state == S.SYNC_CLEAN  # not touched
    with s, FILL.bind(b) as call:
        fill_kernel(call, 4.0, keep)
    assert a.sync_state.state == S.SYNC_CLEAN
    # the failed call's device work was recorded all the same: the host waits for it
    assert (a.to_ndarray() == 3.0).all()
    assert (np.asarray(gtstore.storage(b, device="cpu")) == 4.0).all()
    with s, FILL.bind(a) as call:
        fill_kernel(call, 5.0, keep)
    assert a.sync_state.state == S.SYNC_DEVICE_DIRTY  # touched: the host side syncs
    assert (np.asarray(a) == 5.0).all()


# ---- Python kernels: the engine's arrays --------------------------------------------------------


def test_a_python_kernel_gets_the_engines_arrays(emulated):
    """NumPy arrays over the device memory (on the emulated device), in
    the kernel's order, written in place; a read-only Storage's is
    read-only. KernelCaller passes the same."""
    values = np.arange(np.prod(SHAPE), dtype=float).reshape(SHAPE)
    inp = gtstore.storage(values.T.copy(), device="gpu", managed=None, dims="KJI")
    out = gtstore.zeros(SHAPE, device="gpu", halo=(1, 1, 0))
    seen = {}

    def kernel(domain, origins, out, inp, scale=1.0):
        seen.update(out=out, inp=inp, origins=origins, domain=domain)
        out[region(origins["out"], domain)] = scale * inp[region(origins["inp"], domain)]
        return "done"

    assert COPY.call(kernel, out, inp, kwargs={"scale": 3.0}) == "done"
    assert type(seen["out"]) is np.ndarray and seen["inp"].shape == SHAPE
    assert seen["inp"].strides == tuple(reversed(inp.strides))  # I, J, K of a KJI storage
    assert seen["origins"] == {"out": (1, 1, 0), "inp": (0, 0, 0)} and seen["domain"] == (4, 3, 4)
    want = np.zeros(SHAPE)
    want[1:5, 1:4, :] = 3.0 * values[0:4, 0:3, :]
    np.testing.assert_array_equal(np.asarray(out), want)
    assert seen["out"].flags.writeable and seen["inp"].flags.writeable
    readonly = gtstore.as_storage(CudaArray(inp, readonly=True), dims="KJI")
    COPY.call(kernel, out, readonly, origin=(0, 0, 0), domain=SHAPE)
    assert not seen["inp"].flags.writeable
    np.testing.assert_array_equal(np.asarray(out), values)
    assert ENGINE_COPY(out, inp, origin=(0, 0, 0), domain=SHAPE) is np.ndarray
    np.testing.assert_array_equal(np.asarray(out), 2.0 * values + 1.0)


def test_a_python_kernel_sees_the_fields_device_work(emulated):
    """The kernel starts once the fill queued on another stream is done,
    and the host and other streams see its writes: with `with stream:`
    current, Signature.call and KernelCaller alike (NumPy computes on the
    host: its stream is the default one)."""
    s1, s2, s3 = gtstore.Stream(), gtstore.Stream(), gtstore.Stream()
    streams = []
    for value in range(1, 6):
        inp = filled_behind_work(s1, value)
        out = gtstore.zeros((64, 64, 8), device="gpu")
        with s2:
            if value % 2:
                COPY.call(engine_kernel, out, inp)
            else:
                ENGINE_COPY(out, inp)
            with COPY.bind(out, inp) as call:
                streams.append(call.stream)
        with s3:
            copied = out.copy()
        assert (np.asarray(gtstore.storage(copied, device="cpu")) == 2 * value + 1).all()
        assert (np.asarray(out) == 2 * value + 1).all()
    assert streams == [s2.ptr] * 5  # a bound C or CUDA kernel's stream stays the current one


def test_binding_arrays_wait_for_the_bindings_stream(emulated):
    """`binding.arrays()` inside `with binding:` on a stream: NumPy's
    arrays are read once the stream's work, its waits for the fields'
    device work included, is done."""
    s1, s2 = gtstore.Stream(), gtstore.Stream()
    for value in range(1, 6):
        inp = filled_behind_work(s1, value)
        out = gtstore.zeros((64, 64, 8), device="gpu", managed=None)
        with s2, COPY.bind(out, inp) as call:
            assert call.stream == s2.ptr
            arrays = call.arrays()
            np.multiply(arrays["inp"], 2.0, out=arrays["out"])
        assert (np.asarray(gtstore.storage(out, device="cpu")) == 2 * value).all()


def test_a_python_kernel_gets_arrays_of_other_libraries_memory(emulated):
    """An object described by the CUDA array interface (another library's
    device memory): the kernel's array is that memory, in place."""
    base = gtstore.zeros(SHAPE, device="gpu", managed=None)
    view = types.SimpleNamespace(data=device_address(base), strides=base.strides)
    inp = gtstore.full(SHAPE, 4.0, device="gpu")
    COPY.call(engine_kernel, DeviceView(view, SHAPE), inp)
    assert (base.to_ndarray() == 9.0).all()


# ---- fields with no buffer where the stencil computes: copied in and out (GDP-3) ---------------


class GpuOnly:
    """Device memory behind a data interface with only a "gpu" entry (with
    the protocol's callbacks where `calls` is a list: each appends its
    name, acquire fills the memory with `fresh`, touch also notes the value
    it finds)."""

    def __init__(self, storage, dims="IJK", calls=None, fresh=None):
        self.storage = storage
        entry = dict(CudaArray(storage).__cuda_array_interface__, dims=dims)
        if calls is not None:
            def acquire():
                calls.append("acquire")
                storage[...] = fresh

            def touch():
                calls.append(("touch", float(storage.to_ndarray()[0, 0, 0])))

            entry.update(acquire=acquire, touch=touch, release=lambda: calls.append("release"))
        self.__gt_data_interface__ = {"gpu": entry}


def copied_in(*names, back=()):
    """The warnings of fields copied to the GPU (those in `back` also back)."""
    return sorted(f"{name}: no buffer on the gpu, where the stencil computes: copied to device "
                  f"memory{' and back after the run' if name in back else ''} (slow: transfers "
                  "on every call)" for name in names)


def test_host_memory_is_copied_to_the_gpu_and_back(emulated):
    """A GPU stencil's fields in host memory (a NumPy array, a Field over
    one, a CPU Storage) are copied to device memory, which the kernel gets,
    and the written ones back after a run that succeeds, each with a
    FieldWarning; a read-only one is refused as a written field, a failed
    run copies nothing back."""
    x = np.arange(np.prod(SHAPE), dtype=float).reshape(SHAPE)
    for make in (np.array, lambda v: Field(np.array(v), "IJK"), gtstore.storage):
        out, inp = make(np.zeros(SHAPE)), make(x)
        with pytest.warns(gtstore.FieldWarning) as caught:
            assert COPY.call(engine_kernel, out, inp) is np.ndarray
        assert sorted(str(w.message) for w in caught) == copied_in("out", "inp", back="out")
        np.testing.assert_array_equal(np.asarray(getattr(out, "array", out)), 2 * x + 1)
    readonly = np.zeros(SHAPE)
    readonly.flags.writeable = False
    with refused(ValueError, "out: the stencil writes it, but it is read-only"):
        COPY.call(engine_kernel, readonly, x)
    out = np.zeros(SHAPE)

    def failing(domain, origins, out, inp):
        out[...] = 5.0
        raise RuntimeError("kernel failed")

    with pytest.warns(gtstore.FieldWarning), pytest.raises(RuntimeError, match="kernel failed"):
        COPY.call(failing, out, x)
    assert (out == 0.0).all()


@pytest.mark.parametrize("gpu", ["emulated", "cuda"])
def test_a_copy_back_waits_for_the_kernels_work(gpu):
    """A kernel that queues its work on the binding's stream and returns:
    the copy back to host memory holds what it wrote."""
    if gpu == "cuda" and not cuda_gpu():
        pytest.skip("no CUDA GPU (nor the fake driver)")
    gtstore.use_gpu(gpu)
    try:
        s, keep = gtstore.Stream(), []
        for value in range(1, 6):
            out = np.zeros((64, 64, 8))
            with s, pytest.warns(gtstore.FieldWarning), FILL.bind(out) as call:
                assert call.stream == s.ptr
                fill_kernel(call, float(value), keep)
            assert (out == value).all()
    finally:
        gtstore.use_gpu(None)


def test_device_memory_is_copied_to_the_host_and_back(emulated):
    """A host stencil's field with only a "gpu" buffer: copied to host
    memory with its labels, and back after the run."""
    out = gtstore.zeros(SHAPE, device="gpu", managed=None)
    x = np.arange(np.prod(SHAPE), dtype=float).reshape(SHAPE)
    inp = gtstore.storage(x.T.copy(), device="gpu", managed=None)
    host_copy = Signature(out=Field["f8", "IJK"], inp=Field["f8", "IJK"], writes=["out"])
    with pytest.warns(gtstore.FieldWarning) as caught:
        assert host_copy.call(engine_kernel, GpuOnly(out), GpuOnly(inp, dims="KJI")) is np.ndarray
    assert sorted(str(w.message) for w in caught) == sorted(
        f"{name}: no buffer on the cpu, where the stencil computes: copied to host memory"
        f"{' and back after the run' if name == 'out' else ''} (slow: transfers on every call)"
        for name in ("out", "inp"))
    np.testing.assert_array_equal(out.to_ndarray(), 2 * x + 1)
    kept = []
    with pytest.warns(gtstore.FieldWarning):
        host_copy.call(lambda domain, origins, out, inp: kept.append(inp), out, GpuOnly(inp))
    assert isinstance(kept[0].base, gtstore.Storage)  # the copy, kept alive by the array
    np.testing.assert_array_equal(kept[0], x.T)


def test_a_copied_objects_callbacks_frame_the_copies(emulated):
    """A data interface's acquire runs before its values are copied in (the
    kernel sees what acquire wrote), its touch after the copy back, and its
    release last."""
    calls, seen = [], []
    out = gtstore.zeros(SHAPE, device="gpu", managed=None)
    obj = GpuOnly(out, calls=calls, fresh=3.0)
    host_fill = Signature(out=Field["f8", "IJK"], writes=["out"])

    def kernel(domain, origins, out):
        seen.append(float(out[0, 0, 0]))
        calls.append("kernel")
        out[...] += 1.0

    with pytest.warns(gtstore.FieldWarning):
        host_fill.call(kernel, obj)
    assert calls == ["acquire", "kernel", ("touch", 4.0), "release"] and seen == [3.0]
    assert (out.to_ndarray() == 4.0).all()


# The C kernel protocol (gtstore/binding.h) as ctypes sees it: a kernel
# on the GPU finds its stream in binding->stream.
MAX_NDIM = 16


class BoundFieldC(ctypes.Structure):
    _fields_ = [("origin_data", ctypes.c_void_p), ("ndim", ctypes.c_int),
                ("dims", ctypes.c_int32 * MAX_NDIM), ("axis", ctypes.c_int * MAX_NDIM),
                ("shape", ctypes.c_int64 * MAX_NDIM), ("strides", ctypes.c_int64 * MAX_NDIM),
                ("origin", ctypes.c_int64 * MAX_NDIM)]


class WarningC(ctypes.Structure):
    _fields_ = [("field", ctypes.c_int), ("message", ctypes.c_char * 256)]


class BindingC(ctypes.Structure):
    _fields_ = [("domain", ctypes.c_int64 * 3), ("nwarnings", ctypes.c_int),
                ("warnings", WarningC * 4), ("stream", ctypes.c_void_p)]


KERNEL = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(BindingC), ctypes.POINTER(BoundFieldC),
                          ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)


def test_a_c_kernel_launches_on_binding_stream(emulated):
    """call_c hands the kernel the stream in binding->stream; the kernel
    queues a fill there and returns, and the host waits for it."""
    seen, keep = [], []

    def fill(binding, fields, nfields, ctx, err):
        b, f = binding.contents, fields[0]
        seen.append(b.stream)
        view = types.SimpleNamespace(data=f.origin_data, strides=tuple(f.strides[:3]))
        with on_stream(b.stream):
            out = gtstore.as_storage(DeviceView(view, tuple(b.domain)))
            out[...] = 6.0
        keep.append(out)
        return 0

    kernel = KERNEL(fill)
    address = ctypes.cast(kernel, ctypes.c_void_p).value
    s = gtstore.Stream()
    for managed in ("gt4py", None):
        a = gtstore.zeros((64, 64, 8), device="gpu", managed=managed)
        with s:
            a[...] = 1.0  # queued on s before the stencil
            FILL.call_c(address, a, origin=(1, 1, 1), domain=(60, 60, 6))
        want = np.ones((64, 64, 8))
        want[1:61, 1:61, 1:7] = 6.0
        np.testing.assert_array_equal(np.asarray(gtstore.storage(a, device="cpu")), want)
    FILL.call_c(address, a)  # no current stream: the default one
    assert seen == [s.ptr, s.ptr, None]
    assert (np.asarray(gtstore.storage(a, device="cpu")) == 6.0).all()


# ---- random sequences against a model -----------------------------------------------------------


def random_region(rng):
    origin, domain = [], []
    for n in SHAPE:
        start = rng.randrange(n)
        origin.append(start)
        domain.append(rng.randrange(1, n - start + 1))
    key = tuple(slice(o, o + d) for o, d in zip(origin, domain))
    return tuple(origin), tuple(domain), key


class Sequence:
    """Fields and their model; each step one random operation. The
    stencils run on the first stream, the reads on the second, the host
    and the default stream."""

    def __init__(self, seed, streams, cuda=False):
        self.rng = random.Random(seed)
        self.cuda = cuda  # a CUDA GPU: no NumPy kernel (its memory is not the host's)
        # a Python kernel computes with the engine: CuPy on a CUDA GPU (not the fake driver's)
        self.engine = not cuda or NO_CUPY_ON_CUDA is None
        self.streams = streams + [None]
        self.fields = [gtstore.zeros(SHAPE, device="gpu", managed=self.rng.choice(["gt4py", None]))
                       for _ in range(3)]
        self.model = [np.zeros(SHAPE) for _ in range(3)]
        self.keep, self.later = [], []  # kernels' views; reads on a stream, checked later
        self.wrong = 0
        self.values = iter(range(1, 1 << 30))

    def check(self, got, want):
        self.wrong += not np.array_equal(got, want)

    def on(self, stream):
        return stream if stream is not None else contextlib.nullcontext()

    def step(self):
        rng = self.rng
        i, j = rng.sample(range(3), 2)
        x, y = self.fields[i], self.fields[j]
        origin, domain, key = random_region(rng)
        value = float(next(self.values))
        op = rng.randrange(11)
        if (op == 8 and self.cuda) or (op > 8 and not self.engine):
            op = 0
        if op in (0, 1):  # a copy stencil on the stencils' stream (or the default one)
            with self.on(rng.choice([self.streams[0], None])):
                with COPY.bind(x, y, origin=origin, domain=domain) as call:
                    copy_kernel(call, self.keep)
            self.model[i][key] = self.model[j][key]
        elif op == 2:  # a fill stencil
            with self.on(self.streams[0]), FILL.bind(x, origin=origin, domain=domain) as call:
                fill_kernel(call, value, self.keep)
            self.model[i][key] = value
        elif op == 3:  # a read on another stream: a copy, checked later
            with self.on(self.streams[1]):
                self.later.append((x.copy(), self.model[i].copy()))
        elif op == 4:  # a fill of a view on any stream
            with self.on(rng.choice(self.streams)):
                x[key] = value
            self.model[i][key] = value
        elif op == 5:  # an assignment on any stream
            with self.on(rng.choice(self.streams)):
                x[key] = y[key]
            self.model[i][key] = self.model[j][key]
        elif op == 8:  # a NumPy kernel on the stencils' stream
            with self.on(self.streams[0]):
                with COPY.bind(x, y, origin=origin, domain=domain) as call:
                    numpy_kernel(call)
            self.model[i][key] = 2.0 * self.model[j][key] + 1.0
        elif op > 8:  # a Python kernel: Signature.call or KernelCaller, on the stencils' stream
            with self.on(self.streams[0]):
                if op == 9:
                    COPY.call(engine_kernel, x, y, origin=origin, domain=domain)
                else:
                    ENGINE_COPY(x, y, origin=origin, domain=domain)
            self.model[i][key] = 2.0 * self.model[j][key] + 1.0
        elif op == 6:  # a host read
            self.check(np.array(gtstore.storage(x, device="cpu")), self.model[i])
        else:  # a host write
            if type(x) is gtstore.SoftwareManagedGPUStorage:
                np.asarray(x)[key] = value
            else:
                x[key] = np.full(x[key].shape, value)
            self.model[i][key] = value

    def finish(self):
        for copy, want in self.later:
            self.check(np.array(gtstore.storage(copy, device="cpu")), want)
        for x, want in zip(self.fields, self.model):
            self.check(np.array(gtstore.storage(x, device="cpu")), want)
        return self.wrong


def run_sequences(seeds, steps, cuda=False):
    return run_random_sequences(Sequence, seeds, steps, cuda)


@pytest.mark.parametrize("seed", range(8))
def test_random_stencil_sequences(emulated, seed):
    assert run_sequences([seed], 60) == 0


def test_detector_a_missing_wait_gives_wrong_values(emulated):
    """With the stream order's waits skipped, the sequences see wrong
    values: the checks above see a missing wait."""
    skip_waits(True)
    try:
        tried = next((seed for seed in range(40) if run_sequences([seed], 60) > 0), None)
    finally:
        skip_waits(False)
    assert tried is not None


def test_random_stencil_sequences_on_cuda():
    """The sequences on a CUDA GPU (the fake driver in CI)."""
    if not cuda_gpu():
        pytest.skip("no CUDA GPU (nor the fake driver)")
    assert run_sequences(range(3), 40, cuda=True) == 0
