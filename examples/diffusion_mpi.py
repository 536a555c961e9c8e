"""A few steps of a 2-d diffusion of a 3-d field on 4 ranks (any number
works), with gtstore.distributed, checked against the same steps on one
rank:

    tests/mpi/mpirun.sh 4 120 .venv/bin/python examples/diffusion_mpi.py

(or mpirun -n 4 python examples/diffusion_mpi.py). The halo exchange of
step n + 1 overlaps the update of the interior of step n.
"""

import numpy as np
from mpi4py import MPI

from gtstore import distributed as gd

SHAPE, STEPS, ALPHA = (64, 48, 10), 20, 0.1


def laplacian(a, out, region):
    """out[region] = a 5-point Laplacian of a (I, J)."""
    i, j = region
    out[i, j] = (a[i.start - 1:i.stop - 1, j] + a[i.start + 1:i.stop + 1, j]
                 + a[i, j.start - 1:j.stop - 1] + a[i, j.start + 1:j.stop + 1] - 4 * a[i, j])


def main():
    comm = MPI.COMM_WORLD
    part = gd.CartesianPartitioner(comm, SHAPE, halo=1, periodic=(True, True))
    u = part.zeros("f8", defaults="gt:cpu_kfirst")
    lap = part.zeros("f8", defaults="gt:cpu_kfirst")
    initial = None
    if part.rank == 0:  # a hot square in a cold domain
        initial = np.zeros(SHAPE)
        initial[24:40, 16:32, :] = 1.0
    part.scatter(initial, u)
    a, l = np.asarray(u), np.asarray(lap)
    ni, nj = part.domain_shape()[:2]
    inner = (slice(2, ni), slice(2, nj))          # reads no halo point
    rim = [(slice(1, 2), slice(1, nj + 1)), (slice(ni, ni + 1), slice(1, nj + 1)),
           (slice(2, ni), slice(1, 2)), (slice(2, ni), slice(nj, nj + 1))]
    with part.halo_exchange([u]) as exchange:
        for _ in range(STEPS):
            exchange.start()
            laplacian(a, l, inner)                # overlaps the messages
            exchange.wait()
            for region in rim:                    # the points next to the halo
                laplacian(a, l, region)
            a[1:-1, 1:-1] += ALPHA * l[1:-1, 1:-1]
    result = part.gather(u)
    if part.rank == 0:
        ref = initial.copy()
        for _ in range(STEPS):
            ref += ALPHA * (np.roll(ref, 1, 0) + np.roll(ref, -1, 0) + np.roll(ref, 1, 1)
                            + np.roll(ref, -1, 1) - 4 * ref)
        print(f"{comm.size} ranks, process grid {part.process_grid}, {STEPS} steps: "
              f"total heat {result.sum():.6f} (initially {initial.sum():.1f}), "
              f"max |difference to one rank| {np.abs(result - ref).max():.2e}")
        assert np.allclose(result, ref, rtol=0, atol=1e-12), "differs from one rank"
    part.close()


if __name__ == "__main__":
    main()
