"""gtstore's cubed-sphere halos against pace-util 0.9.0's (the conventions
of FV3 in Python, ``pace.util.CubedSphereCommunicator``), on 6 ranks (1x1
per tile) and 24 (2x2): scalars and vector pairs, I-first and K-first
fields, every halo cell compared bit for bit (NaN where neither writes).
pace-util needs NumPy < 2: it lives in an environment of its own
(requirements-pace.txt, ./dev pace); elsewhere this module is skipped."""

import numpy as np
import pytest

from gtstore import distributed as gd

from conftest import MPI, all_ranks

pace_util = pytest.importorskip("pace.util", reason="pace-util is not installed "
                                "(requirements-pace.txt, ./dev pace)")

SIZE = MPI.COMM_WORLD.size
LAYOUT = {6: (1, 1), 24: (2, 2)}.get(SIZE)
pytestmark = pytest.mark.skipif(LAYOUT is None, reason="the cubed sphere runs on 6 or 24 ranks")


def pace_communicator(comm):
    partitioner = pace_util.CubedSpherePartitioner(pace_util.TilePartitioner(LAYOUT))
    return pace_util.CubedSphereCommunicator(comm, partitioner)


def quantity(array, h, n, nz):
    dims = [pace_util.X_DIM, pace_util.Y_DIM, pace_util.Z_DIM]
    return pace_util.Quantity(array, dims=dims, units="m", origin=(h, h, 0), extent=(n, n, nz))


@pytest.mark.parametrize("preset", ["gt:cpu_ifirst", "gt:cpu_kfirst"])
@pytest.mark.parametrize("vector", [False, True])
def test_same_halos_as_pace(comm, preset, vector, n=8, h=3, nz=4):
    part = gd.CubedSpherePartitioner(comm, n, LAYOUT, halo=h, nz=nz)
    (nx, ny) = part.domain_shape()[:2]
    rng = np.random.default_rng(3)
    G = [rng.standard_normal(part.global_shape) for _ in range(2)]
    ours = [part.full(np.nan, "f8", defaults=preset) for _ in G]
    for g, f in zip(G, ours):
        part.scatter(g if part.rank == 0 else None, f)
    theirs = [np.array(f) for f in ours]  # the same values, NumPy's C order
    components = ["u", "v"] if vector else None
    ex = part.halo_exchange(ours, components=components)
    ex.exchange()
    communicator = pace_communicator(comm)
    quantities = [quantity(a, h, nx, nz) for a in theirs]
    if vector:
        communicator.vector_halo_update(quantities[0], quantities[1], n_points=h)
    else:
        communicator.halo_update(quantities, n_points=h)
    got = [np.array(f) for f in ours]
    same = all(np.array_equal(a, q.data, equal_nan=True) for a, q in zip(got, quantities))
    same = same and not np.isnan(got[0][:h, h:h + ny]).any()  # the west halo was written
    if not same and part.rank == 0:
        a, b = got[0], quantities[0].data
        diff = np.argwhere(~((a == b) | (np.isnan(a) & np.isnan(b))))
        print(f"first differences (x, y, k): {diff[:5].tolist()}: ours "
              f"{[a[tuple(d)] for d in diff[:5]]}, pace {[b[tuple(d)] for d in diff[:5]]}")
    ex.close()
    part.close()
    all_ranks(comm, same, f"{preset}, vector {vector}: halos differ from pace-util's")


@pytest.mark.parametrize("preset", ["gt:cpu_ifirst", "gt:cpu_kfirst"])
def test_staggered_vector_as_pace(comm, preset, n=8, h=2, nz=2):
    """FV3's D-grid wind: u on the cells' y faces (x, y_interface), v on
    their x faces (x_interface, y). Random values, so that the two copies of
    every shared face differ at first. pace: synchronize_vector_interfaces
    (the rank whose south/west face it is wins), then vector_halo_update;
    gtstore: one exchange, which does both."""
    part = gd.CubedSpherePartitioner(comm, n, LAYOUT, halo=h, nz=nz)
    nx, ny = part.domain_shape()[:2]
    rng = np.random.default_rng(100 + part.rank)
    u = part.full(np.nan, "f8", defaults=preset, stagger=(0, 1))
    v = part.full(np.nan, "f8", defaults=preset, stagger=(1, 0))
    np.asarray(u.domain_view)[...] = rng.standard_normal(u.domain_view.shape)
    np.asarray(v.domain_view)[...] = rng.standard_normal(v.domain_view.shape)
    pu, pv = np.array(u), np.array(v)
    ex = part.halo_exchange([u, v], components=["u", "v"])
    ex.exchange()
    communicator = pace_communicator(comm)
    qu = pace_util.Quantity(pu, dims=[pace_util.X_DIM, pace_util.Y_INTERFACE_DIM,
                                      pace_util.Z_DIM], units="m", origin=(h, h, 0),
                            extent=(nx, ny + 1, nz))
    qv = pace_util.Quantity(pv, dims=[pace_util.X_INTERFACE_DIM, pace_util.Y_DIM,
                                      pace_util.Z_DIM], units="m", origin=(h, h, 0),
                            extent=(nx + 1, ny, nz))
    communicator.synchronize_vector_interfaces(qu, qv)
    communicator.vector_halo_update(qu, qv, n_points=h)
    got = [np.array(u), np.array(v)]
    same = [np.array_equal(a, q.data, equal_nan=True) for a, q in zip(got, (qu, qv))]
    if not all(same) and part.rank == 0:
        for name, a, b in zip("uv", got, (qu.data, qv.data)):
            diff = np.argwhere(~((a == b) | (np.isnan(a) & np.isnan(b))))
            print(f"{name}: {len(diff)} differ, first (x, y, k): {diff[:6].tolist()}: ours "
                  f"{[a[tuple(d)] for d in diff[:3]]}, pace {[b[tuple(d)] for d in diff[:3]]}")
    ex.close()
    part.close()
    all_ranks(comm, all(same), f"{preset}: staggered halos differ from pace-util's")
