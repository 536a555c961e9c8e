"""Halo exchanges of CUDA device memory (GPUStorage, managed=None) over
MPI: through pinned host messages (cuda_host:0) and, where the MPI is
CUDA-aware, through device messages handed to MPI by their CUDA array
interface. The same checks as test_device_messages.py on the emulated
device, run on a real GPU.

Skipped, with the reason, where there is no CUDA GPU; with the fake driver
of tests/c as the GPU (GTSTORE_LIBCUDA), as ./dev test runs it, the pinned
path runs on host memory. ./dev gpu-check runs it with
GTSTORE_REQUIRE_CUDA=1, under which a missing GPU is an error, not a skip.
"""

import os

import numpy as np
import pytest

import gtstore as gts
from gtstore import distributed as gd

from conftest import all_ranks
from test_distributed import expected_after_exchange, global_field


def cuda_reason():
    gts.use_gpu(None)
    try:
        gts.use_gpu("cuda")
    except Exception as error:  # noqa: BLE001 - the reason is the message
        if os.environ.get("GTSTORE_REQUIRE_CUDA"):  # ./dev gpu-check: a skip would hide it
            raise RuntimeError(f"GTSTORE_REQUIRE_CUDA is set, but there is no CUDA GPU: {error}")
        return f"no CUDA GPU: {error}"
    finally:
        gts.use_gpu(None)
    return None


REASON = cuda_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")


@pytest.fixture(autouse=True)
def cuda_gpu(monkeypatch):
    monkeypatch.delenv("GTSTORE_DEVICE_AWARE_MPI", raising=False)
    gts.use_gpu("cuda")
    yield
    gts.use_gpu(None)


def exchange_and_check(comm, device_aware):
    shape = (13, 10, 3)
    part = gd.CartesianPartitioner(comm, shape, halo=2, periodic=(True, False))
    halos = [((2, 1), (1, 2), (0, 0)), ((1, 1), (2, 0), (1, 1))]
    G = [global_field(shape, 50), global_field(shape, 51, "f4")]
    fields = [part.full(np.nan, dtype, halo=h, defaults="gt:gpu", managed=None)
              for dtype, h in zip(("f8", "f4"), halos)]
    for g, f in zip(G, fields):
        part.scatter(g if part.rank == 0 else None, f)
    ex = part.halo_exchange(fields, device_aware=device_aware)
    memory = ex.memory
    ex.exchange()
    ex.exchange()
    ok = type(fields[0]).__name__ == "GPUStorage" and all(
        np.array_equal(gd._host_values(f), expected_after_exchange(part, h, g, np.nan),
                       equal_nan=True)
        for f, h, g in zip(fields, halos, G))
    ex.close()
    part.close()
    return ok, memory


def test_pinned_messages(comm):
    ok, memory = exchange_and_check(comm, False)
    all_ranks(comm, ok and memory == "pinned", f"CUDA fields, pinned messages ({memory})")


def test_pinned_buffers_are_cuda_host_memory(comm):
    part = gd.CartesianPartitioner(comm, (8, 8, 2), halo=1, periodic=True)
    u = part.zeros("f8", defaults="gt:gpu", managed=None)
    messages = gd.HaloMessages(gd.HaloPlan(part.partition, part.rank, [u]), device_aware=False)
    ok = messages.memory == "pinned" and messages.device == "cuda_host:0"
    part.close()
    all_ranks(comm, ok, f"pinned buffers on {messages.device}")


def test_device_messages_where_the_mpi_reads_cuda_memory(comm):
    if gd.mpi_reads_device() != 2:
        # not CUDA-aware: detection keeps pinned messages, and asking fails everywhere
        ok, memory = exchange_and_check(comm, None)
        all_ranks(comm, ok and memory == "pinned", "detection: pinned")
        with pytest.raises(ValueError, match="cannot read cuda:0 memory"):
            exchange_and_check(comm, True)
        return
    ok, memory = exchange_and_check(comm, None)  # detected
    all_ranks(comm, ok and memory == "device", f"CUDA-aware MPI, detected ({memory})")
    part = gd.CartesianPartitioner(comm, (8, 8, 2), halo=1, periodic=True)
    u = part.zeros("f8", defaults="gt:gpu", managed=None)
    plan = gd.HaloPlan(part.partition, part.rank, [u])
    messages = gd.HaloMessages(plan, device_aware=True, mpi_reads=2)
    buffer = messages.send_buffer(next(i for i, n in enumerate(plan.neighbors) if n.send_bytes))
    interface = buffer.__cuda_array_interface__
    assert interface["shape"] == (buffer.nbytes,) and interface["typestr"] == "|u1"
    with pytest.raises(BufferError, match="CUDA device memory"):
        memoryview(buffer)
    part.close()


@pytest.mark.parametrize("kinds", [("device",), ("device", "device"), ("mirrored", "device")])
def test_exchange_on_streams(comm, kinds):
    """The stream-order rounds of test_halo_streams.py on the CUDA GPU
    (pinned messages): fields written on a producer Stream just before
    start(stream=), exchanged on the same or another Stream, read on a
    third Stream or the host without synchronising, against the model."""
    from test_halo_streams import SHAPE, Rounds, make_fields

    part = gd.CartesianPartitioner(comm, SHAPE, halo=2, periodic=(True, True))
    rounds = Rounds(comm, part, make_fields(part, kinds), False, seed=11)
    memory = rounds.ex.memory
    wrong = rounds.run(6)
    part.close()
    all_ranks(comm, wrong == 0, f"{kinds}, {memory} messages: {wrong} wrong values")
