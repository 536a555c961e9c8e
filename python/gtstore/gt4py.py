"""``gtstore.gt4py.stencil``: a GT4Py cartesian stencil called through gtstore.

``fast = gtstore.gt4py.stencil(stencil_object)`` has the call signature of
the stencil object (fields and parameters by position or name, ``domain=``,
``origin=``, ``exec_info=``). Every call binds the fields with gtstore's
``Signature.bind`` (in C: any object, origins permuted by dims, the domain
from halos, every check on every call), then runs the stencil's generated
``run()``, inside the acquire/touch/release protocol. GT4Py's own
``__call__`` is bypassed: its argument cache skips checks on a hit, it
applies ``__gt_origin__`` unpermuted to fields with permuted
``__gt_dims__``, and it ignores the upper halo when it infers the domain.

GT4Py is imported only by the stencil objects the caller passes in.
"""

from __future__ import annotations

import inspect

from ._gtstore import KernelCaller, Signature
from .fields import FieldType

__all__ = ["GT4PyStencil", "stencil"]

_RESERVED = ("domain", "origin", "validate_args", "exec_info")


def _backend_device(stencil_object):
    from gt4py.cartesian import backend as gt_backend

    return gt_backend.from_name(stencil_object.backend).storage_info["device"]


def _extent(info):
    """gtstore's extent of a field from GT4Py's field_info: the entries of
    the field's own axes (``boundary`` is always I, J, K), 0 in data
    dimensions. A negative entry (an interval that leaves layers out, such
    as ``interval(0, -1)`` writing ``out``) means the stencil touches less
    than the domain on that side; gtstore's extents are >= 0, so it is 0:
    the field must cover the whole domain there, which contains all the
    stencil touches (clamping only drops a shrink of what is required)."""
    boundary = dict(zip("IJK", info.boundary))
    own = tuple((max(lo, 0), max(hi, 0)) for lo, hi in (boundary[a] for a in info.axes))
    return own + ((0, 0),) * len(info.data_dims)


class GT4PyStencil(KernelCaller):
    """A GT4Py stencil object whose calls gtstore binds (see the module doc).

    The call itself is ``gtstore.KernelCaller``'s, in C: fields, then
    parameters, by position or name, ``domain=``, ``origin=``,
    ``exec_info=`` (passed to ``run``) and ``validate_args=`` (accepted,
    ignored: gtstore always validates)."""

    def __init__(self, stencil_object):
        field_info = getattr(stencil_object, "field_info", None)
        if field_info is None or not hasattr(stencil_object, "run"):
            raise TypeError(
                f"stencil_object: expected a GT4Py cartesian stencil object "
                f"(gtscript.stencil(...)), got {stencil_object!r}"
            )
        self.stencil_object = stencil_object
        call = inspect.signature(type(stencil_object).__call__)
        positional = [p for p in list(call.parameters)[1:] if p not in _RESERVED]
        unused = {name: None for name, info in field_info.items() if info is None}
        # the signature's fields in the order of the call's arguments
        names = [n for n in positional if field_info.get(n) is not None]
        if names != positional[: len(names)] or unused:
            raise TypeError(
                "stencil_object: gtstore binds stencils whose fields come before their "
                "parameters and are all used"
            )
        fields, extents, writes = {}, {}, []
        for name in names:
            info = field_info[name]
            dims = "".join(info.axes) + "".join(str(d) for d in range(len(info.data_dims)))
            fields[name] = FieldType(info.dtype, dims)
            extents[name] = _extent(info)
            if info.access.name in ("WRITE", "READ_WRITE"):
                writes.append(name)
        signature = Signature(
            **fields, extents=extents, writes=writes, device=_backend_device(stencil_object)
        )
        super().__init__(
            signature,
            stencil_object.run,
            parameters=positional[len(names):],
            leading=("exec_info",),
            ignored=("validate_args",),
        )
        self.__doc__ = stencil_object.__doc__


def stencil(stencil_object):
    """Wraps a GT4Py cartesian stencil object: see the module docstring."""
    return GT4PyStencil(stencil_object)
