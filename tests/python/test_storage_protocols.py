"""The protocols of gtstore.Storage (producer side): the buffer protocol,
``__array_interface__``, ``__array__``, DLPack (export, import, capsules and
their lifetime), GT4Py's ``__gt_*__`` interfaces, xarray, and the lifetime of
everything exported from a view.

The rules are those of /work/shared/notes/protocols.md and DESIGN.md section 5;
NumPy (and torch, where installed) are the independent consumers.
"""

import ctypes
import gc
import struct
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as npst

import gtstore
import gtstore.arrays as ga
from conftest import DTYPES, DTYPE_IDS, address, address_of, distinct_values, filled, live, param_id

# ---- helpers ------------------------------------------------------------------


def read_only_storage(shape=(3, 4), dtype="f8"):
    a = distinct_values(shape, dtype)
    a.setflags(write=False)
    return gtstore.as_storage(a), a


#: Views of different kinds: contiguous, padded, strided, reversed, 0-d, empty.
VIEWS = {
    "contiguous": lambda: filled((3, 4, 5)),
    "padded": lambda: filled((3, 4, 5), defaults="gt:gpu", device="cpu"),
    "ifirst": lambda: filled((3, 4, 5), defaults="gt:cpu_ifirst"),
    "step": lambda: filled((6, 4))[::2],
    "negative-step": lambda: filled((5, 4))[::-1, 1::-2],
    "transposed": lambda: filled((3, 4, 5)).transpose(2, 0, 1),
    "int-index": lambda: filled((3, 4, 5))[:, 2],
    "newaxis": lambda: filled((3, 4))[:, None],
    "domain": lambda: filled((6, 7), halo=2).domain_view,
    "zero-dim": lambda: gtstore.full((), 2.5, "f8"),
    "zero-dim-view": lambda: filled((3, 4))[1, 2, ...],
    "empty": lambda: gtstore.zeros((0, 3), "f8"),
    "empty-slice": lambda: filled((4, 5))[2:2, ::-1],
}

# ---- raw buffer requests (ctypes) ----------------------------------------------

PyBUF_SIMPLE = 0
PyBUF_WRITABLE = 0x0001
PyBUF_FORMAT = 0x0004
PyBUF_ND = 0x0008
PyBUF_STRIDES = 0x0010 | PyBUF_ND
PyBUF_C_CONTIGUOUS = 0x0020 | PyBUF_STRIDES
PyBUF_F_CONTIGUOUS = 0x0040 | PyBUF_STRIDES
PyBUF_ANY_CONTIGUOUS = 0x0080 | PyBUF_STRIDES
PyBUF_RECORDS_RO = PyBUF_STRIDES | PyBUF_FORMAT
PyBUF_RECORDS = PyBUF_RECORDS_RO | PyBUF_WRITABLE


class Py_buffer(ctypes.Structure):
    _fields_ = [
        ("buf", ctypes.c_void_p),
        ("obj", ctypes.c_void_p),
        ("len", ctypes.c_ssize_t),
        ("itemsize", ctypes.c_ssize_t),
        ("readonly", ctypes.c_int),
        ("ndim", ctypes.c_int),
        ("format", ctypes.c_char_p),
        ("shape", ctypes.POINTER(ctypes.c_ssize_t)),
        ("strides", ctypes.POINTER(ctypes.c_ssize_t)),
        ("suboffsets", ctypes.POINTER(ctypes.c_ssize_t)),
        ("internal", ctypes.c_void_p),
    ]


_get_buffer = ctypes.pythonapi.PyObject_GetBuffer
_get_buffer.argtypes = [ctypes.py_object, ctypes.POINTER(Py_buffer), ctypes.c_int]
_get_buffer.restype = ctypes.c_int
_release_buffer = ctypes.pythonapi.PyBuffer_Release
_release_buffer.argtypes = [ctypes.POINTER(Py_buffer)]
_release_buffer.restype = None


def request_buffer(obj, flags):
    """PyObject_GetBuffer(obj, flags): the fields that came back (released
    again), or the exception. On failure view->obj must be NULL."""
    view = Py_buffer()
    view.obj = 12345  # garbage the exporter must clear on failure
    try:
        _get_buffer(obj, ctypes.byref(view), flags)
    except Exception:
        assert not view.obj, "view->obj not NULL after a failed export"
        raise
    try:
        ndim = view.ndim
        return dict(
            buf=view.buf,
            len=view.len,
            itemsize=view.itemsize,
            readonly=bool(view.readonly),
            ndim=ndim,
            format=view.format.decode() if view.format else None,
            shape=tuple(view.shape[i] for i in range(ndim)) if view.shape else None,
            strides=tuple(view.strides[i] for i in range(ndim)) if view.strides else None,
        )
    finally:
        _release_buffer(ctypes.byref(view))


#: The format codes each dtype may have (native; 'l' is int64 on LP64).
FORMATS = {
    "bool": {"?"},
    "int8": {"b"},
    "int16": {"h"},
    "int32": {"i", "l"} if struct.calcsize("l") == 4 else {"i"},
    "int64": {"q", "l"} if struct.calcsize("l") == 8 else {"q"},
    "uint8": {"B"},
    "uint16": {"H"},
    "uint32": {"I", "L"} if struct.calcsize("L") == 4 else {"I"},
    "uint64": {"Q", "L"} if struct.calcsize("L") == 8 else {"Q"},
    "float16": {"e"},
    "float32": {"f"},
    "float64": {"d"},
    "complex64": {"Zf"},
    "complex128": {"Zd"},
}

# ---- buffer protocol -------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_memoryview_format_shape_strides(dtype):
    s = filled((3, 4, 5), dtype, defaults="gt:cpu_ifirst")
    m = memoryview(s)
    assert m.format in FORMATS[dtype.name]
    assert m.format == memoryview(np.zeros((3, 4, 5), dtype)).format
    assert m.itemsize == dtype.itemsize
    assert m.ndim == 3
    assert m.shape == (3, 4, 5)
    assert m.strides == s.strides
    assert m.nbytes == s.nbytes == 60 * dtype.itemsize
    assert not m.readonly
    assert m.obj is s
    # NumPy reads the buffer back as the same dtype and the same values
    back = np.asarray(m)
    assert back.dtype == dtype
    np.testing.assert_array_equal(back, distinct_values((3, 4, 5), dtype), strict=True)
    assert m.tobytes() == np.ascontiguousarray(distinct_values((3, 4, 5), dtype)).tobytes()


def test_memoryview_writes_through():
    s = filled((3, 4))
    m = memoryview(s)
    m[1, 2] = -1.0
    assert np.asarray(s)[1, 2] == -1.0
    np.asarray(m)[0] = 7.0
    assert np.all(np.asarray(s)[0] == 7.0)


def test_read_only_storage_exports_read_only_buffers():
    s, a = read_only_storage()
    m = memoryview(s)
    assert m.readonly
    with pytest.raises(TypeError):
        m[0, 0] = 1.0
    assert not np.asarray(s).flags.writeable
    with pytest.raises(ValueError):
        np.asarray(s)[0, 0] = 1.0
    with pytest.raises(BufferError):
        request_buffer(s, PyBUF_WRITABLE)
    with pytest.raises(BufferError):
        request_buffer(s, PyBUF_RECORDS)
    with pytest.raises((BufferError, TypeError)):
        (ctypes.c_char * a.nbytes).from_buffer(s)
    info = request_buffer(s, PyBUF_RECORDS_RO)
    assert info["readonly"]
    # views of a read-only storage are read-only too
    assert memoryview(s[::-1]).readonly
    assert memoryview(s.transpose()).readonly
    np.testing.assert_array_equal(a, distinct_values((3, 4), "f8"))


def test_writable_request_of_a_writable_storage():
    s = filled((3, 4))
    info = request_buffer(s, PyBUF_RECORDS)
    assert not info["readonly"]
    assert info["buf"] == address(np.asarray(s))
    assert info["shape"] == (3, 4) and info["strides"] == s.strides
    assert info["format"] == "d" and info["itemsize"] == 8 and info["len"] == 96


@pytest.mark.parametrize("name", VIEWS, ids=str)
def test_buffer_of_views(name):
    s = VIEWS[name]()
    base = np.asarray(s)
    m = memoryview(s)
    assert m.shape == s.shape
    assert m.ndim == s.ndim
    if s.size:
        assert m.strides == s.strides
    back = np.asarray(m)
    np.testing.assert_array_equal(back, base, strict=True)
    if s.size:
        assert address(back) == address(base)
        assert np.shares_memory(back, base)
    assert m.tobytes() == np.ascontiguousarray(base).tobytes()
    assert m.tolist() == base.tolist()
    assert m.c_contiguous == base.flags.c_contiguous
    assert m.f_contiguous == base.flags.f_contiguous


@pytest.mark.parametrize("name", ["step", "negative-step", "transposed", "padded", "int-index"])
def test_non_contiguous_views_refuse_contiguous_requests(name):
    s = VIEWS[name]()
    assert not np.asarray(s).flags.c_contiguous
    for flags in (PyBUF_SIMPLE, PyBUF_ND, PyBUF_C_CONTIGUOUS, PyBUF_FORMAT):
        with pytest.raises(BufferError):
            request_buffer(s, flags)
    if not np.asarray(s).flags.f_contiguous:
        for flags in (PyBUF_F_CONTIGUOUS, PyBUF_ANY_CONTIGUOUS):
            with pytest.raises(BufferError):
                request_buffer(s, flags)
    info = request_buffer(s, PyBUF_RECORDS_RO)
    assert info["strides"] == s.strides
    with pytest.raises((BufferError, ValueError)):
        np.frombuffer(s)
    assert bytes(s) == np.asarray(s).tobytes()  # bytes() asks for strides, then copies
    # and the failures leave the storage usable
    np.testing.assert_array_equal(np.asarray(memoryview(s)), np.asarray(s))


def test_contiguous_requests():
    s = filled((3, 4))
    for flags in (PyBUF_SIMPLE, PyBUF_ND, PyBUF_C_CONTIGUOUS, PyBUF_ANY_CONTIGUOUS):
        info = request_buffer(s, flags)
        assert info["buf"] == address(np.asarray(s)) and info["len"] == 96
    with pytest.raises(BufferError):
        request_buffer(s, PyBUF_F_CONTIGUOUS)
    simple = request_buffer(s, PyBUF_SIMPLE)
    assert simple["format"] is None and simple["shape"] is None
    np.testing.assert_array_equal(np.frombuffer(s), np.asarray(s).ravel())
    assert bytes(s) == np.asarray(s).tobytes()
    f = filled((3, 4), defaults="F")
    assert request_buffer(f, PyBUF_F_CONTIGUOUS)["strides"] == (8, 24)
    assert request_buffer(f, PyBUF_ANY_CONTIGUOUS)["strides"] == (8, 24)
    with pytest.raises(BufferError):
        request_buffer(f, PyBUF_C_CONTIGUOUS)


def test_data_is_a_memoryview_equal_to_memoryview():
    s = filled((3, 4), halo=1)[1:, ::-1]
    d = s.data
    m = memoryview(s)
    assert isinstance(d, memoryview)
    assert d.obj is s
    assert (d.format, d.shape, d.strides, d.readonly) == (m.format, m.shape, m.strides, m.readonly)
    assert d == m
    assert d.tolist() == np.asarray(s).tolist()
    r, _ = read_only_storage()
    assert r.data.readonly


def test_asarray_is_zero_copy_and_keeps_the_storage(baseline):
    s = filled((3, 4), halo=1, defaults="gt:gpu", device="cpu")
    a = np.asarray(s)
    assert address(a) == s.__array_interface__["data"][0]
    assert a.strides == s.strides
    # the base chain reaches the storage
    chain, obj = [], a
    while obj is not None and len(chain) < 10:
        chain.append(obj)
        obj = obj.obj if isinstance(obj, memoryview) else getattr(obj, "base", None)
    assert any(o is s for o in chain), chain
    a[1, 2] = 42.0
    assert s[1, 2] == 42.0
    expected = a.copy()
    del s, chain, obj
    gc.collect()
    assert live()[0] == baseline[0] + 1
    np.testing.assert_array_equal(a, expected)
    a[...] = 0  # still memory of our own
    del a
    assert live() == baseline


# ---- __array_interface__ ----------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_array_interface_typestr(dtype):
    s = filled((2, 3), dtype)
    ai = s.__array_interface__
    assert ai["typestr"] == dtype.str
    assert ai["version"] == 3
    assert ai["shape"] == (2, 3) and isinstance(ai["shape"], tuple)
    assert ai["strides"] is None


def test_array_interface_typestr_examples():
    assert gtstore.zeros((1,), "f8").__array_interface__["typestr"] == "<f8"
    assert gtstore.zeros((1,), "?").__array_interface__["typestr"] == "|b1"
    assert gtstore.zeros((1,), "c16").__array_interface__["typestr"] == "<c16"
    assert gtstore.zeros((1,), "f2").__array_interface__["typestr"] == "<f2"
    assert gtstore.zeros((1,), "u1").__array_interface__["typestr"] == "|u1"


class InterfaceOnly:
    """Exposes nothing but a copy of another object's __array_interface__."""

    def __init__(self, owner):
        self.owner = owner
        self.__array_interface__ = dict(owner.__array_interface__)


@pytest.mark.parametrize("name", VIEWS, ids=str)
def test_array_interface_of_views(name):
    s = VIEWS[name]()
    base = np.asarray(s)  # through the buffer protocol
    ai = s.__array_interface__
    assert ai["version"] == 3
    assert isinstance(ai["shape"], tuple) and ai["shape"] == s.shape
    assert isinstance(ai["data"], tuple) and len(ai["data"]) == 2
    assert isinstance(ai["data"][0], int) and ai["data"][1] is False
    if s.size:
        assert ai["data"][0] == address(base)
    if base.flags.c_contiguous:
        assert ai["strides"] is None
    else:
        assert isinstance(ai["strides"], tuple) and ai["strides"] == s.strides
    # NumPy reading nothing but the interface sees the same array
    through = np.asarray(InterfaceOnly(s))
    np.testing.assert_array_equal(through, base, strict=True)
    if s.size:
        assert address(through) == address(base)
        assert np.shares_memory(through, base)


def test_array_interface_points_at_element_zero_of_views():
    s = filled((5, 6), halo=1, defaults="gt:gpu", device="cpu")
    parent = np.asarray(s)
    for key, first in [
        ((slice(1, None), slice(2, None)), (1, 2)),
        ((slice(None, None, -1),), (4, 0)),
        ((slice(None), slice(None, None, -2)), (0, 5)),
        ((3,), (3, 0)),
    ]:
        ai = s[key].__array_interface__
        assert ai["data"][0] == address_of(parent, first)
    assert s.__array_interface__["strides"] == s.strides  # padded: not C-contiguous


def test_array_interface_read_only():
    s, _ = read_only_storage()
    assert s.__array_interface__["data"][1] is True
    assert s[::-1].__array_interface__["data"][1] is True
    assert not np.asarray(InterfaceOnly(s)).flags.writeable


# ---- __array__ ----------------------------------------------------------------------------


def test_array_copy_rules():
    s = filled((3, 4), halo=1, defaults="gt:gpu", device="cpu")
    base = np.asarray(s)
    a = s.__array__()
    assert type(a) is np.ndarray and np.shares_memory(a, base)
    assert np.shares_memory(s.__array__(copy=False), base)
    assert np.shares_memory(s.__array__(None, copy=None), base)
    assert np.shares_memory(s.__array__(np.float64, copy=False), base)
    c = s.__array__(copy=True)
    assert type(c) is np.ndarray and not np.shares_memory(c, base)
    np.testing.assert_array_equal(c, base)
    f = s.__array__(np.float32)
    assert f.dtype == np.float32 and not np.shares_memory(f, base)
    np.testing.assert_array_equal(f, base.astype(np.float32))
    assert s.__array__("i4").dtype == np.int32
    assert s.__array__(np.dtype("c8"), copy=True).dtype == np.complex64
    with pytest.raises(ValueError):
        s.__array__(np.float32, copy=False)
    with pytest.raises(TypeError):
        s.__array__(np.float32, True)  # copy is keyword-only


def test_copy_is_read_as_numpy_reads_it():
    """copy= of every function and method that takes one: None, or anything
    by its truth, except a str, which NumPy refuses (copy="no" is true)."""
    x = np.zeros(3)
    s = gtstore.zeros(3)
    calls = [lambda c: gtstore.storage(x, copy=c), lambda c: gtstore.from_dlpack(x, copy=c),
             lambda c: s.__array__(copy=c), lambda c: s.__dlpack__(copy=c),
             lambda c: s.astype("f4", copy=c)]
    for call in calls:
        with pytest.raises(ValueError, match=r"^copy: 'no' is a string; use True, False or None$"):
            call("no")
        with pytest.raises(ValueError):  # NumPy's own refusal, for comparison
            np.array(x, copy="no")
    assert np.shares_memory(np.asarray(gtstore.storage(x, copy=0)), x)
    assert not np.shares_memory(np.asarray(gtstore.from_dlpack(x, copy=1)), x)


def test_numpy_array_and_asarray_copy_rules():
    s = filled((3, 4), halo=1)[::-1]
    base = np.asarray(s)
    assert np.shares_memory(np.asarray(s), base)
    assert np.shares_memory(np.asarray(s, copy=False), base)
    assert np.shares_memory(np.asarray(s, dtype=np.float64), base)
    copied = np.array(s)
    assert not np.shares_memory(copied, base)
    np.testing.assert_array_equal(copied, base)
    assert not np.shares_memory(np.asarray(s, copy=True), base)
    cast = np.asarray(s, dtype=np.float32)
    assert cast.dtype == np.float32
    np.testing.assert_array_equal(cast, base.astype(np.float32))
    with pytest.raises(ValueError):
        np.asarray(s, dtype=np.float32, copy=False)


def test_array_of_read_only_storage():
    s, a = read_only_storage()
    v = s.__array__()
    assert not v.flags.writeable
    c = s.__array__(copy=True)
    assert c.flags.writeable
    c[...] = 0
    np.testing.assert_array_equal(a, distinct_values((3, 4), "f8"))


# ---- DLPack: export ------------------------------------------------------------------------


def capsule_name(capsule):
    text = repr(capsule)
    assert text.startswith("<capsule object ")
    return text.split('"')[1]


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_pointer.restype = ctypes.c_void_p


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [
        ("version", DLPackVersion),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", DLTensor),
    ]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [
        ("dl_tensor", DLTensor),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
    ]


DL_CODES = {"b": 6, "i": 0, "u": 1, "f": 2, "c": 5}
FLAG_READ_ONLY, FLAG_IS_COPIED = 1, 2


def read_capsule(capsule):
    """(flags or None, version or None, DLTensor fields) of an unused capsule."""
    name = capsule_name(capsule)
    pointer = _capsule_pointer(capsule, name.encode())
    if name == "dltensor_versioned":
        m = DLManagedTensorVersioned.from_address(pointer)
        flags, version, t = m.flags, (m.version.major, m.version.minor), m.dl_tensor
    else:
        m = DLManagedTensor.from_address(pointer)
        flags, version, t = None, None, m.dl_tensor
    ndim = t.ndim
    fields = dict(
        data=t.data or 0,
        device=(t.device.device_type, t.device.device_id),
        ndim=ndim,
        dtype=(t.dtype.code, t.dtype.bits, t.dtype.lanes),
        shape=tuple(t.shape[i] for i in range(ndim)),
        strides=tuple(t.strides[i] for i in range(ndim)) if t.strides else None,
        byte_offset=t.byte_offset,
    )
    return flags, version, fields


class CapsuleProducer:
    """Hands a capsule made earlier to a consumer."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, **kwargs):
        capsule, self.capsule = self.capsule, None
        return capsule

    def __dlpack_device__(self):
        return (1, 0)


def test_dlpack_device():
    assert filled((2,)).__dlpack_device__() == (1, 0)
    assert gtstore.zeros((), "f8").__dlpack_device__() == (1, 0)


@pytest.mark.parametrize(
    "max_version, name",
    [
        (None, "dltensor"),
        ((0, 0), "dltensor"),
        ((0, 8), "dltensor"),
        ((1, 0), "dltensor_versioned"),
        ((1, 1), "dltensor_versioned"),
        ((1, 3), "dltensor_versioned"),
        ((2, 0), "dltensor_versioned"),
    ],
)
def test_capsule_names(max_version, name, baseline):
    s = filled((3, 4))
    if max_version is None:
        capsule = s.__dlpack__()
    else:
        capsule = s.__dlpack__(max_version=max_version)
    assert capsule_name(capsule) == name
    flags, version, _ = read_capsule(capsule)
    if name == "dltensor_versioned":
        assert version[0] == 1
        assert flags == 0
    del capsule, s
    assert live() == baseline


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("max_version", [None, (1, 0)], ids=["legacy", "versioned"])
def test_capsule_contents(dtype, max_version):
    s = filled((4, 5, 3), dtype, defaults="gt:gpu", device="cpu")[1:, ::-2]
    capsule = s.__dlpack__(max_version=max_version)
    _, _, t = read_capsule(capsule)
    assert t["device"] == (1, 0)
    assert t["ndim"] == 3
    bits = 8 * dtype.itemsize
    assert t["dtype"] == (DL_CODES[dtype.kind], bits, 1)
    assert t["shape"] == s.shape
    assert t["strides"] == tuple(st // dtype.itemsize for st in s.strides)
    assert t["data"] + t["byte_offset"] == address(np.asarray(s))


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_numpy_from_dlpack_every_dtype(dtype):
    s = filled((3, 4, 5), dtype, halo=1, defaults="gt:gpu", device="cpu")
    a = np.from_dlpack(s)
    assert type(a) is np.ndarray and a.dtype == dtype
    np.testing.assert_array_equal(a, distinct_values((3, 4, 5), dtype), strict=True)
    assert np.shares_memory(a, np.asarray(s))
    assert a.strides == s.strides
    assert a.flags.writeable
    back = gtstore.from_dlpack(a)
    assert back.dtype == dtype and back.shape == s.shape and back.strides == s.strides
    np.testing.assert_array_equal(np.asarray(back), np.asarray(s), strict=True)
    assert np.shares_memory(np.asarray(back), np.asarray(s))
    direct = gtstore.from_dlpack(s)
    assert direct.dtype == dtype
    np.testing.assert_array_equal(np.asarray(direct), np.asarray(s), strict=True)
    assert np.shares_memory(np.asarray(direct), np.asarray(s))


@pytest.mark.parametrize("name", VIEWS, ids=str)
def test_numpy_from_dlpack_views(name):
    s = VIEWS[name]()
    base = np.asarray(s)
    a = np.from_dlpack(s)
    np.testing.assert_array_equal(a, base, strict=True)
    if s.size:
        assert address(a) == address(base)
        assert np.shares_memory(a, base)
        for n, x, y in zip(a.shape, a.strides, base.strides):
            if n > 1:
                assert x == y


@pytest.mark.parametrize("name", VIEWS, ids=str)
def test_gtstore_from_dlpack_round_trip(name):
    s = VIEWS[name]()
    base = np.asarray(s)
    for producer in (s, np.from_dlpack(s)):
        t = gtstore.from_dlpack(producer)
        assert isinstance(t, gtstore.Storage)
        assert t.shape == s.shape and t.dtype == s.dtype
        np.testing.assert_array_equal(np.asarray(t), base, strict=True)
        if s.size:
            assert np.shares_memory(np.asarray(t), base)


def test_from_dlpack_of_numpy_array_wraps(baseline):
    a = np.arange(24.0).reshape(4, 6)[:, ::-2]
    s = gtstore.from_dlpack(a)
    assert isinstance(s, gtstore.Storage)
    assert np.shares_memory(np.asarray(s), a)
    np.testing.assert_array_equal(np.asarray(s), a)
    s[0, 0] = -3.0
    assert a[0, 0] == -3.0
    expected = a.copy()
    del a
    gc.collect()
    np.testing.assert_array_equal(np.asarray(s), expected)  # the storage keeps NumPy's memory
    del s
    assert live() == baseline


def test_dlpack_copy(baseline):
    s = filled((3, 4), halo=1)[::-1]
    base = np.asarray(s)
    c = np.from_dlpack(s, copy=True)
    assert not np.shares_memory(c, base)
    np.testing.assert_array_equal(c, base)
    c[...] = 0
    assert base.any()
    n = np.from_dlpack(s, copy=False)
    assert np.shares_memory(n, base)
    capsule = s.__dlpack__(max_version=(1, 0), copy=True)
    flags, _, t = read_capsule(capsule)
    assert flags & FLAG_IS_COPIED
    assert not flags & FLAG_READ_ONLY
    assert t["data"] != address(base)
    copied = np.from_dlpack(CapsuleProducer(capsule))
    np.testing.assert_array_equal(copied, base)
    assert not np.shares_memory(copied, base)
    assert read_capsule(s.__dlpack__(max_version=(1, 0), copy=False))[0] & FLAG_IS_COPIED == 0
    del s, base, c, n, capsule, copied, t
    assert live() == baseline


def test_dlpack_read_only(baseline):
    s, a = read_only_storage()
    r = np.from_dlpack(s)
    assert not r.flags.writeable
    np.testing.assert_array_equal(r, a)
    assert np.shares_memory(r, a)
    with pytest.raises(BufferError):
        s.__dlpack__()
    with pytest.raises(BufferError):
        s.__dlpack__(max_version=None)
    flags, _, _ = read_capsule(s.__dlpack__(max_version=(1, 0)))
    assert flags & FLAG_READ_ONLY
    # a copy of a read-only storage is writable memory of its own
    c = np.from_dlpack(s, copy=True)
    assert not np.shares_memory(c, a)
    np.testing.assert_array_equal(c, a)
    del s, r, c
    gc.collect()


@pytest.mark.parametrize("stream", [None, -1])
def test_dlpack_valid_streams(stream):
    s = filled((3,))
    capsule = s.__dlpack__(stream=stream)
    assert capsule_name(capsule) == "dltensor"
    capsule = s.__dlpack__(stream=stream, max_version=(1, 0))
    assert capsule_name(capsule) == "dltensor_versioned"


@pytest.mark.parametrize("stream", [0, 1, 2, 3, 12345, "x", 1.0])
def test_dlpack_invalid_streams(stream, baseline):
    s = filled((3,))
    error = ValueError if isinstance(stream, int) else TypeError  # no handle at all
    with pytest.raises(error):
        s.__dlpack__(stream=stream)
    with pytest.raises(error):
        s.__dlpack__(stream=stream, max_version=(1, 0))
    del s
    assert live() == baseline


def test_dlpack_devices():
    s = filled((3,))
    assert capsule_name(s.__dlpack__(dl_device=(1, 0), max_version=(1, 0))) == "dltensor_versioned"
    assert capsule_name(s.__dlpack__(dl_device=None)) == "dltensor"
    for device in [(2, 0), (1, 1), (13, 0), (3, 0)]:
        with pytest.raises(BufferError):
            s.__dlpack__(dl_device=device, max_version=(1, 0))
    a = np.from_dlpack(s, device="cpu")
    assert np.shares_memory(a, np.asarray(s))


def test_dlpack_keywords_only():
    s = filled((3,))
    with pytest.raises(TypeError):
        s.__dlpack__(None)
    with pytest.raises(TypeError):
        s.__dlpack__(max_version=1)
    with pytest.raises(TypeError):
        s.__dlpack__(unknown=1)


@pytest.mark.parametrize("max_version", [None, (1, 0)], ids=["legacy", "versioned"])
def test_capsule_keeps_memory_after_the_storage_dies(max_version, baseline):
    s = filled((4, 5), halo=1)
    view = s[1:, ::-1]
    expected = np.asarray(view).copy()
    capsule = view.__dlpack__(max_version=max_version)
    del s, view
    gc.collect()
    assert live()[0] == baseline[0] + 1
    a = np.from_dlpack(CapsuleProducer(capsule))
    del capsule
    gc.collect()
    np.testing.assert_array_equal(a, expected)
    if max_version is not None:  # NumPy marks arrays from legacy capsules read-only
        a[...] = 0  # writable memory of our own
    assert live()[0] == baseline[0] + 1
    del a
    assert live() == baseline


@pytest.mark.parametrize("max_version", [None, (1, 0)], ids=["legacy", "versioned"])
def test_unconsumed_capsule_frees_its_reference(max_version, baseline):
    s = filled((64, 64))
    capsule = s.__dlpack__(max_version=max_version)
    copied = s.__dlpack__(max_version=(1, 0), copy=True)
    del s
    assert live()[0] == baseline[0] + 2
    del capsule
    assert live()[0] == baseline[0] + 1
    del copied
    assert live() == baseline


def test_consumed_capsule_is_renamed_and_not_freed_twice(baseline):
    s = filled((3, 4))
    capsule = s.__dlpack__(max_version=(1, 0))
    a = np.from_dlpack(CapsuleProducer(capsule))
    assert capsule_name(capsule) == "used_dltensor_versioned"
    del capsule
    gc.collect()
    np.testing.assert_array_equal(a, distinct_values((3, 4), "f8"))
    t = gtstore.from_dlpack(CapsuleProducer(s.__dlpack__()))
    np.testing.assert_array_equal(np.asarray(t), np.asarray(s))
    del s, a, t
    assert live() == baseline


# ---- DLPack with torch ------------------------------------------------------------------


def test_torch_round_trip(baseline):
    torch = pytest.importorskip("torch", reason="torch is not installed")
    # (torch refuses negative strides, so a strided view with positive ones)
    s = filled((3, 4, 5), "f4", halo=1, defaults="gt:gpu", device="cpu")[:, 1::2]
    t = torch.from_dlpack(s)
    assert tuple(t.shape) == s.shape
    assert tuple(t.stride()) == tuple(x // 4 for x in s.strides)
    assert t.data_ptr() == address(np.asarray(s))
    np.testing.assert_array_equal(t.numpy(), np.asarray(s))
    t[0, 0, 0] = -9.0
    assert np.asarray(s)[0, 0, 0] == -9.0
    del s
    gc.collect()
    assert float(t[0, 0, 0]) == -9.0  # the tensor keeps the storage's memory
    del t
    assert live() == baseline


@pytest.mark.parametrize(
    "dtype",
    [
        "bool",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "float16",
        "float32",
        "float64",
        "complex64",
        "complex128",
    ],
)
def test_torch_dtypes(dtype):
    torch = pytest.importorskip("torch", reason="torch is not installed")
    s = filled((2, 3), dtype)
    t = torch.from_dlpack(s)
    np.testing.assert_array_equal(t.numpy(), np.asarray(s), strict=True)
    back = gtstore.from_dlpack(t)
    assert back.dtype == np.dtype(dtype)
    assert np.shares_memory(np.asarray(back), np.asarray(s))


def test_storage_from_torch_keeps_the_tensor_memory(baseline):
    torch = pytest.importorskip("torch", reason="torch is not installed")
    tensor = torch.arange(20, dtype=torch.float64).reshape(4, 5)[:, 1::2]
    s = gtstore.from_dlpack(tensor)
    assert isinstance(s, gtstore.Storage)
    assert address(np.asarray(s)) == tensor.data_ptr()
    assert s.strides == tuple(8 * x for x in tensor.stride())
    expected = tensor.numpy().copy()
    s[0, 0] = -1.0
    assert float(tensor[0, 0]) == -1.0
    expected[0, 0] = -1.0
    del tensor
    gc.collect()
    # allocate and fill a few tensors so freed memory would be reused
    junk = [torch.full((4, 5), 7.0, dtype=torch.float64) for _ in range(8)]
    np.testing.assert_array_equal(np.asarray(s), expected)
    del junk, s
    assert live() == baseline


def test_torch_read_only_and_copy():
    torch = pytest.importorskip("torch", reason="torch is not installed")
    s = filled((3,), "f8")
    t = torch.from_dlpack(s)
    assert t.data_ptr() == address(np.asarray(s))
    c = gtstore.from_dlpack(torch.arange(3.0), copy=True)
    assert np.asarray(c).tolist() == [0.0, 1.0, 2.0]


# ---- hypothesis: every export of random views agrees with NumPy ---------------------------


@st.composite
def random_views(draw):
    shape = draw(npst.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=6))
    dtype = draw(st.sampled_from(DTYPES))
    kind = draw(
        st.sampled_from(
            [
                dict(),
                dict(defaults="gt:gpu", device="cpu"),
                dict(defaults="F"),
                dict(alignment_size=64),
            ]
        )
    )
    s = filled(shape, dtype, **kind)
    key = draw(npst.basic_indices(shape, min_dims=0, allow_newaxis=True, allow_ellipsis=True))
    v = s[key]
    if not isinstance(v, gtstore.Storage):
        v = s
    if v.ndim and draw(st.booleans()):
        v = v.transpose(draw(st.permutations(range(v.ndim))))
    return v


@settings(max_examples=200, deadline=None)
@given(v=random_views())
def test_property_exports_agree(v):
    base = np.asarray(v)
    expected = base.copy()
    m = memoryview(v)
    assert m.shape == v.shape and m.format == memoryview(np.zeros(1, v.dtype)).format
    np.testing.assert_array_equal(np.asarray(m), expected, strict=True)
    assert m.tobytes() == expected.tobytes()
    ai = v.__array_interface__
    assert ai["typestr"] == v.dtype.str and ai["shape"] == v.shape
    assert (ai["strides"] is None) == base.flags.c_contiguous
    through = np.asarray(InterfaceOnly(v))
    np.testing.assert_array_equal(through, expected, strict=True)
    for max_version in (None, (1, 0)):
        capsule = v.__dlpack__(max_version=max_version)
        _, _, t = read_capsule(capsule)
        assert t["shape"] == v.shape
        if v.ndim:
            assert t["strides"] == tuple(x // v.itemsize for x in v.strides)
        a = np.from_dlpack(CapsuleProducer(capsule))
        np.testing.assert_array_equal(a, expected, strict=True)
    if v.size:
        assert ai["data"][0] == address(base)
        assert address(through) == address(base)
        assert address(np.from_dlpack(v)) == address(base)


# ---- GT4Py interfaces ----------------------------------------------------------------------


def test_gt_dims_and_origin():
    s = filled((5, 2, 7, 6), dims=("K", "0", "I", "J"), halo=((1, 2), (0, 0), (3, 1), (2, 2)))
    assert s.__gt_dims__ == s.dims == ("K", "0", "I", "J")
    assert s.__gt_origin__ == (1, 0, 3, 2)
    assert ga.get_dims(s) == s.dims
    assert ga.get_origin(s) == (1, 0, 3, 2)
    v = s[1:, :, 0]
    assert v.__gt_dims__ == ("K", "0", "J")
    assert v.__gt_origin__ == (0, 0, 2)
    assert ga.get_dims(v) == ("K", "0", "J") and ga.get_origin(v) == (0, 0, 2)
    d = s.domain_view
    assert d.__gt_origin__ == (0, 0, 0, 0)


@pytest.mark.parametrize(
    "name", ["contiguous", "padded", "negative-step", "transposed", "zero-dim"]
)
def test_gt_data_interface(name):
    s = VIEWS[name]()
    gdi = s.__gt_data_interface__
    assert isinstance(gdi, dict) and list(gdi) == [None]
    info = gdi[None]
    assert set(info) == {
        "shape",
        "typestr",
        "data",
        "strides",
        "dims",
        "halo",
        "acquire",
        "touch",
        "release",
    }
    ai = s.__array_interface__
    assert info["shape"] == s.shape and isinstance(info["shape"], tuple)
    assert info["typestr"] == ai["typestr"] == s.dtype.str
    assert info["data"] == ai["data"]
    assert isinstance(info["strides"], tuple) and info["strides"] == s.strides
    assert info["dims"] == s.dims
    assert info["halo"] == s.halo
    assert callable(info["acquire"]) and callable(info["touch"])
    assert info["acquire"]() is None
    assert info["touch"]() is None
    assert info["release"] is None
    assert info["acquire"].__name__ == "device_to_host"
    assert info["touch"].__name__ == "set_host_modified"
    assert info["acquire"].__self__ is s and info["touch"].__self__ is s


def test_gt_data_interface_read_only():
    s, _ = read_only_storage()
    assert s.__gt_data_interface__[None]["data"][1] is True


# ---- xarray ---------------------------------------------------------------------------------


def test_xarray_without_copy():
    xr = pytest.importorskip("xarray")
    s = filled((3, 4, 5), halo=1, dims="IJK", defaults="gt:gpu", device="cpu")
    da = xr.DataArray(s, dims=s.dims)
    assert da.dims == ("I", "J", "K")
    assert np.shares_memory(da.values, np.asarray(s))
    np.testing.assert_array_equal(da.values, np.asarray(s))
    da.values[1, 2, 3] = -8.0
    assert s[1, 2, 3] == -8.0
    da[0, 0, 0] = -4.0
    assert s[0, 0, 0] == -4.0
    v = s[::-1, 1]
    dv = xr.DataArray(v, dims=v.dims)
    assert dv.dims == ("I", "K")
    assert np.shares_memory(dv.values, np.asarray(s))
    np.testing.assert_array_equal(dv.values, np.asarray(v))


def test_storages_from_dataarrays_read_the_accessor():
    """gtstore.as_storage and storage read a DataArray through its
    __gt_data_interface__ (GDP-3's default accessor): its dims label the
    storage where they are gtstore labels, and a storage inside it gives its
    halo; xarray's own names ("x", "y") label nothing, as before."""
    xr = pytest.importorskip("xarray")
    values = np.arange(12.0).reshape(3, 4)
    s = gtstore.as_storage(xr.DataArray(values, dims=("K", "J")))
    assert s.dims == ("K", "J") and np.shares_memory(np.asarray(s), values)
    named = xr.DataArray(values, dims=("x", "y"))
    assert gtstore.as_storage(named).dims == ("I", "J")
    assert gtstore.storage(named).dims == ("I", "J")
    inner = gtstore.storage(values, dims="JK", halo=((1, 1), (0, 1)))
    t = gtstore.as_storage(xr.DataArray(inner, dims=("J", "K")))
    assert t.dims == ("J", "K") and t.halo == ((1, 1), (0, 1))
    assert np.shares_memory(np.asarray(t), np.asarray(inner))


# ---- lifetime of exports from views ----------------------------------------------------------

EXPORTS = {
    "asarray": lambda v: np.asarray(v),
    "memoryview": lambda v: memoryview(v),
    "data": lambda v: v.data,
    "to_numpy": lambda v: v.to_numpy(),
    "__array__": lambda v: v.__array__(),
    "from_dlpack": lambda v: np.from_dlpack(v),
    "capsule": lambda v: v.__dlpack__(max_version=(1, 0)),
    "legacy-capsule": lambda v: v.__dlpack__(),
    "storage": lambda v: gtstore.from_dlpack(v),
}


def values_of(export):
    if repr(export).startswith("<capsule"):
        return np.from_dlpack(CapsuleProducer(export)).copy()
    return np.array(np.asarray(export))


@pytest.mark.parametrize("name", EXPORTS, ids=str)
@pytest.mark.parametrize(
    "make_view",
    [lambda s: s[1:, ::-2], lambda s: s.transpose(), lambda s: s[2], lambda s: s.domain_view],
    ids=["slice", "transpose", "index", "domain"],
)
def test_exports_of_views_outlive_storage_and_view(name, make_view, baseline):
    s = filled((5, 6), halo=1, defaults="gt:gpu", device="cpu")
    view = make_view(s)
    expected = np.asarray(view).copy()
    export = EXPORTS[name](view)
    del s, view
    gc.collect()
    # the buffer lives on (an imported storage may add a buffer of its own over it)
    assert live()[0] == baseline[0] + 1 + (name == "storage")
    # allocate more so that freed memory would be reused
    others = [gtstore.full((5, 6), -1.0, "f8", defaults="gt:gpu", device="cpu") for _ in range(4)]
    np.testing.assert_array_equal(values_of(export), expected)
    del others, export
    assert live() == baseline


def test_storage_cannot_die_while_exported(baseline):
    s = filled((4, 4))
    m = memoryview(s)
    a = np.asarray(s)
    del s
    gc.collect()
    assert live()[0] == baseline[0] + 1
    m[0, 0] = 5.0
    assert a[0, 0] == 5.0
    m.release()
    assert live()[0] == baseline[0] + 1  # a still holds its own export
    a[1, 1] = 3.0
    del a
    assert live() == baseline


def test_released_memoryview_and_context_manager(baseline):
    s = filled((4, 4))
    with memoryview(s) as m:
        assert m[1, 1] == np.asarray(s)[1, 1]
    with pytest.raises(ValueError):
        m[0, 0]
    many = [memoryview(s) for _ in range(100)]
    for m in many:
        m.release()
    del many, m, s
    assert live() == baseline


# ---- conversions to Python scalars ------------------------------------------------------


@pytest.mark.parametrize("convert", [float, int, complex, bool], ids=lambda f: f.__name__)
@pytest.mark.parametrize("shape", [(), (1,), (1, 1), (2,), (0,)], ids=param_id)
@pytest.mark.parametrize("dtype, value", [("f8", 1.5), ("i4", -3), ("c16", 2 - 1j), ("?", True)])
def test_scalar_conversions_are_numpys(convert, shape, dtype, value):
    """float(s), int(s), complex(s) and bool(s) behave as on an ndarray:
    size-1 storages convert (with NumPy's warnings), others raise NumPy's
    error. (Python once parsed the buffer's bytes as text.)"""

    def outcome(array):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                result = convert(array)
                got = (type(result), result)
            except (TypeError, ValueError) as e:
                got = (type(e), str(e))
        return got, [w.category for w in caught]

    expected = outcome(np.full(shape, value, dtype=dtype))
    assert outcome(gtstore.full(shape, value, dtype=dtype)) == expected
