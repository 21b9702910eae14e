"""Factories: zeros/ones/full/empty/arange/linspace/eye/rand/randn/randint, against NumPy."""
import numpy as np
import pytest

import ember


def np_(t):
    return np.array(t.detach().numpy())


@pytest.fixture
def default_float64():
    prev = ember.get_default_dtype()
    ember.set_default_dtype(ember.float64)
    yield
    ember.set_default_dtype(prev)


# ---------------------------------------------------------------- zeros / ones / full / empty

@pytest.mark.parametrize("fn,value", [(ember.zeros, 0), (ember.ones, 1)])
def test_zeros_ones(fn, value):
    t = fn(2, 3)
    assert tuple(t.shape) == (2, 3)
    assert t.dtype == ember.float32
    np.testing.assert_array_equal(np_(t), np.full((2, 3), value, dtype=np.float32))
    assert tuple(fn((4,)).shape) == (4,)
    assert tuple(fn([]).shape) == ()
    assert tuple(fn(0, 5).shape) == (0, 5)
    for dt, npdt in [(ember.int64, np.int64), (ember.bool, np.bool_), (ember.float64, np.float64),
                     (ember.uint8, np.uint8), (ember.float16, np.float16)]:
        t = fn(3, dtype=dt)
        assert t.dtype == dt
        np.testing.assert_array_equal(np_(t), np.full(3, value, dtype=npdt))


def test_full_dtype_inference():
    t = ember.full((2, 2), 7)
    assert t.dtype == ember.int64
    np.testing.assert_array_equal(np_(t), np.full((2, 2), 7))
    t = ember.full((3,), True)
    assert t.dtype == ember.bool
    assert np_(t).all()
    t = ember.full((3,), 2.5)
    assert t.dtype == ember.float32
    np.testing.assert_array_equal(np_(t), np.full(3, 2.5, dtype=np.float32))
    t = ember.full((2,), 3, dtype=ember.float64)
    assert t.dtype == ember.float64
    np.testing.assert_array_equal(np_(t), [3.0, 3.0])
    t = ember.full((2,), -1.5, dtype=ember.int32)
    np.testing.assert_array_equal(np_(t), [-1, -1])


def test_default_dtype_followed(default_float64):
    assert ember.zeros(2).dtype == ember.float64
    assert ember.ones(2).dtype == ember.float64
    assert ember.full((2,), 1.5).dtype == ember.float64
    assert ember.arange(0, 1, 0.5).dtype == ember.float64
    assert ember.linspace(0, 1, 3).dtype == ember.float64
    assert ember.eye(2).dtype == ember.float64
    assert ember.rand(2).dtype == ember.float64
    assert ember.randn(2).dtype == ember.float64
    assert ember.empty(2).dtype == ember.float64
    assert ember.arange(3).dtype == ember.int64


def test_empty():
    t = ember.empty(3, 4)
    assert tuple(t.shape) == (3, 4)
    assert t.dtype == ember.float32
    assert t.is_contiguous()
    t = ember.empty((2, 0), dtype=ember.int16)
    assert t.dtype == ember.int16 and t.numel() == 0


def test_negative_size():
    with pytest.raises(RuntimeError, match="negative dimension"):
        ember.zeros(2, -1)


def test_requires_grad():
    for fn in [lambda **k: ember.zeros(2, 3, **k), lambda **k: ember.ones(3, **k), lambda **k: ember.empty(3, **k),
               lambda **k: ember.full((2,), 1.5, **k), lambda **k: ember.rand(4, **k),
               lambda **k: ember.randn(4, **k), lambda **k: ember.arange(0.0, 3.0, **k),
               lambda **k: ember.linspace(0, 1, 5, **k), lambda **k: ember.eye(3, **k)]:
        t = fn(requires_grad=True)
        assert t.requires_grad and t.is_leaf
        assert not fn().requires_grad
    x = ember.ones(3, requires_grad=True)
    (x * 2).sum().backward()
    np.testing.assert_array_equal(np_(x.grad), [2, 2, 2])
    with pytest.raises(RuntimeError, match="floating point"):
        ember.zeros(2, dtype=ember.int64, requires_grad=True)


def test_like_factories():
    x = ember.ones(2, 3, dtype=ember.float64)
    for fn in [ember.zeros_like, ember.ones_like, ember.empty_like, ember.rand_like, ember.randn_like]:
        t = fn(x)
        assert tuple(t.shape) == (2, 3) and t.dtype == ember.float64
    np.testing.assert_array_equal(np_(ember.zeros_like(x)), np.zeros((2, 3)))
    np.testing.assert_array_equal(np_(ember.full_like(x, 4)), np.full((2, 3), 4.0))
    r = ember.randint_like(ember.zeros(100, dtype=ember.int64), 3, 6)
    assert r.dtype == ember.int64 and np_(r).min() >= 3 and np_(r).max() < 6


# ---------------------------------------------------------------- arange

@pytest.mark.parametrize("args,expect_dtype", [
    ((5,), ember.int64), ((1, 4), ember.int64), ((10, 0, -3), ember.int64), ((0, 10, 3), ember.int64),
    ((5.0,), ember.float32), ((0, 1, 0.1), ember.float32), ((1.5, -2.0, -0.5), ember.float32),
    ((0, 5, 1.5), ember.float32), ((-3, 3), ember.int64), ((2, 2), ember.int64),
])
def test_arange(args, expect_dtype):
    t = ember.arange(*args)
    assert t.dtype == expect_dtype
    ref = np.arange(*args)
    assert tuple(t.shape) == ref.shape
    np.testing.assert_allclose(np_(t), ref, rtol=1e-6, atol=1e-6)


def test_arange_dtype_and_keywords():
    t = ember.arange(5, dtype=ember.float64)
    assert t.dtype == ember.float64
    np.testing.assert_array_equal(np_(t), np.arange(5.0))
    t = ember.arange(0, 10, 2, dtype=ember.int32)
    assert t.dtype == ember.int32
    np.testing.assert_array_equal(np_(t), np.arange(0, 10, 2))
    t = ember.arange(start=1, end=7, step=2)
    np.testing.assert_array_equal(np_(t), [1, 3, 5])
    t = ember.arange(0, 1, 0.25, dtype=ember.float16)
    np.testing.assert_array_equal(np_(t).astype(np.float32), [0, 0.25, 0.5, 0.75])
    # An integral dtype truncates the bounds and step first, like PyTorch.
    t = ember.arange(0.5, 5.5, 2.0, dtype=ember.int64)
    np.testing.assert_array_equal(np_(t), [0, 2, 4])


def test_arange_errors():
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        ember.arange(0, 5, 0)
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        ember.arange(0.0, 5.0, 0.0)
    with pytest.raises(RuntimeError, match="upper bound and larger bound inconsistent with step sign"):
        ember.arange(0, 5, -1)
    with pytest.raises(RuntimeError, match="upper bound and larger bound inconsistent with step sign"):
        ember.arange(5.0, 0.0, 0.5)


def test_arange_large_parallel():
    n = 200_000
    np.testing.assert_array_equal(np_(ember.arange(n)), np.arange(n))
    np.testing.assert_allclose(np_(ember.arange(0, n, 1.0, dtype=ember.float64)), np.arange(0, n, 1.0))


# ---------------------------------------------------------------- linspace

@pytest.mark.parametrize("start,end,steps", [(0, 1, 5), (-2, 3.5, 12), (1, 1, 4), (3, -3, 7), (0, 1, 1),
                                             (0, 1, 0), (2.5, 10, 2)])
def test_linspace(start, end, steps):
    t = ember.linspace(start, end, steps)
    assert t.dtype == ember.float32
    ref = np.linspace(start, end, steps, dtype=np.float64)
    assert tuple(t.shape) == ref.shape
    np.testing.assert_allclose(np_(t), ref, rtol=1e-6, atol=1e-6)
    if steps >= 2:
        assert np_(t)[0] == np.float32(start) and np_(t)[-1] == np.float32(end)


def test_linspace_dtypes():
    t = ember.linspace(0, 1, 11, dtype=ember.float64)
    assert t.dtype == ember.float64
    np.testing.assert_allclose(np_(t), np.linspace(0, 1, 11), rtol=1e-15)
    t = ember.linspace(0, 10, 4, dtype=ember.int64)
    assert t.dtype == ember.int64
    np.testing.assert_array_equal(np_(t), [0, 3, 6, 10])
    t = ember.linspace(-5, 5, 6, dtype=ember.int32)
    np.testing.assert_array_equal(np_(t), np.linspace(-5, 5, 6).astype(np.int32))
    with pytest.raises(RuntimeError, match="number of steps must be non-negative"):
        ember.linspace(0, 1, -1)


# ---------------------------------------------------------------- eye

@pytest.mark.parametrize("args", [(3,), (2, 4), (4, 2), (0,), (1,), (3, 0)])
def test_eye(args):
    t = ember.eye(*args)
    assert t.dtype == ember.float32
    np.testing.assert_array_equal(np_(t), np.eye(*args, dtype=np.float32))


def test_eye_dtype_and_errors():
    t = ember.eye(3, dtype=ember.int64)
    assert t.dtype == ember.int64
    np.testing.assert_array_equal(np_(t), np.eye(3, dtype=np.int64))
    t = ember.eye(2, 3, dtype=ember.bool)
    np.testing.assert_array_equal(np_(t), np.eye(2, 3, dtype=np.bool_))
    t = ember.eye(3, m=5)
    assert tuple(t.shape) == (3, 5)
    with pytest.raises(RuntimeError, match="n must be greater or equal to 0, got -1"):
        ember.eye(-1)
    with pytest.raises(RuntimeError, match="m must be greater or equal to 0, got -2"):
        ember.eye(2, -2)


# ---------------------------------------------------------------- rand / randn / randint

@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.float16, ember.bfloat16])
def test_rand(dtype):
    ember.manual_seed(1)
    t = ember.rand(100_000, dtype=dtype)
    assert t.dtype == dtype and tuple(t.shape) == (100_000,)
    a = np_(t.float())
    assert a.min() >= 0 and a.max() < 1
    assert abs(a.mean() - 0.5) < 0.01
    assert abs(a.var() - 1 / 12) < 0.01
    # Not degenerate: many distinct values.
    assert len(np.unique(a)) > (100 if dtype in (ember.float16, ember.bfloat16) else 50_000)


def test_rand_shapes_and_default_dtype():
    t = ember.rand(2, 3, 4)
    assert t.dtype == ember.float32 and tuple(t.shape) == (2, 3, 4)
    assert tuple(ember.rand((5,)).shape) == (5,)
    assert tuple(ember.rand(0, 3).shape) == (0, 3)
    assert ember.rand([]).dim() == 0


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.float16])
def test_randn(dtype):
    ember.manual_seed(2)
    t = ember.randn(200_001, dtype=dtype)
    assert t.dtype == dtype
    a = np_(t).astype(np.float64)
    assert np.isfinite(a).all()
    assert abs(a.mean()) < 0.01
    assert abs(a.std() - 1) < 0.01
    # Roughly normal tails: about 4.55% beyond 2 sigma.
    assert abs((np.abs(a) > 2).mean() - 0.0455) < 0.005
    assert ember.randn(3, 4).dtype == ember.float32


def test_rand_integer_dtype_errors():
    with pytest.raises(RuntimeError, match="\"check_uniform_bounds\" not implemented for 'Long'"):
        ember.rand(3, dtype=ember.int64)
    with pytest.raises(RuntimeError, match="not implemented for 'Int'"):
        ember.randn(3, dtype=ember.int32)


def test_manual_seed_reproducible():
    for fn in [lambda: ember.rand(1000), lambda: ember.randn(1001), lambda: ember.randint(0, 100, (999,)),
               lambda: ember.rand(7, dtype=ember.float64), lambda: ember.randn(5, dtype=ember.float64)]:
        ember.manual_seed(1234)
        a = np_(fn())
        b = np_(fn())
        ember.manual_seed(1234)
        c = np_(fn())
        d = np_(fn())
        np.testing.assert_array_equal(a, c)
        np.testing.assert_array_equal(b, d)
        assert not np.array_equal(a, b)
    ember.manual_seed(5)
    x = np_(ember.rand(100))
    ember.manual_seed(6)
    y = np_(ember.rand(100))
    assert not np.array_equal(x, y)


def test_split_work_does_not_change_values():
    # Counter-based: the values depend on (seed, offset) only, not on the thread split.
    ember.manual_seed(9)
    big = np_(ember.rand(300_000))
    ember.manual_seed(9)
    prev = ember.get_num_threads()
    try:
        ember.set_num_threads(1)
        small = np_(ember.rand(300_000))
    finally:
        ember.set_num_threads(prev)
    np.testing.assert_array_equal(big, small)


def test_generator_argument():
    g = ember.Generator().manual_seed(42)
    a = np_(ember.rand(50, generator=g))
    g2 = ember.Generator()
    g2.manual_seed(42)
    b = np_(ember.rand(50, generator=g2))
    np.testing.assert_array_equal(a, b)
    # The default generator is not advanced by a private one.
    ember.manual_seed(3)
    x = np_(ember.rand(10))
    ember.manual_seed(3)
    ember.rand(10, generator=ember.Generator().manual_seed(0))
    y = np_(ember.rand(10))
    np.testing.assert_array_equal(x, y)


def test_randint():
    ember.manual_seed(0)
    t = ember.randint(3, 10, (10_000,))
    assert t.dtype == ember.int64
    a = np_(t)
    assert a.min() == 3 and a.max() == 9
    assert set(np.unique(a)) == set(range(3, 10))
    t = ember.randint(5, (2, 3))
    assert tuple(t.shape) == (2, 3) and np_(t).min() >= 0 and np_(t).max() < 5
    t = ember.randint(-4, 4, (1000,), dtype=ember.int8)
    assert t.dtype == ember.int8 and np_(t).min() >= -4 and np_(t).max() < 4
    t = ember.randint(0, 10, (100,), dtype=ember.float32)
    a = np_(t)
    assert t.dtype == ember.float32 and np.array_equal(a, np.floor(a)) and a.min() >= 0 and a.max() < 10
    big = np_(ember.randint(0, 2 ** 40, (1000,)))
    assert big.min() >= 0 and big.max() < 2 ** 40 and big.max() > 2 ** 33
    neg = np_(ember.randint(-2 ** 62, 2 ** 62, (1000,)))
    assert (neg < 0).any() and (neg > 0).any()


def test_randint_errors():
    with pytest.raises(RuntimeError, match="random_ expects 'from' to be less than 'to', but got from=5 >= to=5"):
        ember.randint(5, 5, (3,))
    with pytest.raises(RuntimeError, match="from=0 >= to=0"):
        ember.randint(0, (3,))


def test_cuda_device_argument():
    factories = [lambda d: ember.zeros(2, device=d), lambda d: ember.ones(2, device=d),
                 lambda d: ember.full((2,), 1.0, device=d), lambda d: ember.empty(2, device=d),
                 lambda d: ember.arange(3, device=d), lambda d: ember.linspace(0, 1, 3, device=d),
                 lambda d: ember.eye(2, device=d), lambda d: ember.rand(2, device=d),
                 lambda d: ember.randn(2, device=d), lambda d: ember.randint(0, 3, (2,), device=d)]
    for fn in factories:
        assert fn("cpu").device.type == "cpu"
        assert fn(ember.device("cpu")).device.type == "cpu"
        if ember.cuda.is_available():
            assert fn("cuda").device.type == "cuda"
        else:
            with pytest.raises(RuntimeError, match="CUDA is not available"):
                fn("cuda")
    x = ember.ones(2)
    if not ember.cuda.is_available():
        with pytest.raises(RuntimeError, match=r"to\(\): CUDA is not available"):
            x.to("cuda")
