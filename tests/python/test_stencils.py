"""Built-in C stencils (gtstore.stencils) against NumPy references and the
same stencils written in GT4Py (real ones, numpy backend), on fields of every
layout and kind."""

import itertools
import warnings

import numpy as np
import pytest

import gtstore
from gtstore import Field, stencils

from conftest import ArrayOnly, WritableArrayOnly, refused

SHAPE = (14, 11, 5)
ORDERS = ["".join(p) for p in itertools.permutations("IJK")]


def lap_ref(inp):
    return inp[:-2, 1:-1] + inp[2:, 1:-1] + inp[1:-1, :-2] + inp[1:-1, 2:] - 4 * inp[1:-1, 1:-1]


def hdiff_ref(inp, coeff):
    """GT4Py's horizontal diffusion with flux limiter, on the inner
    (shape - 4) points of I and J."""
    lap = -lap_ref(inp)  # 4 inp - neighbours, on shape - 2
    flx = lap[1:, 1:-1] - lap[:-1, 1:-1]
    flx = np.where(flx * (inp[2:-1, 2:-2] - inp[1:-2, 2:-2]) > 0, 0, flx)
    fly = lap[1:-1, 1:] - lap[1:-1, :-1]
    fly = np.where(fly * (inp[2:-2, 2:-1] - inp[2:-2, 1:-2]) > 0, 0, fly)
    return inp[2:-2, 2:-2] - coeff[2:-2, 2:-2] * (
        flx[1:, :] - flx[:-1, :] + fly[:, 1:] - fly[:, :-1]
    )


def in_order(values, order):
    """`values` (I, J, K) stored in memory order `order`, as Field(..., order)."""
    axes = ["IJK".index(d) for d in order]
    return Field(np.ascontiguousarray(values.transpose(axes)), order)


def as_ijk(field):
    axes = [field.dims.index(d) for d in "IJK"]
    return np.asarray(field.array).transpose(axes)


@pytest.fixture
def rng():
    return np.random.default_rng(7)


@pytest.mark.parametrize("out_order,in_order_", list(itertools.product(ORDERS, ORDERS[:3])))
def test_laplacian_any_layout(rng, out_order, in_order_):
    inp = rng.random(SHAPE)
    out = in_order(np.full(SHAPE, -1.0), out_order)
    stencils.laplacian(out, in_order(inp, in_order_), origin=(1, 1, 0))
    result = as_ijk(out)
    np.testing.assert_allclose(result[1:-1, 1:-1], lap_ref(inp), rtol=1e-13)
    assert (result[0] == -1).all() and (result[-1] == -1).all()  # nothing outside the domain
    assert (result[:, 0] == -1).all() and (result[:, -1] == -1).all()


@pytest.mark.parametrize("order", ORDERS)
def test_hdiff_any_layout(rng, order):
    inp, coeff = rng.random(SHAPE), 0.1 * rng.random(SHAPE)
    out = in_order(np.zeros(SHAPE), order)
    stencils.hdiff(out, in_order(inp, order[::-1]), in_order(coeff, order), origin=(2, 2, 0))
    np.testing.assert_allclose(as_ijk(out)[2:-2, 2:-2], hdiff_ref(inp, coeff), rtol=1e-12)


def test_copy_storages_with_halo(rng):
    values = rng.random(SHAPE)
    inp = gtstore.from_array(values, halo=(2, 2, 0)) if hasattr(gtstore, "from_array") else gtstore.storage(values, halo=(2, 2, 0))
    out = gtstore.zeros(SHAPE, halo=(2, 2, 0), layout="KJI")
    stencils.copy(out, inp)  # origin: the lower halo; domain: up to the upper halo
    result = np.asarray(out)
    np.testing.assert_array_equal(result[2:-2, 2:-2], values[2:-2, 2:-2])
    assert result[:2].sum() == 0 and result[-2:].sum() == 0


def test_hdiff_storage_domain_from_halo(rng):
    values, coeff = rng.random(SHAPE), np.full(SHAPE, 0.05)
    inp = gtstore.storage(values, halo=(2, 2, 0))
    out = gtstore.zeros(SHAPE, halo=(2, 2, 0))
    stencils.hdiff(out, inp, gtstore.storage(coeff, halo=(2, 2, 0)))
    np.testing.assert_allclose(np.asarray(out)[2:-2, 2:-2], hdiff_ref(values, coeff), rtol=1e-12)


def test_explicit_domain(rng):
    inp = rng.random(SHAPE)
    out = np.zeros(SHAPE)
    stencils.laplacian(out, inp, origin=(1, 1, 0), domain=(3, 2, 1))
    np.testing.assert_allclose(out[1:4, 1:3, 0:1], lap_ref(inp)[0:3, 0:2, 0:1])
    assert np.count_nonzero(out) == 6


def test_errors():
    a = np.zeros(SHAPE)
    with pytest.raises(ValueError, match="inp: shares memory with the output out"):
        stencils.laplacian(a, a, origin=(1, 1, 0))
    with pytest.raises(ValueError, match="inp: dimension I: origin 0 - lower extent 1"):
        stencils.laplacian(a, np.zeros(SHAPE))
    with pytest.raises(TypeError, match="coeff: dtype float32"):
        stencils.hdiff(a, np.zeros(SHAPE), np.zeros(SHAPE, "f4"), origin=(2, 2, 0))
    with pytest.raises(TypeError, match="missing field 'coeff'"):
        stencils.hdiff(a, np.zeros(SHAPE))
    with pytest.raises(ValueError, match="inp: the origin point's address is not a multiple of 8"):
        raw = np.zeros(8 * 14 * 11 * 5 + 8, np.uint8)[4:-4].view("f8").reshape(SHAPE)
        stencils.laplacian(a, raw, origin=(1, 1, 0))
    assert stencils.signature("hdiff").fields == ("out", "inp", "coeff")
    with pytest.raises(ValueError, match="stencil"):
        stencils.signature("nope")


def test_written_storage_is_marked_for_sync(rng):
    """The written field is touched (its host side marked written)."""
    inp = gtstore.storage(rng.random(SHAPE), halo=(1, 1, 0))
    out = gtstore.zeros(SHAPE, halo=(1, 1, 0))
    stencils.laplacian(out, inp)
    assert np.asarray(out)[5, 5, 2] != 0


@pytest.fixture
def emulated_gpu():
    gtstore.use_gpu("emulated")
    yield
    gtstore.use_gpu(None)


def test_copy_in_copy_out_for_device_only_storages(emulated_gpu):
    """Storages with no host buffer, on a host stencil: copied in, and the
    written one copied back, with a warning each (GDP-3's final text)."""
    rng = np.random.default_rng(5)
    values = rng.random(SHAPE)
    inp = gtstore.storage(values, halo=(1, 1, 0), device="gpu", managed=None)
    out = gtstore.zeros(SHAPE, halo=(1, 1, 0), device="gpu", managed=None)
    assert out.data is None  # no host side
    with pytest.warns(gtstore.FieldWarning) as caught:
        stencils.laplacian(out, inp)
    messages = sorted(str(w.message) for w in caught)
    assert messages[0].startswith("inp: no buffer on the cpu, where the stencil computes: "
                                  "copied to host memory (slow")
    assert "out: no buffer on the cpu" in messages[1] and "and back after the run" in messages[1]
    result = out.to_ndarray()
    np.testing.assert_allclose(result[1:-1, 1:-1], lap_ref(values), rtol=1e-13)
    assert (result[0] == 0).all()
    # a failing run copies nothing back
    before = out.to_ndarray().copy()
    with refused(ValueError, "inp: dimension I"):
        stencils.laplacian(out, inp, origin=(0, 0, 0))
    np.testing.assert_array_equal(out.to_ndarray(), before)


ASSIGNED = (r"^out: read through __array__, whose array may be a copy: its values assigned "
            r"to the object \(obj\[\.\.\.\] = values\) after the run \(slow: a copy on every "
            r"call\)$")


@pytest.mark.parametrize("shared", [False, True], ids=["copies", "shares"])
def test_array_only_objects_as_fields(rng, shared):
    """Objects that only speak __array__ (whatever np.asarray understands,
    spec 004): read through NumPy, the written one's values assigned back
    to it after the run (obj[...] = values) with a FieldWarning (a copy on
    every call), whether its __array__ copies or not; read ones warn of
    nothing."""
    values = rng.random(SHAPE)
    inp = ArrayOnly(values.copy(), shared=shared)
    out = WritableArrayOnly(np.zeros(SHAPE), shared=shared)
    with pytest.warns(gtstore.FieldWarning, match=ASSIGNED) as caught:
        stencils.laplacian(out, inp, origin=(1, 1, 0))
    assert len(caught) == 1 and out.assignments == 1
    np.testing.assert_allclose(out.values[1:-1, 1:-1], lap_ref(values), rtol=1e-13)
    assert not out.values[0].any()
    np.testing.assert_array_equal(inp.values, values)
    result = np.zeros(SHAPE)
    with warnings.catch_warnings():
        warnings.simplefilter("error", gtstore.FieldWarning)
        stencils.copy(result, inp)
    np.testing.assert_array_equal(result, values)
    # a failed check assigns nothing
    with refused(ValueError, "inp: dimension I"):
        stencils.laplacian(out, inp)
    assert out.assignments == 1


def test_written_array_only_objects_need_item_assignment(rng):
    """A written field read through __array__ whose type cannot take the
    values back is refused before anything is converted or run."""
    out = ArrayOnly(np.zeros(SHAPE))
    with refused(TypeError, r"^out: the stencil writes this field, and a field of type "
                            r"ArrayOnly is read through __array__, whose array may be a copy: "
                            r"the values would go back by item assignment \(obj\[\.\.\.\] = "
                            r"values\), which the type does not support; give it __setitem__"):
        stencils.copy(out, rng.random(SHAPE))
    assert out.conversions == 0 and not out.values.any()


@pytest.mark.parametrize("order", ["IJK", "KJI", "JKI"])
def test_tridiagonal_against_numpy_solve(order):
    rng = np.random.default_rng(11)
    shape = (5, 4, 7)
    a, c = rng.random(shape) - 0.5, rng.random(shape) - 0.5
    b, d = 3 + rng.random(shape), 10 * rng.random(shape)
    x = in_order(np.zeros(shape), order)
    stencils.tridiagonal(x, in_order(a, order[::-1]), b, in_order(c, order), d)
    result = as_ijk(x)
    for i in range(shape[0]):
        for j in range(shape[1]):
            m = np.diag(b[i, j]) + np.diag(a[i, j, 1:], -1) + np.diag(c[i, j, :-1], 1)
            np.testing.assert_allclose(result[i, j], np.linalg.solve(m, d[i, j]), rtol=1e-12)


def test_tridiagonal_domain_and_errors():
    shape = (3, 3, 6)
    a, b, c, d = np.zeros(shape), np.full(shape, 2.0), np.zeros(shape), np.ones(shape)
    x = np.full(shape, -1.0)
    stencils.tridiagonal(x, a, b, c, d, origin=(0, 0, 1), domain=(3, 3, 4))
    assert (x[:, :, 1:5] == 0.5).all() and (x[:, :, [0, 5]] == -1).all()
    with pytest.raises(ValueError, match="d: shares memory with the output x"):
        stencils.tridiagonal(x, a, b, c, x)
    with pytest.raises(TypeError, match="missing field 'd'"):
        stencils.tridiagonal(x, a, b, c)
    assert stencils.signature("tridiagonal").fields == ("x", "a", "b", "c", "d")


class ZeroStrides:
    """Zero-stride float64 memory of any shape: one element behind every index."""

    def __init__(self, shape):
        self.element = np.zeros(1)
        self.__array_interface__ = {"shape": shape, "typestr": "<f8", "version": 3,
                                    "data": (self.element.ctypes.data, False),
                                    "strides": (0,) * len(shape)}


@pytest.mark.parametrize("name, shape, origin, message", [
    ("copy", (2**61, 1, 8), (0, 0, 0), "domain: 2305843009213693952 x 1 x 8 points overflow"),
    ("tridiagonal", (2**61, 1, 8), (0, 0, 0), "domain: .* points overflow"),
    ("hdiff", (2**61, 8, 8), (2, 2, 0), "domain: .* points overflow"),
    ("tridiagonal", (2**58, 1, 8), (0, 0, 0), "tridiagonal: its scratch memory"),
    ("hdiff", (2**61, 5, 1), (2, 2, 0), "hdiff: its scratch memory"),
])
def test_sizes_that_overflow_are_refused(name, shape, origin, message):
    """Fields of zero strides bind any extent; the domain's points and the
    scratch sizes overflowed into small mallocs (a heap overflow)."""
    stencil = getattr(stencils, name)
    fields = [ZeroStrides(shape) for _ in stencils.signature(name).fields]
    with pytest.raises(ValueError, match=message):
        stencil(*fields, origin=origin)


def test_an_output_that_repeats_elements_is_refused():
    """An output whose points share memory (stride 0 over several points):
    the threads writing it would race."""
    with pytest.raises(ValueError, match=r"out: its points over the domain share memory "
                                         r"\(element strides 0, 0, 0 in I, J, K\)"):
        stencils.copy(ZeroStrides((4, 4, 4)), np.ones((4, 4, 4)))
    one = ZeroStrides((1, 1, 1))  # one point: nothing repeats
    stencils.copy(one, np.full((1, 1, 1), 3.0))
    assert one.element[0] == 3.0
