"""The CPU allocator hands out 64-byte aligned blocks of every size (SIMD kernels
and NumPy interop assume it), small blocks by malloc with hand alignment."""
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
