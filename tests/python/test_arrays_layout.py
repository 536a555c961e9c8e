"""Layout, padding and alignment of gtstore.arrays for every preset.

The expected values come from the rules of DESIGN.md section 3, computed in
conftest.py (expected_layout, expected_geometry), not from gtstore.
"""

import numpy as np
import pytest

import gtstore.arrays as ga
from conftest import (
    CANONICAL_AXES,
    CPU_PRESETS,
    DATA_DIMS,
    DTYPES,
    DTYPE_IDS,
    GPU_PRESETS,
    NAMED_PRESETS,
    PERMUTED_AXES,
    PRESET_TABLE,
    PRESETS,
    assert_aligned,
    assert_plan_aligned,
    default_dims,
    expected_geometry,
    expected_layout,
    layout_from_axes,
    matrix_case,
    preset_rule,
)

ALL_DIMS = [axes + data for axes in CANONICAL_AXES + PERMUTED_AXES for data in DATA_DIMS]


def check_plan(plan, shape, dims, layout, dtype, alignment_bytes, aligned_index, device):
    padded, strides = expected_geometry(shape, layout, dtype.itemsize, alignment_bytes)
    assert plan.shape == shape
    assert plan.dims == tuple(dims)
    assert plan.layout == layout
    assert plan.padded_shape == padded
    assert plan.strides == strides
    assert plan.dtype == dtype
    assert plan.alignment_size == alignment_bytes
    assert plan.aligned_index == aligned_index
    assert plan.device == device
    assert plan.span == dtype.itemsize * int(np.prod(padded))
    assert plan.nbytes == plan.span + alignment_bytes - 1
    assert_plan_aligned(plan, aligned_index)


def check_array(array, shape, layout, dtype, alignment_bytes, aligned_index):
    _, strides = expected_geometry(shape, layout, dtype.itemsize, alignment_bytes)
    assert isinstance(array, np.ndarray)
    assert array.shape == shape
    assert array.dtype == dtype
    assert array.strides == strides
    assert_aligned(array, aligned_index, alignment_bytes)


# ---- the preset table ---------------------------------------------------------


def test_presets_are_the_design_table():
    assert set(PRESETS) == set(PRESET_TABLE)
    assert len(PRESETS) == len(set(PRESETS))


@pytest.mark.parametrize("name", PRESETS)
def test_get_preset_matches_design_table(name):
    alignment, rule, device = PRESET_TABLE[name]
    info = ga.get_preset(name)
    assert info["name"] == name
    assert info["alignment"] == alignment
    assert info["device"] == device
    assert info["layout"] == rule


# ---- every preset x dims ------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.dtype("float64"), np.dtype("int16")], ids=str)
@pytest.mark.parametrize("dims", ALL_DIMS)
@pytest.mark.parametrize("name", PRESETS)
def test_preset_dims_matrix(name, dims, dtype):
    alignment, rule, device = preset_rule(name)
    shape, aligned_index = matrix_case(dims)
    layout = expected_layout(rule, dims)
    alignment_bytes = alignment * dtype.itemsize
    kwargs = dict(dtype=dtype, backend=name, dims=dims, aligned_index=aligned_index)
    plan = ga.plan(shape, **kwargs)
    check_plan(plan, shape, dims, layout, dtype, alignment_bytes, aligned_index, device)
    if device == "cpu":
        for function in (ga.empty, ga.zeros):
            array = function(shape, **kwargs)
            check_array(array, shape, layout, dtype, alignment_bytes, aligned_index)
            assert array.strides == plan.strides
        assert not array.any()


@pytest.mark.parametrize("name", NAMED_PRESETS)
def test_names_decide_not_positions(name):
    """The same dims in another order give the same stride to each name."""
    _, rule, _ = preset_rule(name)
    reference = ga.plan((5, 6, 7, 2), backend=name, dims="IJK0")
    strides = dict(zip("IJK0", reference.strides))
    for dims in ("KJI0", "0KIJ", "J0KI"):
        shape = tuple({"I": 5, "J": 6, "K": 7, "0": 2}[d] for d in dims)
        plan = ga.plan(shape, backend=name, dims=dims)
        assert dict(zip(dims, plan.strides)) == strides, dims


def test_kji_on_k_contiguous_preset_keeps_k_contiguous():
    a = ga.empty((7, 6, 5), backend="gt:cpu_kfirst", dims="KJI")
    assert a.strides == (8, 7 * 8, 7 * 6 * 8)


@pytest.mark.parametrize("name", ["C", "F"])
def test_positional_presets_ignore_names(name):
    for dims in ("IJK", "KJI", "JK0", "0IJ"):
        plan = ga.plan((2, 3, 4), backend=name, dims=dims)
        c = np.empty((2, 3, 4), order=name)
        assert plan.strides == c.strides


@pytest.mark.parametrize("name", NAMED_PRESETS)
def test_data_dims_are_outermost_even_in_front(name):
    _, rule, _ = preset_rule(name)
    plan = ga.plan((2, 3, 5, 6), backend=name, dims="10IJ")
    assert plan.layout == expected_layout(rule, "10IJ")
    assert plan.layout[:2] == (1, 0)  # "0" outermost of all, then "1"


# ---- defaults -----------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape", [(), (4,), (3, 5), (2, 3, 4), (2, 3, 4, 5)])
def test_no_preset_is_c_order_alignment_one(shape, dtype):
    a = ga.empty(shape, dtype)
    assert a.shape == shape and a.dtype == dtype
    assert a.strides == np.empty(shape, dtype).strides
    plan = ga.plan(shape, dtype)
    assert plan.alignment_size == 1
    assert plan.device == "cpu"
    assert plan.padded_shape == shape


def test_no_preset_ignores_dims_for_the_layout():
    assert ga.empty((2, 3, 4), dims="KJI").strides == (96, 32, 8)


def test_default_dtype_is_float64():
    assert ga.empty((2, 3)).dtype == np.float64
    assert ga.plan((2, 3)).dtype == np.float64


def test_default_aligned_index_is_the_origin():
    a = ga.empty((5, 6, 7), backend="gtmc")
    assert_aligned(a, (0, 0, 0), 64)
    assert ga.plan((5, 6, 7), backend="gtmc").aligned_index == (0, 0, 0)


def test_shape_may_be_an_int():
    assert ga.empty(5).shape == (5,)
    assert ga.zeros(np.int64(3), backend="gtmc").shape == (3,)


@pytest.mark.parametrize("name", PRESETS)
@pytest.mark.parametrize("ndim", [4, 5, 6])
def test_default_dims_beyond_three(name, ndim):
    shape = (2, 3, 4, 5, 2, 3)[:ndim]
    _, rule, _ = preset_rule(name)
    plan = ga.plan(shape, backend=name)
    dims = default_dims(ndim)
    assert plan.dims == dims == ("I", "J", "K", *map(str, range(ndim - 3)))
    assert plan.layout == expected_layout(rule, dims)


@pytest.mark.parametrize("dims", ["IJK0", ("I", "J", "K", "0"), ["I", "J", "K", "0"]])
def test_dims_as_string_or_sequence(dims):
    plan = ga.plan((2, 3, 4, 5), backend="gt:cpu_ifirst", dims=dims)
    assert plan.dims == ("I", "J", "K", "0")
    assert plan.layout == expected_layout((2, 1, 0), "IJK0")


class Axis:
    def __init__(self, name):
        self.__gt_axis_name__ = name


def test_dims_as_objects_with_gt_axis_name():
    dims = [Axis("K"), Axis("J"), "I"]
    plan = ga.plan((4, 3, 2), backend="gt:cpu_kfirst", dims=dims)
    assert plan.dims == ("K", "J", "I")
    assert plan.layout == (2, 1, 0)
    a = ga.empty((4, 3, 2), backend="gt:cpu_kfirst", dims=dims)
    assert a.strides == (8, 32, 96)


# ---- explicit keywords override the preset -----------------------------------


@pytest.mark.parametrize("layout", [(0, 1, 2), (2, 1, 0), (1, 2, 0), (0, 2, 1), (2, 0, 1)])
@pytest.mark.parametrize("name", [None, *CPU_PRESETS])
def test_explicit_layout_tuple_overrides_preset(name, layout):
    alignment = 1 if name is None else preset_rule(name)[0] * 8
    a = ga.empty((5, 6, 7), backend=name, layout=layout, aligned_index=(1, 2, 3))
    check_array(a, (5, 6, 7), layout, np.dtype("f8"), alignment, (1, 2, 3))
    assert ga.plan((5, 6, 7), backend=name, layout=layout).layout == layout


@pytest.mark.parametrize("axes", ["KJI", "IJK", "JIK", "KIJ", "IKJ"])
@pytest.mark.parametrize("name", [None, "gt:cpu_kfirst", "gt:cpu_ifirst", "gtmc", "F"])
def test_explicit_layout_axis_string(name, axes):
    """layout="KJI": K has the largest stride, I is contiguous."""
    alignment = 1 if name is None else preset_rule(name)[0] * 8
    a = ga.empty((5, 6, 7), backend=name, layout=axes)
    layout = tuple(axes.index(d) for d in "IJK")
    check_array(a, (5, 6, 7), layout, np.dtype("f8"), alignment, (0, 0, 0))
    strides = dict(zip("IJK", a.strides))
    assert strides[axes[0]] > strides[axes[1]] > strides[axes[2]] == 8


@pytest.mark.parametrize(
    "dims, axes", [("IJ0", "KJI"), ("IJ0", "JI"), ("IJ0", "0JI"), ("IJ0", "J0I"), ("KJ01", "JK")]
)
def test_layout_axis_string_with_data_dims(dims, axes):
    shape = tuple({"I": 3, "J": 4, "K": 5, "0": 2, "1": 3}[d] for d in dims)
    a = ga.empty(shape, backend="gt:cpu_kfirst", dims=dims, layout=axes)
    check_array(a, shape, layout_from_axes(axes, dims), np.dtype("f8"), 8, (0,) * len(dims))


COMPATIBLE_ALIGNMENTS = [
    pytest.param(size, dtype, id=f"{size}-{dtype.name}")
    for dtype in DTYPES
    for size in (1, 2, 4, 8, 16, 32, 64, 128, 256, 4096)
    if size % dtype.itemsize == 0 or dtype.itemsize % size == 0
]


@pytest.mark.parametrize("alignment_size, dtype", COMPATIBLE_ALIGNMENTS)
@pytest.mark.parametrize("name", [None, "gt:cpu_ifirst", "dace:cpu", "gtmc", "gt:gpu"])
def test_alignment_size_overrides_preset(name, alignment_size, dtype):
    rule = "C" if name is None else preset_rule(name)[1]
    layout = expected_layout(rule, "IJK")
    shape, aligned_index = (5, 6, 7), (1, 2, 3)
    kwargs = dict(
        dtype=dtype, backend=name, alignment_size=alignment_size, aligned_index=aligned_index
    )
    plan = ga.plan(shape, **kwargs)
    assert plan.alignment_size == alignment_size
    padded, strides = expected_geometry(shape, layout, dtype.itemsize, alignment_size)
    assert plan.padded_shape == padded and plan.strides == strides
    assert_plan_aligned(plan, aligned_index)
    a = ga.empty(shape, device="cpu", **kwargs)
    check_array(a, shape, layout, dtype, alignment_size, aligned_index)


@pytest.mark.parametrize("name", GPU_PRESETS)
def test_device_cpu_overrides_gpu_preset(name):
    alignment, rule, _ = preset_rule(name)
    assert ga.plan((5, 6, 7), backend=name).device == "gpu"
    plan = ga.plan((5, 6, 7), backend=name, device="cpu", aligned_index=(3, 0, 0))
    assert plan.device == "cpu"
    a = ga.zeros((5, 6, 7), backend=name, device="cpu", aligned_index=(3, 0, 0))
    check_array(
        a, (5, 6, 7), expected_layout(rule, "IJK"), np.dtype("f8"), alignment * 8, (3, 0, 0)
    )
    assert not a.any()


@pytest.mark.parametrize("name", [None, "gt:cpu_ifirst"])
def test_device_gpu_overrides(name):
    assert ga.plan((2, 3), backend=name, device="gpu").device == "gpu"
    assert ga.plan((2, 3), backend=name, device=None).device == "cpu"


# ---- aliases ------------------------------------------------------------------


@pytest.mark.parametrize("name", PRESETS)
def test_defaults_is_an_alias_of_backend(name):
    kwargs = dict(dims="KJ0", aligned_index=(1, 1, 0))
    by_backend = ga.plan((5, 6, 2), backend=name, **kwargs)
    by_defaults = ga.plan((5, 6, 2), defaults=name, **kwargs)
    both = ga.plan((5, 6, 2), backend=name, defaults=name, **kwargs)
    for plan in (by_defaults, both):
        assert (plan.strides, plan.layout, plan.alignment_size, plan.device) == (
            by_backend.strides,
            by_backend.layout,
            by_backend.alignment_size,
            by_backend.device,
        )


def test_dimensions_is_an_alias_of_dims():
    by_dims = ga.empty((5, 6, 7), backend="gt:cpu_kfirst", dims="KJI")
    by_dimensions = ga.empty((5, 6, 7), backend="gt:cpu_kfirst", dimensions="KJI")
    both = ga.empty((5, 6, 7), backend="gt:cpu_kfirst", dims="KJI", dimensions="KJI")
    assert by_dims.strides == by_dimensions.strides == both.strides == (8, 40, 240)


def test_dims_and_dimensions_equal_in_different_spellings_agree():
    """The same dims spelled as a string and as a tuple do not conflict."""
    plan = ga.plan((2, 3), backend="gt:cpu_ifirst", dims="IJ", dimensions=("I", "J"))
    assert plan.dims == ("I", "J")


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(backend="numpy", defaults="gtmc"), r"backend.*'numpy'.*defaults.*'gtmc'"),
        (dict(dims="IJ", dimensions="JI"), r"dims.*'IJ'.*dimensions.*'JI'"),
    ],
)
def test_aliases_that_disagree(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ga.empty((2, 3), **kwargs)


# ---- subarray dtypes ----------------------------------------------------------


@pytest.mark.parametrize("sub", [(3,), (3, 2)])
@pytest.mark.parametrize("name", PRESETS)
def test_subarray_dtype_appends_data_dims(name, sub):
    alignment, rule, device = preset_rule(name)
    dtype = np.dtype(("f8", sub))
    shape = (4, 5, 6) + sub
    dims = ("I", "J", "K", *map(str, range(len(sub))))
    layout = expected_layout(rule, dims)
    plan = ga.plan((4, 5, 6), dtype, backend=name, aligned_index=(1, 2, 3))
    check_plan(
        plan,
        shape,
        dims,
        layout,
        np.dtype("f8"),
        alignment * 8,
        (1, 2, 3) + (0,) * len(sub),
        device,
    )
    if rule not in ("C", "F"):
        assert max(plan.strides) == plan.strides[3]  # the subarray's first dim is outermost
    if device == "cpu":
        a = ga.empty((4, 5, 6), dtype, backend=name, aligned_index=(1, 2, 3))
        check_array(a, shape, layout, np.dtype("f8"), alignment * 8, (1, 2, 3) + (0,) * len(sub))


def test_subarray_dtype_without_preset_is_c_order():
    a = ga.zeros((4, 5), ("i4", (3,)))
    assert a.shape == (4, 5, 3) and a.dtype == np.int32
    assert a.strides == np.zeros((4, 5, 3), "i4").strides


def test_subarray_dtype_with_dims_for_the_base_shape():
    plan = ga.plan((3, 4), ("f8", (2,)), backend="gtmc", dims="KJ")
    assert plan.dims == ("K", "J", "0")
    # gtmc: J outer, K inner (padded to 8 elements); the data dim outermost
    assert plan.strides == (8, 64, 256)


def test_subarray_dtype_with_layout_for_the_base_dims():
    a = ga.empty((3, 4, 5), ("f8", (2,)), layout=(0, 1, 2))
    assert a.strides == (160, 40, 8, 480)


# ---- 0-d and zero-size ------------------------------------------------------


@pytest.mark.parametrize("name", [None, *PRESETS])
def test_zero_dimensional(name):
    plan = ga.plan((), backend=name)
    assert plan.shape == plan.strides == plan.layout == plan.dims == ()
    assert_plan_aligned(plan, ())
    if plan.device == "cpu":
        a = ga.zeros((), backend=name)
        assert a.shape == () and a.strides == () and a[()] == 0
        assert_aligned(a, (), plan.alignment_size)
        a[()] = 4.5
        assert a[()] == 4.5


@pytest.mark.parametrize("shape", [(0,), (3, 0), (0, 4, 2), (3, 0, 2), (0, 0, 0), (2, 3, 4, 0)])
@pytest.mark.parametrize("name", [None, *PRESETS])
def test_zero_size(name, shape):
    plan = ga.plan(shape, backend=name)
    assert plan.shape == shape
    assert plan.span == 0
    # the strides still follow the layout: the contiguous dim has the
    # itemsize, the others no smaller strides than their inner neighbour
    by_rank = [plan.strides[d] for d in np.argsort(plan.layout)]
    assert by_rank[-1] == 8
    assert all(a >= b for a, b in zip(by_rank, by_rank[1:]))
    if plan.device == "cpu":
        a = ga.zeros(shape, backend=name)
        assert a.shape == shape and a.size == 0 and a.strides == plan.strides
        assert ga.full(shape, 3.0, backend=name).shape == shape


def test_zero_size_with_aligned_index_zero():
    a = ga.zeros((3, 0, 2), backend="gtmc", aligned_index=(1, 0, 1))
    assert a.shape == (3, 0, 2)
