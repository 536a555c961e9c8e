"""gtstore.distributed's plans in one process, without MPI: the partition,
and a whole halo exchange of every rank's storages run here by packing each
message and unpacking it where its tags say, checked against the global
field. (The exchange over MPI: tests/mpi/.)"""

import numpy as np
import pytest

import gtstore as gts
from gtstore.distributed import HaloPlan, Partition


def test_partition_like_mpi_dims_create():
    p = Partition((10, 7), 6)
    assert p.process_grid == (3, 2)
    assert p.nranks == 6 and p.ndim == 2
    assert p.labels == ("I", "J") and p.global_shape == (10, 7)
    assert p.periodic == (False, False)
    assert Partition((8, 8), 12).process_grid == (4, 3)
    assert Partition((8, 8), 4, process_grid=(0, 4)).process_grid == (1, 4)


def test_partition_blocks_uneven():
    p = Partition((10, 7), 6, process_grid=(3, 2))
    # rank 3 = (1, 1): I points 4..6, J points 4..6; the first blocks are larger
    assert p.coords(3) == (1, 1)
    assert p.subdomain(3) == ((4, 4), (3, 3))
    assert p.subdomain(0) == ((0, 0), (4, 4))
    assert [p.subdomain(r)[1][0] for r in (0, 2, 4)] == [4, 3, 3]
    assert p.min_block(0) == 3


def test_partition_neighbors():
    p = Partition((8, 9), 6, process_grid=(2, 3), periodic=(False, True))
    assert p.neighbor(0, (-1, 0)) is None
    assert p.neighbor(0, (0, -1)) == 2
    assert p.neighbor(0, (1, -1)) == 5
    assert p.rank_of((0, -1)) == 2
    assert p.rank_of((2, 0)) is None
    assert p.periodic == (False, True)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(global_shape=(3, 8), nranks=4, process_grid=(4, 1)), ValueError,
         "3 points along I cannot be split over 4 ranks"),
        (dict(global_shape=(8, 8), nranks=6, process_grid=(4, 0)), ValueError, "process_grid"),
        (dict(global_shape=(8, 8), nranks=4, process_grid=(2,)), ValueError, "process_grid"),
        (dict(global_shape=(8, 8), nranks=0), ValueError, "nranks"),
        (dict(global_shape=(8, 8, 8, 8), nranks=1), ValueError, "global_shape"),
        (dict(global_shape=(8, 8), nranks=1, periodic=(True,)), ValueError, "periodic"),
        (dict(global_shape=(8, 8), nranks=1, periodic=(1, 0)), TypeError, "periodic"),
        (dict(global_shape=(8, 8), nranks=1, labels="II"), ValueError, "labels"),
        (dict(global_shape=(8, 8), nranks=1, labels="I"), ValueError, "labels"),
    ],
)
def test_partition_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        Partition(**kwargs)


def test_partition_bad_rank():
    p = Partition((8, 8), 4)
    with pytest.raises(IndexError, match="rank: 4 is outside"):
        p.subdomain(4)
    with pytest.raises(ValueError, match="coords"):
        p.rank_of((1,))


# ---- a whole exchange in one process -----------------------------------------

def global_field(global_shape, f, dtype):
    rng = np.random.default_rng(f)
    return rng.random(global_shape).astype(dtype)


def make_field(p, rank, halo, global_shape, dtype, preset, f):
    """A rank's storage: the global field in its domain, NaN in its halo."""
    starts, sizes = p.subdomain(rank)
    shape = tuple(n + lo + hi for n, (lo, hi) in zip(sizes + (global_shape[2],), halo))
    s = gts.full(shape, np.nan, dtype=dtype, defaults=preset, halo=halo, dims="IJK")
    s.domain_view[...] = global_field(global_shape, f, dtype)[
        starts[0]:starts[0] + sizes[0], starts[1]:starts[1] + sizes[1]]
    return s


def expected_local(p, rank, halo, global_shape, f, dtype):
    """What a rank's storage holds after an exchange: the global field at
    the wrapped global index, NaN past a non-periodic edge."""
    starts, sizes = p.subdomain(rank)
    g = global_field(global_shape, f, dtype)
    index, valid = [], []
    for d in range(2):
        lo, hi = halo[d]
        i = np.arange(-lo, sizes[d] + hi) + starts[d]
        ok = (i >= 0) & (i < global_shape[d])
        if p.periodic[d]:
            i, ok = i % global_shape[d], np.ones_like(ok)
        index.append(np.clip(i, 0, global_shape[d] - 1))
        valid.append(ok)
    lo, hi = halo[2]
    # K is not split: its halo is whatever each rank holds there (NaN here)
    k = np.arange(-lo, global_shape[2] + hi)
    kvalid = (k >= 0) & (k < global_shape[2])
    values = g[np.ix_(index[0], index[1], np.clip(k, 0, global_shape[2] - 1))]
    mask = valid[0][:, None, None] & valid[1][None, :, None] & kvalid[None, None, :]
    return np.where(mask, values, np.nan)


def exchange_in_process(plans):
    for rank, plan in enumerate(plans):
        for index, (to, _, send_tag, _, send_bytes, _) in enumerate(plan.neighbors):
            if not send_bytes:
                continue
            message = np.empty(send_bytes, dtype=np.uint8)
            plan.pack(index, message)
            receiver = plans[to]
            (j,) = [j for j, n in enumerate(receiver.neighbors) if n[0] == rank and n[3] == send_tag]
            receiver.unpack(j, message)


@pytest.mark.parametrize("preset", ["gt:cpu_ifirst", "gt:cpu_kfirst", "numpy"])
@pytest.mark.parametrize("periodic", [(False, False), (True, True), (True, False)])
@pytest.mark.parametrize("nranks, grid", [(1, (1, 1)), (2, (2, 1)), (4, (2, 2)), (6, (3, 2))])
def test_exchange_matches_global_field(preset, periodic, nranks, grid):
    global_shape = (13, 11, 3)  # uneven over every grid
    halos = [((2, 1), (1, 3), (0, 0)), ((1, 1), (0, 2), (1, 0))]  # per field, per side
    dtypes = ["f8", "f4"]
    p = Partition(global_shape[:2], nranks, process_grid=grid, periodic=periodic)
    fields = [[] for _ in range(nranks)]
    for rank in range(nranks):
        for f, (halo, dtype) in enumerate(zip(halos, dtypes)):
            fields[rank].append(make_field(p, rank, halo, global_shape, dtype, preset, f))
    plans = [HaloPlan(p, rank, fields[rank]) for rank in range(nranks)]
    assert len({plan.signature for plan in plans}) == 1
    exchange_in_process(plans)
    for rank in range(nranks):
        for f, (halo, dtype) in enumerate(zip(halos, dtypes)):
            np.testing.assert_array_equal(
                np.asarray(fields[rank][f]),
                expected_local(p, rank, halo, global_shape, f, dtype),
                err_msg=f"rank {rank}, field {f}")


def test_plan_messages_and_corners():
    p = Partition((9, 9), 9)  # 3 x 3, open: the centre rank has 8 neighbours
    s = gts.zeros((3 + 3, 3 + 3, 4), halo=((2, 1), (1, 2), (0, 0)), dims="IJK")
    plan = HaloPlan(p, 4, [s])
    offsets = [n[1] for n in plan.neighbors]
    assert offsets == [(-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1)]
    rank, offset, send_tag, recv_tag, send_bytes, recv_bytes = plan.neighbors[0]
    assert (rank, send_tag, recv_tag) == (0, 0, 8)
    assert recv_bytes == 2 * 1 * 4 * 8 and send_bytes == 1 * 2 * 4 * 8  # a corner: halo x halo
    assert plan.recv_bytes == (6 * 6 - 9) * 4 * 8  # the halo ring, nothing more
    assert plan.fields == (s,)
    corner = HaloPlan(p, 0, [s])
    assert [n[1] for n in corner.neighbors] == [(0, 1), (1, 0), (1, 1)]


def test_neighbors_have_names():
    """A neighbour is a tuple (HaloNeighbor) whose fields also have names."""
    from gtstore.distributed import HaloNeighbor

    p = Partition((9, 9), 9)
    s = gts.zeros((3 + 3, 3 + 3, 4), halo=((2, 1), (1, 2), (0, 0)), dims="IJK")
    first = HaloPlan(p, 4, [s]).neighbors[0]
    assert isinstance(first, HaloNeighbor) and isinstance(first, tuple)
    assert first == (0, (-1, -1), 0, 8, 1 * 2 * 4 * 8, 2 * 1 * 4 * 8)
    assert (first.rank, first.offset, first.send_tag, first.recv_tag) == (0, (-1, -1), 0, 8)
    assert (first.send_bytes, first.recv_bytes) == (1 * 2 * 4 * 8, 2 * 1 * 4 * 8)


def test_message_layout():
    """Rank 0 of 2 in I, periodic in J only (its own neighbour there): rank
    1's messages travel and come first, in neighbour order, then its own
    two; the places are those of HaloMessages' blocks (libgtstore's one
    layout)."""
    from gtstore.distributed import HaloMessages

    p = Partition((4, 3), 2, process_grid=(2, 1), periodic=(False, True))
    s = gts.zeros((2 + 2, 3 + 3), halo=((1, 1), (1, 2)), dims="IJ")
    plan = HaloPlan(p, 0, [s])
    assert [(n.rank, n.offset) for n in plan.neighbors] == [
        (0, (0, -1)), (0, (0, 1)), (1, (1, -1)), (1, (1, 0)), (1, (1, 1))]
    assert [n.recv_bytes for n in plan.neighbors] == [16, 32, 8, 24, 16]
    assert [n.send_bytes for n in plan.neighbors] == [32, 16, 16, 24, 8]
    slices, travel_bytes = plan.message_layout("recv")
    assert travel_bytes == 8 + 24 + 16
    assert slices == (slice(48, 64), slice(64, 96), slice(0, 8), slice(8, 32), slice(32, 48))
    slices, travel_bytes = plan.message_layout(direction="send")
    assert travel_bytes == 16 + 24 + 8
    assert slices == (slice(48, 80), slice(80, 96), slice(0, 16), slice(16, 40), slice(40, 48))
    messages = HaloMessages(plan, device_aware=False, mpi_reads=0)
    assert [messages.local(i) for i in range(5)] == [True, True, False, False, False]
    for direction, buffer in (("send", messages.send_buffer), ("recv", messages.recv_buffer)):
        starts = [np.frombuffer(buffer(i), np.uint8).ctypes.data for i in range(5)]
        block = starts[2]  # the first travelling message: the block's start
        assert [a - block for a in starts] == [
            place.start for place in plan.message_layout(direction)[0]]
    with pytest.raises(ValueError, match="direction: expected \"send\" or \"recv\", got 'up'"):
        plan.message_layout("up")
    with pytest.raises(TypeError, match="direction: expected \"send\" or \"recv\", got True"):
        plan.message_layout(True)
    with pytest.raises(TypeError, match="direction"):
        plan.message_layout()


def test_plan_bad_input():
    p = Partition((8, 6), 4, process_grid=(4, 1), periodic=(False, True))
    ok = gts.zeros((2 + 2, 6 + 2), halo=((1, 1), (1, 1)), dims="IJ")
    with pytest.raises(TypeError, match=r"fields\[1\]: expected a gtstore Storage"):
        HaloPlan(p, 0, [ok, np.zeros((4, 8))])
    with pytest.raises(ValueError, match="^fields: empty; an exchange needs at least one field$"):
        HaloPlan(p, 0, [])  # named as Python names it (libgtstore's is nfields)
    other = gts.zeros((3 + 2, 6 + 2), halo=((1, 1), (1, 1)), dims="IJ")
    with pytest.raises(ValueError, match=r"fields\[0\]: its domain has 3 points along I, this "
                                         r"rank's subdomain 2"):
        HaloPlan(p, 0, [other])
    wide = gts.zeros((2 + 3, 6 + 2), halo=((0, 3), (1, 1)), dims="IJ")
    with pytest.raises(ValueError, match="wider than the smallest subdomain"):
        HaloPlan(p, 1, [wide])
    no_j = gts.zeros((4,), halo=((1, 1),), dims="I")
    with pytest.raises(ValueError, match="no dimension labelled J"):
        HaloPlan(p, 0, [no_j])
    plan = HaloPlan(p, 1, [ok])
    with pytest.raises(ValueError, match="buffer: nbytes"):
        plan.pack(0, np.empty(3, np.uint8))
    with pytest.raises(IndexError, match="index"):
        plan.unpack(len(plan.neighbors), np.empty(8, np.uint8))
    with pytest.raises(BufferError, match="not writable"):
        plan.pack(0, b"read-only bytes")


@pytest.fixture
def emulated_gpu():
    gts.use_gpu("emulated")
    yield
    gts.use_gpu(None)


def test_exchange_of_gpu_fields_through_their_host_side(emulated_gpu):
    """gt:gpu storages (a device buffer with a host side) are packed from
    and unpacked into the host side, synced: values written on the device
    travel, and the halos written by unpacking reach the device."""
    global_shape = (6, 4, 2)
    halo = ((1, 1), (1, 1), (0, 0))
    p = Partition(global_shape[:2], 2, periodic=(True, True))
    fields = []
    for rank in range(2):
        starts, sizes = p.subdomain(rank)
        s = gts.full((sizes[0] + 2, sizes[1] + 2, 2), np.nan, defaults="gt:gpu", halo=halo,
                     dims="IJK")
        device = s.to_ndarray()  # the device side (synced there first)
        device[1:-1, 1:-1, :] = global_field(global_shape, 0, "f8")[
            starts[0]:starts[0] + sizes[0], starts[1]:starts[1] + sizes[1]]
        s.set_device_modified()  # the host side still holds NaN
        fields.append(s)
    assert type(fields[0]).__name__ == "SoftwareManagedGPUStorage"
    plans = [HaloPlan(p, rank, [fields[rank]]) for rank in range(2)]
    exchange_in_process(plans)
    for rank in range(2):
        assert fields[rank].sync_state.state == gts.SyncState.SYNC_HOST_DIRTY
        expected = expected_local(p, rank, halo, global_shape, 0, "f8")
        np.testing.assert_array_equal(fields[rank].to_ndarray(), expected)  # synced back
        np.testing.assert_array_equal(np.asarray(fields[rank]), expected)


def test_exchange_of_device_only_fields_packs_on_the_device(emulated_gpu):
    """GPUStorages without a host side (managed=None) are packed on their
    device: only the messages' bytes cross to the host."""
    global_shape = (6, 4, 2)
    halo = ((1, 2), (2, 1), (0, 0))
    p = Partition(global_shape[:2], 2, periodic=(True, True))
    fields = []
    for rank in range(2):
        starts, sizes = p.subdomain(rank)
        s = gts.full((sizes[0] + 3, sizes[1] + 3, 2), np.nan, defaults="gt:gpu", halo=halo,
                     dims="IJK", managed=None)
        s.to_ndarray()[1:-2, 2:-1, :] = global_field(global_shape, 0, "f8")[
            starts[0]:starts[0] + sizes[0], starts[1]:starts[1] + sizes[1]]
        fields.append(s)
    assert type(fields[0]).__name__ == "GPUStorage"
    plans = [HaloPlan(p, rank, [fields[rank]]) for rank in range(2)]
    gts.reset_transfer_counts()
    exchange_in_process(plans)
    counts = gts.transfer_counts()
    moved = sum(plan.send_bytes for plan in plans)
    assert counts["to_host_bytes"] == moved and counts["to_device_bytes"] == moved
    for rank in range(2):
        np.testing.assert_array_equal(fields[rank].to_ndarray(),
                                      expected_local(p, rank, halo, global_shape, 0, "f8"))


def test_partition_storage_halo_and_local_shape():
    # I split in 3 blocks (4, 3, 3), J in one periodic block of 6, K whole
    p = Partition((10, 6), 3, process_grid=(3, 1), periodic=(False, True))
    dims = ("I", "J", "K")
    assert p.storage_halo(dims, 2) == ((2, 2), (2, 2), (0, 0))
    assert p.storage_halo(("K", "I", "J"), 1) == ((0, 0), (1, 1), (1, 1))
    assert p.storage_halo(dims, (1, (0, 2), 5)) == ((1, 1), (0, 2), (5, 5))
    assert p.local_shape(0, dims, (10, 6, 5), 2) == (8, 10, 5)
    assert p.local_shape(2, dims, (10, 6, 5), ((1, 0), (0, 0), (1, 1))) == (4, 6, 7)
    assert p.local_shape(1, ("K", "J", "I"), (5, 6, 10), 1) == (5, 8, 5)
    with pytest.raises(ValueError, match=r"halo: \(4, 1\) along I is wider than the smallest "
                                         r"subdomain \(3 points\), which must fill it"):
        p.storage_halo(dims, ((4, 1), 0, 9))
    with pytest.raises(ValueError, match=r"halo: \(7, 7\) along J is wider"):
        p.local_shape(0, dims, (10, 6, 5), (0, 7, 0))
    with pytest.raises(ValueError, match=r"halo: \(1, 2\) has 2 entries for 3 dimensions"):
        p.storage_halo(dims, (1, 2))
    with pytest.raises(TypeError, match="halo"):
        p.storage_halo(dims, ("a", 1, 1))
    with pytest.raises(ValueError, match="the partition splits I, which the dims lack"):
        p.local_shape(0, ("J", "K"), (6, 5), 0)
    with pytest.raises(ValueError, match="global_shape: 11 points along I"):
        p.local_shape(0, dims, (11, 6, 5), 0)
    with pytest.raises(ValueError, match="global_shape: .* has 2 extents for 3 dimensions"):
        p.local_shape(0, dims, (10, 6), 0)
    with pytest.raises(IndexError, match=r"rank: 3 is outside \[0, 3\)"):
        p.local_shape(3, dims, (10, 6, 5), 0)
    with pytest.raises(ValueError, match=r"halo: \(-1, -1\) along K: a negative width"):
        p.local_shape(0, dims, (10, 6, 5), (0, 0, -1))
    with pytest.raises(ValueError, match="global_shape: negative extent -5"):
        p.local_shape(0, dims, (10, 6, -5), 0)


@pytest.mark.parametrize("halo, message", [
    (-2, "halo: -2 is a negative width"),
    (((-1, 0), 0, 0), r"halo: \(-1, 0\) along I: a negative width"),
    ((0, 0, (0, -3)), r"halo: \(0, -3\) along K: a negative width"),  # K is not split
])
def test_partition_refuses_a_negative_halo(halo, message):
    """libgtstore refuses a negative width (gts_partition_halo,
    gts_partition_check_halo): it gave storages smaller than their domain."""
    p = Partition((10, 6), 3, process_grid=(3, 1))
    dims = ("I", "J", "K")
    with pytest.raises(ValueError, match=message):
        p.storage_halo(dims, halo)
    with pytest.raises(ValueError, match=message):
        p.local_shape(0, dims, (10, 6, 5), halo)


def test_devices_describe_their_capabilities():
    from gtstore.distributed import _cuda_memory_type

    kinds = {d["name"]: (d["kind"], d["cuda_array_interface"]) for d in gts.devices()}
    assert kinds["cpu"] == ("host", False)
    assert kinds["emulated"] == ("gpu", False)
    cuda = [d for d in gts.devices() if d["kind"] == "gpu" and d["cuda_array_interface"]]
    assert all(d["name"].startswith("cuda") for d in cuda)
    # what a CUDA-aware MPI reads: CUDA's device memory, where gtstore reaches a CUDA GPU
    assert _cuda_memory_type() == (cuda[0]["dlpack"][0] if cuda else 0)
    assert _cuda_memory_type() in (0, 2)


FENCE_CHECK = """
import ctypes
import gtstore
from gtstore.distributed import HaloMessages, HaloPlan, Partition

fake = ctypes.CDLL({library!r})
fake.fake_cuda_stat.restype = ctypes.c_longlong
fake.fake_cuda_stat.argtypes = [ctypes.c_char_p]
assert gtstore.gpu()["name"] == "cuda:0", gtstore.gpu()
p = Partition((4,), 1, periodic=True, labels=("I",))  # its own neighbour
f = gtstore.zeros((4 + 2,), halo=((1, 1),), dims="I", device="gpu", managed="cuda")
messages = HaloMessages(HaloPlan(p, 0, [f]), device_aware=False, mpi_reads=0)
assert messages.memory == "host"  # the managed field is packed by the host
syncs = lambda: fake.fake_cuda_stat(b"context_syncs") + fake.fake_cuda_stat(b"stream_syncs")
before = syncs()
messages.pack_all()
assert syncs() > before, "the host read managed memory without waiting for the GPU"
print("fence: ok")
"""


def test_messages_wait_for_the_gpu_before_the_host_reads_managed_memory():
    """A field in CUDA managed memory is packed by the host, which reads it
    only once the GPU's queued work is done (gts_storage_access's fence):
    counted by the fake CUDA driver, in a fresh interpreter that loads it."""
    from conftest import run_python
    from test_cuda_arrays import fake_driver

    library = fake_driver()
    if library is None:
        pytest.skip("the fake CUDA driver is not built (meson compile -C build/release)")
    done = run_python(FENCE_CHECK.format(library=library), GTSTORE_LIBCUDA=library,
                      GTSTORE_GPU="")
    assert done.returncode == 0 and "fence: ok" in done.stdout, done.stderr[-3000:]


def test_constructor_arguments_parsed_as_declared():
    """The constructors parse with the extension's one argument parser:
    errors name the parameter and the value."""
    from gtstore.distributed import CubePartition, HaloMessages
    cases = [
        (lambda: Partition((8, 8), "x"), TypeError, "nranks: expected an integer, got 'x'"),
        (lambda: Partition((8, 8), 2**40), ValueError, "nranks: 1099511627776 is outside"),
        (lambda: Partition((8, 8)), TypeError, r"Partition\(\) missing required argument 'nranks'"),
        (lambda: Partition((8, 8), 2, bogus=1), TypeError, "unexpected keyword argument 'bogus'"),
        (lambda: Partition((8, 8), 2, nranks=2), TypeError, "multiple values for argument 'nranks'"),
        (lambda: HaloMessages(1), TypeError, "plan: expected a gtstore.HaloPlan, got 1"),
        (lambda: CubePartition(4, (1, 1), 3), TypeError, "takes at most 2 positional arguments"),
        (lambda: gts.KernelCaller(1, print), TypeError, "signature: expected a gtstore.Signature"),
        (lambda: CubePartition(4).rank(0, 0), TypeError,
         r"rank\(\) missing required argument 'column'"),
        (lambda: CubePartition(4).wrap(0, 1, 1, 1), TypeError, r"wrap\(\) takes at most 3"),
        (lambda: Partition((8, 8), 2).neighbor(0), TypeError,
         r"neighbor\(\) missing required argument 'offset'"),
    ]
    for call, error, message in cases:
        with pytest.raises(error, match=message):
            call()
    assert Partition(global_shape=(8, 8), nranks=2, periodic=True).nranks == 2
