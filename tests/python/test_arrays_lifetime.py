"""Memory ownership and lifetime: libgtstore owns the memory and frees it when
the last array viewing it dies; the cache of large blocks; the buffer-protocol
fallback of the extension."""

import gc
import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import gtstore
import gtstore.arrays as ga
from conftest import live, param_id, subprocess_env

MIB = 1 << 20


def values(shape):
    return np.arange(np.prod(shape), dtype="f8").reshape(shape)


# ---- views outlive the original ------------------------------------------------

VIEWS = {
    "slice": lambda a: a[1:, ::2],
    "index": lambda a: a[2],
    "negative-step": lambda a: a[::-1, :, ::-3],
    "transpose": lambda a: a.T,
    "swapaxes": lambda a: a.swapaxes(0, 2),
    "reshape-split": lambda a: a.reshape(3, 2, 2, 5),  # a view for any strides
    "ravel-of-slice": lambda a: a[1].reshape(4, 5),
    "dtype-view": lambda a: a.view(np.int64),
    "newaxis": lambda a: a[None, ..., None],
    "ellipsis": lambda a: a[...],
    "view-of-view": lambda a: a[1:][::-1].T[0],
}


@pytest.mark.parametrize("name", [None, "gt:cpu_ifirst", "gtmc"])
@pytest.mark.parametrize("make_view", VIEWS.values(), ids=VIEWS.keys())
def test_views_outlive_the_original(make_view, name, baseline):
    expected_values = values((3, 4, 5))
    a = ga.from_array(expected_values, backend=name)
    view = make_view(a)
    assert np.shares_memory(view, a)
    expected = make_view(expected_values).copy()
    del a
    assert live()[0] == baseline[0] + 1  # the view keeps the buffer
    assert np.array_equal(view, expected)
    view[...] = 0  # still writable memory of our own
    assert not view.any()
    del view
    assert live() == baseline


def test_flat_reshape_of_a_c_array_outlives_it(baseline):
    a = ga.from_array(values((3, 4)))
    flat = a.reshape(-1)
    assert np.shares_memory(flat, a)
    del a
    assert np.array_equal(flat, np.arange(12.0))
    del flat
    assert live() == baseline


def test_several_views_keep_one_buffer(baseline):
    a = ga.zeros((100, 100), backend="gt:cpu_ifirst")
    views = [a[i:, i:] for i in range(10)]
    del a
    assert live()[0] == baseline[0] + 1
    for i in range(10):
        views[i][0, 0] = i
    assert views[0][9, 9] == 9
    del views[:5]
    assert live()[0] == baseline[0] + 1
    views.clear()
    assert live() == baseline


def test_array_base_is_a_storage():
    """gtstore.arrays allocates as gtstore.Storage does: the array views a
    storage over the same memory, with the call's dims."""
    a = ga.empty((2, 3), dims="IK")
    if os.environ.get("GTSTORE_NUMPY_CAPI") == "0":  # the suite runs on the fallback path
        assert type(a.base) is memoryview
        storage = a.base.obj
    else:
        storage = a.base
    assert isinstance(storage, gtstore.CPUStorage)
    assert storage.dims == ("I", "K") and storage.shape == a.shape
    assert storage.strides == a.strides and np.shares_memory(np.asarray(storage), a)
    b = a[1:]
    del a
    gc.collect()
    assert b.base is not None


def test_memory_stats_count_live_buffers(baseline):
    arrays = [ga.empty((10, 10)) for _ in range(5)]
    buffers, nbytes = live()
    assert buffers == baseline[0] + 5
    assert nbytes >= baseline[1] + 5 * 800
    del arrays
    assert live() == baseline


def test_memory_stats_keys():
    stats = gtstore.memory_stats()
    assert set(stats) == {
        "live_buffers",
        "live_bytes",
        "cached_blocks",
        "cached_bytes",
        "cache_hits",
        "cache_misses",
        "device_cached_blocks",
        "device_cached_bytes",
        "device_cache_hits",
        "device_cache_misses",
        "pinned_cached_blocks",
        "pinned_cached_bytes",
        "pinned_cache_hits",
        "pinned_cache_misses",
        "spare_blocks",
        "spare_bytes",
        "spare_hits",
    }
    assert all(isinstance(v, int) and v >= 0 for v in stats.values())


# ---- leaks --------------------------------------------------------------------------


class ArrayLike:
    def __init__(self, data):
        self.data = data

    def __array__(self, dtype=None, copy=None):
        return self.data


SOURCE = values((4, 5, 6))

MAKERS = [
    lambda: ga.empty((4, 5, 6), backend="gtmc"),
    lambda: ga.zeros((4, 5, 6), "i2", backend="gt:cpu_ifirst"),
    lambda: ga.ones((7,), "c16"),
    lambda: ga.full((4, 5), 3, "u1", backend="dace:cpu"),
    lambda: ga.full((), 1.5),
    lambda: ga.empty((0, 3)),
    lambda: ga.zeros((2, 3), ("f4", (2,)), backend="gt:gpu", device="cpu"),
    lambda: ga.from_array(SOURCE, backend="gt:cpu_ifirst"),
    lambda: ga.from_array(np.asfortranarray(SOURCE)),
    lambda: ga.from_array(SOURCE[::2, ::-1], "f4", backend="gtmc"),
    lambda: ga.from_array(SOURCE.astype(">f8"), backend="F"),
    lambda: ga.from_array([[1, 2], [3, 4]]),
    lambda: ga.from_array(SOURCE > 3),
    lambda: ga.from_array(ArrayLike(SOURCE), backend="dace:cpu"),
    lambda: ga.from_array(memoryview(SOURCE)),
    lambda: ga.empty_like(SOURCE, backend="gt:cpu_kfirst"),
    lambda: ga.zeros_like(SOURCE[:, ::2]),
    lambda: ga.ones_like(SOURCE, dtype="i8"),
    lambda: ga.full_like(SOURCE, 2.0, dims="IJ0", backend="gtmc"),
    lambda: ga.plan((4, 5, 6), backend="gt:gpu"),
]

FAILING = [
    lambda: ga.full((4,), 300, "i1"),  # the fill value fails after the allocation
    lambda: ga.full((4,), 1j, "f8"),
    lambda: ga.from_array(np.array([1, "x"], dtype=object), "f8"),  # the copy fails
    lambda: ga.from_array(np.zeros((2, 3)), ("f8", (4,))),
    lambda: ga.empty((2, 3), backend="nope"),
    lambda: ga.empty((2, 3), alignment_size=12),
    lambda: ga.empty_like(np.zeros((2, 3)), dims="IJK"),
]


def test_no_leaks(baseline):
    for _ in range(50):
        made = [make() for make in MAKERS]
        views = [a[..., :1] for a in made if isinstance(a, np.ndarray) and a.ndim]
        del made
        for fail in FAILING:
            with pytest.raises((ValueError, TypeError, OverflowError)):
                fail()
        del views
    assert live() == baseline


@pytest.mark.parametrize("make", MAKERS + FAILING)
def test_each_function_frees_its_buffer(make, baseline):
    try:
        result = make()
    except (ValueError, TypeError, OverflowError):
        result = None
    del result
    assert live() == baseline


# ---- the cache of large blocks ----------------------------------------------------


def stats():
    return gtstore.memory_stats()


def test_cache_reuses_a_freed_large_block(cache_limit):
    a = ga.full((4 * MIB // 8,), 1.0)
    del a
    gc.collect()
    before = stats()
    assert before["cached_blocks"] >= 1 and before["cached_bytes"] >= 4 * MIB
    b = ga.zeros((4 * MIB // 8,))
    after = stats()
    assert after["cache_hits"] == before["cache_hits"] + 1
    assert after["cached_blocks"] == before["cached_blocks"] - 1
    assert not b.any()  # a reused block is zeroed again


@pytest.mark.parametrize("nbytes", [2 * MIB, 3 * MIB + 123, 16 * MIB])
def test_cache_hit_for_the_same_size(cache_limit, nbytes):
    a = ga.empty((nbytes,), "u1")
    del a
    hits = stats()["cache_hits"]
    b = ga.empty((nbytes,), "u1")
    assert stats()["cache_hits"] == hits + 1
    del b


def test_cache_limit_zero_turns_it_off(cache_limit):
    gtstore.set_cache_limit(0)
    assert gtstore.cache_limit() == 0
    a = ga.empty((4 * MIB // 8,))
    del a
    assert stats()["cached_blocks"] == 0 and stats()["cached_bytes"] == 0
    hits = stats()["cache_hits"]
    b = ga.empty((4 * MIB // 8,))
    del b
    assert stats()["cache_hits"] == hits


def test_clear_cache_empties_it(cache_limit):
    arrays = [ga.empty((n * MIB,), "u1") for n in (2, 3, 4)]
    del arrays
    assert stats()["cached_blocks"] == 3
    gtstore.clear_cache()
    assert stats()["cached_blocks"] == 0 and stats()["cached_bytes"] == 0


def test_lowering_the_limit_evicts(cache_limit):
    arrays = [ga.empty((n * MIB,), "u1") for n in (2, 3, 4)]
    del arrays
    assert stats()["cached_bytes"] >= 9 * MIB
    gtstore.set_cache_limit(5 * MIB)
    assert gtstore.cache_limit() == 5 * MIB
    assert stats()["cached_bytes"] <= 5 * MIB


def test_small_blocks_are_not_cached(cache_limit):
    a = ga.empty((1000,))
    del a
    assert stats()["cached_blocks"] == 0


def test_cache_limit_fixture_restores(cache_limit):
    gtstore.set_cache_limit(12345)
    assert gtstore.cache_limit() == 12345


@pytest.mark.parametrize("value", [-1, -(2**40)])
def test_set_cache_limit_rejects_negative(value):
    with pytest.raises(ValueError, match=rf"nbytes.*{value}"):
        gtstore.set_cache_limit(value)


@pytest.mark.parametrize("value", [1.5, "1", None, True, 2.0, [1]], ids=param_id)
def test_set_cache_limit_rejects_non_int(value):
    with pytest.raises(TypeError, match="nbytes"):
        gtstore.set_cache_limit(value)


# ---- the buffer-protocol fallback (GTSTORE_NUMPY_CAPI=0) -----------------------

CASES = textwrap.dedent("""
    import gc
    import numpy as np
    import gtstore
    import gtstore.arrays as ga

    SOURCE = np.arange(120.0).reshape(4, 5, 6)
    # name: (make, aligned index, alignment in bytes)
    CASES = {
        "zeros-gtmc": (lambda: ga.zeros((4, 5, 6), backend="gtmc", aligned_index=(1, 0, 0)),
                       (1, 0, 0), 64),
        "ones-ifirst-i2": (lambda: ga.ones((4, 5, 6), "i2", backend="gt:cpu_ifirst"), (0, 0, 0), 2),
        "full-c8": (lambda: ga.full((3, 2), 1 - 2j, "c8", backend="F"), (0, 0), 8),
        "full-f2": (lambda: ga.full((5,), 0.5, "f2", alignment_size=64, aligned_index=(3,)),
                    (3,), 64),
        "full-bool": (lambda: ga.full((2, 3), True, "?", backend="dace:cpu"), (0, 0), 1),
        "full-u8": (lambda: ga.full((2, 3), 2**64 - 1, "u8", backend="gt:gpu", device="cpu"),
                    (0, 0), 256),
        "zeros-0d": (lambda: ga.zeros((), backend="gtmc"), (), 64),
        "zeros-empty": (lambda: ga.zeros((3, 0, 2), backend="gtmc"), (0, 0, 0), 64),
        "from-array": (lambda: ga.from_array(SOURCE, backend="gt:cpu_ifirst"), (0, 0, 0), 8),
        "from-array-F-cast": (lambda: ga.from_array(np.asfortranarray(SOURCE), "i4"),
                              (0, 0, 0), 4),
        "from-array-swapped": (lambda: ga.from_array(SOURCE.astype(">f8")[::-1], backend="gtmc"),
                               (0, 0, 0), 64),
        "subarray": (lambda: ga.ones((2, 3), ("f8", (2,)), backend="gt:cpu_ifirst"),
                     (0, 0, 0), 8),
        "like": (lambda: ga.full_like(SOURCE, 4, dims="IJ0", backend="gt:cpu_kfirst"),
                 (0, 0, 0), 8),
    }


    def describe():
        out = {}
        for name, (make, index, alignment) in CASES.items():
            a = make()
            point = a.__array_interface__["data"][0] + sum(
                i * s for i, s in zip(index, a.strides))
            out[name] = dict(shape=a.shape, strides=a.strides, dtype=a.dtype.str,
                             values=a.copy(), base=type(a.base).__name__,
                             writeable=a.flags.writeable, misaligned=point % alignment)
            del a
        # lifetime: a view outlives the array and the buffer is freed after it
        gc.collect()
        start = gtstore.memory_stats()["live_buffers"]
        a = ga.from_array(SOURCE, backend="gt:cpu_ifirst")
        view = a[1:, ::2]
        del a
        gc.collect()
        out["lifetime"] = dict(
            alive_with_view=gtstore.memory_stats()["live_buffers"] - start,
            view=view.copy(), shares=np.shares_memory(view, view.base),
        )
        view[...] = -1
        out["lifetime"]["written"] = view.copy()
        del view
        gc.collect()
        out["lifetime"]["after"] = gtstore.memory_stats()["live_buffers"] - start
        return out
    """)


def describe_in_subprocess(tmp_path, capi):
    script = tmp_path / "cases.py"
    script.write_text(
        CASES
        + "\nimport pickle, sys\n"
        + "with open(sys.argv[1], 'wb') as f:\n    pickle.dump(describe(), f)\n"
    )
    out = tmp_path / f"out-{capi}.pickle"
    env = subprocess_env(GTSTORE_NUMPY_CAPI=capi)
    subprocess.run(
        [sys.executable, str(script), str(out)], env=env, check=True, timeout=120, cwd=tmp_path
    )
    with open(out, "rb") as f:
        return pickle.load(f)


def test_buffer_protocol_fallback_behaves_identically(tmp_path):
    capi = describe_in_subprocess(tmp_path, "1")
    fallback = describe_in_subprocess(tmp_path, "0")
    assert capi.keys() == fallback.keys()
    for name in capi:
        if name == "lifetime":
            continue
        a, b = capi[name], fallback[name]
        assert a["base"] == "CPUStorage", name
        assert b["base"] == "memoryview", name
        assert a["misaligned"] == b["misaligned"] == 0, name
        assert a["writeable"] and b["writeable"], name
        for key in ("shape", "strides", "dtype"):
            assert a[key] == b[key], (name, key)
        np.testing.assert_array_equal(a["values"], b["values"], strict=True)
    for result in (capi, fallback):
        life = result["lifetime"]
        assert life["alive_with_view"] == 1
        assert life["shares"]
        np.testing.assert_array_equal(life["view"], np.arange(120.0).reshape(4, 5, 6)[1:, ::2])
        assert (life["written"] == -1).all()
        assert life["after"] == 0


@pytest.mark.parametrize("setting, base", [("1", "CPUStorage"), ("", "CPUStorage"),
                                           ("0", "memoryview")], ids=param_id)
def test_numpy_capi_switch(setting, base):
    # unset or empty is on; the array's base says which path made it
    code = ("import gtstore.arrays as ga\n"
            "print(type(ga.zeros((3,), backend='numpy').base).__name__)")
    out = subprocess.run([sys.executable, "-c", code],
                         env=subprocess_env(GTSTORE_NUMPY_CAPI=setting), capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [base]


@pytest.mark.parametrize("setting", ["off", "false", "2", " 0", "yes"], ids=param_id)
def test_numpy_capi_switch_refuses_other_values(setting):
    # the rule of every gtstore switch (GTSTORE_PINNED_HOST_SIDES): '1' or '0',
    # a typo an error at import rather than read as on
    out = subprocess.run([sys.executable, "-c", "import gtstore"],
                         env=subprocess_env(GTSTORE_NUMPY_CAPI=setting), capture_output=True,
                         text=True, timeout=60)
    assert out.returncode != 0
    assert (f"ValueError: GTSTORE_NUMPY_CAPI: expected '1' (NumPy's C API where it is found, the "
            f"default) or '0' (the buffer protocol), got '{setting}'") in out.stderr, out.stderr
