"""The CPU reduction engine over random layouts (property-based): every
element must be combined exactly once whatever the dims, strides, reduced
set, cascade depth or thread split. int64 sums and prods are exact, so any
element lost or counted twice shows; amax/all catch a wrong init or split."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ember

GRAIN = ember._C._thresholds()["grain_size"]


@st.composite
def layouts(draw):
    """Sizes, per-dim step (2: every other element), leading offset, dim order,
    an expanded dim, the dims to reduce, keepdim, thread count and a seed."""
    nd = draw(st.integers(1, 4))
    # Mostly small dims, with one large enough to cross the parallel and cascade thresholds.
    sizes = [draw(st.sampled_from([1, 2, 3, 5, 17, 33])) for _ in range(nd)]
    big = draw(st.integers(0, nd - 1))
    rest = int(np.prod(sizes)) // sizes[big]
    sizes[big] = draw(st.sampled_from([16, 17, 100, 257, 2 * GRAIN // rest + 3]))
    steps = [draw(st.sampled_from([1, 1, 2])) for _ in range(nd)]
    offset = draw(st.sampled_from([0, 1]))
    perm = draw(st.permutations(range(nd)))
    expand_dim = draw(st.sampled_from([None] + list(range(nd))))
    dims = sorted(draw(st.sets(st.integers(0, nd - 1), max_size=nd)))
    keepdim = draw(st.booleans())
    threads = draw(st.sampled_from([1, 2, 3]))
    seed = draw(st.integers(0, 2**31))
    return sizes, steps, offset, perm, expand_dim, dims, keepdim, threads, seed


def make(sizes, steps, offset, perm, expand_dim, seed):
    """The same strided, offset, expanded and permuted view in NumPy and ember."""
    nd = len(sizes)
    base_shape = [1 if d == expand_dim else sizes[d] * steps[d] + offset for d in range(nd)]
    base = np.random.default_rng(seed).integers(-3, 4, size=base_shape).astype(np.int64)
    t = ember.from_numpy(base)
    index = tuple(slice(None) if d == expand_dim else slice(offset, offset + sizes[d] * steps[d], steps[d])
                  for d in range(nd))
    a = base[index]
    for d in range(nd):
        if d != expand_dim:
            t = ember.slice(t, d, offset, offset + sizes[d] * steps[d], steps[d])
    if expand_dim is not None:
        a = np.broadcast_to(a, sizes)
        t = t.expand(sizes)
    return a.transpose(perm), t.permute(perm)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(layouts())
def test_reductions_exact_on_any_layout(case):
    sizes, steps, offset, perm, expand_dim, dims, keepdim, threads, seed = case
    a, t = make(sizes, steps, offset, perm, expand_dim, seed)
    assert tuple(t.shape) == a.shape
    np.testing.assert_array_equal(t.numpy(), a)
    axis = tuple(dims) if dims else None
    prev = ember.get_num_threads()
    ember.set_num_threads(threads)
    try:
        got = ember.sum(t, dims, keepdim) if dims else ember.sum(t)
        np.testing.assert_array_equal(got.numpy(), a.sum(axis=axis, keepdims=keepdim and bool(dims)))
        got = ember.amax(t, dims, keepdim)
        np.testing.assert_array_equal(got.numpy(), a.max(axis=axis, keepdims=keepdim) if a.size else got.numpy())
        f = t.double()
        got = ember.sum(f, dims, keepdim) if dims else ember.sum(f)
        np.testing.assert_allclose(got.numpy(), a.astype(np.float64).sum(axis=axis, keepdims=keepdim and bool(dims)))
        if len(dims) == 1:
            signs = (t > 0).long() * 2 - 1  # prod of +-1: exact, and any missed element flips the sign
            np.testing.assert_array_equal(ember.prod(signs, dims[0], keepdim).numpy(),
                                          np.where(a > 0, 1, -1).prod(axis=dims[0], keepdims=keepdim))
            np.testing.assert_array_equal(ember.all(t != 100, dims[0], keepdim).numpy(),
                                          np.ones_like(a, dtype=bool).all(axis=dims[0], keepdims=keepdim))
    finally:
        ember.set_num_threads(prev)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_cascade_boundaries(threads):
    # Reduced lengths around the cascade's group and level sizes, outer and middle dims.
    prev = ember.get_num_threads()
    ember.set_num_threads(threads)
    try:
        for n in (15, 16, 17, 255, 256, 257, 4095, 4096, 4097, 65537):
            for shape, dim in (((n, 3), 0), ((2, n, 3), 1), ((n, 1), 0), ((3, n), 1), ((n, 2, 5), (0, 2))):
                a = np.arange(np.prod(shape), dtype=np.int64).reshape(shape) % 7 - 3
                got = ember.sum(ember.from_numpy(a), dim)
                np.testing.assert_array_equal(got.numpy(), a.sum(axis=dim), err_msg=f"{shape} dim {dim}")
    finally:
        ember.set_num_threads(prev)
