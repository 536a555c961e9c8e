"""GT4Py-compatible allocation: plain NumPy (or CuPy) arrays with the layout,
padding and alignment a backend wants.

A drop-in replacement for ``gt4py.storage``::

    import gtstore.arrays as ga
    a = ga.zeros((64, 64, 80), dtype="f8", backend="gt:cpu_ifirst", aligned_index=(3, 3, 0))

The allocation functions (``empty``, ``zeros``, ``ones``, ``full``,
``from_array``, the ``*_like`` functions and ``plan``) and the preset
registry are implemented in C over libgtstore; this module adds the buffer
utilities of the design (``as_numpy``, ``as_cupy``, ``get_dims``,
``get_origin``) and the GPU path through CuPy.
"""

from __future__ import annotations

import operator
from typing import Any, Optional, Tuple

import numpy as np

from ._gtstore import Plan, UnknownPresetError, get_preset, presets, register_preset, unregister_preset
from ._gtstore import arrays as _functions
from ._gtstore import _host_memory
from .fields import DEFAULT_DIMS, FieldType

empty = _functions.empty
zeros = _functions.zeros
ones = _functions.ones
full = _functions.full
from_array = _functions.from_array
empty_like = _functions.empty_like
zeros_like = _functions.zeros_like
ones_like = _functions.ones_like
full_like = _functions.full_like
plan = _functions.plan
normalize_dims = _functions.normalize_dims

__all__ = [
    "Plan",
    "UnknownPresetError",
    "as_cupy",
    "as_numpy",
    "empty",
    "empty_like",
    "from_array",
    "full",
    "full_like",
    "get_dims",
    "get_origin",
    "get_preset",
    "ones",
    "ones_like",
    "plan",
    "presets",
    "register_preset",
    "unregister_preset",
    "zeros",
    "zeros_like",
]

def _on_gpu(x: Any) -> bool:
    if hasattr(x, "__dlpack_device__"):
        # host memory as the library's devices describe themselves
        return not _host_memory(*x.__dlpack_device__())
    return hasattr(x, "__cuda_array_interface__") and not hasattr(x, "__array_interface__")


def as_numpy(x: Any) -> np.ndarray:
    """``x`` as a ``numpy.ndarray``, without copying where the data is on the host.

    Accepts anything NumPy understands (buffer protocol, array interface,
    ``__array__``) and DLPack producers. Raises ``TypeError`` for GPU arrays:
    copy them to the host explicitly.
    """
    if isinstance(x, np.ndarray):
        return x
    if _on_gpu(x):
        raise TypeError(
            f"as_numpy: x ({type(x).__name__}) lives on a GPU; copy it to the host "
            "explicitly (for example with cupy.asnumpy)"
        )
    if hasattr(x, "__dlpack__") and not (
        hasattr(x, "__array_interface__") or hasattr(x, "__array__")
    ):
        return np.from_dlpack(x)
    return np.asarray(x)


def _cupy(purpose: str):
    """CuPy, if it is installed and sees a CUDA device; else RuntimeError."""
    try:
        import cupy
    except ImportError as error:
        raise RuntimeError(f"{purpose} needs CuPy, which is not installed") from error
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as error:  # CuPy raises its own CUDA runtime errors
        raise RuntimeError(f"{purpose} needs a CUDA device: {error}") from error
    if count < 1:
        raise RuntimeError(f"{purpose} needs a CUDA device; none is visible")
    return cupy


def as_cupy(x: Any):
    """``x`` as a ``cupy.ndarray`` (``cupy.asarray``: no copy for device arrays)."""
    return _cupy("as_cupy").asarray(x)


def _annotation_dims(annotation: Any) -> Any:
    """The dims an annotation declares: labels, gtstore's ``Field[...]`` (its
    dims, I, J, K where it gives none, as ``Signature`` reads it), or a
    GT4Py Field annotation (``axes`` and ``data_dims``)."""
    if isinstance(annotation, FieldType):
        return annotation.dims if annotation.dims is not None else DEFAULT_DIMS
    dims = _functions._protocol_dims(annotation)
    if dims is not None:
        return dims
    axes = getattr(annotation, "axes", None)
    if axes is not None:
        data_dims = getattr(annotation, "data_dims", ()) or ()
        return [*axes, *(str(d) for d in range(len(data_dims)))]
    return annotation


def get_dims(x: Any, annotation: Any = None) -> Optional[Tuple[str, ...]]:
    """The dimension labels of ``x``: its ``__gt_dims__`` if it has them (an
    attribute, or a method that is called), else those of ``annotation``
    (labels such as ``"IJK"`` or ``("I", "J", "0")``, gtstore's
    ``Field[...]`` or a GT4Py ``Field`` annotation), else ``None``.

    Labels are checked (``I``, ``J``, ``K`` and data dimensions ``"0"``,
    ``"1"``, ... without repeats) and must match ``x.ndim`` when ``x`` has one.
    """
    dims = _functions._protocol_dims(x)
    source = "x.__gt_dims__"
    if dims is None:
        if annotation is None:
            return None
        dims, source = _annotation_dims(annotation), "annotation"
    labels = normalize_dims(dims, source)
    ndim = getattr(x, "ndim", None)
    if ndim is not None and len(labels) != ndim:
        raise ValueError(f"{source}: {labels!r} has {len(labels)} labels for {ndim} dimensions")
    return labels


def get_origin(x: Any) -> Optional[Tuple[int, ...]]:
    """The default origin ``x`` offers a stencil: its ``__gt_origin__``
    (GT4Py's name), else its ``default_origin`` (the adopted design's), as a
    stencil call reads them; ``None`` without either."""
    found = _functions._protocol_origin(x)
    if found is None:
        return None
    name, origin = found
    try:
        if any(isinstance(o, bool) for o in origin):
            raise TypeError("bool")
        return tuple(operator.index(o) for o in origin)
    except TypeError as error:
        raise TypeError(f"x.{name}: expected integers, got {origin!r}") from error


