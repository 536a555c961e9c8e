"""Computing with storages (GDP-3's first draft, "Universal Functions" to "Mixing Types"):
ufuncs, operators and reductions on gtstore.Storage, broadcast by dims.

The oracle is NumPy on ndarrays the tests build themselves from the dims
labels: every storage operand is copied out, its axes moved to the result's
dims order and size-1 axes inserted for the dims it lacks; NumPy's own
broadcasting of those gives the expected values and dtype. The expected
output parameters (dims, aligned index, halo, layout, alignment) are
computed here from GDP-3's first draft's rules, never from gtstore's answers.
"""

import enum
import math
import operator
import warnings

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

import gtstore as gts
from conftest import BothEntries, CudaArray, DataInterface, gpu_entry

# ---- the oracle --------------------------------------------------------------------------

SPATIAL = ("I", "J", "K")


def dim_key(d):
    """Seed 001's order of a union of dims: I, J, K, then data dims by number."""
    return SPATIAL.index(d) if d in SPATIAL else 3 + int(d)


def result_dims(storages):
    """The dims of a result without out=: the storages' if they all agree,
    else their union in I, J, K, 0, ... order."""
    first = storages[0].dims
    if all(s.dims == first for s in storages):
        return tuple(first)
    return tuple(sorted({d for s in storages for d in s.dims}, key=dim_key))


def result_shape(storages, rdims):
    shape = []
    for d in rdims:
        extents = {s.shape[s.dims.index(d)] for s in storages if d in s.dims} - {1}
        assert len(extents) <= 1, "the strategy makes agreeing extents"
        shape.append(extents.pop() if extents else 1)
    return tuple(shape)


def along(s, rdims):
    """A copy of storage s's values with axes in the order of rdims, a size-1
    axis for every dim it lacks: what NumPy broadcasts like GDP-3's first draft."""
    a = np.array(np.asarray(s))
    order = sorted(range(s.ndim), key=lambda ax: rdims.index(s.dims[ax]))
    shape = [s.shape[s.dims.index(d)] if d in s.dims else 1 for d in rdims]
    return a.transpose(order).reshape(shape)


def runs_along(s, d, n):
    """The axis of s along result dim d of extent n, or None where s
    broadcasts there (lacks d, or has extent 1 where the result has more)."""
    if d not in s.dims:
        return None
    ax = s.dims.index(d)
    return ax if s.shape[ax] == n else None


def expected_parameters(storages, rdims, rshape, dtype):
    """Seed 001's "Output Storage Parameters" for storage inputs `storages`
    (in order) and a result of dims rdims, shape rshape and dtype."""
    aligned, halo = [], []
    for d, n in zip(rdims, rshape):
        axes = [(s, runs_along(s, d, n)) for s in storages]
        axes = [(s, ax) for s, ax in axes if ax is not None]
        aligned.append(max((s.aligned_index[ax] for s, ax in axes), default=0))
        lower = max((s.halo[ax][0] for s, ax in axes), default=0)
        end = min((s.shape[ax] - s.halo[ax][1] for s, ax in axes), default=n)
        end = max(end, lower)  # domains that do not meet: an empty one
        halo.append((lower, n - end))
    first = storages[0]
    inner = [p for p, (d, n) in enumerate(zip(rdims, rshape))
             if runs_along(first, d, n) is not None]
    outer = [p for p in range(len(rdims)) if p not in inner]
    inner.sort(key=lambda p: first.layout[runs_along(first, rdims[p], rshape[p])])
    layout = [0] * len(rdims)
    for rank, p in enumerate(outer + inner):
        layout[p] = rank
    alignment = np.dtype(dtype).itemsize
    for s in storages:
        alignment = math.lcm(alignment, s.alignment_size)
    return dict(dims=tuple(rdims), shape=tuple(rshape), aligned_index=tuple(aligned),
                halo=tuple(halo), layout=tuple(layout), alignment_size=alignment)


def assert_parameters(result, expected):
    assert isinstance(result, gts.Storage), type(result)
    got = {name: getattr(result, name) for name in expected}
    assert got == expected


def assert_values(result, expected, exact=True):
    got = np.asarray(result)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    assert got.shape == expected.shape
    if exact or expected.dtype.kind not in "fc":
        np.testing.assert_array_equal(got, expected)
    else:
        rtol = {2: 2e-3, 4: 2e-5, 8: 1e-12, 16: 1e-12}[expected.dtype.itemsize
                                                     // (2 if expected.dtype.kind == "c" else 1)]
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=rtol)


def numpy_result(func):
    """func() with NumPy's floating point warnings off; (value, None) or
    (None, the exception)."""
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return func(), None
    except Exception as error:  # noqa: BLE001 - NumPy's error is the expected one
        return None, error


# ---- strategies --------------------------------------------------------------------------

ALL_DIMS = ("I", "J", "K", "0")

#: How a storage is laid out: every preset (those of the GPU with their
#: layout and alignment in host memory), layout permutations (drawn),
#: alignment.
KINDS = ["plain", *gts.arrays.presets(), "layout", "aligned"]


def values(rng, shape, dtype):
    dtype = np.dtype(dtype)
    raw = rng.integers(-6, 7, size=shape)
    if dtype.kind == "b":
        return (raw > 0)
    if dtype.kind == "u":
        return np.abs(raw).astype(dtype)
    if dtype.kind == "f":
        return (raw + rng.integers(0, 4, size=shape) / 4).astype(dtype)
    if dtype.kind == "c":
        return (raw + 1j * rng.integers(-3, 4, size=shape)).astype(dtype)
    return raw.astype(dtype)


@st.composite
def storage_of(draw, extents, dtype, dims=None, rng_seed=None):
    """A storage of some dims (a random subset in a random order unless
    given) with the extents of `extents` (or 1: masked), random halo,
    layout and values."""
    if dims is None:
        dims = tuple(draw(st.permutations(ALL_DIMS))[: draw(st.integers(1, 4))])
    shape = tuple(1 if draw(st.integers(0, 5)) == 0 else extents[d] for d in dims)
    halo = []
    for n in shape:
        lo = draw(st.integers(0, n))
        halo.append((lo, draw(st.integers(0, n - lo))))
    kind = draw(st.sampled_from(KINDS))
    kwargs = dict(dims=dims, halo=tuple(halo))
    if kind == "layout":
        kwargs["layout"] = tuple(draw(st.permutations(range(len(dims)))))
    elif kind == "aligned":
        kwargs["alignment_size"] = 64
        kwargs["aligned_index"] = tuple(draw(st.integers(0, n - 1)) for n in shape)
    elif kind != "plain":
        kwargs["defaults"] = kind
        if gts.arrays.get_preset(kind)["device"] == "gpu":
            kwargs["device"] = "cpu"
    s = gts.zeros(shape, dtype, **kwargs)
    seed = draw(st.integers(0, 2**32 - 1))
    np.asarray(s)[...] = values(np.random.default_rng(seed), shape, dtype)
    if draw(st.integers(0, 3)) == 0:  # a view with negative strides (its halo swaps sides)
        s = s[tuple(slice(None, None, -1) if draw(st.booleans()) else slice(None) for _ in dims)]
    return s


EXTENTS = st.fixed_dictionaries({d: st.integers(2, 4) for d in ALL_DIMS})

INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOAT_DTYPES = ["float16", "float32", "float64"]
NUMERIC = INT_DTYPES + FLOAT_DTYPES + ["complex64", "complex128"]

FAMILIES = {
    "arithmetic": ([np.add, np.subtract, np.multiply, np.true_divide, np.floor_divide,
                    np.power, np.remainder, np.negative, np.positive, np.absolute],
                   INT_DTYPES + FLOAT_DTYPES + ["complex128"]),
    "comparison": ([np.equal, np.not_equal, np.less, np.less_equal, np.greater,
                    np.greater_equal], ["bool"] + INT_DTYPES + FLOAT_DTYPES),
    "logical": ([np.logical_and, np.logical_or, np.logical_xor, np.logical_not],
                ["bool", "int32", "float64", "uint8"]),
    "math": ([np.sqrt, np.exp, np.sin, np.cos, np.tanh, np.log, np.absolute, np.floor,
              np.sign, np.square, np.arctan2, np.hypot, np.maximum, np.minimum,
              np.fmod], FLOAT_DTYPES),
    # bool outputs of float inputs (NumPy 2.4.6's loops leave elements of
    # strided ones unwritten: gtstore._numpy_loops routes around that)
    "predicate": ([np.isnan, np.isinf, np.isfinite, np.signbit], FLOAT_DTYPES),
    "bitwise": ([np.bitwise_and, np.bitwise_or, np.bitwise_xor, np.invert, np.left_shift,
                 np.right_shift], ["bool"] + INT_DTYPES),
}
EXACT = {"arithmetic", "comparison", "logical", "bitwise", "predicate"}


def exact(family, ufunc, dtype, inputs):
    """Whether gtstore's result must equal NumPy's bit for bit. NumPy's
    float power runs SIMD code on aligned runs and libm's pow on the rest,
    which can differ in the last place: where the elements fall (a storage's
    padding and alignment against NumPy's) picks one or the other. So does
    the absolute value of a complex number (a hypot): |3+3j| came out
    4.242640687119285 on a storage's layout and ...286 on NumPy's."""
    inexact_power = ufunc is np.power and np.dtype(dtype).kind in "fc"
    complex_absolute = ufunc is np.absolute and any(np.iscomplexobj(x) for x in inputs)
    return family in EXACT and not inexact_power and not complex_absolute


class Level(enum.IntEnum):
    """Subclasses of Python numbers are operands too (NumPy types them as
    their arrays: strongly)."""

    TWO = 2


class Weight(float):
    pass


SCALARS = [0, 1, 2, -1, 3, 0.5, 2.5, True, np.float32(1.5), np.int8(2), np.uint8(3),
           np.float64(-2.0), Level.TWO, Weight(0.5)]


@st.composite
def call_case(draw, family):
    """(ufunc, gtstore operands, NumPy operands, storage inputs, result dims,
    result shape): at least one storage; the others storages (one dtype
    family), arrays without dims of the result's shape (extents 1
    broadcasting), 3-d arrays read as I, J, K (extents 1 masked) or
    scalars."""
    ufuncs, dtypes = FAMILIES[family]
    ufunc = draw(st.sampled_from(ufuncs))
    extents = draw(EXTENTS)
    kinds = ["storage"] + [draw(st.sampled_from(["storage", "storage", "array", "array3",
                                                 "scalar"]))
                           for _ in range(ufunc.nin - 1)]
    kinds = draw(st.permutations(kinds))
    same_dims = draw(st.booleans())
    dims = None
    slots = []
    for kind in kinds:
        if kind == "storage":
            s = draw(storage_of(extents, draw(st.sampled_from(dtypes)), dims=dims))
            dims = s.dims if same_dims else None
            slots.append(s)
        else:
            slots.append(kind)
    storages = [s for s in slots if isinstance(s, gts.Storage)]
    rdims = result_dims(storages)
    rshape = result_shape(storages, rdims)
    if len(rdims) == 3:  # a 3-d array of exactly the storages' shape: by position
        slots = ["array" if isinstance(x, str) and x == "array3" else x for x in slots]
    ours = []
    for slot in slots:
        if isinstance(slot, gts.Storage):
            ours.append(slot)
        elif slot in ("array", "array3"):
            if slot == "array" and len(rdims) == 3:  # 3-d with 1s would be I, J, K
                shape = rshape
            elif slot == "array":
                shape = tuple(1 if draw(st.integers(0, 3)) == 0 else n for n in rshape)
            else:
                known = dict(zip(rdims, rshape))
                shape = tuple(1 if draw(st.integers(0, 2)) == 0 else known.get(d, extents[d])
                              for d in SPATIAL)
            seed = draw(st.integers(0, 2**32 - 1))
            ours.append(values(np.random.default_rng(seed), shape, draw(st.sampled_from(dtypes))))
        else:
            ours.append(draw(st.sampled_from(SCALARS)))
    kinds = ["storage" if isinstance(slot, gts.Storage) else slot for slot in slots]
    arrays3 = [x for x, kind in zip(ours, kinds) if kind == "array3"]
    event(f"operands: {'+'.join(sorted(kinds))}")
    added = {d for a in arrays3 for d, n in zip(SPATIAL, a.shape) if n != 1} - set(rdims)
    if arrays3:  # their implicit I, J, K join the union (sorted) where they add dims
        if added:
            rdims = tuple(sorted(set(rdims) | added, key=dim_key))
        rshape = tuple(dict(zip(result_dims(storages), rshape)).get(d, 1) for d in rdims)
        for a in arrays3:
            rshape = tuple(max(n, a.shape[SPATIAL.index(d)]) if d in SPATIAL else n
                           for d, n in zip(rdims, rshape))
    theirs = []
    for x, kind in zip(ours, kinds):
        if kind == "storage":
            theirs.append(along(x, rdims))
        elif kind == "array3":  # I, J, K moved into the result's order
            order = sorted(range(3), key=lambda ax: rdims.index(SPATIAL[ax])
                           if SPATIAL[ax] in rdims else len(rdims) + ax)
            theirs.append(x.transpose(order).reshape(
                [x.shape[SPATIAL.index(d)] if d in SPATIAL else 1 for d in rdims]))
        elif kind == "array":
            theirs.append(x.copy())
        else:
            theirs.append(x)
    return ufunc, ours, theirs, storages, rdims, rshape


def check_call(family, case):
    ufunc, ours, theirs, storages, rdims, rshape = case
    expected, error = numpy_result(lambda: ufunc(*theirs))
    if error is not None:
        with pytest.raises(type(error)):
            with np.errstate(all="ignore"):
                ufunc(*ours)
        return
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = ufunc(*ours)
    expected = np.asarray(expected)
    expected = np.broadcast_to(expected, rshape) if expected.shape != rshape else expected
    assert_parameters(result, expected_parameters(storages, rdims, rshape, expected.dtype))
    assert_values(result, expected, exact=exact(family, ufunc, expected.dtype, theirs))
    return result, expected


# ---- ufunc.__call__ against NumPy ----------------------------------------------------------


@pytest.mark.parametrize("family", list(FAMILIES))
@settings(max_examples=250, deadline=None)
@given(data=st.data())
def test_ufunc_call_like_numpy(family, data):
    check_call(family, data.draw(call_case(family), label="case"))


def out_like(draw, rdims, rshape, dtype, extra):
    """An output storage of the result's dims in some order, plus `extra`
    dims (replication), random halo and layout."""
    if extra is None:
        dims = tuple(rdims)
        extra = ()
    else:
        dims = list(rdims) + [d for d in extra if d not in rdims]
        dims = tuple(draw(st.permutations(dims)))
    extents = dict(zip(rdims, rshape))
    extents.update({d: 3 for d in extra if d not in rdims})
    kwargs = dict(dims=dims, halo=tuple((1 if extents[d] > 1 else 0, 0) for d in dims))
    if draw(st.booleans()):
        kwargs["defaults"] = draw(st.sampled_from(["gt:cpu_ifirst", "gt:cpu_kfirst"]))
    return gts.full(tuple(extents[d] for d in dims), 7, dtype, **kwargs)


@pytest.mark.parametrize("family", ["arithmetic", "math", "bitwise"])
@settings(max_examples=120, deadline=None)
@given(data=st.data())
def test_ufunc_out_and_replication(family, data):
    """out= a storage of the result's dims in any order, or of more dims:
    the result is written along out's dims and replicated along the extra
    ones; the call returns out itself."""
    ufunc, ours, theirs, storages, rdims, rshape = data.draw(call_case(family), label="case")
    expected, error = numpy_result(lambda: ufunc(*theirs))
    if error is not None:
        return
    expected = np.broadcast_to(np.asarray(expected), rshape)
    extra = data.draw(st.lists(st.sampled_from(ALL_DIMS), max_size=2, unique=True))
    if any(isinstance(x, np.ndarray) for x in ours):
        extra = None  # arrays without dims match the output's dims by position
    out = out_like(data.draw, rdims, rshape, expected.dtype, extra)
    with np.errstate(all="ignore"):
        assert ufunc(*ours, out=out) is out
        assert ufunc(*ours, out=(out,)) is out
    # the expected values along out's dims
    full = expected.reshape(rshape + (1,) * (out.ndim - len(rdims)))
    order = list(rdims) + [d for d in out.dims if d not in rdims]
    full = np.broadcast_to(full.transpose([order.index(d) for d in order]),
                           tuple(out.shape[out.dims.index(d)] for d in order))
    want = full.transpose([order.index(d) for d in out.dims])
    assert out.dims == tuple(out.dims)
    assert_values(out, np.ascontiguousarray(want),
                  exact=family != "math" and exact("arithmetic", ufunc, expected.dtype, theirs))


def test_out_replicates_along_missing_dims():
    a = gts.storage(np.arange(6.0).reshape(2, 3), dims="IJ")
    out = gts.zeros((4, 2, 3), dims="KIJ", halo=((1, 1), (0, 0), (0, 0)))
    np.multiply(a, 2, out=out)
    for k in range(4):
        np.testing.assert_array_equal(np.asarray(out)[k], 2 * np.arange(6.0).reshape(2, 3))
    assert out.halo == ((1, 1), (0, 0), (0, 0))


def test_out_ndarray_and_where():
    a = gts.storage(np.arange(6.0).reshape(2, 3), dims="IJ")
    target = np.full((2, 3), -1.0)
    assert np.add(a, 1, out=target) is target
    np.testing.assert_array_equal(target, np.arange(6.0).reshape(2, 3) + 1)
    mask = gts.storage(np.array([True, False, True]), dims="J")
    out = gts.zeros((2, 3), dims="IJ")
    np.add(a, 10, out=out, where=mask)
    np.testing.assert_array_equal(np.asarray(out), [[10, 0, 12], [13, 0, 15]])


def test_two_outputs():
    a = gts.storage(np.arange(1, 7.0).reshape(2, 3), dims="JK")
    q, r = np.divmod(a, 4)
    assert q.dims == r.dims == ("J", "K")
    np.testing.assert_array_equal(np.asarray(q), np.arange(1, 7.0).reshape(2, 3) // 4)
    np.testing.assert_array_equal(np.asarray(r), np.arange(1, 7.0).reshape(2, 3) % 4)
    m, e = np.frexp(a)
    np.testing.assert_array_equal(np.asarray(m) * 2.0 ** np.asarray(e), np.asarray(a))


# ---- on a GPU: the engine (NumPy over the emulated device's memory) -------------------------

DEVICE_KINDS = {None: "GPUStorage", "gt4py": "SoftwareManagedGPUStorage",
                "cuda": "CudaManagedGPUStorage"}


class emulated_gpu:
    """The emulated device plays the GPU (a context manager: hypothesis
    tests take no function-scoped fixtures)."""

    def __enter__(self):
        gts.use_gpu("emulated")

    def __exit__(self, *exc):
        gts.use_gpu(None)


def to_device(operands, managed):
    """The storages among `operands` copied to the GPU, as storages of one
    managed kind (a software-managed one holds its values on the device,
    so the device computes)."""
    return [gts.storage(x, device="gpu", managed=managed) if isinstance(x, gts.Storage) else x
            for x in operands]


def on_host(result):
    return np.asarray(gts.storage(result, device="cpu"))


@pytest.mark.parametrize("family", list(FAMILIES))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_ufunc_call_on_the_device_like_numpy(family, data):
    """The engine's path: device views with the result's strides (0 where
    they broadcast), arrays and host values copied to the device, an
    output of the inputs' storage type with GDP-3's first draft's dims."""
    ufunc, ours, theirs, storages, rdims, rshape = data.draw(call_case(family), label="case")
    managed = data.draw(st.sampled_from(list(DEVICE_KINDS)), label="managed")
    with emulated_gpu():
        operands = to_device(ours, managed)
        expected, error = numpy_result(lambda: ufunc(*theirs))
        if error is not None:
            with pytest.raises(type(error)), np.errstate(all="ignore"):
                ufunc(*operands)
            return
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = ufunc(*operands)
        assert type(result).__name__ == DEVICE_KINDS[managed] and result.dims == rdims
        expected = np.broadcast_to(np.asarray(expected), rshape)
        assert_values(on_host(result), np.ascontiguousarray(expected),
                      exact=exact(family, ufunc, expected.dtype, theirs))


@pytest.mark.parametrize("family", ["arithmetic", "math", "comparison"])
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_out_and_where_on_the_device_like_numpy(family, data):
    """out= on the device or in host memory, with where=: the engine
    computes whole, then copies where the mask holds; elsewhere out keeps
    its values."""
    ufunc, ours, theirs, storages, rdims, rshape = data.draw(call_case(family), label="case")
    expected, error = numpy_result(lambda: ufunc(*theirs))
    if error is not None or any(isinstance(x, np.ndarray) for x in ours):
        return
    expected = np.broadcast_to(np.asarray(expected), rshape)
    mask = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1))).random(rshape) < 0.5
    out_on = data.draw(st.sampled_from(["device", "host storage", "ndarray"]), label="out")
    with emulated_gpu():
        operands = to_device(ours, None)
        if out_on == "ndarray":
            out = np.full(rshape, 7, expected.dtype)
        else:
            out = gts.full(rshape, 7, expected.dtype, dims=rdims,
                           device="gpu" if out_on == "device" else "cpu",
                           managed=None if out_on == "device" else "gt4py")
        with np.errstate(all="ignore"):
            assert ufunc(*operands, out=out, where=gts.storage(mask, dims=rdims)) is out
        got = np.asarray(out) if out_on == "ndarray" else on_host(out)
    want = np.where(mask, expected, np.asarray(7).astype(expected.dtype))
    assert_values(got, want,
                  exact=family != "math" and exact("arithmetic", ufunc, want.dtype, theirs))


def test_device_compute_into_host_outputs():
    """Inputs on the device, outputs in host memory: the device computes,
    the outputs receive the result; the output keeps its type."""
    with emulated_gpu():
        g = gts.full((4, 5), 1.5, device="gpu", managed=None, dims="IJ")
        h = gts.zeros((4, 5), dims="IJ")
        assert np.add(g, g, out=h) is h and type(h) is gts.CPUStorage
        np.testing.assert_array_equal(np.asarray(h), 3.0)
        a = np.zeros((4, 5))
        assert np.multiply(g, 2, out=a) is a
        np.testing.assert_array_equal(a, 3.0)
        q, r = np.divmod(g, 1.0, out=(gts.zeros((4, 5), dims="IJ"), None))
        assert type(q) is gts.CPUStorage and type(r) is gts.GPUStorage
        np.testing.assert_array_equal(np.asarray(q), 1.0)
        np.testing.assert_array_equal(r.to_ndarray(), 0.5)


def test_device_where_scalar():
    """where= a scalar on the device: False writes nothing, NumPy's True
    everything (the mask reaches the engine's copyto as an array)."""
    with emulated_gpu():
        g = gts.full((3, 4), 1.0, device="gpu", managed=None)
        out = gts.full((3, 4), 7.0, device="gpu", managed=None)
        for where in (False, np.False_):
            np.add(g, 1, out=out, where=where)
            np.testing.assert_array_equal(out.to_ndarray(), 7.0)
        np.add(g, 1, out=out, where=np.True_)
        np.testing.assert_array_equal(out.to_ndarray(), 2.0)


def test_device_assignment_both_ways():
    """s[...] = value by dims between host and device memory."""
    with emulated_gpu():
        g = gts.zeros((4, 5), device="gpu", managed=None, dims="IJ")
        g[...] = gts.storage(np.arange(5.0), dims="J")  # host value, device target
        np.testing.assert_array_equal(g.to_ndarray(), np.broadcast_to(np.arange(5.0), (4, 5)))
        g[1:3] = np.float32(-1)
        h = gts.zeros((5, 4), dims="JI")
        h[...] = g  # device value, host target: by dims, transposed
        np.testing.assert_array_equal(np.asarray(h), g.to_ndarray().T)


def test_device_operands_of_other_shapes():
    with emulated_gpu():
        z = gts.zeros((0, 5), device="gpu", managed=None)
        assert (z + 1).shape == (0, 5)
        g = gts.full((3,), 2.0, device="gpu", managed=None, dims="K")
        g += 1  # in place on device memory
        np.testing.assert_array_equal(g.to_ndarray(), 3.0)
        assert float(np.add.reduce(g)) == 9.0


def test_cuda_array_without_cuda_is_refused():
    """An operand that says it is CUDA memory cannot join storages on the
    emulated device: a TypeError, and its address (0 here) is never read."""

    class CudaArray:
        __cuda_array_interface__ = {"shape": (4, 5), "typestr": "<f8", "data": (0, False),
                                    "version": 3}
        shape, dtype = (4, 5), np.dtype("f8")

    with emulated_gpu():
        g = gts.full((4, 5), 1.0, device="gpu", managed=None)
        with pytest.raises(TypeError, match="CUDA array, but the storages' GPU is the emulated"):
            g + CudaArray()
        with pytest.raises(TypeError, match="CUDA array"):
            np.add(CudaArray(), 1.0, out=g)
        # assigned, it is read as the creation functions read it: its memory
        # must be a device's (docs/storage.md, "GPU arrays of other libraries")
        with pytest.raises(ValueError, match=r"value: address .* is not the memory of a device"):
            g[...] = CudaArray()


# ---- output parameters, case by case --------------------------------------------------------


def test_issue_example_ij_plus_k():
    a = gts.ones((70, 70), dims="IJ", defaults="gt:cpu_ifirst", halo=((3, 3), (3, 3)))
    b = gts.full((80,), 2.0, dims="K")
    c = a + b
    assert c.dims == ("I", "J", "K") and c.shape == (70, 70, 80)
    assert c.halo == ((3, 3), (3, 3), (0, 0))
    assert c.aligned_index == (3, 3, 0)
    assert c.layout == (2, 1, 0)  # a's layout (I contiguous), K outermost
    assert c.strides[0] == 8 and c.strides[2] > c.strides[1]
    assert np.all(np.asarray(c) == 3.0)
    r = c.sum(axis=2)
    assert r.dims == ("I", "J") and np.all(np.asarray(r) == 240.0)
    np.sqrt(c, out=c)
    np.testing.assert_allclose(np.asarray(c), np.sqrt(3.0))


def test_aligned_index_is_the_largest_per_dim():
    a = gts.ones((6, 6), dims="IJ", aligned_index=(1, 4))
    b = gts.ones((6, 6), dims="IJ", aligned_index=(3, 2))
    assert (a * b).aligned_index == (3, 4)
    assert (b * a).aligned_index == (3, 4)


def test_halo_makes_the_domain_the_intersection():
    a = gts.ones((10,), dims="I", halo=((1, 4),))  # domain [1, 6)
    b = gts.ones((10,), dims="I", halo=((3, 1),))  # domain [3, 9)
    assert (a + b).halo == ((3, 4),)  # [3, 6)
    c = gts.ones((10,), dims="I", halo=((7, 0),))  # [7, 10): meets none of [1, 6)
    d = a + c
    assert d.domain_shape == (0,) and d.halo[0][0] == 7


def test_layout_of_the_first_storage_input():
    a = gts.ones((2, 3, 4), dims="IJK", layout=(1, 2, 0))
    b = gts.ones((2, 3, 4), dims="IJK", layout=(0, 1, 2))
    assert (a + b).layout == (1, 2, 0)
    assert (b + a).layout == (0, 1, 2)
    assert (2 + b + a).layout == (0, 1, 2)
    assert np.add(np.ones((2, 3, 4)), a).layout == (1, 2, 0)  # the first *storage*
    # dims the first storage lacks go outermost, in the result's order
    j = gts.ones((3,), dims="J")
    assert (j + gts.ones((2, 4), dims="IK", defaults="gt:cpu_kfirst")).layout == (0, 2, 1)
    assert (gts.ones((4, 2), dims="KI", layout=(1, 0)) + j).layout == (1, 0, 2)


def test_dims_agree_or_union_in_ijk_order():
    kji = gts.ones((2, 3, 4), dims="KJI")
    assert (kji + kji).dims == ("K", "J", "I")
    assert (kji + gts.ones((4,), dims="I")).dims == ("I", "J", "K")
    assert (gts.ones((5,), dims="0") + gts.ones((3,), dims="J")).dims == ("J", "0")
    assert (gts.ones((2, 5), dims="1K") + gts.ones((5, 3), dims="0I")).shape == (3, 5, 5, 2)
    assert (gts.ones((2, 5), dims="1K") + gts.ones((5, 3), dims="0I")).dims == ("I", "K", "0", "1")


def test_a_result_of_more_than_64_dims_is_refused():
    """Two valid storages whose dims together exceed 64 (this wrote past the
    result's dims in libgtstore and crashed)."""
    a = gts.ones((1,) * 40, dims=[str(d) for d in range(40)])
    b = gts.ones((1,) * 40, dims=[str(d) for d in range(40, 80)])
    with pytest.raises(ValueError, match="the result would have more than 64 dims"):
        a + b
    with pytest.raises(ValueError, match="more than 64 dims"):
        np.multiply(a, b)
    assert (a + a).ndim == 40


@pytest.mark.parametrize("a, b", [("f4", "f8"), ("i2", "f4"), ("u1", "i1"), ("c8", "f8"),
                                  ("bool", "i8")])
def test_alignment_is_the_lcm_with_the_itemsize(a, b):
    x = gts.ones((4,), a, dims="I", alignment_size=48)
    y = gts.ones((4,), b, dims="I", alignment_size=32)
    z = x + y
    assert z.dtype == np.result_type(a, b)
    assert z.alignment_size == math.lcm(48, 32, z.dtype.itemsize)
    assert (z.__array_interface__["data"][0] + z.aligned_index[0] * z.strides[0]) % 96 == 0


def test_masked_extent_one_broadcasts():
    a = gts.storage(np.arange(3.0).reshape(3, 1), dims="IJ")
    b = gts.storage(np.arange(4.0).reshape(1, 4), dims="IJ", halo=((0, 0), (1, 1)))
    c = a + b
    assert c.shape == (3, 4) and c.dims == ("I", "J")
    assert c.halo == ((0, 0), (1, 1))  # only b runs along J
    np.testing.assert_array_equal(np.asarray(c), np.arange(3.0)[:, None] + np.arange(4.0))


def test_dtype_follows_numpy_with_python_scalars():
    s = gts.ones((3,), "f4", dims="K")
    assert (s + 1).dtype == np.float32
    assert (s + 1.5).dtype == np.float32  # NEP 50: Python floats are weak
    assert (s + np.float64(1.5)).dtype == np.float64
    assert (gts.ones((3,), "i1") + 1).dtype == np.int8
    assert (gts.ones((3,), "i1") / 2).dtype == np.float64
    assert (gts.ones((3,), "i4") > 1).dtype == np.bool_
    assert np.add(s, 1, dtype="f8").dtype == np.float64
    assert np.add(s, 1, dtype=None).dtype == np.float32  # None: NumPy's default, not float64
    assert np.add(gts.ones((3,), "i8"), 1, dtype=None).dtype == np.int64
    with pytest.raises(TypeError, match="where: expected True or an array of bool, got None"):
        np.add(s, 1, where=None)  # NumPy would leave its result unwritten
    with pytest.raises(OverflowError):
        gts.ones((3,), "u1") + 1000


def test_result_dtypes_stay_numpys_across_many_remembered_calls():
    """The resolved dtypes are remembered per ufunc and input keys (a
    table of 128 entries compared by identity): more combinations than
    that, each met twice, in an order where one key differs only as a
    Python float from a float64 scalar, still give NumPy's dtypes."""
    ufuncs = (np.add, np.multiply, np.subtract, np.true_divide, np.maximum, np.less)
    dtypes = ("i1", "u1", "i2", "i4", "i8", "u4", "f4", "f8", "c8", "c16")
    others = (1, 1.5, np.float64(1.5), np.int8(1), True, 1j)
    for _ in range(2):
        for ufunc in ufuncs:
            for dtype in dtypes:
                s = gts.ones((2,), dtype, dims="K")
                a = np.ones(2, dtype)
                for other in others:
                    try:
                        expected = ufunc(a, other)
                    except TypeError:
                        continue
                    result = ufunc(s, other)
                    assert result.dtype == expected.dtype, (ufunc, dtype, other)
                    np.testing.assert_array_equal(np.asarray(result), expected)


def test_subclasses_of_python_numbers_as_operands():
    """Once an AttributeError ('Level' object has no attribute 'dtype')."""
    s = gts.ones((3,), "f4", dims="K")
    a = np.ones(3, "f4")
    for x in (Level.TWO, Weight(2.0)):
        r = s + x
        assert r.dtype == (a + x).dtype
        np.testing.assert_array_equal(np.asarray(r), a + x)
    assert (s > Level.TWO).dtype == np.bool_


def test_arrays_without_dims_follow_mixing_types():
    s = gts.storage(np.arange(6.0).reshape(2, 3), dims="JK")
    same = np.arange(6.0).reshape(2, 3) * 10
    np.testing.assert_array_equal(np.asarray(s + same), np.asarray(s) + same)
    # as many dims as the result, extents 1 broadcasting, matched by position
    np.testing.assert_array_equal(np.asarray(s + np.ones((1, 3))), np.asarray(s) + 1)
    # a 3-d array is I, J, K: with a JK storage its extents 1 are masked
    r = s + np.arange(3.0).reshape(1, 1, 3)
    assert r.dims == ("J", "K")
    np.testing.assert_array_equal(np.asarray(r), np.asarray(s) + np.arange(3.0))
    r = s + np.arange(4.0).reshape(4, 1, 1)  # brings I
    assert r.dims == ("I", "J", "K") and r.shape == (4, 2, 3)
    np.testing.assert_array_equal(np.asarray(r), np.arange(4.0)[:, None, None] + np.asarray(s))
    # an array of the shape of a higher-dimensional output
    out = gts.zeros((2, 3, 4), dims="JK0")
    np.add(s, np.ones((2, 3, 4)), out=out)
    np.testing.assert_array_equal(np.asarray(out),
                                  np.broadcast_to(np.asarray(s)[..., None] + 1, (2, 3, 4)))


def test_data_interface_operands():
    """An operand with only __gt_data_interface__ was an object array (a
    dtype storages do not hold). Labelled by its entry it takes part by
    dims, as a storage; else as an array without dims; acquired once."""
    s = gts.storage(np.arange(6.0).reshape(2, 3), dims="JK")
    column = DataInterface(np.arange(4.0), dims="I")
    r = s + column
    assert r.dims == ("I", "J", "K") and column.acquired == [None]
    np.testing.assert_array_equal(np.asarray(r), column.array[:, None, None] + np.asarray(s))
    plain = DataInterface(np.arange(3.0).reshape(1, 3))
    r = np.multiply(plain, s)
    assert r.dims == ("J", "K") and plain.acquired == [None]
    np.testing.assert_array_equal(np.asarray(r), plain.array * np.asarray(s))
    mask = DataInterface(np.array([True, False, True]), dims="K")
    out = gts.zeros((2, 3), dims="JK")
    np.add(s, 1.0, out=out, where=mask)
    np.testing.assert_array_equal(np.asarray(out), np.where([True, False, True], np.asarray(s) + 1, 0))
    with pytest.raises(ValueError, match=r"__gt_data_interface__\[None\]\['dims'\]"):
        s + DataInterface(np.ones(3), dims="IJ")


def test_data_interface_operands_take_the_host_entry_where_the_gpu_entry_cannot_be_read():
    """Inputs and where= read the "gpu" entry first, as assignment does;
    where no device gtstore has reaches its memory, the host entry is read
    (and only it acquired), labelled or by position."""
    s = gts.storage(np.arange(6.0).reshape(2, 3), dims="JK")
    column = BothEntries(np.arange(4.0), gpu_entry((4,)), dims="I")
    r = s + column
    assert r.dims == ("I", "J", "K") and column.acquired == [None]
    np.testing.assert_array_equal(np.asarray(r), column.host[:, None, None] + np.asarray(s))
    plain = BothEntries(np.arange(3.0).reshape(1, 3), gpu_entry((1, 3)))
    np.testing.assert_array_equal(np.asarray(np.multiply(plain, s)), plain.host * np.asarray(s))
    assert plain.acquired == [None]
    mask = BothEntries(np.array([True, False, True]), gpu_entry((3,), typestr="|b1"), dims="K")
    out = gts.zeros((2, 3), dims="JK")
    np.add(s, 1.0, out=out, where=mask)
    np.testing.assert_array_equal(np.asarray(out), np.where(mask.host, np.asarray(s) + 1, 0))
    assert mask.acquired == [None]
    del column.__gt_data_interface__[None]
    with pytest.raises(ValueError, match=r"^__gt_data_interface__\['gpu'\]: address 0xdead0000"):
        s + column


class OutInterface:
    """GDP-3's data interface over ``entry`` (under ``key``) whose "acquire"
    and "touch" record, in ``log``, their name and the values ``values()``
    gives at that moment."""

    def __init__(self, entry, values, key=None, **keys):
        self.log = []
        self.__gt_data_interface__ = {key: {
            **entry, **keys, "acquire": lambda: self.log.append(("acquire", values())),
            "touch": lambda: self.log.append(("touch", values()))}}

    def calls(self):
        return [name for name, _ in self.log]


def host_out(array, **keys):
    return OutInterface(array.__array_interface__, array.copy, **keys)


def test_data_interface_out_is_written_by_dims():
    """out= with a data interface: the entry's memory receives the result,
    lined up by its dims (here the transpose of the inputs'); "acquire"
    runs before the write and "touch" once after it; the call returns the
    object, as NumPy returns its out=."""
    s = gts.storage(np.arange(6.0).reshape(2, 3), dims="IJ")
    array = np.zeros((3, 2))
    out = host_out(array, dims="JI")
    assert np.add(s, gts.full((3,), 10.0, dims="J"), out=out) is out
    np.testing.assert_array_equal(array, np.asarray(s).T + 10)
    assert out.calls() == ["acquire", "touch"]
    np.testing.assert_array_equal(out.log[0][1], 0)  # acquired before the write
    np.testing.assert_array_equal(out.log[1][1], array)  # touched after it
    # out=(obj,), where= a storage: the elements left out keep their values
    assert np.multiply(s, 2, out=(out,), where=gts.storage(np.array([True, False]),
                                                           dims="I")) is out
    np.testing.assert_array_equal(array, np.stack([2 * np.asarray(s)[0], np.asarray(s)[1] + 10],
                                                  axis=1))
    # more dims than the operands: they are replicated along the others
    wide = np.zeros((3, 4, 2))
    np.add(s, 1, out=host_out(wide, dims="JKI"))
    np.testing.assert_array_equal(wide, np.broadcast_to(np.asarray(s).T[:, None, :] + 1, (3, 4, 2)))


def test_data_interface_out_without_gtstore_labels_goes_by_position():
    """An entry without dims, or with names of another convention, is
    written by position, as an ndarray out= is."""
    s = gts.storage(np.arange(6.0).reshape(3, 2), dims="JI")
    for keys in ({}, {"dims": ("x", "y")}):
        array = np.zeros((3, 2))
        out = host_out(array, **keys)
        assert np.subtract(s, 1, out=out) is out
        np.testing.assert_array_equal(array, np.asarray(s) - 1)
        assert out.calls() == ["acquire", "touch"]
    with pytest.raises(ValueError, match=r"extent"):
        np.add(s, 1, out=host_out(np.zeros((2, 3))))


def test_data_interface_out_read_only_is_refused():
    """A read-only entry (data=(address, True)) is a ValueError naming out
    and the entry, before anything is written or touched."""
    s = gts.ones((2, 3), dims="IJ")
    array = np.zeros((2, 3))
    array.flags.writeable = False
    out = host_out(array, dims="IJ")
    with pytest.raises(ValueError,
                       match=r"^out: __gt_data_interface__\[None\] of .* is read-only"):
        np.add(s, 1, out=out)
    with pytest.raises(ValueError,
                       match=r"^out: __gt_data_interface__\['cpu'\] of .* is read-only"):
        np.add(s, 1, out=host_out(array, key="cpu"))
    np.testing.assert_array_equal(array, 0)
    assert "touch" not in out.calls()
    with pytest.raises(TypeError, match=r"^out: expected storages, ndarrays, objects with "
                                        r"__gt_data_interface__ or None, got <class 'object'>"):
        np.add(s, 1, out=object())


def test_data_interface_out_touch_raising_propagates():
    """The values are written when "touch" runs; its exception is the
    call's, unchanged."""
    class Refused(Exception):
        pass

    def touch():
        raise Refused("touch")

    s = gts.full((2, 3), 4.0, dims="IJ")
    array = np.zeros((2, 3))
    out = DataInterface(array, dims="IJ", touch=touch)
    with pytest.raises(Refused, match="^touch$"):
        np.add(s, 1, out=out)
    np.testing.assert_array_equal(array, 5)


@pytest.mark.parametrize("ufunc", [np.divmod, np.modf])
def test_data_interface_outs_of_a_two_output_ufunc(ufunc):
    """Each output may be a data interface (of its own dims), each
    touched once; the call returns the tuple of the objects."""
    s = gts.storage(np.arange(-3.0, 3.0).reshape(2, 3) * 1.25, dims="IJ")
    arrays = np.zeros((2, 3)), np.zeros((3, 2))
    outs = host_out(arrays[0], dims="IJ"), host_out(arrays[1], dims="JI")
    args = (s, 2.0) if ufunc is np.divmod else (s,)
    result = ufunc(*args, out=outs)
    assert isinstance(result, tuple) and result[0] is outs[0] and result[1] is outs[1]
    first, second = ufunc(*[np.asarray(a) if isinstance(a, gts.Storage) else a for a in args])
    np.testing.assert_array_equal(arrays[0], first)
    np.testing.assert_array_equal(arrays[1], second.T)
    assert [o.calls() for o in outs] == [["acquire", "touch"]] * 2
    # one of them a data interface, the other a storage
    storage_out = gts.zeros((2, 3), dims="IJ")
    assert ufunc(*args, out=(storage_out, outs[1]))[0] is storage_out
    np.testing.assert_array_equal(np.asarray(storage_out), first)


def test_data_interface_out_on_the_device():
    """Inputs on the GPU and an out= with a "gpu" entry over device memory:
    that entry is written, by its dims, on the device (the host entry
    beside it neither acquired nor written); without labels, by
    position. Host inputs with such an out= compute there too, as for a
    GPUStorage out=."""
    with emulated_gpu():
        s = gts.storage(np.arange(6.0).reshape(2, 3), dims="IJ", device="gpu", managed=None)
        device = gts.zeros((3, 2), dims="JI", device="gpu", managed=None)
        host = np.zeros((3, 2))

        def values():
            return np.asarray(gts.storage(device, device="cpu"))

        out = OutInterface(CudaArray(device).__cuda_array_interface__, values, key="gpu",
                           dims="JI")
        out.__gt_data_interface__[None] = {**host.__array_interface__, "dims": "JI"}
        assert np.add(s, 1, out=out) is out
        np.testing.assert_array_equal(values(), np.asarray(gts.storage(s, device="cpu")).T + 1)
        assert out.calls() == ["acquire", "touch"]
        np.testing.assert_array_equal(out.log[0][1], 0)
        np.testing.assert_array_equal(out.log[1][1], values())
        np.testing.assert_array_equal(host, 0)
        # only a host entry: computed on the device, copied to the host
        array = np.zeros((3, 2))
        assert np.add(s, 2, out=host_out(array, dims="JI")) is not None
        np.testing.assert_array_equal(array, np.asarray(gts.storage(s, device="cpu")).T + 2)
        # host inputs: the device computes into the "gpu" entry
        np.multiply(gts.storage(np.arange(6.0).reshape(2, 3), dims="IJ"), 3, out=out)
        np.testing.assert_array_equal(values(), np.arange(6.0).reshape(2, 3).T * 3)
        # by position, with where= keeping the elements it leaves out
        plain = gts.full((2, 3), 7.0, dims="JI", device="gpu", managed=None)
        unlabelled = OutInterface(CudaArray(plain).__cuda_array_interface__,
                                  lambda: np.asarray(gts.storage(plain, device="cpu")), key="gpu")
        mask = gts.storage(np.array([True, False, True]), dims="J")
        assert np.add(s, 1, out=unlabelled, where=mask) is unlabelled
        expected = np.where([True, False, True], np.asarray(gts.storage(s, device="cpu")) + 1, 7)
        np.testing.assert_array_equal(np.asarray(gts.storage(plain, device="cpu")), expected)
        assert unlabelled.calls() == ["acquire", "touch"]


# ---- errors ----------------------------------------------------------------------------------


def test_3d_array_making_a_3d_result_that_is_not_ijk():
    """A 3-d array without dims is I, J, K (GDP-3's first draft, "Mixing Types") also
    when the union of its dims with the storages' has 3 dims that are not
    I, J, K."""
    s = gts.storage(np.arange(6.0).reshape(3, 2), dims="J0")
    a = np.arange(5.0).reshape(1, 1, 5)  # K of extent 5
    r = s + a
    assert r.dims == ("J", "K", "0") and r.shape == (3, 5, 2)
    np.testing.assert_array_equal(np.asarray(r), np.asarray(s)[:, None, :] + a[0, 0][None, :, None])


def test_mismatched_extents_name_the_dim():
    with pytest.raises(ValueError, match=r"'J' has extent 3 in operand 0 and 4 in operand 1"):
        gts.ones((2, 3), dims="IJ") + gts.ones((4,), dims="J")
    with pytest.raises(ValueError, match=r"'0'"):
        gts.ones((2,), dims="0") * gts.ones((5, 3), dims="0I")
    with pytest.raises(ValueError, match=r"'K'.*the output"):
        np.add(gts.ones((3,), dims="K"), 1, out=gts.zeros((4,), dims="K"))


def test_output_without_an_operand_dim():
    with pytest.raises(ValueError, match=r"the output has no dim 'J'"):
        np.add(gts.ones((2, 3), dims="IJ"), 1, out=gts.zeros((2,), dims="I"))
    s = gts.zeros((2,), dims="I")
    with pytest.raises(ValueError, match=r"no dim 'K'"):
        s += gts.ones((3,), dims="K")


@pytest.mark.parametrize("shape", [(4,), (2, 2), (3, 2), (2, 3, 4, 5)])
def test_arrays_without_dims_of_a_wrong_shape(shape):
    s = gts.ones((2, 3), dims="IJ")
    message = r"(operand 1 is an array without dims of shape|'[IJK]' has extent)"
    with pytest.raises(ValueError, match=message):
        s + np.ones(shape)


def test_outer_and_reduceat_are_type_errors():
    s = gts.ones((2, 3), dims="IJ")
    with pytest.raises(TypeError, match="outer"):
        np.add.outer(s, s)
    with pytest.raises(TypeError, match="reduceat"):
        np.add.reduceat(s, [0, 1])


def test_bad_out_arguments():
    s = gts.ones((2,), dims="I")
    with pytest.raises(TypeError, match="out"):
        np.add(s, 1, out=[1, 2])
    with pytest.raises((ValueError, TypeError)):
        np.add(s, 1, out=(s, s))


@pytest.mark.parametrize("call", [
    lambda s: s.sum(axis=3), lambda s: s.max(axis=-4), lambda s: s.mean(axis=(0, 0)),
    lambda s: np.add.reduce(s, axis=5), lambda s: np.add.accumulate(s, axis=3),
    lambda s: s.argmax(axis=7)])
def test_bad_axis_is_numpy_axis_error(call):
    s = gts.ones((2, 3, 4), dims="IJK")
    with pytest.raises(np.exceptions.AxisError):
        call(s)


def test_reshape_that_is_not_a_view():
    s = gts.ones((2, 3), dims="IJ")
    with pytest.raises(ValueError, match="reshape"):
        s.reshape(6)
    with pytest.raises(ValueError, match="reshape"):
        s.reshape((3, 2))
    t = gts.ones((2, 1, 3), dims="IJK")
    v = t.reshape(2, 3)
    assert v.dims == ("I", "K") and v.shape == (2, 3)
    v[...] = 5
    assert np.all(np.asarray(t) == 5)
    assert t.reshape((2, 1, 3)).dims == ("I", "J", "K")
    # one extent may be -1, as in NumPy: the rest of the size
    assert t.reshape(-1, 3).dims == ("I", "K") and t.reshape((2, 1, -1)).shape == (2, 1, 3)
    assert gts.ones((4, 6), dims="IJ")[:, :1].reshape(-1).dims == ("I",)
    for shape, message in [((-1, -1), r"shape: -1 at positions 0 and 1 \(at most one extent "
                                      r"is inferred\)$"),
                           ((-2, 3), "shape: negative extent -2 at position 0$"),
                           ((4, -1), r"cannot reshape a storage of shape \(2, 3\) to \(4, -1\) "
                                     r".*; reshape np.asarray\(s\) instead$"),
                           ((0, -1), r"shape: -1 at position 1 beside an extent of 0 .*infer\)$")]:
        with pytest.raises(ValueError, match=message):  # advice where NumPy would reshape
            s.reshape(shape)


def test_in_place_casting_errors_like_numpy():
    s = gts.ones((3,), "i4", dims="I")
    _, error = numpy_result(lambda: np.ones(3, "i4").__iadd__(1.5))
    assert isinstance(error, TypeError)
    with pytest.raises(type(error)):
        s += 1.5
    assert np.all(np.asarray(s) == 1)


# ---- operators -------------------------------------------------------------------------------

OPERATORS = [
    ("+", lambda a, b: a + b), ("-", lambda a, b: a - b), ("*", lambda a, b: a * b),
    ("/", lambda a, b: a / b), ("//", lambda a, b: a // b), ("%", lambda a, b: a % b),
    ("**", lambda a, b: a ** b), ("&", lambda a, b: a & b), ("|", lambda a, b: a | b),
    ("^", lambda a, b: a ^ b), ("<<", lambda a, b: a << b), (">>", lambda a, b: a >> b),
    ("<", lambda a, b: a < b), ("<=", lambda a, b: a <= b), ("==", lambda a, b: a == b),
    ("!=", lambda a, b: a != b), (">", lambda a, b: a > b), (">=", lambda a, b: a >= b),
]


@pytest.mark.parametrize("name, op", OPERATORS, ids=[o[0] for o in OPERATORS])
@pytest.mark.parametrize("other", ["storage", "ndarray", "int", "reflected"])
def test_binary_operators(name, op, other):
    x = gts.storage(np.arange(1, 7, dtype="i8").reshape(2, 3), dims="IK")
    y = gts.storage(np.array([3, 1, 2], dtype="i8"), dims="K")
    xa, ya = np.asarray(x).copy(), np.asarray(y).copy()
    if other == "storage":
        got, want = op(x, y), op(xa, ya)
    elif other == "ndarray":
        got, want = op(x, xa[::-1].copy()), op(xa, xa[::-1])
    elif other == "int":
        got, want = op(x, 2), op(xa, 2)
    else:
        got, want = op(2, x), op(2, xa)
    assert isinstance(got, gts.Storage) and got.dims == ("I", "K")
    assert_values(got, want)


def test_ndarray_on_the_left_gives_a_storage():
    s = gts.storage(np.arange(3.0), dims="J")
    r = np.arange(3.0) + s
    assert isinstance(r, gts.Storage) and r.dims == ("J",)
    r = np.arange(3.0) < s
    assert isinstance(r, gts.Storage) and r.dtype == np.bool_


def test_unary_operators():
    x = gts.storage(np.array([-2, 0, 3], dtype="i4"), dims="K", halo=((1, 0),))
    xa = np.asarray(x).copy()
    for got, want in ((-x, -xa), (+x, +xa), (abs(x), abs(xa)), (~x, ~xa)):
        assert got.dims == ("K",) and got.halo == ((1, 0),)
        assert_values(got, want)
    assert divmod(x, 2)[1].dims == ("K",)
    np.testing.assert_array_equal(np.asarray(divmod(x, 2)[0]), xa // 2)


def test_matmul_falls_back_to_numpy():
    a = gts.storage(np.arange(6.0).reshape(2, 3), dims="IJ")
    b = gts.storage(np.arange(12.0).reshape(3, 4), dims="JK")
    np.testing.assert_array_equal(np.asarray(a @ b), np.asarray(a) @ np.asarray(b))


INPLACE = [("+=", "__iadd__"), ("-=", "__isub__"), ("*=", "__imul__"), ("/=", "__itruediv__"),
           ("//=", "__ifloordiv__"), ("%=", "__imod__"), ("**=", "__ipow__")]


@pytest.mark.parametrize("name, method", INPLACE, ids=[i[0] for i in INPLACE])
@pytest.mark.parametrize("other", ["K storage", "scalar", "ndarray", "KJI storage"])
def test_in_place_operators(name, method, other):
    base = np.arange(1, 25, dtype="f8").reshape(2, 3, 4)
    s = gts.storage(base, dims="IJK", defaults="gt:cpu_ifirst", halo=((1, 0), (0, 1), (0, 0)))
    if other == "K storage":
        b = gts.storage(np.array([1.0, 2.0, 3.0, 0.5]), dims="K")
        theirs = np.asarray(b)[None, None, :]
    elif other == "scalar":
        b = theirs = 2
    elif other == "ndarray":
        b = theirs = np.full((2, 3, 4), 1.5)
    else:
        theirs = np.linspace(1, 2, 24).reshape(2, 3, 4)
        b = gts.storage(theirs.transpose(2, 1, 0), dims="KJI")
    address, strides, halo = s.__array_interface__["data"][0], s.strides, s.halo
    want = getattr(base.copy(), method)(theirs)
    before = s
    s = getattr(s, method)(b)
    assert s is before
    assert s.__array_interface__["data"][0] == address and s.strides == strides
    assert s.halo == halo and s.dims == ("I", "J", "K")
    assert_values(s, want)


IN_PLACE_DTYPES = ["int32", "uint8", "float32", "float64"]


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_in_place_like_numpy(data):
    """s op= t for t of some of s's dims (in any order, extents 1 masked):
    into s's memory, as NumPy's op= on the arrays lined up by dims; where s
    has extent 1 and t more, or the cast is unsafe, an error and no write."""
    extents = data.draw(EXTENTS)
    s = data.draw(storage_of(extents, data.draw(st.sampled_from(IN_PLACE_DTYPES))))
    sub = tuple(data.draw(st.permutations(s.dims))[: data.draw(st.integers(1, s.ndim))])
    t = data.draw(storage_of(extents, data.draw(st.sampled_from(IN_PLACE_DTYPES)), dims=sub))
    op = data.draw(st.sampled_from(["__iadd__", "__isub__", "__imul__", "__ifloordiv__",
                                    "__imod__", "__itruediv__"]))
    a = np.array(np.asarray(s))
    expected, error = numpy_result(lambda: getattr(a, op)(along(t, s.dims)))
    before = np.array(np.asarray(s))
    if error is not None:
        # NumPy's casting or shape error; with both wrong, gtstore checks the dims first
        assert isinstance(error, (TypeError, ValueError))
        with pytest.raises((TypeError, ValueError)):
            with np.errstate(all="ignore"):
                getattr(s, op)(t)
        np.testing.assert_array_equal(np.asarray(s), before)  # nothing written
        return
    params = {name: getattr(s, name) for name in ("dims", "shape", "strides", "halo", "layout")}
    with np.errstate(all="ignore"):
        assert getattr(s, op)(t) is s
    assert {name: getattr(s, name) for name in params} == params
    assert_values(s, expected)


def test_in_place_on_a_view_writes_the_parent():
    s = gts.zeros((4, 4), dims="IJ", halo=((1, 1), (1, 1)))
    v = s.domain_view
    v += 1
    np.testing.assert_array_equal(np.asarray(s), np.pad(np.ones((2, 2)), 1))
    col = s[:, 0]
    col -= gts.storage(np.arange(4.0), dims="I")
    np.testing.assert_array_equal(np.asarray(s)[:, 0], -np.arange(4.0))


def test_in_place_bitwise_and_shifts():
    s = gts.storage(np.arange(8, dtype="u2"), dims="J")
    a = np.arange(8, dtype="u2")
    s <<= 2
    a <<= 2
    s |= 1
    a |= 1
    s ^= gts.storage(np.full(8, 5, "u2"), dims="J")
    a ^= 5
    s >>= 1
    a >>= 1
    s &= 6
    a &= 6
    assert_values(s, a)


# ---- comparisons, `in`, conversions: the once silently wrong cases -------------------------


def test_equality_is_elementwise():
    s = gts.storage(np.arange(4.0).reshape(2, 2), dims="IJ")
    eq = s == s.copy()
    assert isinstance(eq, gts.Storage) and eq.dtype == np.bool_ and eq.dims == ("I", "J")
    assert np.all(np.asarray(eq))
    one = s == 1
    np.testing.assert_array_equal(np.asarray(one), [[False, True], [False, False]])
    np.testing.assert_array_equal(np.asarray(s != 1), [[True, False], [True, True]])
    with pytest.raises(ValueError, match="ambiguous"):
        bool(s == s)
    # values no loop compares with float64: NumPy's answer, elementwise, as a storage (a str
    # or bytes once gave NumPy's ndarray)
    for value in (None, "x", b"x"):
        for compare, expected in ((operator.eq, False), (operator.ne, True)):
            for result in (compare(s, value), compare(value, s)):
                assert isinstance(result, gts.Storage), (value, compare)
                assert result.dtype == np.bool_ and result.dims == ("I", "J")
                np.testing.assert_array_equal(np.asarray(result), np.full((2, 2), expected))
    with pytest.raises(TypeError):
        s < "x"  # noqa: B015 (NumPy's error: only == and != answer)


def test_storages_are_unhashable():
    s = gts.ones((2, 2))
    assert type(s).__hash__ is None
    with pytest.raises(TypeError):
        hash(s)
    with pytest.raises(TypeError):
        {s}


def test_contains_is_elementwise():
    assert 1.0 in gts.ones((2, 2))
    assert 1 in gts.ones((2, 2))
    assert 2.0 not in gts.ones((2, 2))
    s = gts.storage(np.arange(6).reshape(2, 3), dims="JK", halo=((1, 0), (0, 1)))
    assert 5 in s and 6 not in s
    assert "a" not in s
    assert gts.storage(np.arange(3), dims="K") in s  # NumPy's (s == row).any()


@pytest.mark.parametrize("shape", [(), (1,), (1, 1), (2,), (0,)])
@pytest.mark.parametrize("convert", [float, int, complex, bool, lambda x: x.__index__()],
                         ids=["float", "int", "complex", "bool", "index"])
def test_conversions_like_numpy(shape, convert):
    a = np.ones(shape, dtype="i8")
    s = gts.ones(shape, dtype="i8")
    want, error = numpy_result(lambda: convert(a))
    if error is not None:
        with pytest.raises(type(error)):
            convert(s)
        return
    got = convert(s)
    assert type(got) is type(want) and got == want


@pytest.mark.parametrize("shape", [(1,), (1, 1, 1), ()])
def test_float_of_size_one_storages_is_numpys(shape):
    """float() of a size-1 storage: NumPy's answer on the same array, its
    error with its message where NumPy refuses (once a ValueError quoting
    raw bytes)."""
    s = gts.full(shape, 2.5)
    want, error = numpy_result(lambda: float(np.full(shape, 2.5)))
    if error is None:
        assert float(s) == want == 2.5
        return
    with pytest.raises(type(error)) as ours:
        float(s)
    assert str(ours.value) == str(error)
    assert "b'" not in str(ours.value)


# ---- reductions ------------------------------------------------------------------------------

METHODS = ["sum", "prod", "mean", "std", "var", "min", "max", "any", "all", "argmin", "argmax"]


@st.composite
def reduction_case(draw):
    extents = draw(EXTENTS)
    dtype = draw(st.sampled_from(["int16", "int64", "uint8", "float32", "float64", "bool"]))
    s = draw(storage_of(extents, dtype))
    method = draw(st.sampled_from(METHODS + ["add.reduce", "maximum.reduce", "np.sum",
                                             "np.mean", "np.max"]))
    single = method.startswith("arg")
    if single:
        axis = draw(st.one_of(st.none(), st.integers(-s.ndim, s.ndim - 1)))
    else:
        axis = draw(st.one_of(
            st.none(), st.integers(-s.ndim, s.ndim - 1),
            st.lists(st.integers(0, s.ndim - 1), unique=True, max_size=s.ndim).map(tuple)))
    keepdims = draw(st.booleans())
    return s, method, axis, keepdims


def reduce_with(obj, method, axis, keepdims):
    kwargs = dict(axis=axis, keepdims=keepdims)
    if method.endswith(".reduce"):
        return getattr(np, method.split(".")[0]).reduce(obj, **kwargs)
    if method.startswith("np."):
        return getattr(np, method[3:])(obj, **kwargs)
    return getattr(obj, method)(**kwargs)


@settings(max_examples=400, deadline=None)
@given(case=reduction_case())
def test_reductions_like_numpy(case):
    """A reduction keeps the dims it does not reduce (with keepdims all of
    them, the reduced ones of extent 1) and the halo and aligned index along
    them; a 0-d result and argmin/argmax are NumPy's results."""
    s, method, axis, keepdims = case
    a = np.array(np.asarray(s))
    expected, error = numpy_result(lambda: reduce_with(a, method, axis, keepdims))
    if error is not None:
        with pytest.raises(type(error)):
            reduce_with(s, method, axis, keepdims)
        return
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = reduce_with(s, method, axis, keepdims)
    exact = method not in ("mean", "std", "var", "np.mean", "sum", "np.sum", "add.reduce",
                           "prod")
    if method.startswith("arg") or np.ndim(expected) == 0:
        assert not isinstance(result, gts.Storage)
        assert type(result) is type(expected)
        assert_values(np.asarray(result), np.asarray(expected), exact=exact)
        return
    axes = range(s.ndim) if axis is None else np.atleast_1d(axis) % s.ndim
    reduced = [ax in set(int(x) for x in axes) for ax in range(s.ndim)]
    dims = tuple(d for d, r in zip(s.dims, reduced) if keepdims or not r)
    assert_parameters(result, expected_parameters([s], dims, expected.shape, expected.dtype))
    assert_values(result, expected, exact=exact)


def test_reduce_over_k_gives_an_ij_storage():
    s = gts.storage(np.arange(24.0).reshape(2, 3, 4), dims="IJK", halo=((1, 0), (0, 1), (2, 1)),
                    defaults="gt:cpu_ifirst")
    r = np.add.reduce(s, axis=2)
    assert r.dims == ("I", "J") and r.halo == ((1, 0), (0, 1))
    assert r.layout == (1, 0)
    np.testing.assert_array_equal(np.asarray(r), np.arange(24.0).reshape(2, 3, 4).sum(axis=2))
    assert type(s.sum()) is np.float64 and s.sum() == 276.0
    k = s.max(axis=(0, 1))
    assert k.dims == ("K",) and k.halo == ((2, 1),)
    kd = s.mean(axis=0, keepdims=True)
    assert kd.dims == ("I", "J", "K") and kd.shape == (1, 3, 4) and kd.halo[0] == (0, 0)


def test_reduction_out_and_where():
    s = gts.storage(np.arange(12.0).reshape(3, 4), dims="JK")
    out = gts.zeros((4,), dims="K")
    assert s.sum(axis=0, out=out) is out
    np.testing.assert_array_equal(np.asarray(out), np.arange(12.0).reshape(3, 4).sum(axis=0))
    assert np.add.reduce(s, axis=1, out=(gts.zeros((3,), dims="J"),)).dims == ("J",)
    mask = np.arange(12).reshape(3, 4) % 2 == 0
    np.testing.assert_array_equal(np.asarray(s.sum(axis=1, where=mask)),
                                  np.arange(12.0).reshape(3, 4).sum(axis=1, where=mask))
    assert s.sum(initial=100.0) == 166.0
    assert s.argmin() == 0 and s.argmax(axis=None) == 11


def test_reduction_out_storage_aligns_by_dims_or_refuses():
    """out= of a reduction is a storage of the remaining dims, like out= of
    a ufunc call: aligned by name, and an output without a remaining dim is
    refused (not written by position under other labels)."""
    base = np.arange(18.0).reshape(3, 3, 2)
    s = gts.storage(base, dims="IJK")
    ji = gts.zeros((3, 3), dims="JI")
    try:
        s.sum(axis=2, out=ji)
    except ValueError:
        pass
    else:
        np.testing.assert_array_equal(np.asarray(ji), base.sum(axis=2).T)  # ji[j, i]
    with pytest.raises(ValueError, match="'J'"):
        s.sum(axis=(0, 2), out=gts.zeros((3,), dims="I"))


def test_reduction_where_as_a_storage():
    base = np.arange(12.0).reshape(3, 4)
    s = gts.storage(base, dims="JK")
    mask = np.array([True, False, True, False])
    m = gts.storage(mask, dims="K")
    np.testing.assert_array_equal(np.asarray(s.sum(axis=0, where=m)),
                                  base.sum(axis=0, where=mask))
    assert np.sum(base, where=m) == base.sum(where=mask)


def test_numpy_functions_agree_with_methods():
    s = gts.storage(np.arange(24.0).reshape(4, 3, 2), dims="KJI", defaults="gt:cpu_kfirst",
                    halo=((1, 1), (0, 0), (1, 0)))
    for name in ("sum", "mean", "max", "min", "prod", "any", "all", "std", "var"):
        ours, theirs = getattr(np, name)(s, axis=0), getattr(s, name)(axis=0)
        assert isinstance(ours, gts.Storage) and ours.dims == theirs.dims == ("J", "I")
        assert ours.halo == theirs.halo == ((0, 0), (1, 0))
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
    np.testing.assert_array_equal(np.argmax(s, axis=1), s.argmax(axis=1))


# ---- accumulate and at -----------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_accumulate_like_numpy(data):
    extents = data.draw(EXTENTS)
    dtype = data.draw(st.sampled_from(["int32", "float64", "uint8"]))
    s = data.draw(storage_of(extents, dtype))
    axis = data.draw(st.integers(-s.ndim, s.ndim - 1))
    ufunc = data.draw(st.sampled_from([np.add, np.multiply, np.maximum, np.subtract]))
    expected = ufunc.accumulate(np.array(np.asarray(s)), axis=axis)
    result = ufunc.accumulate(s, axis=axis)
    assert_parameters(result, expected_parameters([s], s.dims, s.shape, expected.dtype))
    assert_values(result, expected, exact=dtype != "float64")


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_at_like_numpy(data):
    extents = data.draw(EXTENTS)
    s = data.draw(storage_of(extents, "float64"))
    a = np.array(np.asarray(s))
    index = tuple(data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=5))
                  for n in s.shape[:1]) if s.ndim == 1 else (
        data.draw(st.lists(st.integers(0, s.shape[0] - 1), min_size=1, max_size=5)),)
    ufunc = data.draw(st.sampled_from([np.add, np.multiply, np.maximum]))
    value = data.draw(st.sampled_from([2.0, 3]))
    assert ufunc.at(s, index, value) is None
    ufunc.at(a, index, value)
    np.testing.assert_array_equal(np.asarray(s), a)
    np.negative.at(s, index)
    np.negative.at(a, index)
    np.testing.assert_array_equal(np.asarray(s), a)


# ---- other methods ---------------------------------------------------------------------------


def test_astype_keeps_the_parameters():
    s = gts.storage(np.arange(6.0).reshape(2, 3) - 2.5, dims="JI", halo=((1, 0), (0, 2)),
                    defaults="gt:cpu_ifirst")
    t = s.astype("i4")
    assert t.dtype == np.int32 and t.dims == s.dims and t.halo == s.halo
    assert t.layout == s.layout and t.aligned_index == s.aligned_index
    np.testing.assert_array_equal(np.asarray(t), np.asarray(s).astype("i4"))
    assert s.astype("f8", copy=False) is s
    assert s.astype("f8") is not s
    with pytest.raises(TypeError, match="cast"):
        s.astype("i4", casting="safe")
    with pytest.raises(ValueError, match="order"):
        s.astype("f4", order="C")


def test_fill_item_tolist_T():
    s = gts.zeros((2, 3), "i2", dims="IK", halo=((1, 0), (0, 0)))
    assert s.fill(7) is None and np.all(np.asarray(s) == 7)
    np.asarray(s)[1, 2] = 9
    assert s.item(5) == 9 and type(s.item(5)) is int and s.item((0, 1)) == 7
    with pytest.raises(ValueError):
        s.item()
    assert s.tolist() == [[7, 7, 7], [7, 7, 9]]
    assert gts.full((), 2.5).item() == 2.5 and gts.full((), 2.5).tolist() == 2.5
    t = s.T
    assert t.dims == ("K", "I") and t.shape == (3, 2) and t.halo == ((0, 0), (1, 0))
    np.testing.assert_array_equal(np.asarray(t), np.asarray(s).T)


def test_array_priority():
    """Seed 001: 11 for the managed storage types, 10 for the others."""
    assert gts.ones((2,)).__array_priority__ == 10
    gts.use_gpu("emulated")
    try:
        assert gts.ones((2,), device="gpu").__array_priority__ == 11
        assert gts.ones((2,), device="gpu", managed="cuda").__array_priority__ == 11
        assert gts.ones((2,), device="gpu", managed=None).__array_priority__ == 10
    finally:
        gts.use_gpu(None)


# ---- edge cases ------------------------------------------------------------------------------


def test_transpose_keeps_the_labels_so_operands_align_by_name():
    """A deliberate difference from NumPy: s.T has dims ("J", "I"), so
    s + s.T adds each element to itself (NumPy's a + a.T would not)."""
    t = gts.storage(np.arange(9.0).reshape(3, 3), dims="IJ")
    r = t + t.T
    assert r.dims == ("I", "J")
    np.testing.assert_array_equal(np.asarray(r), 2 * np.arange(9.0).reshape(3, 3))
    t += t.T
    np.testing.assert_array_equal(np.asarray(t), 2 * np.arange(9.0).reshape(3, 3))


def test_overlapping_input_and_output_like_numpy():
    t = gts.storage(np.arange(8.0), dims="I")
    a = np.arange(8.0)
    np.add(t[1:], t[:-1], out=t[1:])
    np.add(a[1:], a[:-1], out=a[1:])
    np.testing.assert_array_equal(np.asarray(t), a)
    v = t[::-1]
    v *= t
    b = a[::-1]
    b *= a
    np.testing.assert_array_equal(np.asarray(t), a)
    # a row of s broadcast into s: NumPy reads the row as it was
    base = np.arange(12.0).reshape(3, 4)
    s = gts.storage(base, dims="IJ")
    s += s[0]
    np.testing.assert_array_equal(np.asarray(s), base + base[0])
    s = gts.storage(base, dims="IJ")
    s -= s[:, 1]
    np.testing.assert_array_equal(np.asarray(s), base - base[:, 1:2])


def test_zero_dim_empty_and_strided_storages():
    z = gts.full((), 2.0) + 1
    assert isinstance(z, gts.Storage) and z.shape == () and z.dims == () and float(z) == 3.0
    e = gts.ones((0, 3), dims="JK", halo=((0, 0), (1, 1))) * 2
    assert e.shape == (0, 3) and e.dims == ("J", "K") and e.halo == ((0, 0), (1, 1))
    s = gts.storage(np.arange(12.0).reshape(3, 4), dims="IK")
    r = s[::-1, ::2] - s[:, 1::2]
    np.testing.assert_array_equal(np.asarray(r), np.arange(12.0).reshape(3, 4)[::-1, ::2]
                                  - np.arange(12.0).reshape(3, 4)[:, 1::2])


def test_lists_read_only_outputs_and_wrong_ndarray_outputs():
    s = gts.storage(np.arange(3.0), dims="I")
    np.testing.assert_array_equal(np.asarray(s + [1, 2, 3]), [1, 3, 5])
    with pytest.raises(ValueError, match="'I' has extent 3 in operand 0 and 2 in operand 1"):
        s + [1, 2]
    a = np.arange(3.0)
    a.setflags(write=False)
    ro = gts.as_storage(a, dims="I")
    with pytest.raises(ValueError, match="read-only"):
        np.add(s, 1, out=ro)
    with pytest.raises(ValueError, match="read-only"):
        ro += 1
    np.testing.assert_array_equal(a, [0, 1, 2])
    with pytest.raises(ValueError, match="'I' has extent 3 in operand 0 and 5"):
        np.add(s, 1, out=np.zeros(5))


def test_where_as_a_storage():
    s = gts.storage(np.arange(6.0).reshape(2, 3), dims="IJ")
    out = gts.full((2, 3), -1.0, dims="IJ")
    np.multiply(s, 10, out=out, where=gts.storage(np.array([True, False]), dims="I"))
    np.testing.assert_array_equal(np.asarray(out), [[0, 10, 20], [-1, -1, -1]])


def test_no_storage_is_leaked(baseline):
    from conftest import live

    x = gts.ones((10, 10), dims="IJ", halo=((1, 1), (1, 1)))
    y = gts.ones((10,), dims="K")
    for _ in range(50):
        z = x + y
        z += 1
        np.sqrt(z, out=z)
        z.sum(axis=0).mean(axis=0)
        np.add.accumulate(z, axis=2)
        (z > 1).any()
        with pytest.raises(ValueError):
            x + gts.ones((3,), dims="I")
        with pytest.raises(TypeError):
            np.add.outer(x, y)
    del x, y, z
    assert live() == baseline


def test_ufuncs_in_a_thread_with_a_small_stack():
    """128 KiB is musl's default thread stack; NumPy's own ufuncs run there."""
    import subprocess
    import sys

    code = (
        "import threading\n"
        "threading.stack_size(128 * 1024)\n"
        "import numpy as np, gtstore as gts\n"
        "a = gts.ones((4,), dims='I')\n"
        "out = []\n"
        "t = threading.Thread(target=lambda: out.append(float((a + a).sum())))\n"
        "t.start(); t.join()\n"
        "assert out == [8.0], out\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120)
    assert result.returncode == 0, (result.returncode, result.stderr[-2000:])


def test_xarray_handles_mixed_operations():
    """NEP 13: a DataArray operand has its own __array_ufunc__; the storage
    defers, and xarray computes (on np.asarray of the storage)."""
    xr = pytest.importorskip("xarray")
    s = gts.storage(np.arange(6.0).reshape(2, 3), dims="IJ")
    da = xr.DataArray(np.ones((2, 3)), dims=("I", "J"))
    for r in (s + da, da + s, np.add(s, da)):
        assert isinstance(r, xr.DataArray) and r.dims == ("I", "J")
        np.testing.assert_array_equal(r.values, np.arange(6.0).reshape(2, 3) + 1)


def test_negative_of_a_padded_storage():
    """-s of a storage padded to 64 bytes along a dim of extent 1 (issue
    22): the strides of both operands are 64 bytes, which NumPy 2.4.6's
    negative loop gets wrong ([[-1.0], [-0.0]]); gtstore routes the call
    through dense operands (gtstore._numpy_loops)."""
    s = gts.zeros((2, 1), dims="IJ", alignment_size=64)
    np.asarray(s)[...] = [[1.0], [2.0]]
    assert s.strides == (64, 8)
    np.testing.assert_array_equal(np.asarray(-s), [[-1.0], [-2.0]])


def test_without_numpys_c_api_ufuncs_say_why():
    """GTSTORE_NUMPY_CAPI=0 (as with a NumPy ABI gtstore does not know):
    views for ufuncs need NumPy's C API, so a ufunc call says so; the
    reductions still work through the buffer protocol."""
    import os
    import subprocess
    import sys

    code = (
        "import numpy as np, gtstore as gts\n"
        "s = gts.ones((3,), dims='I')\n"
        "assert s.sum() == 3.0\n"
        "try:\n"
        "    s + 1\n"
        "except RuntimeError as e:\n"
        "    assert 'GTSTORE_NUMPY_CAPI=0' in str(e), e\n"
        "else:\n"
        "    raise AssertionError('no error')\n")
    env = dict(os.environ, GTSTORE_NUMPY_CAPI="0")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120,
                            env=env)
    assert result.returncode == 0, result.stderr[-2000:]


def test_isnan_of_a_float_storage_with_a_preset():
    """np.isnan(s) for a float32 storage with gt:cpu_ifirst and one point
    in I: its bool result has the alignment 4 (the lcm of s's 4 bytes and
    the itemsize 1), so I is padded from 1 to 4 and the loop along J writes
    with a stride of 4 bytes, which NumPy 2.4.6's loop leaves partly
    unwritten; gtstore routes the call through dense operands."""
    s = gts.zeros((1, 40), "f4", dims="IJ", defaults="gt:cpu_ifirst")
    np.asarray(s)[...] = np.arange(40.0).reshape(1, 40)
    r = np.isnan(s)
    assert r.alignment_size == 4 and r.strides == (1, 4)
    # the same geometry, every element True before: unwritten ones show
    out = gts.full((1, 40), True, bool, dims="IJ", defaults="gt:cpu_ifirst", alignment_size=4)
    assert out.strides == r.strides
    np.isnan(s, out=out)
    np.testing.assert_array_equal(np.asarray(out), np.zeros((1, 40), bool))


# ---- issue 19: NumPy's operator, result dtypes, and NumPy's where= bugs routed around -----------


POWER_DTYPES = ["?", "i1", "u1", "i8", "u8", "f2", "f4", "f8", "c8", "c16"]
EXPONENTS = [2, -1, 0.5, 2.0, 1, 0, 3, -2, -1.0, True, np.int64(2), np.float64(0.5), 2**70]


def power_values(dtype):
    """Values where ndarray's ** and np.power part ways: 0, inf and nan."""
    if dtype == "?":
        return np.array([True, False, True])
    if np.dtype(dtype).kind in "iu":
        return np.array([0, 1, 3], dtype)
    values = [0.0, 1.5, np.inf, -np.inf, np.nan, -4.0]
    if np.dtype(dtype).kind == "c":
        values += [complex(np.inf, 0), complex(0, np.inf), complex(np.nan, 1), -1j]
    return np.array(values, dtype)


def outcome(compute):
    """(dtype, values) of a computation, or its exception's type."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            result = compute()
        except Exception as error:  # noqa: BLE001 (the type is compared)
            return type(error)
    values = np.asarray(result)
    return values.dtype, values.tolist()


@pytest.mark.parametrize("dtype", POWER_DTYPES)
def test_power_operator_is_ndarrays(dtype):
    """`s ** x`, `x ** s` and `s **= x` give what the same ndarray gives
    (NumPy's operator takes np.square, np.reciprocal or np.sqrt for some
    exponents: bool ** 2 is int8, complex(inf) ** -1 is 0), not np.power's."""
    base = power_values(dtype)
    for exponent in EXPONENTS:
        s = gts.storage(base, dims="I")
        want, got = outcome(lambda: base ** exponent), outcome(lambda: s ** exponent)
        assert repr(got) == repr(want), (dtype, exponent)
        want, got = outcome(lambda: exponent ** base), outcome(lambda: exponent ** s)
        assert repr(got) == repr(want), (dtype, exponent, "reflected")

        def in_place(a):
            a **= exponent
            return a

        want, got = outcome(lambda: in_place(base.copy())), outcome(lambda: in_place(s.copy()))
        assert repr(got) == repr(want), (dtype, exponent, "in place")


@pytest.mark.parametrize("compute, dtype", [
    (lambda s: np.add(s, np.ones((3, 2), dtype=object)), "dtype('O')"),
    (lambda s: np.multiply(s.astype("i8"), np.array(1, "m8[s]")), "dtype('<m8[s]')"),
    (lambda s: s.sum(dtype=object, axis=1), "dtype('O')"),
    (lambda s: np.add.accumulate(s, dtype=object), "dtype('O')"),
])
def test_unsupported_result_dtype_says_it_is_the_results(compute, dtype):
    s = gts.ones((3, 2), dims="IJ")
    with pytest.raises(TypeError, match=r"the result's dtype, (.*), is not one a storage holds") \
            as info:
        compute(s)
    assert f"the result's dtype, {dtype}," in str(info.value)


@pytest.mark.parametrize("ufunc", [np.less, np.greater_equal, np.add, np.not_equal])
@pytest.mark.parametrize("dtype", ["f8", "f4", "i8"])
def test_where_with_an_output_that_overlaps_an_input(ufunc, dtype):
    """NumPy writes masked-out elements when where=, an output overlapping
    an input and a cast meet (np.less(s, s[::-1], out=s, where=mask), issue
    19): the input is copied first, so the result is the one of separate
    memory."""
    values = (np.arange(8) % 5).astype(dtype)
    mask = np.array([True] * 4 + [False] * 4)
    expected = values.copy()
    expected[mask] = ufunc(values, values[::-1].copy())[mask].astype(dtype)
    for where in (mask, gts.storage(mask, dims="I")):
        s = gts.storage(values, dims="I")
        assert ufunc(s, s[::-1], out=s, where=where) is s
        np.testing.assert_array_equal(np.asarray(s), expected)
        s = gts.storage(values, dims="I")  # an ndarray input over the same memory
        ufunc(s, np.asarray(s)[::-1], out=s, where=where)
        np.testing.assert_array_equal(np.asarray(s), expected)


def test_masked_comparison_with_an_out_of_range_int_does_not_crash():
    """A comparison of an integer storage with a Python int beyond its
    dtype, with where= and out=, crashed inside NumPy's masked loop (issue
    19); it runs in a child interpreter, many times, and gives NumPy's
    values (the comparison as mathematics has it)."""
    from conftest import run_python

    code = r"""
import numpy as np, gtstore as gts
checked = 0
for dtype, value in [("i1", 300), ("u1", 2**40), ("u1", -1), ("i2", 70000), ("u4", -5),
                     ("i4", 2**40), ("i1", -129)]:
    for out_dtype in ("f8", "?", "i2"):
        for ufunc in (np.not_equal, np.less, np.greater_equal, np.equal):
            for n in (3, 100, 1000):
                for _ in range(5):
                    base = np.arange(n).astype(dtype)
                    mask = np.arange(n) % 3 == 0
                    s = gts.storage(base, dims="I")
                    o = gts.full((n,), 7, out_dtype, dims="I")
                    for args in ((s, value), (value, s), (base, value)):
                        o[...] = 7
                        ufunc(*args, out=o, where=mask if n % 2 else gts.storage(mask, dims="I"))
                        want = np.full(n, 7, out_dtype)
                        truth = ufunc(base.astype(object), value) if args[0] is not value \
                            else ufunc(value, base.astype(object))
                        want[mask] = truth.astype(bool)[mask]
                        assert (np.asarray(o) == want).all(), (dtype, value, ufunc, out_dtype)
                        checked += 1
print("checked", checked)
"""
    result = run_python(code, timeout=300)
    assert result.returncode == 0, (result.returncode, result.stderr[-3000:])
    assert "checked" in result.stdout


@pytest.mark.parametrize("answer", [(np.dtype("f8"),), np.dtype("f8"), None])
def test_a_foreign_ufuncs_resolve_dtypes_is_checked(answer):
    """Once read past the end of a too short tuple."""
    class Foreign:
        nin, nout, signature = 2, 1, None

        def resolve_dtypes(self, dtypes, **kwargs):
            return answer

        def __call__(self, *args, **kwargs):
            return None

    s = gts.ones((3, 3))
    with pytest.raises(TypeError, match="resolve_dtypes gave .*, not a tuple of 3 dtypes"):
        s.__array_ufunc__(Foreign(), "__call__", s, s)
