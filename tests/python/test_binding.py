"""Binding any object to a stencil signature (gtstore.Signature.bind): origins
by precedence and permuted by dims, the domain from the call, the halos or
the shapes, the __gt_interface__ sketch's acquire/touch/release order, and bad input."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import gtstore
from gtstore import (Alignment, DefaultParameters, DType, Field, FieldWarning, LayoutMap,
                     Signature)

from conftest import (
    NDARRAYS,
    ArrayOnly,
    BothEntries,
    CudaArray,
    WritableArrayOnly,
    gpu_entry,
    refused,
)

LAP = dict(
    out=Field["f8", "IJK"],
    inp=Field["f8", "IJK"],
    extents={"inp": ((1, 1), (1, 1), (0, 0))},
    writes=["out"],
)


@pytest.fixture
def lap():
    return Signature(**LAP)


def test_signature_attributes(lap):
    assert lap.fields == ("out", "inp")
    assert lap.writes == ["out"]
    assert lap.extents["inp"] == ((1, 1), (1, 1), (0, 0))
    assert lap.device == "cpu"


def test_ndarrays_origin_all_and_shape_domain(lap):
    out, inp = np.zeros((10, 9, 4)), np.zeros((10, 9, 4))
    call = lap.bind(out, inp, origin=(1, 1, 0))
    assert call.domain == (8, 7, 4)  # inp: shape - origin - upper extent
    assert call["inp"].origin == (1, 1, 0)
    assert call["inp"].data == inp.ctypes.data + 1 * inp.strides[0] + 1 * inp.strides[1]
    assert call["out"].strides == out.strides
    assert call.origins() == {"out": (1, 1, 0), "inp": (1, 1, 0)}




@pytest.mark.parametrize("name", list(NDARRAYS))
def test_ndarrays_bind_as_their_buffer_would(name):
    """An ndarray is read from NumPy's array struct, not through its buffer
    export: it binds the same memory, shape, strides, dtype and
    writability as the same array seen through the buffer protocol (a
    memoryview), and, in the kernel's order, is its own kernel array."""
    a = NDARRAYS[name]
    sig = Signature(a=Field[a.dtype, "IJK"])
    call = sig.bind(a)
    through_buffer = sig.bind(memoryview(a))
    assert tuple(call["a"]) == tuple(through_buffer["a"])
    with warnings.catch_warnings():  # broadcast_arrays' result warns on this
        warnings.simplefilter("ignore", FutureWarning)
        assert call["a"].data == a.__array_interface__["data"][0]
    assert call.domain == a.shape
    assert call.arrays()["a"] is a
    writes = Signature(a=Field[a.dtype, "IJK"], writes=["a"])
    if not memoryview(a).readonly:
        assert tuple(writes.bind(a)["a"]) == tuple(writes.bind(memoryview(a))["a"])
    else:
        for obj in (a, memoryview(a)):
            with pytest.raises(ValueError, match="a: the stencil writes it, but it is read-only"):
                writes.bind(obj)


@pytest.mark.parametrize("dtype, error", [
    (">f8", "a: dtype: format: '>d' is not in native byte order"),
    ("g", "a: dtype: format: unsupported buffer format 'g'"),
    ("M8[s]", "a: cannot include dtype 'M' in a buffer"),
    ("U3", "a: dtype: format: unsupported buffer format '3w'"),
    # type number int32 and native, but fields over its bytes (a union)
    (np.dtype((np.int32, {"r": ("i2", 0), "i": ("i2", 2)})),
     "a: dtype: format: unsupported buffer format 'T{h:r:h:i:}'"),
])
def test_ndarrays_of_other_dtypes_are_refused_naming_the_field(dtype, error):
    """Those the C read does not take go through the buffer protocol, which
    refuses them (the messages of the release before the C read)."""
    sig = Signature(a=Field["f8", "IJK"])
    with pytest.raises((TypeError, ValueError), match=error):
        sig.bind(np.zeros((2, 3, 4), dtype))


def test_ndarray_subclasses_keep_their_labels_and_origin():
    """A subclass may carry __gt_dims__ and __gt_origin__: it is read
    through the general path, which honours them."""
    class Labelled(np.ndarray):
        __gt_dims__ = ("K", "J", "I")
        __gt_origin__ = (0, 1, 2)

    a = np.arange(24.0).reshape(2, 3, 4).view(Labelled)
    call = Signature(a=Field["f8", "IJK"]).bind(a)
    assert call["a"].shape == (4, 3, 2)
    assert call["a"].origin == (2, 1, 0)
    assert call.arrays()["a"] is not a


def test_default_origin_when_no_gt_origin():
    """Spec 002's `default_origin` attribute is the origin where there is
    no `__gt_origin__` (GT4Py's name, which wins) and no call's origin."""
    class Old(np.ndarray):
        default_origin = (1, 2, 0)

    class Both(Old):
        __gt_origin__ = (0, 1, 0)

    sig = Signature(a=Field["f8", "IJK"])
    assert sig.bind(a=np.zeros((5, 4, 3)).view(Old)).origins() == {"a": (1, 2, 0)}
    assert sig.bind(a=np.zeros((5, 4, 3)).view(Both)).origins() == {"a": (0, 1, 0)}
    assert sig.bind(a=np.zeros((5, 4, 3)).view(Old), origin=(2, 2, 1)).origins() == {
        "a": (2, 2, 1)
    }
    with pytest.raises(ValueError, match="a: default_origin: 2 entries for 3 dimensions"):
        sig.bind(a=_Labelled(np.zeros((5, 4, 3)), default_origin=(1, 1)))


def test_gt_dims_method_is_called():
    """The adopted design's "__gt_dims__(self) method" labels as the
    attribute does."""
    class Labelled(np.ndarray):
        def __gt_dims__(self):
            return ("K", "J", "I")

    a = np.arange(24.0).reshape(2, 3, 4).view(Labelled)
    call = Signature(a=Field["f8", "IJK"]).bind(a=a)
    assert call["a"].shape == (4, 3, 2)


def test_origin_precedence(lap):
    out = gtstore.zeros((10, 10, 4), halo=(2, 2, 0))
    inp = gtstore.zeros((10, 10, 4), halo=(1, 1, 0))
    # the lower halo
    call = lap.bind(out=out, inp=inp)
    assert call["out"].origin == (2, 2, 0) and call["inp"].origin == (1, 1, 0)
    # "_all_" beats the halo, a per-field origin beats "_all_"
    call = lap.bind(out=out, inp=inp, origin={"_all_": (3, 3, 0), "inp": (2, 2, 1)})
    assert call["out"].origin == (3, 3, 0) and call["inp"].origin == (2, 2, 1)
    # __gt_origin__ of a plain object beats nothing else but the halo
    a = np.zeros((10, 10, 4))
    labelled = _Labelled(a, dims=("I", "J", "K"), origin=(4, 1, 0))
    call = lap.bind(out=labelled, inp=np.zeros((10, 10, 4)), origin={"inp": (1, 1, 0)})
    assert call["out"].origin == (4, 1, 0)


class _Labelled:
    """An object with only the array interface plus __gt_dims__/__gt_origin__."""

    def __init__(self, array, dims=None, origin=None, default_origin=None):
        self._array = array
        self.__array_interface__ = array.__array_interface__
        if dims is not None:
            self.__gt_dims__ = dims
        if origin is not None:
            self.__gt_origin__ = origin
        if default_origin is not None:
            self.default_origin = default_origin


def test_permuted_dims_origin_is_permuted(lap):
    """An object stored K, J, I: its __gt_origin__ (K, J, I order) lands on
    the right axes, and its shape and strides are read in I, J, K order."""
    base = np.zeros((4, 9, 10))  # K, J, I
    obj = _Labelled(base, dims=("K", "J", "I"), origin=(0, 2, 1))
    call = lap.bind(out=np.zeros((10, 9, 4)), inp=obj, origin={"out": (1, 2, 0)})
    bound = call["inp"]
    assert bound.origin == (1, 2, 0)
    assert bound.shape == (10, 9, 4)
    assert bound.strides == (base.strides[2], base.strides[1], base.strides[0])
    assert call.domain == (8, 6, 4)


def test_upper_halo_bounds_domain(lap):
    out = gtstore.zeros((10, 10, 4), halo=((1, 3), (1, 3), (0, 0)))
    inp = gtstore.zeros((10, 10, 4), halo=((1, 3), (1, 3), (0, 0)))
    call = lap.bind(out, inp)
    assert call.domain == (6, 6, 4)
    # with an explicit origin, the upper halo still bounds the domain
    call = lap.bind(out, inp, origin=(2, 2, 0))
    assert call.domain == (5, 5, 4)


def test_upper_margin_is_the_larger_of_halo_and_extent(lap):
    """issue 22: storages without a halo and origin=(1, 1, 0): the stencil's
    upper extent (1), not the upper halo (0), bounds the domain, as GT4Py
    infers it; a larger upper halo still bounds it. The inferred domain
    never fails the bounds check."""
    for preset in (None, "gt:cpu_ifirst", "gt:cpu_kfirst", "gtmc"):
        out = gtstore.zeros((10, 9, 4), defaults=preset)
        inp = gtstore.zeros((10, 9, 4), defaults=preset)
        assert inp.halo == ((0, 0), (0, 0), (0, 0))
        assert lap.bind(out, inp, origin=(1, 1, 0)).domain == (8, 7, 4)
        assert lap.bind(out, inp, origin={"_all_": (2, 1, 0), "out": (0, 0, 0)}).domain \
            == (7, 7, 4)
    out = gtstore.zeros((10, 9, 4))
    inp = gtstore.zeros((10, 9, 4), halo=((1, 3), (1, 1), (0, 0)))
    assert lap.bind(out, inp).domain == (6, 7, 4)  # I: halo 3 > extent 1; J: equal
    out = gtstore.zeros((10, 9, 4), halo=((0, 5), (0, 0), (0, 0)))
    assert lap.bind(out, inp, origin=(1, 1, 0)).domain == (4, 7, 4)  # out's halo 5
    small = gtstore.zeros((2, 9, 4))
    with pytest.raises(ValueError, match="field inp has extent 2, origin 1 and the stencil's "
                                         "upper extent 1"):
        lap.bind(gtstore.zeros((2, 9, 4)), small, origin=(1, 1, 0))


def test_dims_from_annotation_then_object():
    sig = Signature(a=Field["f8", "KJI"])
    arr = np.zeros((4, 5, 6))  # no labels: the annotation says K, J, I
    assert sig.bind(arr)["a"].shape == (6, 5, 4)
    # the object's own labels win
    assert sig.bind(Field(arr, "IJK"))["a"].shape == (4, 5, 6)


BAD_FIELDS = [
    (lambda: Field(A, 5), TypeError,
     "dims: expected a string such as 'IJK' or a sequence of labels, got 5"),
    (lambda: Field(A, None), TypeError, "dims: expected a string such as 'IJK'"),
    (lambda: Field(A, ["I", 5]), TypeError,
     "dims: labels are strings such as 'I' or '0', got 5 at position 1"),
    (lambda: Field(A, ["I", "J", "X"]), ValueError, "dims: invalid label 'X' at position 2"),
    (lambda: Field(A, "IIK"), ValueError, "dims: 'IIK' is not a valid dims string"),
    (lambda: Field.zeros((3, 4), dims="IJK"), ValueError,
     "dims: 'IJK' has 3 labels for the array's 2 dimensions"),
]


@pytest.mark.parametrize("make,error,message", BAD_FIELDS)
def test_bad_field_dims(make, error, message):
    """Field(array, dims) checks its labels when it is made, as every dims= is."""
    with pytest.raises(error, match=_escape(message)):
        make()


@pytest.mark.parametrize("shape", [(), (3,), (3, 4), (3, 4, 5), (2, 3, 4, 5, 6)], ids=str)
def test_field_dims_default_by_rank(shape):
    """Field.zeros and friends label as many dimensions as storage creation does."""
    expected = gtstore.zeros(shape).dims
    for field in (Field.zeros(shape), Field.empty(shape), Field.ones(shape),
                  Field.full(shape, 2.0)):
        assert field.dims == expected
        assert field.array.shape == shape
    if shape == (3, 4):  # binds to a 2-d annotation without naming its dims
        assert Signature(a=Field["f8", "IJ"]).bind(Field.zeros(shape))["a"].shape == (3, 4)


def test_field_dims_as_labels():
    assert Field(A, "KJI").dims == ("K", "J", "I")
    assert Field(A, ["I", "J", "0"]).dims == ("I", "J", "0")
    assert Field(A, (_Axis("K"), _Axis("J"), _Axis("I"))).dims == ("K", "J", "I")


class _Axis:
    def __init__(self, name):
        self.__gt_axis_name__ = name


def test_every_kind_of_object(lap):
    shape = (6, 6, 3)
    objects = [
        np.zeros(shape),
        gtstore.zeros(shape),
        Field(np.zeros(shape), "IJK"),
        Field.zeros(shape),
        _Labelled(np.zeros(shape)),
        memoryview(np.zeros(shape)),
        _DLPackOnly(np.zeros(shape)),
    ]
    for obj in objects:
        call = lap.bind(out=obj, inp=np.zeros(shape), origin=(1, 1, 0))
        assert call.domain == (4, 4, 3), type(obj)


class _DLPackOnly:
    def __init__(self, array):
        self._array = array

    def __dlpack__(self, **kwargs):
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


def test_dlpack_producer_takes_the_annotation_dims():
    sig = Signature(a=Field["f8", "KJI"])
    assert sig.bind(_DLPackOnly(np.zeros((4, 5, 6))))["a"].shape == (6, 5, 4)
    labelled = _DLPackOnly(np.zeros((4, 5, 6)))
    labelled.__gt_dims__ = ("I", "J", "K")
    assert sig.bind(labelled)["a"].shape == (4, 5, 6)


def test_xarray_dataarray_binds_with_its_dims():
    xr = pytest.importorskip("xarray")
    sig = Signature(a=Field["f8", "IJK"])
    da = xr.DataArray(np.zeros((4, 5, 6)), dims=("K", "J", "I"))
    assert da.__gt_data_interface__[None]["dims"] == ("K", "J", "I")
    assert sig.bind(da)["a"].shape == (6, 5, 4)
    assert sig.bind(Field(da.data, da.dims))["a"].shape == (6, 5, 4)
    # data with its own data interface (a DataArray-like holding a Storage,
    # which xarray itself would convert): dims set from the DataArray
    from types import SimpleNamespace

    s = gtstore.zeros((4, 5, 6), dims="KJI")
    interface = gtstore._xarray.data_interface(SimpleNamespace(dims=("K", "J", "I"), data=s))
    assert interface[None]["dims"] == ("K", "J", "I")
    assert callable(interface[None]["acquire"])
    with pytest.raises(ValueError, match="disagree with the DataArray's"):
        gtstore._xarray.data_interface(SimpleNamespace(dims=("I", "J", "K"), data=s))


def test_xarray_accessor_follows_replaced_data():
    """The accessor describes the DataArray's data as it is now: xarray caches
    accessors per object, and a cached dict kept the address of data the
    DataArray had replaced, so a stencil wrote into freed memory."""
    xr = pytest.importorskip("xarray")
    sig = Signature(out=Field["f8", "IJK"], inp=Field["f8", "IJK"], writes=["out"])
    da = xr.DataArray(np.zeros((4, 5, 6)), dims=("I", "J", "K"))
    sig.call(lambda domain, origins, out, inp: None, da, np.ones((4, 5, 6)))  # read once
    da.data = np.zeros((4, 5, 6))
    assert da.__gt_data_interface__[None]["data"][0] == da.data.ctypes.data
    gtstore.stencils.copy(da, gtstore.full((4, 5, 6), 2.0))
    np.testing.assert_array_equal(da.values, np.full((4, 5, 6), 2.0))


def test_xarray_accessor_registered_on_later_import():
    import subprocess
    import sys

    code = (
        "import sys, gtstore; assert 'xarray' not in sys.modules; "
        "import xarray, numpy as np; "
        "da = xarray.DataArray(np.zeros((2, 3)), dims=('J', 'I')); "
        "print(da.__gt_data_interface__[None]['dims'])"
    )
    pytest.importorskip("xarray")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "('J', 'I')"


class _Recorder:
    """A data interface whose callbacks log their calls."""

    def __init__(self, log, name, array, fail=None):
        self.log, self.name, self.array, self.fail = log, name, array, fail

    def _callback(self, what):
        def call():
            self.log.append((what, self.name))
            if self.fail == what:
                raise RuntimeError(f"{what} failed")

        return call

    @property
    def __gt_data_interface__(self):
        info = dict(self.array.__array_interface__)
        info.update(
            dims=("I", "J", "K"),
            halo=((1, 1), (1, 1), (0, 0)),
            acquire=self._callback("acquire"),
            touch=self._callback("touch"),
            release=self._callback("release"),
        )
        return {None: info}


def test_acquire_touch_release_order(lap):
    log = []
    out, inp = (_Recorder(log, n, np.zeros((5, 5, 2))) for n in ("out", "inp"))
    call = lap.bind(out, inp)
    assert log == []  # binding acquires nothing
    with call:
        assert log == [("acquire", "out"), ("acquire", "inp")]
    assert log[2:] == [("touch", "out"), ("release", "out"), ("release", "inp")]


def test_exception_releases_without_touch(lap):
    log = []
    out, inp = (_Recorder(log, n, np.zeros((5, 5, 2))) for n in ("out", "inp"))
    with pytest.raises(KeyError), lap.bind(out, inp):
        raise KeyError("in the stencil")
    assert ("touch", "out") not in log
    assert log[-2:] == [("release", "out"), ("release", "inp")]


def test_failed_acquire_releases_the_acquired(lap):
    log = []
    out = _Recorder(log, "out", np.zeros((5, 5, 2)))
    inp = _Recorder(log, "inp", np.zeros((5, 5, 2)), fail="acquire")
    with pytest.raises(RuntimeError, match="acquire failed"), lap.bind(out, inp):
        pass
    assert log == [("acquire", "out"), ("acquire", "inp"), ("release", "out")]


def test_failed_check_acquires_nothing(lap):
    log = []
    out = _Recorder(log, "out", np.zeros((5, 5, 2)))
    inp = _Recorder(log, "inp", np.zeros((5, 5, 2), dtype="f4"))
    with pytest.raises(TypeError, match="inp: dtype float32"):
        lap.bind(out, inp)
    assert log == []


def test_storage_sync_through_the_protocol(lap):
    out = gtstore.zeros((6, 6, 2), halo=(1, 1, 0), managed="gt4py") if False else gtstore.zeros((6, 6, 2), halo=(1, 1, 0))
    with lap.bind(out, gtstore.ones((6, 6, 2), halo=(1, 1, 0))):
        pass


def test_layout_and_alignment_warnings():
    sig = Signature(a=Field["f8", "IJK", LayoutMap["KJI"], Alignment[4096]])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sig.bind(np.zeros((4, 4, 4)))
    messages = [str(w.message) for w in caught if issubclass(w.category, FieldWarning)]
    assert "a: layout IJK (largest stride first) differs from the annotation's KJI" in messages
    assert all("4096-byte alignment" in m for m in messages[1:])
    strict = Signature(a=Field["f8", "IJK", LayoutMap["KJI"]], relies_on_layout=True)
    with pytest.raises(ValueError, match="a: layout IJK .*, the stencil relies on KJI"):
        strict.bind(np.zeros((4, 4, 4)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        strict.bind(np.zeros((4, 4, 4), order="F"))


def test_default_parameters():
    c = Field["f8", "IJK", DefaultParameters["C"]]
    assert tuple(c.layout) == (0, 1, 2)
    f = Field["f8", "IJK", DefaultParameters["F"], LayoutMap[(0, 1, 2)]]
    assert tuple(f.layout) == (0, 1, 2)  # explicit wins
    p = Field["f8", "IJK", DefaultParameters["gt:cpu_ifirst"]]
    assert p.layout is not None and p.alignment is not None
    assert tuple(p.layout) != (0, 1, 2)
    # a preset's alignment counts elements: the annotation's bytes are its
    # dtype's, as those of the preset's storages of that dtype
    for dtype in ("f4", "i2", "f8"):
        s = gtstore.zeros((9, 10, 11), dtype, defaults="gtmc", halo=(1, 1, 0))
        annotation = Field[dtype, DefaultParameters["gtmc"]]
        assert annotation.alignment == s.alignment_size
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no FieldWarning: the storage fits
            Signature(a=annotation, relies_on_layout=True).bind(a=s)


def test_checks_are_not_cached(lap):
    """The same shapes bound twice: the second call's bad dtype is caught."""
    lap.bind(np.zeros((5, 5, 2)), np.zeros((5, 5, 2)), origin=(1, 1, 0))
    with pytest.raises(TypeError, match="inp: dtype float32"):
        lap.bind(np.zeros((5, 5, 2)), np.zeros((5, 5, 2), "f4"), origin=(1, 1, 0))
    with pytest.raises(ValueError, match="read-only"):
        ro = np.zeros((5, 5, 2))
        ro.flags.writeable = False
        lap.bind(ro, np.zeros((5, 5, 2)), origin=(1, 1, 0))


A = np.zeros((6, 6, 3))
RO = np.zeros((6, 6, 3))
RO.flags.writeable = False

# (kwargs of bind, exception, message): each a distinct bad call
BAD_BINDS = [
    (dict(out=A), TypeError, "missing field 'inp'"),
    (dict(out=A, inp=A, extra=A), TypeError, "unexpected keyword argument 'extra'"),
    (dict(out=A, inp=None), TypeError, "inp: expected a field, got None"),
    (dict(out=A, inp=3.0), TypeError, "inp: got float, which cannot be read"),
    (dict(out=A, inp="text"), TypeError, "inp: got str, which cannot be read"),
    (dict(out=A, inp=[[[1.0]]]), TypeError, "inp: got list, which cannot be read"),
    (dict(out=A, inp=np.zeros((6, 6))), ValueError, "inp: 2 dimensions, the signature expects 3"),
    (dict(out=A, inp=np.zeros((6, 6, 3, 1))), ValueError, "inp: 4 dimensions"),
    (dict(out=A, inp=np.zeros((6, 6, 3), "f4")), TypeError, "inp: dtype float32"),
    (dict(out=A, inp=np.zeros((6, 6, 3), "i8")), TypeError, "inp: dtype int64"),
    (dict(out=A, inp=np.zeros((6, 6, 3), "c16")), TypeError, "inp: dtype complex128"),
    (dict(out=np.zeros((6, 6, 3), "f4"), inp=A), TypeError, "out: dtype float32"),
    (dict(out=A, inp=np.zeros((6, 6, 3), ">f8")), TypeError, "inp: dtype: format: '>d' is not in native byte order"),
    (dict(out=RO, inp=A), ValueError, "out: the stencil writes it, but it is read-only"),
    (dict(out=A, inp=A), ValueError, "inp: dimension I: origin 0 - lower extent 1"),
    (dict(out=A, inp=A, origin=(1, 1)), ValueError, "origin: expected 3 entries"),
    (dict(out=A, inp=A, origin=(1, 1, 0, 0)), ValueError, "origin"),
    (dict(out=A, inp=A, origin=(1, "a", 0)), TypeError, "origin"),
    (dict(out=A, inp=A, origin=(-1, 1, 0)), ValueError, "out: origin -1 in dimension I"),
    (dict(out=A, inp=A, origin=(7, 1, 0)), ValueError, "origin 7 in dimension I"),
    (dict(out=A, inp=A, origin={"nope": (1, 1, 0)}), ValueError, "origin: no field named 'nope'"),
    (dict(out=A, inp=A, origin={"inp": (1, 1)}), ValueError, "origin: 2 entries for field inp"),
    (dict(out=A, inp=A, origin={"_all_": (1, 1)}), ValueError, "origin['_all_']: expected 3"),
    (dict(out=A, inp=A, origin={"inp": (5, 1, 0)}), ValueError,
     "domain: the fields leave 0 points in dimension I: field inp has extent 6, origin 5"),
    (dict(out=A, inp=A, origin=3), TypeError, "origin"),
    (dict(out=A, inp=A, origin=(1, 1, 0), domain=(5, 4, 3)), ValueError,
     "inp: dimension I: origin 1 + domain 5 + upper extent 1 = 7 exceeds the field's extent 6"),
    (dict(out=A, inp=A, origin=(1, 1, 0), domain=(4, 4, 4)), ValueError,
     "dimension K: origin 0 + domain 4 + upper extent 0 = 4 exceeds the field's extent 3"),
    (dict(out=A, inp=A, origin=(1, 1, 0), domain=(0, 4, 3)), ValueError,
     "domain: 0 points in dimension I"),
    (dict(out=A, inp=A, origin=(1, 1, 0), domain=(-2, 4, 3)), ValueError, "domain: -2 points"),
    (dict(out=A, inp=A, origin=(1, 1, 0), domain=(4, 4)), ValueError, "domain: expected 3"),
    (dict(out=A, inp=A, origin=(1, 1, 0), domain="IJK"), TypeError, "domain"),
    (dict(out=A, inp=A, origin=(1, 1, 0), domain=(2**63 - 1, 1, 1)), ValueError, "overflow"),
    (dict(out=A, inp=np.zeros((2, 6, 3)), origin=(1, 1, 0)), ValueError,
     "domain: the fields leave 0 points in dimension I: field inp has extent 2, origin 1"),
    (dict(out=A, inp=Field(A, "IJ0"), origin=(1, 1, 0)), ValueError,
     "inp: dims IJ,0 do not match the signature's IJK"),
    (dict(out=A, inp=Field(A, "IJ"), origin=(1, 1, 0)), ValueError, "inp: __gt_data_interface__[None]['dims']: 2 labels"),
    (dict(out=_Labelled(A, dims="IJKK"), inp=A, origin=(1, 1, 0)), ValueError, "out: __gt_dims__"),
    (dict(out=_Labelled(A, origin=(1, 1)), inp=A), ValueError, "out: __gt_origin__: 2 entries"),
    (dict(out=_Labelled(A, origin=(1, 1, "x")), inp=A), TypeError, "out: __gt_origin__"),
    (dict(out=_Labelled(A, origin=(-1, 0, 0)), inp=A, origin={"inp": (1, 1, 0)}), ValueError,
     "out: origin -1 in dimension I (from __gt_origin__)"),
]


class _Interface:
    def __init__(self, interface):
        self.__gt_data_interface__ = interface


def _info(**changes):
    info = dict(A.__array_interface__)
    info.update(changes)
    return {None: info}


BAD_INTERFACES = [
    (_Interface([1, 2]), TypeError, "inp: __gt_data_interface__: expected a dict"),
    (_Interface({"tpu": A.__array_interface__}), ValueError,
     "inp: __gt_data_interface__ has no buffer on the cpu or the gpu (its keys: {'tpu': "),
    # only a "gpu" entry: read there to be copied in, and host memory is not a GPU's
    (_Interface({"gpu": A.__array_interface__}), ValueError,
     "inp: __gt_data_interface__['gpu']: address "),
    (_Interface({None: {"shape": (6, 6, 3)}}), TypeError, "needs 'shape', 'typestr' and 'data'"),
    (_Interface(_info(shape=[6, 6, 3])), None, None),  # a list is a sequence: fine
    (_Interface(_info(shape=(6, -6, 3))), ValueError, "inp: shape: -6 in dimension 1 is negative"),
    (_Interface(_info(shape=(6, 6, "3"))), TypeError, "inp:"),
    (_Interface(_info(typestr=8)), TypeError, "inp: __gt_data_interface__[None]['typestr']: expected a str"),
    (_Interface(_info(typestr="<x8")), TypeError, "inp: typestr: unsupported dtype '<x8'"),
    (_Interface(_info(data=5)), TypeError, "inp: __gt_data_interface__[None]['data']: expected (address, read_only)"),
    (_Interface(_info(data=("a", False))), TypeError, "inp:"),
    (_Interface(_info(data=(0, False))), ValueError, "inp: no memory"),
    (_Interface(_info(strides=(8, 8))), ValueError, "inp: __gt_data_interface__[None]['strides']: 2 strides for 3"),
    (_Interface(_info(strides=(2**62, 2**62, 8))), ValueError, "inp:"),
    (_Interface(_info(acquire=5)), TypeError, "inp: __gt_data_interface__['acquire']: expected a callable"),
    (_Interface(_info(touch="x")), TypeError, "inp: __gt_data_interface__['touch']"),
    (_Interface(_info(release=[])), TypeError, "inp: __gt_data_interface__['release']"),
    (_Interface(_info(halo=((1, 1), (1, 1)))), ValueError, "inp: halo: ((1, 1), (1, 1)) has 2 entries for 3"),
    (_Interface(_info(halo=((-1, 1), (1, 1), (0, 0)))), ValueError, "inp: halo (-1, 1) in dimension I"),
    (_Interface(_info(halo=((3, 4), (1, 1), (0, 0)))), ValueError, "inp: halo (3, 4) in dimension I"),
    (_Interface(_info(halo="x")), TypeError, "inp: halo"),
    (_Interface(_info(dims=("I", "J"))), ValueError, "inp: __gt_data_interface__[None]['dims']: 2 labels"),
    (_Interface(_info(dims=5)), TypeError, "inp:"),
    (_Interface(_info(dims=("I", "I", "K"))), ValueError,
     "inp: __gt_data_interface__[None]['dims']: ('I', 'I', 'K'): dims: 'I' appears twice"),
    (_Interface(_info(dims=("I", "J", "X"))), ValueError, "inp:"),
]


@pytest.mark.parametrize("kwargs,error,message", BAD_BINDS)
def test_bad_bind(lap, kwargs, error, message):
    with pytest.raises(error, match=_escape(message)):
        lap.bind(**kwargs)


def test_data_interface_names_of_another_convention_are_taken_by_position():
    """dims such as xarray's ("x", "y", "z") label nothing, as they label
    nothing in storage creation: the entry binds as an array without labels
    (by position, the annotation's I, J, K), not as an error; gtstore's own
    labels still permute it, and a mix with them is still refused."""
    sig = Signature(a=Field["f8", "IJK"])
    values = np.zeros((4, 5, 6))
    named = _Interface({None: {**values.__array_interface__, "dims": ("x", "y", "z")}})
    call = sig.bind(named)
    assert call["a"].shape == (4, 5, 6) and call["a"].strides == values.strides
    assert gtstore.as_storage(named).dims == ("I", "J", "K")  # the same reading
    labelled = _Interface({None: {**values.__array_interface__, "dims": ("K", "J", "I")}})
    assert sig.bind(labelled)["a"].shape == (6, 5, 4)
    mixed = _Interface({None: {**values.__array_interface__, "dims": ("I", "y", "z")}})
    with pytest.raises(ValueError, match=r"^a: __gt_data_interface__\[None\]\['dims'\]: "):
        sig.bind(mixed)


@pytest.mark.parametrize("dims", [("x",), ("x", "y", "z", "t"), ()], ids=repr)
def test_data_interface_names_of_another_convention_still_count_the_dimensions(dims):
    """Names that label nothing still name one dimension each: a "dims" of
    another length than the entry's dimensions is a mistake in the entry,
    refused by stencil calls and creation alike rather than ignored."""
    values = np.zeros((4, 5, 6))
    obj = _Interface({None: {**values.__array_interface__, "dims": dims}})
    message = (rf"__gt_data_interface__\[None\]\['dims'\]: {re.escape(repr(dims))}: "
               rf"{len(dims)} names for 3 dimensions$")
    with pytest.raises(ValueError, match="^a: " + message):
        Signature(a=Field["f8", "IJK"]).bind(obj)
    with pytest.raises(ValueError, match="^" + message):
        gtstore.as_storage(obj)


@pytest.mark.parametrize("obj,error,message", BAD_INTERFACES)
def test_bad_data_interface(lap, obj, error, message):
    if error is None:
        lap.bind(out=A, inp=obj, origin=(1, 1, 0))
        return
    with pytest.raises(error, match=_escape(message)):
        lap.bind(out=A, inp=obj, origin=(1, 1, 0))


def _escape(text):
    import re

    return re.escape(text)


BAD_SIGNATURES = [
    (lambda: Signature(Field["f8"]), TypeError, "takes fields by keyword"),
    (lambda: Signature(a=np.float64), TypeError, "a: expected a Field annotation"),
    (lambda: Signature(a=Field["nope"]), ValueError, "a: dtype: 'nope' is a placeholder"),
    (lambda: Signature(a=Field["not a dtype"]), TypeError, "a: dtype: data type 'not a dtype'"),
    (lambda: Signature(a=Field["f8", "IJX"]), ValueError, "a: dims"),
    (lambda: Signature(a=Field["f8", "IIK"]), ValueError, "a: dims"),
    (lambda: Signature(a=Field["f8", "IJK", LayoutMap[(0, 0, 1)]]), ValueError, "a:"),
    (lambda: Signature(a=Field["f8", "IJK", LayoutMap["KXI"]]), ValueError,
     "a: layout: 'KXI' is not an axis order such as 'KJI' (invalid label 'X'"),
    (lambda: Signature(a=Field["f8", "IJK", Alignment[-8]]), ValueError,
     "a: alignment: -8 bytes is not positive"),
    (lambda: Signature(a=Field["f8", "IJK", Alignment[0]]), ValueError,
     "a: alignment: 0 bytes is not positive"),
    (lambda: Signature(a=Field["f8", "IJK", Alignment[3]]), ValueError,
     "a: alignment: 3 bytes and the itemsize (8 bytes) must divide one another"),
    (lambda: Signature(a=Field["f8", "IJK", Alignment[1.5]]), TypeError,
     "a: alignment: expected an integer, got 1.5"),
    (lambda: Signature(a=Field["f8"], extents={"b": (1, 1, 0)}), ValueError, "extents: no field named 'b'"),
    (lambda: Signature(a=Field["f8"], extents={"a": (-1, 1, 0)}), ValueError, "a: extent (-1, -1) in dimension I"),
    (lambda: Signature(a=Field["f8"], extents=[1]), TypeError, "extents: expected a dict"),
    (lambda: Signature(a=Field["f8"], writes=["b"]), ValueError, "writes: no field named 'b'"),
    (lambda: Signature(a=Field["f8"], writes="a"), TypeError, "writes: expected a list"),
    (lambda: Signature(a=Field["f8"], device="tpu"), ValueError, "device"),
    (lambda: Signature(a=Field["f8", "IJ0"], extents={"a": ((0, 0), (0, 0), (1, 1))}), ValueError,
     "in dimension 0: extents are >= 0, and 0 in data dimensions"),
    (lambda: Field[LayoutMap[(0, 1, 2)]], TypeError, "the dtype comes first"),
    (lambda: Field["f8", "IJK", 5], TypeError, "expected LayoutMap"),
    (lambda: Field["f8", "IJK", Alignment[8], Alignment[8]], TypeError, "Alignment given twice"),
]


@pytest.mark.parametrize("make,error,message", BAD_SIGNATURES)
def test_bad_signature(make, error, message):
    with pytest.raises(error, match=_escape(message)):
        make()


def test_dtype_as_a_bracketed_parameter():
    """DType[...] gives the dtype among the bracketed parameters (spec 001's
    Field[DType[np.float32], Alignment[8], LayoutMap[(0, 2, 1)]]): first,
    and once; then the dims may follow."""
    assert Field[DType["f4"], "IJK"] == Field["f4", "IJK"]
    assert Field[DType["f4"]] == Field["f4"] != Field["f8"]
    annotation = Field[DType[np.float32], Alignment[8], LayoutMap[(0, 2, 1)]]
    assert annotation == Field[np.float32, Alignment[8], LayoutMap[(0, 2, 1)]]
    assert (annotation.dtype, annotation.dims, annotation.layout, annotation.alignment) == (
        np.float32, None, (0, 2, 1), 8)
    assert Field[DType["f4"], "KJI", DefaultParameters["C"]].layout == (0, 1, 2)
    sig = Signature(a=annotation)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FieldWarning)  # the layout differs: only slower
        assert sig.bind(np.zeros((3, 4, 5), np.float32)).domain == (3, 4, 5)
    with pytest.raises(TypeError, match="a: dtype float64, the signature expects float32"):
        sig.bind(np.zeros((3, 4, 5)))
    assert gtstore.DType is DType and "DType" in gtstore.__all__
    assert "DType" in gtstore.fields.__all__
    for make in (lambda: Field["f8", DType["f4"]], lambda: Field["f8", "IJK", DType["f4"]]):
        with pytest.raises(TypeError, match=r"^Field\[\.\.\.\]: the dtype given twice, as 'f8' "
                                            r"and as DType\['f4'\]; give it once \(beside "
                                            r"DType\[\.\.\.\] the positional parameter is the "
                                            r"dims, and dims: 'f8' is not a valid dims string"):
            make()
    with pytest.raises(TypeError, match=r"^Field\[\.\.\.\]: DType given twice$"):
        Field[DType["f4"], DType["f4"]]


@pytest.mark.parametrize(
    "annotation, expected",
    [
        (lambda: Field["IJK", DType["f4"]], Field["f4", "IJK"]),
        (lambda: Field["KJ", DType["f4"], Alignment[8]], Field["f4", "KJ", Alignment[8]]),
        (lambda: Field[LayoutMap[(2, 1, 0)], DType["f4"]], Field["f4", LayoutMap[(2, 1, 0)]]),
        (lambda: Field["I", DType["T"]], Field["T", "I"]),  # "I" is a dtype to NumPy, dims here
    ],
)
def test_dtype_bracketed_in_any_place(annotation, expected):
    """DType[...] is a named parameter: it gives the dtype wherever it
    stands, and the positional parameter beside it is the dims."""
    assert annotation() == expected
    sig = Signature(a=annotation(), dtypes={"T": "f4"} if expected.dtype == "T" else None)
    shape = (4, 3, 2)[:len(expected.dims or "IJK")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FieldWarning)  # a layout that differs: only slower
        sig.bind(np.zeros(shape, np.float32))
    with pytest.raises(TypeError, match="a: dtype float64, the signature expects float32"):
        sig.bind(np.zeros(shape))


def test_annotations_equal_by_value_hash_alike():
    """Annotations compare by value, and equal ones hash alike (as dict
    keys and set members): equal dtypes given differently ("f8",
    np.float64, np.dtype("f8")), a layout or dims as a list, a tuple or a
    NumPy array, NumPy integers for Python ones."""
    layout = (2, 1, 0)
    equal = [
        (Field["f8", "IJK"], Field[np.dtype("f8"), "IJK"]),
        (Field[np.float64], Field[DType[np.dtype("f8")]]),
        (Field["f8", "IJK", LayoutMap[list(layout)]], Field["f8", "IJK", LayoutMap[layout]]),
        (Field["f8", "IJK", LayoutMap[np.array(layout)]], Field["f8", "IJK", LayoutMap[layout]]),
        (Field["f8", ["I", "J"]], Field["f8", ("I", "J")]),
        (Field["f8", "IJK", Alignment[np.int64(8)]], Field["f8", "IJK", Alignment[8]]),
    ]
    for a, b in equal:
        assert a == b and hash(a) == hash(b), (a, b)
        assert len({a, b}) == 1
    assert Field["f8", "IJK", LayoutMap[layout]] != Field["f8", "IJK", LayoutMap[(0, 1, 2)]]
    assert Field["T"] != Field["U"] and Field["f8", "IJ"] != Field["f8", "IJK"]


@pytest.mark.parametrize("name", ["f8", "float64", "i4", "d", "float", "int", "bool", "e"])
def test_dtype_names_are_no_placeholders(name):
    """A placeholder is a name that is no dtype gtstore holds: NumPy's
    names and codes of those stay dtypes, which dtypes= cannot rebind."""
    assert Signature(a=Field[name]).bind(np.zeros((2, 2, 2), np.dtype(name))).domain == (2, 2, 2)
    with pytest.raises(ValueError, match=f"^dtypes: '{name}' names no placeholder of the "
                                         r"fields' dtypes"):
        Signature(a=Field[name], dtypes={name: "f4"})


def test_placeholder_dtypes_bound_by_signature():
    """Field['T'] (or DType['T']) is a placeholder that Signature(...,
    dtypes=) binds to a dtype, the stencil decorator's dtypes parameter of
    spec 001; a call then checks the bound dtype as any other."""
    sig = Signature(out=Field["T", "IJK"], inp=Field[DType["dtype_in"], "KJI"], coeff=Field["T"],
                    writes=["out"], dtypes={"T": "f4", "dtype_in": np.int64})
    out, coeff = np.zeros((4, 3, 2), np.float32), np.ones((4, 3, 2), np.float32)
    inp = np.arange(24, dtype=np.int64).reshape(2, 3, 4)
    assert sig.bind(out, inp, coeff).domain == (4, 3, 2)
    with pytest.raises(TypeError, match="^out: dtype float64, the signature expects float32"):
        sig.bind(np.zeros((4, 3, 2)), inp, coeff)
    with pytest.raises(TypeError, match="^inp: dtype int32, the signature expects int64"):
        sig.bind(out, inp.astype(np.int32), coeff)
    # one placeholder, another dtype per Signature
    again = Signature(out=Field["T", "IJK"], dtypes={"T": np.float64})
    assert again.bind(np.zeros((4, 3, 2))).domain == (4, 3, 2)
    # "T" is NumPy 2's code of StringDType, which gtstore does not hold: a
    # placeholder all the same
    assert Signature(a=Field["T"], dtypes={"T": "c16"}).bind(
        np.zeros((1, 1, 1), complex)).domain == (1, 1, 1)


BAD_PLACEHOLDERS = [
    (dict(a=Field["T"]), ValueError,
     r"^a: dtype: 'T' is a placeholder that dtypes= does not bind; pass Signature\(\.\.\., "
     r"dtypes=\{'T': 'f8'\}\), or a dtype gtstore holds \(as a dtype, "),
    (dict(a=Field["f8"], b=Field[DType["dtype_in"]], dtypes={"T": "f4"}), ValueError,
     r"^b: dtype: 'dtype_in' is a placeholder that dtypes= does not bind"),
    (dict(a=Field["T"], dtypes={"T": "f4", "U": "f8"}), ValueError,
     r"^dtypes: 'U' names no placeholder of the fields' dtypes \(a placeholder is a name that "
     r"is no dtype, such as Field\['T', 'IJK'\]; placeholders used: \{'T'\}\)$"),
    # None is no dtype here, though NumPy reads np.dtype(None) as float64
    (dict(a=Field["T"], dtypes={"T": None}), TypeError,
     r"^dtypes\['T'\]: None binds the placeholder 'T' to no dtype \(NumPy would read it as "
     r"float64\); give a dtype, such as \{'T': 'f8'\}$"),
    (dict(a=Field["T"], dtypes={"T": "nope"}), TypeError,
     r"^dtypes\['T'\]: dtype: data type 'nope' not understood$"),
    (dict(a=Field["T"], dtypes={"T": "U8"}), TypeError, r"^dtypes\['T'\]: dtype: dtype\('<U8'\) "
                                                         r"is not supported"),
    (dict(a=Field["T"], dtypes={"T": ("f8", (3,))}), TypeError,
     r"^a: dtype: a subarray dtype"),
    (dict(a=Field["T"], dtypes=[("T", "f4")]), TypeError,
     r"^dtypes: expected a dict of placeholder names to dtypes, such as \{'T': 'f4'\}, got "),
    (dict(a=Field["T"], dtypes={np.float32: "f4"}), TypeError,
     r"^dtypes: keys are placeholder names \(str\), got <class 'numpy.float32'>$"),
    (dict(a=Field["f4"], dtypes={}), None, None),
]


@pytest.mark.parametrize("kwargs, error, message", BAD_PLACEHOLDERS)
def test_bad_placeholder_dtypes(kwargs, error, message):
    if error is None:
        assert Signature(**kwargs).fields == ("a",)
        return
    with pytest.raises(error, match=message):
        Signature(**kwargs)


def test_a_preset_needs_a_dtype_for_its_alignment():
    with pytest.raises(TypeError, match=r"^Field\[\.\.\.\]: DefaultParameters\['gt:cpu_ifirst'\]: "
                                        r"a preset's alignment counts elements of the dtype, "
                                        r"and 'T' is none"):
        Field["T", "IJK", DefaultParameters["gt:cpu_ifirst"]]


@pytest.mark.parametrize(
    "extents, error, message",
    [
        ((1, 1), ValueError, "out: extents: (1, 1) has 2 entries for 3 dimensions"),
        ((1, "x", 0), TypeError,
         "out: extents: expected an int or a pair (lower, upper), got 'x' at position 1"),
        ((1, (1, 2, 3), 0), TypeError, "out: extents: expected an int or a pair (lower, upper)"),
        (5, TypeError, "out: extents: expected a sequence of ints or (lower, upper) pairs, got 5"),
        ((1, 1.5, 0), TypeError, "out: extents:"),
    ],
    ids=str,
)
def test_bad_extents_are_named_extents(extents, error, message):
    """A signature's extents are read as a halo is, but named as given."""
    with pytest.raises(error, match=_escape(message)) as caught:
        Signature(out=Field["f8"], extents={"out": extents})
    assert "halo" not in str(caught.value)


@pytest.mark.parametrize("dtype", ["i1", "f4", "f8", "c16"])
@pytest.mark.parametrize("alignment", [-8, 0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 64])
def test_signature_alignment_as_storage_creation(dtype, alignment):
    """An annotation's Alignment follows the rule of a storage's alignment_size:
    accepted, or refused with the same message."""
    annotation = Field[dtype, "IJK", Alignment[alignment]]
    try:
        gtstore.empty((2, 2, 2), dtype=dtype, alignment_size=alignment)
    except ValueError as error:
        expected = str(error).replace("alignment_size:", "a: alignment:", 1)
        with pytest.raises(ValueError, match=_escape(expected)):
            Signature(a=annotation)
    else:
        Signature(a=annotation)


def test_binding_misuse(lap):
    call = lap.bind(A, A, origin=(1, 1, 0))
    with pytest.raises(KeyError, match="'nope': no such field"):
        call["nope"]
    with pytest.raises(RuntimeError, match="not entered"):
        call.__exit__(None, None, None)
    with call, pytest.raises(RuntimeError, match="entered already"):
        call.__enter__()
    assert len(call) == 2


def test_arrays_in_kernel_order():
    sig = Signature(a=Field["f8", "IJK"])
    base = np.arange(24.0).reshape(4, 3, 2)  # K, J, I
    arrays = sig.bind(Field(base, "KJI")).arrays()
    assert arrays["a"].shape == (2, 3, 4)
    assert np.shares_memory(arrays["a"], base)
    assert arrays["a"][1, 2, 3] == base[3, 2, 1]


def test_call_runs_kernel_inside_the_protocol(lap):
    log = []
    out, inp = (_Recorder(log, n, np.zeros((5, 5, 2))) for n in ("out", "inp"))

    def kernel(domain, origins, scale, *, out, inp, note):
        log.append(("kernel", domain, origins["inp"], out.shape, scale, note))
        return "done"

    assert lap.call(kernel, out, inp, args=(2.0,), kwargs={"note": "x"}) == "done"
    assert log == [("acquire", "out"), ("acquire", "inp"),
                   ("kernel", (3, 3, 2), (1, 1, 0), (5, 5, 2), 2.0, "x"),
                   ("touch", "out"), ("release", "out"), ("release", "inp")]
    log.clear()

    def failing(*args, **kwargs):
        raise ZeroDivisionError("in the kernel")

    with pytest.raises(ZeroDivisionError):
        lap.call(failing, out, inp)
    assert ("touch", "out") not in log and log[-1] == ("release", "inp")
    log.clear()
    with pytest.raises(TypeError, match="inp: dtype float32"):
        lap.call(kernel, out, np.zeros((5, 5, 2), "f4"))
    assert log == []
    with pytest.raises(TypeError, match="the kernel, a callable, comes first"):
        lap.call(out, inp)
    with pytest.raises(TypeError, match="multiple values"):
        lap.call(kernel, out, inp, kwargs={"out": 1})


@pytest.mark.parametrize(
    "extras, message",
    [
        (dict(args=5), "args: expected an iterable of the kernel's extra positional arguments, "
                       "got 5 (type int)"),
        (dict(args=object), "args: expected an iterable"),
        (dict(kwargs=5), "kwargs: expected a dict, got 5 (type int)"),
        (dict(kwargs=[("note", 1)]), "kwargs: expected a dict, got [('note', 1)]"),
        (dict(kwargs={1: 2}), "kwargs: keys are keyword names (str), got 1"),
    ],
    ids=str,
)
def test_call_names_bad_extras(lap, extras, message):
    """args= and kwargs= of the wrong kind are named; the fields are released untouched."""
    log = []
    out, inp = (_Recorder(log, n, np.zeros((5, 5, 2))) for n in ("out", "inp"))
    with pytest.raises(TypeError, match=_escape(message)):
        lap.call(lambda *a, **kw: None, out, inp, **extras)
    assert ("touch", "out") not in log and log[-1] == ("release", "inp")


def test_call_takes_any_iterable_as_args(lap):
    got = lap.call(lambda domain, origins, *args, **arrays: args, A, A, origin=(1, 1, 0),
                   args=iter([1, 2]))
    assert got == (1, 2)


@pytest.fixture(scope="module")
def c_kernel_library(tmp_path_factory):
    """examples/c_kernel.c built as a shared library (skipped without cc)."""
    import pathlib
    import shutil
    import subprocess

    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.skip("no C compiler")
    root = pathlib.Path(__file__).resolve().parents[2]
    library = tmp_path_factory.mktemp("kernel") / "libc_kernel.so"
    subprocess.run([cc, "-shared", "-fPIC", "-std=c11", f"-I{root / 'include'}",
                    str(root / "examples" / "c_kernel.c"), "-o", str(library)],
                   check=True, timeout=120)
    return library


def test_c_kernel_example_usage(tmp_path):
    # Without the library, or with one that is not there: the usage (the build
    # command) or what went wrong, and exit status 1; never a traceback.
    import subprocess
    import sys

    script = str(pathlib_root() / "examples" / "c_kernel.py")
    for args in ([], [str(tmp_path / "missing.so")]):
        run = subprocess.run([sys.executable, script, *args], capture_output=True, text=True,
                             timeout=60)
        assert run.returncode == 1 and "Traceback" not in run.stderr
        assert "cc -shared -fPIC -std=c11 -Iinclude examples/c_kernel.c" in run.stderr or \
            "cannot load" in run.stderr


def test_c_kernel_example(c_kernel_library):
    import runpy

    runpy.run_path(str(pathlib_root() / "examples" / "c_kernel.py"), run_name="example")[
        "main"](str(c_kernel_library))


def pathlib_root():
    import pathlib

    return pathlib.Path(__file__).resolve().parents[2]


def test_c_kernel_errors(c_kernel_library):
    import ctypes

    lib = ctypes.CDLL(str(c_kernel_library))
    kernel = ctypes.cast(lib.scale_kernel, ctypes.c_void_p).value
    sig = Signature(out=Field["f8", "IJK"], inp=Field["f8", "IJK"], writes=["out"])
    a, b = np.zeros((3, 3, 3)), np.ones((3, 3, 3))
    # the kernel's own error (no factor) becomes a ValueError; out is not touched
    with pytest.raises(ValueError, match="scale_kernel: expects"):
        sig.call_c(kernel, a, b)
    with pytest.raises(TypeError, match="expected a capsule or the address"):
        sig.call_c("kernel", a, b)
    with pytest.raises(TypeError, match="the kernel comes first"):
        sig.call_c()
    factor = ctypes.c_double(3.0)
    sig.call_c(kernel, a, b, ctx=ctypes.addressof(factor))
    assert (a == 3).all()
    # what is no pointer is refused before the kernel runs: no jump to -1,
    # no ctx of 2**64 - 1 (issue 19)
    for bad in (-1, -(2**63), 2**64, 2**100):
        with pytest.raises(ValueError, match=rf"kernel: {bad} is not an address"):
            sig.call_c(bad, a, b, ctx=ctypes.addressof(factor))
        with pytest.raises(ValueError, match=rf"ctx: {bad} is not an address"):
            sig.call_c(kernel, a, b, ctx=bad)
    for bad in (True, 1.5, "0x10"):
        with pytest.raises(TypeError, match="ctx: expected an address"):
            sig.call_c(kernel, a, b, ctx=bad)
    with pytest.raises(TypeError, match="expected a capsule or the address"):
        sig.call_c(True, a, b)
    assert (a == 3).all()  # nothing ran


class _CudaLike(CudaArray):
    """Device memory (the emulated device's, 120 elements) as the CUDA array
    interface describes it: what the strides reach of it."""

    def __init__(self, shape, strides=None, dims=None):
        super().__init__(gtstore.empty((120,), device="gpu", managed=None), dims=dims)
        self.__cuda_array_interface__.update(shape=shape, strides=strides)
        self.address = self.__cuda_array_interface__["data"][0]


@pytest.fixture
def emulated_gpu():
    gtstore.use_gpu("emulated")
    yield
    gtstore.use_gpu(None)


def test_gpu_signature_reads_device_interfaces(emulated_gpu):
    sig = Signature(out=Field["f8", "IJK"], inp=Field["f8", "IJK"],
                    extents={"inp": ((1, 1), (1, 1), (0, 0))}, writes=["out"], device="gpu")
    assert sig.device == "gpu"
    out = _CudaLike((6, 5, 4))
    inp = _CudaLike((4, 5, 6), strides=(8, 32, 160), dims="KJI")  # I contiguous
    call = sig.bind(out, inp, origin=(1, 1, 0))
    assert call.domain == (4, 3, 4)
    assert call["inp"].shape == (6, 5, 4) and call["inp"].strides == (160, 32, 8)
    assert call["inp"].data == inp.address + 160 + 32
    # the kernel's arrays: on the emulated device NumPy's, over the host
    # memory behind the device addresses, in the kernel's order
    inp.storage[...] = np.arange(120.0)
    arrays = call.arrays()
    assert arrays["inp"].shape == (6, 5, 4) and arrays["inp"].strides == (160, 32, 8)
    np.testing.assert_array_equal(arrays["inp"], np.arange(120.0).reshape(6, 5, 4))
    arrays["out"][...] = 2.0  # written in place, where the object's memory is
    np.testing.assert_array_equal(out.storage.to_ndarray(), 2.0)
    # host memory for a gpu stencil: no "gpu" buffer, so copied in (GDP-3)
    for host in (np.zeros((6, 5, 4)), Field(np.zeros((6, 5, 4)), "IJK")):
        with pytest.warns(gtstore.FieldWarning, match="inp: no buffer on the gpu, where the "
                                                      "stencil computes: copied to device memory"):
            assert sig.bind(out, host, origin=(1, 1, 0)).domain == (4, 3, 4)
    with pytest.raises(TypeError, match="inp: got object, which cannot be read as a field: it "
                                        "has no "):
        sig.bind(out, object(), origin=(1, 1, 0))
    # a "gpu" entry no device gtstore has reads: its host entry, copied in
    both = BothEntries(np.arange(120.0).reshape(6, 5, 4), gpu_entry((6, 5, 4)))
    seen = {}
    with pytest.warns(gtstore.FieldWarning, match="inp: no buffer on the gpu"):
        sig.call(lambda domain, origins, out, inp: seen.update(inp=np.array(inp)), out, both,
                 origin=(1, 1, 0))
    np.testing.assert_array_equal(seen["inp"], both.host)
    assert both.acquired == [None]


def test_copies_that_share_memory_are_refused(emulated_gpu):
    """A field bound as a copy (it has no buffer where the stencil computes)
    that shares memory with another field, either of them written: the run
    would not see its own writes through the other field, or one copy back
    would undo the other's writes. Refused on either device; fields that are
    only read may share memory."""
    both = Signature(a=Field["f8", "IJK"], b=Field["f8", "IJK"], writes=["a", "b"], device="gpu")
    h = np.arange(120.0).reshape(6, 5, 4)
    for a, b in [(h, h), (h[:3], h[2:]), (h[:, :, ::2], h[:, :, 1::2])]:  # bounds overlap
        with refused(ValueError, r"^a and b share memory, and the stencil computes on a copy "
                                 r"of a \(no buffer on the gpu\), which would not see the "
                                 r"other's writes; pass separate fields$"):
            both.bind(a, b)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FieldWarning)  # each accepted copy warns
        assert both.bind(h[:3], h[3:]).domain == (3, 5, 4)  # apart
        device = gtstore.zeros((6, 5, 4), device="gpu", managed=None)
        assert both.bind(device, h).domain == (6, 5, 4)  # the copy's own memory is apart
        reads = Signature(out=Field["f8", "IJK"], x=Field["f8", "IJK"], y=Field["f8", "IJK"],
                          writes=["out"], device="gpu")
        assert reads.bind(device, h, h).domain == (6, 5, 4)
        # a stencil on the host: device-only memory is the copy
        host = Signature(a=Field["f8", "IJK"], b=Field["f8", "IJK"], writes=["b"])
        with pytest.raises(ValueError, match=r"^a and b share memory, and the stencil computes "
                                             r"on a copy of a \(no buffer on the cpu\)"):
            host.bind(device, device[:, :3])
        assert host.bind(device[:2], device[2:4]).domain == (2, 5, 4)  # I outermost
        # the two sides of one mirrored storage: bound by its host side, and
        # copied from its device side (another library's array over it)
        mirrored = gtstore.zeros((6, 5, 4), device="gpu")
        for sig, a, b in [(host, mirrored, CudaArray(mirrored)),
                          (both, mirrored, np.asarray(mirrored))]:
            with pytest.raises(ValueError, match=r"^b and a share memory, and the stencil "
                                                 r"computes on a copy of b"):
                sig.bind(a, b)
    np.testing.assert_array_equal(h, np.arange(120.0).reshape(6, 5, 4))


def test_array_only_objects_bind_through_numpy(lap):
    """An object that only speaks __array__ is bound as the array NumPy
    makes of it (with its own __gt_dims__), and a written one gets the
    kernel's values back by item assignment when the Binding's block ends
    cleanly; an exception in the block, or a failing kernel, assigns
    nothing."""
    values = np.arange(60.0).reshape(5, 4, 3)
    inp = ArrayOnly(values.transpose(2, 1, 0).copy())
    inp.__gt_dims__ = "KJI"
    out = WritableArrayOnly(np.zeros((5, 4, 3)))
    with pytest.warns(FieldWarning, match="^out: read through __array__"):
        call = lap.bind(out, inp, origin=(1, 1, 0))
    assert call.domain == (3, 2, 3) and call["out"].obj is out and call["inp"].obj is inp
    assert call["inp"].shape == (5, 4, 3) and call["inp"].dims == ("I", "J", "K")
    with call:
        arrays = call.arrays()
        np.testing.assert_array_equal(arrays["inp"], values)
        arrays["out"][...] = 2 * arrays["inp"]
        assert out.assignments == 0  # not before the block ends
    assert out.assignments == 1
    np.testing.assert_array_equal(out.values, 2 * values)
    with pytest.raises(KeyError), call:
        call.arrays()["out"][...] = -1.0
        raise KeyError("the kernel failed")
    assert out.assignments == 1
    np.testing.assert_array_equal(out.values, 2 * values)

    def kernel(domain, origins, out, inp):
        out[...] = inp + 1
        raise RuntimeError("the kernel failed")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FieldWarning)
        with pytest.raises(RuntimeError, match="the kernel failed"):
            lap.call(kernel, out, inp, origin=(1, 1, 0))
        assert out.assignments == 1
        lap.call(lambda domain, origins, out, inp: out.__setitem__(..., inp + 1), out, inp,
                 origin=(1, 1, 0))
    assert out.assignments == 2
    np.testing.assert_array_equal(out.values, values + 1)


@pytest.mark.parametrize("device", ["cpu", "gpu"])
def test_array_only_objects_with_read_only_arrays_are_written(device, request):
    """A written object whose __array__ gives a read-only array (a view it
    protects, as copy-on-write arrays are) but that takes item assignment:
    the stencil writes a copy, assigned to the object after the run; it
    was refused as read-only, which the object is not."""
    if device == "gpu":
        request.getfixturevalue("emulated_gpu")

    class Protected(WritableArrayOnly):
        def __array__(self, dtype=None, copy=None):
            array = super().__array__(dtype, copy)
            array.flags.writeable = False
            return array

    sig = Signature(out=Field["f8", "IJK"], writes=["out"], device=device)
    out = Protected(np.zeros((4, 3, 2)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FieldWarning)
        call = sig.bind(out)
    for run in (1, 2):
        with call:
            call.arrays()["out"][...] += run
    np.testing.assert_array_equal(out.values, 3.0)
    assert out.assignments == 2


def test_array_only_objects_whose_assignment_fails(lap):
    """An object whose item assignment raises, or takes no Ellipsis (a
    list): the error surfaces after the run, naming the field, and the
    fields are released (the Binding can be entered again)."""
    class Refusing(WritableArrayOnly):
        def __setitem__(self, key, value):
            raise RuntimeError("read-only today")

    class Nested(list):
        def __array__(self, dtype=None, copy=None):
            return np.array(list(self), dtype=dtype)

    inp = ArrayOnly(np.ones((5, 4, 3)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FieldWarning)
        with pytest.raises(RuntimeError, match="^out: read-only today$"):
            lap.call(lambda domain, origins, out, inp: None, Refusing(np.zeros((5, 4, 3))), inp,
                     origin=(1, 1, 0))
        with pytest.raises(TypeError, match="^out: list indices must be integers or slices, "
                                            "not ellipsis$"):
            lap.call(lambda domain, origins, out, inp: None,
                     Nested(np.zeros((5, 4, 3)).tolist()), inp, origin=(1, 1, 0))
        call = lap.bind(Refusing(np.zeros((5, 4, 3))), inp, origin=(1, 1, 0))
    for _ in range(2):
        with pytest.raises(RuntimeError, match="^out: read-only today$"), call:
            pass


def test_touch_errors_of_several_fields_raise_the_first():
    """Several written fields whose touch fails (an object read through
    __array__ whose item assignment raises, a data interface's "touch"):
    each is still touched, and the first error is the one raised, not a
    SystemError of an exception lost between them."""
    class Refusing(WritableArrayOnly):
        def __setitem__(self, key, value):
            self.assignments += 1
            raise KeyError(self.values.shape)

    class Touchy:
        def __init__(self, array):
            self.array, self.touches = array, 0
            self.__gt_data_interface__ = {None: {**array.__array_interface__,
                                                 "touch": self.touch}}

        def touch(self):
            self.touches += 1
            raise ValueError("touched")

    sig = Signature(a=Field["f8", "IJK"], b=Field["f8", "IJK"], c=Field["f8", "IJK"],
                    writes=["a", "b", "c"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FieldWarning)
        for failing in [(True, True, False), (True, False, True), (False, True, True)]:
            objs = [(Refusing if fail else WritableArrayOnly)(np.zeros((2, 3, 4)))
                    for fail in failing]
            first = "abc"[failing.index(True)]
            with pytest.raises(KeyError, match=rf"^'{first}: \(2, 3, 4\)'$"):
                sig.call(lambda domain, origins, a, b, c: None, *objs)
            assert [o.assignments for o in objs] == [1, 1, 1]
        touchy = Touchy(np.zeros((2, 3, 4)))
        objs = [touchy, Refusing(np.zeros((2, 3, 4))), WritableArrayOnly(np.zeros((2, 3, 4)))]
        call = sig.bind(*objs)
        with pytest.raises(ValueError, match="^touched$"), call:
            pass
        assert touchy.touches == 1 and [o.assignments for o in objs[1:]] == [1, 1]


@pytest.mark.parametrize("device", ["cpu", "gpu"])
def test_a_binding_entered_again_reads_its_copies_again(device, request):
    """Each time a Binding is entered, the fields it binds as copies take
    their objects' values again (an object read through __array__, host
    memory on a stencil on the GPU): the objects may have changed since the
    call was bound or last ran, and a stale copy would be read and, written,
    assigned or copied back over the newer values."""
    if device == "gpu":
        request.getfixturevalue("emulated_gpu")
    sig = Signature(out=Field["f8", "IJK"], inp=Field["f8", "IJK"], writes=["out"],
                    device=device)
    shape = (5, 4, 3)
    pairs = [(WritableArrayOnly(np.zeros(shape)), ArrayOnly(np.ones(shape)))]
    if device == "gpu":
        pairs.append((np.zeros(shape), np.ones(shape)))
    for out, inp in pairs:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FieldWarning)
            call = sig.bind(out, inp, domain=(2, 4, 3))
        for run in (1, 2):
            getattr(inp, "values", inp)[...] = run + 1  # after binding, and between runs
            getattr(out, "values", out)[4, 0, 0] = -run  # outside the domain
            with call:
                arrays = call.arrays()
                arrays["out"][:2] = arrays["inp"][:2]
            assert getattr(out, "values", out)[4, 0, 0] == -run
            np.testing.assert_array_equal(getattr(out, "values", out)[:2], run + 1)


@pytest.mark.parametrize("device", ["cpu", "gpu"])
def test_arrays_of_a_copy_only_inside_with(device, request):
    """A field bound as a copy takes its object's values when the Binding is
    entered; before, its memory holds none, so arrays() outside `with` is a
    RuntimeError naming it (a Binding without copies gives arrays anywhere)."""
    request.getfixturevalue("emulated_gpu")
    sig = Signature(out=Field["f8", "IJK"], inp=Field["f8", "IJK"], writes=["out"],
                    device=device)
    other = "cpu" if device == "gpu" else "gpu"
    out = gtstore.zeros((4, 3, 2), device=device, managed=None if device == "gpu" else "gt4py")
    inp = gtstore.full((4, 3, 2), 7.0, device=other, managed=None if other == "gpu" else "gt4py")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FieldWarning)
        call = sig.bind(out, inp)
    with pytest.raises(RuntimeError, match=rf"^inp: bound as a copy \(no buffer on the {device}, "
                                           r"where the stencil computes\), which takes its "
                                           r"object's values when the Binding is entered"):
        call.arrays()
    with call:
        np.testing.assert_array_equal(np.asarray(call.arrays()["inp"]), 7.0)
    assert set(sig.bind(out, out).arrays()) == {"out", "inp"}  # no copy: outside too


def test_a_binding_entered_again_refuses_what_it_cannot_read_again(lap):
    """An object read through __array__ whose array changed shape or dtype
    since the call was bound, or whose read-only array took new values
    that the array bound cannot: a ValueError naming the field on entering;
    nothing runs or is assigned."""
    out, inp = WritableArrayOnly(np.zeros((5, 4, 3))), ArrayOnly(np.ones((5, 4, 3)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FieldWarning)
        call = lap.bind(out, inp, origin=(1, 1, 0))
    inp.values = np.ones((5, 4, 2))
    with pytest.raises(ValueError, match=r"^inp: np\.asarray\(obj\) is now of shape \(5, 4, 2\) "
                                         r"and dtype float64, and the Binding was made for "
                                         r"shape \(5, 4, 3\) and dtype float64: bind the call "
                                         r"again$"):
        call.__enter__()
    inp.values = np.ones((5, 4, 3), np.float32)
    with pytest.raises(ValueError, match=r"^inp: .* dtype float32, and the Binding"):
        call.__enter__()
    assert out.assignments == 0

    class ReadOnly(ArrayOnly):
        def __array__(self, dtype=None, copy=None):
            array = super().__array__(dtype, copy)
            array.flags.writeable = False
            return array

    reads = Signature(a=Field["f8", "IJK"])
    inp = ReadOnly(np.ones((5, 4, 3)))
    call = reads.bind(inp)
    with call:  # the same values: nothing to take
        pass
    inp.values[0, 0, 0] = 2.0
    with pytest.raises(ValueError, match=r"^a: np\.asarray\(obj\) has new values since the "
                                         r"call was bound, and the read-only array bound cannot "
                                         r"take them: bind the call again$"):
        call.__enter__()
    with reads.bind(inp) as again:
        assert again.arrays()["a"][0, 0, 0] == 2.0


def test_array_only_objects_bad_input(lap):
    """A written one without item assignment, the same object bound twice
    with one of them written (each field's array may be its own copy), an
    __array__ that raises, or an array of a dtype gtstore does not hold:
    refused before the run, naming the field; nothing is assigned."""
    h = np.zeros((5, 4, 3))
    with refused(TypeError, r"^out: the stencil writes this field, and a field of type "
                            r"ArrayOnly is read through __array__"):
        lap.bind(ArrayOnly(h), h)
    both = Signature(a=Field["f8", "IJK"], b=Field["f8", "IJK"], writes=["a"])
    x = WritableArrayOnly(np.zeros((5, 4, 3)))
    with refused(ValueError, r"^a and b are the same WritableArrayOnly, read through "
                             r"__array__, whose arrays may be copies that would not see one "
                             r"another's writes; pass separate fields$"):
        both.bind(x, x)
    assert x.assignments == 0
    reads = Signature(out=Field["f8", "IJK"], x=Field["f8", "IJK"], y=Field["f8", "IJK"],
                      writes=["out"])
    with warnings.catch_warnings():
        warnings.simplefilter("error", FieldWarning)  # read fields: no copy back, no warning
        assert reads.bind(h, x, x).domain == (5, 4, 3)

    class Raising:
        def __array__(self, dtype=None, copy=None):
            raise ZeroDivisionError("no values")

    with pytest.raises(ZeroDivisionError, match="^inp: no values$"):
        lap.bind(h, Raising())
    with pytest.raises(TypeError, match="^inp: dtype: "):
        lap.bind(h, ArrayOnly(np.full((5, 4, 3), "text")))
    with pytest.raises(TypeError, match=r"^inp: got object, which cannot be read as a field: it "
                                        r"has no "
                                        r"__gt_data_interface__, buffer protocol, "
                                        r"__array_interface__, __cuda_array_interface__, "
                                        r"__dlpack__ or __array__$"):
        lap.bind(h, object())
    # a data interface with no buffer is an error of its own, not a detour
    empty = ArrayOnly(h)
    empty.__gt_data_interface__ = {"tpu": {}}
    with pytest.raises(ValueError, match="^inp: __gt_data_interface__ has no buffer on the cpu "
                                         "or the gpu"):
        lap.bind(h, empty)
    assert empty.conversions == 0


def test_field_over_an_array_that_exports_no_memory(lap):
    """Field(array, dims) over an array that exports no memory (only
    __array__, a buffer, a list) is a TypeError that names the type and
    what to do, wherever it is read: not an empty data interface ("no
    buffer on the cpu or the gpu"), nor an array read by position, its
    labels ignored."""
    values = np.arange(60.0).reshape(5, 4, 3)
    s = gtstore.zeros((5, 4, 3))
    message = (r"^Field\(array, dims='KJI'\): got {}, which exports no memory to label \(no "
               r"__gt_data_interface__, __array_interface__ or __cuda_array_interface__\); "
               r"label np.asarray\(array\) instead$")
    for array in [ArrayOnly(values.transpose(2, 1, 0).copy()),
                  memoryview(values.transpose(2, 1, 0).copy()), [[[0.0]]]]:
        wrapped = Field(array, "KJI")
        match = message.format(type(array).__name__)
        for read in [lambda: lap.bind(np.zeros((5, 4, 3)), wrapped, origin=(1, 1, 0)),
                     lambda: gtstore.storage(wrapped), lambda: gtstore.as_storage(wrapped),
                     lambda: s.__setitem__(..., wrapped), lambda: np.add(s, wrapped)]:
            with pytest.raises(TypeError, match=match):
                read()
    # an array that exports its memory keeps its data interface
    assert list(Field(values, "IJK").__gt_data_interface__) == [None]


def test_array_only_objects_on_the_gpu_share_memory_checks(emulated_gpu):
    """On a stencil on the GPU, the array NumPy made of an object is copied
    in as any host memory: one that shares memory with another field,
    either of them written, is refused as other copies are."""
    both = Signature(a=Field["f8", "IJK"], b=Field["f8", "IJK"], writes=["a", "b"], device="gpu")
    h = np.arange(120.0).reshape(6, 5, 4)
    with refused(ValueError, r"^a and b share memory, and the stencil computes on a copy of a "
                             r"\(no buffer on the gpu\)"):
        both.bind(WritableArrayOnly(h, shared=True), h)
    with refused(ValueError, r"^a and b are the same WritableArrayOnly"):
        both.bind(*[WritableArrayOnly(h)] * 2)
    with pytest.warns(FieldWarning) as caught:
        assert both.bind(WritableArrayOnly(h), h.copy()).domain == (6, 5, 4)  # apart
    assert [str(w.message).split(":")[0] for w in caught] == ["a", "b"]
    assert "then assigned to the object" in str(caught[0].message)
    np.testing.assert_array_equal(h, np.arange(120.0).reshape(6, 5, 4))


class _RaisingInterface:
    """An object whose __gt_data_interface__ (or __gt_dims__) getter raises."""

    def __init__(self, error, attribute="__gt_data_interface__"):
        self.error, self.attribute = error, attribute
        self.__array_interface__ = np.zeros((3, 3, 3)).__array_interface__

    def __getattr__(self, name):
        if name == self.attribute:
            raise self.error
        raise AttributeError(name)


@pytest.mark.parametrize("error", [KeyError("broken"), RuntimeError("broken"),
                                   ZeroDivisionError("broken")])
def test_data_interface_getter_errors_propagate(lap, error):
    """The getter's own exception, unchanged, not "has no
    __gt_data_interface__" (issue 19); other protocol getters' as the
    cause of the field's error."""
    with pytest.raises(type(error)) as info:
        lap.bind(np.zeros((3, 3, 3)), _RaisingInterface(error))
    assert info.value is error
    with pytest.raises(type(error)) as info:
        lap.bind(np.zeros((3, 3, 3)), _RaisingInterface(error, "__gt_dims__"))
    assert info.value is error or info.value.__cause__ is error
    # an AttributeError is the attribute's absence: the array interface is read
    call = lap.bind(np.zeros((3, 3, 3)), _RaisingInterface(AttributeError("absent")),
                    origin=(1, 1, 0))
    assert call.domain == (1, 1, 3)


def test_call_arguments_one_parser():
    """Stencil calls, bind, call, call_c and KernelCaller parse their
    run-time field names with the extension's one argument parser: fields
    by position or name, then each call's own keywords."""
    sig = Signature(out=Field["f8", "IJK"], writes=["out"])
    a = np.zeros((3, 4, 5))
    cases = [
        (lambda: gtstore.stencils.copy(a, a, a), r"copy\(\) takes 2 fields \(3 given\)"),
        (lambda: gtstore.stencils.copy(a, a, bogus=1),
         r"copy\(\) got an unexpected keyword argument 'bogus' \(fields: \('out', 'inp'\)\)"),
        (lambda: gtstore.stencils.hdiff(a, a), r"hdiff\(\) missing field 'coeff'"),
        (lambda: gtstore.stencils.copy(a, out=a), r"copy\(\) got multiple values for field 'out'"),
        (lambda: gtstore.stencils.copy(a, None), "inp: expected a field, got None"),
        (lambda: sig.bind(a, a), r"bind\(\) takes 1 fields \(2 given\)"),
        (lambda: sig.call(lambda *args, **kwargs: 0, a, ctx=1),
         r"call\(\) got an unexpected keyword argument 'ctx'"),
        (lambda: sig.call_c(0, a, args=()), r"call_c\(\) got an unexpected keyword argument 'args'"),
    ]
    seen = []
    caller = gtstore.KernelCaller(sig, lambda domain, origins, extra, **kw: seen.append(kw),
                                  parameters=["alpha"], leading=["extra"], ignored=["skip"])
    cases += [
        (lambda: caller(a), "^missing argument 'alpha'"),
        (lambda: caller(alpha=1.0), "^missing field 'out'"),
        (lambda: caller(a, 1.0, out=a), "^got multiple values for argument 'out'"),
        (lambda: caller(a, 1.0, beta=2), "^got an unexpected keyword argument 'beta'"),
        (lambda: caller(a, 1.0, 2.0), r"^takes 2 positional arguments \(3 given\)"),
    ]
    for call, message in cases:
        with pytest.raises(TypeError, match=message):
            call()
    caller(alpha=2.0, out=a, skip=True, domain=(1, 1, 1))
    assert list(seen[0]) == ["out", "alpha"] and seen[0]["alpha"] == 2.0
    assert gtstore.stencils.copy(out=a, inp=np.ones((3, 4, 5))) is None and a.all()


def test_signature_fields_through_the_parser():
    """Signature(**fields) parses its options with the one parser and takes
    every other keyword as a field, in the call's order, however many
    (more than the parser's stack vector of 16)."""
    names = [f"f{i}" for i in range(40)]
    fields = {name: Field["f8", "IJK"] for name in names}
    sig = Signature(device="cpu", **fields, writes=["f39"], relies_on_layout=False)
    assert sig.fields == tuple(names) and sig.writes == ["f39"] and sig.device == "cpu"
    arrays = [np.zeros((3, 4, 5)) for _ in names]
    call = sig.bind(*arrays)
    assert call.domain == (3, 4, 5)
    with pytest.raises(TypeError, match="takes fields by keyword"):
        Signature(Field["f8"])
    with pytest.raises(TypeError, match="f1: expected a Field annotation"):
        Signature(f0=Field["f8", "IJK"], f1="not a field")
    with pytest.raises(ValueError, match="device: expected 'cpu' or 'gpu', got 'tpu'"):
        Signature(out=Field["f8", "IJK"], device="tpu")
