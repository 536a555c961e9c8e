"""Shared fixtures and helpers for the tests of ``gtstore.arrays``.

The expected geometry is computed here from the rules of DESIGN.md section 3
(the preset table and the allocation algorithm), independently of the
library: tests compare what gtstore returns against these helpers, never
against gtstore's own output.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import itertools
import operator
import os
import pickle
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest

import gtstore
import gtstore.arrays as ga

# ---- dtypes -----------------------------------------------------------------

#: Every dtype gtstore supports.
DTYPES = tuple(
    np.dtype(name)
    for name in (
        "bool",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "float16",
        "float32",
        "float64",
        "complex64",
        "complex128",
    )
)
DTYPE_IDS = [d.name for d in DTYPES]

# ---- presets ----------------------------------------------------------------

#: The binding preset table (DESIGN.md section 3): alignment in elements, the
#: layout rule (base ranks of I, J, K, or positional "C"/"F") and the device.
PRESET_TABLE = {
    "numpy": (1, (0, 1, 2), "cpu"),
    "debug": (1, (0, 1, 2), "cpu"),
    "gt:cpu_kfirst": (1, (0, 1, 2), "cpu"),
    "dace:cpu_kfirst": (1, (0, 1, 2), "cpu"),
    "gt:cpu_ifirst": (1, (2, 1, 0), "cpu"),
    "gt:gpu": (32, (2, 1, 0), "gpu"),
    "dace:cpu": (1, (1, 2, 0), "cpu"),
    "dace:cpu_KJI": (1, (2, 1, 0), "cpu"),
    "dace:gpu": (1, (2, 1, 0), "gpu"),
    "dace:gpu_IJK": (1, (0, 1, 2), "gpu"),
    "C": (1, "C", "cpu"),
    "F": (1, "F", "cpu"),
    "gtx86": (1, (0, 1, 2), "cpu"),
    "gtmc": (8, (2, 0, 1), "cpu"),
    "gtcuda": (32, (2, 1, 0), "gpu"),
}

#: Preset names as gtstore lists them; the layout tests check they are the table's.
PRESETS = tuple(ga.presets())
CPU_PRESETS = tuple(p for p in PRESETS if ga.get_preset(p)["device"] == "cpu")
GPU_PRESETS = tuple(p for p in PRESETS if ga.get_preset(p)["device"] == "gpu")
#: Presets whose layout follows the dimension names.
NAMED_PRESETS = tuple(p for p in PRESETS if PRESET_TABLE.get(p, (0, "C"))[1] not in ("C", "F"))


def _ndarrays():
    """ndarrays of every dtype storages hold, in layouts a field meets: the
    readers of ndarrays (NumPy's struct, in C) are compared with the buffer
    protocol over the same arrays."""
    base = np.arange(120).reshape(4, 5, 6)
    arrays = {dtype: base.astype(dtype) for dtype in
              ("?", "i1", "u1", "i2", "u2", "i4", "u4", "l", "L", "q", "Q", "e", "f4", "f8",
               "c8", "c16")}
    f8 = arrays["f8"]
    read_only = f8.copy()
    read_only.flags.writeable = False
    arrays.update({
        "fortran": np.asfortranarray(f8),
        "transposed": f8.transpose(2, 0, 1),
        "negative strides": f8[::-1, ::2, ::-3],
        "read-only": read_only,
        "broadcast (stride 0)": np.broadcast_to(np.arange(6.0), (4, 5, 6)),
        # NumPy warns on writing it; its buffer export is read-only
        "broadcast_arrays": np.broadcast_arrays(np.arange(6.0), f8)[0],
        # a descriptor equal to, but not, NumPy's own (read through the buffer)
        "unpickled": pickle.loads(pickle.dumps(f8)),
        # contiguous, with a stride of 0 on an extent of 1: the export gives
        # the C (or Fortran) order's strides
        "C order, an extent of 1": np.ascontiguousarray(f8[:, 0, :])[:, None, :],
        "Fortran order, an extent of 1": np.asfortranarray(f8[:, 0, :])[:, None, :],
    })
    return arrays


#: ndarrays by name (_ndarrays).
NDARRAYS = _ndarrays()


@contextlib.contextmanager
def refused(exception, match):
    """A stencil call refused with `exception` (a message matching `match`)
    before it copies anything: no copy-in FieldWarning comes with it."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", gtstore.FieldWarning)
        with pytest.raises(exception, match=match):
            yield


def preset_rule(name):
    """(alignment in elements, layout rule, device) of a built-in preset."""
    return PRESET_TABLE[name]


# ---- dims ----------------------------------------------------------------------

#: Every non-empty subset of I, J, K in canonical order.
CANONICAL_AXES = tuple("".join(c) for k in (1, 2, 3) for c in itertools.combinations("IJK", k))
#: Some permuted orders.
PERMUTED_AXES = ("KJI", "JI", "KI", "KJ", "JKI", "KIJ")
#: Data dims appended to the axes.
DATA_DIMS = ("", "0", "01")

#: Extent and aligned index used for each label in the matrix tests: odd
#: extents so that padding shows, nonzero aligned indices so that the shift
#: of the base shows.
EXTENT = {"I": 5, "J": 6, "K": 7, "0": 2, "1": 3, "2": 2, "3": 2}
ALIGNED = {"I": 1, "J": 2, "K": 3, "0": 1, "1": 0, "2": 1, "3": 0}


def default_dims(ndim):
    """Default labels: I, J, K, then data dims "0", "1", ..."""
    return tuple("IJK"[:ndim]) if ndim <= 3 else ("I", "J", "K", *map(str, range(ndim - 3)))


def expected_layout(rule, dims):
    """The layout (rank of each dimension, highest = contiguous) of a preset
    rule for ``dims``, computed from DESIGN.md section 3.

    ``rule`` is "C", "F" or the base ranks of I, J and K. The I/J/K present
    keep their relative order from the base ranks and are innermost; data
    dims are outermost, "0" outermost of all; positions in ``dims`` do not
    matter.
    """
    dims = tuple(dims)
    n = len(dims)
    if rule == "C":
        return tuple(range(n))
    if rule == "F":
        return tuple(range(n - 1, -1, -1))
    base = dict(zip("IJK", rule))
    data = sorted((d for d in dims if d.isdigit()), key=int)
    axes = sorted((d for d in dims if d in "IJK"), key=base.__getitem__)
    order = data + axes  # from the largest stride inwards
    return tuple(order.index(d) for d in dims)


def layout_from_axes(axes, dims):
    """The layout for an axis string such as "KJI" (largest stride first):
    data dims the string leaves out go outermost, lowest number first."""
    dims = tuple(dims)
    missing = sorted((d for d in dims if d not in axes), key=int)
    order = missing + [a for a in axes if a in dims]
    return tuple(order.index(d) for d in dims)


def contiguous_dim(layout):
    return layout.index(max(layout)) if layout else None


def expected_geometry(shape, layout, itemsize, alignment_bytes):
    """(padded shape, byte strides) of the allocation algorithm: only the
    contiguous dim is padded, to a multiple of max(alignment / itemsize, 1)
    elements; strides are products of padded extents in layout order."""
    block = max(alignment_bytes // itemsize, 1)
    padded = list(shape)
    if shape:
        c = contiguous_dim(layout)
        padded[c] = -(-shape[c] // block) * block
    strides = [0] * len(shape)
    stride = itemsize
    for d in sorted(range(len(shape)), key=lambda d: layout[d], reverse=True):
        strides[d] = stride
        stride *= max(padded[d], 1)
    return tuple(padded), tuple(strides)


def matrix_case(dims):
    """Shape and aligned index of a matrix test for ``dims``."""
    return tuple(EXTENT[d] for d in dims), tuple(ALIGNED[d] for d in dims)


# ---- addresses -------------------------------------------------------------


def address(array):
    """Address of element 0 of a NumPy array."""
    return array.__array_interface__["data"][0]


def address_of(array, index):
    """Address of the element at ``index`` (the index may equal an empty extent)."""
    return address(array) + sum(i * s for i, s in zip(index, array.strides))


def assert_aligned(array, index, alignment_bytes):
    addr = address_of(array, index)
    assert (
        addr % alignment_bytes == 0
    ), f"element {index} at {addr:#x} is not aligned to {alignment_bytes} bytes"


def element_offsets(shape, strides):
    """Byte offsets of every element from element 0."""
    offsets = np.zeros((), dtype=np.int64)
    for n, s in zip(shape, strides):
        offsets = offsets[..., None] + np.arange(n, dtype=np.int64) * s
    return offsets.ravel()


def assert_plan_aligned(plan, index, bases=(0, 1, 7, 64, 4096 + 24, 2**20 + 3)):
    """For blocks at several base addresses, the offset ``plan.offset(base)``
    puts the element at ``index`` on the alignment and the array fits in the
    ``plan.nbytes`` bytes of the block."""
    for base in bases:
        offset = plan.offset(base)
        assert 0 <= offset < plan.alignment_size
        point = base + offset + sum(i * s for i, s in zip(index, plan.strides))
        assert point % plan.alignment_size == 0, (base, offset, plan)
        assert offset + plan.span <= plan.nbytes


# ---- memory ------------------------------------------------------------------


# ---- storages with known values ---------------------------------------------------


def distinct_values(shape, dtype):
    """Values that differ from element to element where the dtype allows."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64))
    flat = np.arange(1, n + 1)
    if dtype.kind == "b":
        flat = flat % 3 == 1
    elif dtype.kind in "iu":
        flat = flat % (min(np.iinfo(dtype).max, 10**6)) + 1
    elif dtype.kind == "c":
        flat = flat + 1j * (flat % 7)
    return flat.astype(dtype).reshape(shape)


def filled(shape, dtype="f8", **kwargs):
    """A storage made by gtstore.zeros(**kwargs) holding distinct values
    (an int halo means that halo on every side of every dimension)."""
    if isinstance(kwargs.get("halo"), int):
        kwargs["halo"] = (kwargs["halo"],) * len(shape)
    s = gtstore.zeros(shape, dtype, **kwargs)
    np.asarray(s)[...] = distinct_values(shape, dtype)
    return s


def live():
    """(live buffers, live bytes) after a garbage collection, without the
    spare GPU blocks (which are a cache: clear_cache releases them)."""
    gc.collect()
    gtstore.clear_cache()
    stats = gtstore.memory_stats()
    return stats["live_buffers"], stats["live_bytes"]


@pytest.fixture
def baseline():
    """Live buffers and bytes before the test; the test must come back to them.

    An earlier test's failure does not count: pytest keeps its traceback
    (sys.last_traceback, whose frames hold that test's storages) until the
    call of the next test, after this fixture, so it goes first."""
    for name in ("last_type", "last_value", "last_traceback", "last_exc"):
        if hasattr(sys, name):
            delattr(sys, name)
    return live()


@pytest.fixture
def cache_limit():
    """Restores the cache limit after the test (and starts from a known one)."""
    original = gtstore.cache_limit()
    gtstore.set_cache_limit(1 << 30)
    gtstore.clear_cache()
    yield
    gtstore.set_cache_limit(original)


@pytest.fixture
def user_presets():
    """Names registered in the test are unregistered afterwards."""
    names = []
    yield names
    for name in names:
        if name in ga.presets():
            ga.unregister_preset(name)


def param_id(value):
    """A parametrize id: the value's repr without memory addresses, which
    differ from process to process (pytest-xdist's workers must collect the
    same ids); pytest numbers the ids that then coincide."""
    return re.sub(r" at 0x[0-9a-fA-F]+", "", repr(value))


def normalize_key(key, ndim):
    """The items of a basic key, the Ellipsis expanded and trailing full
    slices added: ints, slices and None."""
    items = key if isinstance(key, tuple) else (key,)
    consumed = sum(1 for it in items if it is not None and it is not Ellipsis)
    out, seen_ellipsis = [], False
    for it in items:
        if it is Ellipsis:
            seen_ellipsis = True
            out += [slice(None)] * (ndim - consumed)
        elif it is None or isinstance(it, slice):
            out.append(it)
        else:
            out.append(operator.index(it))
    if not seen_ellipsis:
        out += [slice(None)] * (ndim - consumed)
    return out


def subprocess_env(**variables):
    """The environment for a child Python that imports this gtstore."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    env.update(variables)
    return env


def run_random_sequences(make, seeds, steps, cuda=False):
    """Random sequences of a test's stream-order steps (test_stream_order.py,
    test_stencil_stream.py): for each seed, make(seed, streams, cuda) over
    two gtstore.Streams shared by all seeds, `steps` of its step(), then its
    finish(); the wrong values it counted, summed."""
    streams = [gtstore.Stream(), gtstore.Stream()]
    wrong = 0
    for seed in seeds:
        sequence = make(seed, streams, cuda)
        for _ in range(steps):
            sequence.step()
        wrong += sequence.finish()
    return wrong


def run_python(code, timeout=120, **variables):
    """Runs ``code`` in a fresh interpreter (for inputs that might crash
    this one); returns the CompletedProcess with text output."""
    return subprocess.run(
        [sys.executable, "-c", code],
        env=subprocess_env(**variables),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


# ---- device memory as other libraries describe it --------------------------------


def device_address(storage):
    """The device address of element 0 of ``storage`` (what a kernel gets),
    read from its DLPack export (a DLManagedTensorVersioned: version,
    manager_ctx, deleter and flags, then the DLTensor whose first field is
    data; gtstore exports byte_offset 0)."""
    capsule = storage.__dlpack__(max_version=(1, 0))
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype = ctypes.c_void_p
    get.argtypes = [ctypes.py_object, ctypes.c_char_p]
    tensor = get(capsule, b"dltensor_versioned")
    return ctypes.c_void_p.from_address(tensor + 32).value or 0


class CudaArray:
    """Another library's device array, described only by the CUDA array
    interface: the memory of ``storage`` (a gtstore storage on the emulated
    device or the fake driver's GPU), which it keeps alive as a producer
    keeps its memory. Keys can be overridden or removed (``None``)."""

    def __init__(self, storage, *, readonly=False, stream=None, version=3, dims=None, **keys):
        self.storage = storage
        interface = {
            "shape": storage.shape,
            "typestr": storage.dtype.str,
            "data": (device_address(storage), readonly),
            "strides": storage.strides,
            "version": version,
        }
        if version >= 3:
            interface["stream"] = stream
        interface.update(keys)
        self.__cuda_array_interface__ = interface
        if dims is not None:
            self.__gt_dims__ = dims


class ArrayOnly:
    """An array that only speaks ``__array__`` (no buffer protocol, array
    interfaces or DLPack): each conversion is a copy of ``values``, unless
    ``shared``, where it is ``values`` itself."""

    def __init__(self, values, shared=False):
        self.values, self.shared = values, shared
        self.conversions = 0

    def __array__(self, dtype=None, copy=None):
        self.conversions += 1
        if self.shared and not copy:
            return np.asarray(self.values, dtype=dtype)
        return np.array(self.values, dtype=dtype, copy=True)


class WritableArrayOnly(ArrayOnly):
    """An ArrayOnly that takes item assignment (its ``values``')."""

    def __init__(self, values, shared=False):
        super().__init__(values, shared)
        self.assignments = 0

    def __setitem__(self, key, value):
        self.assignments += 1
        self.values[key] = value


class DataInterface:
    """An object with only GDP-3's data interface: one entry under ``key``
    (None: the host), the array's interface plus ``keys``; its "acquire"
    records the key of every call in ``acquired``."""

    def __init__(self, array, key=None, **keys):
        self.array = array
        self.acquired = []
        entry = {**array.__array_interface__, "acquire": lambda: self.acquired.append(key)}
        entry.update(keys)
        self.__gt_data_interface__ = {key: entry}


# A "gpu" entry's address that no device gtstore has reads: neither the
# emulated device's nor CUDA memory (on the fake driver too).
NO_DEVICE_ADDRESS = 0xDEAD0000


def gpu_entry(shape, address=NO_DEVICE_ADDRESS, typestr="<f8"):
    """A "gpu" entry (the CUDA array interface's keys) over `address`."""
    return {"shape": shape, "typestr": typestr, "data": (address, False), "version": 3}


class BothEntries:
    """GDP-3's data interface with a host entry over the ndarray `host`
    and a "gpu" entry, the dict `gpu`, both with ``keys``; every "acquire"
    records its entry's key in ``acquired``."""

    def __init__(self, host, gpu, **keys):
        self.host = host
        self.acquired = []
        self.__gt_data_interface__ = {
            None: {**host.__array_interface__, **keys,
                   "acquire": lambda: self.acquired.append(None)},
            "gpu": {**gpu, **keys, "acquire": lambda: self.acquired.append("gpu")}}


def cupy_importable():
    try:
        import cupy  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.fixture(scope="module")
def gt4py_tmp_cache(tmp_path_factory):
    """GT4Py's generated code goes to a temporary directory, not the cwd
    (for the modules that build real GT4Py stencils)."""
    from gt4py.cartesian import config

    before = config.cache_settings["root_path"]
    config.cache_settings["root_path"] = str(tmp_path_factory.mktemp("gt_cache"))
    yield
    config.cache_settings["root_path"] = before


def pytest_collection_finish(session):
    """Moves everything alive after collection (modules, thousands of test
    items) out of the garbage collector's sight, so that the many
    gc.collect() calls of the lifetime tests stay cheap."""
    gc.collect()
    gc.freeze()


def cuda_present():
    """Whether gtstore reaches a CUDA GPU (a real one, or the fake driver of
    tests/c given as GTSTORE_LIBCUDA)."""
    try:
        gtstore.use_gpu("cuda")
        return True
    except Exception:  # noqa: BLE001 - absent, for whatever reason
        return False
    finally:
        gtstore.use_gpu(None)


@pytest.fixture
def emulated_gpu():
    """The emulated device plays the GPU for the test (``pytestmark =
    pytest.mark.usefixtures("emulated_gpu")`` for a whole file)."""
    gtstore.use_gpu("emulated")
    yield
    gtstore.use_gpu(None)


@pytest.fixture(autouse=True)
def no_spare_blocks_from_other_tests():
    """Each test starts without the spare GPU blocks earlier tests left
    (docs/storage.md, "Spare blocks"): a test that counts allocations or
    cache hits sees its own."""
    if gtstore.memory_stats()["spare_blocks"]:
        gtstore.clear_cache()
    yield
