"""Bad input: ValueError or TypeError whose message names the parameter and
the value, never a crash; and the preset registry."""

import json
import os
import re

import numpy as np
import pytest

import gtstore
import gtstore.arrays as ga
from conftest import assert_aligned, expected_geometry, expected_layout, param_id, run_python

#: Every allocation function called on a 3-d shape with keyword arguments.
FUNCTIONS = {
    "empty": lambda **kw: ga.empty((2, 3, 4), **kw),
    "zeros": lambda **kw: ga.zeros((2, 3, 4), **kw),
    "ones": lambda **kw: ga.ones((2, 3, 4), **kw),
    "full": lambda **kw: ga.full((2, 3, 4), 1.0, **kw),
    "plan": lambda **kw: ga.plan((2, 3, 4), **kw),
    "from_array": lambda **kw: ga.from_array(np.zeros((2, 3, 4)), **kw),
    "empty_like": lambda **kw: ga.empty_like(np.zeros((2, 3, 4)), **kw),
    "zeros_like": lambda **kw: ga.zeros_like(np.zeros((2, 3, 4)), **kw),
    "ones_like": lambda **kw: ga.ones_like(np.zeros((2, 3, 4)), **kw),
    "full_like": lambda **kw: ga.full_like(np.zeros((2, 3, 4)), 1.0, **kw),
}
function_param = pytest.mark.parametrize("function", FUNCTIONS.values(), ids=FUNCTIONS.keys())


def names(param, value):
    """A regex for a message that names ``param`` and then ``value``."""
    return rf"{re.escape(param)}.*{re.escape(str(value))}"


# ---- unknown preset --------------------------------------------------------------


def test_unknown_preset_error_is_value_and_runtime_error():
    assert gtstore.UnknownPresetError is ga.UnknownPresetError
    assert issubclass(ga.UnknownPresetError, ValueError)
    assert issubclass(ga.UnknownPresetError, RuntimeError)


@function_param
@pytest.mark.parametrize("keyword", ["backend", "defaults"])
@pytest.mark.parametrize("name", ["nope", "gt:cpu", "NUMPY", ""])
def test_unknown_preset(function, keyword, name):
    with pytest.raises(ga.UnknownPresetError, match=names(keyword, repr(name))) as info:
        function(**{keyword: name})
    assert isinstance(info.value, ValueError) and isinstance(info.value, RuntimeError)


@function_param
@pytest.mark.parametrize("value", [5, b"numpy", ("numpy",)], ids=param_id)
def test_backend_not_a_string(function, value):
    with pytest.raises(TypeError, match=names("backend", value)):
        function(backend=value)


def test_get_preset_unknown():
    with pytest.raises(ga.UnknownPresetError, match="nope"):
        ga.get_preset("nope")
    with pytest.raises(TypeError, match="name"):
        ga.get_preset(5)


# ---- shapes ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "shape, bad", [((2, -3), -3), (-1, -1), ((-5,), -5), ((0, -1, 2), -1)], ids=param_id
)
@pytest.mark.parametrize("function", [ga.empty, ga.zeros, ga.plan])
def test_negative_shape(function, shape, bad):
    with pytest.raises(ValueError, match=names("shape", bad)):
        function(shape)


@pytest.mark.parametrize(
    "shape, bad",
    [
        (2.5, 2.5),
        ("3", "3"),
        (None, None),
        (True, True),
        ((2, 2.5), 2.5),
        ((2, "3"), "3"),
        ((2, None), None),
        ((2, True), True),
        ((2, np.float64(3.0)), 3.0),
        ({2: 3}, 2),
        ((2, [3]), [3]),
    ],
    ids=param_id,
)
@pytest.mark.parametrize("function", [ga.empty, ga.ones, ga.plan])
def test_non_integer_shape(function, shape, bad):
    with pytest.raises(TypeError, match=names("shape", bad)):
        function(shape)


def test_shape_as_a_0d_integer_array():
    """NumPy takes it as an int; rejecting it is fine too, with a message
    that names the parameter and the value."""
    try:
        a = ga.empty(np.array(3))
    except TypeError as error:
        assert re.search(r"shape.*array\(3\)", str(error)), str(error)
    else:
        assert a.shape == (3,)


def test_numpy_integers_are_fine_in_shape():
    assert ga.empty((np.int32(2), np.uint8(3))).shape == (2, 3)
    assert ga.empty(np.array([2, 3])).shape == (2, 3)


@pytest.mark.parametrize(
    "shape", [(2**40, 2**40), (2**62,), (2**31, 2**31, 2**31), (2**63 - 1,), (2**21,) * 3]
)
@pytest.mark.parametrize("name", [None, "gtmc", "gt:gpu"])
def test_sizes_that_overflow(shape, name):
    with pytest.raises((ValueError, MemoryError), match="shape|memory"):
        ga.plan(shape, backend=name) if name == "gt:gpu" else ga.empty(shape, backend=name)


def test_extent_beyond_64_bits():
    with pytest.raises(ValueError, match=names("shape", 2**64)):
        ga.empty((2**64,))


# ---- lengths that disagree ------------------------------------------------------


@function_param
@pytest.mark.parametrize(
    "kwargs, param, value",
    [
        (dict(dims="IJ"), "dims", "'IJ'"),
        (dict(dims="IJK01"), "dims", "'IJK01'"),
        (dict(dimensions=("I",)), "dimensions", "('I',)"),
        (dict(aligned_index=(0, 0)), "aligned_index", "(0, 0)"),
        (dict(aligned_index=(0, 0, 0, 0, 0)), "aligned_index", "(0, 0, 0, 0, 0)"),
        (dict(layout=(0, 1)), "layout", "(0, 1)"),
        (dict(layout=(0, 1, 2, 3, 4)), "layout", "(0, 1, 2, 3, 4)"),
    ],
    ids=lambda v: repr(v) if isinstance(v, dict) else "",
)
def test_lengths_that_disagree(function, kwargs, param, value):
    with pytest.raises(ValueError, match=names(param, value)):
        function(**kwargs)


# ---- dims ------------------------------------------------------------------------------


@function_param
@pytest.mark.parametrize(
    "dims, bad",
    [
        ("IJL", "L"),
        ("IJX", "X"),
        ("ijk", "i"),
        ("IJ-", "-"),
        (("I", "J", "L"), "L"),
        (("I", "J", "KK"), "KK"),
        (("I", "J", ""), "''"),
        (("I", "J", "-1"), "-1"),
        (("I", "J", 0), "0"),
    ],
    ids=param_id,
)
def test_unknown_labels(function, dims, bad):
    with pytest.raises((ValueError, TypeError), match=names("dims", bad)):
        function(dims=dims)


@function_param
@pytest.mark.parametrize("dims", ["IJI", "I00", ("K", "J", "K"), ("0", "I", "0")], ids=param_id)
def test_repeated_dims(function, dims):
    with pytest.raises(ValueError, match=r"dims.*appears twice"):
        function(dims=dims)


@pytest.mark.parametrize("dims", [5, 3.0, b"IJK", None], ids=param_id)
def test_dims_not_a_sequence(dims):
    if dims is None:
        assert ga.plan((2, 3, 4), dims=dims).dims == ("I", "J", "K")
        return
    with pytest.raises(TypeError, match=names("dims", dims)):
        ga.plan((2, 3, 4), dims=dims)


def test_alias_conflicts_name_both():
    with pytest.raises(ValueError, match=r"backend='numpy' and defaults='gtmc'"):
        ga.empty((2,), backend="numpy", defaults="gtmc")
    with pytest.raises(ValueError, match=r"dims='IJ' and dimensions='IK'"):
        ga.empty((2, 3), dims="IJ", dimensions="IK")


# ---- layout -------------------------------------------------------------------------


@function_param
@pytest.mark.parametrize(
    "layout", [(0, 0, 1), (0, 1, 3), (-1, 0, 1), (1, 2, 3), (2, 2, 2)], ids=param_id
)
def test_layout_not_a_permutation(function, layout):
    with pytest.raises(ValueError, match=names("layout", layout) + ".*permutation"):
        function(layout=layout)


@pytest.mark.parametrize(
    "layout, bad",
    [("IJ", "IJ"), ("IJKL", "IJKL"), ("IIJ", "IIJ"), ("KJIX", "KJIX"), ("", "''")],
    ids=param_id,
)
def test_layout_axis_string_that_does_not_fit(layout, bad):
    with pytest.raises(ValueError, match=names("layout", bad.strip("'"))):
        ga.empty((2, 3, 4), layout=layout)


@pytest.mark.parametrize("layout", [5, 2.0, (0, 1.0, 2), (0, None, 2)], ids=param_id)
def test_layout_not_integers(layout):
    with pytest.raises(TypeError, match="layout"):
        ga.empty((2, 3, 4), layout=layout)


# ---- alignment ----------------------------------------------------------------------


@function_param
@pytest.mark.parametrize(
    "alignment_size, dtype", [(12, "f8"), (3, "f4"), (6, "f4"), (24, "c16"), (3, "i2"), (20, "f8")]
)
def test_alignment_and_itemsize_must_divide_one_another(function, alignment_size, dtype):
    with pytest.raises(ValueError, match=names("alignment_size", alignment_size) + ".*itemsize"):
        function(alignment_size=alignment_size, dtype=dtype)


@function_param
@pytest.mark.parametrize("alignment_size", [0, -8, -1])
def test_alignment_not_positive(function, alignment_size):
    with pytest.raises(ValueError, match=names("alignment_size", alignment_size)):
        function(alignment_size=alignment_size)


@pytest.mark.parametrize("alignment_size", [8.0, "64", True, (64,)], ids=param_id)
def test_alignment_not_an_integer(alignment_size):
    with pytest.raises(TypeError, match=names("alignment_size", alignment_size)):
        ga.empty((2, 3), alignment_size=alignment_size)


@pytest.mark.parametrize(
    "make",
    [ga.empty, ga.plan, gtstore.zeros, lambda shape, **kw: gtstore.empty_like(np.zeros(shape), **kw)],
    ids=["arrays.empty", "arrays.plan", "zeros", "empty_like"],
)
def test_alignment_whose_padding_overflows_is_named(make):
    """The shape alone fits: the padding for the alignment is what overflows."""
    with pytest.raises(ValueError) as caught:
        make((10, 10), alignment_size=2**62)
    assert str(caught.value).startswith(
        f"alignment_size: {2**62} bytes is too big for shape (10, 10): with the padding it "
        "needs, the size in bytes does not fit in 64 bits"
    )


def test_shape_too_big_unpadded_is_the_shape_fault():
    with pytest.raises(ValueError, match=r"^shape: \(1152921504606846976, 16\) is too big"):
        ga.plan((2**60, 16), alignment_size=8)


def test_alignment_divisor_of_itemsize_is_fine():
    a = ga.empty((5, 6), "c16", alignment_size=4, aligned_index=(1, 1))
    assert a.strides == (96, 16)
    assert_aligned(a, (1, 1), 4)


# ---- aligned_index --------------------------------------------------------------


@function_param
@pytest.mark.parametrize(
    "index, bad",
    [((2, 0, 0), 2), ((0, 3, 0), 3), ((0, 0, 10), 10), ((-1, 0, 0), -1), ((0, 0, -4), -4)],
    ids=param_id,
)
def test_aligned_index_outside_the_shape(function, index, bad):
    with pytest.raises(ValueError, match=names("aligned_index", bad)):
        function(aligned_index=index)


@pytest.mark.parametrize("index", [(0, 0.5, 0), 1, "000", (0, None, 0)], ids=param_id)
def test_aligned_index_not_integers(index):
    with pytest.raises(TypeError, match="aligned_index"):
        ga.empty((2, 3, 4), aligned_index=index)


# ---- dtypes -------------------------------------------------------------------------

BAD_DTYPES = [
    (object, "O"),
    ("U5", "U5"),
    ("S3", "S3"),
    ("V8", "V8"),
    ("datetime64[s]", "M8[s]"),
    ("timedelta64", "m8"),
    ([("a", "f8"), ("b", "i4")], "('a', '<f8')"),
    (">f8", ">f8"),
    (">i4", ">i4"),
    (">c16", ">c16"),
    ("not-a-dtype", "not-a-dtype"),
]
if np.dtype(np.longdouble).itemsize > 8:
    BAD_DTYPES += [(np.longdouble, "float128"), (np.clongdouble, "complex256")]


@function_param
@pytest.mark.parametrize("dtype, shown", BAD_DTYPES, ids=param_id)
def test_unsupported_dtype(function, dtype, shown):
    with pytest.raises(TypeError, match=names("dtype", shown)):
        function(dtype=dtype)


@pytest.mark.parametrize(
    "data",
    [np.zeros(3, object), np.array(["a", "b"]), np.zeros(2, "M8[s]"), np.zeros(2, [("a", "f8")])],
    ids=lambda d: d.dtype.str,
)
@pytest.mark.parametrize("function", [ga.from_array, ga.empty_like])
def test_unsupported_dtype_of_the_data(function, data):
    param = "data" if function is ga.from_array else "a"
    with pytest.raises(TypeError, match=rf"(?s)^{param}: .*array\(.*dtype"):  # reprs span lines
        function(data)


def test_unsupported_data_dtype_is_fine_with_a_dtype():
    assert ga.from_array(np.array([1, 2], dtype=object), "f8").tolist() == [1.0, 2.0]
    assert ga.zeros_like(np.zeros(3, object), "i8").tolist() == [0, 0, 0]


def test_template_without_a_buffer_is_fine_with_a_dtype():
    """NumPy's datetime64 arrays export no buffer; *_like needs only their
    shape when dtype= is given, and from_array can cast them like NumPy."""
    template = np.zeros(3, "M8[s]")
    assert ga.zeros_like(template, "i8").tolist() == np.zeros_like(template, "i8").tolist()
    assert ga.from_array(template, "i8").tolist() == [0, 0, 0]


# ---- other keywords and arguments -----------------------------------------------


@function_param
@pytest.mark.parametrize("device", ["tpu", "GPU", 5, ""], ids=param_id)
def test_bad_device(function, device):
    with pytest.raises(ValueError, match=names("device", repr(device))):
        function(device=device)


@function_param
@pytest.mark.parametrize("keyword", ["foo", "order", "shape_", "alignment"])
def test_unexpected_keyword(function, keyword):
    with pytest.raises(TypeError, match=rf"unexpected keyword argument '{keyword}'"):
        function(**{keyword: 1})


@pytest.mark.parametrize(
    "call, name, most",
    [
        (lambda: ga.empty((2,), "f8", "numpy"), "empty", 2),
        (lambda: ga.zeros((2,), "f8", None), "zeros", 2),
        (lambda: ga.plan((2,), "f8", None), "plan", 2),
        (lambda: ga.full((2,), 1, "f8", "numpy"), "full", 3),
        (lambda: ga.from_array([1], "f8", "numpy"), "from_array", 2),
        (lambda: ga.empty_like([1], "f8", "numpy"), "empty_like", 2),
        (lambda: ga.full_like([1], 1, "f8", "numpy"), "full_like", 3),
    ],
)
def test_too_many_positional_arguments(call, name, most):
    with pytest.raises(TypeError, match=rf"{name}\(\) takes at most {most} positional"):
        call()


@pytest.mark.parametrize(
    "call, missing",
    [
        (lambda: ga.empty(), "shape"),
        (lambda: ga.full((2,)), "fill_value"),
        (lambda: ga.from_array(), "data"),
        (lambda: ga.full_like([1]), "fill_value"),
        (lambda: ga.empty(dtype="f8"), "shape"),
    ],
)
def test_missing_arguments(call, missing):
    with pytest.raises(TypeError, match=rf"missing required argument '{missing}'"):
        call()


def test_argument_given_twice():
    with pytest.raises(TypeError, match="multiple values for argument 'dtype'"):
        ga.empty((2,), "f8", dtype="f4")


# ---- Plan.offset ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "base, error, shown",
    [
        (-1, ValueError, "-1 is not an address"),
        (2**64, ValueError, str(2**64)),
        ("x", TypeError, "expected an integer, got 'x'"),
        (8.0, TypeError, "8.0"),
        (True, TypeError, "True"),
    ],
    ids=param_id,
)
def test_plan_offset_bad_base(base, error, shown):
    plan = ga.plan((70, 70, 80), backend="gt:cpu_ifirst", aligned_index=(3, 3, 0),
                   alignment_size=64)
    with pytest.raises(error, match=names("base", shown)):
        plan.offset(base)


def test_plan_offset_takes_numpy_integers():
    plan = ga.plan((70, 70, 80), backend="gt:cpu_ifirst", aligned_index=(3, 3, 0),
                   alignment_size=64)
    for base in (0, 8, 64, 255, 2**63 - 1):
        assert plan.offset(np.int64(base)) == plan.offset(np.uint64(base)) == plan.offset(base)
    assert plan.offset(0) == 40  # the aligned point, 3 elements in, at 64 bytes


# ---- GPU presets without a GPU ------------------------------------------------------

gpu_functions = {k: v for k, v in FUNCTIONS.items() if k != "plan"}
GPU_REQUESTS = [
    (dict(backend="gt:gpu"), "backend: preset 'gt:gpu'"),
    (dict(backend="dace:gpu"), "backend: preset 'dace:gpu'"),
    (dict(device="gpu"), "device: 'gpu'"),
    (dict(defaults="gtcuda"), "defaults: preset 'gtcuda'"),
]


@pytest.fixture(scope="module")
def errors_without_a_gpu():
    """{(function, request number): what the call raised}, every call made in
    one child Python where no GPU exists (a CUDA driver that cannot be
    loaded), so also on a machine with a GPU."""
    code = f"""
import json, sys
sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
import gtstore
from test_arrays_errors import GPU_REQUESTS, gpu_functions
assert gtstore.gpu() is None
out = {{}}
for name, function in gpu_functions.items():
    for i, (kwargs, _) in enumerate(GPU_REQUESTS):
        try:
            function(**kwargs)
            out[f"{{name}} {{i}}"] = "no error"
        except Exception as error:
            out[f"{{name}} {{i}}"] = type(error).__name__ + ": " + str(error)
print(json.dumps(out))
"""
    run = run_python(code, GTSTORE_LIBCUDA="/nonexistent/gtstore-test/libcuda.so.1",
                     GTSTORE_GPU="cuda")
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


@pytest.mark.parametrize("function", gpu_functions)
@pytest.mark.parametrize("request_number", range(len(GPU_REQUESTS)))
def test_gpu_preset_without_gpu(function, request_number, errors_without_a_gpu):
    named = GPU_REQUESTS[request_number][1]
    error = errors_without_a_gpu[f"{function} {request_number}"]
    assert re.match("NotImplementedError: .*" + re.escape(named) + ".*there is none here", error)


# ---- the preset registry ----------------------------------------------------------


def register(user_presets, name, **kwargs):
    ga.register_preset(name, **kwargs)
    user_presets.append(name)


def check_allocation(name, dims, layout, alignment_elements, dtype="f8"):
    dtype = np.dtype(dtype)
    shape = tuple({"I": 5, "J": 6, "K": 7, "0": 2}[d] for d in dims)
    index = (1,) * len(dims)
    a = ga.empty(shape, dtype, backend=name, dims=dims, aligned_index=index)
    alignment = alignment_elements * dtype.itemsize
    assert a.strides == expected_geometry(shape, layout, dtype.itemsize, alignment)[1]
    assert_aligned(a, index, alignment)


@pytest.mark.parametrize(
    "layout, rule",
    [
        ((2, 1, 0), (2, 1, 0)),
        ((1, 0, 2), (1, 0, 2)),
        ([0, 2, 1], (0, 2, 1)),
        ("KJI", (2, 1, 0)),
        ("JKI", (2, 0, 1)),
        ("IJK", (0, 1, 2)),
        ("C", "C"),
        ("F", "F"),
        (None, (0, 1, 2)),
    ],
    ids=param_id,
)
def test_register_preset(user_presets, layout, rule):
    register(user_presets, "test:user", alignment=4, layout=layout)
    assert "test:user" in ga.presets()
    info = ga.get_preset("test:user")
    assert info == {
        "name": "test:user",
        "alignment": 4,
        "layout": rule if rule in ("C", "F") else tuple(rule),
        "device": "cpu",
    }
    for dims in ("IJK", "KJI", "IJ0", "K0"):
        check_allocation("test:user", dims, expected_layout(rule, dims), 4)


def test_register_preset_with_layout_function(user_presets):
    calls = []

    def reverse(dims):
        calls.append(dims)
        return tuple(range(len(dims) - 1, -1, -1))

    register(user_presets, "test:fn", layout=reverse, alignment=2)
    assert ga.get_preset("test:fn")["layout"] is reverse
    check_allocation("test:fn", "IJK", (2, 1, 0), 2)
    check_allocation("test:fn", "K0", (1, 0), 2)
    assert ("I", "J", "K") in calls and ("K", "0") in calls
    assert all(isinstance(c, tuple) for c in calls)


def test_register_gpu_preset(user_presets):
    register(user_presets, "test:gpu", alignment=16, layout=(2, 1, 0), device="gpu")
    plan = ga.plan((5, 6, 7), backend="test:gpu")
    assert plan.device == "gpu" and plan.alignment_size == 128
    assert plan.strides == expected_geometry((5, 6, 7), (2, 1, 0), 8, 128)[1]


def test_replace_and_unregister_preset(user_presets):
    register(user_presets, "test:replace", alignment=1, layout=(0, 1, 2))
    count = len(ga.presets())
    ga.register_preset("test:replace", alignment=8, layout="F")
    assert len(ga.presets()) == count
    assert ga.get_preset("test:replace")["alignment"] == 8
    check_allocation("test:replace", "IJK", (2, 1, 0), 8)
    ga.unregister_preset("test:replace")
    assert "test:replace" not in ga.presets()
    with pytest.raises(ga.UnknownPresetError, match="test:replace"):
        ga.empty((2,), backend="test:replace")
    with pytest.raises(ga.UnknownPresetError, match="test:replace"):
        ga.unregister_preset("test:replace")


def test_replacing_a_layout_function_releases_the_old_one(user_presets):
    import weakref

    def make():
        def layout(dims):
            return tuple(range(len(dims)))

        return layout

    first = make()
    ref = weakref.ref(first)
    register(user_presets, "test:release", layout=first)
    del first
    assert ref() is not None  # the registry keeps it
    ga.register_preset("test:release", layout=make())
    assert ref() is None


@pytest.mark.parametrize("name", ["numpy", "gt:gpu", "C", "gtmc"])
def test_builtin_presets_cannot_be_replaced_or_removed(name):
    before = ga.get_preset(name)
    with pytest.raises(ValueError, match=names("name", name) + ".*built-in"):
        ga.register_preset(name, alignment=4)
    with pytest.raises(ValueError, match=names("name", name) + ".*built-in"):
        ga.unregister_preset(name)
    assert ga.get_preset(name) == before


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(name=5), TypeError, "name.*5"),
        (dict(name=""), ValueError, "name"),
        (dict(name="x" * 200), ValueError, "name"),
        (dict(name="test:bad", alignment=0), ValueError, "alignment.*0"),
        (dict(name="test:bad", alignment=-4), ValueError, "alignment.*-4"),
        (dict(name="test:bad", alignment=2.0), TypeError, "alignment.*2.0"),
        (dict(name="test:bad", alignment="8"), TypeError, "alignment.*'8'"),
        (dict(name="test:bad", layout=(0, 0, 1)), ValueError, "layout"),
        (dict(name="test:bad", layout=(0, 1, 3)), ValueError, "layout"),
        (dict(name="test:bad", layout=(0, 1)), ValueError, r"layout.*\(0, 1\)"),
        (dict(name="test:bad", layout=(0, 1, 2, 3)), ValueError, "layout"),
        (dict(name="test:bad", layout="IJ"), ValueError, "layout.*'IJ'"),
        (dict(name="test:bad", layout="KJI0"), ValueError, "layout.*'KJI0'"),
        (dict(name="test:bad", layout="c"), ValueError, "layout.*'c'"),
        (dict(name="test:bad", layout=5), TypeError, "layout"),
        (dict(name="test:bad", device="tpu"), ValueError, "device.*'tpu'"),
        (dict(name="test:bad", device=1), ValueError, "device.*1"),
        (dict(name="test:bad", colour="red"), TypeError, "colour"),
        (dict(), TypeError, "name"),
    ],
    ids=lambda v: repr(v) if isinstance(v, dict) else "",
)
def test_register_preset_bad_input(kwargs, error, match, user_presets):
    user_presets.append("test:bad")
    with pytest.raises(error, match=match):
        ga.register_preset(**kwargs)
    assert "test:bad" not in ga.presets()


@pytest.mark.parametrize(
    "function, error, match",
    [
        (lambda dims: (0, 0, 1)[: len(dims)], ValueError, "layout"),
        (lambda dims: (0,), ValueError, "layout"),
        (lambda dims: "KXI", ValueError, "layout"),  # an axis order is fine, this one is not
        (lambda dims: None, TypeError, "layout"),
        (lambda dims: 1 / 0, ZeroDivisionError, "division"),
    ],
    ids=["not-a-permutation", "wrong-length", "string", "none", "raises"],
)
def test_layout_function_returning_garbage(user_presets, function, error, match):
    register(user_presets, "test:garbage", layout=function)
    with pytest.raises(error, match=match):
        ga.empty((2, 3, 4), backend="test:garbage")
    with pytest.raises(error, match=match):
        ga.plan((2, 3, 4), backend="test:garbage")


@pytest.mark.parametrize("name", [5, None, b"numpy"], ids=param_id)
def test_unregister_preset_bad_name(name):
    with pytest.raises(TypeError, match="name"):
        ga.unregister_preset(name)
