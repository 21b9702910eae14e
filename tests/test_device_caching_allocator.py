"""The device caching allocator's logic (aten/src/core/device_caching_allocator.cpp),
run on host memory through _C._TestCachingAllocator so no GPU is needed: size
rounding, the small and large pools, best-fit reuse per stream, splitting and
merging, stats, empty_cache and the out-of-memory path."""
import threading

import pytest

import ember

KiB = 1 << 10
MiB = 1 << 20
GiB = 1 << 30


def make(capacity=4 * GiB):
    return ember._C._TestCachingAllocator(capacity)


# ---------------------------------------------------------------- sizes and pools


@pytest.mark.parametrize("nbytes, rounded", [(1, 512), (511, 512), (512, 512), (513, 1024), (1000, 1024),
                                             (4096, 4096), (MiB - 1, MiB), (3 * MiB + 1, 3 * MiB + 512)])
def test_sizes_round_up_to_512(nbytes, rounded):
    a = make()
    p = a.malloc(nbytes)
    assert p % 512 == 0
    assert a.block_size(p) == rounded
    assert a.stats()["allocated"] == rounded


def test_zero_bytes_gives_null_and_no_block():
    a = make()
    assert a.malloc(0) == 0
    assert a.raw_allocs == 0 and a.stats()["allocated"] == 0
    a.free(0)  # freeing null is a no-op


def test_small_requests_share_one_2mib_segment():
    a = make()
    ptrs = [a.malloc(10000) for _ in range(200)]  # 200 * 10240 bytes < 2 MiB
    assert a.raw_allocs == 1
    assert a.stats()["reserved"] == 2 * MiB
    assert len(set(ptrs)) == 200
    base = min(ptrs)
    assert all(base <= p and p + 10240 <= base + 2 * MiB for p in ptrs)
    # Carved in order from the front of the segment.
    assert sorted(ptrs) == [base + i * 10240 for i in range(200)]
    # The next one no longer fits and takes a second segment.
    a.malloc(MiB)
    assert a.raw_allocs == 2 and a.stats()["reserved"] == 4 * MiB


def test_1mib_is_small_and_above_is_large():
    a = make()
    a.malloc(MiB)
    assert a.stats()["reserved"] == 2 * MiB
    a.malloc(MiB + 1)
    assert a.stats()["reserved"] == 2 * MiB + 20 * MiB


@pytest.mark.parametrize("nbytes, segment", [(3 * MiB, 20 * MiB), (10 * MiB - 512, 20 * MiB), (10 * MiB, 10 * MiB),
                                             (30 * MiB, 30 * MiB), (31 * MiB, 32 * MiB), (19 * MiB, 20 * MiB)])
def test_large_pool_segment_sizes(nbytes, segment):
    a = make()
    a.malloc(nbytes)
    assert a.raw_allocs == 1
    assert a.raw_in_use == segment
    assert a.stats()["reserved"] == segment


def test_large_requests_under_10mib_share_a_20mib_segment():
    a = make()
    p = a.malloc(3 * MiB)
    q = a.malloc(3 * MiB)
    assert a.raw_allocs == 1 and q == p + 3 * MiB


# ---------------------------------------------------------------- reuse


def test_freed_block_is_reused():
    a = make()
    p = a.malloc(4096)
    a.free(p)
    assert a.malloc(4096) == p
    assert a.raw_allocs == 1


def test_best_fit_takes_the_smallest_free_block_that_fits():
    a = make()
    big = a.malloc(8192)
    a.malloc(512)  # separators keep the blocks from merging
    small = a.malloc(4096)
    a.malloc(512)
    a.free(big)
    a.free(small)
    assert a.malloc(4000) == small  # not `big`, not the segment's free tail
    assert a.malloc(6000) == big
    assert a.raw_allocs == 1


def test_best_fit_in_the_large_pool():
    a = make()
    p8 = a.malloc(8 * MiB)
    a.malloc(2 * MiB)
    p4 = a.malloc(4 * MiB)
    a.malloc(3 * MiB // 2)  # 15.5 MiB used; a 4.5 MiB tail is left
    a.free(p8)
    a.free(p4)
    assert a.malloc(3 * MiB) == p4  # free: 8, 4 and 4.5 MiB
    assert a.block_size(p4) == 4 * MiB  # a 1 MiB rest is not split off
    assert a.raw_allocs == 1


def test_blocks_are_not_reused_across_streams():
    a = make()
    p = a.malloc(4096, stream=1)
    a.free(p)
    q = a.malloc(4096, stream=2)
    assert q != p
    assert a.raw_allocs == 2  # stream 1's segment (and its free tail) is off limits
    r = a.malloc(4096, stream=1)
    assert r == p and a.raw_allocs == 2


def test_large_blocks_are_not_reused_across_streams():
    a = make()
    p = a.malloc(3 * MiB, stream=7)
    a.free(p)
    q = a.malloc(3 * MiB, stream=0)
    assert q != p and a.raw_allocs == 2
    assert a.malloc(3 * MiB, stream=7) == p


# ---------------------------------------------------------------- split and merge


def test_split_blocks_are_contiguous_and_merge_on_free():
    a = make()
    x = a.malloc(4096)
    y = a.malloc(4096)
    z = a.malloc(4096)  # keeps x+y from merging into the segment's tail
    assert y == x + 4096 and z == y + 4096
    a.free(x)
    a.free(y)
    # Only a merged x+y fits 8 KiB in place; otherwise it would come from the tail after z.
    assert a.malloc(8192) == x
    assert a.raw_allocs == 1


def test_merge_with_both_neighbours():
    a = make()
    x, y, z, w = (a.malloc(4096) for _ in range(4))
    a.free(x)
    a.free(z)
    a.free(y)  # joins x and z
    assert a.malloc(3 * 4096) == x
    assert a.raw_allocs == 1
    a.free(w)


def test_small_pool_splits_off_a_512_byte_tail():
    a = make()
    a.malloc(MiB)
    p = a.malloc(MiB - 512)
    assert a.block_size(p) == MiB - 512  # the 512-byte rest was split off
    q = a.malloc(512)
    assert q == p + MiB - 512
    assert a.raw_allocs == 1


def test_large_pool_keeps_remainders_of_1mib_or_less():
    a = make()
    p = a.malloc(19 * MiB)  # 20 MiB segment, 1 MiB left: not split
    assert a.block_size(p) == 20 * MiB
    assert a.stats()["allocated"] == 20 * MiB
    q = a.malloc(9 * MiB)  # 11 MiB left: split
    assert a.block_size(q) == 9 * MiB
    r = a.malloc(11 * MiB - 512 * KiB)  # reuses q's tail without a split (512 KiB left)
    assert r == q + 9 * MiB and a.block_size(r) == 11 * MiB
    assert a.raw_allocs == 2


def test_freed_and_merged_segment_serves_a_full_size_request():
    a = make()
    ptrs = [a.malloc(4 * MiB) for _ in range(5)]  # fills one 20 MiB segment exactly
    assert a.raw_allocs == 1
    for p in reversed(ptrs):
        a.free(p)
    assert a.malloc(19 * MiB) == ptrs[0]
    assert a.raw_allocs == 1


# ---------------------------------------------------------------- stats


def test_stats_and_peaks():
    a = make()
    assert a.stats() == dict(allocated=0, max_allocated=0, reserved=0, max_reserved=0)
    p = a.malloc(1000)
    q = a.malloc(3 * MiB)
    assert a.stats() == dict(allocated=1024 + 3 * MiB, max_allocated=1024 + 3 * MiB,
                             reserved=22 * MiB, max_reserved=22 * MiB)
    a.free(q)
    assert a.stats() == dict(allocated=1024, max_allocated=1024 + 3 * MiB, reserved=22 * MiB, max_reserved=22 * MiB)
    a.empty_cache()
    assert a.stats() == dict(allocated=1024, max_allocated=1024 + 3 * MiB, reserved=2 * MiB, max_reserved=22 * MiB)
    # Growing again, but below the peaks, leaves the peaks where they were.
    r = a.malloc(12 * MiB)
    assert a.stats() == dict(allocated=1024 + 12 * MiB, max_allocated=1024 + 12 * MiB,
                             reserved=14 * MiB, max_reserved=22 * MiB)
    a.free(r)
    a.malloc(MiB)
    assert a.stats() == dict(allocated=1024 + MiB, max_allocated=1024 + 12 * MiB,
                             reserved=14 * MiB, max_reserved=22 * MiB)
    a.reset_peak()
    assert a.stats() == dict(allocated=1024 + MiB, max_allocated=1024 + MiB, reserved=14 * MiB, max_reserved=14 * MiB)
    a.free(p)
    assert a.stats()["allocated"] == MiB and a.stats()["max_allocated"] == 1024 + MiB


def test_reuse_does_not_grow_reserved():
    a = make()
    for _ in range(10):
        a.free(a.malloc(5 * MiB))
    assert a.stats()["reserved"] == 20 * MiB and a.stats()["max_reserved"] == 20 * MiB
    assert a.stats()["max_allocated"] == 5 * MiB


# ---------------------------------------------------------------- empty_cache


def test_empty_cache_releases_only_wholly_free_segments():
    a = make()
    s = a.malloc(4096)          # small segment, live
    free_large = a.malloc(3 * MiB)
    live_large = a.malloc(30 * MiB)
    a.free(free_large)
    assert a.stats()["reserved"] == 2 * MiB + 20 * MiB + 30 * MiB
    a.empty_cache()
    assert a.raw_frees == 1 and a.before_release_calls == 1
    assert a.stats()["reserved"] == 32 * MiB
    assert a.raw_in_use == 32 * MiB
    assert a.block_size(s) == 4096 and a.block_size(live_large) == 30 * MiB
    a.free(s)
    a.free(live_large)
    a.empty_cache()
    assert a.raw_frees == 3 and a.before_release_calls == 2
    assert a.stats()["reserved"] == 0 and a.raw_in_use == 0


def test_empty_cache_waits_for_a_split_segment_to_merge_whole():
    a = make()
    x = a.malloc(4096)
    y = a.malloc(4096)
    a.free(x)
    a.empty_cache()
    assert a.raw_frees == 0 and a.stats()["reserved"] == 2 * MiB
    a.free(y)
    a.empty_cache()
    assert a.raw_frees == 1 and a.stats()["reserved"] == 0


def test_empty_cache_with_nothing_cached_releases_nothing():
    a = make()
    a.empty_cache()
    p = a.malloc(4096)
    a.empty_cache()
    assert a.raw_frees == 0 and a.before_release_calls == 0
    a.free(p)


# ---------------------------------------------------------------- out of memory


def test_oom_releases_cached_segments_and_retries():
    a = make(capacity=40 * MiB)
    q = a.malloc(12 * MiB)  # 12 MiB segment
    p = a.malloc(3 * MiB)  # 20 MiB segment
    a.free(p)
    a.free(q)
    assert a.raw_in_use == 32 * MiB
    r = a.malloc(30 * MiB)  # 32 + 30 > 40: the cache must go first
    assert a.raw_frees == 2 and a.before_release_calls == 1
    assert a.block_size(r) == 30 * MiB
    assert a.stats()["reserved"] == 30 * MiB and a.raw_in_use == 30 * MiB


def test_oom_keeps_segments_with_live_blocks():
    a = make(capacity=40 * MiB)
    live = a.malloc(MiB)            # 2 MiB small segment stays
    cached = a.malloc(16 * MiB)     # 16 MiB segment, freed below
    a.free(cached)
    r = a.malloc(30 * MiB)          # 18 + 30 > 40 -> release the 16 MiB one -> 2 + 30 fits
    assert a.raw_frees == 1
    assert a.block_size(live) == MiB and a.block_size(r) == 30 * MiB
    assert a.stats()["reserved"] == 32 * MiB


def test_out_of_memory_raises_runtime_error():
    a = make(capacity=40 * MiB)
    p = a.malloc(30 * MiB)
    with pytest.raises(RuntimeError, match="out of memory") as e:
        a.malloc(12 * MiB)
    msg = str(e.value)
    assert "CUDA out of memory. Tried to allocate 12.00 MiB" in msg
    assert "GPU 0" in msg and "30.00 MiB reserved" in msg and "30.00 MiB allocated" in msg
    # The allocator is still consistent afterwards.
    assert a.stats()["allocated"] == 30 * MiB and a.stats()["reserved"] == 30 * MiB
    a.free(p)
    assert a.malloc(12 * MiB) == p  # split from the cached 30 MiB block
    assert a.raw_allocs == 1


def test_out_of_memory_names_the_device():
    a = make(capacity=10 * MiB)
    with pytest.raises(RuntimeError, match=r"out of memory.*GPU 3"):
        a.malloc(20 * MiB, device=3)


# ---------------------------------------------------------------- misuse


def test_freeing_an_unknown_address_raises():
    a = make()
    p = a.malloc(4096)
    with pytest.raises(RuntimeError):
        a.free(p + 512)
    with pytest.raises(RuntimeError):
        a.free(12345)
    with pytest.raises(RuntimeError):
        a.block_size(p + 512)
    a.free(p)
    with pytest.raises(RuntimeError):
        a.free(p)  # double free
    assert a.stats()["allocated"] == 0


# ---------------------------------------------------------------- devices


def test_devices_are_independent():
    a = make(capacity=20 * MiB)  # per device
    p0 = a.malloc(3 * MiB, device=0)
    a.free(p0)
    p1 = a.malloc(3 * MiB, device=1)  # device 0's cached segment is not used for device 1
    assert a.raw_allocs == 2 and p1 != p0
    q1 = a.malloc(3 * MiB, device=1)  # and device 1 has its own capacity
    assert q1 == p1 + 3 * MiB
    assert a.stats(0)["allocated"] == 0 and a.stats(0)["reserved"] == 20 * MiB
    assert a.stats(1)["allocated"] == 6 * MiB and a.stats(1)["reserved"] == 20 * MiB
    # Device 1 out of memory does not release device 0's cache.
    with pytest.raises(RuntimeError, match="out of memory"):
        a.malloc(15 * MiB, device=1)
    assert a.raw_frees == 0 and a.stats(0)["reserved"] == 20 * MiB
    a.reset_peak(1)
    assert a.stats(0)["max_reserved"] == 20 * MiB and a.stats(0)["max_allocated"] == 3 * MiB
    assert a.malloc(3 * MiB, device=0) == p0


def test_concurrent_malloc_and_free_from_python_threads():
    a = make()
    errors = []

    def work(stream):
        try:
            for _ in range(300):
                ptrs = [a.malloc(n, stream=stream) for n in (700, 5000, 2 * MiB, 40000)]
                for p in ptrs:
                    a.free(p)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i % 4,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert a.stats()["allocated"] == 0
    a.empty_cache()
    assert a.stats()["reserved"] == 0 and a.raw_in_use == 0


def test_concurrent_malloc_and_free_from_cpp_threads():
    a = make(capacity=64 * GiB)  # host memory is only touched where stamped
    # 8 threads over 2 devices and 3 streams; no block may be handed out twice.
    assert a.hammer(threads=8, iterations=20000) == 0
    for device in (0, 1):
        assert a.stats(device)["allocated"] == 0
    a.empty_cache()
    assert a.stats(0)["reserved"] == 0 and a.stats(1)["reserved"] == 0 and a.raw_in_use == 0
