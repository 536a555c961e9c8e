"""The multi-rank tests: run by tests/mpi/mpirun.sh N SECONDS python -m
pytest tests/mpi, every rank running every test. A test must reach the same
collective calls on every rank; checks that may fail on one rank only go
through `all_ranks`, so that every rank fails together instead of one
waiting for the others (the time limit catches what remains)."""

import pytest

MPI = pytest.importorskip("mpi4py.MPI", reason="mpi4py is not installed")


@pytest.fixture
def comm():
    return MPI.COMM_WORLD


def all_ranks(comm, ok, what):
    """Asserts `ok` on every rank: fails on all where it fails on any."""
    failed = [rank for rank, good in enumerate(comm.allgather(bool(ok))) if not good]
    assert not failed, f"{what}: failed on ranks {failed}"


def pytest_report_header(config):
    comm = MPI.COMM_WORLD
    return f"MPI: rank {comm.rank} of {comm.size}, {MPI.Get_library_version().splitlines()[0]}"
