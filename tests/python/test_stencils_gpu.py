"""Built-in stencils on the GPU (``device="gpu"``): one kernel per call,
queued on the current stream, against NumPy references.

Run on every GPU gtstore can reach: the emulated device always (its streams
run the kernel's threads later, on a worker, after a random delay, so that
a missing wait or record gives a wrong value here), and CUDA where a driver
answers (a GPU, or the fake driver of tests/c as device 0, which runs the
same per-thread code).
"""

import contextlib
import ctypes
import os
import warnings

import numpy as np
import pytest

import gtstore
from gtstore import Field, stencils
from gtstore._gtstore import _skip_stream_waits_for_testing as skip_waits

from conftest import ArrayOnly, WritableArrayOnly, cuda_present, refused
from test_stencils import hdiff_ref, lap_ref

SHAPE = (14, 11, 5)
LAYOUTS = ["IJK", "KJI", "JKI"]


GPUS = ["emulated"] + (["cuda"] if cuda_present() else [])
if os.environ.get("GTSTORE_REQUIRE_CUDA") and "cuda" not in GPUS:  # ./dev gpu-check
    raise RuntimeError("GTSTORE_REQUIRE_CUDA is set, but gtstore reaches no CUDA GPU")


@pytest.fixture(params=GPUS)
def gpu(request):
    gtstore.use_gpu(request.param)
    yield request.param
    gtstore.use_gpu(None)


def fake_cuda_stat(name):
    """A count of the fake CUDA driver's (tests/c/fake_cuda.c), or None (the
    emulated device, or a real driver)."""
    library = os.environ.get("GTSTORE_LIBCUDA", "")
    if "fake_cuda" not in os.path.basename(library):
        return None
    fake = ctypes.CDLL(library)  # the driver the library loaded: the same handle
    fake.fake_cuda_stat.restype = ctypes.c_longlong
    fake.fake_cuda_stat.argtypes = [ctypes.c_char_p]
    return fake.fake_cuda_stat(name.encode())


def stencil_launches():
    """The fake CUDA driver's count of stencil kernels run, or None."""
    return fake_cuda_stat("stencil_launches")


def on_gpu(values, layout="IJK", halo=None):
    """A device-only GPU storage of `values` (I, J, K) in memory order `layout`."""
    return gtstore.storage(values, device="gpu", managed=None, layout=layout, halo=halo)


def host(storage):
    """A GPU storage's values (I, J, K) on the host (no CuPy needed)."""
    return np.asarray(gtstore.storage(storage, device="cpu"))


@contextlib.contextmanager
def no_copies():
    """Every field is bound in place: a copy in would warn."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", gtstore.FieldWarning)
        yield


@pytest.mark.parametrize("layout", LAYOUTS)
def test_each_stencil_on_device_storages(gpu, layout):
    rng = np.random.default_rng(3)
    inp, coeff = rng.random(SHAPE), 0.1 * rng.random(SHAPE)
    before = stencil_launches() if gpu == "cuda" else None
    with no_copies():
        out = on_gpu(np.full(SHAPE, -1.0), layout)
        stencils.copy(out, on_gpu(inp, layout[::-1]), device="gpu")
        np.testing.assert_array_equal(host(out), inp)

        out = on_gpu(np.full(SHAPE, -1.0), layout)
        stencils.laplacian(out, on_gpu(inp, "JIK"), origin=(1, 1, 0), device="gpu")
        result = host(out)
        np.testing.assert_allclose(result[1:-1, 1:-1], lap_ref(inp), rtol=1e-12)
        assert (result[0] == -1).all() and (result[:, -1] == -1).all()  # outside the domain

        out = on_gpu(np.zeros(SHAPE), layout)
        stencils.hdiff(out, on_gpu(inp, layout[::-1]), on_gpu(coeff, layout),
                       origin=(2, 2, 0), device="gpu")
        np.testing.assert_allclose(host(out)[2:-2, 2:-2], hdiff_ref(inp, coeff),
                                   rtol=1e-12)
    if before is not None:
        assert stencil_launches() - before == 3


def test_copy_runs_where_device_says(gpu):
    """device= picks the signature: "cpu" (the default) reads the host side
    of a mirrored storage, "gpu" its device side."""
    values = np.arange(np.prod(SHAPE), dtype=float).reshape(SHAPE)
    out, inp = gtstore.zeros(SHAPE, device="gpu"), gtstore.storage(values, device="gpu")
    stencils.copy(out, inp, device="gpu")
    np.testing.assert_array_equal(np.asarray(out), values)
    out[...] = 0.0
    stencils.copy(out, inp)
    np.testing.assert_array_equal(np.asarray(out), values)
    assert stencils.signature("hdiff", device="gpu").device == "gpu"
    assert stencils.signature("hdiff").device == "cpu"


def test_tridiagonal_on_the_gpu(gpu):
    rng = np.random.default_rng(11)
    shape = (5, 4, 7)
    a, c = rng.random(shape) - 0.5, rng.random(shape) - 0.5
    b, d = 3 + rng.random(shape), 10 * rng.random(shape)
    for layout in LAYOUTS:
        x = on_gpu(np.zeros(shape), layout)
        with no_copies():
            stencils.tridiagonal(x, on_gpu(a, layout[::-1]), on_gpu(b), on_gpu(c, layout),
                                 on_gpu(d), device="gpu")
        result = host(x)
        for i in range(shape[0]):
            for j in range(shape[1]):
                m = np.diag(b[i, j]) + np.diag(a[i, j, 1:], -1) + np.diag(c[i, j, :-1], 1)
                np.testing.assert_allclose(result[i, j], np.linalg.solve(m, d[i, j]),
                                           rtol=1e-12)
    x = on_gpu(np.full(shape, -1.0))
    stencils.tridiagonal(x, on_gpu(a), on_gpu(b), on_gpu(c), on_gpu(d), domain=(5, 4, 1),
                         device="gpu")  # one level: x = d / b
    np.testing.assert_allclose(host(x)[:, :, 0], d[:, :, 0] / b[:, :, 0], rtol=1e-15)
    assert (host(x)[:, :, 1:] == -1).all()


def stream_sequences(rounds):
    """Sequences on a stream, each kernel reading the last one's output,
    the input written on another stream first, the result read on the
    host; returns how many rounds gave wrong values."""
    rng = np.random.default_rng(5)
    values = rng.random(SHAPE)
    twice = lap_ref(lap_ref(values))
    producer, consumer = gtstore.Stream(), gtstore.Stream()
    wrong = 0
    for _ in range(rounds):
        inp = on_gpu(np.zeros(SHAPE), halo=(2, 2, 0))
        lap = on_gpu(np.zeros(SHAPE), halo=(2, 2, 0))
        out = on_gpu(np.zeros(SHAPE), halo=(2, 2, 0))
        with producer:
            inp[...] = on_gpu(values, halo=(2, 2, 0))
        with consumer:
            stencils.laplacian(lap, inp, origin=(1, 1, 0), domain=(12, 9, 5), device="gpu")
            stencils.laplacian(out, lap, device="gpu")  # origin: the halo
            stencils.copy(inp, out, device="gpu")  # then overwrites its input
        wrong += not (np.allclose(host(out)[2:-2, 2:-2], twice, rtol=1e-12) and
                      np.allclose(host(inp)[2:-2, 2:-2], twice, rtol=1e-12))
    return wrong


def test_stencils_follow_the_stream_order(gpu):
    """Every wait is needed: on the emulated device a missing one reads
    values not yet written (the detector below)."""
    assert stream_sequences(5) == 0


def test_detector_a_missing_wait_gives_wrong_values(emulated_gpu):
    skip_waits(True)
    try:
        wrong = stream_sequences(10)
    finally:
        skip_waits(False)
    assert wrong > 0


def test_host_fields_are_copied_in_and_out(gpu):
    """Host memory on a GPU stencil: copied to the GPU, the output back."""
    rng = np.random.default_rng(8)
    inp, coeff = rng.random(SHAPE), np.full(SHAPE, 0.05)
    out = np.zeros(SHAPE)
    with pytest.warns(gtstore.FieldWarning) as caught:
        stencils.hdiff(out, inp, Field(coeff, "IJK"), origin=(2, 2, 0), device="gpu")
    assert len(caught) == 3
    assert "and back after the run" in str(caught[0].message)
    np.testing.assert_allclose(out[2:-2, 2:-2], hdiff_ref(inp, coeff), rtol=1e-12)
    with no_copies(), pytest.raises(gtstore.FieldWarning, match="^out: no buffer on the gpu"):
        stencils.copy(out, inp, device="gpu")  # the warning as an error, named once


def test_errors_on_the_gpu(gpu):
    a = on_gpu(np.zeros(SHAPE))
    with pytest.raises(ValueError, match="inp: shares memory with the output out"):
        stencils.laplacian(a, a, origin=(1, 1, 0), device="gpu")
    with pytest.raises(ValueError, match="inp: dimension I: origin 0 - lower extent 1"):
        stencils.laplacian(a, on_gpu(np.zeros(SHAPE)), device="gpu")
    with pytest.raises(ValueError, match="device: expected 'cpu' or 'gpu', got 'tpu'"):
        stencils.laplacian(a, on_gpu(np.zeros(SHAPE)), device="tpu")
    with pytest.raises(ValueError, match="device: expected 'cpu' or 'gpu'"):
        stencils.signature("copy", device=0)
    if gpu == "emulated":  # its managed memory is host memory, out of its kernels' reach
        managed = gtstore.zeros(SHAPE, device="gpu", managed="cuda")
        with pytest.raises(ValueError, match="inp: 0x.* is not memory of the emulated device"):
            stencils.copy(on_gpu(np.zeros(SHAPE)), managed, device="gpu")
    if gpu == "cuda":  # a field on the emulated device, the stencil on CUDA
        gtstore.use_gpu("emulated")
        elsewhere = on_gpu(np.zeros(SHAPE))
        gtstore.use_gpu("cuda")
        with pytest.raises(ValueError, match="inp: its memory is on the emulated device, the "
                                             "stencil runs on cuda:0"):
            stencils.copy(on_gpu(np.zeros(SHAPE)), elsewhere, device="gpu")


def test_copies_that_share_memory_are_refused(gpu):
    """An output that shares memory with an input is refused on the host
    (the kernels read what they write); on the GPU, where host memory is
    copied in, the same call is refused too, not computed from a copy."""
    h = np.random.default_rng(5).random(SHAPE)
    before = h.copy()
    for out, inp in [(h, h), (h[1:], h[:-1])]:
        with pytest.raises(ValueError, match="inp: shares memory with the output out"):
            stencils.laplacian(out, inp, origin=(1, 1, 0))
        with refused(ValueError, r"^out and inp share memory, and the stencil computes on a "
                                 r"copy of out \(no buffer on the gpu\)"):
            stencils.laplacian(out, inp, origin=(1, 1, 0), device="gpu")
    np.testing.assert_array_equal(h, before)
    out = np.zeros(SHAPE)  # inputs may share memory
    with pytest.warns(gtstore.FieldWarning):
        stencils.hdiff(out, h, Field(h, "IJK"), origin=(2, 2, 0), device="gpu")
    np.testing.assert_allclose(out[2:-2, 2:-2], hdiff_ref(h, h), rtol=1e-12)


def test_managed_memory_work_completes_on_return(gpu):
    """No event orders a GPU's managed memory: libgtstore's own work on it
    waits for the whole device and completes on return. A stencil on a
    stream that touches it completes before the call returns too (the
    stream synchronised), so that work on another stream cannot overtake
    it; with device memory only, the call returns without waiting."""
    if gpu != "cuda":
        pytest.skip("the emulated device's kernels do not reach its managed memory")
    inp = np.random.default_rng(5).random(SHAPE)
    managed = gtstore.zeros(SHAPE, device="gpu", managed="cuda")
    device_only = on_gpu(np.zeros(SHAPE))
    source = on_gpu(inp)
    with gtstore.Stream():
        before = fake_cuda_stat("stream_syncs")
        stencils.copy(device_only, source, device="gpu")
        assert fake_cuda_stat("stream_syncs") == before  # queued, not waited for
        stencils.copy(managed, source, device="gpu")
        after = fake_cuda_stat("stream_syncs")
        assert before is None or after > before
    np.testing.assert_array_equal(host(managed), inp)
    np.testing.assert_array_equal(host(device_only), inp)


def test_no_gpu_is_a_clear_error():
    """Without a GPU (none chosen, no driver) device="gpu" names the cause."""
    gtstore.use_gpu(None)
    if gtstore.gpu() is not None:
        pytest.skip("a GPU is present")
    with pytest.raises((RuntimeError, NotImplementedError), match="out: device: .*CUDA"):
        stencils.copy(np.zeros(SHAPE), np.ones(SHAPE), device="gpu")


def test_array_only_objects_on_the_gpu(gpu):
    """On a stencil on the GPU the array NumPy makes is host memory: copied
    to device memory and back, as any host field, then assigned to the
    object. On every GPU gtstore reaches."""
    values = np.random.default_rng(3).random(SHAPE)
    inp = ArrayOnly(values.copy())
    out = WritableArrayOnly(np.zeros(SHAPE))
    with pytest.warns(gtstore.FieldWarning) as caught:
        stencils.laplacian(out, inp, origin=(1, 1, 0), device="gpu")
    messages = sorted(str(w.message) for w in caught)
    assert messages == [
        "inp: no buffer on the gpu, where the stencil computes: copied to device memory "
        "(slow: transfers on every call)",
        "out: no buffer on the gpu, where the stencil computes: copied to device memory and "
        "back after the run, then assigned to the object (obj[...] = values) (slow: "
        "transfers on every call)"]
    np.testing.assert_allclose(out.values[1:-1, 1:-1], lap_ref(values), rtol=1e-13)
    assert out.assignments == 1
    with refused(TypeError, "^out: the stencil writes this field, and a field of type ArrayOnly"):
        stencils.copy(ArrayOnly(np.zeros(SHAPE)), inp, device="gpu")


def test_a_binding_entered_again_copies_in_again(gpu):
    """A Binding of a stencil on the GPU copies its host fields in again
    each time it is entered: a value written to the host memory between
    runs (here outside the domain, where the kernel writes nothing) is not
    overwritten by the stale copy's copy back. On every GPU gtstore
    reaches."""
    sig = gtstore.Signature(out=Field["f8", "IJK"], writes=["out"], device="gpu")
    out, obj = np.zeros(SHAPE), WritableArrayOnly(np.zeros(SHAPE))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gtstore.FieldWarning)
        calls = [(out, sig.bind(out, domain=(2, 2, 2))),
                 (obj.values, sig.bind(obj, domain=(2, 2, 2)))]
    for values, call in calls:
        for run in (1, 2):
            values[-1, -1, -1] = run  # after binding, and between the runs
            with call:
                pass
            assert values[-1, -1, -1] == run
