"""A tracer advected around the cubed sphere on 6 ranks (one tile each;
24 ranks: 2x2 per tile), with gtstore.distributed:

    tests/mpi/mpirun.sh 6 120 .venv/bin/python examples/cubed_sphere_advection.py

(or mpirun -n 6 python examples/cubed_sphere_advection.py). The wind is a
vector (u, v) in each tile's own frame: its exchange turns, swaps and
negates the components across the cube's edges, so that both sides of an
edge agree on the flow through it. The tracer moves by first-order upwind
fluxes; every face's flux is computed alike by the two ranks that share
it, so the total mass stays what it was (to rounding), which the program
checks, with the tracer's blob having left its tile. (A toy: cells are
unit squares, without the sphere's metric terms.)
"""

import numpy as np
from mpi4py import MPI

from gtstore import distributed as gd

N, NZ, STEPS = 24, 2, 60


def main():
    comm = MPI.COMM_WORLD
    side = int(round((comm.size // 6) ** 0.5))
    part = gd.CubedSpherePartitioner(comm, N, (side, side), halo=1, nz=NZ)
    q, u, v = (part.zeros("f8", defaults="gt:cpu_kfirst") for _ in range(3))
    # the wind in each tile's frame: along x, veering with y; the tracer: a
    # blob on tile 0
    tiles = np.arange(6)[:, None, None, None]
    x = np.arange(N)[None, :, None, None] + 0.5
    y = np.arange(N)[None, None, :, None] + 0.5
    zero = np.zeros(part.global_shape)
    wind_u = zero + 1.0 + 0.2 * np.sin(2 * np.pi * y / N)
    wind_v = zero + 0.3 * np.cos(2 * np.pi * (x / N + tiles / 6))
    blob = zero + np.exp(-((x - 0.7 * N) ** 2 + (y - 0.5 * N) ** 2) / 8.0) * (tiles == 0)
    for field, values in ((q, blob), (u, wind_u), (v, wind_v)):
        part.scatter(values if part.rank == 0 else None, field)
    wind = part.halo_exchange([u, v], components=["u", "v"])
    wind.exchange()  # once: the halo's wind, turned into this tile's frame
    tracer = part.halo_exchange([q])
    a, ua, va = np.asarray(q), np.asarray(u), np.asarray(v)
    nx, ny = part.domain_shape()[:2]
    # face velocities: the mean of the two cells, the same on both sides
    fu = 0.5 * (ua[:-1, 1:-1] + ua[1:, 1:-1])  # x faces: (nx + 1, ny)
    fv = 0.5 * (va[1:-1, :-1] + va[1:-1, 1:])  # y faces: (nx, ny + 1)
    dt = 0.4 / max(np.abs(fu).max(), np.abs(fv).max())
    dt = comm.allreduce(dt, op=MPI.MIN)
    mass0 = comm.allreduce(float(a[1:-1, 1:-1].sum()))
    for _ in range(STEPS):
        tracer.exchange()
        flux_x = np.where(fu > 0, fu * a[:-1, 1:-1], fu * a[1:, 1:-1])
        flux_y = np.where(fv > 0, fv * a[1:-1, :-1], fv * a[1:-1, 1:])
        a[1:-1, 1:-1] -= dt * (flux_x[1:] - flux_x[:-1] + flux_y[:, 1:] - flux_y[:, :-1])
    mass = comm.allreduce(float(a[1:-1, 1:-1].sum()))
    elsewhere = comm.allreduce(float(a[1:-1, 1:-1].sum()) if part.tile != 0 else 0.0)
    wind.close()
    tracer.close()
    part.close()
    if comm.rank == 0:
        change = abs(mass - mass0) / mass0
        print(f"mass {mass0:.12f} -> {mass:.12f} (relative change {change:.1e}); "
              f"{elsewhere / mass:.1%} of it left tile 0 in {STEPS} steps")
    assert abs(mass - mass0) <= 1e-12 * mass0, "mass is not conserved"
    assert elsewhere > 0.05 * mass, "the tracer did not cross a tile edge"


if __name__ == "__main__":
    main()
