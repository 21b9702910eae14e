"""The CPU allocator hands out 64-byte aligned blocks of every size (SIMD kernels
and NumPy interop assume it), small blocks by malloc with hand alignment."""
import gc

import numpy as np
import pytest

import ember


@pytest.mark.parametrize("numel", [0, 1, 2, 3, 7, 15, 16, 17, 63, 64, 65, 255, 1000, 4097, 65537, 262143, 262145, 300000])
def test_blocks_are_64_byte_aligned_and_fully_writable(numel):
    tensors = [ember.empty(numel) for _ in range(8)]  # several live at once: distinct blocks
    for i, t in enumerate(tensors):
        assert t.data_ptr() % 64 == 0, (numel, t.data_ptr())
        t.fill_(float(i))
    for i, t in enumerate(tensors):
        np.testing.assert_array_equal(t.numpy(), np.full(numel, float(i), dtype=np.float32))


def test_every_byte_size_under_a_kilobyte_is_aligned():
    for nbytes in range(1025):
        t = ember.empty(nbytes, dtype=ember.uint8)
        assert t.data_ptr() % 64 == 0, nbytes


MIB = 1 << 20
CACHE_LIMIT = 2048 * MIB  # the allocator's cap on cached bytes (allocator.cpp kMaxCached)


def cached_bytes():
    return ember._C._cpu_cache_stats()[0]


@pytest.fixture
def empty_cache():
    """An empty cache that no garbage collection refills behind the test's back."""
    gc.collect()
    gc.disable()
    ember._C._cpu_empty_cache()
    yield
    ember._C._cpu_empty_cache()
    gc.enable()


def test_a_full_cache_evicts_the_blocks_freed_longest_ago(empty_cache):
    # Blocks of a size no longer asked for (682 MiB, three fill the cache) must not keep
    # a loop's own size out: freeing a 100 MiB block evicts the oldest stale one, and the
    # next 100 MiB request reuses the cached block. `empty` touches no page: no RSS is used.
    stale = [ember.empty(682 * MIB, dtype=ember.uint8) for _ in range(3)]
    del stale
    assert cached_bytes() == 3 * 682 * MIB
    block = ember.empty(100 * MIB, dtype=ember.uint8)
    del block
    assert cached_bytes() == 2 * 682 * MIB + 100 * MIB
    again = ember.empty(100 * MIB, dtype=ember.uint8)
    assert cached_bytes() == 2 * 682 * MIB
    del again
    # A block larger than the whole cache is returned to the system, evicting nothing.
    huge = ember.empty(CACHE_LIMIT + MIB, dtype=ember.uint8)
    del huge
    assert cached_bytes() == 2 * 682 * MIB + 100 * MIB
    ember._C._cpu_empty_cache()
    assert cached_bytes() == 0


def test_cached_blocks_are_reused_best_fit_within_an_eighth(empty_cache):
    a, b, c = (ember.empty(n * MIB, dtype=ember.uint8) for n in (4, 8, 16))
    addresses = {4: a.data_ptr(), 8: b.data_ptr(), 16: c.data_ptr()}
    del a, b, c
    # 7.5 MiB takes the 8 MiB block (within 1/8), not the 16 MiB one; 4 MiB its own;
    # 3 MiB is too small for the 16 MiB block left and gets a new one.
    n = 15 * MIB // 2 + 1
    big, four = ember.empty(n, dtype=ember.uint8), ember.empty(4 * MIB, dtype=ember.uint8)
    assert (big.data_ptr(), four.data_ptr()) == (addresses[8], addresses[4])
    assert cached_bytes() == 16 * MIB
    three = ember.empty(3 * MIB, dtype=ember.uint8)
    assert three.data_ptr() != addresses[16] and cached_bytes() == 16 * MIB
    big.fill_(7)
    assert int(big.sum()) == 7 * n
