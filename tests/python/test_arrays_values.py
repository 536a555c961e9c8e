"""Values of zeros/ones/full/from_array and the *_like functions."""

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gtstore.arrays as ga
from conftest import (
    DTYPES,
    DTYPE_IDS,
    assert_aligned,
    expected_geometry,
    expected_layout,
    param_id,
    preset_rule,
    run_python,
)

SHAPE = (3, 4, 5)
#: A few presets with different layouts and alignments, and no preset.
VALUE_PRESETS = [None, "numpy", "gt:cpu_ifirst", "dace:cpu", "gtmc", "F"]


def preset_strides(name, shape, dtype, dims=None):
    """Strides the preset gives ``shape`` (DESIGN.md rules, conftest helpers)."""
    dims = dims or "IJK"[: len(shape)]
    alignment, rule, _ = preset_rule(name)
    layout = expected_layout(rule, dims)
    return expected_geometry(shape, layout, dtype.itemsize, alignment * dtype.itemsize)[1]


def assert_same(result, expected):
    """Equal values, dtype and shape (NaN equal to NaN)."""
    assert isinstance(result, np.ndarray)
    np.testing.assert_array_equal(result, expected, strict=True)


def assert_writable(array):
    assert isinstance(array, np.ndarray) and array.flags.writeable
    if array.size:
        value = array.dtype.type(1)
        array[(0,) * array.ndim] = value
        assert array[(0,) * array.ndim] == value
        array[...] = 0
        assert not array.any()


# ---- zeros / ones / full for every dtype --------------------------------------


@pytest.mark.parametrize("name", VALUE_PRESETS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_zeros_ones(dtype, name):
    assert_same(ga.zeros(SHAPE, dtype, backend=name), np.zeros(SHAPE, dtype))
    assert_same(ga.ones(SHAPE, dtype, backend=name), np.ones(SHAPE, dtype))


def fill_values(dtype):
    """Representable fill values, extremes included."""
    if dtype.kind == "b":
        return [True, False, 1, 0]
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return [0, 1, int(info.max), int(info.min), 7.9, -0.0, True]
    finite = [0.0, -2.5, 0.1, 1e4, float("nan"), float("inf"), float("-inf"), 3, True]
    if dtype.kind == "f":
        return finite + [float(np.finfo(dtype).max), float(np.finfo(dtype).tiny)]
    return finite + [1 + 2j, -0.5j, complex("nan+1j")]


FULL_CASES = [
    pytest.param(dtype, value, id=f"{dtype.name}-{value!r}")
    for dtype in DTYPES
    for value in fill_values(dtype)
]


@pytest.mark.parametrize("dtype, value", FULL_CASES)
def test_full_python_values(dtype, value):
    for name in ("gt:cpu_ifirst", "gtmc"):
        assert_same(ga.full(SHAPE, value, dtype, backend=name), np.full(SHAPE, value, dtype))


NUMPY_SCALARS = [
    (np.float32(0.1), "f8"),
    (np.float32(0.1), "f4"),
    (np.float16(1.5), "f2"),
    (np.float64(-3.25), "f4"),
    (np.int8(-5), "i8"),
    (np.int64(-5), "i1"),
    (np.uint64(2**64 - 1), "u8"),
    (np.uint8(200), "f2"),
    (np.bool_(True), "f4"),
    (np.bool_(False), "?"),
    (np.complex64(1 + 2j), "c16"),
    (np.complex128(0.1 - 0.3j), "c8"),
    (np.array(3.5), "f8"),
    (np.array(7, dtype="u2"), "i4"),
    (np.longdouble(2.5), "f8"),
]


@pytest.mark.parametrize("value, dtype", NUMPY_SCALARS, ids=lambda v: repr(v))
def test_full_numpy_scalars(value, dtype):
    expected = np.full(SHAPE, value, dtype)
    assert_same(ga.full(SHAPE, value, dtype, backend="gt:cpu_ifirst"), expected)


def test_full_default_dtype_is_float64():
    assert_same(ga.full((2, 3), 7), np.full((2, 3), 7.0))


def test_full_complex_with_zero_imaginary_part_into_real():
    assert_same(ga.full((2,), 1 + 0j, "f8"), np.array([1.0, 1.0]))


def test_full_truncates_floats_into_integers_like_numpy():
    for value, dtype in [(2.7, "i4"), (-2.7, "i4"), (255.9, "u1"), (-0.5, "u1")]:
        assert_same(ga.full((2,), value, dtype), np.full((2,), value, dtype))


@pytest.mark.parametrize(
    "value, dtype",
    [
        (65519.0, "f2"),  # rounds down to the largest float16
        (65520.0, "f2"),  # rounds up to inf
        (2.0**-25, "f2"),  # a tie: to even, 0
        (3 * 2.0**-26, "f2"),  # rounds up to the smallest subnormal
        (2049.0, "f2"),  # a tie between 2048 and 2050: to even
        (2051.0, "f2"),
        (16777217, "f4"),
        (2**53 + 1, "f8"),
        (2**64 - 1, "f4"),
        (1e300, "f4"),
        (-1e300, "f2"),
        (1e-300, "f4"),
    ],
    ids=param_id,
)
def test_full_rounds_like_numpy(value, dtype):
    with np.errstate(over="ignore"):
        expected = np.full((2,), value, dtype)
    assert_same(ga.full((2,), value, dtype), expected)


@pytest.mark.parametrize("value", [2**64, -(3**50)], ids=param_id)
@pytest.mark.parametrize("dtype", ["f8", "c8"])
def test_full_python_int_beyond_64_bits_into_float(value, dtype):
    """NumPy (and GT4Py, which fills with dtype.type(value)) accept any
    Python int that a float dtype can hold, rounded."""
    with np.errstate(over="ignore"):
        expected = np.full((2,), value, dtype)
    assert_same(ga.full((2,), value, dtype), expected)


def fill_strategy(dtype):
    """Values NumPy converts to ``dtype`` without undefined behaviour."""
    if dtype.kind == "b":
        return st.booleans() | st.integers(-5, 5) | st.floats() | st.complex_numbers()
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        low = 0.0 if dtype.kind == "u" else max(float(info.min), -(2.0**62))
        high = min(float(info.max), 2.0**62)
        return st.integers(int(info.min), int(info.max)) | st.floats(low, high)
    reals = st.integers(-(2**63), 2**64 - 1) | st.floats(width=64)
    return reals if dtype.kind == "f" else reals | st.complex_numbers()


@settings(max_examples=200, deadline=None)
@given(data=st.data(), dtype=st.sampled_from(DTYPES))
def test_property_full_equals_numpy_full(data, dtype):
    value = data.draw(fill_strategy(dtype), label="fill_value")
    with np.errstate(over="ignore", invalid="ignore"):
        expected = np.full((3,), value, dtype)
    assert_same(ga.full((3,), value, dtype), expected)


# ---- fill value errors ----------------------------------------------------------
# The type of each error and the value in its message are checked for many
# cases; that the message also names the parameter, for one case of each kind
# (test_fill_value_errors_name_the_parameter).

OUT_OF_RANGE = [
    (300, "i1"),
    (-129, "i1"),
    (-1, "u1"),
    (256, "u1"),
    (70000, "i2"),
    (-1, "u2"),
    (2**32, "u4"),
    (2**31, "i4"),
    (2**63, "i8"),
    (-(2**63) - 1, "i8"),
    (2**64, "u8"),
    (-1, "u8"),
    (1e20, "i8"),
    (np.int64(300), "i1"),
]


@pytest.mark.parametrize("value, dtype", OUT_OF_RANGE, ids=param_id)
def test_full_out_of_range_integer(value, dtype):
    with pytest.raises(OverflowError, match=re.escape(str(value))):
        ga.full((2, 3), value, dtype)


@pytest.mark.parametrize(
    "value", [float("nan"), float("inf"), float("-inf"), np.float32("nan")], ids=param_id
)
@pytest.mark.parametrize("dtype", ["i1", "u1", "i4", "u8", "i8"])
def test_full_nan_inf_into_integer(value, dtype):
    with pytest.raises(OverflowError, match=re.escape(str(value))):
        ga.full((2, 3), value, dtype)


@pytest.mark.parametrize("dtype", ["f8", "f4", "f2", "i4", "u1", "u8"])
@pytest.mark.parametrize("value", [1 + 2j, -0.5j, np.complex64(3 + 1j)], ids=param_id)
def test_full_complex_into_real(value, dtype):
    with pytest.raises(TypeError, match=re.escape(str(complex(value)))):
        ga.full((2, 3), value, dtype)


@pytest.mark.parametrize(
    "value", ["x", "1", None, [1], (1,), object(), b"1", np.array([1, 2])], ids=param_id
)
def test_full_not_a_number(value):
    with pytest.raises(TypeError, match="fill_value"):
        ga.full((2, 3), value)


@pytest.mark.parametrize(
    "function",
    [ga.full, lambda shape, value, dtype: ga.full_like(np.zeros(shape, dtype), value)],
    ids=["full", "full_like"],
)
@pytest.mark.parametrize(
    "value, dtype, error",
    [
        (300, "i1", OverflowError),
        (-1, "u1", OverflowError),
        (float("nan"), "i4", OverflowError),
        (1 + 2j, "f8", TypeError),
        ("x", "f8", TypeError),
    ],
    ids=param_id,
)
def test_fill_value_errors_name_the_parameter(function, value, dtype, error):
    with pytest.raises(error, match=rf"fill_value.*{re.escape(str(value))}"):
        function((2, 3), value, dtype)


# ---- from_array -------------------------------------------------------------------

DATA = np.arange(60.0).reshape(3, 4, 5) - 20.5

SOURCES = {
    "C": DATA,
    "F": np.asfortranarray(DATA),
    "steps": np.arange(240.0).reshape(6, 8, 5)[::2, 1::2, :],
    "negative": DATA[::-1, ::-1, ::-1],
    "mixed-steps": np.arange(360.0).reshape(6, 4, 15)[::2, ::-1, ::3],
    "transposed": DATA.transpose(2, 0, 1),
    "2d": DATA[0],
    "1d-strided": DATA.ravel()[::7],
    "int": DATA.astype("i4"),
    "bool": DATA > 0,
    "complex": DATA * (1 - 2j),
    "float16": DATA.astype("f2"),
    "uint8": np.arange(60, dtype="u1").reshape(3, 4, 5),
    "byteswapped": DATA.astype(">f8"),
    "byteswapped-int": DATA.astype(">i2"),
    "byteswapped-F": np.asfortranarray(DATA.astype(">c8")),
    "size-1-dims": DATA[:1, :, :1],
}


@pytest.mark.parametrize("name", VALUE_PRESETS)
@pytest.mark.parametrize("source", SOURCES.values(), ids=SOURCES.keys())
def test_from_array(source, name):
    result = ga.from_array(source, backend=name)
    expected_dtype = source.dtype.newbyteorder("=")
    assert result.dtype == expected_dtype
    np.testing.assert_array_equal(result, source, strict=False)
    assert result.shape == source.shape
    if name is None:  # the data's own layout, like np.array
        assert result.strides == np.array(source, dtype=expected_dtype).strides
    else:
        assert result.strides == preset_strides(name, source.shape, expected_dtype)
    assert not np.shares_memory(result, source)
    assert_writable(result)


@pytest.mark.parametrize("name", VALUE_PRESETS)
@pytest.mark.parametrize(
    "source, dtype",
    [
        (DATA, "f4"),
        (DATA, "i8"),
        (DATA, "c16"),
        (DATA.astype("i8"), "f2"),
        (DATA.astype(">f8"), "f4"),
        (np.asfortranarray(DATA), "i2"),
        (DATA > 0, "u1"),
        (DATA.transpose(1, 2, 0), "f8"),
    ],
    ids=lambda v: str(getattr(v, "dtype", v)),
)
def test_from_array_casts(source, dtype, name):
    result = ga.from_array(source, dtype, backend=name)
    assert_same(result, source.astype(dtype))
    if name is None:  # the data's own layout, like np.array
        assert result.strides == np.array(source, dtype=dtype).strides
    else:
        assert result.strides == preset_strides(name, source.shape, np.dtype(dtype))


@pytest.mark.parametrize(
    "data, expected",
    [
        ([[1, 2], [3, 4]], np.array([[1, 2], [3, 4]])),
        ([[1.5, 2], [3, 4]], np.array([[1.5, 2], [3, 4]])),
        ([True, False], np.array([True, False])),
        ([1j, 2], np.array([1j, 2])),
        (range(5), np.arange(5)),
        (3.0, np.array(3.0)),
        (np.float32(3), np.array(3, "f4")),
        (np.array(-2, "i2"), np.array(-2, "i2")),
        (memoryview(np.arange(6.0).reshape(2, 3)), np.arange(6.0).reshape(2, 3)),
    ],
    ids=param_id,
)
def test_from_array_other_sources(data, expected):
    assert_same(ga.from_array(data), expected)
    assert_same(ga.from_array(data, backend="gtmc"), expected)


BUFFERS_WITHOUT_STRIDES = """
import ctypes
import numpy as np
import gtstore.arrays as ga

sources = [
    (ctypes.c_double * 3)(1.5, 2.5, 3.5),
    ((ctypes.c_int16 * 3) * 2)((1, 2, 3), (4, 5, 6)),
    (ctypes.c_bool * 2)(True, False),
]
for source in sources:
    expected = np.array(source)
    for name in (None, "gt:cpu_ifirst", "gtmc"):
        result = ga.from_array(source, backend=name)
        assert result.dtype == expected.dtype, (result.dtype, expected.dtype)
        assert np.array_equal(result, expected), (result, expected)
        like = ga.zeros_like(source, backend=name)
        assert like.shape == expected.shape and like.dtype == expected.dtype
print("ok")
"""


def test_from_array_of_buffers_without_strides():
    """ctypes arrays export their buffer with strides NULL (C order), which
    the buffer protocol allows. Run in a child: a crash must not take the
    test session down."""
    child = run_python(BUFFERS_WITHOUT_STRIDES)
    assert child.returncode == 0, f"exit status {child.returncode}: {child.stderr[-2000:]}"
    assert child.stdout.strip() == "ok"


def test_from_array_zero_dimensional_with_preset():
    a = ga.from_array(np.array(2.5), backend="gtmc")
    assert a.shape == () and a[()] == 2.5
    assert_aligned(a, (), 64)


@pytest.mark.parametrize("name", ["gt:cpu_ifirst", "gt:cpu_kfirst", "gtmc", "F", "C"])
def test_from_array_subarray_dtype(name):
    data = np.arange(4 * 5 * 6 * 3, dtype="f8").reshape(4, 5, 6, 3)
    result = ga.from_array(data, ("f8", (3,)), backend=name)
    assert_same(result, data)
    assert result.strides == preset_strides(name, data.shape, np.dtype("f8"), dims="IJK0")


def test_from_array_subarray_dtype_with_cast():
    data = np.arange(2 * 3 * 2).reshape(2, 3, 2)
    result = ga.from_array(data, ("f4", (2,)), backend="gt:cpu_ifirst", dims="IJ")
    assert_same(result, data.astype("f4"))
    assert result.strides == preset_strides("gt:cpu_ifirst", (2, 3, 2), np.dtype("f4"), dims="IJ0")


def test_from_array_of_a_subarray_typed_numpy_array():
    data = np.zeros((2, 3), dtype=("f8", (4,)))
    data[...] = np.arange(24.0).reshape(2, 3, 4)
    assert data.shape == (2, 3, 4)  # NumPy already expands the subarray
    assert_same(ga.from_array(data, backend="gt:cpu_ifirst"), np.arange(24.0).reshape(2, 3, 4))


def test_from_array_subarray_shape_mismatch():
    with pytest.raises(ValueError, match="dtype"):
        ga.from_array(np.zeros((2, 3, 4)), ("f8", (3,)))


@pytest.mark.parametrize("dims, layout", [("KJI", None), (None, "KJI"), (None, (2, 1, 0))])
def test_from_array_with_dims_or_layout(dims, layout):
    result = ga.from_array(DATA, backend="gt:cpu_ifirst", dims=dims, layout=layout)
    assert_same(result, DATA)
    expected = (8, 24, 96) if dims is None else (160, 40, 8)
    assert result.strides == expected


def test_from_array_does_not_alias_the_source():
    source = DATA.copy()
    result = ga.from_array(source, backend="gtmc")
    result[...] = 0
    assert np.array_equal(source, DATA)
    source[...] = 1
    assert not result.any()


# ---- *_like ------------------------------------------------------------------

TEMPLATES = {
    "ifirst-f4": lambda: ga.empty((3, 4, 5), "f4", backend="gt:cpu_ifirst"),
    "dace-i2": lambda: ga.empty((3, 4, 5), "i2", backend="dace:cpu"),
    "numpy-C": lambda: np.zeros((3, 4, 5), "u1"),
    "numpy-F": lambda: np.zeros((3, 4, 5), "c8", order="F"),
    "strided": lambda: np.zeros((6, 4, 10))[::2, :, ::-2],
    "transposed": lambda: np.zeros((3, 4, 5), "f2").transpose(1, 2, 0),
    "0-d": lambda: np.zeros((), "i4"),
}


def compact_strides(template, dtype):
    """Strides of a compact array with the template's stride order."""
    return np.empty_like(template, dtype=dtype).strides


LIKE_FUNCTIONS = {
    "empty_like": (lambda a, **kw: ga.empty_like(a, **kw), None),
    "zeros_like": (lambda a, **kw: ga.zeros_like(a, **kw), 0),
    "ones_like": (lambda a, **kw: ga.ones_like(a, **kw), 1),
    "full_like": (lambda a, **kw: ga.full_like(a, 7, **kw), 7),
}


@pytest.mark.parametrize("function", LIKE_FUNCTIONS, ids=str)
@pytest.mark.parametrize("template", TEMPLATES.values(), ids=TEMPLATES.keys())
def test_like_takes_shape_dtype_layout_from_template(template, function):
    a = template()
    like, value = LIKE_FUNCTIONS[function]
    result = like(a)
    assert result.shape == a.shape and result.dtype == a.dtype
    assert result.strides == compact_strides(a, a.dtype)
    if value is not None:
        assert_same(result, np.full(a.shape, value, a.dtype))
    assert_writable(result)


@pytest.mark.parametrize("function", LIKE_FUNCTIONS, ids=str)
@pytest.mark.parametrize("template", TEMPLATES.values(), ids=TEMPLATES.keys())
def test_like_dtype_override(template, function):
    a = template()
    like, value = LIKE_FUNCTIONS[function]
    result = like(a, dtype="c16")
    assert result.shape == a.shape and result.dtype == np.complex128
    assert result.strides == compact_strides(a, "c16")
    if value is not None:
        assert_same(result, np.full(a.shape, value, "c16"))


@pytest.mark.parametrize("name", ["gt:cpu_kfirst", "gt:cpu_ifirst", "dace:cpu", "gtmc", "F"])
def test_like_backend_override(name):
    a = ga.zeros((3, 4, 5), "f4", backend="gt:cpu_ifirst")
    result = ga.ones_like(a, backend=name)
    assert result.strides == preset_strides(name, (3, 4, 5), np.dtype("f4"))
    assert_same(result, np.ones((3, 4, 5), "f4"))


def test_like_dims_override():
    a = ga.empty((3, 4, 5), "f8", backend="gt:cpu_ifirst")
    # without a preset the layout still comes from the template's strides
    assert ga.empty_like(a, dims="IJ0").strides == a.strides
    # with one, the dims choose it: I and J innermost (J contiguous for kfirst), "0" outermost
    result = ga.empty_like(a, dims="IJ0", backend="gt:cpu_kfirst")
    assert result.strides == preset_strides("gt:cpu_kfirst", (3, 4, 5), np.dtype("f8"), dims="IJ0")
    assert result.strides == (32, 8, 96)


@pytest.mark.parametrize(
    "layout, expected", [((0, 1, 2), (80, 20, 4)), ("KJI", (4, 12, 48)), ("IKJ", (80, 4, 16))]
)
def test_like_layout_override(layout, expected):
    a = ga.empty((3, 4, 5), "f4", backend="gt:cpu_ifirst")
    assert ga.zeros_like(a, layout=layout).strides == expected


def test_like_alignment_and_aligned_index_override():
    a = ga.empty((5, 6, 7), "f8", backend="gt:cpu_ifirst")
    result = ga.empty_like(a, alignment_size=64, aligned_index=(3, 0, 0))
    assert result.strides == (8, 64, 384)
    assert_aligned(result, (3, 0, 0), 64)


def test_like_reads_template_gt_dims():
    class Labeled:
        __gt_dims__ = ("K", "J", "I")

        def __array__(self, dtype=None, copy=None):
            return np.zeros((3, 4, 5))

    result = ga.empty_like(Labeled(), backend="gt:cpu_kfirst")
    assert result.strides == (8, 24, 96)  # K (axis 0) contiguous


def test_like_subarray_dtype_appends_dims():
    a = ga.empty((3, 4, 5), "f8", backend="gt:cpu_ifirst")
    result = ga.ones_like(a, dtype=("f8", (2,)))
    assert result.shape == (3, 4, 5, 2)
    assert result.strides == (8, 24, 96, 480)
    assert_same(result, np.ones((3, 4, 5, 2)))


def test_full_like_positional_dtype():
    a = ga.empty((2, 3), "f8")
    assert_same(ga.full_like(a, 7, "i2"), np.full((2, 3), 7, "i2"))


def test_like_from_python_list():
    assert_same(ga.ones_like([[1, 2], [3, 4]]), np.ones((2, 2), dtype=np.array([1]).dtype))


# ---- writable results -------------------------------------------------------

ALL_FUNCTIONS = {
    "empty": lambda: ga.empty((3, 4, 5), backend="gtmc"),
    "zeros": lambda: ga.zeros((3, 4, 5), "i4", backend="gt:cpu_ifirst"),
    "ones": lambda: ga.ones((3, 4), "c8"),
    "full": lambda: ga.full((3, 4, 5), 2, "u2", backend="dace:cpu"),
    "from_array": lambda: ga.from_array(np.arange(10.0), backend="F"),
    "empty_like": lambda: ga.empty_like(np.zeros((2, 3))),
    "zeros_like": lambda: ga.zeros_like(np.zeros((2, 3)), backend="gtmc"),
    "ones_like": lambda: ga.ones_like(np.zeros((2, 3), "?")),
    "full_like": lambda: ga.full_like(np.zeros((2, 3)), 1.5),
}


@pytest.mark.parametrize("make", ALL_FUNCTIONS.values(), ids=ALL_FUNCTIONS.keys())
def test_results_are_writable_ndarrays_and_writes_stick(make):
    a = make()
    assert type(a) is np.ndarray
    assert a.flags.writeable and a.flags.aligned
    values = np.arange(a.size).reshape(a.shape).astype(a.dtype)
    a[...] = values
    assert np.array_equal(a, values)
    view = a[..., ::2]
    view[...] = 0
    assert not a[..., ::2].any()
    if a.shape[-1] > 1:
        assert np.array_equal(a[..., 1::2], values[..., 1::2])
