"""The L1 cache's byte bound holds for the memory it really takes."""

from __future__ import annotations

import gc
import os
import tracemalloc

from helixfs.store.cache import ByteLRU


def test_a_cache_full_of_small_frames_takes_about_its_budget() -> None:
    """A 50-byte value cost ~390 bytes of Python objects in all, counted as 178: 64 MiB
    of small blob frames took ~150 MiB of the daemon's memory. Keys and values are
    made inside, so that what the cache drops is freed and what it keeps is counted."""
    budget = 2 << 20
    gc.collect()
    tracemalloc.start()
    try:
        cache: ByteLRU[bytes] = ByteLRU(budget)
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(50_000):
            cache.put(os.urandom(32), os.urandom(50), 50)
        taken = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert cache.size_bytes <= budget
    assert taken <= budget * 1.3, f"{taken / budget:.2f}x the budget"
