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

from ._gtstore import Signature
from .fields import FieldType

__all__ = ["GT4PyStencil", "stencil"]

_RESERVED = ("domain", "origin", "validate_args", "exec_info")


def _backend_device(stencil_object):
    from gt4py.cartesian import backend as gt_backend

    return gt_backend.from_name(stencil_object.backend).storage_info["device"]


class GT4PyStencil:
    """A GT4Py stencil object whose calls gtstore binds (see the module doc)."""

    def __init__(self, stencil_object):
        field_info = getattr(stencil_object, "field_info", None)
        if field_info is None or not hasattr(stencil_object, "run"):
            raise TypeError(
                f"stencil_object: expected a GT4Py cartesian stencil object "
                f"(gtscript.stencil(...)), got {stencil_object!r}"
            )
        self.stencil_object = stencil_object
        call = inspect.signature(type(stencil_object).__call__)
        self._positional = [p for p in list(call.parameters)[1:] if p not in _RESERVED]
        self._unused = {name: None for name, info in field_info.items() if info is None}
        # the signature's fields in the order of the call's arguments
        names = [n for n in self._positional if field_info.get(n) is not None]
        fields, extents, writes = {}, {}, []
        for name in names:
            info = field_info[name]
            dims = "".join(info.axes) + "".join(str(d) for d in range(len(info.data_dims)))
            fields[name] = FieldType(info.dtype, dims)
            extents[name] = tuple(info.boundary) + ((0, 0),) * len(info.data_dims)
            if info.access.name in ("WRITE", "READ_WRITE"):
                writes.append(name)
        self.signature = Signature(
            **fields, extents=extents, writes=writes, device=_backend_device(stencil_object)
        )
        # the fast path: every argument by position, the fields first
        nfields = len(names)
        self._fields_first = names == self._positional[:nfields] and not self._unused
        self._nfields = nfields
        self._parameter_names = self._positional[nfields:]
        self._call = self.signature.call
        self._run = stencil_object.run
        self.__doc__ = stencil_object.__doc__

    def bind(self, *args, domain=None, origin=None, **kwargs):
        """Binds a call's fields (a ``gtstore.Binding``) and returns it with
        the parameters: ``(binding, parameters)``."""
        arguments = dict(zip(self._positional, args))
        if len(args) > len(self._positional):
            raise TypeError(
                f"takes {len(self._positional)} positional arguments ({len(args)} given)"
            )
        for key in kwargs:
            if key in arguments:
                raise TypeError(f"got multiple values for argument '{key}'")
        arguments.update(kwargs)
        fields = {name: arguments.pop(name, None) for name in self.signature.fields}
        for name in self._unused:
            arguments.pop(name, None)
        missing = [name for name, value in fields.items() if value is None]
        if missing:
            raise TypeError(f"missing field '{missing[0]}'")
        binding = self.signature.bind(domain=domain, origin=origin, **fields)
        return binding, arguments

    def __call__(self, *args, domain=None, origin=None, validate_args=True, exec_info=None,
                 **kwargs):
        """Binds with gtstore (``validate_args`` is accepted for GT4Py's
        signature: gtstore always validates), then runs the stencil."""
        if self._fields_first and not kwargs and len(args) == len(self._positional):
            n = self._nfields
            return self._call(self._run, *args[:n], domain=domain, origin=origin,
                              args=(exec_info,), kwargs=dict(zip(self._parameter_names, args[n:])))
        binding, parameters = self.bind(*args, domain=domain, origin=origin, **kwargs)
        with binding:
            self._run(binding.domain, binding.origins(), exec_info, **binding.arrays(),
                      **self._unused, **parameters)


def stencil(stencil_object):
    """Wraps a GT4Py cartesian stencil object: see the module docstring."""
    return GT4PyStencil(stencil_object)
