"""A fuzz test of the Python API with hypothesis (issue 8): random keyword
combinations for the creation functions of both APIs, and random chains of
views, against a NumPy model.

Each creation call draws every parameter either from its valid domain or as
one of many invalid values (wrong type, out of range, wrong length, an
unknown preset, ...), in random combinations, through either spelling of the
aliased keywords. A call whose parameters are all valid must succeed and
give what the model (conftest's helpers, DESIGN.md section 3) says: shape,
dtype, dims, halo, layout and strides, alignment and aligned index, values;
a call with an invalid parameter must raise one of the documented
exceptions, never a SystemError and never crash. The single-parameter
error cases, each message, and the fixed matrices of presets x dims are
test_arrays_errors.py's, test_storage_create.py's and test_arrays_layout.py's:
this file is about combinations.

The view chains apply up to eight operations in a row (basic keys with ints,
slices of any step, None and Ellipsis; transposes in every spelling;
domain_view; halo assignment) to a storage and to the same keys on a NumPy
array holding the same values, and check after every step the values and
shape, the halo against a model that tracks which points of each dimension
were halo, and the invariants of the view (halo within the shape, dims
distinct, the aligned point aligned and, when the view contains the
parent's, that point translated). test_storage_indexing.py checks one or two
keys against the rules; here the chains are long and mixed, and writes
through the last view must land where NumPy's do.

Whatever this test found is kept as a regression test at the end.
"""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as npst

import gtstore
import gtstore.arrays as ga
from conftest import (
    DTYPES,
    GPU_PRESETS,
    PRESETS,
    address_of,
    default_dims,
    device_address,
    distinct_values,
    expected_geometry,
    expected_layout,
    filled,
    layout_from_axes,
    normalize_key,
    preset_rule,
)

#: The exceptions bad input may raise (docs/storage.md and docs/arrays.md,
#: "Errors"); UnknownPresetError is a ValueError. NotImplementedError is
#: documented for GPU storages, RuntimeError for GPU arrays without CuPy.
ALLOWED = (ValueError, TypeError, IndexError, OverflowError, MemoryError)
GPU_ERRORS = (NotImplementedError, RuntimeError)

#: GTSTORE_FUZZ_SCALE=20 runs twenty times as many examples (a longer hunt).
SCALE = float(os.environ.get("GTSTORE_FUZZ_SCALE", "1"))
FUZZ = settings(
    max_examples=int(250 * SCALE),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def assert_clean_error(error, allowed=ALLOWED):
    """``error`` is one the documentation allows, with a message."""
    assert not isinstance(error, SystemError), repr(error)
    assert isinstance(error, allowed), repr(error)
    if not isinstance(error, MemoryError):  # (NumPy's own MemoryError() has none)
        assert str(error), f"{type(error).__name__} without a message"


# ---- strategies for one parameter: (value, valid) ------------------------------------------

LABEL_POOL = ("I", "J", "K")


@st.composite
def shapes(draw):
    """(shape argument, the shape it means or None, valid)."""
    ndim = draw(st.integers(0, 4))
    shape = tuple(draw(st.integers(0, 6)) for _ in range(ndim))
    fault = draw(st.integers(0, 9)) == 0
    if fault and ndim:
        d = draw(st.integers(0, ndim - 1))
        bad = draw(
            st.sampled_from(
                [-1, -(2**63), 2.5, "3", None, True, np.float64(2.0), 2**64, 2**100, [2]]
            )
        )
        value = list(shape)
        value[d] = bad
        return tuple(value), None, False
    if fault:  # an overflowing size: ValueError, however the extents are spelled
        big = draw(st.sampled_from([(2**62, 4), (2**40, 2**40), (2**31,) * 3, (0, 2**63, 2**62)]))
        return big, None, False
    form = draw(st.sampled_from(["tuple", "list", "numpy-ints", "array", "int"]))
    if form == "list":
        value = list(shape)
    elif form == "numpy-ints":
        value = tuple(np.int32(n) if i % 2 else np.uint8(n) for i, n in enumerate(shape))
    elif form == "array" and ndim:
        value = np.array(shape, dtype=np.int64)
    elif form == "int" and ndim == 1:
        value = shape[0]
    else:
        value = shape
    return value, shape, True


DTYPE_SPELLINGS = {
    "f8": [float, "float64", np.float64],
    "i8": [int, "i8", np.int64],
    "b1": [bool, "?", np.bool_],
    "c16": [complex, "c16", np.complex128],
}
BAD_DTYPES = ["U3", ">f8", "O", "M8[s]", "V8", "not a dtype", "g", 5, np.dtype([("a", "f4")])]


@st.composite
def dtypes(draw, allow_subarray=True):
    """(dtype argument, np.dtype or None, valid)."""
    if draw(st.integers(0, 11)) == 0:
        return draw(st.sampled_from(BAD_DTYPES)), None, False
    dtype = draw(st.sampled_from(DTYPES))
    if allow_subarray and draw(st.integers(0, 7)) == 0:
        sub = draw(st.sampled_from([(2,), (3,), (2, 1)]))
        return (dtype.str, sub), np.dtype((dtype, sub)), True
    spellings = [dtype, dtype.name] + DTYPE_SPELLINGS.get(dtype.str.lstrip("<|="), [])
    return draw(st.sampled_from(spellings)), dtype, True


@st.composite
def dims_for(draw, ndim, faults=True):
    """(dims argument or None, labels or None, valid)."""
    if draw(st.booleans()):
        return None, default_dims(ndim), True
    axes = draw(st.lists(st.sampled_from(LABEL_POOL), unique=True, max_size=min(ndim, 3)))
    ndata = ndim - len(axes)
    numbers = draw(
        st.sampled_from(
            [
                list(range(ndata)),
                list(range(1, ndata + 1)),
                list(range(ndata))[::-1],
                [5, 2, 9, 7][:ndata],
            ]
        )
    )
    labels = draw(st.permutations(axes + [str(n) for n in numbers]))
    labels = tuple(labels[:ndim])
    if len(labels) < ndim:  # (a sampled numbering was too short)
        labels += tuple(str(20 + i) for i in range(ndim - len(labels)))
    valid = True
    if faults and draw(st.integers(0, 7)) == 0:
        valid = False
        kind = draw(st.sampled_from(["long", "short", "dup", "unknown", "leading-zero", "type"]))
        if kind == "long":
            labels = labels + ("8",)
        elif kind == "short" and ndim and not (ndim == 3 and set(labels) <= set("IJK")):
            labels = labels[:-1]  # (of I, J and K, fewer read a 3-d shape in IJK order)
        elif kind == "dup" and ndim >= 2:
            labels = (labels[1],) + labels[1:]
        elif kind == "unknown" and ndim:
            labels = labels[:-1] + (draw(st.sampled_from(["x", "i", "-1", "", "IJ"])),)
        elif kind == "leading-zero" and ndim:
            labels = labels[:-1] + ("01",)
        elif kind == "type":
            return draw(st.sampled_from([5, 2.5, b"IJ", [1, 2], object()])), None, False
        else:  # (a kind that needs more dims than there are): one label too many
            labels = labels + ("I" if "I" not in labels else "J",)
    as_string = all(len(label) == 1 for label in labels) and draw(st.booleans())
    value = "".join(labels) if as_string else draw(st.sampled_from([tuple, list]))(labels)
    return value, labels if valid else None, valid


@st.composite
def alignments(draw, itemsize):
    """(alignment_size argument or None, valid)."""
    if draw(st.booleans()):
        return None, True
    if draw(st.integers(0, 5)) == 0:
        bad = [0, -itemsize, 2**64, 2**100, -(2**100), 1.5, "8", None]
        if itemsize > 1:
            bad.append(2 * itemsize + 1)  # neither divides the other
        value = draw(st.sampled_from(bad))
        return value, value is None
    divisors = [d for d in range(1, itemsize + 1) if itemsize % d == 0]
    multiples = [itemsize * k for k in (1, 2, 3, 4, 8, 12, 32, 64)]
    value = draw(st.sampled_from(divisors + multiples))
    return (np.int64(value) if draw(st.integers(0, 4)) == 0 else value), True


@st.composite
def aligned_indices(draw, shape, faults=True):
    """(aligned_index argument or None, index or None, valid)."""
    if draw(st.booleans()):
        return None, None, True
    index = [draw(st.integers(0, max(n - 1, 0))) for n in shape]
    if faults and draw(st.integers(0, 5)) == 0:
        kind = draw(st.sampled_from(["outside", "negative", "length", "type"]))
        if kind == "outside" and shape:
            d = draw(st.integers(0, len(shape) - 1))
            index[d] = max(shape[d], 1) + draw(st.integers(0, 2))
        elif kind == "negative" and shape:
            index[draw(st.integers(0, len(shape) - 1))] = -1
        elif kind == "type" and shape:
            index[0] = draw(st.sampled_from([1.0, "0", None, 2**70]))
        else:  # (3 entries for a 2-d field may be IJK-ordered ones: one more)
            index += [0] * (2 if len(shape) == 2 else 1)
        return tuple(index), None, False
    return tuple(index), tuple(index), True


@st.composite
def halos(draw, shape, faults=True):
    """(halo argument or None, normalized halo, valid)."""
    if draw(st.booleans()):
        return None, tuple((0, 0) for _ in shape), True
    entries, halo = [], []
    for n in shape:
        lo = draw(st.integers(0, n))
        hi = draw(st.integers(0, n - lo))
        if lo == hi and draw(st.booleans()):
            entries.append(lo)
        else:
            entries.append((lo, hi))
        halo.append((lo, hi))
    value = draw(st.sampled_from([tuple, list]))(entries)
    if faults and draw(st.integers(0, 5)) == 0:
        kind = draw(st.sampled_from(["too-big", "negative", "length", "bare-int", "triple"]))
        if kind == "too-big" and shape:
            d = draw(st.integers(0, len(shape) - 1))
            value = list(entries)
            value[d] = (shape[d], 1)
        elif kind == "negative" and shape:
            value = list(entries)
            value[0] = (-1, 0)
        elif kind == "bare-int":
            value = 1
        elif kind == "triple" and shape:
            value = list(entries)
            value[0] = (0, 0, 0)
        else:  # (3 entries for a 2-d field may be IJK-ordered ones: one more)
            value = list(entries) + [(0, 0)] * (2 if len(shape) == 2 else 1)
        return value, None, False
    return value, tuple(halo), True


@st.composite
def layouts(draw, labels, faults=True):
    """(layout argument or None, expected layout or None (not predicted), valid)."""
    n = len(labels)
    kinds = ["none", "none", "tuple", "axes", "callable"] + (["bad"] if faults else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "none":
        return None, None, True
    if kind == "tuple":
        perm = tuple(draw(st.permutations(range(n))))
        return draw(st.sampled_from([tuple, list]))(perm), perm, True
    if kind == "axes" and all(len(label) == 1 for label in labels):
        axes = [label for label in labels if not label.isdigit()]
        data = [label for label in labels if label.isdigit()]
        extra = draw(st.lists(st.sampled_from(data), unique=True)) if data else []
        order = draw(st.permutations(axes + extra))
        axes = "".join(order)
        return axes, layout_from_axes(axes, labels), True
    if kind == "callable":
        perm = tuple(draw(st.permutations(range(n))))
        return (lambda dims, perm=perm: perm), perm, True
    bad = [
        (0,) * (n + 1),
        tuple(range(n + 1 + (n == 2))),  # (3 ranks for a 2-d field may be IJK-ordered ones)
        "C",
        "F",
        "X",
        5,
        2.5,
        lambda dims: 5,
        lambda dims: (0,) * (n + 1),
    ]
    if n >= 2:
        bad.append((0,) * n)
    if n >= 1:
        bad.append(tuple(range(1, n + 1)))
    return draw(st.sampled_from(bad)), None, False


def fill_values(dtype):
    """(valid fill values, invalid ones) for a dtype."""
    good = [0, 1, 7, True, np.int8(3)]
    if dtype.kind in "fc":
        good += [2.5, -0.5, np.float32(1.25)]
    if dtype.kind == "c":
        good += [1 - 2j]
    bad = ["1", None, [1, 2], object()]
    if dtype.kind in "iu":
        bad += [2**64, -(2**64)]
    if dtype.kind == "u":
        bad += [-1]
    if dtype.kind in "iuf":
        bad += [1j]  # an imaginary part no real dtype holds
    if dtype.kind == "b":
        good += [1j]  # nonzero is True, as NumPy casts it
    return good, bad


# ---- the creation fuzz -----------------------------------------------------------------------

STORAGE_FUNCTIONS = ("empty", "zeros", "ones", "full")
ARRAY_FUNCTIONS = ("empty", "zeros", "ones", "full", "plan")


@st.composite
def creation_calls(draw):
    api = draw(st.sampled_from(["storage", "arrays"]))
    name = draw(st.sampled_from(STORAGE_FUNCTIONS if api == "storage" else ARRAY_FUNCTIONS))
    valid = True
    shape_arg, shape, ok = draw(shapes())
    valid &= ok
    dtype_arg, dtype, ok = draw(dtypes())
    valid &= ok
    base_ndim = len(shape) if shape is not None else 2
    base_shape = shape if shape is not None else (3,) * base_ndim
    kwargs = {}
    model = dict(api=api, name=name, shape=shape, dtype=dtype)

    # (with a subarray dtype, dims, halo and aligned_index may also cover the
    # appended dims: no faults drawn for them there)
    faults = not (dtype is not None and dtype.shape)
    dims_arg, labels, ok = draw(dims_for(base_ndim, faults=faults))
    valid &= ok
    if dims_arg is not None:
        keys = ["dims", "axes"] if api == "storage" else ["dims", "dimensions"]
        key = draw(st.sampled_from(keys + ["both"]))
        if key == "both":
            kwargs[keys[0]] = dims_arg
            kwargs[keys[1]] = dims_arg
        else:
            kwargs[key] = dims_arg
    model["labels"] = labels

    preset = None
    gpu = False
    if draw(st.booleans()):
        if draw(st.integers(0, 9)) == 0:
            preset_arg = draw(st.sampled_from(["nope", "", "GT:GPU", 5, None]))
            valid &= preset_arg is None
        else:
            preset_arg = preset = draw(st.sampled_from(PRESETS))
        key = draw(st.sampled_from(["defaults", "backend"]))
        kwargs[key] = preset_arg
    model["preset"] = preset

    device = draw(st.sampled_from([None, None, None, "cpu", "gpu", "tpu"]))
    if device is not None or (preset in GPU_PRESETS and draw(st.integers(0, 3)) == 0):
        kwargs["device"] = device
    if device == "tpu":
        valid = False
    wants_gpu = device == "gpu" or (preset in GPU_PRESETS and device is None)
    if wants_gpu and name != "plan":
        gpu = True
    model["gpu"] = gpu

    itemsize = dtype.base.itemsize if dtype is not None else 8
    alignment_arg, ok = draw(alignments(itemsize))
    valid &= ok
    if alignment_arg is not None or draw(st.integers(0, 5)) == 0:
        kwargs["alignment_size"] = alignment_arg
    model["alignment"] = int(alignment_arg) if ok and alignment_arg is not None else None

    index_arg, index, ok = draw(aligned_indices(base_shape, faults=faults))
    valid &= ok
    if index_arg is not None:
        kwargs["aligned_index"] = index_arg
    model["aligned_index"] = index

    if api == "storage":
        halo_arg, halo, ok = draw(halos(base_shape, faults=faults))
        valid &= ok
        if halo_arg is not None:
            kwargs["halo"] = halo_arg
        model["halo"] = halo
    elif draw(st.integers(0, 15)) == 0:
        kwargs["halo"] = ((0, 0),) * base_ndim  # not a keyword of gtstore.arrays
        valid = False

    layout_arg, layout, ok = draw(
        layouts(labels if labels is not None else default_dims(base_ndim), faults=faults)
    )
    valid &= ok
    if layout_arg is not None:
        kwargs["layout"] = layout_arg
    model["layout"] = layout
    model["layout_given"] = layout_arg is not None

    args = [shape_arg]
    if name == "full":
        good, bad = fill_values(dtype.base if dtype is not None else np.dtype("f8"))
        if draw(st.integers(0, 7)) == 0:
            fill = draw(st.sampled_from(bad))
            valid = False
        else:
            fill = draw(st.sampled_from(good))
        model["fill"] = fill
        args.append(fill)
    if draw(st.booleans()):
        args.append(dtype_arg)
    else:
        kwargs["dtype"] = dtype_arg
    if draw(st.integers(0, 19)) == 0:
        kwargs["no_such_keyword"] = 1
        valid = False
    model["valid"] = valid
    return api, name, args, kwargs, model


def expected_labels(model):
    labels = model["labels"]
    sub = model["dtype"].shape
    if sub:
        numbers = [int(label) for label in labels if label.isdigit()]
        first = max(numbers) + 1 if numbers else 0
        labels = tuple(labels) + tuple(str(first + i) for i in range(len(sub)))
    return tuple(labels)


def check_created(result, model):
    """A successful creation against the model."""
    api, name, dtype = model["api"], model["name"], model["dtype"]
    base = dtype.base
    shape = tuple(model["shape"]) + dtype.shape
    labels = expected_labels(model)
    preset = model["preset"]
    if model["alignment"] is not None:
        alignment = model["alignment"]
    elif preset is not None:
        alignment = preset_rule(preset)[0] * base.itemsize
    else:
        alignment = 1
    halo = model.get("halo") or tuple((0, 0) for _ in model["shape"])
    halo = tuple(halo) + ((0, 0),) * len(dtype.shape)
    if model["aligned_index"] is not None:
        index = tuple(model["aligned_index"]) + (0,) * len(dtype.shape)
    elif api == "storage":
        index = tuple(min(lo, max(n - 1, 0)) for n, (lo, _) in zip(shape, halo))
    else:
        index = (0,) * len(shape)
    # the layout: predicted unless a subarray dtype extends it
    layout = None
    if not dtype.shape:
        if model["layout"] is not None:
            layout = tuple(model["layout"])
        elif not model["layout_given"]:
            if preset is not None:
                layout = expected_layout(preset_rule(preset)[1], labels)
            else:
                layout = tuple(range(len(shape)))

    if name == "plan":
        assert isinstance(result, ga.Plan)
        assert result.shape == shape
        assert result.dtype == base
        assert result.dims == labels
        assert result.alignment_size == alignment
        assert result.aligned_index == index
        if layout is not None:
            assert result.layout == layout
        assert (
            result.strides == expected_geometry(shape, result.layout, base.itemsize, alignment)[1]
        )
        if math.prod(shape):
            for block in (0, 8, 4096 + 24):
                offset = result.offset(block)
                point = block + offset + sum(i * s for i, s in zip(index, result.strides))
                assert point % alignment == 0
                assert offset + result.span <= result.nbytes
        return

    if api == "storage":
        assert isinstance(result, gtstore.Storage), type(result)
        assert result.dims == labels
        assert result.halo == halo
        assert result.alignment_size == alignment
        assert result.defaults == preset
        assert len(result.layout) == len(shape)
        if layout is not None and min(shape, default=2) >= 2:
            assert result.layout == layout
        assert (
            result.strides == expected_geometry(shape, result.layout, base.itemsize, alignment)[1]
        )
        if math.prod(shape):
            assert result.aligned_index == index
        for (lo, hi), n in zip(result.halo, result.shape):
            assert 0 <= lo and 0 <= hi and lo + hi <= n
        array = result.to_numpy()
    else:
        assert type(result) is np.ndarray, type(result)
        array = result
    assert array.shape == shape
    assert array.dtype == base
    if layout is not None:
        assert array.strides == expected_geometry(shape, layout, base.itemsize, alignment)[1]
    if array.size:
        # a GPU storage is aligned where kernels read it, on the device (its
        # host side is only as aligned as host blocks are)
        address = (device_address(result) + sum(i * s for i, s in zip(index, result.strides))
                   if api == "storage" and model["gpu"] else address_of(array, index))
        assert address % alignment == 0, (index, alignment, array.strides)
    if name in ("zeros", "ones", "full"):
        fill = {"zeros": 0, "ones": 1}.get(name, model.get("fill"))
        expected = np.full(shape, fill, base)
        np.testing.assert_array_equal(array, expected, strict=True)
    if array.size:  # writable over all of it
        array[...] = 1
        assert array.all()


@FUZZ
@given(creation_calls())
def test_fuzz_creation_keyword_combinations(call):
    api, name, args, kwargs, model = call
    module = gtstore if api == "storage" else ga
    function = getattr(module, name)
    gpu = gtstore.gpu()
    try:
        result = function(*args, **kwargs)
    except Exception as error:  # noqa: BLE001 - judged below
        # a GPU request fails without a GPU, and GPU arrays (gtstore.arrays) without CuPy
        if model["valid"] and (not model["gpu"] or (gpu is not None and api == "storage")):
            raise AssertionError(f"a valid call raised {error!r}") from error
        assert_clean_error(error, ALLOWED + (GPU_ERRORS if model["gpu"] else ()))
        return
    assert model["valid"], f"an invalid call succeeded: {name}({args}, {kwargs}) -> {result!r}"
    if model["gpu"]:
        assert gpu is not None, "a GPU request gave a result without a GPU"
        if api != "storage":  # a CuPy array
            expected = tuple(model["shape"]) + model["dtype"].shape
            assert result.__cuda_array_interface__["shape"] == expected
            return
        assert result.device == gpu["name"]  # a storage on the GPU, with a host side
    check_created(result, model)


# ---- templates and wrapped data ---------------------------------------------------------------


@st.composite
def templates(draw):
    """A NumPy array of random order and strides, or a storage."""
    shape = tuple(draw(st.lists(st.integers(0, 5), max_size=4)))
    dtype = draw(st.sampled_from(DTYPES))
    data = distinct_values(shape, dtype)
    kind = draw(st.sampled_from(["C", "F", "strided", "reversed", "transposed", "storage"]))
    if kind == "F":
        data = np.asfortranarray(data)
    elif kind == "strided" and shape:
        big = distinct_values(tuple(2 * n for n in shape), dtype)
        data = big[tuple(slice(None, None, 2) for _ in shape) + (Ellipsis,)]
    elif kind == "reversed":
        data = data[tuple(slice(None, None, -1) for _ in shape) + (Ellipsis,)]  # (0-d: an array)
    elif kind == "transposed":
        data = np.ascontiguousarray(data.T).T
    elif kind == "storage":
        halo = tuple((draw(st.integers(0, n // 2)), draw(st.integers(0, n // 2))) for n in shape)
        extra = draw(
            st.sampled_from(
                [{}, dict(defaults="gtmc"), dict(alignment_size=32), dict(defaults="dace:cpu")]
            )
        )
        data = filled(shape, dtype, halo=halo, **extra)
    return data


def strides_layout(strides):
    """A layout read from strides: largest stride first, ties in index order."""
    order = sorted(range(len(strides)), key=lambda d: (-abs(strides[d]), d))
    layout = [0] * len(strides)
    for rank, d in enumerate(order):
        layout[d] = rank
    return tuple(layout)


LIKE_FUNCTIONS = {
    "storage": [
        "empty_like",
        "zeros_like",
        "ones_like",
        "full_like",
        "storage",
        "as_storage",
        "from_dlpack",
    ],
    "arrays": ["empty_like", "zeros_like", "ones_like", "full_like", "from_array"],
}


@pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")  # (complex to real casts)
@FUZZ
@given(data=st.data(), template=templates(), api=st.sampled_from(["storage", "arrays"]))
def test_fuzz_templates_and_wrapping(data, template, api):
    """*_like, from_array, storage, as_storage and from_dlpack with random
    templates and random keyword combinations: a valid call gives the
    template's shape, the template's values (copies) or memory (wraps) and an
    aligned point that is aligned; a bad one raises a clean error."""
    name = data.draw(st.sampled_from(LIKE_FUNCTIONS[api]), label="function")
    function = getattr(gtstore if api == "storage" else ga, name)
    is_storage = isinstance(template, gtstore.Storage)
    tdata = template.to_numpy() if is_storage else template
    shape = tdata.shape
    wraps = name in ("as_storage", "from_dlpack")
    kwargs, valid, maybe = {}, True, wraps  # maybe: the model does not predict success
    new_dtype = None
    if not wraps and data.draw(st.booleans()):
        dtype_arg, new_dtype, ok = data.draw(dtypes(allow_subarray=False), label="dtype")
        kwargs["dtype"] = dtype_arg
        valid &= ok
    dtype = new_dtype if new_dtype is not None else tdata.dtype
    dims_arg, labels, ok = data.draw(dims_for(len(shape)), label="dims")
    if dims_arg is not None:
        kwargs["dims"] = dims_arg
        valid &= ok
        if (
            is_storage
            and name == "as_storage"
            and labels is not None
            and tuple(labels) != template.dims
        ):
            valid = False  # as_storage does not relabel
    if data.draw(st.integers(0, 3)) == 0:
        preset = data.draw(st.sampled_from(PRESETS))
        kwargs["defaults" if api == "storage" else "backend"] = preset
        if preset in GPU_PRESETS:
            kwargs["device"] = "cpu"
        maybe = maybe or is_storage or new_dtype is not None
    alignment_arg, ok = data.draw(alignments(dtype.itemsize), label="alignment_size")
    if alignment_arg is not None:
        kwargs["alignment_size"] = alignment_arg
        valid &= ok
    index_arg, index, ok = data.draw(aligned_indices(shape), label="aligned_index")
    if index_arg is not None:
        kwargs["aligned_index"] = index_arg
        valid &= ok
    if api == "storage":
        halo_arg, halo, ok = data.draw(halos(shape), label="halo")
        if halo_arg is not None:
            kwargs["halo"] = halo_arg
            valid &= ok
    layout_arg, layout, ok = data.draw(
        layouts(labels if labels is not None else default_dims(len(shape))), label="layout"
    )
    if layout_arg is not None:
        kwargs["layout"] = layout_arg
        valid &= ok
    if is_storage and new_dtype is not None and "alignment_size" not in kwargs:
        maybe = True  # the template's alignment may not suit the new itemsize
    args = [template]
    if name == "full_like":
        good, _ = fill_values(dtype)
        args.append(data.draw(st.sampled_from(good), label="fill"))
    try:
        result = function(*args, **kwargs)
    except Exception as error:  # noqa: BLE001 - judged below
        if valid and not maybe:
            raise AssertionError(f"a valid call raised {error!r}") from error
        assert_clean_error(error)
        return
    assert valid, f"an invalid call succeeded: {name}({kwargs})"
    array = result.to_numpy() if isinstance(result, gtstore.Storage) else result
    if api == "arrays":
        assert type(result) is np.ndarray
    else:
        assert isinstance(result, gtstore.Storage)
        for (lo, hi), n in zip(result.halo, result.shape):
            assert 0 <= lo and 0 <= hi and lo + hi <= n
        if labels is not None and dims_arg is not None:
            assert result.dims == tuple(labels)
        if array.size:
            assert address_of(array, result.aligned_index) % result.alignment_size == 0
        if not wraps:
            assert (
                result.strides
                == expected_geometry(shape, result.layout, dtype.itemsize, result.alignment_size)[1]
            )
            if layout is not None and min(shape, default=2) >= 2:
                assert result.layout == tuple(layout)
    assert array.shape == shape
    assert array.dtype == dtype
    if index is not None and array.size and alignment_arg is not None and ok:
        assert address_of(array, index) % int(alignment_arg) == 0
    if api == "arrays" and array.size:
        alignment = int(alignment_arg) if alignment_arg is not None else None
        preset = kwargs.get("backend")
        if alignment is None:
            alignment = preset_rule(preset)[0] * dtype.itemsize if preset else 1
        if layout is None and layout_arg is None:
            if preset is not None:
                layout = expected_layout(preset_rule(preset)[1], labels or default_dims(len(shape)))
            elif min(shape, default=0) >= 2 and len(set(map(abs, tdata.strides))) == len(shape):
                layout = strides_layout(tdata.strides)
        if layout is not None:
            assert array.strides == expected_geometry(shape, layout, dtype.itemsize, alignment)[1]
        assert address_of(array, index or (0,) * len(shape)) % alignment == 0
    if wraps:
        if array.size:
            assert np.shares_memory(array, tdata), (
                name,
                kwargs,
                tdata.__array_interface__,
                array.__array_interface__,
            )
        np.testing.assert_array_equal(array, tdata, strict=True)
    elif name in ("storage", "from_array"):
        assert not (array.size and np.shares_memory(array, tdata))
        np.testing.assert_array_equal(array, tdata.astype(dtype), strict=True)
    elif name != "empty_like":
        fill = {"zeros_like": 0, "ones_like": 1}.get(name, args[-1])
        np.testing.assert_array_equal(array, np.full(shape, fill, dtype), strict=True)


# ---- garbage in every keyword ---------------------------------------------------------------


class Index:
    """An object with __index__ (a valid integer, as NumPy takes it)."""

    def __init__(self, value):
        self.value = value

    def __index__(self):
        return self.value


class RaisingIndex:
    def __index__(self):
        raise ZeroDivisionError("from __index__")


class Sequenceish:
    def __len__(self):
        return 2

    def __getitem__(self, i):
        if i >= 2:
            raise IndexError(i)
        return 3


class BadLen:
    def __len__(self):
        return -1

    def __getitem__(self, i):
        return 1


class HugeLen:
    def __len__(self):
        return 2**62

    def __getitem__(self, i):
        if i > 3:
            raise IndexError(i)
        return 1


GARBAGE = [
    None,
    True,
    0,
    -1,
    2**20,
    2**63,
    2**64,
    -(2**63) - 1,
    2**200,
    1.5,
    float("nan"),
    float("inf"),
    1j,
    "",
    "IJK",
    "\u00e9",
    b"IJ",
    bytearray(b"x"),
    (),
    [],
    [[]],
    ((),),
    {},
    {"I": 1},
    set(),
    frozenset([1]),
    object(),
    type,
    np.array([]),
    np.array([[1, 2]]),
    np.array(3),
    np.int64(-5),
    np.float64(2.0),
    np.array(["I", "J"]),
    Index(2),
    Index(-3),
    Index(2**70),
    RaisingIndex(),
    (RaisingIndex(),),
    (Index(2), Index(3)),
    Sequenceish(),
    BadLen(),
    HugeLen(),
    range(3),
    range(-2, 2),
    iter([1, 2]),
    (1, 2, 3, 4, 5, 6, 7),
    (None,),
    ((1, 2, 3),),
    ((-1, 0),),
    ((2**63, 0),),
    lambda *a: None,
    lambda d: (0,) * 99,
    slice(1, 2),
    Ellipsis,
    NotImplemented,
]
GARBAGE_KEYWORDS = {
    "storage": [
        "dtype",
        "dims",
        "axes",
        "defaults",
        "backend",
        "halo",
        "aligned_index",
        "alignment_size",
        "layout",
        "device",
        "managed",
    ],
    "arrays": [
        "dtype",
        "dims",
        "dimensions",
        "backend",
        "defaults",
        "aligned_index",
        "alignment_size",
        "layout",
        "device",
    ],
}
#: Exceptions user code in the garbage raises, which may propagate.
USER_ERRORS = (ZeroDivisionError,)


@FUZZ
@given(
    data=st.data(),
    api=st.sampled_from(["storage", "arrays"]),
    name=st.sampled_from(["empty", "zeros", "full", "empty_like", "plan", "as_storage"]),
)
def test_fuzz_garbage_keywords(data, api, name):
    """Arbitrary objects in the shape and in up to four keywords at once:
    a result or a clean error, never a SystemError or a crash."""
    if (api, name) in (("storage", "plan"), ("arrays", "as_storage")):
        name = "zeros"
    module = gtstore if api == "storage" else ga
    function = getattr(module, name)
    if name in ("empty_like", "as_storage"):
        first = data.draw(st.sampled_from([np.zeros((2, 3)), np.zeros(4, "i2")] + GARBAGE))
    else:
        first = data.draw(st.sampled_from([(2, 3), (4,), (), 3] + GARBAGE), label="shape")
    args = [first]
    if name == "full":
        args.append(data.draw(st.sampled_from([1.0, 2] + GARBAGE), label="fill"))
    keys = data.draw(
        st.lists(st.sampled_from(GARBAGE_KEYWORDS[api]), unique=True, max_size=4), label="keys"
    )
    kwargs = {key: data.draw(st.sampled_from(GARBAGE), label=key) for key in keys}
    try:
        result = function(*args, **kwargs)
    except USER_ERRORS:
        return
    except ValueError as error:  # UnknownPresetError is a RuntimeError as well
        assert_clean_error(error)
        return
    except NotImplementedError as error:  # a GPU storage or device was asked for
        assert str(error)
        return
    except RuntimeError as error:  # GPU arrays without CuPy (UnknownPresetError is a ValueError)
        assert "GPU" in str(error) or "CuPy" in str(error), repr(error)
        return
    except Exception as error:  # noqa: BLE001
        assert_clean_error(error)
        return
    # whatever was accepted must be a sane result
    if isinstance(result, gtstore.Storage):
        array = result.to_numpy()
        for (lo, hi), n in zip(result.halo, result.shape):
            assert 0 <= lo and 0 <= hi and lo + hi <= n
        assert len(result.dims) == result.ndim == len(set(result.dims))
        if array.size:
            assert address_of(array, result.aligned_index) % result.alignment_size == 0
            if array.flags.writeable:
                array[...] = 0
    elif isinstance(result, np.ndarray) and result.size and result.flags.writeable:
        result[...] = 0


# ---- random chains of views against NumPy ---------------------------------------------------
#
# The model of a chain: a NumPy array holding the same values (a copy, so that
# writes through the views are compared too), the same keys applied to it, and
# per dimension an array of region marks (-1 lower halo, 0 domain, +1 upper
# halo) that follows the points through slices, reversals and transposes.

LABEL_SETS = {
    0: [()],
    1: [("I",), ("K",), ("3",)],
    2: [("I", "J"), ("J", "I"), ("K", "0"), ("1", "0")],
    3: [("I", "J", "K"), ("K", "J", "I"), ("I", "J", "0"), ("J", "2", "K")],
    4: [("I", "J", "K", "0"), ("0", "K", "I", "J"), ("I", "J", "0", "1")],
    5: [("I", "J", "K", "0", "1"), ("1", "K", "0", "J", "I")],
}
CHAIN_KINDS = [
    dict(),
    dict(defaults="gt:cpu_ifirst"),
    dict(defaults="gt:gpu", device="cpu"),
    dict(alignment_size=64),
    dict(alignment_size=24),
    dict(defaults="gtmc"),
    dict(defaults="F"),
    dict(defaults="dace:cpu", alignment_size=128),
]


@st.composite
def chain_roots(draw):
    shape = draw(npst.array_shapes(min_dims=0, max_dims=5, min_side=0, max_side=6))
    dtype = draw(st.sampled_from(DTYPES))
    dims = draw(st.sampled_from(LABEL_SETS[len(shape)]))
    halo = []
    for n in shape:
        lo = draw(st.integers(0, n))
        halo.append((lo, draw(st.integers(0, n - lo))))
    kwargs = dict(draw(st.sampled_from(CHAIN_KINDS)))
    if "alignment_size" in kwargs and kwargs["alignment_size"] % dtype.itemsize:
        if dtype.itemsize % kwargs["alignment_size"]:
            kwargs["alignment_size"] = 8 * dtype.itemsize
    if all(shape) and draw(st.booleans()):
        kwargs["aligned_index"] = tuple(draw(st.integers(0, n - 1)) for n in shape)
    return filled(shape, dtype, dims=dims, halo=tuple(halo), **kwargs)


def regions(n, lo, hi):
    marks = np.zeros(n, dtype=np.int8)
    marks[:lo] = -1
    marks[n - hi :] = 1 if hi else marks[n - hi :]
    return marks


def halo_from_marks(marks):
    return tuple((int((m == -1).sum()), int((m == 1).sum())) for m in marks)


def apply_key_to_marks(marks, shape, key, aligned):
    """(marks of the view, the parent's aligned point in the view or None)."""
    out, point, contains, d = [], [], aligned is not None, 0
    for it in normalize_key(key, len(shape)):
        if it is None:
            out.append(np.zeros(1, dtype=np.int8))
            point.append(0)
            continue
        m = marks[d]
        if isinstance(it, int):
            i = it + shape[d] if it < 0 else it
            contains = contains and aligned[d] == i
        else:
            selected = np.arange(shape[d])[it]
            view = m[it].copy()
            if it.indices(shape[d])[2] < 0:
                view = -view  # the view runs backwards: upper becomes lower
            out.append(view)
            if contains and aligned[d] in selected:
                point.append(int(np.flatnonzero(selected == aligned[d])[0]))
            else:
                contains = False
        d += 1
    return out, (tuple(point) if contains else None)


def check_invariants(view, parent_alignment):
    assert len(view.dims) == view.ndim == len(set(view.dims)), view.dims
    assert len(view.halo) == view.ndim
    for (lo, hi), n in zip(view.halo, view.shape):
        assert 0 <= lo and 0 <= hi and lo + hi <= n, (view.halo, view.shape)
    assert view.domain_shape == tuple(n - lo - hi for n, (lo, hi) in zip(view.shape, view.halo))
    assert view.alignment_size >= 1 and parent_alignment % view.alignment_size == 0
    if view.size:
        assert all(0 <= i < n for i, n in zip(view.aligned_index, view.shape))
        addr = address_of(np.asarray(view), view.aligned_index)
        assert addr % view.alignment_size == 0, (view.aligned_index, view.alignment_size)


@st.composite
def chain_steps(draw, shape, halo):
    kind = draw(st.sampled_from(["key", "key", "key", "transpose", "domain", "halo", "int"]))
    if kind == "key":
        return "key", draw(
            npst.basic_indices(shape, min_dims=0, allow_newaxis=True, allow_ellipsis=True)
        )
    if kind == "int" and shape and all(shape):
        d = draw(st.integers(0, len(shape) - 1))
        i = draw(st.integers(-shape[d], shape[d] - 1))
        key = [slice(None)] * d + [draw(st.sampled_from([int, np.int64, np.intp]))(i)]
        if draw(st.booleans()):
            key.append(Ellipsis)
        return "key", tuple(key)
    if kind == "transpose":
        order = draw(st.permutations(range(len(shape))))
        order = tuple(a - len(shape) if draw(st.booleans()) else a for a in order)
        form = draw(st.sampled_from(["tuple", "varargs", "np", "none"]))
        return "transpose", (form, order)
    if kind == "halo":
        entries = []
        for n in shape:
            lo = draw(st.integers(0, n))
            entries.append((lo, draw(st.integers(0, n - lo))))
        return "halo", tuple(entries)
    return "domain", None


@settings(
    max_examples=int(300 * SCALE), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(data=st.data(), root=chain_roots(), steps=st.integers(1, 8))
def test_fuzz_view_chains_against_numpy(data, root, steps):
    model_root = np.asarray(root).copy()  # the same values, other memory
    model, view = model_root, root
    marks = [regions(n, lo, hi) for n, (lo, hi) in zip(root.shape, root.halo)]
    for _ in range(steps):
        kind, arg = data.draw(chain_steps(view.shape, view.halo), label="step")
        parent_alignment = view.alignment_size
        parent_point = view.aligned_index if view.size else None
        parent_dims = view.dims
        if kind == "key":
            result = view[arg]
            expected = model[arg]
            if not isinstance(expected, np.ndarray):  # a full integer key: a scalar
                assert not isinstance(result, gtstore.Storage)
                assert type(result) is type(expected) and result == expected
                return
            marks, point = apply_key_to_marks(marks, view.shape, arg, parent_point)
            kept = [
                parent_dims[d]
                for d, it in enumerate(it for it in normalize_key(arg, view.ndim) if it is not None)
                if not isinstance(it, int)
            ]
        elif kind == "transpose":
            form, order = arg
            if form == "tuple":
                result = view.transpose(order)
            elif form == "varargs":
                result = view.transpose(*order) if order else view.transpose()
            elif form == "np":
                result = np.transpose(view, order)
            else:
                result, order = view.transpose(), tuple(range(view.ndim))[::-1]
            order = tuple(a % view.ndim for a in order) if view.ndim else ()
            expected = model.transpose(order)
            marks = [marks[a] for a in order]
            point = tuple(parent_point[a] for a in order) if parent_point is not None else None
            assert result.dims == tuple(parent_dims[a] for a in order)
            kept = None
        elif kind == "domain":
            result = view.domain_view
            key = tuple(slice(lo, n - hi) for n, (lo, hi) in zip(view.shape, view.halo))
            expected = model[key + (Ellipsis,)]
            marks = [np.zeros(n, dtype=np.int8) for n in expected.shape]
            point = None
            if parent_point is not None:
                shifted = tuple(i - lo for i, (lo, _) in zip(parent_point, view.halo))
                if all(0 <= i < n for i, n in zip(shifted, expected.shape)):
                    point = shifted
            assert result.dims == parent_dims
            kept = None
        else:  # a new halo on a fresh view (the halo of `view` itself stays)
            result = view[...]
            result.halo = arg
            expected = model[...]
            marks = [regions(n, lo, hi) for n, (lo, hi) in zip(view.shape, arg)]
            point = parent_point
            assert view.halo == halo_from_marks(
                [regions(n, lo, hi) for n, (lo, hi) in zip(view.shape, view.halo)]
            )
            kept = None
        assert isinstance(result, gtstore.Storage), type(result)
        assert result.shape == expected.shape and result.dtype == expected.dtype
        np.testing.assert_array_equal(np.asarray(result), expected, strict=True)
        assert result.halo == halo_from_marks(marks), (kind, arg, result.halo)
        if kept is not None:
            assert [d for d in result.dims if d in kept] == kept
            assert all(d.isdigit() for d in result.dims if d not in kept)
        check_invariants(result, parent_alignment)
        if point is not None and result.size:
            assert result.aligned_index == point, (kind, arg, result.aligned_index, point)
            assert result.alignment_size == parent_alignment
        if result.size:
            assert np.shares_memory(np.asarray(result), np.asarray(root))
        view, model = result, expected
    # writes through the last view land where NumPy's do
    if view.size:
        values = distinct_values(view.shape, view.dtype)
        values = ~values if values.dtype == np.bool_ else values * 3 + 5
        view[...] = values
        model[...] = values
    np.testing.assert_array_equal(np.asarray(root), model_root, strict=True)


# ---- regressions: what the fuzzing found ------------------------------------------------------


def test_function_preset_may_return_an_axis_order(user_presets):
    """`layout=` takes a callable returning ranks or an axis order such as
    "KJI" (docs/arrays.md); a registered function preset is documented as
    "any function of the dims", and its callable was refused with a
    TypeError when it returned an axis order."""
    expected = ga.empty((2, 3, 4), layout=lambda dims: "".join(reversed(dims))).strides
    assert expected == (8, 16, 48)
    user_presets.append("fuzz_axes")
    ga.register_preset("fuzz_axes", layout=lambda dims: "".join(reversed(dims)))
    assert ga.empty((2, 3, 4), backend="fuzz_axes").strides == expected
    assert gtstore.empty((2, 3, 4), defaults="fuzz_axes").strides == expected
