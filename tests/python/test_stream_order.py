"""The stream order from Python (docs/storage.md, "Stream order").

On the emulated device (the GPU here) every stream that gtstore.Stream
makes runs its work on a thread of its own after a random delay, so a
missing wait gives a wrong value on this machine. Random sequences of
operations on two streams and the default one (fills, assignments, copies,
ufuncs, reductions, host reads and writes, the device side through
to_ndarray, DLPack exports ordered on a consumer's stream and imports),
over views of mirrored (SoftwareManagedGPUStorage) and device-only
(GPUStorage) fields, are checked against a NumPy model: no write is lost,
no stale value read. The detector runs the same sequences with the waits
of libgtstore's stream order skipped (a switch for tests only): they must
then see wrong values, which proves the checks see a missing wait.
"""

import pickle
import random
import textwrap

import numpy as np
import pytest

import gtstore
from conftest import device_address, run_python, run_random_sequences
from gtstore._gtstore import _skip_stream_waits_for_testing as skip_waits

SHAPE = (6, 5, 4)


pytestmark = pytest.mark.usefixtures("emulated_gpu")  # conftest.py


# ---- gtstore.Stream and the current stream ----------------------------------------------------


def test_stream_is_made_on_the_gpu_and_made_current_by_with():
    s = gtstore.Stream()
    assert s.device == "emulated" and s.ptr != 0
    assert f"{s.ptr:#x}" in repr(s)
    assert gtstore.current_stream() is None
    with s as entered:
        assert entered is s and gtstore.current_stream() is s
        t = gtstore.Stream(device="emulated")
        with t:
            assert gtstore.current_stream() is t
            with s:  # reentrant
                assert gtstore.current_stream() is s
            assert gtstore.current_stream() is t
        assert gtstore.current_stream() is s
    assert gtstore.current_stream() is None
    s.synchronize()


def test_current_stream_is_per_thread():
    import threading

    seen = []
    s = gtstore.Stream()
    with s:
        worker = threading.Thread(target=lambda: seen.append(gtstore.current_stream()))
        worker.start()
        worker.join(timeout=30)
    assert seen == [None]


def test_one_stream_entered_by_interleaved_asyncio_tasks():
    """Each task's __exit__ undoes its own __enter__ (the contexts of the
    tasks): one Stream entered by tasks whose blocks interleave, nested
    too, and a task made inside a block, which cannot exit its maker's."""
    import asyncio

    s, t = gtstore.Stream(), gtstore.Stream()
    seen = []

    async def task(delay):
        with s:
            await asyncio.sleep(delay)
            with t:
                with s:
                    await asyncio.sleep(delay)
                    assert gtstore.current_stream() is s
                assert gtstore.current_stream() is t
            assert gtstore.current_stream() is s
        seen.append(gtstore.current_stream())

    async def child():
        with pytest.raises(RuntimeError, match="entered in another context") as error:
            s.__exit__(None, None, None)
        assert repr(s) in str(error.value)
        seen.append(gtstore.current_stream())  # its maker's, inherited

    async def main():
        await asyncio.gather(task(0.01), task(0.03), task(0.02))
        with s:
            await asyncio.create_task(child())
            assert gtstore.current_stream() is s
        assert gtstore.current_stream() is None

    asyncio.run(main())
    assert seen == [None, None, None, s]


def test_one_stream_entered_by_interleaved_threads():
    """Each thread's __exit__ undoes its own __enter__: the first thread in
    leaves first, while the other is still inside; an __exit__ in a
    thread that did not enter raises, and the other's block is intact."""
    import threading

    s = gtstore.Stream()
    inside, first_left, second_left = threading.Event(), threading.Event(), threading.Event()
    seen, errors = {}, []

    def first():
        with s:
            inside.wait(30)
        seen["first"] = gtstore.current_stream()
        first_left.set()

    def second():
        with s:
            inside.set()
            first_left.wait(30)
            seen["second inside"] = gtstore.current_stream()
        seen["second"] = gtstore.current_stream()
        second_left.set()

    def stranger():
        try:
            s.__exit__(None, None, None)
        except RuntimeError as error:
            errors.append(str(error))

    one = threading.Thread(target=first)
    one.start()
    two = threading.Thread(target=second)
    with s:
        two.start()
        inside.wait(30)
        three = threading.Thread(target=stranger)
        three.start()
        three.join(30)
        for thread in (one, two):
            thread.join(30)
        assert gtstore.current_stream() is s
    assert gtstore.current_stream() is None
    assert seen == {"first": None, "second inside": s, "second": None}
    assert errors == [f"__exit__: {s!r} was not entered in this thread (and asyncio task)"]


def test_exit_must_undo_this_contexts_last_enter():
    import contextvars

    s, t = gtstore.Stream(), gtstore.Stream()
    with pytest.raises(RuntimeError, match="was not entered"):
        s.__exit__(None, None, None)
    with s:
        with t:
            with pytest.raises(RuntimeError, match="is not the stream entered last"):
                s.__exit__(None, None, None)
            assert gtstore.current_stream() is t
        copy = contextvars.copy_context()
        with pytest.raises(RuntimeError, match="entered in another context"):
            copy.run(s.__exit__, None, None, None)
        assert gtstore.current_stream() is s
    assert gtstore.current_stream() is None


def test_a_wrapped_stream_is_not_owned():
    s = gtstore.Stream()
    w = gtstore.Stream(ptr=s.ptr)  # the same stream, not owned
    assert w.ptr == s.ptr and "not owned" in repr(w)

    class Holder:  # as a CuPy stream: the handle in `ptr`, kept alive
        ptr = s.ptr

    h = Holder()
    assert gtstore.Stream(ptr=h).ptr == s.ptr
    del w
    a = gtstore.zeros(SHAPE, device="gpu")
    with s:  # still alive after the wrapper went
        a[...] = 2.0
    assert (np.asarray(a) == 2.0).all()
    assert gtstore.Stream(ptr=0).ptr == 0  # the default stream


def test_stream_errors():
    with pytest.raises(ValueError, match="ptr: -1"):
        gtstore.Stream(ptr=-1)
    with pytest.raises(TypeError, match="ptr: expected"):
        gtstore.Stream(ptr="x")
    with pytest.raises(TypeError, match="ptr: expected"):
        gtstore.Stream(ptr=1.5)
    with pytest.raises(ValueError, match="device: expected"):
        gtstore.Stream(device="cpu")
    with pytest.raises(ValueError, match="device: expected"):
        gtstore.Stream(device=3)
    with pytest.raises(ValueError, match="ptr: 0x5 is not a live stream of the emulated"):
        gtstore.Stream(ptr=5)
    with pytest.raises(RuntimeError, match="not entered"):
        gtstore.Stream().__exit__(None, None, None)


def test_a_stream_of_another_device_is_not_used():
    """Host storages ignore the current stream (the host has none)."""
    s = gtstore.Stream()
    h = gtstore.zeros(SHAPE)
    with s:
        h[...] = 3.0
        c = h.copy()
    assert (np.asarray(c) == 3.0).all()


# ---- exports and imports ----------------------------------------------------------------------


class Producer:
    """Another library's view of a capsule made beforehand (DLPack)."""

    def __init__(self, capsule, device):
        self.capsule, self.device = capsule, device

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return self.device


def consume_on(storage, stream, skip=False):
    """A consumer on `stream`: __dlpack__(stream=) orders the export there,
    then the consumer copies the memory on that stream into a new storage."""
    capsule = storage.__dlpack__(stream=stream.ptr, max_version=(1, 0))
    view = gtstore.from_dlpack(Producer(capsule, storage.__dlpack_device__()))
    with stream:
        out = gtstore.empty(view.shape, device="gpu", managed=None)
        out[...] = view
    stream.synchronize()  # the consumer's work done, as the protocol asks
    return out


def busy_producer(s1, value):
    """A field whose last value is still queued on s1 behind longer work."""
    a = gtstore.zeros((128, 128, 16), device="gpu", managed=None)
    with s1:
        for n in range(8):
            a[...] = float(-n)
        a[...] = float(value)
    return a


def test_dlpack_export_orders_on_the_consumers_stream():
    s1, s2 = gtstore.Stream(), gtstore.Stream()
    for value in range(1, 6):
        out = consume_on(busy_producer(s1, value), s2)
        assert (np.asarray(gtstore.storage(out, device="cpu")) == value).all()


def test_dlpack_stream_must_be_a_live_stream_of_the_device():
    s = gtstore.ones(SHAPE, device="gpu")
    with pytest.raises(ValueError, match="stream"):
        s.__dlpack__(stream=5)
    with pytest.raises(ValueError, match="stream"):
        s.__dlpack__(stream=0)
    for kind in ("x", 1.0, True):  # no int, and a bool is no handle
        with pytest.raises(TypeError, match=r"^stream: expected None or a stream handle \(an "
                                            r"int\), got"):
            s.__dlpack__(stream=kind)
        with pytest.raises(TypeError, match=r"^ptr: expected None, a stream handle"):
            gtstore.Stream(ptr=kind)
    s.__dlpack__(stream=-1)
    s.__dlpack__(stream=None)
    with pytest.raises(ValueError, match="stream"):  # the host side: None or -1 only
        s.__dlpack__(stream=gtstore.Stream().ptr, dl_device=(1, 0), max_version=(1, 0))


# ---- random sequences against a model ----------------------------------------------------------


def random_slice(rng):
    key = []
    for n in SHAPE:
        start = rng.randrange(n)
        key.append(slice(start, rng.randrange(start + 1, n + 1)))
    return tuple(key)


def host_values(x, rng, cuda):
    """The host's view of x, by one of the host accesses (to_ndarray is
    CuPy's on CUDA)."""
    how = rng.randrange(4)
    if how == 2 and cuda:
        how = 3
    if how == 0 and type(x) is gtstore.SoftwareManagedGPUStorage:
        return np.array(np.asarray(x))
    if how == 1:
        return np.array(gtstore.storage(pickle.loads(pickle.dumps(x)), device="cpu"))
    if how == 2:
        return np.array(x.to_ndarray())  # the device side, as the host sees it
    return np.array(gtstore.storage(x, device="cpu"))


class Interface:
    """Another library's array over a field's memory, described by the CUDA
    array interface with the stream its producer's work is on (the address
    was read once, when the field was made)."""

    def __init__(self, field, address, stream):
        self.__cuda_array_interface__ = {
            "shape": field.shape,
            "typestr": "<f8",
            "data": (address, False),
            "strides": field.strides,
            "version": 3,
            "stream": stream,
        }


class Sequence:
    """Storages and their model; each step one random operation."""

    def __init__(self, seed, streams, cuda=False):
        self.rng = random.Random(seed)
        self.cuda = cuda  # a CUDA GPU (the fake driver here): no engine without CuPy
        self.streams = streams + [None]  # None: the default stream
        self.fields, self.model, self.addresses = [], [], []
        for _ in range(3):
            managed = self.rng.choice(["gt4py", None])
            self.fields.append(gtstore.zeros(SHAPE, device="gpu", managed=managed))
            self.model.append(np.zeros(SHAPE))
            self.addresses.append(device_address(self.fields[-1]))
        self.wrong = 0
        self.values = iter(range(1, 1 << 30))

    def replace(self, k, field, model):
        self.fields[k], self.model[k] = field, model
        self.addresses[k] = device_address(field)

    def check(self, got, want):
        if not np.array_equal(got, want):
            self.wrong += 1

    def on(self, stream, op):
        if stream is None:
            return op()
        with stream:
            return op()

    def step(self):
        rng = self.rng
        i, j, k = (rng.randrange(3) for _ in range(3))
        x, y, z = self.fields[i], self.fields[j], self.fields[k]
        key = random_slice(rng)
        stream = rng.choice(self.streams)
        value = float(next(self.values))
        op = self.op = rng.randrange(12)
        if self.cuda and op in (2, 4, 7, 9):  # CuPy's: a fill instead
            op = 0
        if op == 0:  # a fill, of a view
            self.on(stream, lambda: x.__setitem__(key, value))
            self.model[i][key] = value
        elif op == 1:  # an assignment between views
            self.on(stream, lambda: x.__setitem__(key, y[key]))
            self.model[i][key] = self.model[j][key]
        elif op == 2:  # a ufunc into a view
            self.on(stream, lambda: np.add(x[key], y[key], out=z[key]))
            self.model[k][key] = self.model[i][key] + self.model[j][key]
        elif op == 3:  # a copy replaces a field
            self.replace(k, self.on(stream, x.copy), self.model[i].copy())
        elif op == 4:  # a reduction
            total = self.on(stream, lambda: float(x[key].sum()))
            self.check(total, self.model[i][key].sum())
        elif op == 5:  # a host read
            self.check(host_values(x, rng, self.cuda), self.model[i])
        elif op == 6:  # a host write
            if type(x) is gtstore.SoftwareManagedGPUStorage:
                np.asarray(x)[key] = value
            else:
                self.on(stream, lambda: x.__setitem__(key, np.full(x[key].shape, value)))
            self.model[i][key] = value
        elif op == 7:  # a write of the device side, as a kernel of the host's
            x.to_ndarray()[key] = value
            self.model[i][key] = value
        elif op == 8:  # a DLPack export on a stream, imported by its consumer
            consumer = stream or self.streams[0]
            self.check(np.asarray(gtstore.storage(consume_on(x, consumer), device="cpu")),
                       self.model[i])
        elif op == 9:  # a ufunc making a new field
            self.replace(k, self.on(stream, lambda: x + y), self.model[i] + self.model[j])
        elif op == 10 and type(x) is gtstore.GPUStorage:
            # an import of the CUDA array interface, with its producer's stream (of the
            # device side as it is: a mirrored field's producer would sync it first)
            self.on(stream, lambda: x.__setitem__(key, value))  # the producer's work
            self.model[i][key] = value
            # the emulated device names its streams 1 (waits for them all)
            producer = (stream or self.streams[0]).ptr if self.cuda else 1
            imported = gtstore.as_storage(Interface(x, self.addresses[i], producer))
            self.check(np.array(gtstore.storage(imported, device="cpu")), self.model[i])
        else:  # a sync method
            x.synchronize()

    def finish(self):
        for x, want in zip(self.fields, self.model):
            self.check(np.array(gtstore.storage(x, device="cpu")), want)
        return self.wrong


def run_sequences(seeds, steps, cuda=False):
    return run_random_sequences(Sequence, seeds, steps, cuda)


@pytest.mark.parametrize("seed", range(12))
def test_random_sequences_lose_no_write_and_read_no_stale_value(seed):
    assert run_sequences([seed], 80) == 0


def test_detector_a_missing_wait_gives_wrong_values():
    """The same sequences with the stream order's waits skipped must see
    wrong values: the checks above would see a missing wait."""
    skip_waits(True)
    try:  # sequences until one sees a wrong value (the first, mostly; slower under ASan)
        tried = next((seed for seed in range(60) if run_sequences([seed], 80) > 0), None)
    finally:
        skip_waits(False)
    assert tried is not None
    assert run_sequences(range(tried + 1), 80) == 0


def test_detector_dlpack_stream():
    """Without the wait of __dlpack__(stream=) the consumer reads early."""
    s1, s2 = gtstore.Stream(), gtstore.Stream()
    skip_waits(True)
    try:
        wrong = 0
        for value in range(1, 6):
            out = consume_on(busy_producer(s1, value), s2)
            s1.synchronize()  # only the consumer's wait is missing
            wrong += not (np.asarray(gtstore.storage(out, device="cpu")) == value).all()
    finally:
        skip_waits(False)
    assert wrong > 0


# ---- threads ------------------------------------------------------------------------------------


def test_threads_each_with_a_stream():
    """Threads, each with a stream of its own, write their rows of one
    mirrored field and fields of their own, and read them back; in a child
    interpreter, with a timeout."""
    code = textwrap.dedent(
        """
        import threading
        import numpy as np
        import gtstore

        gtstore.use_gpu("emulated")
        shared = gtstore.zeros((8, 64, 16), device="gpu")
        errors = []

        def work(row):
            stream = gtstore.Stream()
            own = gtstore.zeros((64, 16), dims="JK", device="gpu", managed=None)
            try:
                with stream:
                    for n in range(1, 60):
                        own[...] = float(n)
                        shared[row] = own
                        copy = shared[row].copy()
                        got = float(copy[-1, -1])
                        if got != n:
                            errors.append((row, n, got))
                stream.synchronize()
            except Exception as e:
                errors.append(repr(e))

        threads = [threading.Thread(target=work, args=(row,)) for row in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        values = np.asarray(shared)
        print("errors", errors[:5], "last", sorted(set(values.ravel().tolist())))
        """
    )
    result = run_python(code, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "errors [] last [59.0]" in result.stdout, result.stdout


# ---- CUDA (a GPU, or the fake driver) ----------------------------------------------------------


def cuda_gpu():
    gtstore.use_gpu(None)
    gpu = gtstore.gpu()
    return gpu is not None and gpu["cuda_array_interface"]


def test_random_sequences_on_cuda():
    """The sequences on a CUDA GPU (the fake driver in CI): its streams,
    events and stream waits, without the engine's operations (CuPy's)."""
    if not cuda_gpu():
        pytest.skip("no CUDA GPU (nor the fake driver)")
    assert run_sequences(range(4), 60, cuda=True) == 0


def test_cuda_array_interface_exports_the_current_stream():
    if not cuda_gpu():
        pytest.skip("no CUDA GPU (nor the fake driver)")
    s = gtstore.Stream()
    a = gtstore.zeros(SHAPE, device="gpu")
    # without a current Stream: CUDA's legacy default stream (1), where the
    # consumer waits, as CuPy, torch and GT4Py work there by default
    assert a.__cuda_array_interface__["stream"] == 1
    with s:
        a[...] = 5.0
        assert a.__cuda_array_interface__["stream"] == s.ptr  # the consumer waits on s
    assert (np.asarray(a) == 5.0).all()
    b = gtstore.zeros(SHAPE, device="gpu", managed=None)
    with s:  # DLPack: the export ordered on the consumer's stream, a copy on it too
        a.__dlpack__(stream=s.ptr)
        b[...] = gtstore.from_dlpack(a)
    s.synchronize()
    assert (np.asarray(gtstore.storage(b, device="cpu")) == 5.0).all()


def test_cuda_stream_protocol():
    """__cuda_stream__ (the CUDA stream protocol, which CuPy's
    Stream.from_external reads): (0, the handle) for a CUDA GPU's stream; a
    TypeError for the emulated device's, whose handles are no CUDA
    streams."""
    with pytest.raises(TypeError, match="__cuda_stream__: a stream of the emulated device is "
                                        "no CUDA stream"):
        gtstore.Stream().__cuda_stream__()
    if not cuda_gpu():
        pytest.skip("no CUDA GPU (nor the fake driver)")
    s = gtstore.Stream()
    assert s.__cuda_stream__() == (0, s.ptr) and s.ptr != 0
    assert gtstore.Stream(ptr=0).__cuda_stream__() == (0, 0)


def test_cupys_current_stream_is_the_default_on_cuda():
    """On CUDA, where CuPy is imported, its current stream is gtstore's
    default current stream (its stream 0, and no CuPy, the legacy default
    stream: a stream, 1), and `with stream:` makes the stream CuPy's
    current one too: through Stream.from_external and the CUDA stream
    protocol (CuPy 14), else ExternalStream (before). A stand-in for CuPy's stream API
    (cupy.cuda's get_current_stream, Stream.from_external and
    ExternalStream) in a child interpreter, so that the fake driver's
    streams play CuPy's."""
    if not cuda_gpu():
        pytest.skip("no CUDA GPU (nor the fake driver)")
    code = textwrap.dedent(
        """
        import gc, sys, threading, types, weakref
        import numpy as np
        import gtstore

        gtstore.use_gpu(None)
        cupys = gtstore.Stream()  # the stream CuPy computes on
        entered = []

        class ExternalStream:
            def __init__(self, ptr):
                self.ptr = ptr
            def __enter__(self):
                self.thread = threading.get_ident()
                entered.append(self.ptr)
            def __exit__(self, *exc):
                entered.append(-self.ptr if self.thread == threading.get_ident() else None)

        a = gtstore.zeros((32, 32, 4), device="gpu")
        print("legacy", a.__cuda_array_interface__["stream"] == 1)  # no CuPy yet

        current = [0]  # CuPy's default: its stream 0, the legacy default stream
        cuda = types.ModuleType("cupy.cuda")
        cuda.get_current_stream = lambda: types.SimpleNamespace(ptr=current[0])
        cuda.ExternalStream = ExternalStream
        cupy = types.ModuleType("cupy")
        cupy.cuda = cuda
        sys.modules.update({"cupy": cupy, "cupy.cuda": cuda})
        a[...] = 2.0  # queued on the legacy default stream
        print("zero", a.__cuda_array_interface__["stream"] == 1)
        current[0] = cupys.ptr
        a[...] = 3.0  # queued on CuPy's current stream
        print("default", a.__cuda_array_interface__["stream"] == cupys.ptr)
        mine = gtstore.Stream()
        with mine:
            a[...] = 4.0
            print("current", a.__cuda_array_interface__["stream"] == mine.ptr)
        print("entered", entered == [mine.ptr, -mine.ptr])
        protocol = []

        class Foreign(ExternalStream):  # keeps the object, as CuPy 14's does
            made = []

            def __init__(self, obj):
                protocol.append(obj.__cuda_stream__())
                super().__init__(protocol[-1][1])
                self.foreign = obj
                Foreign.made.append(weakref.ref(self))

        cuda.Stream = types.SimpleNamespace(from_external=Foreign)
        with mine:
            a[...] = 5.0
        print("protocol", protocol == [(0, mine.ptr)], entered[2:] == [mine.ptr, -mine.ptr])
        # two threads in `with mine:` at once: each exits the CuPy stream it entered
        inside, first_left = threading.Event(), threading.Event()

        def first():
            with mine:
                inside.wait(30)
            first_left.set()

        def second():
            with mine:
                inside.set()
                first_left.wait(30)

        threads = [threading.Thread(target=first), threading.Thread(target=second)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        print("threads", entered[4:] == [mine.ptr, mine.ptr, -mine.ptr, -mine.ptr])
        # a thread that ends inside `with`: its stream and CuPy's, which
        # hold each other, are collected
        thread = threading.Thread(target=lambda: gtstore.Stream().__enter__())
        thread.start()
        thread.join()
        gc.collect()
        print("collected", len(Foreign.made) == 4 and Foreign.made[-1]() is None)
        print("values", float(np.asarray(a).min()), float(np.asarray(a).max()))
        """
    )
    result = run_python(code, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["legacy", "True", "zero", "True", "default", "True",
                                     "current", "True", "entered", "True",
                                     "protocol", "True", "True", "threads", "True",
                                     "collected", "True",
                                     "values", "5.0", "5.0"], result.stdout


@pytest.mark.parametrize(
    "managed, method",
    [(None, "synchronize"), (None, "host_to_device"), (None, "device_to_host"),
     ("gt4py", "synchronize"), ("gt4py", "host_to_device")],  # the device side made current
)
def test_sync_methods_wait_for_the_device_work(managed, method):
    """The sync methods wait for the storage's device work on any stream,
    also where it has one side (a GPUStorage): what a GPU stencil's acquire
    and a reader of the device memory behind gtstore's back rely on."""
    s1 = gtstore.Stream()
    a = gtstore.zeros((128, 128, 16), device="gpu", managed=managed)
    behind = a.to_ndarray()  # the device memory, read later behind gtstore's back
    for value in range(1, 4):
        with s1:
            for n in range(6):
                a[...] = float(-n)
            a[...] = float(value)
        getattr(a, method)()
        assert (behind == value).all()
