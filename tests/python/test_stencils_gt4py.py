"""Built-in C stencils (gtstore.stencils) against the same stencils written
in GT4Py (real ones, numpy backend) on the same fields."""

import numpy as np
import pytest

from gtstore import stencils
from test_stencils import SHAPE  # noqa: E402

gtscript = pytest.importorskip("gt4py.cartesian.gtscript")

from gt4py.cartesian.gtscript import PARALLEL, computation, interval  # noqa: E402

F64 = gtscript.Field[np.float64]


pytestmark = pytest.mark.usefixtures("gt4py_tmp_cache")


def gt_laplacian(out: F64, inp: F64):  # noqa: ANN201
    with computation(PARALLEL), interval(...):
        out = inp[-1, 0, 0] + inp[1, 0, 0] + inp[0, -1, 0] + inp[0, 1, 0] - 4.0 * inp[0, 0, 0]  # noqa: F841


def gt_hdiff(out: F64, inp: F64, coeff: F64):  # noqa: ANN201
    with computation(PARALLEL), interval(...):
        lap = 4.0 * inp[0, 0, 0] - (inp[1, 0, 0] + inp[-1, 0, 0] + inp[0, 1, 0] + inp[0, -1, 0])
        res = lap[1, 0, 0] - lap[0, 0, 0]
        flx = 0 if (res * (inp[1, 0, 0] - inp[0, 0, 0])) > 0 else res
        res = lap[0, 1, 0] - lap[0, 0, 0]
        fly = 0 if (res * (inp[0, 1, 0] - inp[0, 0, 0])) > 0 else res
        out = inp[0, 0, 0] - coeff[0, 0, 0] * (  # noqa: F841
            flx[0, 0, 0] - flx[-1, 0, 0] + fly[0, 0, 0] - fly[0, -1, 0]
        )


def _gt4py_stencils(backend):
    return (
        gtscript.stencil(backend=backend, definition=gt_laplacian),
        gtscript.stencil(backend=backend, definition=gt_hdiff),
    )


@pytest.fixture
def rng():
    return np.random.default_rng(7)


@pytest.fixture(scope="module")
def gt4py_numpy():
    return _gt4py_stencils("numpy")


def test_same_as_gt4py(rng, gt4py_numpy):
    gt_lap, gt_hdiff = gt4py_numpy
    inp, coeff = rng.random(SHAPE), 0.1 * rng.random(SHAPE)
    ours, theirs = np.zeros(SHAPE), np.zeros(SHAPE)
    stencils.laplacian(ours, inp, origin=(1, 1, 0))
    gt_lap(theirs, inp, origin=(1, 1, 0), domain=(SHAPE[0] - 2, SHAPE[1] - 2, SHAPE[2]))
    np.testing.assert_allclose(ours, theirs, rtol=1e-13)
    ours, theirs = np.zeros(SHAPE), np.zeros(SHAPE)
    stencils.hdiff(ours, inp, coeff, origin=(2, 2, 0))
    gt_hdiff(theirs, inp, coeff, origin=(2, 2, 0), domain=(SHAPE[0] - 4, SHAPE[1] - 4, SHAPE[2]))
    np.testing.assert_allclose(ours, theirs, rtol=1e-12)
