"""NumPy's loop bugs, found by probes and routed around (docs/storage.md).

gtstore computes with NumPy's ufuncs on views of the storages' memory, and
padded storages give those views strides that contiguous arrays never have.
Some NumPy releases get such loops wrong: NumPy 2.4.6 on x86-64 leaves
elements of a strided bool output of ``isnan``, ``isinf``, ``isfinite`` and
``signbit`` unwritten, and its ``negative`` reads an input with a stride of
64 bytes (float64, int64; 16 bytes for 32-bit types) as if it were
contiguous. This module is the one place that knows about this:

- ``broken(ufunc)`` probes a NumPy ufunc once, the first time gtstore
  computes with it (the extension caches the answer): every loop of the
  ufunc over numeric dtypes, on strided inputs and outputs of several steps
  (those of padded storages among them), against the same loop on
  contiguous copies. A loop that writes other values is a bug;
- ``call(ufunc, args, kwargs)`` computes a call of a ufunc the probe found
  broken with every array operand dense (no gaps between elements) in one
  axis order: outputs that are not are computed into dense temporaries and
  copied back (with ``where=`` where given), inputs that are not are copied
  first. NumPy's loops over such operands are the ones its own tests cover.

Where NumPy fixes a loop, its probe passes and the ufunc computes on the
storages' memory again. Only ufuncs of NumPy are probed: CuPy's (the CUDA
engine) compute on their own.
"""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["broken", "call", "dense"]

#: The steps (in elements) of the probe's strided operands: contiguous,
#: the paddings of storages (2, 4, 8 and 16 elements: 64 bytes is 8 float64
#: or 16 float32), an odd one, and reversed.
STEPS = (1, 2, 3, 4, 8, 16, -1, -8)

#: The (input step, output step) pairs probed: each step with a contiguous
#: partner, both operands with the same step, and two of different steps
#: (a padded input into a less padded output and back).
PAIRS = tuple(dict.fromkeys([(s, s) for s in STEPS] + [(1, s) for s in STEPS]
                            + [(s, 1) for s in STEPS] + [(8, 2), (2, 8), (4, 2)]))

#: The loops probed: those whose dtypes are all numbers or bools that
#: storages hold (no long double).
NUMERIC = frozenset("?bBhHiIlLqQefdFD")

#: Elements of each probe operand: more than one SIMD register's worth and
#: a remainder, so that both the vector and the scalar part of a loop run.
LENGTH = 37


def _values(code: str, n: int, seed: int) -> np.ndarray:
    """n values of dtype `code` with what the bool-valued ufuncs tell apart
    (NaN, infinities, -0.0) among distinct finite ones."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(code)
    if dtype.kind == "b":
        return rng.integers(0, 2, n).astype(bool)
    if dtype.kind == "u":
        return rng.integers(0, 60, n).astype(dtype)
    if dtype.kind == "i":
        return rng.integers(-30, 30, n).astype(dtype)
    v = rng.normal(size=n) * 10
    v[::5], v[1::7], v[2::11], v[3::13] = np.nan, np.inf, -np.inf, -0.0
    if dtype.kind == "c":
        v = v + 1j * rng.normal(size=n)
    return v.astype(dtype)


def _unlike(expected: np.ndarray) -> np.ndarray:
    """Values that differ from `expected` everywhere, beyond the probe's
    tolerance: an element the loop leaves unwritten shows."""
    if expected.dtype.kind == "b":
        return ~expected
    if expected.dtype.kind in "iu":
        return expected ^ expected.dtype.type(1)
    far = np.abs(expected - 7) < 1  # NaN compares False: 7 differs from it
    return np.where(far, -1000, 7).astype(expected.dtype)


def _agrees(got: np.ndarray, expected: np.ndarray) -> bool:
    """Exact for bools and integers; for floats within a relative 1e-3 (a
    strided loop may round differently from a SIMD one; a bug writes
    another element's value or none)."""
    if expected.dtype.kind in "biu":
        return bool(np.array_equal(got, expected))
    if np.array_equal(got, expected, equal_nan=True):
        return True
    return bool(np.allclose(got, expected, rtol=1e-3, atol=1e-3, equal_nan=True))


def _strided(values: np.ndarray, step: int) -> np.ndarray:
    """`values` as a view with `step`: spread out in a larger array."""
    spread = np.empty(len(values) * abs(step), values.dtype)
    view = spread[:: step]
    view[...] = values
    return view


def _loop_is_broken(ufunc: np.ufunc, types: str, seed: int) -> bool:
    ins, outs = types.split("->")
    inputs = [_values(code, LENGTH, seed + k) for k, code in enumerate(ins)]
    try:
        expected = ufunc(*inputs, signature=types)
    except (TypeError, ValueError, ArithmeticError):
        return False  # a loop NumPy refuses for these values: not one gtstore meets
    expected = expected if isinstance(expected, tuple) else (expected,)
    unlike = [_unlike(e) for e in expected]
    for step_in, step_out in PAIRS:
        strided = [_strided(x, step_in) for x in inputs]
        out = tuple(_strided(u, step_out) for u in unlike)
        try:
            ufunc(*strided, out=out, signature=types)
        except Exception:  # noqa: BLE001 - refused strided but not contiguous: route it
            return True
        if not all(_agrees(o, e) for o, e in zip(out, expected)):
            return True
    return False


def broken(ufunc) -> bool:
    """Whether a loop of NumPy's `ufunc` writes wrong values on strided
    operands that it writes right on contiguous ones. False for anything
    else (CuPy's ufuncs, NumPy functions that are not ufuncs, gufuncs)."""
    if not isinstance(ufunc, np.ufunc) or ufunc.signature is not None:
        return False
    loops = {}  # one per distinct dtypes ('l' and 'q' are one on most platforms)
    for types in ufunc.types:
        if NUMERIC.issuperset(types.replace("->", "")):
            key = tuple(np.dtype(c) for c in types.replace("->", ""))
            loops.setdefault(key, types)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return any(_loop_is_broken(ufunc, types, seed)
                   for seed, types in enumerate(loops.values()))


def _order(a: np.ndarray) -> tuple:
    """The axes of extent > 1 of `a` from the smallest stride up."""
    return tuple(sorted((ax for ax in range(a.ndim) if a.shape[ax] > 1),
                        key=lambda ax: abs(a.strides[ax])))


def dense(a: np.ndarray, order: tuple | None = None) -> bool:
    """Whether `a`'s elements lie without gaps and with positive steps (in
    the axis order `order`, where given): the layout NumPy's loops handle."""
    if a.size == 0:
        return True
    axes = _order(a)
    if order is not None and axes != order:
        return False
    expected = a.itemsize
    for ax in axes:
        if a.strides[ax] != expected:
            return False
        expected *= a.shape[ax]
    return True


def call(ufunc, args: tuple, kwargs: dict):
    """ufunc(*args, **kwargs) with every array operand dense in one axis
    order (module docstring): the outputs of kwargs["out"] (ndarrays; the
    extension always gives them) receive the result."""
    outs = kwargs["out"]
    template = outs[0] if dense(outs[0]) else np.empty_like(outs[0], order="K", subok=False)
    order = _order(template)
    temporaries = tuple(o if dense(o, order) else np.empty_like(template, o.dtype, subok=False)
                        for o in outs)
    inputs = []
    for x in args:
        if isinstance(x, np.ndarray) and x.ndim and not (x.shape == template.shape
                                                          and dense(x, order)):
            copy = np.empty_like(template, x.dtype, subok=False)
            np.copyto(copy, x)  # (broadcast where x has extents 1)
            x = copy
        inputs.append(x)
    where = kwargs.get("where", True)
    ufunc(*inputs, **{**kwargs, "out": temporaries})
    for target, temporary in zip(outs, temporaries):
        if temporary is not target:
            np.copyto(target, temporary, where=where)
    return outs[0] if len(outs) == 1 else outs
