"""Every public callable of gtstore has a working ``inspect.signature`` (so
``help()`` shows its parameters) and a docstring.

A C function's signature comes from the first line of its docstring
("name(params)\\n--\\n\\n"), which CPython parses as Python source: a
default such as ``dtype=float64`` makes it invalid, and ``help()`` then
shows ``name(...)``. The walk covers each public module's names and, for
each public class, every method, property and dunder the class defines.
"""

import inspect
import types

import pytest

import gtstore
import gtstore.arrays
import gtstore.distributed
import gtstore.fields
import gtstore.gt4py
import gtstore.stencils

MODULES = [gtstore, gtstore.arrays, gtstore.distributed, gtstore.fields, gtstore.gt4py,
           gtstore.stencils]


def public_names(module):
    names = getattr(module, "__all__", None)
    return names if names is not None else [n for n in dir(module) if not n.startswith("_")]


def own_class(obj):
    return isinstance(obj, type) and (obj.__module__ or "").startswith("gtstore")


def public_callables():
    """(qualified name, object) of every public function, class and method."""
    found, seen = [], set()
    for module in MODULES:
        for name in public_names(module):
            obj = getattr(module, name)
            if id(obj) in seen or isinstance(obj, types.ModuleType):
                continue
            seen.add(id(obj))
            if own_class(obj):
                found.append((f"{module.__name__}.{name}", obj))
                for attr, value in vars(obj).items():
                    if attr.startswith("_") and not attr.startswith("__"):
                        continue
                    if issubclass(obj, tuple) and attr in ("__reduce__", "__replace__"):
                        continue  # a struct sequence's, CPython's own
                    if isinstance(value, (classmethod, staticmethod)) or (
                        callable(value) and not isinstance(value, type)
                    ):
                        found.append((f"{module.__name__}.{name}.{attr}", getattr(obj, attr)))
            elif callable(obj) and (getattr(obj, "__module__", "") or "").startswith("gtstore"):
                found.append((f"{module.__name__}.{name}", obj))
    return found


CALLABLES = public_callables()


def test_the_walk_finds_the_api():
    names = {name for name, _ in CALLABLES}
    for expected in ("gtstore.zeros", "gtstore.Storage.sum", "gtstore.Signature.bind",
                     "gtstore.stencils.copy", "gtstore.arrays.zeros",
                     "gtstore.distributed.Partition.coords", "gtstore.Storage.__array__"):
        assert expected in names
    assert len(CALLABLES) > 150


@pytest.mark.parametrize("name, obj", CALLABLES, ids=[name for name, _ in CALLABLES])
def test_signature(name, obj):
    if isinstance(obj, type) and issubclass(obj, BaseException):
        # Exception classes take BaseException's (*args): CPython gives its own
        # none either (inspect.signature(ValueError) raises).
        pytest.skip("an exception class: BaseException's constructor")
    try:
        signature = inspect.signature(obj)
    except ValueError as error:
        pytest.fail(f"{name}: no signature ({error}); its text signature: "
                    f"{getattr(obj, '__text_signature__', None)!r}")
    assert all(p.default is not Ellipsis for p in signature.parameters.values())


@pytest.mark.parametrize("name, obj", CALLABLES, ids=[name for name, _ in CALLABLES])
def test_docstring(name, obj):
    doc = inspect.getdoc(obj)
    assert doc and doc.strip(), f"{name} has no docstring"


def test_creation_signature_defaults():
    # The defaults shown are values the functions accept and mean.
    signature = inspect.signature(gtstore.zeros)
    assert signature.parameters["dtype"].default == "float64"
    assert gtstore.zeros((2,), dtype=signature.parameters["dtype"].default).dtype == gtstore.zeros((2,)).dtype
    assert inspect.signature(gtstore.stencils.copy).parameters["domain"].kind is inspect.Parameter.KEYWORD_ONLY
    assert gtstore.stencils.copy.__name__ == "copy"
