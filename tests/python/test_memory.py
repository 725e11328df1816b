"""The caching allocator's statistics and the thread pool controls."""
import gc

import pytest

import kiln

MB = 1 << 20

KEYS = {"current_bytes", "peak_bytes", "reserved_bytes", "alloc_count", "cache_hits"}


def stats():
    gc.collect()
    return kiln.memory_stats()


def test_memory_stats_keys():
    s = kiln.memory_stats()
    assert set(s) == KEYS
    assert all(isinstance(v, int) and v >= 0 for v in s.values())
    assert s["reserved_bytes"] >= s["current_bytes"] and s["peak_bytes"] >= s["current_bytes"]


def test_current_moves_with_tensors():
    s0 = stats()
    t = kiln.empty(MB, dtype=kiln.uint8)
    s1 = stats()
    assert s1["current_bytes"] >= s0["current_bytes"] + MB
    assert s1["alloc_count"] == s0["alloc_count"] + 1
    v = t.view(1024, 1024)  # a view allocates nothing
    assert stats()["current_bytes"] == s1["current_bytes"]
    del t
    assert stats()["current_bytes"] == s1["current_bytes"]  # the view keeps the storage
    del v
    assert stats()["current_bytes"] == s0["current_bytes"]


def test_peak_and_reset():
    kiln.reset_peak_memory_stats()
    s0 = stats()
    assert s0["peak_bytes"] == s0["current_bytes"]
    t = kiln.zeros(2 * MB, dtype=kiln.uint8)
    del t
    s1 = stats()
    assert s1["peak_bytes"] >= s0["current_bytes"] + 2 * MB
    kiln.reset_peak_memory_stats()
    assert stats()["peak_bytes"] == s1["current_bytes"]


def test_cache_reuse_and_empty_cache():
    t = kiln.empty(3 * MB, dtype=kiln.uint8)
    del t
    s0 = stats()
    assert s0["reserved_bytes"] >= s0["current_bytes"] + 3 * MB  # kept in the cache
    t = kiln.empty(3 * MB, dtype=kiln.uint8)
    s1 = stats()
    assert s1["cache_hits"] == s0["cache_hits"] + 1
    del t
    kiln.empty_cache()
    s2 = stats()
    assert s2["reserved_bytes"] < s0["reserved_bytes"]
    assert s2["reserved_bytes"] == s2["current_bytes"]


def test_numpy_memory_is_not_counted():
    import numpy as np

    s0 = stats()
    t = kiln.from_numpy(np.zeros(MB, np.uint8))
    assert stats()["current_bytes"] == s0["current_bytes"]
    del t


def test_threads():
    n = kiln.get_num_threads()
    assert n >= 1
    try:
        kiln.set_num_threads(1)
        assert kiln.get_num_threads() == 1
        assert kiln.arange(100000).reshape(100, 1000).t().contiguous().numpy()[3, 2] == 2003
    finally:
        kiln.set_num_threads(n)
    assert kiln.get_num_threads() == n
    with pytest.raises(ValueError):
        kiln.set_num_threads(0)


def test_version_and_simd():
    assert kiln.__version__ == "0.1.0"
    assert isinstance(kiln.simd_target(), str) and kiln.simd_target()
