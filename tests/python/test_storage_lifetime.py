"""Lifetime of gtstore.Storage memory: libgtstore buffers die with the last
storage, view, ndarray, memoryview or DLPack capsule over them; wrapped
Python memory is kept alive (and its export open) exactly as long; nothing
leaks, also on the error paths."""

import copy
import gc
import pickle
import sys
import tracemalloc
import weakref

import numpy as np
import pytest

import gtstore
from conftest import live


def values(shape, dtype="f8"):
    return np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)


def host(s):
    return s.to_numpy()


def make_storage():
    """A (4, 5, 6) storage with a halo, padding and values 0, 1, ..."""
    s = gtstore.zeros((4, 5, 6), defaults="gtmc", halo=(1, (0, 2), 1), dims="IJK")
    host(s)[...] = values((4, 5, 6))
    return s


# ---- memory_stats counts buffers ----------------------------------------------------


def test_each_allocation_is_one_live_buffer(baseline):
    storages = [gtstore.empty((10, 10), defaults="gt:cpu_ifirst") for _ in range(7)]
    buffers, nbytes = live()
    assert buffers == baseline[0] + 7
    assert nbytes >= baseline[1] + 7 * 800
    views = [s[1:] for s in storages] + [s.domain_view for s in storages]
    assert live()[0] == baseline[0] + 7  # views are no new buffers
    del storages
    assert live()[0] == baseline[0] + 7  # the views keep them
    del views
    assert live() == baseline


# ---- what outlives the storage -----------------------------------------------------------

EXPECTED = values((4, 5, 6))

#: (make a dependent from a storage, the values it must show)
DEPENDENTS = {
    "slice": (lambda s: s[1:, ::2], EXPECTED[1:, ::2]),
    "index": (lambda s: s[2], EXPECTED[2]),
    "domain_view": (lambda s: s.domain_view, EXPECTED[1:3, 0:3, 1:5]),
    "transpose": (lambda s: s.transpose(), EXPECTED.transpose()),
    "np.transpose": (lambda s: np.transpose(s, (1, 0, 2)), EXPECTED.transpose(1, 0, 2)),
    "view-of-view": (lambda s: s.domain_view[1:][::-1].transpose()[0], None),
    "np.asarray": (lambda s: np.asarray(s), EXPECTED),
    "to_numpy": (lambda s: s.to_numpy()[::-1], EXPECTED[::-1]),
    "to_ndarray": (lambda s: s.to_ndarray(), EXPECTED),
    "data": (lambda s: s.data, EXPECTED),
    "memoryview": (lambda s: memoryview(s), EXPECTED),
    "np.from_dlpack": (lambda s: np.from_dlpack(s), EXPECTED),
    "gtstore.from_dlpack": (lambda s: gtstore.from_dlpack(s), EXPECTED),
    "as_storage": (lambda s: gtstore.as_storage(s), EXPECTED),
    "storage-copy=False": (lambda s: gtstore.storage(s, copy=False), EXPECTED),
}
DEPENDENTS["view-of-view"] = (
    DEPENDENTS["view-of-view"][0],
    EXPECTED[1:3, 0:3, 1:5][1:][::-1].transpose()[0],
)


def as_ndarray(obj):
    return np.asarray(obj)


@pytest.mark.parametrize("name", DEPENDENTS.keys())
def test_dependents_outlive_the_storage(name, baseline):
    make, expected = DEPENDENTS[name]
    s = make_storage()
    dependent = make(s)
    assert np.shares_memory(as_ndarray(dependent), host(s))
    del s
    # the dependent keeps the buffer (a DLPack import wraps it in a second one)
    assert live()[0] >= baseline[0] + 1
    np.testing.assert_array_equal(as_ndarray(dependent), expected)
    array = as_ndarray(dependent)
    array[...] = -1  # still writable memory of our own
    assert (as_ndarray(dependent) == -1).all()
    del array
    del dependent
    assert live() == baseline


@pytest.mark.parametrize("versioned", [False, True])
def test_unconsumed_capsule_keeps_the_buffer(versioned, baseline):
    s = make_storage()
    capsule = s.__dlpack__(max_version=(1, 0)) if versioned else s.__dlpack__()
    del s
    assert live()[0] == baseline[0] + 1
    del capsule
    assert live() == baseline


def test_unconsumed_capsules_in_a_loop(baseline):
    s = make_storage()
    for _ in range(100):
        s.__dlpack__()
        s.__dlpack__(max_version=(1, 0))
    del s
    assert live() == baseline


def test_consumed_capsule_keeps_the_buffer(baseline):
    s = make_storage()
    array = np.from_dlpack(s)
    view = array[1:, 2]
    del s, array
    assert live()[0] == baseline[0] + 1
    np.testing.assert_array_equal(view, EXPECTED[1:, 2])
    del view
    assert live() == baseline


@pytest.mark.parametrize(
    "make_copy",
    [
        lambda s: s.copy(),
        copy.copy,
        copy.deepcopy,
        lambda s: pickle.loads(pickle.dumps(s)),
        lambda s: gtstore.storage(s),
        lambda s: gtstore.empty_like(s),
        lambda s: gtstore.from_dlpack(s, copy=True),
    ],
    ids=["copy", "copy.copy", "deepcopy", "pickle", "storage", "empty_like", "from_dlpack-copy"],
)
def test_copies_are_independent_buffers(make_copy, baseline):
    s = make_storage()
    c = make_copy(s)
    assert live()[0] == baseline[0] + 2
    assert not np.shares_memory(host(c), host(s))
    del s
    assert live()[0] == baseline[0] + 1
    host(c)[...] = 1
    del c
    assert live() == baseline


def test_views_of_a_wrapped_storage_chain(baseline):
    s = make_storage()
    chain = [s]
    for _ in range(20):
        chain.append(gtstore.as_storage(chain[-1][...]))
    last = chain[-1]
    del chain, s
    assert live()[0] == baseline[0] + 1
    np.testing.assert_array_equal(host(last), EXPECTED)
    del last
    assert live() == baseline


# ---- wrapped Python memory -------------------------------------------------------------


WRAPPERS = {
    "as_storage": lambda a: gtstore.as_storage(a),
    "as_storage-kw": lambda a: gtstore.as_storage(a, dims="KJ", halo=(1, 0)),
    "storage-copy=False": lambda a: gtstore.storage(a, copy=False),
    "from_dlpack": lambda a: gtstore.from_dlpack(a),
    "memoryview": lambda a: gtstore.as_storage(memoryview(a)),
}


@pytest.mark.parametrize("wrap", WRAPPERS.values(), ids=WRAPPERS.keys())
def test_wrap_keeps_the_source_alive(wrap, baseline):
    source = values((4, 5))
    ref = weakref.ref(source)
    s = wrap(source)
    views = [s[1:], s.transpose(), np.asarray(s), s.data]
    del source
    gc.collect()
    assert ref() is not None
    del s
    gc.collect()
    assert ref() is not None
    np.testing.assert_array_equal(host(views[1]), values((4, 5)).T)
    np.testing.assert_array_equal(views[2], values((4, 5)))
    np.testing.assert_array_equal(np.asarray(views[3]), values((4, 5)))
    views.pop()
    views.pop()
    gc.collect()
    assert ref() is not None  # the storage views still hold it
    np.testing.assert_array_equal(host(views[0]), values((4, 5))[1:])
    del views
    assert live() == baseline
    assert ref() is None


@pytest.mark.parametrize("wrap", WRAPPERS.values(), ids=WRAPPERS.keys())
def test_wrap_refcount_returns(wrap, baseline):
    source = values((4, 5))
    start = sys.getrefcount(source)
    for _ in range(50):
        s = wrap(source)
        views = [s[1:], s.domain_view, np.asarray(s), gtstore.as_storage(s)]
        assert sys.getrefcount(source) > start
        del s, views
    gc.collect()
    assert sys.getrefcount(source) == start
    assert live() == baseline


def test_wrap_releases_the_export():
    """A bytearray cannot be resized while exported: the export must close
    when the last storage over it dies."""
    data = bytearray(64)
    s = gtstore.as_storage(data)
    assert s.dtype == np.uint8 and s.shape == (64,)
    host(s)[3] = 7
    assert data[3] == 7
    view = s[8:]
    with pytest.raises(BufferError):
        data.extend(b"x")
    del s
    gc.collect()
    with pytest.raises(BufferError):
        data.extend(b"x")
    del view
    gc.collect()
    data.extend(b"x")
    assert len(data) == 65


def misaligned_index(array, alignment):
    """An index into a 1-d uint8 array whose element is not aligned."""
    address = array.__array_interface__["data"][0]
    return next(i for i in range(len(array)) if (address + i) % alignment)


FAILING_WRAPS = {
    "misaligned": lambda a: gtstore.as_storage(
        a, alignment_size=64, aligned_index=(misaligned_index(np.asarray(a), 64),)
    ),
    "layout": lambda a: gtstore.as_storage(memoryview(a).cast("B", (8, 8)), layout=(1, 0)),
    "preset-layout": lambda a: gtstore.as_storage(
        memoryview(a).cast("B", (8, 8)), defaults="gt:cpu_ifirst"
    ),
    "dims": lambda a: gtstore.as_storage(a, dims="IJ"),
    "halo": lambda a: gtstore.as_storage(a, halo=(40,)),
    "gpu": lambda a: gtstore.as_storage(a, defaults="gt:gpu"),
    "device": lambda a: gtstore.as_storage(a, device="gpu"),
    "bad-dtype": lambda a: gtstore.storage(a, dtype="f8", copy=False),
    "from_dlpack-misaligned": lambda a: gtstore.from_dlpack(
        np.frombuffer(a, "u1"),
        alignment_size=64,
        aligned_index=(misaligned_index(np.frombuffer(a, "u1"), 64),),
    ),
}


@pytest.mark.parametrize("fail", FAILING_WRAPS.values(), ids=FAILING_WRAPS.keys())
def test_failed_wraps_release_everything(fail, baseline):
    data = bytearray(64)
    start = sys.getrefcount(data)
    for _ in range(20):
        with pytest.raises((ValueError, TypeError, NotImplementedError)):
            fail(data)
    gc.collect()
    data.extend(b"x")  # no export left open
    assert sys.getrefcount(data) == start
    assert live() == baseline


# ---- no leaks ----------------------------------------------------------------------------


class InterfaceOnly:
    def __init__(self, array):
        self.array = array
        self.__array_interface__ = array.__array_interface__


SOURCE = values((4, 5, 6))
READ_ONLY = values((3, 4))
READ_ONLY.setflags(write=False)

MAKERS = [
    lambda: gtstore.empty((4, 5, 6), defaults="gtmc"),
    lambda: gtstore.zeros((4, 5, 6), "i2", defaults="gt:cpu_ifirst", halo=(1, 1, 0)),
    lambda: gtstore.ones((7,), "c16"),
    lambda: gtstore.full((4, 5), 3, "u1", defaults="dace:cpu", dims="JK"),
    lambda: gtstore.full((), 1.5),
    lambda: gtstore.empty((0, 3)),
    lambda: gtstore.zeros((3, 4), defaults="gt:gpu", device="cpu"),
    lambda: gtstore.empty_like(SOURCE, defaults="gt:cpu_kfirst"),
    lambda: gtstore.zeros_like(gtstore.empty((3, 4), halo=(1, 0))),
    lambda: gtstore.ones_like(SOURCE, dtype="i8"),
    lambda: gtstore.full_like(SOURCE, 2.0, dims="IJ0"),
    lambda: gtstore.storage(SOURCE, defaults="gt:cpu_ifirst"),
    lambda: gtstore.storage(np.asfortranarray(SOURCE), dtype="f4"),
    lambda: gtstore.storage(SOURCE[::2, ::-1]),
    lambda: gtstore.storage([[1, 2], [3, 4]]),
    lambda: gtstore.as_storage(SOURCE),
    lambda: gtstore.as_storage(READ_ONLY),
    lambda: gtstore.as_storage(InterfaceOnly(SOURCE)),
    lambda: gtstore.as_storage(gtstore.zeros((2, 3))),
    lambda: gtstore.from_dlpack(SOURCE),
    lambda: gtstore.from_dlpack(SOURCE, copy=True, dims="KJI"),
]
if gtstore.gpu() is not None:  # a storage on the GPU, with its host side
    MAKERS.append(lambda: gtstore.zeros((3, 4), defaults="gt:gpu", halo=(1, 0)))

FAILING = [
    lambda: gtstore.full((4,), 300, "i1"),
    lambda: gtstore.full((4,), 1j),
    lambda: gtstore.empty((2, 3), defaults="nope"),
    # a GPU request that fails with or without a GPU: host memory is no GPU storage's
    lambda: gtstore.as_storage(np.zeros((2, 3)), defaults="gt:gpu"),
    lambda: gtstore.empty((2, 3), alignment_size=12),
    lambda: gtstore.empty((2, 3), halo=(2, 0)),
    lambda: gtstore.empty_like(np.zeros((2, 3)), dims="IJK"),
    lambda: gtstore.storage(np.array([1, "x"], dtype=object), dtype="f8"),
    lambda: gtstore.as_storage(np.zeros((4, 5)), defaults="gt:cpu_ifirst"),
    lambda: gtstore.as_storage(np.zeros(64)[1:], alignment_size=16),
    lambda: gtstore.as_storage(gtstore.zeros((2, 3)), dims="JK"),
    lambda: gtstore.as_storage(np.zeros(3), sync_state=gtstore.zeros(3).sync_state),
    lambda: gtstore.from_dlpack(np.zeros((4, 5)), defaults="gt:cpu_ifirst"),
    lambda: gtstore.from_dlpack([1, 2]),
    lambda: gtstore.storage(np.zeros(2), np.zeros(2)),
]


def exercise():
    made = [make() for make in MAKERS]
    derived = []
    for s in made:
        derived += [
            s[...],
            s.domain_view,
            s.transpose(),
            np.asarray(s),
            s.data,
            s.copy(),
            s.__dlpack__(max_version=(1, 0)),
            repr(s),
            pickle.loads(pickle.dumps(s)),
        ]
        if s.ndim:
            derived.append(s[:1])
        s.halo = s.halo
    for fail in FAILING:
        try:
            fail()
        except (ValueError, TypeError, OverflowError, NotImplementedError):
            pass
        else:
            raise AssertionError("expected an error")
    return made, derived


def test_no_buffer_leaks(baseline):
    for _ in range(20):
        made, derived = exercise()
        del made, derived
    assert live() == baseline


@pytest.mark.parametrize("make", MAKERS + FAILING)
def test_each_call_frees_its_buffer(make, baseline):
    try:
        result = make()
    except (ValueError, TypeError, OverflowError, NotImplementedError):
        result = None
    del result
    assert live() == baseline


def test_no_python_memory_leak():
    # Caches and free lists (CPython's, NumPy's) fill up first and then stay
    # put; a leak grows with every round. The warm-up must reach the plateau:
    # in the sanitizer build (-O0, PYTHONMALLOC=malloc) that takes about 40
    # rounds, after which 40 more grew by under 6 KiB when this was written.
    for _ in range(5):
        exercise()
    gc.collect()
    tracemalloc.start()
    try:
        for _ in range(40):
            exercise()
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(40):
            exercise()
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    # 40 rounds of ~30 storages and ~300 derived objects: a leak of one small
    # object per call would be far over this
    assert after - before < 64 * 1024, after - before


def test_refcounts_of_sources_and_templates_return():
    source = values((4, 5, 6))
    tmpl = gtstore.zeros((4, 5, 6), halo=(1, 1, 1))
    counts = sys.getrefcount(source), sys.getrefcount(tmpl)
    for _ in range(50):
        made = [
            gtstore.storage(source),
            gtstore.empty_like(source),
            gtstore.full_like(tmpl, 2),
            gtstore.zeros_like(tmpl, dtype="f4"),
            gtstore.as_storage(tmpl),
            gtstore.storage(tmpl),
            gtstore.from_dlpack(tmpl),
            gtstore.from_dlpack(source, copy=True),
        ]
        del made
    gc.collect()
    assert (sys.getrefcount(source), sys.getrefcount(tmpl)) == counts


def test_sync_state_lifetime(baseline):
    s = make_storage()
    state = s.sync_state
    view = s[1:]
    del s
    assert view.sync_state is state
    del view
    gc.collect()
    assert state.state == gtstore.SyncState.SYNC_CLEAN  # still valid
    del state
    assert live() == baseline


def test_values_survive_many_generations_of_views(baseline):
    s = make_storage()
    v = s
    for _ in range(30):
        v = gtstore.as_storage(v)[...]
    del s
    gc.collect()
    np.testing.assert_array_equal(host(v), EXPECTED)
    del v
    assert live() == baseline


def test_storages_die_in_other_threads(baseline):
    """Wrapped memory is released by whichever thread drops the last
    reference (the release callback takes the GIL itself)."""
    import threading

    source = values((50, 50))
    start = sys.getrefcount(source)
    storages = [gtstore.as_storage(source)[i:] for i in range(40)]
    storages += [gtstore.zeros((10, 10), defaults="gtmc") for _ in range(40)]

    def drop():
        while storages:
            storages.pop()
        gc.collect()

    threads = [threading.Thread(target=drop) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    gc.collect()
    assert sys.getrefcount(source) == start
    assert live() == baseline
