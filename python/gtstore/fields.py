"""``Field``: the annotation of a stencil's field and the thin wrapper that
labels the dimensions of any array.

- ``Field["f8", "IJK", LayoutMap[(2, 1, 0)], Alignment[64]]`` is an
  annotation (GDP-3's first draft): dtype required, dims optional ("IJK" by default),
  then optional ``LayoutMap``, ``Alignment`` and ``DefaultParameters``
  ("C", "F" or a gtstore preset name). The dtype may also come as
  ``DType[...]`` among the bracketed parameters, in any place
  (``Field[DType["f4"], "IJK"]`` and ``Field["IJK", DType["f4"]]`` are
  ``Field["f4", "IJK"]``), and may be a placeholder name such as "T"
  that ``Signature(..., dtypes={"T": "f4"})`` binds.
  ``Signature(out=Field[...], ...)`` reads it.
- ``Field(array, dims="KJI")`` wraps any array that exports its memory (the "No-Storage"
  work plan; one that does not is a TypeError where it is read) and exports GDP-3's
  ``__gt_data_interface__`` with those labels, so that a stencil reads it in
  the right order (and ``gtstore.as_storage(Field(a, "KJI"))`` is a storage
  labelled K, J, I over ``a``'s memory; assignments and computations on
  storages line it up by those labels). ``Field.zeros(shape, dims=..., dtype=...)`` and friends
  allocate a NumPy array and wrap it (dims by default those storage
  creation gives as many dimensions: "IJ" for 2).

All checking happens in C: a Field's labels when it is made, a signature
when it is made, the rest on every bind.
"""

from __future__ import annotations

from ._gtstore import _field_dims

__all__ = ["Alignment", "DType", "DefaultParameters", "Field", "FieldType", "LayoutMap"]

# The dims of an annotation that names none (Signature reads them so too).
DEFAULT_DIMS = "IJK"


class _Parameter:
    """``Name[value]``: one bracketed parameter of a Field annotation."""

    def __init__(self, value):
        self.value = value

    def __class_getitem__(cls, value):
        return cls(value)

    def __repr__(self):
        return f"{type(self).__name__}[{self.value!r}]"


class LayoutMap(_Parameter):
    """``LayoutMap[(0, 2, 1)]``: the expected layout, ranks per dimension of the
    annotation's dims (0: largest stride), or an axis string such as "KJI"."""


class Alignment(_Parameter):
    """``Alignment[64]``: the expected byte alignment of each field's origin point:
    positive, and a multiple or a divisor of the itemsize, as a storage's
    ``alignment_size`` (``Signature`` checks it)."""


class DType(_Parameter):
    """``DType[np.float32]``: the dtype as a bracketed parameter, in any
    place (``Field[DType["f4"], "IJK"]`` and ``Field["IJK", DType["f4"]]``
    are ``Field["f4", "IJK"]``: beside it, the positional parameter is the
    dims); a dtype, or a placeholder name that ``Signature(..., dtypes=...)``
    binds."""


class DefaultParameters(_Parameter):
    """``DefaultParameters["F"]``: layout (and alignment) of "C" or "F" order or
    of a gtstore preset such as "gt:cpu_ifirst"; explicit parameters win."""


class FieldType:
    """The annotation ``Field[dtype, dims, ...]`` (what ``Signature`` reads);
    ``dtype`` as given, a placeholder name included. Annotations compare
    equal by value (a layout or dims as a list, a tuple or a NumPy array
    alike), and equal ones hash alike."""

    __slots__ = ("dtype", "dims", "layout", "alignment")

    def __init__(self, dtype, dims=None, layout=None, alignment=None):
        self.dtype = dtype
        self.dims = dims
        self.layout = layout
        self.alignment = alignment

    def _key(self):
        # a sequence as a tuple: LayoutMap[[2, 1, 0]] is LayoutMap[(2, 1, 0)]
        # (and a NumPy array compares as one value, not elementwise)
        return (self.dtype, _as_tuple(self.dims), _as_tuple(self.layout), self.alignment)

    def __eq__(self, other):
        if not isinstance(other, FieldType):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self):
        # without the dtype: equal dtypes may hash apart ("f8" == np.dtype("f8"))
        return hash(self._key()[1:])

    def __repr__(self):
        parts = [repr(self.dtype)]
        if self.dims is not None:
            parts.append(repr(self.dims))
        if self.layout is not None:
            parts.append(f"LayoutMap[{self.layout!r}]")
        if self.alignment is not None:
            parts.append(f"Alignment[{self.alignment!r}]")
        return f"Field[{', '.join(parts)}]"


def _as_tuple(value):
    """A dims or layout sequence as a tuple; a str, None or anything else
    (which Signature refuses, naming it) as it is."""
    if value is None or isinstance(value, str):
        return value
    try:
        return tuple(value)
    except TypeError:
        return value


def _preset_parameters(name, dims, dtype):
    """Layout (ranks over `dims`) and alignment of "C", "F" or a preset, for
    fields of `dtype` (a preset's alignment counts elements)."""
    ndim = len(dims)
    if name == "C":
        return tuple(range(ndim)), None
    if name == "F":
        return tuple(reversed(range(ndim))), None
    from . import empty

    try:
        probe = empty((2,) * ndim, dtype=dtype, dims=dims, defaults=name)
    except TypeError as error:
        if not isinstance(dtype, str):
            raise
        raise TypeError(
            f"Field[...]: DefaultParameters[{name!r}]: a preset's alignment counts elements of "
            f"the dtype, and {dtype!r} is none (a placeholder needs a dtype here)"
        ) from error
    return probe.layout, probe.alignment_size


def _dims_beside_dtype(dtype, params):
    """The parameters but DType[...]: a positional one first is the dims,
    else the dtype was given twice (a TypeError saying so)."""
    if not params or isinstance(params[0], _Parameter) or params[0] is None:
        return params
    try:
        _field_dims(params[0])
    except (TypeError, ValueError) as error:
        raise TypeError(
            f"Field[...]: the dtype given twice, as {params[0]!r} and as {dtype!r}; give it "
            f"once (beside DType[...] the positional parameter is the dims, and {error})"
        ) from None
    return params


def _dtype_and_rest(params):
    """The dtype and the other parameters: ``DType[...]`` names it wherever
    it stands (a bracketed parameter; the positional one left is the
    dims), else the first positional parameter is it."""
    dtypes = [p for p in params if isinstance(p, DType)]
    if len(dtypes) > 1:
        raise TypeError("Field[...]: DType given twice")
    if dtypes:
        return dtypes[0].value, _dims_beside_dtype(dtypes[0], tuple(
            p for p in params if p is not dtypes[0]))
    if not params or isinstance(params[0], _Parameter):
        raise TypeError("Field[...]: the dtype comes first, e.g. Field['f8', 'IJK'] or "
                        "Field[DType['f8'], 'IJK']")
    return params[0], params[1:]


def _annotation(params):
    if not isinstance(params, tuple):
        params = (params,)
    dtype, rest = _dtype_and_rest(params)
    dims = None
    if rest and not isinstance(rest[0], _Parameter):
        dims, rest = rest[0], rest[1:]
    given = {}
    for p in rest:
        if not isinstance(p, _Parameter):
            raise TypeError(
                f"Field[...]: expected LayoutMap[...], Alignment[...], DefaultParameters[...] "
                f"or DType[...] after dtype and dims, got {p!r}"
            )
        if type(p) in given:
            raise TypeError(f"Field[...]: {type(p).__name__} given twice")
        given[type(p)] = p.value
    layout = given.get(LayoutMap)
    alignment = given.get(Alignment)
    if DefaultParameters in given:
        preset_layout, preset_alignment = _preset_parameters(
            given[DefaultParameters], tuple(dims if dims is not None else DEFAULT_DIMS), dtype
        )
        layout = preset_layout if layout is None else layout
        alignment = preset_alignment if alignment is None else alignment
    return FieldType(dtype, dims, layout, alignment)


class Field:
    """An array with dimension labels (the "No-Storage" work plan), or, subscripted, the
    annotation of a stencil's field (GDP-3's first draft); see the module docstring."""

    __slots__ = ("array", "dims")

    def __class_getitem__(cls, params):
        """``Field[dtype, dims, ...]`` or ``Field[DType[dtype], dims, ...]``: the
        annotation of a stencil's field; the dtype may be a placeholder name
        that ``Signature(..., dtypes=...)`` binds."""
        return _annotation(params)

    def __init__(self, array, dims):
        """``dims``: a string of one-character labels ("KJI") or a sequence of
        labels, checked here as every ``dims=`` is (ValueError, TypeError)."""
        self.array = array
        self.dims = _field_dims(dims)

    @property
    def __gt_dims__(self):
        return self.dims

    @property
    def __gt_data_interface__(self):
        """GDP-3's data interface of the wrapped array with these labels: its
        own data interface where it has one (callbacks kept), else its array
        interfaces (``None``: host, ``"gpu"``: CUDA); a TypeError for an
        array with neither (only ``__array__``, a buffer, a list)."""
        inner = getattr(self.array, "__gt_data_interface__", None)
        if inner is not None:
            return {key: {**info, "dims": self.dims} for key, info in inner.items()}
        interface = {}
        host = getattr(self.array, "__array_interface__", None)
        if host is not None:
            interface[None] = {**host, "dims": self.dims}
        gpu = getattr(self.array, "__cuda_array_interface__", None)
        if gpu is not None:
            interface["gpu"] = {**gpu, "dims": self.dims}
        if not interface:
            # an empty interface would read as "no buffer on the cpu or the
            # gpu"; and read through __array__ instead, the Field would be an
            # array by position in assignments and computations, its labels
            # ignored: refused, naming what to do
            raise TypeError(
                f"Field(array, dims={''.join(self.dims)!r}): got {type(self.array).__name__}, "
                "which exports no memory to label (no __gt_data_interface__, "
                "__array_interface__ or __cuda_array_interface__); label np.asarray(array) "
                "instead"
            )
        return interface

    def __repr__(self):
        return f"Field({self.array!r}, dims={''.join(self.dims)!r})"

    @classmethod
    def _numpy(cls, function, shape, dims, dtype, **kwargs):
        import numpy as np

        array = getattr(np, function)(shape, dtype=dtype, **kwargs)
        return cls(array, _field_dims(dims, array.ndim))

    # dims=None: the labels storage creation gives as many dimensions ("IJ"
    # for 2, "IJK0" for 4); given, one per dimension.
    @classmethod
    def empty(cls, shape, dims=None, dtype="f8"):
        """A wrapped ``numpy.empty``; ``dims`` by default I, J, K, 0, ... for its rank."""
        return cls._numpy("empty", shape, dims, dtype)

    @classmethod
    def zeros(cls, shape, dims=None, dtype="f8"):
        """A wrapped ``numpy.zeros``; ``dims`` by default I, J, K, 0, ... for its rank."""
        return cls._numpy("zeros", shape, dims, dtype)

    @classmethod
    def ones(cls, shape, dims=None, dtype="f8"):
        """A wrapped ``numpy.ones``; ``dims`` by default I, J, K, 0, ... for its rank."""
        return cls._numpy("ones", shape, dims, dtype)

    @classmethod
    def full(cls, shape, fill_value, dims=None, dtype="f8"):
        """A wrapped ``numpy.full``; ``dims`` by default I, J, K, 0, ... for its rank."""
        return cls._numpy("full", shape, dims, dtype, fill_value=fill_value)
