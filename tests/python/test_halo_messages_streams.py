"""HaloMessages in the stream order, in one process (the multi-rank test is
tests/mpi/test_halo_streams.py): two ranks' messages of fields in device
memory only on the asynchronous emulated device, packed with
``pack_all(stream=)`` right after a producer's work on another stream,
handed over as MPI would once ``host_wait(True)`` returns (the bytes copied
from each send buffer into the receiver's buffer, after ``host_wait(False)``),
unpacked with ``unpack_all(stream=)`` and read on the host with no
synchronisation: the halos of the global field, through pinned and device
messages. With the stream order's waits skipped the same steps read wrong
values."""

import numpy as np
import pytest

import gtstore as gts
from gtstore._gtstore import _skip_stream_waits_for_testing as skip_waits
from gtstore.distributed import HaloMessages, HaloPlan, Partition

pytestmark = pytest.mark.usefixtures("emulated_gpu")  # conftest.py

GLOBAL = (7, 5, 3)
HALO = ((1, 2), (2, 1), (0, 0))


def expected(p, rank, G):
    """The field after the exchange: G at the wrapped global index (both
    split dimensions are periodic; K has no halo)."""
    starts, sizes = p.subdomain(rank)
    index = [np.arange(s - lo, s + n + hi) % g
             for s, n, (lo, hi), g in zip(starts, sizes, HALO, GLOBAL)]
    return G[np.ix_(*index, np.arange(GLOBAL[2]))]


def run(device_aware, rounds, seed):
    """Wrong values over `rounds` exchanges of two ranks' fields."""
    rng = np.random.default_rng(seed)
    p = Partition(GLOBAL[:2], 2, periodic=(True, True))
    fields, plans, messages = [], [], []
    for rank in range(2):
        _, sizes = p.subdomain(rank)
        shape = tuple(n + lo + hi for n, (lo, hi) in zip(tuple(sizes) + (3,), HALO))
        fields.append(gts.full(shape, np.nan, defaults="gt:gpu", halo=HALO, dims="IJK",
                               managed=None))
        plans.append(HaloPlan(p, rank, [fields[rank]]))
        messages.append(HaloMessages(plans[rank], device_aware=device_aware))
    busy = gts.zeros((64, 64, 16), device="gpu", managed=None)
    producer, packer, unpacker = gts.Stream(), gts.Stream(), gts.Stream()
    wrong = 0
    for _ in range(rounds):
        G = rng.random(GLOBAL)
        for rank, f in enumerate(fields):
            starts, sizes = p.subdomain(rank)
            written = np.full(f.shape, -5.0)
            written[1:1 + sizes[0], 2:2 + sizes[1], :] = G[
                starts[0]:starts[0] + sizes[0], starts[1]:starts[1] + sizes[1]]
            source = gts.storage(written, device="gpu", managed=None)
            with producer:  # behind longer work: still queued when packing starts
                for n in range(4):
                    busy[...] = float(n)
                f[...] = source
        for m in messages:
            m.pack_all(stream=packer)
            m.host_wait(True)
        for rank, (plan, m) in enumerate(zip(plans, messages)):  # what MPI does
            for i, n in enumerate(plan.neighbors):
                if m.local(i) or not n.send_bytes:
                    continue
                receiver = messages[n.rank]
                (j,) = [j for j, r in enumerate(plans[n.rank].neighbors)
                        if r.rank == rank and r.recv_tag == n.send_tag]
                receiver.host_wait(False)
                memoryview(receiver.recv_buffer(j))[:] = memoryview(m.send_buffer(i))
        for m in messages:
            m.unpack_all(unpacker.ptr)  # a handle does as well as the Stream
        for rank, f in enumerate(fields):
            got = np.array(gts.storage(f, device="cpu"))
            wrong += int(np.count_nonzero(got != expected(p, rank, G)))
    for s in (producer, packer, unpacker):
        s.synchronize()
    return wrong, [m.memory for m in messages]


@pytest.mark.parametrize("device_aware, memory", [(False, "pinned"), (True, "device")])
def test_messages_on_streams_give_the_global_halos(device_aware, memory):
    wrong, memories = run(device_aware, 6, seed=1)
    assert memories == [memory, memory]
    assert wrong == 0


@pytest.mark.parametrize("device_aware", [False, True])
def test_detector_a_missing_wait_gives_wrong_values(device_aware):
    skip_waits(True)
    try:
        wrong, _ = run(device_aware, 6, seed=2)
    finally:
        skip_waits(False)
    assert wrong > 0


def test_stream_arguments():
    p = Partition(GLOBAL[:2], 1, periodic=(True, True))
    f = gts.zeros((10, 8, 3), defaults="gt:gpu", halo=HALO, dims="IJK", managed=None)
    m = HaloMessages(HaloPlan(p, 0, [f]))
    s = gts.Stream()
    assert m.stream_handle() == 0 and m.stream_handle(s) == m.stream_handle(s.ptr) == s.ptr
    with s:
        assert m.stream_handle() == s.ptr  # the current stream
    m.pack_all()  # the current stream: the default one
    m.pack_all(stream=s)
    m.pack_all(stream=s.ptr)
    m.pack_all(stream=0)  # the default stream
    with s:
        m.unpack_all()
    s.synchronize()
    with pytest.raises(TypeError, match="stream: expected None, a gtstore.Stream, a stream "
                                        "handle"):
        m.pack_all(stream="s")
    with pytest.raises(ValueError, match="stream: 0x5 is not a live stream of the emulated"):
        m.unpack_all(stream=5)
    with pytest.raises(TypeError, match=r"pack_all\(\) takes at most 1 positional"):
        m.pack_all(s, s)
    host = HaloMessages(HaloPlan(p, 0, [gts.zeros((10, 8, 3), halo=HALO, dims="IJK")]))
    host.pack_all(stream=s)  # host fields: no device work, the stream is only checked
    assert host.stream_handle(s) == 0
    with pytest.raises(TypeError, match="stream: expected None"):
        host.unpack_all(stream=1.5)
    host.host_wait(True)  # nothing to wait for
