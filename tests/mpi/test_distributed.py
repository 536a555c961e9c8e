"""gtstore.distributed over MPI, on however many ranks mpirun starts (the
README's test command runs 1, 2, 4 and 6): halos against a global
reference, several fields, scatter/gather, overlap of compute and
communication, a diffusion bit for bit as on one rank, and bad input that
fails on every rank without a hang."""

import numpy as np
import pytest

import gtstore as gts
from gtstore import distributed as gd

from conftest import all_ranks


def global_field(shape, seed, dtype="f8"):
    return np.random.default_rng(seed).random(shape).astype(dtype)


def expected_after_exchange(part, halo, G, fill):
    """The local storage after an exchange: G at the wrapped global index
    along split dimensions, `fill` past a non-periodic edge or in an
    undivided dimension's halo (nobody writes there)."""
    index, valid = [], []
    for a, n in enumerate(part.global_shape):
        lo, hi = halo[a]
        s = part.subdomain[a]
        i = np.arange(s.start - lo, s.stop + hi)
        split = a in part._split_axes
        periodic = split and part.periodic[part._split_axes.index(a)]
        ok = np.ones(i.shape, bool) if periodic else (i >= 0) & (i < n)
        index.append(np.clip(i % n if periodic else i, 0, n - 1))
        valid.append(ok)
    values = G[np.ix_(*index)]
    mask = np.ones(values.shape[:len(index)], bool)
    for a, ok in enumerate(valid):
        shape = [1] * len(index)
        shape[a] = -1
        mask = mask & ok.reshape(shape)
    mask = mask.reshape(mask.shape + (1,) * (values.ndim - mask.ndim))
    return np.where(mask, values, fill)


@pytest.mark.parametrize("preset", ["gt:cpu_ifirst", "gt:cpu_kfirst", "numpy"])
@pytest.mark.parametrize("periodic", [(False, False), (True, True), (True, False)])
def test_exchange_matches_global_reference(comm, preset, periodic):
    shape = (13, 11, 4)  # uneven over every process grid
    part = gd.CartesianPartitioner(comm, shape, halo=((2, 1), (1, 3), (0, 0)), periodic=periodic)
    G = global_field(shape, 1)
    u = part.full(np.nan, "f8", defaults=preset)
    part.scatter(G if part.rank == 0 else None, u)
    ex = part.halo_exchange([u])
    ex.exchange()
    ok = np.array_equal(np.asarray(u), expected_after_exchange(part, part.halo, G, np.nan),
                        equal_nan=True)
    ex.close()
    part.close()
    all_ranks(comm, ok, f"{preset}, periodic {periodic}")


def test_several_fields_with_own_halos_dtypes_and_data_dims(comm):
    shape = (12, 10, 3)
    part = gd.CartesianPartitioner(comm, shape, halo=2, periodic=(True, False))
    halos = [((2, 2), (2, 2), (0, 0)), ((1, 0), (0, 2), (1, 1)), ((0, 1), (1, 1), (0, 0))]
    G = [global_field(shape, 10), global_field(shape, 11, "f4"),
         global_field(shape + (2,), 12)]
    fields = [part.full(np.nan, "f8", halo=halos[0], defaults="gt:cpu_kfirst"),
              part.full(np.nan, "f4", halo=halos[1], defaults="gt:cpu_ifirst"),
              part.full(np.nan, ("f8", (2,)), halo=halos[2], defaults="gt:cpu_ifirst")]
    for g, f in zip(G, fields):
        part.scatter(g if part.rank == 0 else None, f)
    with part.halo_exchange(fields) as ex:
        assert len(ex.fields) == 3
        ex.exchange()
        ex.exchange()  # again, on the same buffers
    ok = all(np.array_equal(np.asarray(f), expected_after_exchange(part, h, g, np.nan),
                            equal_nan=True) for f, h, g in zip(fields, halos, G))
    part.close()
    all_ranks(comm, ok, "three fields in one exchange")


@pytest.mark.parametrize("shared", ["1", "0"])
def test_messages_through_shared_memory_or_mpi(comm, monkeypatch, shared):
    """Every rank of these runs shares one node: the messages go through
    shared memory (packed into the receiver's buffer) unless
    GTSTORE_HALO_SHARED_MEMORY is "0"; the halos are the same either way,
    exchange after exchange."""
    monkeypatch.setenv("GTSTORE_HALO_SHARED_MEMORY", shared)
    shape = (13, 11, 4)
    part = gd.CartesianPartitioner(comm, shape, halo=2, periodic=(True, False))
    halos = [((2, 2), (2, 2), (0, 0)), ((1, 2), (2, 0), (0, 0))]
    G = [global_field(shape, 30), global_field(shape, 31, "f4")]
    fields = [part.full(np.nan, "f8", halo=halos[0], defaults="gt:cpu_kfirst"),
              part.full(np.nan, "f4", halo=halos[1], defaults="gt:cpu_ifirst")]
    with part.halo_exchange(fields) as ex:
        used = ex.shared_memory
        for _ in range(3):  # the buffers reused: each waits for its receiver's unpacking
            for g, f in zip(G, fields):
                part.scatter(g if part.rank == 0 else None, f)
            ex.start()
            ex.wait()
    ok = used == (shared == "1") and all(
        np.array_equal(np.asarray(f), expected_after_exchange(part, h, g, np.nan),
                       equal_nan=True) for f, h, g in zip(fields, halos, G))
    part.close()
    all_ranks(comm, ok, f"GTSTORE_HALO_SHARED_MEMORY={shared}: shared memory {used}")


def test_shared_memory_is_chosen_by_every_rank_or_none(comm, monkeypatch):
    """One rank that opts out takes every rank's messages through MPI."""
    if comm.Get_rank() == comm.size - 1:
        monkeypatch.setenv("GTSTORE_HALO_SHARED_MEMORY", "0")
    else:
        monkeypatch.delenv("GTSTORE_HALO_SHARED_MEMORY", raising=False)
    shape = (9, 8, 2)
    part = gd.CartesianPartitioner(comm, shape, halo=1, periodic=(True, True))
    G = global_field(shape, 32)
    u = part.full(np.nan, "f8")
    part.scatter(G if part.rank == 0 else None, u)
    with part.halo_exchange([u]) as ex:
        used = ex.shared_memory
        ex.exchange()
    ok = not used and np.array_equal(
        np.asarray(u), expected_after_exchange(part, part.halo, G, np.nan), equal_nan=True)
    part.close()
    all_ranks(comm, ok, f"one rank opted out, shared memory {used}")


def test_scatter_gather_round_trip(comm):
    shape = (9, 7, 5)
    part = gd.CartesianPartitioner(comm, shape, halo=1)
    G = global_field(shape, 3)
    u = part.zeros("f8", defaults="gt:cpu_ifirst")
    root = comm.size - 1
    part.scatter(G if part.rank == root else None, u, root=root)
    back = part.gather(u, root=0)
    ok = np.array_equal(np.asarray(u.domain_view), G[part.subdomain])
    if part.rank == 0:
        ok = ok and np.array_equal(back, G)
    else:
        ok = ok and back is None
    part.close()
    all_ranks(comm, ok, "scatter then gather")


def test_start_wait_overlaps_interior_compute(comm):
    shape = (16, 16, 2)
    part = gd.CartesianPartitioner(comm, shape, halo=2, periodic=(True, True))
    G = global_field(shape, 4)
    u = part.full(np.nan, "f8")
    part.scatter(G if part.rank == 0 else None, u)
    ex = part.halo_exchange([u])
    ex.start()
    with pytest.raises(RuntimeError, match="already started"):
        ex.start()
    # compute on the interior (points no neighbour reads) while messages fly
    a = np.asarray(u)
    interior = a[4:-4, 4:-4, :]
    interior *= 2.0
    ex.wait()
    expected = expected_after_exchange(part, part.halo, G, np.nan)
    expected[4:-4, 4:-4, :] *= 2.0
    ok = np.array_equal(a, expected, equal_nan=True)
    with pytest.raises(RuntimeError, match="not started"):
        ex.wait()
    ex.close()
    part.close()
    all_ranks(comm, ok, "start/wait with compute in between")


def diffusion_step(a, out, alpha=0.1):
    """A 9-point diffusion on the interior of `a` (reads the corners)."""
    c = a[1:-1, 1:-1]
    out[1:-1, 1:-1] = c + alpha * (
        a[:-2, 1:-1] + a[2:, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:] - 4 * c
        + 0.5 * (a[:-2, :-2] + a[2:, 2:] + a[:-2, 2:] + a[2:, :-2] - 4 * c))


def test_diffusion_bit_for_bit_as_on_one_rank(comm):
    shape, steps = (20, 18, 3), 5
    G = global_field(shape, 5)
    # one rank: the whole field, periodic halo filled by wrapping
    ref = G.copy()
    for _ in range(steps):
        padded = np.pad(ref, ((1, 1), (1, 1), (0, 0)), mode="wrap")
        out = padded.copy()
        diffusion_step(padded, out)
        ref = out[1:-1, 1:-1]
    part = gd.CartesianPartitioner(comm, shape, halo=1, periodic=(True, True))
    u, v = part.zeros("f8"), part.zeros("f8")
    part.scatter(G if part.rank == 0 else None, u)
    ex_u, ex_v = part.halo_exchange([u]), part.halo_exchange([v])
    for step in range(steps):
        src, dst, ex = (u, v, ex_u) if step % 2 == 0 else (v, u, ex_v)
        ex.exchange()
        diffusion_step(np.asarray(src), np.asarray(dst))
    result = part.gather(u if steps % 2 == 0 else v)
    ok = part.rank != 0 or np.array_equal(result, ref)
    ex_u.close()
    ex_v.close()
    part.close()
    all_ranks(comm, ok, "distributed diffusion == one-rank diffusion")


def test_halo_wider_than_subdomain_fails_everywhere(comm):
    with pytest.raises(ValueError, match="wider than the smallest subdomain"):
        gd.CartesianPartitioner(comm, (2 * comm.size, 4, 2), halo=3, process_grid=(comm.size, 1),
                                periodic=True)


def test_mismatched_fields_fail_everywhere(comm):
    part = gd.CartesianPartitioner(comm, (8, 8, 2), halo=1, periodic=(True, True))
    if comm.size > 1:  # one rank's field has another halo: the messages would not match
        f = part.zeros("f8", halo=((1, 1), (2, 2), (0, 0)) if part.rank == 1 else None)
        with pytest.raises(ValueError, match="differ between ranks"):
            part.halo_exchange([f])
    # rank 0 passes a field of another partitioner: every rank learns it
    other = gd.CartesianPartitioner(comm, (8 * comm.size + 3, 8, 2), halo=1)
    f = (other if part.rank == 0 else part).zeros("f8")
    match = "another partition" if part.rank == 0 else "rank 0 failed"
    with pytest.raises(ValueError, match=match):
        part.halo_exchange([f])
    with pytest.raises(ValueError, match=match if part.rank == 0 else "rank 0 failed"):
        part.gather(f)
    with pytest.raises(TypeError, match="set by the partitioner"):
        part.zeros("f8", dims="KJI")
    other.close()
    part.close()


def test_scatter_failures_of_one_rank_fail_everywhere(comm):
    """A read-only local storage (on the root or elsewhere) and a global
    array that cannot be cast raise on every rank: the root used to fail in
    its send loop, after the agreement, and the others waited forever."""
    part = gd.CartesianPartitioner(comm, (8, 8, 2), halo=1)
    u = part.zeros("f8")
    for failing in range(min(comm.size, 2)):
        values = np.zeros(u.shape)
        values.flags.writeable = part.rank != failing
        local = gts.as_storage(values, dims="IJK", halo=u.halo)
        match = "read-only" if part.rank == failing else f"rank {failing} failed"
        with pytest.raises(ValueError, match=match):
            part.scatter(np.ones((8, 8, 2)) if part.rank == 0 else None, local)
    match = "could not convert" if part.rank == 0 else "rank 0 failed"
    with pytest.raises(ValueError, match=match):
        part.scatter(np.full((8, 8, 2), "abc") if part.rank == 0 else None, u)
    part.scatter(np.ones((8, 8, 2)) if part.rank == 0 else None, u)  # still in step
    assert (np.asarray(u.domain_view) == 1).all()
    part.close()


def test_partitioner_geometry(comm):
    part = gd.CartesianPartitioner(comm, (10, 12, 4), halo=2, periodic=(True, False))
    grid = part.process_grid
    assert grid[0] * grid[1] == comm.size
    sizes = comm.allgather(part.domain_shape())
    starts = comm.allgather(tuple(s.start for s in part.subdomain))
    # the subdomains tile the global domain exactly
    cover = np.zeros((10, 12), int)
    for (i0, j0, _), (ni, nj, nk) in zip(starts, sizes):
        cover[i0:i0 + ni, j0:j0 + nj] += 1
        assert nk == 4
    assert (cover == 1).all()
    u = part.empty("f4", defaults="gt:cpu_ifirst")
    assert u.shape == part.local_shape() and u.halo == ((2, 2), (2, 2), (0, 0))
    assert u.dims == ("I", "J", "K")
    assert "CartesianPartitioner" in repr(part)
    part.close()


def test_partitioner_arguments(comm):
    """NumPy integers are integers; anything else is refused by name, on
    every rank alike (no communication happens before the checks)."""
    part = gd.CartesianPartitioner(comm, np.array([8 * comm.size, 6, 2]), halo=np.int64(1),
                                   periodic=True)
    assert part.global_shape == (8 * comm.size, 6, 2)
    assert part.halo == ((1, 1), (1, 1), (0, 0))
    assert part.periodic == (True, True)
    part.close()
    # the whole global shape is checked as the creation functions check a
    # shape, by name: not only the split extents, which the partition sees
    for shape, error, match in [
            ((8, 6, -3), ValueError, r"global_shape: negative extent -3 at position 2 in "
                                     r"\(8, 6, -3\)"),
            ((8, -6, 2), ValueError, "global_shape: negative extent -6 at position 1"),
            ((8.0, 6, 2), TypeError, r"global_shape: expected integers, got 8\.0"),
            ((8, 6, True), TypeError, "global_shape: expected integers, got True"),
            (8.0, TypeError, r"global_shape: .*got 8\.0")]:
        with pytest.raises(error, match=match):
            gd.CartesianPartitioner(comm, shape)
    with pytest.raises(ValueError, match="halo: -2 is a negative width"):
        gd.CartesianPartitioner(comm, (8, 6, 2), halo=-2)
    with pytest.raises(TypeError, match="halo"):
        gd.CartesianPartitioner(comm, (8, 6, 2), halo=((1, 1), (1, "1"), 0))
    with pytest.raises(ValueError, match="halo"):
        gd.CartesianPartitioner(comm, (8, 6, 2), halo=(1, 1))
    with pytest.raises(ValueError, match="split"):
        gd.CartesianPartitioner(comm, (8, 6, 2), split="IK0")
    with pytest.raises(ValueError, match="dims"):
        gd.CartesianPartitioner(comm, (8, 6, 2), dims="IJ")
    with pytest.raises(ValueError, match="process_grid"):
        gd.CartesianPartitioner(comm, (8, 6, 2), process_grid=(comm.size + 1, 1))
    with pytest.raises(TypeError, match="periodic"):
        gd.CartesianPartitioner(comm, (8, 6, 2), periodic=(1, 0))


def test_device_only_fields_on_the_emulated_device(comm):
    """GPUStorages without a host side (managed=None), packed on their
    device: exchanged, scattered and gathered like host fields."""
    gts.use_gpu("emulated")
    try:
        shape = (10, 9, 2)
        part = gd.CartesianPartitioner(comm, shape, halo=((1, 2), (2, 1), (0, 0)),
                                       periodic=(True, False))
        G = global_field(shape, 8)
        u = part.full(np.nan, "f8", defaults="gt:gpu", managed=None)
        part.scatter(G if part.rank == 0 else None, u)
        with part.halo_exchange([u]) as ex:
            ex.exchange()
        ok = type(u).__name__ == "GPUStorage" and np.array_equal(
            u.to_ndarray(), expected_after_exchange(part, part.halo, G, np.nan), equal_nan=True)
        back = part.gather(u)
        ok = ok and (part.rank != 0 or np.array_equal(back, G))
        part.close()
    finally:
        gts.use_gpu(None)
    all_ranks(comm, ok, "device-only fields")


def test_exchange_dropped_between_start_and_wait(comm):
    """An exception between start() and wait() drops the exchange: it must
    complete its messages before its buffers go (MPI wrote into freed
    buffers), and a later exchange on the same fields works. Rank 0 drops
    its exchange at once, the others start theirs later, so that their
    messages reach rank 0 after the drop; rank 0 meanwhile reuses the freed
    memory for new buffers of the same size, filled with a mark that a late
    message would overwrite."""
    import gc
    import time

    shape = (16, 14, 3)
    part = gd.CartesianPartitioner(comm, shape, halo=2, periodic=(True, True))
    G = global_field(shape, 9)
    u = part.full(np.nan, "f8")
    part.scatter(G if part.rank == 0 else None, u)

    def start_then_fail():
        ex = part.halo_exchange([u])
        if part.rank != 0:
            time.sleep(0.3)
        ex.start()
        raise RuntimeError("between start and wait")

    try:
        start_then_fail()
    except RuntimeError:
        pass
    gc.collect()
    plan = gd.HaloPlan(part.partition, part.rank, [u])
    reused = gd.HaloMessages(plan)
    buffers = [memoryview(reused.recv_buffer(i)).cast("B") for i in range(len(plan.neighbors))]
    for b in buffers:
        b[:] = b"\x5a" * len(b)
    comm.Barrier()  # the late messages arrive (MPI progresses here)
    time.sleep(0.1)
    comm.Barrier()
    intact = all(bytes(b) == b"\x5a" * len(b) for b in buffers)
    del buffers
    # later exchanges on the same fields
    with part.halo_exchange([u]) as ex:
        ex.exchange()
        ex.exchange()
    ok = np.array_equal(np.asarray(u), expected_after_exchange(part, part.halo, G, np.nan),
                        equal_nan=True)
    part.close()
    all_ranks(comm, intact, "no message written into a dropped exchange's freed buffers")
    all_ranks(comm, ok, "an exchange after a dropped one")


def test_exchange_closed_or_dropped_unstarted_and_started(comm):
    """close() between start and wait completes (unpacks) the exchange; a
    never started exchange is dropped without waiting."""
    shape = (12, 10, 2)
    part = gd.CartesianPartitioner(comm, shape, halo=1, periodic=(True, True))
    G = global_field(shape, 10)
    u = part.full(np.nan, "f8")
    part.scatter(G if part.rank == 0 else None, u)
    part.halo_exchange([u])  # dropped at once, never started
    ex = part.halo_exchange([u])
    ex.start()
    ex.close()
    ok = np.array_equal(np.asarray(u), expected_after_exchange(part, part.halo, G, np.nan),
                        equal_nan=True)
    with pytest.raises(RuntimeError, match="closed"):
        ex.start()
    part.close()
    all_ranks(comm, ok, "close between start and wait")


def test_closed_partitioner_refuses_to_communicate(comm):
    """After close() (collective) the methods that communicate raise a
    RuntimeError saying so on every rank (an AttributeError of the freed
    communicator before); the geometry and storage creation still work."""
    shape = (8, 6, 2)
    part = gd.CartesianPartitioner(comm, shape, halo=1)
    u = part.zeros("f8")
    part.close()
    part.close()  # again: nothing to do
    for call, what in [(lambda: part.halo_exchange([u]), "halo_exchange"),
                       (lambda: gd.HaloExchange(part, [u]), "halo_exchange"),
                       (lambda: part.scatter(global_field(shape, 12), u), "scatter"),
                       (lambda: part.gather(u), "gather")]:
        with pytest.raises(RuntimeError, match=f"{what}: this partitioner is closed"):
            call()
    assert part.zeros("f8").shape == u.shape == part.local_shape()
    assert part.domain_shape() == tuple(s.stop - s.start for s in part.subdomain)


@pytest.mark.parametrize("root", [-2, -1, "size", "size+1"])
def test_invalid_root_fails_everywhere(comm, root):
    """An invalid root is refused on every rank (MPI_PROC_NULL is -2 in
    Open MPI, MPI_ANY_SOURCE -1: scatter wrote garbage or hung)."""
    root = {"size": comm.size, "size+1": comm.size + 1}.get(root, root)
    shape = (8, 6, 2)
    part = gd.CartesianPartitioner(comm, shape, halo=1)
    G = global_field(shape, 11)
    u = part.full(7.0, "f8")
    message = rf"root: {root} is not a rank of the partitioner's communicator \(0 to {comm.size - 1}\)"
    with pytest.raises(ValueError, match=message):
        part.scatter(G, u, root=root)
    with pytest.raises(ValueError, match=message):
        part.gather(u, root=root)
    for bad in (1.0, "0", None, True, False):  # True was rank 1
        with pytest.raises(TypeError, match="root"):
            part.scatter(G, u, root=bad)
        with pytest.raises(TypeError, match="root"):
            part.gather(u, root=bad)
    untouched = bool((np.asarray(u) == 7.0).all())
    # a NumPy integer is a root; the partitioner still works
    part.scatter(G if part.rank == comm.size - 1 else None, u, root=np.int64(comm.size - 1))
    back = part.gather(u, root=np.int32(0))
    ok = untouched and (part.rank != 0 or np.array_equal(back, G))
    part.close()
    all_ranks(comm, ok, f"root={root} refused, the domain untouched")
