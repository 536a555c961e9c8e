"""The caches of device and pinned memory, and pinned host sides.

Run on every GPU gtstore can reach: the emulated device always, and CUDA
where a driver answers (a GPU, or the fake driver of tests/c as device 0).
Freed device blocks and pinned blocks are reused; memory_stats() reports
them apart from the host cache; clear_cache() and the cache limit cover
them; the host side of a software-managed storage is pinned unless that is
turned off. Nothing here needs CuPy.
"""

import gc
import os
import subprocess
import sys

import numpy as np
import pytest

import gtstore

from conftest import cuda_present

MIB = 1 << 20
SHAPE = (256, 256, 80)  # 40 MiB of float64


GPUS = ["emulated"] + (["cuda"] if cuda_present() else [])


@pytest.fixture(params=GPUS)
def gpu(request, cache_limit):
    gtstore.use_gpu(request.param)
    gtstore.set_pinned_host_sides(True)
    gtstore.clear_cache()
    yield request.param
    gtstore.set_pinned_host_sides(True)
    gtstore.use_gpu(None)
    gc.collect()
    gtstore.clear_cache()


def stats():
    gc.collect()
    return gtstore.memory_stats()


def pinned_blocks():
    """Live pinned blocks of the emulated device (its pinned memory is counted)."""
    return gtstore.transfer_counts()["pinned_live_blocks"]


def test_memory_stats_report_device_and_pinned_caches():
    s = gtstore.memory_stats()
    for kind in ("device_", "pinned_"):
        for key in ("cached_blocks", "cached_bytes", "cache_hits", "cache_misses"):
            assert isinstance(s[kind + key], int) and s[kind + key] >= 0


def test_freed_device_memory_is_reused(gpu):
    s0 = stats()
    a = gtstore.empty(SHAPE, device="gpu", managed=None)
    nbytes = a.nbytes
    del a
    s1 = stats()
    assert s1["device_cached_bytes"] >= s0["device_cached_bytes"] + nbytes
    assert s1["device_cache_misses"] == s0["device_cache_misses"] + 1
    assert s1["cached_bytes"] == s0["cached_bytes"]  # the host cache is another
    b = gtstore.zeros(SHAPE, device="gpu", managed=None)
    s2 = stats()
    assert s2["device_cache_hits"] == s1["device_cache_hits"] + 1
    assert s2["device_cached_bytes"] < s1["device_cached_bytes"]
    np.testing.assert_array_equal(gtstore.storage(b, device="cpu"), 0)  # zeroed on reuse


def test_clear_cache_releases_device_and_pinned_memory(gpu):
    s = gtstore.zeros(SHAPE, device="gpu")  # a pinned host side beside the device memory
    del s
    before = stats()
    assert before["device_cached_bytes"] > 0 and before["pinned_cached_bytes"] > 0
    gtstore.clear_cache()
    after = stats()
    assert after["device_cached_bytes"] == 0 and after["device_cached_blocks"] == 0
    assert after["pinned_cached_bytes"] == 0 and after["pinned_cached_blocks"] == 0


def test_the_cache_limit_covers_device_and_pinned_memory(gpu):
    s = gtstore.zeros(SHAPE, device="gpu")  # 40 MiB on each side
    del s
    assert stats()["device_cached_bytes"] >= 40 * MIB
    gtstore.set_cache_limit(8 * MIB)  # lowering it evicts
    s1 = stats()
    # a GPU's driver reserves pool memory in chunks (32 MiB on an H100) and
    # returns one only once nothing in it lives (other tests' storages may)
    chunk = 32 * MIB if gpu == "cuda" and not os.environ.get("GTSTORE_LIBCUDA") else 0
    assert s1["device_cached_bytes"] <= 8 * MIB + chunk and s1["pinned_cached_bytes"] <= 8 * MIB
    gtstore.set_cache_limit(0)  # nothing is kept
    s = gtstore.zeros((64, 64, 8), device="gpu")
    del s
    s2 = stats()
    assert s2["device_cached_bytes"] <= chunk and s2["pinned_cached_bytes"] == 0


def test_host_side_is_pinned_and_its_block_reused(gpu):
    s0 = stats()
    blocks = pinned_blocks()
    s = gtstore.full(SHAPE, 1.5, device="gpu")
    assert type(s) is gtstore.SoftwareManagedGPUStorage
    if gpu == "emulated":
        assert pinned_blocks() == blocks + 1
    s1 = stats()
    assert s1["pinned_cache_misses"] == s0["pinned_cache_misses"] + 1
    del s
    t = gtstore.empty(SHAPE, device="gpu")
    assert stats()["pinned_cache_hits"] == s1["pinned_cache_hits"] + 1
    # the sync rule holds on a reused pinned host side
    t[...] = 2.0
    t.host_to_device()
    np.asarray(t)[...] = 0.0
    t.set_device_modified()
    t.device_to_host()
    np.testing.assert_array_equal(np.asarray(t), 2.0)


def test_pinned_host_sides_can_be_turned_off(gpu):
    assert gtstore.pinned_host_sides() is True
    gtstore.set_pinned_host_sides(False)
    assert gtstore.pinned_host_sides() is False
    blocks, misses = pinned_blocks(), stats()["pinned_cache_misses"]
    s = gtstore.full((30, 20, 10), 3.0, device="gpu")
    assert pinned_blocks() == blocks and stats()["pinned_cache_misses"] == misses
    np.testing.assert_array_equal(np.asarray(s), 3.0)
    np.asarray(s)[...] = 0
    s.set_device_modified()
    np.testing.assert_array_equal(np.asarray(s), 3.0)  # synced back from the device
    gtstore.set_pinned_host_sides(True)
    assert type(s) is gtstore.SoftwareManagedGPUStorage  # made pageable, stays so


@pytest.mark.parametrize("value", [1, 0, None, "yes", 1.0])
def test_set_pinned_host_sides_takes_a_bool(value):
    with pytest.raises(TypeError, match="pinned"):
        gtstore.set_pinned_host_sides(value)


@pytest.mark.parametrize("setting", ["off", "false", "2", " 0"])
def test_environment_refuses_unknown_pinned_host_sides(setting):
    # as GTSTORE_CACHE_LIMIT: a typo is an error at import, not the default
    env = dict(os.environ, GTSTORE_PINNED_HOST_SIDES=setting)
    out = subprocess.run(
        [sys.executable, "-c", "import gtstore"], env=env, capture_output=True, text=True,
        timeout=60,
    )
    assert out.returncode != 0
    assert (
        f"ValueError: GTSTORE_PINNED_HOST_SIDES: expected '1' (pinned host sides, the default) "
        f"or '0' (pageable), got '{setting}'" in out.stderr
    ), out.stderr


@pytest.mark.parametrize("setting, expected", [("0", False), ("1", True), ("", True)])
def test_environment_turns_pinned_host_sides_off(setting, expected):
    code = (
        "import gtstore\n"
        "gtstore.use_gpu('emulated')\n"
        "before = gtstore.transfer_counts()['pinned_live_blocks']\n"
        "s = gtstore.zeros((8, 8, 8), device='gpu')\n"
        "pinned = gtstore.transfer_counts()['pinned_live_blocks'] - before\n"
        "print(gtstore.pinned_host_sides(), pinned)\n"
    )
    env = dict(os.environ, GTSTORE_PINNED_HOST_SIDES=setting)
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [str(expected), str(int(expected))]
