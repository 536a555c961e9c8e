"""Halo exchanges in the stream order (docs/distributed.md, "Streams"), on
the asynchronous emulated device: every gtstore.Stream runs its work on a
thread of its own after a random delay, so a missing wait gives a wrong
value here instead of passing silently.

Each round writes random values into the fields (domain and halo) on a
producer stream, behind longer work queued there, then exchanges them with
``start(stream=)`` / ``wait(stream=)`` on the same or another stream and
reads them back on a third stream or on the host, with no synchronisation
in between: packing must follow the producer's work, MPI must send the
packed bytes (and receive into buffers no unpacking still reads), and the
consumer must see the unpacked halos. The values are checked against a
NumPy model of the exchange (the global field at the wrapped index, the
written values where no neighbour writes). Fields in device memory only
and mirrored ones (with a host side), alone and mixed, through pinned and
device messages. The detector runs the same rounds with libgtstore's
stream-order waits skipped (a switch for tests only): they must see wrong
values, which proves that the checks see a missing wait.
"""

import zlib

import numpy as np
import pytest

import gtstore as gts
from gtstore import distributed as gd
from gtstore._gtstore import _skip_stream_waits_for_testing as skip_waits

from conftest import all_ranks
from test_distributed import expected_after_exchange

SHAPE = (13, 10, 3)  # uneven over every process grid
HALO = ((2, 1), (1, 2), (0, 0))


@pytest.fixture(autouse=True)
def emulated_gpu(monkeypatch):
    monkeypatch.delenv("GTSTORE_DEVICE_AWARE_MPI", raising=False)
    gts.use_gpu("emulated")
    yield
    gts.use_gpu(None)


def make_fields(part, kinds):
    """A field per kind: "device" (device memory only) or "mirrored"."""
    managed = {"device": None, "mirrored": "gt4py"}
    return [part.full(np.nan, "f8", halo=HALO, defaults="gt:gpu", managed=managed[kind])
            for kind in kinds]


def local_model(part, G, written):
    """What an exchange leaves in a rank's field: the global field G at the
    wrapped index where a neighbour (or the rank itself) writes the halo,
    the domain's values, and `written` where nobody writes."""
    expected = expected_after_exchange(part, HALO, G, np.nan)
    return np.where(np.isnan(expected), written, expected)


def host_values(field):
    return np.array(gts.storage(field, device="cpu"))


class Rounds:
    """Rounds of write -> exchange -> read over random streams, counting the
    values that differ from the model."""

    def __init__(self, comm, part, fields, device_aware, seed):
        self.comm, self.part, self.fields = comm, part, fields
        self.ex = part.halo_exchange(fields, device_aware=device_aware)
        self.rng = np.random.default_rng(seed)  # the same on every rank: the same G
        self.junk = np.random.default_rng([seed, part.rank])  # each rank's own
        self.streams = [gts.Stream(), gts.Stream(), gts.Stream()]
        self.busy = gts.zeros((64, 64, 16), device="gpu", managed=None)
        self.wrong = 0
        self.later = []  # (copy, model) to check after the next round's exchange

    def write(self, field, values, stream):
        """values into `field` on `stream`, behind longer work there."""
        source = gts.storage(values, device="gpu", managed=None)  # new: nothing queued on it
        self.delay(stream)
        with stream:  # device copies: nothing here makes the host wait for the field
            field[...] = -1.0
            field[...] = source

    def round(self):
        rng, part = self.rng, self.part
        producer, exchange, consumer = (self.streams[i] for i in rng.integers(3, size=3))
        G = [rng.random(SHAPE) for _ in self.fields]
        models = []
        for f, g in zip(self.fields, G):
            # the rank's own junk in the halos: a neighbour's value must replace it
            written = 100.0 + part.rank + self.junk.random(f.shape)
            sub = tuple(slice(lo, n - hi) for (lo, hi), n in zip(HALO, f.shape))
            written[sub] = g[part.subdomain]
            self.write(f, written, producer)
            models.append(local_model(part, g, written))
        handle = rng.integers(2) == 1  # the Stream or its handle
        on = exchange.ptr if handle else exchange
        self.ex.start(stream=on)
        deferred = rng.integers(2) == 1
        if deferred:  # the unpacking late on its stream: a consumer must wait for it
            self.delay(exchange, 40)
        self.ex.wait(stream=on)
        later = []
        for f, want in zip(self.fields, models):
            if deferred:  # copied on the consumer's stream, checked after the next exchange
                with consumer:
                    later.append((f.copy(), want))
            elif rng.integers(2):  # read on the consumer's stream, then on the host
                with consumer:
                    got = f.copy()
                self.check(got, want)
            else:  # read on the host straight away
                self.check(f, want)
        self.check_later()
        self.later = later

    def delay(self, stream, n=4):
        """Longer work queued on `stream`."""
        with stream:
            for n in range(n):
                self.busy[...] = float(n)

    def check(self, field, want):
        self.wrong += int(np.count_nonzero(host_values(field) != want))

    def check_later(self):
        for got, want in self.later:
            self.check(got, want)
        self.later = []

    def run(self, rounds):
        for _ in range(rounds):
            self.round()
        self.check_later()
        self.ex.close()
        return self.comm.allreduce(self.wrong)


KINDS = [("device",), ("device", "device"), ("mirrored", "device"), ("mirrored",)]


@pytest.mark.parametrize("device_aware", [False, True])
@pytest.mark.parametrize("kinds", KINDS)
@pytest.mark.parametrize("periodic", [(True, True), (False, True), (False, False)])
def test_exchange_on_streams_matches_the_model(comm, device_aware, kinds, periodic):
    part = gd.CartesianPartitioner(comm, SHAPE, halo=2, periodic=periodic)
    fields = make_fields(part, kinds)
    rounds = Rounds(comm, part, fields, device_aware, seed=zlib.crc32(f"{kinds}{periodic}".encode()))
    memory = rounds.ex.memory
    wrong = rounds.run(6)
    part.close()
    expected_memory = ("host" if "device" not in kinds
                       else "device" if device_aware else "pinned")
    all_ranks(comm, memory == expected_memory, f"{kinds}: {memory} messages")
    all_ranks(comm, wrong == 0, f"{kinds}, {memory} messages, periodic {periodic}: "
                                f"{wrong} wrong values")


@pytest.mark.parametrize("device_aware", [False, True])
def test_detector_a_missing_wait_gives_wrong_values(comm, device_aware):
    """The same rounds with the stream order's waits skipped see wrong
    values (summed over the ranks), so the test above sees a missing wait."""
    part = gd.CartesianPartitioner(comm, SHAPE, halo=2, periodic=(True, True))
    fields = make_fields(part, ("device", "device"))
    rounds = Rounds(comm, part, fields, device_aware, seed=7)
    skip_waits(True)
    try:
        wrong = rounds.run(6)
    finally:
        skip_waits(False)
    for s in rounds.streams:
        s.synchronize()
    part.close()
    all_ranks(comm, wrong > 0, f"with the waits skipped, {wrong} wrong values")


def test_default_stream_and_current_stream(comm):
    """stream=None is gtstore's current stream: `with s:` queues the
    exchange on s; outside any `with`, the default stream (completed on
    return). Written on a stream just before, read on the host after."""
    part = gd.CartesianPartitioner(comm, SHAPE, halo=2, periodic=(True, False))
    (u,) = make_fields(part, ("device",))
    rounds = Rounds(comm, part, [u], False, seed=3)
    ok = True
    for current in (None, rounds.streams[1]):
        G = rounds.rng.random(SHAPE)
        written = np.zeros(u.shape)
        sub = tuple(slice(lo, n - hi) for (lo, hi), n in zip(HALO, u.shape))
        written[sub] = G[part.subdomain]
        rounds.write(u, written, rounds.streams[0])
        if current is None:
            rounds.ex.exchange()
        else:
            with current:
                assert gts.current_stream() is current
                rounds.ex.exchange()
        ok = ok and np.array_equal(host_values(u), local_model(part, G, written))
    rounds.ex.close()
    part.close()
    all_ranks(comm, ok, "exchange on the default and the current stream")


def test_bad_streams(comm):
    """A stream that is none, or a handle that is no live stream of the
    device: TypeError or ValueError naming it, raised before anything
    starts (or completes), so the exchange goes on as if not called."""
    part = gd.CartesianPartitioner(comm, SHAPE, halo=2, periodic=(True, True))
    (u,) = make_fields(part, ("device",))
    rounds = Rounds(comm, part, [u], False, seed=5)
    ex = rounds.ex
    with pytest.raises(TypeError, match="stream: expected None, a gtstore.Stream"):
        ex.start(stream="s1")
    with pytest.raises(TypeError, match="stream: expected None, a gtstore.Stream"):
        ex.exchange(stream=1.5)
    with pytest.raises(ValueError, match="stream: 0x5 is not a live stream of the emulated"):
        ex.start(stream=5)
    ex.start()
    with pytest.raises(ValueError, match="stream: 0x5 is not a live stream of the emulated"):
        ex.wait(stream=5)
    with pytest.raises(TypeError, match="stream: expected None"):
        ex.wait(stream=[])
    ex.wait()  # the failed waits changed nothing
    ok = rounds.run(2) == 0
    part.close()
    all_ranks(comm, ok, "rounds after bad streams")
