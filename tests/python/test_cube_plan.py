"""gtstore.distributed's cubed sphere in one process, without MPI: the
partition's conventions (pace's rank order, FV3's edges and turns), bad
input, and whole exchanges of all ranks' storages run here by packing each
message and unpacking it at its receiver, checked cell by cell against the
cube's wrap. (The exchange over MPI, against the six tiles in NumPy and
against pace-util: tests/mpi/.)"""

import numpy as np
import pytest

import gtstore as gts
from gtstore.distributed import CubePartition, HaloPlan


def test_partition_like_pace():
    p = CubePartition(12, (2, 3))
    assert p.n == 12 and p.layout == (2, 3) and p.nranks == 36 and p.ranks_per_tile == 6
    assert p.locate(17) == (2, 1, 2)
    assert p.rank(2, 1, 2) == 17
    assert p.subdomain(17) == ((8, 6), (4, 6))
    assert p.min_block() == 4
    one = CubePartition(8)
    # tile 0: west is tile 4 turned once, north tile 2 turned three times
    assert one.neighbor(0, -1, 0) == (4, 1)
    assert one.neighbor(0, 0, 1) == (2, 3)
    assert one.neighbor(0, 1, 0) == (1, 0)
    assert one.neighbor(1, 1, 0) == (3, 1)
    assert one.neighbor(0, 1, 1) is None  # a corner of the cube
    assert one.wrap(0, -1, 2) == (4, 5, 7, 1)
    assert one.wrap(0, -1, -1) is None


@pytest.mark.parametrize("call, error, text", [
    (lambda: CubePartition(0), ValueError, "n:"),
    (lambda: CubePartition(4, (0, 1)), ValueError, "layout"),
    (lambda: CubePartition(4, (1, 2, 3)), ValueError, "layout"),
    (lambda: CubePartition(4, (5, 1)), ValueError, "rows"),
    (lambda: CubePartition(4.0), TypeError, "n"),
    (lambda: CubePartition(4).locate(6), IndexError, "rank"),
    (lambda: CubePartition(4).rank(6, 0, 0), IndexError, "tile"),
    (lambda: CubePartition(4).neighbor(0, 2, 0), ValueError, "dx"),
    (lambda: CubePartition(4).neighbor(0, 0, 0), ValueError, "direction"),
    (lambda: CubePartition(4).wrap(7, 0, 0), IndexError, "tile"),
])
def test_bad_input(call, error, text):
    with pytest.raises(error, match=text):
        call()


def make(p, rank, h, preset):
    (x0, y0), (nx, ny) = p.subdomain(rank)
    return gts.full((nx + 2 * h, ny + 2 * h, 2), np.nan, "f8", dims="IJK",
                    halo=((h, h), (h, h), (0, 0)), defaults=preset)


def reference(f, tile, x, y, k):
    return (((f + 1) * 10.0 + tile) * 100 + x) * 100 + y + k / 10


@pytest.mark.parametrize("layout", [(1, 1), (2, 2), (2, 3)])
@pytest.mark.parametrize("preset", ["gt:cpu_ifirst", "gt:cpu_kfirst", "F"])
def test_exchange_in_one_process(layout, preset, n=6, h=2):
    p = CubePartition(n, layout)
    components = ["u", "scalar", "v"]
    fields = {r: [make(p, r, h, preset) for _ in components] for r in range(p.nranks)}
    for r, fs in fields.items():
        tile = p.locate(r)[0]
        (x0, y0), _ = p.subdomain(r)
        for f, s in enumerate(fs):
            d = np.asarray(s.domain_view)
            i, j, k = np.indices(d.shape)
            d[...] = reference(f, tile, x0 + i, y0 + j, k)
    plans = {r: HaloPlan(p, r, fields[r], components=components) for r in range(p.nranks)}
    for r, plan in plans.items():
        for i, (to, _, _, _, send_bytes, _) in enumerate(plan.neighbors):
            j = [nb[0] for nb in plans[to].neighbors].index(r)
            message = bytearray(send_bytes)
            plan.pack(i, message)
            plans[to].unpack(j, message)
    assert wrong_cells(p, fields, h) == 0


def wrong_cells(p, fields, h, values=np.asarray):
    """The cells of the three fields (u, scalar, v) of every rank that
    differ from the wrap's reference (NaN at the cube's corners)."""
    bad = 0
    for r, fs in fields.items():
        tile = p.locate(r)[0]
        (x0, y0), _ = p.subdomain(r)
        got = [values(s) for s in fs]
        for (i, j) in np.ndindex(got[0].shape[:2]):
            wrapped = p.wrap(tile, x0 + i - h, y0 + j - h)
            for k in range(2):
                if wrapped is None:
                    want = [np.nan] * 3
                else:
                    t, x, y, turns = wrapped
                    uu, q, vv = (reference(f, t, x, y, k) for f in range(3))
                    uu, vv = [(uu, vv), (vv, -uu), (-uu, -vv), (-vv, uu)][turns]
                    want = [uu, q, vv]
                have = [g[i, j, k] for g in got]
                bad += not np.array_equal(have, want, equal_nan=True)
    return bad


@pytest.fixture
def emulated_gpu():
    gts.use_gpu("emulated")
    yield
    gts.use_gpu(None)


def test_device_fields_all_at_once(emulated_gpu, n=6, h=2):
    """Storages in device memory only (managed=None): every message packed
    at once by the device's batched copies into pinned host buffers, the
    negated components negated there, unpacked at once."""
    from gtstore.distributed import HaloMessages
    p = CubePartition(n, (2, 2))
    components = ["u", "scalar", "v"]
    fields = {}
    for r in range(p.nranks):
        tile = p.locate(r)[0]
        (x0, y0), (nx, ny) = p.subdomain(r)
        fs = []
        for f in range(3):
            s = gts.full((nx + 2 * h, ny + 2 * h, 2), np.nan, "f8", dims="IJK",
                         halo=((h, h), (h, h), (0, 0)), defaults="gt:gpu", managed=None)
            i, j, k = np.indices((nx, ny, 2))
            values = np.full(s.shape, np.nan)
            values[h:-h, h:-h] = reference(f, tile, x0 + i, y0 + j, k)
            s.to_ndarray()[...] = values
            fs.append(s)
        fields[r] = fs
    assert type(fields[0][0]).__name__ == "GPUStorage"
    plans = {r: HaloPlan(p, r, fields[r], components=components) for r in fields}
    messages = {r: HaloMessages(plans[r], device_aware=False, mpi_reads=0) for r in plans}
    assert all(m.at_once and m.memory == "pinned" for m in messages.values())
    for m in messages.values():
        m.pack_all()
    for r, plan in plans.items():
        for i, nb in enumerate(plan.neighbors):
            j = [m[0] for m in plans[nb[0]].neighbors].index(r)
            out = np.frombuffer(messages[r].send_buffer(i), np.uint8)
            np.frombuffer(messages[nb[0]].recv_buffer(j), np.uint8)[...] = out
    for m in messages.values():
        m.unpack_all()
    assert wrong_cells(p, fields, h, values=lambda s: np.array(s.to_ndarray())) == 0


def test_bad_fields():
    p = CubePartition(6)
    a, b = make(p, 0, 2, "C"), make(p, 0, 2, "C")
    with pytest.raises(ValueError, match="without a V"):
        HaloPlan(p, 0, [a, b], components=["u", "scalar"])
    with pytest.raises(ValueError, match="components"):
        HaloPlan(p, 0, [a, b], components=["u"])
    with pytest.raises(ValueError, match="components"):
        HaloPlan(p, 0, [a, b], components=["u", "w"])
    with pytest.raises(TypeError, match="components"):
        HaloPlan(p, 0, [a, b], components=["u", None])
    with pytest.raises(TypeError, match="partition"):
        HaloPlan("cube", 0, [a])
    wide = make(p, 0, 3, "C")
    with pytest.raises(ValueError, match="halo"):
        HaloPlan(p, 0, [a, wide])
    c = gts.zeros((10, 11, 2), dims="IJK", halo=((2, 2), (2, 3), (0, 0)))
    with pytest.raises(ValueError, match="fields\\[0\\]"):
        HaloPlan(p, 0, [c])
    from gtstore.distributed import Partition
    with pytest.raises(ValueError, match="components"):
        HaloPlan(Partition((6, 6), 1), 0, [a], components=["scalar"])


def test_staggered_fields():
    """A D grid's wind (u on y faces, v on x faces) exchanges; a scalar on
    the faces of one axis, a v not on u's faces swapped, or a halo that
    leaves no room for the shared face are refused."""
    p = CubePartition(6, (2, 2))

    def field(sx, sy, h=1):
        return gts.zeros((3 + sx + 2 * h, 3 + sy + 2 * h, 2), dims="IJK",
                         halo=((h, h), (h, h), (0, 0)))
    u, v = field(0, 1), field(1, 0)
    plan = HaloPlan(p, 0, [u, v], components=["u", "v"])
    assert plan.send_bytes > 0 and plan.recv_bytes > 0
    HaloPlan(p, 0, [field(1, 1)])  # a scalar on the cells' corners
    with pytest.raises(ValueError, match="fields\\[0\\]: a scalar on the faces"):
        HaloPlan(p, 0, [field(1, 0)])
    with pytest.raises(ValueError, match="needs v on"):
        HaloPlan(p, 0, [u, field(0, 1)], components=["u", "v"])
    with pytest.raises(ValueError, match="shared face"):
        HaloPlan(p, 0, [field(0, 1, h=3), field(1, 0, h=3)], components=["u", "v"])


def test_check_halo():
    p = CubePartition(12, (2, 3))  # blocks of 6 x 4 cells: the smallest is 4
    for halo in (0, 4):
        assert p.check_halo(halo) is None
    for halo in (5, -1):
        with pytest.raises(ValueError, match=rf"halo: {halo} is outside \[0, 4\] \(the smallest "
                                             r"block, which must fill it\)"):
            p.check_halo(halo)
    with pytest.raises(TypeError, match="halo"):
        p.check_halo(1.5)
