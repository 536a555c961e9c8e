"""Storages inside xarray (issue 22, docs/storage.md "Storages inside xarray").

xarray lines operands up by position, adding the dims one lacks by None
indexing; gtstore recognises those axes (extent 1, stride 0, a free data
dim) and lines such storages up by position. The oracle is xarray itself on
DataArrays of NumPy arrays with the same values: every result has xarray's
dims and values, and shares memory with the inputs exactly where xarray's
shares it with the NumPy inputs.
"""

import itertools
import warnings

import numpy as np
import pytest

import gtstore as gts

xr = pytest.importorskip("xarray")

EXTENTS = {"I": 3, "J": 4, "K": 5}
FIELDS = ["IJK", "IJ", "K", "I", "J"]
PAIRS = list(itertools.product(FIELDS, FIELDS))


def pair(dims_a, dims_b, seed=0):
    """(storage-backed, NumPy-backed) DataArrays of dims_a and dims_b: the
    first I-first with a halo, the second K-first."""
    rng = np.random.default_rng(seed)
    out = []
    for dims, preset, halo in ((dims_a, "gt:cpu_ifirst", 1), (dims_b, "gt:cpu_kfirst", 0)):
        values = rng.random(tuple(EXTENTS[d] for d in dims)) + 0.5
        s = gts.storage(values, dims=dims, defaults=preset, halo=(halo,) * len(dims))
        out.append((xr.DataArray(s, dims=tuple(dims)), xr.DataArray(values, dims=tuple(dims))))
    return out


def same(ours, theirs, exact=True):
    """Same dims, coordinates-free values and dtype as xarray's."""
    assert ours.dims == theirs.dims
    got, want = np.asarray(ours.values), np.asarray(theirs.values)
    assert got.dtype == want.dtype
    if exact:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-12)


def outcome(compute, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return compute(*args), None
        except Exception as error:  # noqa: BLE001 - xarray's error is the expected one
            return None, error


ELEMENTWISE = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: b - a,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "less": lambda a, b: a < b,
    "equal": lambda a, b: a == b,
    "ufunc": lambda a, b: np.maximum(a, b),
    "where": lambda a, b: xr.where(a > 0.9, a, b),
    "chain": lambda a, b: (a + b) * a - b,
}


@pytest.mark.parametrize("op", list(ELEMENTWISE))
@pytest.mark.parametrize("dims_a,dims_b", PAIRS)
def test_elementwise_like_xarray(dims_a, dims_b, op):
    """issue 22: IJK + K, IJ + J, IJ + I and I + J raised ValueError
    (ndim=5: the axes None added became dims of their own)."""
    (a, an), (b, bn) = pair(dims_a, dims_b)
    ours = ELEMENTWISE[op](a, b)
    theirs = ELEMENTWISE[op](an, bn)
    same(ours, theirs)
    if op == "where":  # np.where is no ufunc: NumPy's array, as xarray gives it
        return
    assert isinstance(ours.data, gts.Storage)
    assert ours.data.dims == tuple(str(d) for d in ours.dims)  # labels agree with xarray's


@pytest.mark.parametrize("dims_a,dims_b", PAIRS)
def test_dot_like_xarray(dims_a, dims_b):
    (a, an), (b, bn) = pair(dims_a, dims_b)
    same(xr.dot(a, b), xr.dot(an, bn), exact=False)


def shares(result, source):
    return np.shares_memory(np.asarray(result.data), np.asarray(source.data))


@pytest.mark.parametrize("combine", ["broadcast", "align", "align_outer"])
@pytest.mark.parametrize("dims_a,dims_b", PAIRS)
def test_broadcast_and_align_like_xarray(dims_a, dims_b, combine):
    """Values and dims as xarray's; memory shared with the storages where
    xarray shares it with the ndarrays (zero copy)."""
    (a, an), (b, bn) = pair(dims_a, dims_b)
    compute = {"broadcast": xr.broadcast, "align": xr.align,
               "align_outer": lambda x, y: xr.align(x, y, join="outer")}[combine]
    ours, theirs = compute(a, b), compute(an, bn)
    assert len(ours) == len(theirs) == 2
    for o, t, source, numpy_source in zip(ours, theirs, (a, b), (an, bn)):
        same(o, t)
        assert shares(o, source) == shares(t, numpy_source)
    # what they give computes like xarray's too
    same(ours[0] + ours[1], theirs[0] + theirs[1])


@pytest.mark.parametrize("dims_a,dims_b", PAIRS)
def test_concat_like_xarray(dims_a, dims_b):
    (a, an), (b, bn) = pair(dims_a, dims_b)
    for args in (dict(dim="t"), dict(dim=dims_a[0])):
        ours, error = outcome(lambda: xr.concat([a, b], **args))
        theirs, their_error = outcome(lambda: xr.concat([an, bn], **args))
        if their_error is not None:
            assert type(error) is type(their_error), (error, their_error)
            continue
        assert error is None, error
        same(ours, theirs)
    same(xr.concat([a, a + b], dim="t"), xr.concat([an, an + bn], dim="t"))


@pytest.mark.parametrize("dims_a,dims_b", PAIRS)
def test_reductions_like_xarray(dims_a, dims_b):
    (a, an), (b, bn) = pair(dims_a, dims_b)
    ours, theirs = a * b + a, an * bn + an
    for dim in list(theirs.dims) + [None, tuple(theirs.dims[:2])]:
        for name in ("sum", "mean", "max", "min", "std"):
            same(getattr(ours, name)(dim), getattr(theirs, name)(dim), exact=False)
    same((a < b).any(), (an < bn).any())
    same((a < b).all(dims_a[0]), (an < bn).all(dims_a[0]))


def test_an_axis_from_none_takes_the_label_at_its_position():
    """The rule without xarray: k[None, None, :] lines up with an IJK
    storage by position; GDP-3's first draft's by-dims rule holds everywhere else."""
    ijk = gts.storage(np.arange(60.0).reshape(3, 4, 5), dims="IJK")
    k = gts.storage(np.arange(5.0), dims="K")
    assert k[None, None, :].dims == ("0", "1", "K")
    r = ijk + k[None, None, :]
    assert r.dims == ("I", "J", "K")
    np.testing.assert_array_equal(np.asarray(r), np.asarray(ijk) + np.arange(5.0))
    j, i = gts.storage(np.arange(4.0), dims="J"), gts.storage(np.arange(3.0), dims="I")
    r = j[:, None] + i[None, :]
    assert r.dims == ("J", "I") and r.shape == (4, 3)
    # fewer dims align from the right, as NumPy's shapes
    assert (ijk + k[None]).dims == ("I", "J", "K")
    assert (ijk + j[:, None]).dims == ("I", "J", "K")
    # labels that disagree, the same labels in another order, a storage's
    # own data dim of extent 1: by dims (GDP-3's first draft)
    ij = gts.ones((3, 4), dims="IJ")
    assert (ij + gts.ones((4, 5), dims="JK")).dims == ("I", "J", "K")
    assert (ij + gts.ones((4, 3), dims="JI")).dims == ("I", "J")
    own = gts.ones((1, 4), dims="0J")
    assert (own + ij).dims == ("I", "J", "0")
