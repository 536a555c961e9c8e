"""The cubed sphere over MPI (6 ranks: one per tile; 24: 2x2 per tile):
halos of scalars and vectors against a global reference built from the six
tiles directly with NumPy (no gtstore number involved), the same bits for
every layout preset, NDSL issue 81's case (vector corners identical for
I-first and K-first), several fields in one message per neighbour, and
bad input that fails on every rank. Skipped on other rank counts."""

import numpy as np
import pytest

import gtstore as gts
from gtstore import distributed as gd

from conftest import MPI, all_ranks

SIZE = MPI.COMM_WORLD.size
LAYOUT = {6: (1, 1), 24: (2, 2)}.get(SIZE)
pytestmark = pytest.mark.skipif(LAYOUT is None, reason="the cubed sphere runs on 6 or 24 ranks")

PRESETS = ["gt:cpu_ifirst", "gt:cpu_kfirst", "C", "F", "gtmc", "dace:cpu"]

# The edges of each tile, FV3's cube: (west, east, south, north) as
# (tile offset mod 6, clockwise quarter turns from there to here).
EVEN = ((4, 1), (1, 0), (5, 0), (2, 3))
ODD = ((5, 0), (2, 1), (4, 3), (1, 0))


def strips(G, t, h):
    """The h cells past each edge of tile t, from the neighbouring tiles of
    G (tile, x, y, ...), each in tile t's (x, y) order: west and east as
    (h, n), south and north as (n, h). Whole-tile slices and transposes."""
    n = G.shape[1]
    T = lambda a: np.swapaxes(a, 0, 1)  # noqa: E731
    (w, _), (e, _), (s, _), (no, _) = EVEN if t % 2 == 0 else ODD
    W, E, S, N = (G[(t + o) % 6] for o in (w, e, s, no))
    if t % 2 == 0:
        return (T(W[::-1, n - h:]),  # tile t-2's north edge, reversed
                E[:h, :], S[:, n - h:],
                T(N[:h, ::-1]))      # tile t+2's west edge, reversed
    return (W[n - h:, :],
            T(E[::-1, :h]),          # tile t+2's south edge, reversed
            T(S[n - h:, ::-1]),      # tile t-2's east edge, reversed
            N[:, :h])


def turn(u, v, turns):
    """(u, v) of another tile in this tile's frame after `turns` clockwise
    quarter turns."""
    return [(u, v), (v, -u), (-u, -v), (-v, u)][turns % 4]


def extended(Gs, t, h, vector=False):
    """Tile t with a halo of h from the six tiles of each array in Gs (one
    scalar, or u and v), NaN at the cube's corners."""
    n = Gs[0].shape[1]
    rest = Gs[0].shape[3:]
    out = [np.full((n + 2 * h, n + 2 * h) + rest, np.nan) for _ in Gs]
    edges = EVEN if t % 2 == 0 else ODD
    parts = [strips(G, t, h) for G in Gs]
    places = [(slice(0, h), slice(h, h + n)), (slice(h + n, None), slice(h, h + n)),
              (slice(h, h + n), slice(0, h)), (slice(h, h + n), slice(h + n, None))]
    for side, place in enumerate(places):
        values = [p[side] for p in parts]
        if vector:
            values = turn(values[0], values[1], edges[side][1])
        for o, value in zip(out, values):
            o[place] = value
    for o, G in zip(out, Gs):
        o[h:h + n, h:h + n] = G[t]
    return out


def local_expected(part, full):
    """This rank's block of an extended tile: its subdomain plus halo."""
    (x0, y0), (nx, ny) = part.partition.subdomain(part.rank)
    h = part.halo[0][0]
    return full[x0:x0 + nx + 2 * h, y0:y0 + ny + 2 * h]


def run(comm, preset, n=6, h=2, nz=3, device_aware=None):
    """One exchange of q, u, v (twice) on fields of `preset`; "gpu": in the
    GPU's memory only (no host side), with `device_aware` messages."""
    part = gd.CubedSpherePartitioner(comm, n, LAYOUT, halo=h, nz=nz)
    rng = np.random.default_rng(7)
    G = [rng.standard_normal(part.global_shape) for _ in range(3)]  # q, u, v
    gpu = dict(defaults="gt:gpu", managed=None) if preset == "gpu" else dict(defaults=preset)
    fields = [part.full(np.nan, "f8", **gpu) for _ in range(3)]
    for g, f in zip(G, fields):
        part.scatter(g if part.rank == 0 else None, f)
    ex = part.halo_exchange(fields, components=["scalar", "u", "v"], device_aware=device_aware)
    gts.reset_transfer_counts()
    ex.exchange()
    ex.exchange()  # again: the same
    counts = gts.transfer_counts()
    got = [f.to_ndarray() if preset == "gpu" else np.array(f) for f in fields]
    expected = [local_expected(part, e) for e in
                extended(G[:1], part.tile, h) + extended(G[1:], part.tile, h, vector=True)]
    ok = all(np.array_equal(a, b, equal_nan=True) for a, b in zip(got, expected))
    neighbors = ex.neighbors
    ex.close()
    part.close()
    return ok, got, neighbors, counts


@pytest.mark.parametrize("preset", PRESETS)
def test_against_the_six_tiles(comm, preset):
    ok = run(comm, preset)[0]
    all_ranks(comm, ok, f"{preset}: halos differ from the reference")


def test_same_bits_on_every_layout(comm):
    """Every preset's halos, corners included, are the same bits; NDSL issue
    81: the vector's corner values of I-first and K-first agree."""
    results = [run(comm, preset)[1] for preset in PRESETS]
    same = all(np.array_equal(a.view(np.int64), b.view(np.int64))
               for other in results[1:] for a, b in zip(results[0], other))
    all_ranks(comm, same, "presets give different bits")


def test_shared_memory_and_mpi_messages_same_bits(comm, monkeypatch):
    """Scalars and turned vectors through shared memory (the default on one
    node) and through MPI's messages: both the reference, bit for bit."""
    results = []
    for shared in ("1", "0"):
        monkeypatch.setenv("GTSTORE_HALO_SHARED_MEMORY", shared)
        ok, got, _, _ = run(comm, "gt:cpu_kfirst")
        results.append((ok, got))
    same = all(ok for ok, _ in results) and all(
        np.array_equal(a.view(np.int64), b.view(np.int64))
        for a, b in zip(results[0][1], results[1][1]))
    all_ranks(comm, same, "shared memory and MPI messages differ")


@pytest.mark.parametrize("device_aware", [True, False])
def test_device_fields_same_bits_as_host(comm, device_aware):
    """Fields in (emulated) device memory only give the host's bits, the
    turned vector components negated by the device: with device messages
    (device_aware=True) no byte crosses between device and host; through
    pinned messages the packed bytes do, negated on the host."""
    host = run(comm, "gt:cpu_ifirst")[1]
    gts.use_gpu("emulated")
    try:
        ok, got, neighbors, counts = run(comm, "gpu", device_aware=device_aware)
    finally:
        gts.use_gpu(None)
    same = ok and all(np.array_equal(a.view(np.int64), b.view(np.int64))
                      for a, b in zip(got, host))
    moved = (2 * sum(n.send_bytes for n in neighbors),  # 2 exchanges
             2 * sum(n.recv_bytes for n in neighbors))
    crossed = (counts["to_host_bytes"], counts["to_device_bytes"])
    all_ranks(comm, same and crossed == ((0, 0) if device_aware else moved),
              f"device fields (device_aware={device_aware}): bits differ from the host's "
              f"({ok}, {same}) or bytes crossed {crossed}")


def test_one_message_per_neighbour(comm):
    neighbors = run(comm, "C", n=6, h=2, nz=3)[2]
    ranks = [nb[0] for nb in neighbors]
    ok = len(set(ranks)) == len(ranks) and all(tag == 0 for nb in neighbors for tag in nb[2:4])
    if LAYOUT == (1, 1):  # four edges, no corner neighbour; 3 fields of 2 x 6 x 3 each way
        ok = ok and len(ranks) == 4 and all(nb[4] == nb[5] == 3 * 2 * 6 * 3 * 8
                                            for nb in neighbors)
    all_ranks(comm, ok, f"neighbours {neighbors}")


def test_start_wait_overlap(comm):
    part = gd.CubedSpherePartitioner(comm, 4, LAYOUT, halo=1)
    q = part.zeros("f4")
    np.asarray(q.domain_view)[...] = part.rank
    ex = part.halo_exchange([q])
    ex.start()
    interior = float(np.asarray(q.domain_view).sum())  # compute meanwhile
    ex.wait()
    west = part.partition.neighbor(part.rank, -1, 0)[0]
    ok = interior == part.rank * np.asarray(q.domain_view).size and \
        np.all(np.asarray(q)[0, 1:-1] == west)
    ex.close()
    part.close()
    all_ranks(comm, ok, "start/wait")


def test_bad_input_fails_everywhere(comm):
    part = gd.CubedSpherePartitioner(comm, 4, LAYOUT, halo=1)
    u, v = part.zeros(), part.zeros()
    with pytest.raises(ValueError, match="without a V"):
        part.halo_exchange([u, v], components=["u", "scalar"])
    with pytest.raises(ValueError, match="components"):
        part.halo_exchange([u, v], components=["u"])
    with pytest.raises(TypeError, match="components"):
        part.halo_exchange([u, v], components=["u", 2])
    # one rank's field of another halo: every rank raises
    w = part.zeros(halo=1) if part.rank else part.zeros(halo=0)
    with pytest.raises(ValueError):
        part.halo_exchange([w])
    with pytest.raises(ValueError, match="halo"):
        gd.CubedSpherePartitioner(comm, 4, LAYOUT, halo=5)
    with pytest.raises(ValueError, match="ranks"):
        gd.CubedSpherePartitioner(comm, 4, (3, 1))
    for nz in (True, 2.0):  # True was 1 level
        with pytest.raises(TypeError, match=f"nz: expected None or a number of levels .*{nz}"):
            gd.CubedSpherePartitioner(comm, 4, LAYOUT, nz=nz)
    for stagger in ((-1, 0), (True, 0)):  # gave 3 and 5 points for 4
        with pytest.raises(ValueError, match="stagger"):
            part.domain_shape(stagger=stagger)
    assert part.domain_shape(stagger=(1, 0))[0] == part.domain_shape()[0] + 1
    part.close()
    # closed (collectively): what communicates says so on every rank
    for call, what in [(lambda: part.halo_exchange([u, v], components=["u", "v"]),
                        "halo_exchange"),
                       (lambda: part.gather(u), "gather")]:
        with pytest.raises(RuntimeError, match=f"{what}: this partitioner is closed"):
            call()


def test_scatter_gather(comm):
    """Whole fields in and out, on cell centres and on faces (a staggered
    field's global array has each tile's faces: (6, n, n + 1, nz) for y
    faces)."""
    part = gd.CubedSpherePartitioner(comm, 6, LAYOUT, halo=1, nz=2)
    rng = np.random.default_rng(11)
    ok = True
    for stagger in ((0, 0), (0, 1), (1, 0), (1, 1)):
        shape = (6, 6 + stagger[0], 6 + stagger[1], 2)
        G = rng.standard_normal(shape) if part.rank == 0 else None
        f = part.zeros("f8", stagger=stagger, defaults="gt:cpu_ifirst")
        part.scatter(G, f)
        back = part.gather(f)
        if part.rank == 0:
            ok = ok and back.shape == shape and np.array_equal(back, G)
    with pytest.raises(ValueError, match="stagger"):
        part.zeros(stagger=(2, 0))
    part.close()
    all_ranks(comm, ok, "scatter/gather")
