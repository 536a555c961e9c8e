"""Halo exchange: gtstore against NDSL-style NumPy packing with mpi4py, and
GHEX, side by side in one run on several ranks:

    tests/mpi/mpirun.sh 4 600 .venv/bin/python bench/bench_halo.py [--quick] [--device gpu]
    tests/mpi/mpirun.sh 6 600 .venv-pace/bin/python bench/bench_halo.py --cubed-sphere

With --cubed-sphere (6 ranks: one tile each; 24: 2x2 per tile) the fields
are a cubed sphere's (gtstore.distributed.CubedSpherePartitioner), scalars
and vector pairs, against pace-util's halo updater (pace.util, from the
environment of requirements-pace.txt: ./dev pace) in the same run.

With --device gpu (a CUDA GPU and CuPy) the fields are gt:gpu storages in
device memory only, against the same exchange of host fields and an
NDSL-style update with CuPy (slices packed on the GPU into device buffers,
copied to pinned host buffers for an MPI that does not read device memory,
and back); GHEX is not run there.

Per rank three float64 fields of 128 x 128 x 80 with a halo of 3 in I and J,
periodic (every rank has 8 neighbours). Each method's halos are checked
against gtstore's before timing. Prints Markdown: the exchange time per
method (the slowest rank's mean, median over batches), the bytes moved
against a perfect exchange, the pack + unpack bandwidth (one rank, no
communication) and the weak-scaling model of docs/performance.md.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from mpi4py import MPI

from gtstore import distributed as gd

SHAPE, HALO, NFIELDS = (128, 128, 80), 3, 3


class NumpyHaloUpdater:
    """NDSL's HaloUpdater pattern: per neighbour one cached contiguous
    buffer, packed and unpacked with NumPy slices, moved by mpi4py
    Irecv/Isend (new requests every exchange). With `xp` CuPy: the buffers
    are packed on the GPU and cross through pinned host buffers."""

    def __init__(self, part, arrays, halo, xp=np):
        self.comm, self.arrays, self.xp = part.comm, arrays, xp
        self.messages = []
        for offset in [(i, j) for i in (-1, 0, 1) for j in (-1, 0, 1) if (i, j) != (0, 0)]:
            rank = part.partition.neighbor(part.rank, offset)
            send_slices, recv_slices = [], []
            for d, o in enumerate(offset):
                n = SHAPE[d]
                send_slices.append({-1: slice(halo, 2 * halo), 0: slice(halo, halo + n),
                                    1: slice(n, n + halo)}[o])
                recv_slices.append({-1: slice(0, halo), 0: slice(halo, halo + n),
                                    1: slice(n + halo, n + 2 * halo)}[o])
            send_slices, recv_slices = tuple(send_slices), tuple(recv_slices)
            size = sum(a[send_slices].size for a in arrays)
            tag = 3 * (offset[0] + 1) + offset[1] + 1
            self.messages.append((rank, tag, 8 - tag, send_slices, recv_slices,
                                  *self.buffers(size)))

    def buffers(self, size):
        """send, recv, and the host memory MPI moves them through."""
        send, recv = self.xp.empty(size), self.xp.empty(size)
        if self.xp is np:
            return send, recv, send, recv
        return send, recv, host_buffer(self.xp, size), host_buffer(self.xp, size)

    def exchange(self):
        requests = []
        for rank, _, recv_tag, _, _, _, _, _, host_recv in self.messages:
            requests.append(self.comm.Irecv(host_recv, source=rank, tag=recv_tag))
        for rank, send_tag, _, send_slices, _, send, _, host_send, _ in self.messages:
            offset = 0
            for a in self.arrays:
                part = a[send_slices]
                send[offset:offset + part.size].reshape(part.shape)[...] = part
                offset += part.size
            if send is not host_send:
                send.get(out=host_send)  # synchronises CuPy's stream
            requests.append(self.comm.Isend(host_send, dest=rank, tag=send_tag))
        MPI.Request.Waitall(requests)
        for _, _, _, _, recv_slices, _, recv, _, host_recv in self.messages:
            if recv is not host_recv:
                recv.set(host_recv)
            offset = 0
            for a in self.arrays:
                target = a[recv_slices]
                target[...] = recv[offset:offset + target.size].reshape(target.shape)
                offset += target.size
        if self.xp is not np:
            self.xp.cuda.get_current_stream().synchronize()


def host_buffer(xp, size):
    """Pinned host memory of `size` float64 for CuPy's buffers."""
    memory = xp.cuda.alloc_pinned_memory(size * 8)
    return np.frombuffer(memory, np.float64, size)


def ghex_exchanger(part, fields):
    try:
        from ghex.context import make_context
        from ghex.structured.cartesian_sets import ProductSet, UnitRange
        from ghex.structured.regular import (DomainDescriptor, HaloGenerator,
                                             make_communication_object, make_field_descriptor,
                                             make_pattern)
    except ImportError as error:
        return None, f"not installed ({error})"
    ctx = make_context(part.comm)
    domain = DomainDescriptor(ctx.rank(), ProductSet(
        *(UnitRange(s.start, s.stop) for s in part.subdomain)))
    box = ProductSet(*(UnitRange(0, n) for n in part.global_shape))
    pattern = make_pattern(ctx, HaloGenerator(box, part.halo, (True, True, False)), [domain])
    co = make_communication_object(ctx)
    descriptors = [pattern(make_field_descriptor(domain, f, (HALO, HALO, 0), f.shape))
                   for f in fields]
    keep = (ctx, domain, pattern, co, descriptors)  # GHEX needs them alive

    def run():
        keep[3].exchange(keep[4]).wait()
    return run, None


def timed(comm, methods, reps, batches):
    """The slowest rank's mean time per call of each method, median over
    batches. The batches of the methods alternate, so that a change of the
    machine's load during the run weighs on every method alike."""
    for run in methods.values():
        for _ in range(3):
            run()
    means = {name: [] for name in methods}
    for _ in range(batches):
        for name, run in methods.items():
            comm.Barrier()
            start = time.perf_counter()
            for _ in range(reps):
                run()
            mean = (time.perf_counter() - start) / reps
            means[name].append(comm.allreduce(mean, op=MPI.MAX))
    return {name: statistics.median(values) for name, values in means.items()}


def pack_bandwidth(plan, reps):
    """Bytes packed + unpacked per second by one rank (no communication)."""
    buffers = [(i, np.empty(n[4], np.uint8), np.empty(n[5], np.uint8))
               for i, n in enumerate(plan.neighbors)]
    start = time.perf_counter()
    for _ in range(reps):
        for i, send, recv in buffers:
            plan.pack(i, send)
            plan.unpack(i, recv)
    seconds = (time.perf_counter() - start) / reps
    return (plan.send_bytes + plan.recv_bytes) / seconds


def allocated(comm, run, reps):
    """The most bytes any rank's Python allocations grew by while `run`
    ran `reps` times (tracemalloc's peak over what was held before): the
    allocations an exchange makes each time. (gtstore allocates nothing in
    C either once the exchange is made: docs/distributed.md.)"""
    import tracemalloc
    run()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    for _ in range(reps):
        run()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return comm.allreduce(peak - before, op=MPI.MAX)


def cubed_sphere(args):
    """gtstore's cubed-sphere exchange against pace-util's HaloUpdater:
    scalars (NFIELDS fields) and vectors (NFIELDS pairs), each rank a
    SHAPE block of a tile."""
    try:
        import pace.util as pace
    except ImportError as error:
        raise SystemExit(f"--cubed-sphere needs pace-util (requirements-pace.txt, ./dev pace): "
                         f"{error}")
    comm = MPI.COMM_WORLD
    per_tile = comm.size // 6
    side = int(round(per_tile ** 0.5))
    if comm.size % 6 or side * side != per_tile:
        raise SystemExit(f"--cubed-sphere runs on 6 * k * k ranks, not {comm.size}")
    reps, batches = (3, 3) if args.quick else (10, 15)
    preset = args.preset or "gt:cpu_kfirst"
    n, nz = SHAPE[0] * side, SHAPE[2]
    part = gd.CubedSpherePartitioner(comm, n, (side, side), halo=HALO, nz=nz)
    communicator = pace.CubedSphereCommunicator(
        comm, pace.CubedSpherePartitioner(pace.TilePartitioner((side, side))))
    rng = np.random.default_rng(0)
    rows = []
    for mode in ("scalar", "vector"):
        count = NFIELDS * (2 if mode == "vector" else 1)
        G = [rng.standard_normal(part.global_shape) if comm.rank == 0 else None
             for _ in range(count)]
        sets = []
        for _ in range(2):  # gtstore's fields, and the arrays pace updates
            fields = [part.full(np.nan, "f8", defaults=preset) for _ in range(count)]
            for g, f in zip(G, fields):
                part.scatter(g, f)
            sets.append(fields)
        components = (["u"] * NFIELDS + ["v"] * NFIELDS) if mode == "vector" else None
        ours = part.halo_exchange(sets[0], components=components)
        dims = [pace.X_DIM, pace.Y_DIM, pace.Z_DIM]
        quantities = [pace.Quantity(np.asarray(f), dims=dims, units="m",
                                    origin=(HALO, HALO, 0), extent=SHAPE) for f in sets[1]]
        specs = [pace.QuantityHaloSpec(n_points=HALO, shape=q.data.shape,
                                       strides=q.data.strides, itemsize=q.data.itemsize,
                                       origin=q.origin, extent=q.extent, dims=q.dims,
                                       numpy_module=np, dtype=q.metadata.dtype)
                 for q in quantities]
        if mode == "vector":
            updater = communicator.get_vector_halo_updater(specs[:NFIELDS], specs[NFIELDS:])
            xs, ys = quantities[:NFIELDS], quantities[NFIELDS:]

            def pace_run(updater=updater, xs=xs, ys=ys):
                updater.update(xs, ys)
        else:
            updater = communicator.get_scalar_halo_updater(specs)

            def pace_run(updater=updater, qs=quantities):
                updater.update(qs)
        methods = {"gtstore (HaloExchange)": ours.exchange,
                   "pace-util 0.9.0 (HaloUpdater)": pace_run}
        for run in methods.values():
            run()
        same = all(np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True)
                   for a, b in zip(*sets))
        same = comm.allreduce(same, op=MPI.LAND)
        results = timed(comm, methods, reps, batches)
        grown = {name: allocated(comm, run, reps) for name, run in methods.items()}
        rows.append((mode, count, results, grown, same, len(ours.neighbors),
                     ours.plan.recv_bytes, ours.shared_memory))
        ours.close()
    part.close()
    if comm.rank != 0:
        return
    print(f"### Cubed-sphere halo exchange: {comm.size} ranks ({side}x{side} per tile), "
          f"{SHAPE} float64 per field and rank, halo {HALO}, {preset}\n")
    print(f"{MPI.Get_library_version().splitlines()[0]}; {reps} exchanges x {batches} "
          f"batches; the slowest rank's mean, median over batches\n")
    print("| fields | method | ms per exchange | pace / gtstore | bytes allocated per "
          "exchange (Python) |")
    print("| --- | --- | ---: | ---: | ---: |")
    for mode, count, results, grown, same, messages, recv_bytes, shared in rows:
        base = results["gtstore (HaloExchange)"]
        what = (f"{count} scalars" if mode == "scalar" else f"{count // 2} vector pairs")
        for name, seconds in results.items():
            speedup = seconds / base
            print(f"| {what} | {name} | {seconds * 1e3:.2f} | {speedup:.2f}x | "
                  f"{grown[name] / reps:.0f} |")
        print(f"| {what} | halos equal: {same}; gtstore: {messages} messages, "
              f"{recv_bytes} bytes received per rank, through shared memory: {shared} "
              f"| | | |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--cubed-sphere", action="store_true",
                        help="the cubed sphere against pace-util (6 or 6 * k * k ranks)")
    parser.add_argument("--preset", default=None,
                        help="the fields' preset (default gt:cpu_kfirst, on a GPU gt:gpu)")
    parser.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    args = parser.parse_args()
    if args.cubed_sphere:
        return cubed_sphere(args)
    gpu = args.device == "gpu"
    args.preset = args.preset or ("gt:gpu" if gpu else "gt:cpu_kfirst")
    reps, batches = (3, 3) if args.quick else (10, 15)
    comm = MPI.COMM_WORLD
    # process grid first, then a global shape giving every rank 128 x 128
    grid = MPI.Compute_dims(comm.size, 2)
    global_shape = (SHAPE[0] * grid[0], SHAPE[1] * grid[1], SHAPE[2])
    part = gd.CartesianPartitioner(comm, global_shape, halo=HALO, periodic=(True, True),
                                   process_grid=grid)
    G = np.random.default_rng(0).random(global_shape)
    methods = {}
    sets = []
    extra = {"managed": None} if gpu else {}
    for k in range(3):  # one set of fields per method, with equal values
        preset = "gt:cpu_ifirst" if gpu and k == 2 else args.preset  # host fields beside
        fields = [part.full(np.nan, "f8", defaults=preset, **(extra if preset == args.preset
                                                                 else {}))
                  for _ in range(NFIELDS)]
        for f in fields:
            part.scatter(G if part.rank == 0 else None, f)
        sets.append(fields)
    ours = part.halo_exchange(sets[0])
    methods["gtstore (HaloExchange)"] = ours.exchange
    if gpu:
        import cupy

        def ours_completed():
            """The unpacking is queued on CuPy's current stream: timed to
            its completion, as the NDSL-style update is."""
            ours.exchange()
            cupy.cuda.get_current_stream().synchronize()

        methods["gtstore (HaloExchange)"] = ours_completed
        arrays = [f.to_cupy() for f in sets[1]]
        methods["NDSL-style (CuPy slices, pinned buffers, mpi4py)"] = NumpyHaloUpdater(
            part, arrays, HALO, cupy).exchange
        methods["gtstore, host fields (gt:cpu_ifirst)"] = part.halo_exchange(sets[2]).exchange
        ghex_run, ghex_note = None, "not run for device fields"
    else:
        arrays = [np.asarray(f) for f in sets[1]]
        methods["NDSL-style (NumPy slices + mpi4py)"] = NumpyHaloUpdater(part, arrays,
                                                                         HALO).exchange
        ghex_run, ghex_note = ghex_exchanger(part, sets[2])
        if ghex_run:
            methods["GHEX"] = ghex_run
    results = timed(comm, methods, reps, batches)
    # correctness: every method's halos equal gtstore's

    def values(f):
        return f.to_cupy().get() if gpu and f.device is not None else np.asarray(f)
    same = all(np.array_equal(values(a), values(b), equal_nan=True)
               for s in sets[1:] if s is not sets[2] or ghex_run or gpu
               for a, b in zip(sets[0], s))
    same = comm.allreduce(same, op=MPI.LAND)
    # rank 0 alone, so that it has a core to itself: the others sleep
    # (a blocking barrier would poll and take the cores)
    comm.Barrier()
    bandwidth = pack_bandwidth(ours.plan, 5 * reps) if comm.rank == 0 else None
    done = comm.Ibarrier()
    while not done.Test():
        time.sleep(0.001)
    bandwidth = comm.bcast(bandwidth, root=0)
    if comm.rank != 0:
        return
    n, h, k = SHAPE[0], HALO, SHAPE[2]
    perfect = ((n + 2 * h) * (n + 2 * h) - n * n) * k * 8 * NFIELDS  # the halo ring, received
    base = results["gtstore (HaloExchange)"]
    print(f"### Halo exchange: {NFIELDS} fields of {SHAPE} float64 per rank, halo {HALO}, "
          f"periodic, {args.preset}, {comm.size} ranks (grid {tuple(grid)})\n")
    print(f"{MPI.Get_library_version().splitlines()[0]}; {reps} exchanges x {batches} "
          f"batches; halos of every method equal gtstore's: {same}\n")
    print("| method | ms per exchange | vs gtstore |")
    print("| --- | ---: | ---: |")
    for name, seconds in results.items():
        print(f"| {name} | {seconds * 1e3:.2f} | {seconds / base:.2f}x |")
    if ghex_note:
        print(f"| GHEX | {ghex_note} | |")
    print(f"\nBytes received per rank and exchange: {ours.plan.recv_bytes} "
          f"(a perfect exchange: {perfect}; ratio {ours.plan.recv_bytes / perfect:.3f}), "
          f"in {len(ours.neighbors)} messages.")
    print(f"Pack + unpack bandwidth of rank 0 alone (no communication, the other ranks idle): "
          f"{bandwidth / 1e9:.2f} GB/s (bytes packed + unpacked per second).\n")
    print_model(ours.plan, bandwidth)


def print_model(plan, pack_bandwidth):
    """Weak scaling: every rank keeps its subdomain, so its messages (8
    neighbours) and bytes do not grow with the rank count; what changes from
    one node to 1,000 and 10,000 ranks is that messages leave the node and
    ranks share its network link. Model per rank and exchange:
    T = m * alpha + B / beta + (B + B') / pack_bandwidth, with m messages,
    B bytes sent, B' received, the pack + unpack bandwidth measured here, and
    assumed (not measured) network parameters: alpha the latency, beta the
    link bandwidth per rank (a 100 Gb/s link shared by the ranks of a node:
    4 at 1,000 ranks, 8 at 10,000; shared memory on one node)."""
    neighbors = plan.neighbors
    m = len(neighbors)
    B = plan.send_bytes
    biggest = max(n[4] for n in neighbors)
    smallest = min(n[4] for n in neighbors)
    print("Weak-scaling model (per rank and exchange; alpha and beta assumed: a 100 Gb/s "
          "link shared by 4 ranks at 1,000, 8 at 10,000; shared memory for one node; the pack "
          "bandwidth measured above):\n")
    print("| ranks | alpha (us) | beta (GB/s) | latency m*alpha (ms) | transfer B/beta (ms) | "
          "pack+unpack (ms) | total (ms) | bound by |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    # intra-node for small counts; at scale most neighbours are off-node, and
    # the network's effective bandwidth per rank drops as ranks share links
    for ranks, alpha, beta in [(4, 0.5e-6, 20e9), (1000, 2e-6, 12.5e9 / 4),
                               (10000, 3e-6, 12.5e9 / 8)]:
        lat = m * alpha
        transfer = B / beta
        pack = (plan.send_bytes + plan.recv_bytes) / pack_bandwidth
        total = lat + transfer + pack
        bound = max([("latency", lat), ("network bandwidth", transfer),
                     ("pack/unpack", pack)], key=lambda x: x[1])[0]
        print(f"| {ranks} | {alpha * 1e6:.1f} | {beta / 1e9:.2f} | {lat * 1e3:.3f} | "
              f"{transfer * 1e3:.3f} | {pack * 1e3:.3f} | {total * 1e3:.3f} | {bound} |")
    print(f"\n{m} messages of {smallest} (corners) to {biggest} (edges) bytes: an edge "
          f"message is {biggest / (12.5e9 * 2e-6):.0f}x the latency-bandwidth product "
          f"(alpha * beta = {12.5e9 * 2e-6 / 1e3:.0f} kB), a corner "
          f"{smallest / (12.5e9 * 2e-6):.2f}x.")


if __name__ == "__main__":
    main()
