"""The ndarray methods of storages (issue 22, item 4): round, clip, squeeze,
ravel/flatten, cumsum/cumprod, sort/argsort, view and tofile, and axes given
by dim label (s.sum(axis="K"), s.transpose("K", "J", "I")), against NumPy on
the same values, with every preset's layout and padding, with halos and data dims; on the GPU
through the engine (the emulated device here, CUDA where gtstore.gpu() has
one). docs/storage.md, "Array methods", says what each result is.
"""

import gc
import inspect
import os
import sys
import tracemalloc

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import gtstore as gts
from conftest import PRESETS, cuda_present, live, run_python

LABELS = ("I", "J", "K", "0")
DTYPES = ("float64", "float32", "float16", "int32", "uint8", "int8", "int64", "bool")


@st.composite
def storages(draw, dtypes=DTYPES, max_extent=4):
    """A storage of 1 to 4 dims in any order (I, J, K and a data dim), with
    any preset's layout and padding (GPU presets' in host memory), a halo,
    and the NumPy array of its values."""
    ndim = draw(st.integers(1, 4))
    dims = tuple(draw(st.permutations(LABELS))[:ndim])
    shape = tuple(draw(st.lists(st.integers(1, max_extent), min_size=ndim, max_size=ndim)))
    lower = [draw(st.integers(0, n // 2)) for n in shape]
    halo = tuple((lo, draw(st.integers(0, (n - lo) // 2))) for lo, n in zip(lower, shape))
    dtype = np.dtype(draw(st.sampled_from(dtypes)))
    preset = draw(st.sampled_from(PRESETS))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    if dtype.kind == "f":
        values = (rng.standard_normal(shape) * 10).astype(dtype)
    else:
        values = rng.integers(0, 50, shape).astype(dtype)
    s = gts.storage(values, dims=dims, halo=halo, defaults=preset, device="cpu")
    return s, values


def an_axis(draw, s):
    """An axis of `s` as a label, a non-negative or a negative integer, and
    the non-negative integer it is."""
    axis = draw(st.integers(0, s.ndim - 1))
    form = draw(st.sampled_from(["label", "int", "negative"]))
    given = {"label": s.dims[axis], "int": axis, "negative": axis - s.ndim}[form]
    return given, axis


def same_error(expected, ours):
    """Whether NumPy's call `expected` raises; if it does, `ours` must raise
    the same type of error (NumPy's round of bools to decimals > 0 and its
    clip of uint8 to -1 do)."""
    try:
        with np.errstate(all="ignore"):
            expected()
    except Exception as error:  # noqa: BLE001 - whatever NumPy raises, we raise
        with pytest.raises(type(error)), np.errstate(all="ignore"):
            ours()
        return True
    return False


def assert_storage(result, expected, dims, exact=True):
    assert isinstance(result, gts.Storage), type(result)
    assert result.dims == tuple(dims)
    assert result.dtype == expected.dtype
    if exact:
        np.testing.assert_array_equal(np.asarray(result), expected)
    else:  # sums in another order
        np.testing.assert_allclose(np.asarray(result), expected, **tolerance(expected.dtype))


def tolerance(dtype):
    """Of sums in another order: float16 keeps 3 decimal digits."""
    return dict(rtol=5e-3, atol=5e-2) if dtype == np.float16 else dict(rtol=1e-5, atol=1e-5)


# ---- axes by label ---------------------------------------------------------------------------

REDUCTIONS = ("sum", "prod", "mean", "std", "var", "min", "max", "any", "all")


@pytest.mark.parametrize("name", REDUCTIONS)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_reductions_take_labels(name, data):
    s, x = data.draw(storages(), label="storage")
    n = data.draw(st.integers(1, s.ndim))
    axes = data.draw(st.permutations(range(s.ndim)))[:n]
    labels = tuple(s.dims[a] for a in axes)
    given_axis = labels[0] if n == 1 and data.draw(st.booleans()) else labels
    keepdims = data.draw(st.booleans())
    if name == "prod" and x.dtype == np.float16:
        # float16 products whose partial products may pass its largest value
        # overflow or not by the order of the factors: no order is the right one
        bound = np.prod(np.maximum(np.abs(x.astype(np.float64)), 1.0), axis=tuple(axes))
        assume(np.all(bound < np.finfo(np.float16).max))
    with np.errstate(all="ignore"):
        result = getattr(s, name)(axis=given_axis, keepdims=keepdims)
        expected = getattr(np, name)(x, axis=tuple(axes), keepdims=keepdims)
    if keepdims or n < s.ndim:
        kept = s.dims if keepdims else tuple(d for d in s.dims if d not in labels)
        assert_storage(result, expected, kept, exact=name in ("min", "max", "any", "all"))
    else:
        np.testing.assert_allclose(result, expected, **tolerance(np.asarray(expected).dtype))


@pytest.mark.parametrize("name", ["argmin", "argmax"])
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_argmin_argmax_take_labels(name, data):
    s, x = data.draw(storages(), label="storage")
    given_axis, axis = an_axis(data.draw, s)
    np.testing.assert_array_equal(getattr(s, name)(axis=given_axis), getattr(x, name)(axis=axis))


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_transpose_takes_labels(data):
    s, x = data.draw(storages(), label="storage")
    order = data.draw(st.permutations(range(s.ndim)))
    labels = [s.dims[a] for a in order]
    for t in (s.transpose(*labels), s.transpose(labels), s.transpose(tuple(labels)),
              np.transpose(s, labels)):
        assert_storage(t, x.transpose(order), labels)
        assert t.halo == tuple(s.halo[a] for a in order)
    mixed = [labels[0], *order[1:]]  # labels and integers mix
    assert s.transpose(mixed).dims == tuple(labels)


def test_numpy_functions_take_labels():
    x = np.arange(24.0).reshape(2, 3, 4)
    s = gts.storage(x, dims="IJK", halo=(1, 1, 0))
    assert_storage(np.sum(s, axis="K"), x.sum(2), "IJ")
    assert_storage(np.mean(s, axis=("I", "K")), x.mean((0, 2)), "J")
    assert_storage(np.add.reduce(s, axis="J"), x.sum(1), "IK")
    assert_storage(np.add.accumulate(s, axis="J"), np.add.accumulate(x, axis=1), "IJK")
    assert_storage(np.max(s, axis=-1, keepdims=True), x.max(2, keepdims=True), "IJK")


def test_data_dim_labels_are_axes():
    x = np.arange(2 * 3 * 4 * 5.0).reshape(2, 3, 4, 5)
    s = gts.storage(x, dims=("K", "0", "I", "1"))
    assert_storage(s.sum(axis="0"), x.sum(1), ("K", "I", "1"))
    assert_storage(s.cumsum(axis="1"), x.cumsum(3), ("K", "0", "I", "1"))
    assert s.transpose("1", "0", "I", "K").shape == (5, 3, 4, 2)


METHODS_WITH_AXIS = {
    **{name: (lambda name: lambda s, axis: getattr(s, name)(axis=axis))(name)
       for name in REDUCTIONS + ("argmin", "argmax", "cumsum", "cumprod", "argsort", "squeeze")},
    "sort": lambda s, axis: s.sort(axis=axis),
    "transpose": lambda s, axis: s.transpose(axis, "I", "J"),
    "np.sum": lambda s, axis: np.sum(s, axis=axis),
    "np.add.reduce": lambda s, axis: np.add.reduce(s, axis=axis),
    "np.cumsum": lambda s, axis: np.cumsum(s, axis=axis),
}


@pytest.mark.parametrize("method", list(METHODS_WITH_AXIS))
@pytest.mark.parametrize("label", ["X", "0", "", "IJ", "k"])
def test_unknown_label_is_a_value_error_naming_it(method, label):
    s = gts.ones((1, 1, 1), dims="IJK")
    message = rf"ax[ie]s: '{label}' is not one of the dims \('I', 'J', 'K'\)"
    with pytest.raises(ValueError, match=message):
        METHODS_WITH_AXIS[method](s, label)


@pytest.mark.parametrize("method", [m for m in METHODS_WITH_AXIS if m != "transpose"])
def test_bad_axes_name_the_parameter(method):
    s = gts.ones((1, 1, 1), dims="IJK")
    call = METHODS_WITH_AXIS[method]
    with pytest.raises(np.exceptions.AxisError, match="axis 3 is out of bounds"):
        call(s, 3)
    with pytest.raises(TypeError, match="axis: expected an integer or a dim label, got 1.5"):
        call(s, 1.5)
    if method in ("sort", "argmin", "argmax", "argsort", "cumsum", "cumprod", "np.cumsum"):
        return  # one axis only: NumPy refuses tuples itself
    with pytest.raises(np.exceptions.AxisError, match=r"\('K', 2\) repeats an axis"):
        call(s, ("K", 2))
    with pytest.raises(ValueError, match=r"'L' is not one of the dims .* in \('I', 'L'\)"):
        call(s, ("I", "L"))


def test_transpose_label_errors():
    s = gts.ones((2, 3, 4), dims="IJK")
    with pytest.raises(ValueError, match=r"axes: 'X' is not one of the dims \('I', 'J', 'K'\)"):
        s.transpose("X", "J", "I")
    with pytest.raises(np.exceptions.AxisError, match=r"axes: \('K', 'K', 'I'\) repeats an axis"):
        s.transpose("K", "K", "I")
    with pytest.raises(ValueError, match="don't match array of 3 dimensions"):
        s.transpose("K", "J")
    with pytest.raises(ValueError, match="don't match array of 3 dimensions"):
        s.transpose("KJI")  # one string is one label
    assert s.transpose(np.array([2, 1, 0])).dims == ("K", "J", "I")


# ---- round and clip --------------------------------------------------------------------------


@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_round_like_numpy(data):
    s, x = data.draw(storages(), label="storage")
    decimals = data.draw(st.integers(-2, 3))
    if same_error(lambda: x.round(decimals), lambda: s.round(decimals)):
        return
    with np.errstate(all="ignore"):
        expected = x.round(decimals)
        result = s.round(decimals)
    assert_storage(result, expected, s.dims)
    assert result.halo == s.halo
    assert_storage(np.round(s, decimals), expected, s.dims)
    assert_storage(np.around(s, decimals=decimals), expected, s.dims)


def test_round_into_out():
    x = np.arange(12.0).reshape(3, 4) * 0.37
    s = gts.storage(x, dims="IJ")
    out = gts.zeros((4, 3), dims="JI", halo=((1, 0), (0, 1)))  # out's own order of the dims
    assert s.round(1, out=out) is out
    np.testing.assert_array_equal(np.asarray(out), x.round(1).T)
    array = np.zeros((3, 4))
    assert s.round(out=array) is array
    np.testing.assert_array_equal(array, x.round())
    with pytest.raises(ValueError, match="out: a storage of dims"):
        s.round(out=gts.zeros((3, 4), dims="IK"))
    assert s.round().dtype == np.float64 and gts.ones(3, dtype=bool).round().dtype == np.float16


@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_clip_like_numpy(data):
    s, x = data.draw(storages(), label="storage")
    low = data.draw(st.one_of(st.none(), st.integers(-5, 30)))
    high = data.draw(st.one_of(st.none(), st.integers(-5, 60)))
    if low is not None and high is not None and low > high:
        low, high = high, low
    if same_error(lambda: x.clip(low, high), lambda: s.clip(low, high)):
        return
    expected = x.clip(low, high)
    assert_storage(s.clip(low, high), expected, s.dims)
    assert_storage(s.clip(min=low, max=high), expected, s.dims)
    assert_storage(np.clip(s, low, high), expected, s.dims)
    assert_storage(np.clip(s, a_min=low, a_max=high), expected, s.dims)


def test_clip_bounds_broadcast_by_dims_and_out():
    x = np.arange(12.0).reshape(3, 4)
    s = gts.storage(x, dims="IJ")
    high = gts.storage(np.array([1.0, 5.0, 9.0, 20.0]), dims="J")
    assert_storage(s.clip(2, high), np.clip(x, 2, [1.0, 5.0, 9.0, 20.0]), "IJ")
    out = gts.zeros((3, 4), dims="IJ")
    assert s.clip(3, 6, out=out) is out
    np.testing.assert_array_equal(np.asarray(out), x.clip(3, 6))
    ints = gts.storage(np.array([0, 100, 255], dtype=np.uint8), dims="I")
    # Python ints beyond the dtype's range clip nothing, as NumPy's ndarray.clip
    assert_storage(ints.clip(-1000, 1000), np.array([0, 100, 255], dtype=np.uint8), "I")
    with pytest.raises(TypeError, match="multiple values for argument 'min'"):
        s.clip(1, min=2)
    with pytest.raises(TypeError, match="a_min and min are the same bound"):
        np.clip(s, a_min=1, min=2)
    with pytest.raises(TypeError, match="at most 3 positional"):
        s.clip(1, 2, None, 4)
    # the one parser: keywords clip does not take go on to NumPy's ufunc
    with pytest.raises(TypeError, match="bogus"):
        s.clip(1, 2, bogus=3)


# ---- squeeze ---------------------------------------------------------------------------------


@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_squeeze_like_numpy(data):
    s, x = data.draw(storages(max_extent=2), label="storage")
    ones = [a for a in range(s.ndim) if s.shape[a] == 1]
    chosen = data.draw(st.lists(st.sampled_from(ones), unique=True)) if ones else []
    if chosen and data.draw(st.booleans()):
        given_axis = tuple(s.dims[a] for a in chosen)
        result = s.squeeze(given_axis)
    else:
        result = s.squeeze(tuple(chosen)) if chosen else s.squeeze()
        chosen = chosen or ones
    kept = [a for a in range(s.ndim) if a not in chosen]
    assert_storage(result, x.squeeze(tuple(chosen)), [s.dims[a] for a in kept])
    assert result.halo == tuple(s.halo[a] for a in kept)
    if result.size:  # a view: writes reach s
        other = np.logical_not(x[(0,) * s.ndim]).astype(x.dtype)
        result[(0,) * result.ndim] = other
        assert np.asarray(s)[(0,) * s.ndim] == other


def test_squeeze_errors_and_numpy():
    s = gts.zeros((1, 3, 1), dims="IJK")
    with pytest.raises(ValueError, match="axis: cannot select an axis to squeeze out which has "
                                         "size not equal to one: dim 'J' has extent 3"):
        s.squeeze("J")
    with pytest.raises(ValueError, match="dim 'J' has extent 3"):
        s.squeeze(axis=(0, 1))
    assert np.squeeze(s).dims == ("J",) and np.squeeze(s, axis="K").dims == ("I", "J")
    assert gts.zeros((1, 1)).squeeze().shape == ()


# ---- ravel, flatten and tofile ---------------------------------------------------------------


@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_ravel_and_flatten_like_numpy(data):
    s, x = data.draw(storages(), label="storage")
    order = data.draw(st.sampled_from(["C", "F", "A", "K"]))
    view = np.asarray(s)
    for result, expected in ((s.ravel(order), view.ravel(order)),
                             (s.flatten(order), view.flatten(order)),
                             (np.ravel(s, order), np.ravel(view, order))):
        assert type(result) is np.ndarray
        np.testing.assert_array_equal(result, expected)
    np.testing.assert_array_equal(s.ravel(), x.ravel())
    assert not np.shares_memory(s.flatten(), view)


def test_ravel_is_a_view_where_numpy_gives_one():
    contiguous = gts.zeros((2, 3), dims="IJ")  # C order, no padding
    flat = contiguous.ravel()
    flat[4] = 5.0
    assert np.asarray(contiguous)[1, 1] == 5.0
    padded = gts.zeros((3, 5), dims="IJ", defaults="gt:gpu", device="cpu")  # rows padded to 32 B
    assert not np.shares_memory(padded.ravel(), np.asarray(padded))


def test_tofile_writes_what_numpy_writes(tmp_path):
    x = np.arange(24.0).reshape(2, 3, 4)
    s = gts.storage(x, defaults="gt:cpu_ifirst", halo=(1, 1, 0))
    s.tofile(tmp_path / "binary")
    np.testing.assert_array_equal(np.fromfile(tmp_path / "binary").reshape(2, 3, 4), x)
    with open(tmp_path / "text", "w") as f:
        s.tofile(f, sep=",", format="%.1f")
    x.tofile(tmp_path / "numpy", sep=",", format="%.1f")
    assert (tmp_path / "text").read_text() == (tmp_path / "numpy").read_text()
    with pytest.raises(TypeError):
        s.tofile()


# ---- cumsum, cumprod -------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_cumulative_like_numpy(name, data):
    s, x = data.draw(storages(), label="storage")
    given_axis, axis = an_axis(data.draw, s)
    dtype = data.draw(st.sampled_from([None, "float64", "int64"]))
    with np.errstate(all="ignore"):
        expected = getattr(x, name)(axis=axis, dtype=dtype)
        result = getattr(s, name)(given_axis, dtype)
        assert_storage(result, expected, s.dims, exact=dtype != "float64" and x.dtype.kind != "f")
        assert result.halo == s.halo
        assert_storage(getattr(np, name)(s, axis=given_axis, dtype=dtype), expected, s.dims,
                       exact=False)
        flat = getattr(s, name)()  # along no axis: NumPy's 1-d array
        assert type(flat) is np.ndarray
        np.testing.assert_allclose(flat, getattr(x, name)(), **tolerance(flat.dtype))


def test_cumsum_into_out():
    x = np.arange(6.0).reshape(2, 3)
    s = gts.storage(x, dims="IJ")
    out = gts.zeros((3, 2), dims="JI")
    assert s.cumsum("J", out=out) is out
    np.testing.assert_array_equal(np.asarray(out), x.cumsum(1).T)
    assert type(np.cumsum(s)) is np.ndarray and type(np.cumprod(s, axis=None)) is np.ndarray
    flat = gts.zeros(6, dims="I")
    assert s.cumsum(out=flat) is flat  # along no axis: out is 1-d, as NumPy's
    np.testing.assert_array_equal(np.asarray(flat), x.cumsum())
    with pytest.raises(TypeError, match="at most 3 positional"):
        s.cumsum(0, None, None, 1)


# ---- sort, argsort ---------------------------------------------------------------------------


@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_sort_and_argsort_like_numpy(data):
    s, x = data.draw(storages(), label="storage")
    given_axis, axis = an_axis(data.draw, s)
    order = s.argsort(given_axis, kind="stable")
    assert_storage(order, x.argsort(axis, kind="stable"), s.dims)
    assert_storage(np.argsort(s, axis=given_axis, stable=True), x.argsort(axis, stable=True),
                   s.dims)
    copy = np.sort(s, given_axis)
    assert_storage(copy, np.sort(x, axis), s.dims)
    np.testing.assert_array_equal(np.asarray(s), x)  # np.sort copies
    assert s.sort(given_axis) is None
    assert_storage(s, np.sort(x, axis), s.dims)  # in place
    np.testing.assert_array_equal(s.argsort(axis=None, kind="stable"),
                                  np.sort(x, axis).argsort(axis=None, kind="stable"))
    assert type(np.sort(s, axis=None)) is np.ndarray
    np.testing.assert_array_equal(np.sort(s, None, "stable"), np.sort(x, None, "stable"))


def test_sort_defaults_and_errors():
    x = np.array([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
    s = gts.storage(x, dims="KI")
    s.sort()  # the last axis, as NumPy's
    np.testing.assert_array_equal(np.asarray(s), np.sort(x))
    assert_storage(gts.storage(x, dims="KI").argsort(), x.argsort(), "KI")
    with pytest.raises(TypeError, match="axis: expected an integer or a dim label, got None"):
        s.sort(axis=None)  # as ndarray.sort: in place needs an axis
    readonly = gts.as_storage(np.frombuffer(x.tobytes()).reshape(2, 3))
    with pytest.raises(ValueError, match="read-only"):
        readonly.sort()


# ---- view ------------------------------------------------------------------------------------


def test_view_shares_memory_and_parameters():
    x = np.arange(12.0).reshape(3, 4)
    s = gts.storage(x, dims="JK", halo=((1, 1), (0, 0)), defaults="gt:cpu_ifirst")
    for v in (s.view(), s.view("u8"), s.view(dtype=np.int64), s.view(type=gts.Storage)):
        assert isinstance(v, gts.Storage)
        assert (v.dims, v.halo, v.shape, v.strides, v.aligned_index) == (
            s.dims, s.halo, s.shape, s.strides, s.aligned_index)
    bits = s.view("u8")
    assert bits.dtype == np.uint8 or bits.dtype == np.uint64
    np.testing.assert_array_equal(np.asarray(bits), x.view(np.uint64))
    bits[0, 0] = np.float64(-2.5).view(np.uint64)
    assert np.asarray(s)[0, 0] == -2.5  # the same memory
    array = s.view(np.ndarray)
    assert type(array) is np.ndarray and np.shares_memory(array, np.asarray(s))
    assert type(s.view(np.int64, np.ndarray)) is np.ndarray
    masked = s.view(type=np.ma.MaskedArray)
    assert isinstance(masked, np.ma.MaskedArray)


def test_view_of_another_itemsize_regroups_the_last_dim():
    x = np.arange(12.0).reshape(3, 4)
    s = gts.storage(x, dims="JK", halo=((1, 1), (1, 0)))  # K last and contiguous
    halves = s.view("f4")
    assert halves.shape == (3, 8) and halves.dims == ("J", "K")
    assert halves.halo == ((1, 1), (2, 0)) and halves.aligned_index == (1, 2)
    np.testing.assert_array_equal(np.asarray(halves), x.view("f4"))
    back = halves.view("f8")
    assert (back.shape, back.halo, back.strides) == (s.shape, s.halo, s.strides)
    np.testing.assert_array_equal(np.asarray(back), x)


@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_view_like_numpy(data):
    """Where NumPy's view of the values works, ours gives the same values
    unless the halo or aligned point would split an element; where NumPy's
    refuses, ours does."""
    s, x = data.draw(storages(), label="storage")
    dtype = np.dtype(data.draw(st.sampled_from(["u1", "i2", "f4", "f8", "c16"])))
    try:
        expected = np.asarray(s).view(dtype)
    except ValueError:
        with pytest.raises(ValueError, match="dtype: "):
            s.view(dtype)
        return
    try:
        result = s.view(dtype)
    except ValueError as error:
        assert "is no whole number of" in str(error)
        return
    assert result.dims == s.dims and result.dtype == dtype
    np.testing.assert_array_equal(np.asarray(result), expected)


def test_view_errors():
    s = gts.zeros((3, 4), dims="IJ", defaults="gt:cpu_ifirst")  # I contiguous, J last
    with pytest.raises(ValueError, match=r"dtype: to view 8-byte elements as 4-byte ones, the "
                                         r"last dimension \('J'\) must be contiguous"):
        s.view("f4")
    with pytest.raises(ValueError, match="no whole number of 16-byte elements"):
        gts.zeros(3).view("c16")
    with pytest.raises(ValueError, match="a 0-d storage"):
        gts.zeros(3)[0:1].squeeze().view("f4")
    with pytest.raises(TypeError, match="type: <class 'list'> is neither"):
        s.view(type=list)
    with pytest.raises(TypeError, match="subarray"):
        s.view("(2,)f4")
    with pytest.raises(TypeError):
        s.view("f8", np.ndarray, 1)


# ---- signatures ------------------------------------------------------------------------------


@pytest.mark.parametrize("name, signature", [
    ("round", "(decimals=0, out=None)"),
    ("clip", "(min=None, max=None, out=None, **kwargs)"),
    ("squeeze", "(axis=None)"),
    ("ravel", "(order='C')"),
    ("flatten", "(order='C')"),
    ("cumsum", "(axis=None, dtype=None, out=None)"),
    ("cumprod", "(axis=None, dtype=None, out=None)"),
    ("sort", "(axis=-1, kind=None, order=None, *, stable=None)"),
    ("argsort", "(axis=-1, kind=None, order=None, *, stable=None)"),
    ("view", "(dtype=None, type=None)"),
    ("tofile", "(fid, /, sep='', format='%s')"),
])
def test_signatures_are_numpys(name, signature):
    s = gts.zeros(2)
    assert str(inspect.signature(getattr(s, name))) == signature
    assert str(inspect.signature(getattr(gts.Storage, name))).startswith("(self, ")
    assert getattr(gts.Storage, name).__doc__


# ---- on the GPU ------------------------------------------------------------------------------

DEVICE_KINDS = {None: gts.GPUStorage, "gt4py": gts.SoftwareManagedGPUStorage,
                "cuda": gts.CudaManagedGPUStorage}


def values(s):
    """A storage's values on the host, from any device."""
    return np.asarray(gts.storage(s, device="cpu")) if isinstance(s, gts.Storage) else s


@pytest.fixture
def emulated_gpu():
    gts.use_gpu("emulated")
    yield
    gts.use_gpu(None)


DEVICE_CALLS = {
    "round": (lambda s: s.round(1), lambda x: x.round(1)),
    "clip": (lambda s: s.clip(-3, 4), lambda x: x.clip(-3, 4)),
    "cumsum": (lambda s: s.cumsum("J"), lambda x: x.cumsum(1)),
    "cumprod": (lambda s: s.cumprod(axis=0), lambda x: x.cumprod(0)),
    "argsort": (lambda s: s.argsort("K", kind="stable"), lambda x: x.argsort(2, kind="stable")),
    "sum": (lambda s: s.sum(axis=("I", "K")), lambda x: x.sum((0, 2))),
    "max": (lambda s: s.max(axis="J"), lambda x: x.max(1)),
    "squeeze": (lambda s: s[:1].squeeze("I"), lambda x: x[0]),
    "view": (lambda s: s.view("i8"), lambda x: x.view("i8")),
    "transpose": (lambda s: s.transpose("K", "I", "J"), lambda x: x.transpose(2, 0, 1)),
}


@pytest.mark.parametrize("managed", list(DEVICE_KINDS), ids=str)
@pytest.mark.parametrize("name", list(DEVICE_CALLS))
def test_device_storages_give_storages_of_their_kind(emulated_gpu, managed, name):
    x = np.random.default_rng(1).standard_normal((3, 4, 5)) * 10
    s = gts.storage(x, device="gpu", managed=managed, halo=(1, 0, 2))
    ours, theirs = DEVICE_CALLS[name]
    result = ours(s)
    assert type(result) is DEVICE_KINDS[managed]
    np.testing.assert_allclose(values(result), theirs(x), rtol=1e-12)


@pytest.mark.parametrize("managed", list(DEVICE_KINDS), ids=str)
def test_device_storages_sort_in_place_and_flatten_to_host_arrays(emulated_gpu, managed):
    x = np.random.default_rng(2).standard_normal((3, 4))
    s = gts.storage(x, device="gpu", managed=managed, dims="IJ")
    for flat, expected in ((s.ravel(), x.ravel()), (s.flatten("F"), x.flatten("F")),
                           (s.cumsum(), x.cumsum()), (s.argsort(None), x.argsort(None))):
        assert type(flat) is np.ndarray
        np.testing.assert_allclose(flat, expected)
    assert s.sort("I") is None
    np.testing.assert_array_equal(values(s), np.sort(x, 0))


def test_cuda_storages_where_the_engine_allows():
    """On a CUDA GPU (the fake driver in CI): views (squeeze, view, transpose)
    need no engine; computing needs CuPy, or says so."""
    if gts.gpu() is None or not gts.gpu()["name"].startswith("cuda"):
        pytest.skip("no CUDA GPU")
    x = np.arange(24.0).reshape(2, 3, 4)
    s = gts.storage(x, device="gpu", managed=None)
    assert s[:1].squeeze().dims == ("J", "K") and type(s[:1].squeeze()) is gts.GPUStorage
    assert s.view("i8").dtype == np.int64 and s.transpose("K", "J", "I").dims == ("K", "J", "I")
    np.testing.assert_array_equal(s.ravel(), x.ravel())
    try:
        import cupy  # noqa: F401
    except ImportError:
        with pytest.raises(RuntimeError, match="needs CuPy"):
            s.cumsum("K")
        return
    if not os.environ.get("GTSTORE_LIBCUDA"):  # CuPy's GPU is gtstore's
        np.testing.assert_array_equal(values(s.cumsum("K")), x.cumsum(2))


@pytest.mark.parametrize("gpu", ["emulated"] + (["cuda"] if cuda_present() else []))
def test_assignment_of_a_transpose_by_dims_needs_no_engine(gpu):
    """A device storage assigned another whose dims are its own in another
    order (same extents) is assigned as one of its own dims would be:
    copied by gtstore's strided kernels, or cast, on a CUDA GPU without
    CuPy too (the fake driver in CI)."""
    gts.use_gpu(gpu)
    try:
        x = np.arange(24.0).reshape(2, 3, 4)
        s = gts.zeros((2, 3, 4), dims="IJK", device="gpu", managed=None)
        t = gts.storage(x.transpose(2, 0, 1).copy(), dims="KIJ", device="gpu", managed=None)
        s[...] = t
        np.testing.assert_array_equal(values(s), x)
        y = np.random.default_rng(3).random((4, 2, 3))  # K, I, J
        u = gts.storage(y, dims="KIJ", device="gpu", managed=None)
        s[:, 1:, ::2] = u[::2, :, 1:]  # views of either: (I, J, K) from (K, I, J)
        expected = x.copy()
        expected[:, 1:, ::2] = y[::2, :, 1:].transpose(1, 2, 0)
        np.testing.assert_array_equal(values(s), expected)
        s[...] = s.transpose("K", "J", "I")  # its own transpose: the same values
        np.testing.assert_array_equal(values(s), expected)
        single = gts.zeros((2, 3, 4), "f4", dims="IJK", device="gpu", managed=None)
        single[...] = t  # cast as for equal dims
        np.testing.assert_array_equal(values(single), x.astype("f4"))
    finally:
        gts.use_gpu(None)


# ---- lifetime --------------------------------------------------------------------------------


def every_call(s, bound, out, tmp_path):
    """Each method once, and each of its errors once."""
    s.round(1), s.round(1, out=out), s.clip(bound, 3), s.clip(min=1, out=out)
    s.squeeze(), s[:, :1].squeeze("J"), s.ravel(), s.flatten("F"), s.view("i8"), s.view(np.ndarray)
    s.cumsum("J"), s.cumsum(), s.cumprod(0, out=out), s.argsort("I"), s.argsort(None)
    s.copy().sort("K"), np.sort(s, None), np.clip(s, a_min=bound, a_max=4)
    s.sum(axis=("I", "K")), s.transpose("K", "J", "I"), s.tofile(tmp_path / "values")
    for fail in (lambda: s.sum(axis="X"), lambda: s.squeeze("I"), lambda: s.view("c16"),
                 lambda: s.clip(1, min=2), lambda: s.transpose("K", "K", "I"),
                 lambda: s.sort(None), lambda: s.round(out=gts.zeros(3)),
                 lambda: s.cumsum(("I", "J")), lambda: np.clip(s, a_min=1, min=1)):
        with pytest.raises((ValueError, TypeError)):
            fail()


def test_methods_release_what_they_take(tmp_path, baseline):
    s = gts.storage(np.arange(24.0).reshape(2, 3, 4), defaults="gtmc", halo=(1, 0, 1))
    bound = gts.full((3,), 2.0, dims="J")
    out = gts.zeros((2, 3, 4))
    counts = sys.getrefcount(s), sys.getrefcount(bound), sys.getrefcount(out)
    for _ in range(5):  # caches (NumPy's, the dtype probes) fill first
        every_call(s, bound, out, tmp_path)
    gc.collect()
    tracemalloc.start()
    try:
        for _ in range(30):
            every_call(s, bound, out, tmp_path)
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(30):
            every_call(s, bound, out, tmp_path)
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert after - before < 32 * 1024, after - before  # a leak per call would be far over
    assert (sys.getrefcount(s), sys.getrefcount(bound), sys.getrefcount(out)) == counts
    del s, bound, out
    gc.collect()
    assert live() == baseline


@pytest.mark.parametrize("capi", ["1", "0"])
def test_out_storage_as_the_first_call_of_a_process(capi):
    """out= a storage of a reduction or cumsum was NumPy's C API's first
    user in a fresh process, which found it unbound and crashed; without
    the C API (GTSTORE_NUMPY_CAPI=0) it is a RuntimeError."""
    code = (
        "import numpy as np, gtstore as gts\n"
        "s = gts.storage(np.arange(6.0).reshape(2, 3), dims='IJ')\n"
        "out = gts.zeros((3, 2), dims='JI')\n"
        "try:\n"
        "    assert s.cumsum('J', out=out) is out\n"
        "    assert s.sum(axis='I', out=gts.zeros(3, dims='J')) is not None\n"
        "    print(np.asarray(out).T.tolist())\n"
        "except RuntimeError as error:\n"
        "    print('RuntimeError', error)\n")
    result = run_python(code, GTSTORE_NUMPY_CAPI=capi)
    assert result.returncode == 0, result.stderr
    if capi == "1":
        assert result.stdout.strip() == "[[0.0, 1.0, 3.0], [3.0, 7.0, 12.0]]"
    else:
        assert "RuntimeError this needs NumPy's C API" in result.stdout
