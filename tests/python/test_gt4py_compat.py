"""gtstore.arrays against GT4Py's own gt4py.storage (an optional test dependency).

For every preset GT4Py registers and dims in canonical order (I, J, K, then
data dims) the shape, the strides and the alignment of the aligned point are
identical. GT4Py cannot allocate for GPU presets without CuPy, so there the
strides of ``ga.plan`` are compared with GT4Py's CPU allocator called with the
GPU preset's layout map and alignment (what GT4Py's GPU path computes).
"""

import itertools

import numpy as np
import pytest

gt4py = pytest.importorskip("gt4py", reason="gt4py is not installed (optional test dependency)")
gs = pytest.importorskip("gt4py.storage", reason="gt4py.storage is not importable")
from gt4py.storage.cartesian import utils as gt_utils  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import gtstore.arrays as ga  # noqa: E402
from conftest import address_of, assert_plan_aligned  # noqa: E402

try:
    REGISTRY = gs.layout_registry.REGISTRY
except AttributeError:  # pragma: no cover - older layouts of the package
    from gt4py.storage.cartesian.layout_registry import REGISTRY

GT4PY_PRESETS = sorted(REGISTRY)
CPU = [p for p in GT4PY_PRESETS if REGISTRY[p]["device"] == "cpu"]
GPU = [p for p in GT4PY_PRESETS if REGISTRY[p]["device"] == "gpu"]

CANONICAL_DIMS = [
    "".join(axes) + "".join(map(str, range(ndata)))
    for k in (1, 2, 3)
    for axes in itertools.combinations("IJK", k)
    for ndata in range(3)
]
DTYPES = [np.dtype(t) for t in ("float64", "float32", "int8", "complex128", "bool")]
EXTENT = {"I": 5, "J": 6, "K": 7, "0": 3, "1": 2}


def gt4py_reference(name, shape, dtype, aligned_index, dims):
    """GT4Py's array for the call (for GPU presets: its CPU allocator with the
    GPU preset's layout map and alignment)."""
    info = REGISTRY[name]
    if info["device"] == "cpu":
        return gs.empty(shape, dtype, backend=name, aligned_index=aligned_index, dimensions=dims)
    layout_map = info["layout_map"](tuple(dims))
    return gt_utils.allocate_cpu(
        shape, layout_map, dtype, info["alignment"] * dtype.itemsize, aligned_index
    )[1]


def alignment_bytes(name, dtype):
    return REGISTRY[name]["alignment"] * dtype.itemsize


def compare(name, shape, dtype, aligned_index, dims):
    reference = gt4py_reference(name, shape, dtype, aligned_index, dims)
    alignment = alignment_bytes(name, dtype)
    assert address_of(reference, aligned_index) % alignment == 0  # GT4Py's own promise
    plan = ga.plan(shape, dtype, backend=name, aligned_index=aligned_index, dimensions=dims)
    assert plan.shape == reference.shape
    assert plan.strides == reference.strides
    assert plan.alignment_size == alignment
    assert plan.device == REGISTRY[name]["device"]
    assert_plan_aligned(plan, aligned_index)
    if REGISTRY[name]["device"] == "cpu":
        a = ga.empty(shape, dtype, backend=name, aligned_index=aligned_index, dimensions=dims)
        assert a.shape == reference.shape and a.dtype == reference.dtype
        assert a.strides == reference.strides
        assert address_of(a, aligned_index) % alignment == 0


def test_gt4py_presets_are_gtstore_presets():
    assert set(GT4PY_PRESETS) <= set(ga.presets())
    for name in GT4PY_PRESETS:
        assert ga.get_preset(name)["alignment"] == REGISTRY[name]["alignment"]
        assert ga.get_preset(name)["device"] == REGISTRY[name]["device"]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("dims", CANONICAL_DIMS)
@pytest.mark.parametrize("name", GT4PY_PRESETS)
def test_same_geometry_as_gt4py(name, dims, dtype):
    shape = tuple(EXTENT[d] for d in dims)
    for aligned_index in [
        (0,) * len(dims),
        tuple(min(2, n - 1) for n in shape),
        tuple(n - 1 for n in shape),
    ]:
        compare(name, shape, dtype, aligned_index, dims)


@pytest.mark.parametrize("name", GT4PY_PRESETS)
def test_same_geometry_with_default_dims_and_index(name):
    for shape in [(5,), (5, 6), (5, 6, 7), (5, 6, 7, 3), (5, 6, 7, 3, 2)]:
        dtype = np.dtype("f8")
        info = REGISTRY[name]
        if info["device"] == "cpu":
            reference = gs.empty(shape, dtype, backend=name)
        else:
            dims = tuple("IJK"[: len(shape)]) + tuple(map(str, range(len(shape) - 3)))
            reference = gt4py_reference(name, shape, dtype, (0,) * len(shape), dims)
        assert ga.plan(shape, dtype, backend=name).strides == reference.strides


@pytest.mark.parametrize("name", GT4PY_PRESETS)
def test_subarray_dtype_like_gt4py(name):
    dtype = np.dtype(("f4", (3,)))
    plan = ga.plan((5, 6, 7), dtype, backend=name, aligned_index=(1, 2, 3))
    shape, base = (5, 6, 7, 3), np.dtype("f4")
    reference = gt4py_reference(name, shape, base, (1, 2, 3, 0), ("I", "J", "K", "0"))
    assert plan.shape == reference.shape and plan.strides == reference.strides
    if REGISTRY[name]["device"] == "cpu":
        gt = gs.empty((5, 6, 7), dtype, backend=name, aligned_index=(1, 2, 3))
        a = ga.empty((5, 6, 7), dtype, backend=name, aligned_index=(1, 2, 3))
        assert a.shape == gt.shape and a.strides == gt.strides and a.dtype == gt.dtype


# ---- random shapes --------------------------------------------------------------


@st.composite
def calls(draw):
    name = draw(st.sampled_from(GT4PY_PRESETS))
    axes = draw(st.sampled_from([a for a in CANONICAL_DIMS if not a[-1].isdigit()]))
    dims = axes + "".join(map(str, range(draw(st.integers(0, 2)))))
    shape = tuple(draw(st.integers(1, 40)) for _ in dims)
    aligned_index = tuple(draw(st.integers(0, n - 1)) for n in shape)
    dtype = draw(
        st.sampled_from(
            [np.dtype(t) for t in ("f8", "f4", "f2", "i1", "i8", "c8", "c16", "u2", "?")]
        )
    )
    return name, shape, dtype, aligned_index, dims


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls())
def test_random_shapes_same_geometry_as_gt4py(call):
    compare(*call)


# ---- values ------------------------------------------------------------------------

VALUE_DTYPES = ["f8", "f4", "i4", "u1", "c16", "?"]


@pytest.mark.parametrize("dtype", VALUE_DTYPES)
@pytest.mark.parametrize("name", CPU)
def test_values_like_gt4py(name, dtype):
    kwargs = dict(backend=name, aligned_index=(1, 0, 2), dimensions=("I", "J", "K"))
    shape = (4, 5, 6)
    for ours, theirs in [
        (ga.zeros(shape, dtype, **kwargs), gs.zeros(shape, dtype, **kwargs)),
        (ga.ones(shape, dtype, **kwargs), gs.ones(shape, dtype, **kwargs)),
        (ga.full(shape, 3, dtype, **kwargs), gs.full(shape, 3, dtype, **kwargs)),
    ]:
        assert ours.strides == theirs.strides
        np.testing.assert_array_equal(ours, theirs, strict=True)


@pytest.mark.parametrize(
    "data",
    [
        np.arange(120.0).reshape(4, 5, 6),
        np.asfortranarray(np.arange(120, dtype="i4").reshape(4, 5, 6)),
        np.arange(240.0).reshape(8, 5, 6)[::2, ::-1],
        (np.arange(120).reshape(4, 5, 6) % 3 == 0),
        np.arange(120.0).reshape(4, 5, 6).astype("c8") * 1j,
    ],
    ids=["C", "F-int", "strided", "bool", "complex"],
)
@pytest.mark.parametrize("name", CPU)
def test_from_array_like_gt4py(name, data):
    kwargs = dict(backend=name, aligned_index=(1, 2, 0), dimensions=("I", "J", "K"))
    ours = ga.from_array(data, data.dtype, **kwargs)
    theirs = gs.from_array(data, data.dtype, **kwargs)
    assert ours.strides == theirs.strides
    np.testing.assert_array_equal(ours, theirs, strict=True)


@pytest.mark.parametrize("name", CPU)
def test_from_array_subarray_like_gt4py(name):
    data = np.arange(4 * 5 * 6 * 3, dtype="f8").reshape(4, 5, 6, 3)
    ours = ga.from_array(data, ("f8", (3,)), backend=name)
    theirs = gs.from_array(data, ("f8", (3,)), backend=name)
    assert ours.shape == theirs.shape and ours.strides == theirs.strides
    np.testing.assert_array_equal(ours, theirs, strict=True)


@pytest.mark.parametrize("name", GT4PY_PRESETS)
def test_gtscript_axes_as_dimensions(name):
    gtscript = pytest.importorskip("gt4py.cartesian.gtscript")
    dims = (gtscript.I, gtscript.K)
    plan = ga.plan((5, 7), backend=name, dimensions=dims, aligned_index=(1, 1))
    assert plan.dims == ("I", "K")
    reference = gt4py_reference(name, (5, 7), np.dtype("f8"), (1, 1), ("I", "K"))
    assert plan.strides == reference.strides
    if REGISTRY[name]["device"] == "cpu":
        theirs = gs.empty((5, 7), backend=name, dimensions=dims, aligned_index=(1, 1))
        assert ga.empty((5, 7), backend=name, dimensions=dims, aligned_index=(1, 1)).strides == (
            theirs.strides
        )


def test_unknown_backend_is_the_exception_gt4py_raises():
    with pytest.raises(RuntimeError) as theirs:
        gs.empty((2, 3), backend="nope")
    with pytest.raises(type(theirs.value)):
        ga.empty((2, 3), backend="nope")


# ---- where GT4Py is no reference ------------------------------------------------


def test_permuted_dims_names_decide_unlike_gt4py():
    """dims "KJI" on gt:cpu_kfirst: gtstore keeps K (axis 0) contiguous, as
    the names say; GT4Py applies its ranks positionally and makes the last
    axis (labelled I) contiguous."""
    shape = (7, 6, 5)
    ours = ga.empty(shape, backend="gt:cpu_kfirst", dimensions="KJI")
    theirs = gs.empty(shape, backend="gt:cpu_kfirst", dimensions=("K", "J", "I"))
    assert ours.strides == (8, 56, 336)  # K contiguous
    assert theirs.strides == (240, 40, 8)  # GT4Py: I contiguous
    assert ours.strides != theirs.strides
