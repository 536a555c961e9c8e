"""The buffer utilities of the design (as_numpy, as_cupy, get_dims,
get_origin) and property tests of the allocation over random inputs."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gtstore
import gtstore.arrays as ga
from conftest import (
    DTYPES,
    PRESETS,
    assert_aligned,
    cupy_importable,
    element_offsets,
    expected_geometry,
    expected_layout,
    param_id,
    preset_rule,
)

try:
    from numpy.lib.array_utils import byte_bounds
except ImportError:  # NumPy 1.x
    byte_bounds = np.byte_bounds

DATA = np.arange(24.0).reshape(2, 3, 4)

# ---- as_numpy -----------------------------------------------------------------------


class ArrayInterface:
    def __init__(self, array):
        self._keep = array
        self.__array_interface__ = array.__array_interface__


class ArrayMethod:
    def __init__(self, array):
        self._array = array

    def __array__(self, dtype=None, copy=None):
        return self._array


class DLPackOnly:
    """Only the DLPack protocol, over a NumPy array."""

    def __init__(self, array):
        self._array = array

    def __dlpack__(self, **kwargs):
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


class OnCuda:
    def __dlpack__(self, **kwargs):
        raise AssertionError("as_numpy must not ask a GPU array for its capsule")

    def __dlpack_device__(self):
        return (2, 0)  # kDLCUDA


class CudaArrayInterface:
    __cuda_array_interface__ = {
        "shape": (2,),
        "typestr": "<f8",
        "data": (0, False),
        "version": 3,
        "strides": None,
    }


def test_as_numpy_returns_an_ndarray_as_is():
    assert ga.as_numpy(DATA) is DATA
    a = ga.zeros((2, 3), backend="gtmc")
    assert ga.as_numpy(a) is a


VIEWS = {"whole": lambda a: a, "transposed": lambda a: a.T, "strided": lambda a: a[:, ::2, ::-1]}
WRAPPERS = {
    "array-interface": ArrayInterface,
    "__array__": ArrayMethod,
    "dlpack": DLPackOnly,
    "buffer": memoryview,
}


@pytest.mark.parametrize("view", VIEWS.values(), ids=VIEWS.keys())
@pytest.mark.parametrize("wrap", WRAPPERS.values(), ids=WRAPPERS.keys())
@pytest.mark.parametrize("source", ["numpy", "gtstore"])
def test_as_numpy_without_copying(source, wrap, view):
    base = DATA.copy() if source == "numpy" else ga.from_array(DATA, backend="gt:cpu_ifirst")
    result = ga.as_numpy(wrap(view(base)))
    assert type(result) is np.ndarray
    assert np.shares_memory(result, base)
    np.testing.assert_array_equal(result, view(DATA), strict=True)
    result[(0,) * result.ndim] = -1  # the same memory, writable
    assert -1 in base


def test_as_numpy_of_bytearray_and_list():
    buffer = bytearray(8)
    result = ga.as_numpy(buffer)
    assert np.shares_memory(result, np.frombuffer(buffer, "u1"))
    assert ga.as_numpy([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]


@pytest.mark.parametrize("obj", [OnCuda(), CudaArrayInterface()], ids=["dlpack-cuda", "cai"])
def test_as_numpy_refuses_gpu_arrays(obj):
    with pytest.raises(TypeError, match=r"as_numpy.*GPU"):
        ga.as_numpy(obj)


@pytest.mark.skipif(cupy_importable(), reason="CuPy is installed")
def test_as_cupy_without_cupy():
    with pytest.raises(RuntimeError, match=r"as_cupy.*CuPy"):
        ga.as_cupy(DATA)


# ---- get_dims -------------------------------------------------------------------------


class Labeled:
    def __init__(self, dims, ndim=None):
        self.__gt_dims__ = dims
        if ndim is not None:
            self.ndim = ndim


class Axis:
    def __init__(self, name):
        self.__gt_axis_name__ = name


@pytest.mark.parametrize(
    "dims, expected",
    [
        ("IJK", ("I", "J", "K")),
        (("K", "0"), ("K", "0")),
        (["J"], ("J",)),
        ([Axis("I"), "J"], ("I", "J")),
        ((), ()),
    ],
    ids=param_id,
)
def test_get_dims_from_gt_dims(dims, expected):
    assert ga.get_dims(Labeled(dims)) == expected
    # __gt_dims__ comes first, whatever the annotation says
    assert ga.get_dims(Labeled(dims), annotation="IJK01") == expected


class LabeledByMethod(np.ndarray):
    """The adopted design's form: "a __gt_dims__(self) method"."""

    def __gt_dims__(self):
        return ("K", "J", "I")


def test_get_dims_calls_a_gt_dims_method():
    x = np.zeros((5, 4, 3)).view(LabeledByMethod)
    assert ga.get_dims(x) == ("K", "J", "I")
    assert ga.get_dims(x, "IJK") == ("K", "J", "I")  # still before the annotation


def test_get_dims_gt_dims_method_that_raises():
    class Raising:
        def __gt_dims__(self):
            raise RuntimeError("no labels today")

    with pytest.raises(RuntimeError, match="no labels today"):
        ga.get_dims(Raising())


@pytest.mark.parametrize(
    "annotation, ndim, expected",
    [
        ("IJK", 3, ("I", "J", "K")),
        ("IJ", 2, ("I", "J")),
        (("I", "0"), 2, ("I", "0")),
        (["K"], 1, ("K",)),
        ("IJK01", 5, ("I", "J", "K", "0", "1")),
        ((Axis("J"), Axis("K")), 2, ("J", "K")),
    ],
    ids=param_id,
)
def test_get_dims_from_annotation(annotation, ndim, expected):
    assert ga.get_dims(np.zeros((2,) * ndim), annotation) == expected
    assert ga.get_dims(np.zeros((2,) * ndim), annotation=annotation) == expected


def test_get_dims_annotation_for_an_object_without_ndim():
    assert ga.get_dims(object(), "IJK0") == ("I", "J", "K", "0")


def test_get_dims_none_when_neither():
    assert ga.get_dims(DATA) is None
    assert ga.get_dims(object()) is None
    assert ga.get_dims(Labeled(None)) is None


@pytest.mark.parametrize(
    "x, annotation, source",
    [
        (np.zeros((2, 3)), "IJK", "annotation"),
        (np.zeros((2, 3, 4)), ("I", "J"), "annotation"),
        (Labeled("IJ", ndim=3), None, "__gt_dims__"),
        (Labeled("IJK", ndim=1), "I", "__gt_dims__"),
    ],
    ids=["annotation-long", "annotation-short", "gt_dims-short", "gt_dims-long"],
)
def test_get_dims_length_mismatch(x, annotation, source):
    with pytest.raises(ValueError, match=rf"{source}.*labels for \d dimensions"):
        ga.get_dims(x, annotation)


@pytest.mark.parametrize(
    "x, annotation",
    [
        (DATA, "IJX"),
        (DATA, ("I", "J", "L")),
        (DATA, "IJI"),
        (Labeled("IXK"), None),
        (Labeled(("I", "I")), None),
        (DATA, ("I", "J", "-1")),
    ],
    ids=param_id,
)
def test_get_dims_invalid_labels(x, annotation):
    # the message names where the labels came from
    with pytest.raises(ValueError, match="__gt_dims__" if annotation is None else "annotation"):
        ga.get_dims(x, annotation)


@pytest.mark.parametrize("annotation", [5, 2.5], ids=param_id)
def test_get_dims_annotation_of_the_wrong_type(annotation):
    with pytest.raises(TypeError):
        ga.get_dims(DATA, annotation)


def test_get_dims_gtstore_field_annotations():
    """gtstore's own Field[...] annotation, read as Signature reads it."""
    assert ga.get_dims(np.zeros((2, 3)), gtstore.Field["f8", "JI"]) == ("J", "I")
    assert ga.get_dims(np.zeros((2, 3, 4)), gtstore.Field["f8", ("K", "0", "I")]) == ("K", "0", "I")
    assert ga.get_dims(np.zeros((2, 3, 4)), gtstore.Field["f8"]) == ("I", "J", "K")
    assert ga.get_dims(
        np.zeros((2, 3, 4)), gtstore.Field["f8", "KJI", gtstore.DefaultParameters["F"]]
    ) == ("K", "J", "I")
    with pytest.raises(ValueError, match="annotation.*3 labels for 2 dimensions"):
        ga.get_dims(np.zeros((2, 3)), gtstore.Field["f8"])
    # the array's own dims still win
    assert ga.get_dims(Labeled("KJI", ndim=3), gtstore.Field["f8", "IJK"]) == ("K", "J", "I")


def test_get_dims_gt4py_field_annotations():
    gtscript = pytest.importorskip(
        "gt4py.cartesian.gtscript", reason="gt4py is not installed (optional test dependency)"
    )
    Field, IJ, IJK, K = gtscript.Field, gtscript.IJ, gtscript.IJK, gtscript.K
    assert ga.get_dims(np.zeros((2, 3)), Field[IJ, np.float64]) == ("I", "J")
    assert ga.get_dims(np.zeros((2, 3, 4)), Field[np.float64]) == ("I", "J", "K")
    assert ga.get_dims(np.zeros(4), Field[K, np.float32]) == ("K",)
    assert ga.get_dims(np.zeros((2, 3, 4, 3)), Field[(np.float64, (3,))]) == ("I", "J", "K", "0")
    assert ga.get_dims(np.zeros((2, 3, 4, 3, 2)), Field[IJK, (np.float64, (3, 2))]) == (
        "I",
        "J",
        "K",
        "0",
        "1",
    )
    assert ga.get_dims(np.zeros((2, 3, 5)), Field[IJ, (np.float64, (5,))]) == ("I", "J", "0")
    with pytest.raises(ValueError, match="annotation"):
        ga.get_dims(np.zeros((2, 3)), Field[IJK, np.float64])
    # the array's own dims still win
    assert ga.get_dims(Labeled("KJI", ndim=3), Field[IJK, np.float64]) == ("K", "J", "I")


# ---- get_origin -------------------------------------------------------------------


class Origin:
    def __init__(self, origin):
        self.__gt_origin__ = origin


@pytest.mark.parametrize(
    "origin, expected",
    [
        ([1, 2, 3], (1, 2, 3)),
        ((0,), (0,)),
        ((np.int64(2), np.uint8(3)), (2, 3)),
        (np.array([4, 5]), (4, 5)),
        ((), ()),
        (range(3), (0, 1, 2)),
    ],
    ids=param_id,
)
def test_get_origin(origin, expected):
    result = ga.get_origin(Origin(origin))
    assert result == expected
    assert type(result) is tuple and all(type(o) is int for o in result)


def test_get_origin_none_when_absent():
    assert ga.get_origin(DATA) is None
    assert ga.get_origin(object()) is None
    assert ga.get_origin(Origin(None)) is None


class DefaultOrigin:
    """The adopted design's name for it: a `default_origin` attribute."""

    def __init__(self, default_origin, gt_origin="absent"):
        self.default_origin = default_origin
        if gt_origin != "absent":
            self.__gt_origin__ = gt_origin


def test_get_origin_falls_back_to_default_origin():
    assert ga.get_origin(DefaultOrigin([1, 2, 0])) == (1, 2, 0)
    assert ga.get_origin(DefaultOrigin((1, 2), gt_origin=None)) == (1, 2)
    # __gt_origin__ (GT4Py's name) comes first
    assert ga.get_origin(DefaultOrigin((1, 2), gt_origin=(3, 4))) == (3, 4)
    assert ga.get_origin(DefaultOrigin(None)) is None
    with pytest.raises(TypeError, match=r"x\.default_origin: expected integers"):
        ga.get_origin(DefaultOrigin((1.5, 2)))


@pytest.mark.parametrize("origin", [(1.5, 2), ("1", 2), (None,), 5, (1, [2])], ids=param_id)
def test_get_origin_non_integers(origin):
    with pytest.raises(TypeError, match="__gt_origin__"):
        ga.get_origin(Origin(origin))


# ---- properties over random inputs ----------------------------------------------


def compatible_alignments(itemsize):
    """Byte alignments that divide or are multiples of the itemsize."""
    divisors = [d for d in (1, 2, 4, 8) if itemsize % d == 0]
    return divisors + [itemsize * 2**k for k in range(1, 7)]


@st.composite
def allocations(draw):
    ndim = draw(st.integers(0, 4))
    shape = tuple(draw(st.lists(st.integers(0, 12), min_size=ndim, max_size=ndim)))
    dtype = draw(st.sampled_from(DTYPES))
    alignment = draw(st.sampled_from(compatible_alignments(dtype.itemsize)))
    layout = tuple(draw(st.permutations(range(ndim))))
    index = tuple(draw(st.integers(0, max(n - 1, 0))) for n in shape)
    return shape, dtype, alignment, layout, index


def fill_value(dtype):
    return {"b": True, "i": -7, "u": 200, "f": 2.5, "c": 1.5 - 2j}[dtype.kind]


@settings(max_examples=200, deadline=None)
@given(allocations())
def test_property_full_is_aligned_compact_and_right(call):
    shape, dtype, alignment, layout, index = call
    kwargs = dict(alignment_size=alignment, layout=layout, aligned_index=index)
    value = fill_value(dtype)
    a = ga.full(shape, value, dtype, **kwargs)
    plan = ga.plan(shape, dtype, **kwargs)
    # the plan is what was allocated, and it is the rules' geometry
    assert a.shape == plan.shape == shape and a.dtype == dtype
    assert a.strides == plan.strides
    padded, strides = expected_geometry(shape, layout, dtype.itemsize, alignment)
    assert plan.padded_shape == padded and plan.strides == strides
    assert plan.layout == layout
    # the aligned point is aligned, all elements lie in one allocation, none overlapping
    if a.size:
        assert_aligned(a, index, alignment)
        low, high = byte_bounds(a)
        assert high - low <= plan.span <= plan.nbytes - (alignment - 1)
        offsets = element_offsets(shape, a.strides)
        assert len(np.unique(offsets)) == a.size
    assert np.array_equal(a, np.full(shape, value, dtype))
    a[...] = 0  # writable over all of it
    assert not a.any()


@settings(max_examples=150, deadline=None)
@given(
    name=st.sampled_from(PRESETS),
    axes=st.sampled_from(
        [
            "".join(p)
            for k in (1, 2, 3)
            for c in itertools.combinations("IJK", k)
            for p in itertools.permutations(c)
        ]
    ),
    ndata=st.integers(0, 3),
    data=st.data(),
)
def test_property_layout_follows_the_names(name, axes, ndata, data):
    labels = list(axes) + [str(d) for d in range(ndata)]
    dims = "".join(data.draw(st.permutations(labels)))
    shape = tuple(data.draw(st.integers(1, 9)) for _ in dims)
    alignment, rule, device = preset_rule(name)
    plan = ga.plan(shape, backend=name, dims=dims)
    assert plan.layout == expected_layout(rule, dims)
    assert plan.strides == expected_geometry(shape, plan.layout, 8, alignment * 8)[1]
    if device == "cpu":
        assert ga.empty(shape, backend=name, dims=dims).strides == plan.strides


@settings(max_examples=100, deadline=None)
@given(
    shape=st.lists(st.integers(0, 6), min_size=0, max_size=4).map(tuple),
    dtype=st.sampled_from(DTYPES),
    order=st.sampled_from(["C", "F"]),
    step=st.sampled_from([1, -1, 2]),
    name=st.sampled_from([None, "gt:cpu_ifirst", "gtmc", "dace:cpu"]),
)
def test_property_from_array_round_trips(shape, dtype, order, step, name):
    rng = np.random.default_rng(len(shape))
    source = np.asarray(rng.integers(0, 100, size=shape), order=order).astype(dtype, order=order)
    source = source[(slice(None, None, step),) * len(shape)]
    result = ga.from_array(source, backend=name)
    assert result.dtype == dtype
    np.testing.assert_array_equal(result, source, strict=True)
    if name is not None and len(shape) <= 3:
        alignment, rule, _ = preset_rule(name)
        layout = expected_layout(rule, "IJK"[: len(shape)])
        expected = expected_geometry(
            result.shape, layout, dtype.itemsize, alignment * dtype.itemsize
        )
        assert result.strides == expected[1]
