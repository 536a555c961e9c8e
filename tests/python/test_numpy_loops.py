"""NumPy's loop bugs and gtstore's way around them (issue 22, docs/storage.md).

gtstore computes with NumPy's loops on views of padded memory. NumPy 2.4.6
on x86-64 leaves elements of a strided bool output of isnan, isinf,
isfinite and signbit unwritten, and its negative reads a strided input as
contiguous. gtstore._numpy_loops probes each ufunc and computes the calls
of a broken one on dense operands. The oracle here is NumPy on contiguous
copies of the values, which its own tests cover.
"""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gtstore as gts
from gtstore import _numpy_loops

PRESETS = gts.arrays.presets()
GPU_PRESETS = [p for p in PRESETS if gts.arrays.get_preset(p)["device"] == "gpu"]

#: The ufuncs whose bool or padded outputs NumPy 2.4.6 gets wrong, and one
#: of each other family that writes bools or numbers of another itemsize.
PREDICATES = [np.isnan, np.isinf, np.isfinite, np.signbit]
UNARY = PREDICATES + [np.negative, np.positive, np.absolute, np.logical_not, np.sign,
                      np.floor, np.square]
BINARY = [np.less, np.equal, np.not_equal, np.greater_equal, np.logical_and, np.logical_xor,
          np.add, np.subtract, np.multiply, np.maximum, np.copysign]


def create(shape, dtype, preset, **kwargs):
    """A storage of `preset` (those of the GPU in host memory)."""
    if preset in GPU_PRESETS:
        kwargs["device"] = "cpu"
    return gts.zeros(shape, dtype, defaults=preset, **kwargs)


def special_values(rng, shape, dtype):
    """Values with NaN, infinities and signed zeros among finite ones."""
    v = rng.normal(size=shape) * 10
    pick = rng.integers(0, 8, size=shape)
    v = np.where(pick == 0, np.nan, np.where(pick == 1, np.inf, v))
    v = np.where(pick == 2, -np.inf, np.where(pick == 3, -0.0, v))
    return v.astype(dtype)


def quiet(compute):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return compute()


# ---- the cases of issue 22 -------------------------------------------------------------


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("shape", [(1, 1, 20), (2, 3, 20), (1, 5, 17), (3, 1, 33)])
def test_isnan_finds_a_nan_anywhere_in_a_column(preset, shape):
    """issue 22: np.isnan(s).any() was False for a gt:cpu_ifirst column of
    20 with a NaN at K = 1..7 or 9..15 (the bool result, padded to the
    float's alignment, is a strided output)."""
    for k in range(shape[2]):
        x = np.ones(shape)
        x[-1, -1, k] = np.nan
        s = gts.storage(x, defaults=preset, **({"device": "cpu"} if preset in GPU_PRESETS
                                               else {}))
        assert bool(np.isnan(s).any()), (preset, shape, k)
        found = np.asarray(np.isnan(s))
        np.testing.assert_array_equal(found, np.isnan(x))


def test_isnan_of_the_issues_column():
    x = np.ones((1, 1, 20))
    x[0, 0, 7] = np.nan
    s = gts.storage(x, defaults="gt:cpu_ifirst")
    assert bool(np.isnan(s).any())


def test_negative_of_the_issues_padded_storage():
    """issue 22: -s of [[1], [2]] padded to 64 bytes gave [[-1.0], [-0.0]]."""
    s = gts.zeros((2, 1), dims="IJ", alignment_size=64)
    np.asarray(s)[...] = [[1.0], [2.0]]
    assert (-s).tolist() == [[-1.0], [-2.0]]
    assert np.negative(s).tolist() == [[-1.0], [-2.0]]


@pytest.mark.parametrize("dtype", ["f4", "f8", "i4", "i8", "u4", "u8"])
@pytest.mark.parametrize("alignment", [16, 32, 64, 128])
def test_negative_of_padded_storages(dtype, alignment):
    for shape in [(2, 1), (5, 1), (3, 2), (17, 1)]:
        s = gts.zeros(shape, dtype, dims="IJ", alignment_size=alignment)
        values = np.arange(1, 1 + np.prod(shape)).reshape(shape).astype(dtype)
        np.asarray(s)[...] = values
        np.testing.assert_array_equal(np.asarray(-s), quiet(lambda: -values))


# ---- properties against NumPy on contiguous arrays ----------------------------------------


@st.composite
def padded_storage(draw, dtype, dims=None, shape=None):
    """A storage of any preset, of 1 to 3 dims with extents 1 (padded to the
    alignment) to 40 (or those of `shape`, some 1), values with NaN and
    infinities, maybe a view with negative steps."""
    if dims is None:
        dims = tuple(draw(st.permutations("IJK"))[: draw(st.integers(1, 3))])
    if shape is None:
        shape = tuple(draw(st.sampled_from([1, 1, 2, 3, 7, 8, 9, 17, 40])) for _ in dims)
    else:
        shape = tuple(1 if draw(st.integers(0, 3)) == 0 else n for n in shape)
    preset = draw(st.sampled_from(PRESETS))
    kwargs = {"dims": dims}
    if draw(st.booleans()):
        kwargs["alignment_size"] = draw(st.sampled_from([16, 64]))
    s = create(shape, dtype, preset, **kwargs)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if np.dtype(dtype).kind == "f":
        np.asarray(s)[...] = special_values(rng, shape, dtype)
    else:
        np.asarray(s)[...] = rng.integers(-40, 40, size=shape).astype(dtype)
    if draw(st.integers(0, 3)) == 0:
        s = s[tuple(slice(None, None, -1) if draw(st.booleans()) else slice(None)
                    for _ in dims)]
    return s


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_unary_ufuncs_like_numpy_on_contiguous_arrays(data):
    """Every unary ufunc that writes bools or numbers, without and with
    out= (a storage of another preset, or a strided ndarray) and where=."""
    ufunc = data.draw(st.sampled_from(UNARY), label="ufunc")
    dtype = data.draw(st.sampled_from(["f2", "f4", "f8"] if ufunc in PREDICATES
                                      else ["f4", "f8", "i4", "i8", "i1"]), label="dtype")
    s = data.draw(padded_storage(dtype), label="s")
    contiguous = np.array(np.asarray(s))
    expected = quiet(lambda: ufunc(contiguous))
    np.testing.assert_array_equal(np.asarray(quiet(lambda: ufunc(s))), expected)
    # out=: a storage of any preset, all elements unlike the result before
    target = create(s.shape, expected.dtype, data.draw(st.sampled_from(PRESETS)),
                    dims=s.dims, alignment_size=data.draw(st.sampled_from([8, 64])))
    np.asarray(target)[...] = ~expected if expected.dtype == bool else expected + 1
    mask = np.random.default_rng(0).integers(0, 2, size=s.shape).astype(bool)
    if data.draw(st.booleans(), label="where"):
        quiet(lambda: ufunc(s, out=target, where=gts.storage(mask, dims=s.dims)))
        before = ~expected if expected.dtype == bool else expected + 1
        np.testing.assert_array_equal(np.asarray(target), np.where(mask, expected, before))
    else:
        quiet(lambda: ufunc(s, out=target))
        np.testing.assert_array_equal(np.asarray(target), expected)


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_binary_ufuncs_writing_bools_like_numpy(data):
    """Comparisons, logical and arithmetic ufuncs of two storages of any
    presets (dims broadcast) against NumPy on contiguous arrays."""
    ufunc = data.draw(st.sampled_from(BINARY), label="ufunc")
    dtype = data.draw(st.sampled_from(["f4", "f8", "i4", "i8"]), label="dtype")
    a = data.draw(padded_storage(dtype), label="a")
    b = data.draw(padded_storage(dtype, dims=a.dims, shape=a.shape), label="b")
    expected = quiet(lambda: ufunc(np.array(np.asarray(a)), np.array(np.asarray(b))))
    np.testing.assert_array_equal(np.asarray(quiet(lambda: ufunc(a, b))), expected)


@pytest.mark.parametrize("ufunc", PREDICATES + [np.negative])
@pytest.mark.parametrize("preset", GPU_PRESETS + ["gt:cpu_ifirst", "gtmc"])
def test_on_the_emulated_device(ufunc, preset):
    """The emulated device's engine is NumPy over device memory laid out as
    on a GPU: the same calls are routed."""
    gts.use_gpu("emulated")
    try:
        for shape in [(1, 1, 20), (3, 2, 9)]:
            x = special_values(np.random.default_rng(1), shape, "f8")
            s = gts.storage(x, defaults=preset, device="gpu")
            got = gts.storage(ufunc(s), device="cpu")
            np.testing.assert_array_equal(np.asarray(got), quiet(lambda: ufunc(x)))
    finally:
        gts.use_gpu(None)


# ---- the route itself, on any NumPy --------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_the_dense_route_computes_what_numpy_computes(data):
    """gtstore._numpy_loops.call with strided ndarrays (steps of padded
    storages, reversed, broadcast) gives NumPy's result on contiguous ones,
    for broken ufuncs and others alike, with and without where=."""
    ufunc = data.draw(st.sampled_from(UNARY + BINARY), label="ufunc")
    shape = (data.draw(st.integers(1, 5)), data.draw(st.integers(1, 20)))

    def strided(values):
        step = data.draw(st.sampled_from([1, 2, 8, -1]))
        spread = np.zeros((shape[0], shape[1] * abs(step)), values.dtype)
        view = spread[:, ::step]
        view[...] = values
        return view.T.T if data.draw(st.booleans()) else view

    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    inputs = [special_values(rng, shape, "f8") for _ in range(ufunc.nin)]
    expected = quiet(lambda: ufunc(*inputs))
    views = [strided(x) for x in inputs]
    if ufunc.nin == 2 and data.draw(st.booleans()):
        views[1] = views[1][:1]  # broadcast along the first axis
        expected = quiet(lambda: ufunc(inputs[0], inputs[1][:1]))
    out = strided(np.zeros(shape, expected.dtype))
    kwargs = {"out": (out,)}
    mask = rng.integers(0, 2, shape).astype(bool)
    if data.draw(st.booleans()):
        kwargs["where"] = mask
        expected = np.where(mask, expected, np.zeros_like(expected))
    assert quiet(lambda: _numpy_loops.call(ufunc, tuple(views), kwargs)) is out
    np.testing.assert_array_equal(out, expected)


def test_only_numpys_ufuncs_are_probed():
    assert not _numpy_loops.broken(np.copyto)
    assert not _numpy_loops.broken(np.matmul)  # a gufunc: its own loops
    assert not _numpy_loops.broken(len)


def test_dense():
    a = np.zeros((4, 6))
    assert _numpy_loops.dense(a) and _numpy_loops.dense(a.T) and _numpy_loops.dense(a[:1])
    assert not _numpy_loops.dense(a[:, ::2]) and not _numpy_loops.dense(a[::-1])
    assert not _numpy_loops.dense(np.broadcast_to(a[:1], (4, 6)))
    assert not _numpy_loops.dense(a.T, order=_numpy_loops._order(a))


# ---- NumPy's own loops: strict xfails that report NumPy's fix -----------------------------

#: The ufuncs gtstore's probe finds broken on this NumPy.
BROKEN = {u for u in PREDICATES + [np.negative] if _numpy_loops.broken(u)}


def numpys_bug(ufunc, what):
    """`ufunc` as a parameter: a strict xfail where the probe finds it broken."""
    return pytest.param(ufunc, id=ufunc.__name__, marks=pytest.mark.xfail(
        ufunc in BROKEN, strict=True, reason=f"NumPy {np.__version__}: {what}"))


@pytest.mark.parametrize("ufunc", [numpys_bug(u, "elements of a strided bool output are left "
                                                 "unwritten") for u in PREDICATES])
@pytest.mark.parametrize("dtype", ["f4", "f8"])
def test_numpys_predicates_write_strided_bool_outputs(ufunc, dtype):
    """NumPy itself on ndarrays: a bool output with a step of 8 (a padded
    bool storage). An xfail while NumPy has the bug (gtstore's probe finds
    it and routes around it); once NumPy fixes it, the probe no longer
    finds it and this passes. The probe and NumPy disagreeing fails it
    (strict)."""
    x = special_values(np.random.default_rng(2), 40, dtype)
    out = np.zeros(320, bool)[::8]
    out[...] = ~ufunc(x)
    ufunc(x, out=out)
    np.testing.assert_array_equal(out, ufunc(x))


@pytest.mark.parametrize("ufunc", [numpys_bug(np.negative, "a strided input is read as "
                                                            "contiguous")])
@pytest.mark.parametrize("dtype,step", [("f8", 8), ("i8", 8), ("f4", 4), ("i4", 4)])
def test_numpys_negative_reads_strided_inputs(ufunc, dtype, step):
    a = np.arange(1, 1 + 2 * step).astype(dtype)[::step]
    out = np.zeros(2 * step, dtype)[::step]
    ufunc(a, out=out)
    np.testing.assert_array_equal(out, -a)
