"""Halo exchanges of storages in device memory only (GPUStorage,
managed=None) on the emulated device, over real MPI: through pinned host
messages (the default where the MPI does not read device memory) and
through device messages handed to MPI (device_aware=True; the emulated
device's memory is read through the host memory behind it, as a
CUDA-aware MPI reads a GPU's). Both give the halos of the global
reference; the emulated device's counts show what crosses between device
and host, and that the buffers are made once, pinned, and freed with the
exchange."""

import gc

import numpy as np
import pytest

import gtstore as gts
from gtstore import distributed as gd

from conftest import all_ranks
from test_distributed import expected_after_exchange, global_field


@pytest.fixture(autouse=True)
def emulated_gpu(monkeypatch):
    monkeypatch.delenv("GTSTORE_DEVICE_AWARE_MPI", raising=False)
    gts.use_gpu("emulated")
    yield
    gts.use_gpu(None)


def counts():
    return gts.transfer_counts()


def device_fields(part, specs):
    return [part.full(np.nan, dtype, halo=halo, defaults="gt:gpu", managed=None)
            for dtype, halo in specs]


@pytest.mark.parametrize("device_aware, memory", [(False, "pinned"), (True, "device"),
                                                  (None, "pinned")])
@pytest.mark.parametrize("periodic", [(True, True), (False, True), (False, False)])
def test_device_fields_match_the_global_reference(comm, device_aware, memory, periodic):
    shape = (13, 10, 3)  # uneven over every process grid
    part = gd.CartesianPartitioner(comm, shape, halo=2, periodic=periodic)
    specs = [("f8", ((2, 1), (1, 2), (0, 0))), ("f4", ((1, 1), (2, 0), (1, 1))),
             (("f8", (2,)), ((0, 2), (1, 1), (0, 0)))]
    G = [global_field(shape, 20), global_field(shape, 21, "f4"),
         global_field(shape + (2,), 22)]
    fields = device_fields(part, specs)
    for g, f in zip(G, fields):
        part.scatter(g if part.rank == 0 else None, f)
    ex = part.halo_exchange(fields, device_aware=device_aware)
    ok = ex.memory == memory and ex.device_aware == (memory == "device")
    for _ in range(2):  # again, on the same buffers
        ex.exchange()
        ok = ok and all(
            np.array_equal(f.to_ndarray(), expected_after_exchange(part, h, g, np.nan),
                           equal_nan=True)
            for f, (_, h), g in zip(fields, specs, G))
    ex.close()
    part.close()
    all_ranks(comm, ok, f"device fields, {memory} messages, periodic {periodic}")


@pytest.mark.parametrize("device_aware", [False, True])
def test_what_crosses_between_device_and_host(comm, device_aware):
    """Pinned: each exchange moves exactly the bytes of the messages that
    travel device to host and back (none for the rank's own neighbours,
    whose halos are copied on the device), in pinned buffers (a send and a
    receive block) made with the exchange and freed with it, and the device
    packs in a staging block of its own per direction. Device: no byte
    crosses, and no pinned memory is made. Nothing is allocated per
    exchange."""
    part = gd.CartesianPartitioner(comm, (12, 9, 4), halo=1, periodic=(True, False))
    fields = device_fields(part, [("f8", None), ("f8", ((2, 2), (1, 1), (0, 0)))])
    gc.collect()
    before = counts()
    ex = part.halo_exchange(fields, device_aware=device_aware)
    made = counts()
    pinned = not device_aware
    plan = ex.plan
    ok = made["pinned_live_blocks"] - before["pinned_live_blocks"] == (2 if pinned else 0)
    ok = ok and made["pinned_live_bytes"] - before["pinned_live_bytes"] == (
        plan.send_bytes + plan.recv_bytes if pinned else 0)
    # the message blocks or (pinned) the device's staging where a message
    # travels, and the plan's own staging per field (for packing one message
    # at a time)
    local = ex.local_neighbors
    travels = len(local) < len(plan.neighbors)
    ok = ok and made["live_blocks"] - before["live_blocks"] == (2 if travels or not pinned
                                                                 else 0) + 2
    sent = sum(n.send_bytes for i, n in enumerate(plan.neighbors) if i not in local)
    received = sum(n.recv_bytes for i, n in enumerate(plan.neighbors) if i not in local)
    ok = ok and (local == () if comm.size > 1 else len(local) == len(plan.neighbors))
    for _ in range(3):
        gts.reset_transfer_counts()
        ex.start()
        ex.wait()
        c = counts()
        ok = ok and c["to_host_bytes"] == (sent if pinned else 0)
        ok = ok and c["to_device_bytes"] == (received if pinned else 0)
        ok = ok and c["allocs"] == 0 and c["pinned_allocs"] == 0
    ex.close()
    del ex, plan
    gc.collect()
    after = counts()
    ok = ok and after["pinned_live_blocks"] == before["pinned_live_blocks"]
    ok = ok and after["live_blocks"] == before["live_blocks"]
    part.close()
    all_ranks(comm, ok, f"transfer counts, device_aware={device_aware}")


def test_message_buffers_are_pinned_and_own_their_memory(comm):
    """The buffers mpi4py is given: writable host memory (pinned, or behind
    the emulated device's addresses) holding the same packed bytes either
    way, alive as long as a buffer is."""
    part = gd.CartesianPartitioner(comm, (8, 8, 2), halo=1, periodic=True)
    (u,) = device_fields(part, [("f8", None)])
    part.scatter(global_field((8, 8, 2), 40) if part.rank == 0 else None, u)
    plan = gd.HaloPlan(part.partition, part.rank, [u])
    pinned = gd.HaloMessages(plan, device_aware=False)
    device = gd.HaloMessages(plan, device_aware=True)
    assert (pinned.memory, pinned.device) == ("pinned", "emulated_pinned")
    assert (device.memory, device.device) == ("device", "emulated")
    index = next(i for i, n in enumerate(plan.neighbors) if n.send_bytes)
    packed = []
    for messages in (pinned, device):
        buffer = messages.send_buffer(index)
        assert not hasattr(buffer, "__cuda_array_interface__")
        messages.pack(index)
        view = memoryview(buffer)
        assert view.nbytes == buffer.nbytes == plan.neighbors[index].send_bytes
        assert not view.readonly
        packed.append(bytes(view))
        view.release()
    assert packed[0] == packed[1] and len(packed[0]) > 0
    buffer = pinned.send_buffer(index)
    live = counts()["pinned_live_blocks"]
    del pinned, device, plan
    gc.collect()
    assert counts()["pinned_live_blocks"] == live  # the buffer keeps its memory
    assert bytes(memoryview(buffer)) == packed[0]
    del buffer
    gc.collect()
    assert counts()["pinned_live_blocks"] == live - 2
    plan = gd.HaloPlan(part.partition, part.rank, [u])
    with pytest.raises(IndexError, match="index: 99"):
        gd.HaloMessages(plan).send_buffer(99)
    with pytest.raises(TypeError, match="device_aware"):
        gd.HaloMessages(plan, device_aware=1)
    part.close()


def test_host_plans_keep_host_messages(comm):
    """Fields with a host side (host storages, GPU storages with one) go
    through ordinary host memory, whatever device_aware says."""
    part = gd.CartesianPartitioner(comm, (10, 8, 2), halo=1, periodic=True)
    G = global_field((10, 8, 2), 30)
    host = part.full(np.nan, "f8")
    mirrored = part.full(np.nan, "f8", defaults="gt:gpu")  # managed="gt4py": a host side
    for f in (host, mirrored):
        part.scatter(G if part.rank == 0 else None, f)
    ok = True
    for device_aware in (None, False, True):
        before = counts()
        with part.halo_exchange([host, mirrored], device_aware=device_aware) as ex:
            ok = ok and ex.memory == "host" and not ex.device_aware
            ok = ok and counts()["pinned_live_blocks"] == before["pinned_live_blocks"]
            ex.exchange()
    expected = expected_after_exchange(part, part.halo, G, np.nan)
    ok = ok and np.array_equal(np.asarray(host), expected, equal_nan=True)
    ok = ok and np.array_equal(mirrored.to_ndarray(), expected, equal_nan=True)
    part.close()
    all_ranks(comm, ok, "host plans")


def test_environment_chooses_unless_the_argument_does(comm, monkeypatch):
    part = gd.CartesianPartitioner(comm, (8, 8, 2), halo=1, periodic=True)
    (u,) = device_fields(part, [("f8", None)])
    memories = []
    for env, device_aware in [("1", None), ("0", None), ("auto", None), ("1", False),
                              ("0", True)]:
        monkeypatch.setenv("GTSTORE_DEVICE_AWARE_MPI", env)
        with part.halo_exchange([u], device_aware=device_aware) as ex:
            memories.append(ex.memory)
    part.close()
    all_ranks(comm, memories == ["device", "pinned", "pinned", "pinned", "device"],
              f"GTSTORE_DEVICE_AWARE_MPI: {memories}")


def test_bad_choices_fail_on_every_rank(comm, monkeypatch):
    """A bad device_aware, or a bad GTSTORE_DEVICE_AWARE_MPI on one rank
    only: an error on every rank, none waiting for the others."""
    part = gd.CartesianPartitioner(comm, (8, 8, 2), halo=1, periodic=True)
    (u,) = device_fields(part, [("f8", None)])
    with pytest.raises(TypeError, match="device_aware: expected None, True or False"):
        part.halo_exchange([u], device_aware="yes")
    if part.rank == 0:
        monkeypatch.setenv("GTSTORE_DEVICE_AWARE_MPI", "true")
    match = "GTSTORE_DEVICE_AWARE_MPI" if part.rank == 0 else "rank 0 failed"
    with pytest.raises(ValueError, match=match):
        part.halo_exchange([u])
    monkeypatch.delenv("GTSTORE_DEVICE_AWARE_MPI", raising=False)
    with part.halo_exchange([u]) as ex:  # the ranks still talk: nothing is left hanging
        ex.exchange()
    part.close()


def test_mpi_reads_device_asks_the_mpi(comm):
    """The wheel's Open MPI is not CUDA-aware (MPIX_Query_cuda_support() is
    0), so detection keeps device fields on pinned messages."""
    reads = gd.mpi_reads_device()
    assert reads in (0, 2) and gd.mpi_reads_device() == reads
    part = gd.CartesianPartitioner(comm, (8, 8, 2), halo=1, periodic=True)
    (u,) = device_fields(part, [("f8", None)])
    with part.halo_exchange([u]) as ex:
        assert ex.memory == "pinned"  # never the emulated device by detection
    part.close()
