"""The default xarray accessor of GDP-3's final text: ``DataArray.__gt_data_interface__``.

Registered when gtstore is imported if xarray is already imported, else the
first time xarray is imported (a one-shot import hook), so that gtstore never
imports xarray itself. The rules of the seed:

1. if ``data_array.data`` has ``__gt_data_interface__``, that is returned with,
   in each device entry, ``"dims"`` set to ``data_array.dims`` (a ``"dims"``
   entry that disagrees is a ``ValueError``);
2. else its ``__array_interface__`` (key ``None``) and
   ``__cuda_array_interface__`` (key ``"gpu"``), each with ``"dims"``.

The dict is built on every access, not cached as xarray caches an accessor
per object: it holds the data's address, and a DataArray's data can be
replaced (``da.data = ...``), after which a cached dict would send a
stencil's writes to freed memory.
"""

from __future__ import annotations

import importlib.abc
import sys

__all__ = ["data_interface", "install"]


def data_interface(data_array):
    """``data_array.__gt_data_interface__`` by the rules of the module docstring."""
    dims = tuple(str(d) for d in data_array.dims)
    data = data_array.data
    inner = getattr(data, "__gt_data_interface__", None)
    if inner is not None:
        result = {}
        for key, info in inner.items():
            own = info.get("dims")
            if own is not None and tuple(str(d) for d in own) != dims:
                raise ValueError(
                    f"__gt_data_interface__: the data's dims {tuple(own)} disagree with the "
                    f"DataArray's {dims}"
                )
            result[key] = {**info, "dims": dims}
        return result
    result = {}
    for key, name in ((None, "__array_interface__"), ("gpu", "__cuda_array_interface__")):
        info = getattr(data, name, None)
        if info is not None:
            result[key] = {**info, "dims": dims}
    return result


class _Accessor:
    """``DataArray.__gt_data_interface__``: an accessor that xarray does not
    cache (see the module docstring)."""

    gtstore = True  # ours, whichever import of this module made it (a reload)

    def __get__(self, data_array, owner=None):
        return self if data_array is None else data_interface(data_array)


def _register(xarray):
    cls = xarray.DataArray
    if getattr(cls.__dict__.get("__gt_data_interface__"), "gtstore", False):
        return
    if hasattr(cls, "__gt_data_interface__"):  # as xarray's own registration warns
        import warnings

        from xarray.core.extensions import AccessorRegistrationWarning

        warnings.warn(
            "gtstore's accessor __gt_data_interface__ for DataArray is overriding a "
            "preexisting attribute with the same name.",
            AccessorRegistrationWarning,
            stacklevel=2,
        )
    cls.__gt_data_interface__ = _Accessor()


class _Hook(importlib.abc.MetaPathFinder):
    """Registers the accessor once xarray has been imported, then removes itself."""

    def find_spec(self, name, path=None, target=None):
        if name != "xarray":
            return None
        sys.meta_path.remove(self)
        from importlib.util import find_spec

        spec = find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        execute = spec.loader.exec_module

        def exec_module(module):
            execute(module)
            _register(module)

        spec.loader.exec_module = exec_module
        return spec


def install():
    """Registers the accessor now (xarray imported) or on xarray's import."""
    if "xarray" in sys.modules:
        _register(sys.modules["xarray"])
    elif not any(isinstance(f, _Hook) for f in sys.meta_path):
        sys.meta_path.insert(0, _Hook())
