"""Built-in stencils in C (libgtstore's gtstore/stencils.h) over fields of any
layout, bound like every gtstore stencil call (``Signature.bind``: any object,
origins by precedence and permuted by dims, every check on every call).

All take float64 fields labelled I, J, K (any memory order), and keyword-only
``domain=`` (I, J, K), ``origin=`` (a sequence for all fields, or a dict of
field names and ``"_all_"``) and ``device=`` (``"cpu"``, the default, or
``"gpu"``: one kernel on the GPU, queued on the current stream).
"""

from ._gtstore import (
    _stencil_copy,
    _stencil_hdiff,
    _stencil_laplacian,
    _stencil_signature,
    _stencil_tridiagonal,
)

__all__ = ["copy", "hdiff", "laplacian", "signature", "tridiagonal"]


def signature(name, device="cpu"):
    """The ``Signature`` of the built-in stencil `name` ("copy", "laplacian", "hdiff",
    "tridiagonal") on `device` ("cpu" or "gpu")."""
    return _stencil_signature(name, device)


copy = _stencil_copy
laplacian = _stencil_laplacian
hdiff = _stencil_hdiff
tridiagonal = _stencil_tridiagonal
