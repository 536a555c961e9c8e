"""Indexing of gtstore.Storage: basic indexing as views (values, dims, halo and
aligned point of the view), advanced indexing and assignment like NumPy,
transpose, domain_view, and NumPy functions on storages (NEP 18).

The expected halo, dims and aligned point of a view are computed here by a
brute-force model of the rules (DESIGN.md section 4, include/gtstore/storage.h),
never from gtstore's own output; the expected values are NumPy's for the same
key on ``np.asarray(s)``.
"""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as npst

import gtstore
from conftest import (
    BothEntries,
    DataInterface,
    DTYPES,
    address,
    address_of,
    distinct_values,
    filled,
    live,
    normalize_key,
    gpu_entry,
    param_id,
)

# ---- helpers ------------------------------------------------------------------


def next_data_dim(dims):
    """The label None inserts: the next data dimension number."""
    numbers = [int(d) for d in dims if d.isdigit()]
    return str(max(numbers) + 1 if numbers else 0)


def data_dims_are_dense(dims):
    numbers = sorted(int(d) for d in dims if d.isdigit())
    return numbers == list(range(len(numbers)))


def halo_of_slice(n, lo, hi, selected, step):
    """The halo of a sliced dimension: the selected indices that lie in the
    original halo, counted on the side where the view has them."""
    below = sum(1 for i in selected if i < lo)
    above = sum(1 for i in selected if i >= n - hi)
    return (below, above) if step > 0 else (above, below)


def expected_view(parent, key):
    """(dims, halo, aligned index or None) of parent[key] from the rules.

    The aligned index is given where the view contains the parent's aligned
    point (it must then be that point, translated); None otherwise. ``dims``
    holds None for a label that None inserted where the next free number is
    ambiguous (the parent's data dims are not 0, 1, ..., k-1). New axes are
    labelled after the indexed dims are gone, left to right, whatever the
    order of the key's items (s[None, ..., 0] and s[..., 0][None] agree)."""
    shape, dims, halo, aligned = parent.shape, parent.dims, parent.halo, parent.aligned_index
    items = normalize_key(key, len(shape))
    indexed = [dims[d] for d, it in enumerate(i for i in items if i is not None) if isinstance(it, int)]
    current = [label for label in dims if label not in indexed]  # for the next label
    new_dims, new_halo, new_aligned = [], [], []
    contains = True
    d = 0
    for it in items:
        if it is None:
            label = next_data_dim(current) if data_dims_are_dense(current) else None
            new_dims.append(label)
            new_halo.append((0, 0))
            new_aligned.append(0)
            current.append(label if label is not None else str(10**5 + len(current)))
            continue
        n, (lo, hi), a = shape[d], halo[d], aligned[d]
        if isinstance(it, int):
            i = it + n if it < 0 else it
            contains = contains and i == a
        else:
            selected = list(range(*it.indices(n)))
            step = it.indices(n)[2]
            new_dims.append(dims[d])
            new_halo.append(halo_of_slice(n, lo, hi, selected, step))
            if a in selected:
                new_aligned.append(selected.index(a))
            else:
                contains = False
                new_aligned.append(None)
        d += 1
    return tuple(new_dims), tuple(new_halo), tuple(new_aligned) if contains else None


def assert_aligned_point(view, parent):
    """The aligned-point invariants of a view (storage.h)."""
    assert view.alignment_size >= 1
    assert parent.alignment_size % view.alignment_size == 0
    if view.size == 0:
        return
    assert len(view.aligned_index) == view.ndim
    assert all(0 <= i < n for i, n in zip(view.aligned_index, view.shape)), (
        view.aligned_index,
        view.shape,
    )
    addr = address_of(np.asarray(view), view.aligned_index)
    assert addr % view.alignment_size == 0, (
        f"aligned_index {view.aligned_index} at {addr:#x} is not a multiple of "
        f"{view.alignment_size}"
    )


def check_basic_view(s, key):
    """s[key] against NumPy and the rules; returns the view (or scalar)."""
    base = np.asarray(s)
    expected = base[key]
    result = s[key]
    if not isinstance(expected, np.ndarray):  # a scalar: only ints, one per dim
        assert not isinstance(result, gtstore.Storage)
        assert type(result) is type(expected)
        assert result == expected
        return result
    assert isinstance(result, gtstore.Storage), type(result)
    assert result.shape == expected.shape
    assert result.dtype == expected.dtype
    got = np.asarray(result)
    np.testing.assert_array_equal(got, expected, strict=True)
    if expected.size:
        assert address(got) == address(expected)
        assert np.shares_memory(got, base)
        for n, a, b in zip(expected.shape, got.strides, expected.strides):
            if n > 1:
                assert a == b
    dims, halo, aligned = expected_view(s, key)
    assert len(result.dims) == result.ndim
    for got_label, want in zip(result.dims, dims):
        if want is not None:
            assert got_label == want, (result.dims, dims)
        else:
            assert got_label.isdigit()
    assert len(set(result.dims)) == result.ndim, result.dims
    assert result.halo == halo, (key, s.halo, result.halo, halo)
    assert_aligned_point(result, s)
    if aligned is not None and result.size:
        assert result.aligned_index == aligned, (key, s.aligned_index, result.aligned_index)
        assert result.alignment_size == s.alignment_size
    return result


ALIGNED_KINDS = [
    dict(defaults="gt:gpu", device="cpu"),
    dict(alignment_size=64),
    dict(defaults="gt:cpu_ifirst", alignment_size=32),
    dict(defaults="gtmc"),
]

# ---- basic indexing: examples -------------------------------------------------------


def test_slice_returns_a_view_sharing_memory():
    s = filled((4, 5, 6), halo=1)
    v = s[1:3, ::2, 2:]
    assert isinstance(v, gtstore.Storage)
    assert type(v) is type(s)
    assert v.shape == (2, 3, 4)
    np.asarray(v)[...] = -1.0
    assert np.all(np.asarray(s)[1:3, ::2, 2:] == -1.0)
    assert np.count_nonzero(np.asarray(s) == -1.0) == 24
    v[0, 0, 0] = 99.0
    assert np.asarray(s)[1, 0, 2] == 99.0


@pytest.mark.parametrize(
    "key",
    [
        0,
        -1,
        2,
        -4,
        np.int64(1),
        np.int32(-2),
        np.uint8(3),
        np.intp(0),
        (1, 2),
        (-1, -1),
        (np.int16(1), slice(None), -3),
    ],
    ids=param_id,
)
def test_int_index_removes_dim_label_and_halo(key):
    s = filled((4, 5, 6), dims="IJK", halo=((1, 0), (2, 1), (0, 3)))
    v = check_basic_view(s, key)
    items = key if isinstance(key, tuple) else (key,)
    kept = [
        d for d, it in enumerate(items + (slice(None),) * (3 - len(items))) if isinstance(it, slice)
    ]
    assert v.dims == tuple("IJK"[d] for d in kept)
    assert v.halo == tuple(s.halo[d] for d in kept)


def test_int_index_with_permuted_and_data_dims():
    s = filled((3, 4, 5, 2), dims=("K", "0", "I", "J"), halo=(1, 1, 1, 0))
    v = s[1]
    assert v.dims == ("0", "I", "J")
    assert v.halo == ((1, 1), (1, 1), (0, 0))
    w = s[:, 2]
    assert w.dims == ("K", "I", "J")
    assert w.halo == ((1, 1), (1, 1), (0, 0))
    np.testing.assert_array_equal(np.asarray(w), np.asarray(s)[:, 2])


@pytest.mark.parametrize(
    "dims, key, expected_dims",
    [
        ("IJK", (None,), ("0", "I", "J", "K")),
        ("IJK", (slice(None), None), ("I", "0", "J", "K")),
        ("IJK", (Ellipsis, None), ("I", "J", "K", "0")),
        ("IJK", (None, Ellipsis, None), ("0", "I", "J", "K", "1")),
        ("IJK", (None, None, 0), ("0", "1", "J", "K")),
        (("I", "0"), (None,), ("1", "I", "0")),
        (("I", "0"), (slice(None), slice(None), None), ("I", "0", "1")),
        (("0", "1"), (None, 0), ("2", "1")),
        (("J",), (None, 1, None), ("0", "1")),
    ],
    ids=param_id,
)
def test_none_inserts_the_next_data_dim(dims, key, expected_dims):
    s = filled((4,) * len(dims), dims=dims, halo=1)
    v = s[key]
    assert v.dims == expected_dims
    np.testing.assert_array_equal(np.asarray(v), np.asarray(s)[key], strict=True)
    for d, label in enumerate(v.dims):
        if label not in dims:
            assert v.shape[d] == 1
            assert v.halo[d] == (0, 0)


def test_none_on_a_zero_dim_storage():
    s = gtstore.full((), 5.0, "f8")
    v = s[None]
    assert isinstance(v, gtstore.Storage)
    assert v.shape == (1,) and v.dims == ("0",) and v.halo == ((0, 0),)
    assert np.asarray(v)[0] == 5.0


@pytest.mark.parametrize(
    "key",
    [
        slice(None),
        slice(1, 4),
        slice(None, None, -1),
        slice(None, None, -2),
        slice(5, 0, -2),
        slice(-2, None),
        slice(-100, 100),
        slice(3, 3),
        slice(4, 1),
        slice(100, None),
        (slice(None), slice(1, -1)),
        (Ellipsis, slice(None, None, 3)),
        (Ellipsis, 1),
        (1, Ellipsis),
        (Ellipsis,),
        (1, Ellipsis, 2),
        (slice(None, None, -1), Ellipsis, slice(None, None, -1)),
        (None, 1, Ellipsis, None, slice(2, None, -1)),
        (),
    ],
    ids=param_id,
)
@pytest.mark.parametrize("kind", [dict(), *ALIGNED_KINDS], ids=param_id)
def test_basic_keys(key, kind):
    s = filled((5, 6, 7), halo=((1, 2), (2, 1), (3, 0)), **kind)
    check_basic_view(s, key)


def test_full_int_key_returns_numpy_scalar_for_every_dtype():
    for dtype in DTYPES:
        s = filled((3, 4), dtype)
        expected = np.asarray(s)[1, -1]
        result = s[1, -1]
        assert type(result) is type(expected) and result == expected, dtype
        assert type(s[np.int64(2), np.uint16(0)]) is dtype.type


def test_zero_dim_storage_keys():
    s = gtstore.full((), 3.5, "f8")
    r = s[()]
    assert type(r) is np.float64 and r == 3.5
    v = s[...]
    assert isinstance(v, gtstore.Storage) and v.shape == ()
    np.asarray(v)[...] = 7.0
    assert s[()] == 7.0


def test_int_and_ellipsis_gives_a_zero_dim_view():
    s = filled((3, 4), halo=1)
    v = s[1, 2, ...]
    assert isinstance(v, gtstore.Storage)
    assert v.shape == () and v.dims == () and v.halo == ()
    assert np.asarray(v)[()] == np.asarray(s)[1, 2]
    np.asarray(v)[()] = -5
    assert np.asarray(s)[1, 2] == -5


def test_chained_views():
    s = filled((6, 7, 8), halo=((2, 1), (1, 2), (0, 3)), defaults="gt:gpu", device="cpu")
    v = s[1:, ::-1][None, ..., 2:7:2][0, 3]
    expected = np.asarray(s)[1:, ::-1][None, ..., 2:7:2][0, 3]
    assert isinstance(v, gtstore.Storage)
    np.testing.assert_array_equal(np.asarray(v), expected, strict=True)
    assert address(np.asarray(v)) == address(expected)
    # "0" and I fixed; J reversed: (1, 2) -> (2, 1); K: 2:7:2 -> 2, 4, 6 of (0, 3) -> (0, 1)
    assert v.dims == ("J", "K")
    assert v.halo == ((2, 1), (0, 1))


def test_slice_halo_examples():
    s = filled((10,), halo=((3, 2),))
    assert s[1:9].halo == ((2, 1),)
    assert s[3:8].halo == ((0, 0),)
    assert s[::3].halo == ((1, 1),)  # 0, 3, 6, 9
    assert s[::-1].halo == ((2, 3),)
    assert s[::-3].halo == ((1, 1),)  # 9, 6, 3, 0
    assert s[8:0:-2].halo == ((1, 1),)  # 8, 6, 4, 2
    assert s[9:0:-4].halo == ((1, 1),)  # 9, 5, 1
    assert s[2::-1].halo == ((0, 3),)  # 2, 1, 0
    assert s[5:5].halo == ((0, 0),)
    assert s[:2].halo == ((2, 0),)
    assert s[9:].halo == ((0, 1),)


def test_view_keeps_the_aligned_point():
    s = gtstore.zeros((9, 8, 5), "f4", halo=((3, 1), (2, 2), 0), defaults="gt:gpu", device="cpu")
    assert s.aligned_index == (3, 2, 0)
    v = s[1:8, 2:, :]
    assert v.aligned_index == (2, 0, 0)
    assert v.alignment_size == s.alignment_size
    assert_aligned_point(v, s)
    w = s[3]
    assert w.aligned_index == (2, 0)
    assert w.alignment_size == s.alignment_size
    assert_aligned_point(w, s)


@pytest.mark.parametrize("kind", ALIGNED_KINDS, ids=param_id)
def test_views_missing_the_aligned_point_are_still_aligned(kind):
    s = gtstore.zeros((9, 8, 6), "f8", halo=((3, 1), (2, 2), (1, 1)), **kind)
    base = np.asarray(s)
    for key in [
        (slice(4, None),),
        (slice(None), slice(None), slice(2, 5)),
        (slice(None), slice(None), 0),
        (slice(None, None, -1),),
        (Ellipsis, slice(None, None, -1)),
        (Ellipsis, slice(1, None, 2)),
        (Ellipsis, slice(5, 0, -2)),
        (0, 0, 5),
        (slice(5, 6), slice(7, 8), slice(5, 6)),
    ]:
        v = s[key]
        if not isinstance(v, gtstore.Storage):
            continue
        assert_aligned_point(v, s)
        np.testing.assert_array_equal(np.asarray(v), base[key])


# ---- basic indexing: errors ------------------------------------------------------------


@pytest.mark.parametrize(
    "key, match",
    [
        (5, "out of bounds"),
        (-6, "out of bounds"),
        ((0, 6), "out of bounds"),
        ((0, 0, -8), "out of bounds"),
        (np.int64(5), "out of bounds"),
        ((0, 0, 0, 0), "too many indices"),
        ((0, Ellipsis, 0, 0, 0), "too many indices"),
        ((Ellipsis, Ellipsis), "ellipsis"),
        ((0, Ellipsis, None, Ellipsis), "ellipsis"),
        (1.0, None),
        ((0, 1.5), None),
        ("a", None),
        (("a", 0), None),
        (np.float64(1), None),
    ],
    ids=param_id,
)
def test_index_errors_like_numpy(key, match):
    s = filled((5, 6, 7))
    with pytest.raises(IndexError, match=match) as numpy_error:
        np.asarray(s)[key]
    with pytest.raises(IndexError, match=match) as ours:
        s[key]
    if match is None:
        assert type(ours.value) is type(numpy_error.value)


def test_too_many_new_axes_is_numpy_error():
    """NumPy allows 64 dimensions and raises IndexError for more."""
    s = filled((3, 4))
    key = (None,) * 63
    with pytest.raises(IndexError):
        np.asarray(s)[key]
    with pytest.raises(IndexError):
        s[key]
    v = s[(None,) * 62]
    assert v.ndim == 64
    np.testing.assert_array_equal(np.asarray(v), np.asarray(s)[(None,) * 62])


def test_slice_step_zero_is_value_error():
    s = filled((5,))
    with pytest.raises(ValueError):
        np.asarray(s)[::0]
    with pytest.raises(ValueError):
        s[::0]


def test_index_errors_on_zero_dim_and_empty():
    s = gtstore.zeros((), "f8")
    with pytest.raises(IndexError, match="too many indices"):
        s[0]
    e = gtstore.zeros((0, 3), "f8")
    with pytest.raises(IndexError, match="out of bounds"):
        e[0]
    assert e[1:].shape == (0, 3)


# ---- advanced indexing ------------------------------------------------------------------

ADVANCED_KEYS = [
    [0, 2],
    [[0, 1], [2, 3]],
    np.array([4, -1, 0]),
    np.array([], dtype=np.intp),
    (np.array([0, 1]), np.array([2, 3])),
    (slice(None), [1, 1, 0]),
    (Ellipsis, [0, -1]),
    ([0, 1], slice(1, None), [2, 3]),
    ([0, 1], None, [2, 3]),
    (slice(None, None, -1), np.array([[0], [1]]), [0, 2, 3]),
    (1, [0, 2], slice(None)),
    True,
    False,
    (Ellipsis, True),
    "mask3",
    "mask2",
    "mask1",
    ("mask1", slice(1, 3), 0),
    (slice(None), "mask-j"),
]


def resolve_key(key, base):
    """Replaces mask names by boolean masks of base."""
    masks = {
        "mask3": base > base.mean(),
        "mask2": base[..., 0] > base[..., 0].mean(),
        "mask1": np.array([True, False, True, False, True]),
        "mask-j": np.array([False, True, True, False, False, True]),
    }
    if isinstance(key, str):
        return masks[key]
    if isinstance(key, tuple):
        return tuple(masks[k] if isinstance(k, str) else k for k in key)
    return key


@pytest.mark.parametrize("key", ADVANCED_KEYS, ids=lambda k: repr(k).replace("\n", ""))
@pytest.mark.parametrize("dtype", [np.float64, np.int16, np.complex64, np.bool_], ids=str)
def test_advanced_indexing_returns_numpy_result(key, dtype):
    s = filled((5, 6, 4), dtype, halo=1, defaults="gt:cpu_ifirst")
    base = np.asarray(s)
    key = resolve_key(key, np.abs(base).astype(np.float64))
    expected = base[key]
    result = s[key]
    assert type(result) is np.ndarray
    np.testing.assert_array_equal(result, expected, strict=True)
    if result.size:
        assert not np.shares_memory(result, base)  # NumPy's advanced indexing copies


@pytest.mark.parametrize(
    "key",
    [
        [5],
        [-6],
        (slice(None), [0, 6]),
        ([0, 1], [0, 1, 2]),  # shapes do not broadcast
        np.array([True, False]),  # wrong mask length
        np.array([0.0, 1.0]),  # float arrays
        ([0], Ellipsis, Ellipsis),
    ],
    ids=param_id,
)
def test_advanced_indexing_errors_like_numpy(key):
    s = filled((5, 6))
    with pytest.raises(IndexError) as numpy_error:
        np.asarray(s)[key]
    with pytest.raises(IndexError) as ours:
        s[key]
    assert type(ours.value) is type(numpy_error.value)


@pytest.mark.parametrize(
    "key",
    [
        np.array(True),
        np.array(False),
        (np.array(True),),
        (Ellipsis, np.array(True)),
        (0, np.array(False)),
        (np.array(True), slice(1, 3)),
    ],
    ids=param_id,
)
def test_zero_dim_boolean_array_keys(key):
    """A 0-d boolean array is a boolean mask (NumPy adds a dimension of extent
    1 or 0), not an integer."""
    s = filled((3, 4))
    expected = np.asarray(s)[key]
    result = s[key]
    assert type(result) is np.ndarray
    np.testing.assert_array_equal(result, expected, strict=True)
    ref = np.asarray(s).copy()
    ref[key] = -1.0
    s[key] = -1.0
    np.testing.assert_array_equal(np.asarray(s), ref)


def test_zero_dim_boolean_array_key_of_zero_dim_storage():
    s = gtstore.full((), 4.0, "f8")
    for key in (np.array(True), np.array(False)):
        expected = np.asarray(s)[key]
        result = s[key]
        assert type(result) is np.ndarray
        np.testing.assert_array_equal(result, expected, strict=True)


@pytest.mark.parametrize(
    "key", [np.array(1), (np.array(-1), slice(None)), (1, np.array(2))], ids=param_id
)
def test_zero_dim_integer_array_keys_values(key):
    """0-d integer arrays act as integers in NumPy; whether gtstore returns a
    view or an ndarray for them is not specified, the values are."""
    s = filled((3, 4))
    expected = np.asarray(s)[key]
    result = s[key]
    np.testing.assert_array_equal(np.asarray(result), expected, strict=True)
    if not isinstance(expected, np.ndarray):
        assert type(result) is type(expected)


def test_storages_as_keys():
    """Storages of booleans or integers as keys act like the arrays they hold."""
    s = filled((3, 4))
    base = np.asarray(s)
    mask = gtstore.as_storage(distinct_values((3, 4), "i8") % 2 == 0)
    index = gtstore.as_storage(np.array([2, 0, 2]))
    for key in (mask, index, (index, slice(1, 3)), (slice(None), index[:2])):
        expected = base[
            tuple(
                np.asarray(k) if isinstance(k, gtstore.Storage) else k
                for k in (key if isinstance(key, tuple) else (key,))
            )
        ]
        result = s[key]
        assert type(result) is np.ndarray
        np.testing.assert_array_equal(result, expected, strict=True)
    ref = base.copy()
    ref[np.asarray(mask)] = -1.0
    s[mask] = -1.0
    np.testing.assert_array_equal(np.asarray(s), ref)


# ---- assignment ----------------------------------------------------------------------------

SETITEM_CASES = [
    ((), 7),
    ((Ellipsis,), 1.5),
    (0, 2.0),
    (-1, np.float32(3.0)),
    ((1, 2, 3), -1),
    ((slice(None), 1), np.arange(4.0)),  # broadcast over I
    ((slice(1, 3),), [[1.0], [2.0], [3.0], [4.0], [5.0]]),  # lists broadcast too
    ((slice(None, None, -1), Ellipsis, slice(None, None, 2)), np.arange(2.0)),
    ((None, slice(1, 2)), np.ones((1, 1, 5, 1))),
    ([0, 2], 9.0),
    (([0, 1], [1, 2]), [[10.0], [20.0]]),
    ((slice(None), [4, 0]), np.arange(8.0).reshape(1, 2, 4)),
    (([2, 0, 2], slice(None), [1]), np.arange(15.0).reshape(3, 5)),
    ("mask", 0.0),
    ("mask", "values"),
    ((Ellipsis, [True, False, True, True]), 1.0),
]


def setitem_value(value, base, key):
    if isinstance(value, str):
        return np.arange(np.count_nonzero(key), dtype=np.float64)
    return value


@pytest.mark.parametrize("key, value", SETITEM_CASES, ids=param_id)
@pytest.mark.parametrize("kind", [dict(), dict(defaults="gt:gpu", device="cpu")], ids=param_id)
def test_setitem_like_numpy(key, value, kind):
    s = filled((3, 5, 4), halo=1, **kind)
    expected = np.asarray(s).copy()
    if isinstance(key, str):
        key = expected > expected.mean()
    value = setitem_value(value, expected, key)
    expected[key] = value
    s[key] = value
    np.testing.assert_array_equal(np.asarray(s), expected, strict=True)


def test_setitem_with_storages():
    s = filled((4, 5), halo=1)
    other = filled((5,), dims="J")
    expected = np.asarray(s).copy()
    expected[1:3] = np.asarray(other)
    s[1:3] = other
    np.testing.assert_array_equal(np.asarray(s), expected)
    # overlapping source and destination: NumPy's semantics (as if copied first)
    expected[1:] = expected[:-1]
    s[1:] = s[:-1]
    np.testing.assert_array_equal(np.asarray(s), expected)
    expected[...] = expected[::-1, ::-1]
    s[...] = s[::-1, ::-1]
    np.testing.assert_array_equal(np.asarray(s), expected)
    # by dims, not by position (GDP-3's first draft): a transposed view is the same field
    sq = filled((4, 4))
    ref = np.asarray(sq).copy()
    sq[...] = sq.transpose()
    np.testing.assert_array_equal(np.asarray(sq), ref)
    sq[...] = np.asarray(sq.transpose())  # an array without dims: by position
    np.testing.assert_array_equal(np.asarray(sq), ref.T)
    # a storage as an advanced key's value
    ref2 = np.asarray(s).copy()
    ref2[[0, 3]] = np.asarray(other)
    s[[0, 3]] = other
    np.testing.assert_array_equal(np.asarray(s), ref2)


def test_setitem_reads_the_data_interface():
    """A value with only __gt_data_interface__ was an object NumPy could not
    convert. Without dims it goes by position (NumPy's broadcasting and
    casting); its acquire runs once, before it is read."""
    s = filled((4, 5, 2))
    expected = np.asarray(s).copy()
    value = DataInterface(np.arange(10.0).reshape(5, 2))
    s[1] = value
    expected[1] = value.array
    np.testing.assert_array_equal(np.asarray(s), expected)
    assert value.acquired == [None]
    s[...] = value  # broadcast
    expected[...] = value.array
    np.testing.assert_array_equal(np.asarray(s), expected)
    s[[0, 2]] = DataInterface(np.arange(10, dtype="i4").reshape(5, 2))  # advanced key, cast
    expected[[0, 2]] = np.arange(10).reshape(5, 2)
    np.testing.assert_array_equal(np.asarray(s), expected)
    overlapping = DataInterface(np.asarray(s)[::-1])
    s[...] = overlapping
    expected[...] = expected[::-1].copy()
    np.testing.assert_array_equal(np.asarray(s), expected)


def test_setitem_data_interface_dims_go_by_dims():
    """Labelled by its entry, the value is a field: assigned by dims, as a
    storage value is."""
    s = filled((3, 4, 2))
    column = DataInterface(np.arange(3.0), dims="I")
    s[...] = column
    np.testing.assert_array_equal(np.asarray(s), np.broadcast_to(column.array[:, None, None], s.shape))
    transposed = DataInterface(np.arange(12.0).reshape(4, 3), dims="JI")
    s[..., 1] = transposed
    np.testing.assert_array_equal(np.asarray(s)[..., 1], transposed.array.T)
    assert column.acquired == transposed.acquired == [None]
    named = DataInterface(np.arange(6.0).reshape(3, 2), dims=("x", "y"))  # by position
    s[:, 0] = named
    np.testing.assert_array_equal(np.asarray(s)[:, 0], named.array)


def test_setitem_data_interface_errors():
    s = filled((3, 4))
    bad = DataInterface(np.ones((3, 4)))
    bad.__gt_data_interface__[None]["acquire"] = "now"
    with pytest.raises(TypeError, match=r"__gt_data_interface__\['acquire'\]"):
        s[...] = bad
    with pytest.raises(ValueError, match=r"__gt_data_interface__\[None\]\['dims'\]"):
        s[...] = DataInterface(np.ones((3, 4)), dims="IJK")

    class Raising:
        @property
        def __gt_data_interface__(self):
            raise LookupError("the getter's own")

    with pytest.raises(LookupError, match="the getter's own"):
        s[...] = Raising()


def test_setitem_takes_the_host_entry_where_the_gpu_entry_cannot_be_read():
    """GDP-3's "Choosing the Device" reads the "gpu" entry first; memory no
    device gtstore has reaches (no GPU, or not a device's) cannot be read,
    so the host entry is, and only it is acquired. Without a host entry the
    error names the "gpu" entry."""
    s = filled((4, 5))
    value = BothEntries(np.arange(20.0).reshape(4, 5), gpu_entry((4, 5)), dims="IJ")
    s[...] = value
    np.testing.assert_array_equal(np.asarray(s), value.host)
    assert value.acquired == [None]
    unlabelled = BothEntries(np.arange(5.0), gpu_entry((5,)))
    s[1:3] = unlabelled  # by position
    np.testing.assert_array_equal(np.asarray(s)[1:3], np.broadcast_to(unlabelled.host, (2, 5)))
    only_gpu = BothEntries(np.zeros((4, 5)), gpu_entry((4, 5)))
    del only_gpu.__gt_data_interface__[None]
    with pytest.raises(ValueError, match=r"^__gt_data_interface__\['gpu'\]: address 0xdead0000 is "
                                         r"not the memory of a device gtstore reaches"):
        s[...] = only_gpu
    assert only_gpu.acquired == ["gpu"]
    malformed = BothEntries(np.zeros((4, 5)), {**gpu_entry((4, 5)), "typestr": 8})
    with pytest.raises(TypeError, match=r"__gt_data_interface__\['gpu'\]\['typestr'\]"):
        s[...] = malformed  # a mistake, not a reason to read the host entry


def test_setitem_reads_the_gpu_entry_where_gtstore_has_a_gpu():
    """Which entry an empty value's is read depends on gtstore having a GPU
    (an empty array's memory is the GPU's); device memory is read there."""
    empty = BothEntries(np.zeros((0, 5)), gpu_entry((0, 5), address=0))
    filled((0, 5))[...] = empty
    assert empty.acquired == ([None] if gtstore.gpu() is None else ["gpu"])
    if gtstore.gpu() is None:
        return
    device = gtstore.storage(np.arange(20.0).reshape(4, 5), device="gpu", managed=None)
    value = BothEntries(np.zeros((4, 5)), device.__cuda_array_interface__)  # a stale host entry
    s = filled((4, 5))
    s[...] = value
    assert value.acquired == ["gpu"]
    np.testing.assert_array_equal(np.asarray(s), np.arange(20.0).reshape(4, 5))


def test_setitem_casts_like_numpy():
    s = filled((4,), "i4")
    expected = np.asarray(s).copy()
    expected[:2] = np.array([1.7, -2.7])
    s[:2] = np.array([1.7, -2.7])
    np.testing.assert_array_equal(np.asarray(s), expected, strict=True)
    b = filled((4,), "?")
    ref = np.asarray(b).copy()
    ref[...] = [0, 2, 0, 3]
    b[...] = [0, 2, 0, 3]
    np.testing.assert_array_equal(np.asarray(b), ref, strict=True)


@pytest.mark.parametrize(
    "key, value",
    [
        ((slice(None),), np.ones(3)),
        ((0,), np.ones((2, 5))),
        (([0, 1],), np.ones(3)),
        ((Ellipsis, 0), [1.0, 2.0]),
    ],
    ids=param_id,
)
def test_setitem_shape_mismatch_is_value_error(key, value):
    s = filled((4, 5))
    before = np.asarray(s).copy()
    with pytest.raises(ValueError):
        np.asarray(s).copy()[key] = value
    with pytest.raises(ValueError):
        s[key] = value
    np.testing.assert_array_equal(np.asarray(s), before)


def test_setitem_bad_keys_like_numpy():
    s = filled((4, 5))
    for key, exc in [
        (7, IndexError),
        ((0, 0, 0), IndexError),
        (1.0, IndexError),
        ("x", IndexError),
    ]:
        with pytest.raises(exc):
            np.asarray(s).copy()[key] = 0
        with pytest.raises(exc):
            s[key] = 0


@pytest.mark.parametrize("key", [0, (Ellipsis,), [0, 1], (slice(None), 1), ()], ids=param_id)
def test_setitem_on_read_only_storage(key):
    a = np.arange(6.0).reshape(2, 3)
    a.setflags(write=False)
    s = gtstore.as_storage(a)
    with pytest.raises(ValueError):
        s[key] = 1.0
    np.testing.assert_array_equal(a, np.arange(6.0).reshape(2, 3))
    with pytest.raises(ValueError):
        s[0:1][key if key != 0 else 0] = 1.0  # views stay read-only
    np.testing.assert_array_equal(a, np.arange(6.0).reshape(2, 3))


def test_del_item_is_an_error():
    s = filled((3, 4))
    before = np.asarray(s).copy()
    with pytest.raises((ValueError, TypeError)):
        del s[0]
    with pytest.raises((ValueError, TypeError)):
        del s[...]
    with pytest.raises((ValueError, TypeError)):
        del s[[0, 1]]
    np.testing.assert_array_equal(np.asarray(s), before)


def test_len_and_iteration():
    s = filled((3, 4))
    assert len(s) == 3
    rows = list(s)
    assert len(rows) == 3
    for i, row in enumerate(rows):
        np.testing.assert_array_equal(np.asarray(row), np.asarray(s)[i])
    with pytest.raises(TypeError):
        len(gtstore.zeros((), "f8"))
    with pytest.raises(TypeError, match="iteration over a 0-d storage"):  # as NumPy's, not []
        list(gtstore.zeros((), "f8"))


# ---- transpose ------------------------------------------------------------------------------


def check_transpose(s, t, order):
    assert isinstance(t, gtstore.Storage)
    assert t.shape == tuple(s.shape[i] for i in order)
    assert t.strides == tuple(s.strides[i] for i in order)
    assert t.dims == tuple(s.dims[i] for i in order)
    assert t.halo == tuple(s.halo[i] for i in order)
    assert t.aligned_index == tuple(s.aligned_index[i] for i in order)
    assert t.alignment_size == s.alignment_size
    expected = np.transpose(np.asarray(s), order)
    np.testing.assert_array_equal(np.asarray(t), expected, strict=True)
    if expected.size:
        assert np.shares_memory(np.asarray(t), np.asarray(s))


@pytest.mark.parametrize(
    "call, order",
    [
        (lambda s: s.transpose(), (2, 1, 0)),
        (lambda s: s.transpose(None), (2, 1, 0)),
        (lambda s: s.transpose((1, 0, 2)), (1, 0, 2)),
        (lambda s: s.transpose([2, 0, 1]), (2, 0, 1)),
        (lambda s: s.transpose(1, 0, 2), (1, 0, 2)),
        (lambda s: s.transpose(-1, 0, -2), (2, 0, 1)),
        (lambda s: s.transpose((np.int64(0), np.int8(2), 1)), (0, 2, 1)),
        (lambda s: np.transpose(s), (2, 1, 0)),
        (lambda s: np.transpose(s, (1, 2, 0)), (1, 2, 0)),
        (lambda s: np.transpose(s, axes=(0, -1, 1)), (0, 2, 1)),
    ],
    ids=[
        "none",
        "None",
        "tuple",
        "list",
        "varargs",
        "negative",
        "numpy-ints",
        "np.transpose",
        "np.transpose-axes",
        "np.transpose-kw",
    ],
)
def test_transpose_forms(call, order):
    s = filled(
        (4, 5, 6), halo=((1, 2), (0, 1), (3, 0)), dims="KJI", defaults="gt:gpu", device="cpu"
    )
    check_transpose(s, call(s), order)


def test_np_transpose_with_keywords_returns_a_storage():
    s = filled((2, 3, 4), halo=1)
    check_transpose(s, np.transpose(s, axes=None), (2, 1, 0))
    check_transpose(s, np.transpose(a=s), (2, 1, 0))
    check_transpose(s, np.transpose(a=s, axes=(1, 2, 0)), (1, 2, 0))


def test_transpose_of_views_and_small_ranks():
    s = filled((4, 5, 6), halo=1, alignment_size=64)
    v = s[1:, ::-2, 3]
    check_transpose(v, v.transpose(), (1, 0))
    check_transpose(v, np.transpose(v), (1, 0))
    one = filled((4,), halo=1)
    check_transpose(one, one.transpose(), (0,))
    zero = gtstore.full((), 2.0, "f8")
    t = zero.transpose()
    assert isinstance(t, gtstore.Storage) and t.shape == () and np.asarray(t)[()] == 2.0


def test_transpose_writes_through():
    s = filled((2, 3))
    t = s.transpose()
    t[2, 1] = -7.0
    assert np.asarray(s)[1, 2] == -7.0


@pytest.mark.parametrize(
    "axes",
    [(0, 0, 1), (0, 1), (0, 1, 2, 3), (0, 1, 3), (0, 1, -4), (3, 1, 0), (1, 1, -2)],
    ids=param_id,
)
def test_transpose_invalid_axes(axes):
    s = filled((2, 3, 4))
    with pytest.raises(ValueError):
        np.transpose(np.asarray(s), axes)
    with pytest.raises(ValueError):
        s.transpose(axes)
    with pytest.raises(ValueError):
        s.transpose(*axes)
    with pytest.raises(ValueError):
        np.transpose(s, axes)


# ---- domain_view -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "halo",
    [0, 1, ((1, 2), (0, 3), (2, 0)), ((3, 3), (1, 1), (0, 0)), ((6, 0), (0, 0), (0, 7))],
    ids=param_id,
)
@pytest.mark.parametrize("kind", [dict(), *ALIGNED_KINDS[:2]], ids=param_id)
def test_domain_view(halo, kind):
    s = filled((6, 5, 7), halo=halo, **kind)
    d = s.domain_view
    lo = [h[0] for h in s.halo]
    hi = [h[1] for h in s.halo]
    assert isinstance(d, gtstore.Storage)
    assert d.shape == tuple(n - a - b for n, a, b in zip(s.shape, lo, hi))
    assert d.shape == s.domain_shape
    assert d.halo == ((0, 0),) * 3
    assert d.dims == s.dims
    key = tuple(slice(a, n - b) for n, a, b in zip(s.shape, lo, hi))
    expected = np.asarray(s)[key]
    np.testing.assert_array_equal(np.asarray(d), expected, strict=True)
    if d.size:
        assert address(np.asarray(d)) == address_of(np.asarray(s), lo)
        np.asarray(d)[(0,) * 3] = -1.0
        assert np.asarray(s)[tuple(lo)] == -1.0
        assert_aligned_point(d, s)
        # the default aligned point is the first domain point, which d starts at
        assert d.aligned_index == (0, 0, 0)
        assert d.alignment_size == s.alignment_size


def test_domain_view_of_a_view():
    s = filled((8, 8), halo=2)
    v = s[1:]  # halo ((1, 2), (2, 2))
    d = v.domain_view
    assert d.shape == (4, 4)
    # slicing does not move the domain: it is s's domain, rows and columns 2..5
    np.testing.assert_array_equal(np.asarray(d), np.asarray(s)[2:6, 2:6])


# ---- NumPy functions (NEP 18) and ufuncs -----------------------------------------------------


@pytest.fixture
def pair():
    s = filled((3, 4), halo=1, defaults="gt:gpu", device="cpu")
    return s, np.asarray(s).copy()


@pytest.mark.parametrize(
    "func",
    [
        lambda x: np.sum(x),
        lambda x: np.mean(x),
        lambda x: np.concatenate([x, x]),
        lambda x: np.concatenate([x, x], axis=1),
        lambda x: np.stack([x, x]),
        lambda x: np.copy(x),
        lambda x: np.where(np.greater(x, 5), x, 0),
        lambda x: np.linalg.norm(x),
        lambda x: np.diff(x, axis=1),  # np.cumsum, np.sort: storages (test_array_methods.py)
        lambda x: np.reshape(x, (4, 3)),
        lambda x: np.ravel(x),
        lambda x: np.max(x),
        lambda x: np.argmax(x),
        lambda x: np.partition(x[::-1], 1, axis=0),
        lambda x: np.dot(x, np.ones(4)),
        lambda x: x @ np.ones(4),
    ],
    ids=[
        "sum",
        "mean",
        "concatenate",
        "concatenate-axis",
        "stack",
        "copy",
        "where",
        "norm",
        "diff",
        "reshape",
        "ravel",
        "max",
        "argmax",
        "partition",
        "dot",
        "matmul",
    ],
)
def test_numpy_functions_give_numpy_results(func, pair):
    s, a = pair
    result = func(s)
    expected = func(a)
    assert not isinstance(result, gtstore.Storage)
    assert type(result) is type(expected)
    np.testing.assert_allclose(result, expected)
    if isinstance(expected, np.ndarray):
        assert result.shape == expected.shape and result.dtype == expected.dtype


def test_numpy_predicates(pair):
    s, a = pair
    assert np.allclose(s, a)
    assert np.allclose(s, s)
    assert not np.allclose(s, a + 1)
    assert np.array_equal(s, a)
    assert np.may_share_memory(s, np.asarray(s))
    assert np.shares_memory(s, np.asarray(s))
    assert not np.may_share_memory(s, a)
    assert np.shape(s) == (3, 4)
    assert np.ndim(s) == 2
    assert np.size(s) == 12
    assert np.ndim(s[0]) == 1 and np.shape(s[:, None]) == (3, 1, 4)


def test_numpy_copy_is_independent(pair):
    s, a = pair
    c = np.copy(s)
    assert type(c) is np.ndarray
    assert not np.shares_memory(c, np.asarray(s))
    c[...] = 0
    np.testing.assert_array_equal(np.asarray(s), a)


def test_functions_write_out_storages(pair):
    s, a = pair
    out = gtstore.zeros((4,), "f8", dims="J")
    result = np.sum(s, axis=0, out=out)
    np.testing.assert_allclose(np.asarray(out), a.sum(axis=0))
    assert result is out or np.shares_memory(np.asarray(result), np.asarray(out))
    target = gtstore.zeros((3, 4), "f8")
    np.copyto(target, s)
    np.testing.assert_array_equal(np.asarray(target), a)
    np.clip(s, 2, 6, out=target)
    np.testing.assert_array_equal(np.asarray(target), np.clip(a, 2, 6))
    np.cumsum(s, axis=1, out=target)
    np.testing.assert_allclose(np.asarray(target), np.cumsum(a, axis=1))
    np.multiply(2, s, out=np.asarray(target))
    np.testing.assert_array_equal(np.asarray(target), 2 * a)


def test_ufunc_out_storage_is_written(pair):
    """A storage as a ufunc's out= is written in place (NEP 13,
    docs/storage.md "Computing with storages") and is the result."""
    s, a = pair
    target = gtstore.zeros((3, 4), "f8")
    assert np.add(s, 1, out=target) is target
    np.testing.assert_array_equal(np.asarray(target), a + 1)


def test_numpy_functions_on_read_only_storage():
    a = np.arange(6.0).reshape(2, 3)
    a.setflags(write=False)
    s = gtstore.as_storage(a)
    assert np.sum(s) == 15.0
    with pytest.raises(ValueError):
        np.copyto(s, 0.0)


# ---- hypothesis: random storages and keys ---------------------------------------------------

LABEL_SETS = {
    0: [()],
    1: [("I",), ("K",), ("0",)],
    2: [("I", "J"), ("J", "I"), ("K", "0"), ("0", "1")],
    3: [("I", "J", "K"), ("K", "J", "I"), ("I", "J", "0"), ("J", "0", "K")],
    4: [("I", "J", "K", "0"), ("0", "K", "I", "J"), ("I", "J", "0", "1")],
}

KINDS = [
    dict(),
    dict(defaults="gt:cpu_ifirst"),
    dict(defaults="gt:gpu", device="cpu"),
    dict(alignment_size=64),
    dict(defaults="gtmc"),
    dict(defaults="F"),
]


@st.composite
def storages(draw, dtypes=st.sampled_from(DTYPES)):
    shape = draw(npst.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=7))
    dtype = draw(dtypes)
    dims = draw(st.sampled_from(LABEL_SETS[len(shape)]))
    halo = []
    for n in shape:
        lo = draw(st.integers(0, n))
        hi = draw(st.integers(0, n - lo))
        halo.append((lo, hi))
    kwargs = dict(draw(st.sampled_from(KINDS)))
    if all(shape) and draw(st.booleans()):
        kwargs["aligned_index"] = tuple(draw(st.integers(0, n - 1)) for n in shape)
    s = filled(shape, dtype, dims=dims, halo=tuple(halo), **kwargs)
    assert s.halo == tuple(halo) and s.dims == dims
    return s


def basic_keys(shape):
    return npst.basic_indices(shape, min_dims=0, allow_newaxis=True, allow_ellipsis=True)


@settings(max_examples=200, deadline=None)
@given(data=st.data(), s=storages())
def test_property_basic_indexing(data, s):
    key = data.draw(basic_keys(s.shape), label="key")
    v = check_basic_view(s, key)
    if isinstance(v, gtstore.Storage) and v.ndim:
        key2 = data.draw(basic_keys(v.shape), label="key2")
        check_basic_view(v, key2)


INTEGER_TYPES = [int, np.int8, np.int16, np.int64, np.uint8, np.uint64, np.intp]


@settings(max_examples=100, deadline=None)
@given(data=st.data(), s=storages())
def test_property_integer_indices(data, s):
    """Every-dimension int keys (Python and NumPy integers, negative ones)
    give NumPy's scalar; shorter ones and ones after an Ellipsis give views."""
    if not s.ndim or not all(s.shape):
        return
    key = []
    for n in s.shape:
        i = data.draw(st.integers(-n, n - 1))
        kind = data.draw(st.sampled_from(INTEGER_TYPES))
        if kind is not int and np.dtype(kind).kind == "u" and i < 0:
            kind = int
        key.append(kind(i))
    key = tuple(key)
    check_basic_view(s, key)
    check_basic_view(s, key[:-1])
    check_basic_view(s, (Ellipsis,) + key[1:])
    check_basic_view(s, key + (Ellipsis,))


def advanced_item(draw, n):
    kind = draw(st.sampled_from(["list", "array", "mask"]))
    if kind == "list":
        return draw(st.lists(st.integers(-n, n - 1), max_size=4)) if n else []
    if kind == "array" and n:
        shape = draw(st.sampled_from([(2,), (1,), (2, 1), (0,)]))
        return draw(npst.arrays(np.intp, shape, elements=st.integers(-n, n - 1)))
    return draw(npst.arrays(np.bool_, (n,)))


@st.composite
def advanced_keys(draw, shape):
    """Keys with at least one integer array, list or boolean mask, mixed
    with ints, slices, None and Ellipsis (NumPy decides what they mean)."""
    if not shape:
        # (0-d boolean arrays: test_zero_dim_boolean_array_keys)
        return draw(st.sampled_from([True, False, np.True_, (None, True), (Ellipsis, False)]))
    if draw(st.integers(0, 5)) == 0:  # one boolean mask over several dims
        k = draw(st.integers(1, len(shape)))
        return draw(npst.arrays(np.bool_, shape[:k]))
    items = []
    for n in shape:
        kind = draw(st.sampled_from(["int", "slice", "advanced"]))
        if kind == "int" and n:
            items.append(draw(st.integers(-n, n - 1)))
        elif kind == "advanced":
            items.append(advanced_item(draw, n))
        else:
            items.append(draw(st.slices(n)))
    items = items[: draw(st.integers(1, len(items)))]
    if not any(isinstance(i, (list, np.ndarray)) for i in items):
        d = draw(st.integers(0, len(items) - 1))
        items[d] = advanced_item(draw, shape[d])
    if draw(st.booleans()):
        items.insert(draw(st.integers(0, len(items))), None)
    if draw(st.booleans()):
        items.insert(draw(st.integers(0, len(items))), Ellipsis)
    return tuple(items)


@settings(max_examples=200, deadline=None)
@given(data=st.data(), s=storages())
def test_property_advanced_indexing(data, s):
    key = data.draw(advanced_keys(s.shape), label="key")
    base = np.asarray(s)
    try:
        expected = base[key]
    except Exception as error:  # noqa: BLE001 - NumPy's error is the expected one
        with pytest.raises(type(error)):
            s[key]
        return
    result = s[key]
    if isinstance(expected, np.ndarray):
        assert type(result) is np.ndarray
    np.testing.assert_array_equal(result, expected, strict=True)


def values_for(data, shape, dtype, dims=None):
    """A value to assign to a target of ``shape``: a scalar, or an array
    (ndarray, list or storage) broadcasting to it. A storage value has the
    target's ``dims`` where given (storages are assigned by dims, GDP-3's first draft),
    so that NumPy's positional assignment is the reference."""
    kind = data.draw(st.sampled_from(["scalar", "array", "list", "storage", "broadcast"]))
    dtype = np.dtype(dtype)
    if kind == "scalar" or not shape:
        return data.draw(npst.from_dtype(dtype, allow_nan=False, allow_infinity=False))
    if kind == "broadcast":
        shape = tuple(1 if data.draw(st.booleans()) else n for n in shape)
        shape = shape[data.draw(st.integers(0, len(shape))) :]
    array = data.draw(
        npst.arrays(
            dtype, shape, elements=npst.from_dtype(dtype, allow_nan=False, allow_infinity=False)
        )
    )
    if kind == "list":
        return array.tolist()
    if kind == "storage":
        labels = dims[len(dims) - array.ndim :] if dims is not None else None
        return gtstore.as_storage(np.ascontiguousarray(array), dims=labels)
    return array


@settings(max_examples=200, deadline=None)
@given(data=st.data(), s=storages(), advanced=st.booleans())
def test_property_setitem(data, s, advanced):
    if advanced:
        key = data.draw(advanced_keys(s.shape), label="key")
    else:
        key = data.draw(basic_keys(s.shape), label="key")
    expected = np.asarray(s).copy()
    try:
        target_shape = np.shape(expected[key])
    except IndexError:
        with pytest.raises(IndexError):
            s[key] = 0
        return
    target = None if advanced else s[key]
    dims = target.dims if isinstance(target, gtstore.Storage) else None
    value = values_for(data, target_shape, s.dtype, dims)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            expected[key] = value
        except Exception as error:  # noqa: BLE001
            with pytest.raises(type(error)):
                s[key] = value
            return
        s[key] = value
    np.testing.assert_array_equal(np.asarray(s), expected, strict=True)


@settings(max_examples=200, deadline=None)
@given(data=st.data(), s=storages())
def test_property_transpose(data, s):
    order = data.draw(st.permutations(range(s.ndim)))
    given_axes = tuple(a - s.ndim if data.draw(st.booleans()) else a for a in order)
    form = data.draw(st.sampled_from(["tuple", "varargs", "np"]))
    if form == "tuple":
        t = s.transpose(given_axes)
    elif form == "varargs":
        t = s.transpose(*given_axes) if given_axes else s.transpose()
    else:
        t = np.transpose(s, given_axes)
    check_transpose(s, t, tuple(order))
    assert_aligned_point(t, s)


@settings(max_examples=150, deadline=None)
@given(s=storages())
def test_property_domain_view(s):
    d = s.domain_view
    lo = [h[0] for h in s.halo]
    hi = [h[1] for h in s.halo]
    key = tuple(slice(a, n - b) for n, a, b in zip(s.shape, lo, hi))
    expected = np.asarray(s)[key + (Ellipsis,)]
    assert d.shape == expected.shape
    assert d.halo == ((0, 0),) * s.ndim
    np.testing.assert_array_equal(np.asarray(d), expected, strict=True)
    if d.size:
        assert address(np.asarray(d)) == address(expected)
    assert_aligned_point(d, s)


def test_views_release_their_buffer(baseline):
    s = filled((5, 6, 7), halo=1, defaults="gt:gpu", device="cpu")
    views = [s[1:], s[None, ..., ::-1], s.transpose(), s.domain_view, s[2, 3]]
    arrays = [np.asarray(v) for v in views]
    expected = [a.copy() for a in arrays]
    del s
    for i in range(len(arrays)):
        np.testing.assert_array_equal(arrays[i], expected[i])
    assert live()[0] == baseline[0] + 1
    del views
    assert live()[0] == baseline[0] + 1
    del arrays
    assert live() == baseline


def test_setitem_gpu_entry_dropped_while_it_is_looked_at():
    """Which entry to read is decided by reading the "gpu" entry, which runs
    the value's own code (here a shape's __index__); an entry that code
    takes out of the dict is still the one read, never memory freed under
    the reader (this crashed under AddressSanitizer with a GPU)."""
    class Extent:
        def __init__(self, value, interface):
            self.value, self.interface = value, interface

        def __index__(self):
            self.interface.pop("gpu", None)
            return self.value

    value = BothEntries(np.zeros((0, 5)), gpu_entry((0, 5), address=0))
    interface = value.__gt_data_interface__
    interface["gpu"] = {**interface["gpu"], "shape": (Extent(0, interface), 5)}
    filled((0, 5))[...] = value
    assert value.acquired == ([None] if gtstore.gpu() is None else ["gpu"])
