"""torch.* composites and factories written in Python (ember/_composites.py, _quantile.py,
_factories.py, _legacy_linalg.py, _runtime_flags.py): against NumPy always, against PyTorch when installed,
with non-contiguous inputs and float64 gradchecks."""
import warnings

import numpy as np
import pytest

import ember

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
RNG = np.random.default_rng(0)


def arr(*shape, dtype=np.float64):
    return RNG.standard_normal(shape).astype(dtype)


def t(a, requires_grad=False):
    return ember.tensor(a, requires_grad=requires_grad)


def noncontig(a):
    """An ember tensor equal to a whose layout is transposed (2+ dims) or strided (1-D)."""
    if a.ndim >= 2:
        return ember.tensor(np.ascontiguousarray(np.swapaxes(a, -1, -2))).transpose(-1, -2)
    return ember.tensor(np.repeat(a, 2))[::2]


def close(x, expected, **kw):
    np.testing.assert_allclose(x.detach().numpy(), expected, **kw)


def gradcheck(fn, *arrays):
    inputs = [ember.tensor(a, requires_grad=True) for a in arrays]
    assert ember.autograd.gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3)


def test_inner_vdot_ravel():
    a, b = arr(2, 3), arr(4, 3)
    for x in (t(a), noncontig(a)):
        close(ember.inner(x, noncontig(b)), np.inner(a, b), rtol=1e-12)
        close(x.ravel(), a.ravel())
    close(ember.inner(t(np.float64(2.0)), t(a)), 2 * a)
    v, w = arr(5), arr(5)
    close(ember.vdot(noncontig(v), t(w)), np.vdot(v, w), rtol=1e-12)
    with pytest.raises(RuntimeError, match=r"inner\(\) the last dimension must match"):
        ember.inner(t(a), t(arr(4)))
    with pytest.raises(RuntimeError, match="1D tensors expected, but got 2D and 1D tensors"):
        ember.vdot(t(a), t(v))
    gradcheck(ember.inner, a, b)
    gradcheck(ember.vdot, v, w)
    contiguous = t(a)
    assert ember.ravel(contiguous).data_ptr() == contiguous.data_ptr()  # a view when the layout allows, as torch's


def test_splits_and_stacks():
    a = np.arange(24.0).reshape(2, 3, 4)
    x = t(a)
    for got, exp in zip(ember.dsplit(x, 2), np.dsplit(a, 2)):
        close(got, exp)
    for got, exp in zip(ember.vsplit(x, [1]), np.vsplit(a, [1])):
        close(got, exp)
    for got, exp in zip(x.hsplit([1, 2]), np.hsplit(a, [1, 2])):
        close(got, exp)
    for got, exp in zip(ember.hsplit(t(np.arange(6.0)), 3), np.hsplit(np.arange(6.0), 3)):
        close(got, exp)
    with pytest.raises(RuntimeError, match="torch.dsplit attempted to split along dimension 2, but the size of the "
                                           "dimension 4 is not divisible by the split_size 3!"):
        ember.dsplit(x, 3)
    with pytest.raises(RuntimeError, match="torch.vsplit requires a tensor with at least 2 dimension"):
        ember.vsplit(t(np.arange(4.0)), 2)
    close(ember.column_stack([t(np.float64(1.0)).expand(3), noncontig(np.ones((3, 2)))]),
          np.column_stack([np.ones(3), np.ones((3, 2))]))
    close(ember.column_stack([t(np.arange(3.0)), t(np.arange(3.0))]), np.column_stack([np.arange(3.0)] * 2))
    d = arr(2, 2)
    close(ember.diagflat(noncontig(d), 1), np.diagflat(d, 1))
    close(t(d).diagflat(-2), np.diagflat(d, -2))
    gradcheck(lambda y: ember.column_stack([y, y]), arr(3))


def test_block_diag():
    a, b, c = arr(2, 3), arr(1), np.float64(4.0)
    expected = np.zeros((4, 5))
    expected[:2, :3] = a
    expected[2, 3] = b[0]
    expected[3, 4] = c
    close(ember.block_diag(noncontig(a), t(b), t(c)), expected)
    mixed = ember.block_diag(ember.tensor([[1, 2]]), ember.tensor([0.5]))
    assert mixed.dtype == ember.float32 and mixed.tolist() == [[1, 2, 0], [0, 0, 0.5]]
    assert ember.block_diag().shape == (1, 0)
    with pytest.raises(RuntimeError, match="Input tensors must have 2 or fewer dimensions. Input 1 has 3 dimensions"):
        ember.block_diag(t(a), t(arr(1, 1, 1)))
    gradcheck(lambda x, y: ember.block_diag(x, y), a, arr(2, 2))


def test_broadcast_shapes():
    assert ember.broadcast_shapes((2, 1), (3,), 1) == ember.Size([2, 3])
    assert ember.broadcast_shapes() == ember.Size([])
    assert ember.broadcast_shapes((0, 1), (4,)) == (0, 4)
    assert ember.broadcast_shapes((5, 1, 3), (4, 1)) == np.broadcast_shapes((5, 1, 3), (4, 1))
    with pytest.raises(RuntimeError, match="Attempting to broadcast a dimension of length 3 at -1!"):
        ember.broadcast_shapes((2,), (3,))
    with pytest.raises(ValueError, match="negative length"):
        ember.broadcast_shapes((-1,))


@pytest.mark.parametrize("correction", [0, 1, 2])
def test_cov_corrcoef(correction):
    a = arr(3, 6)
    fw = RNG.integers(1, 4, 6)
    aw = RNG.uniform(0.5, 2, 6)
    close(ember.cov(noncontig(a), correction=correction), np.cov(a, ddof=correction), rtol=1e-12)
    close(ember.cov(t(a), correction=correction, fweights=ember.tensor(fw), aweights=t(aw)),
          np.cov(a, ddof=correction, fweights=fw, aweights=aw), rtol=1e-12)
    close(t(a).corrcoef(), np.corrcoef(a), rtol=1e-12)
    close(ember.cov(ember.tensor([1, 2, 4])), np.cov([1, 2, 4]), rtol=1e-6)
    gradcheck(lambda x: ember.cov(x, correction=correction), a)
    gradcheck(ember.corrcoef, a)
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
        assert ember.cov(t(arr(3)), correction=3).item() == float("inf")


def test_trapezoid():
    y, x = arr(3, 5), np.sort(arr(5))
    close(ember.trapezoid(noncontig(y), t(x)), np.trapezoid(y, x), rtol=1e-12)
    close(ember.trapezoid(t(y), dx=0.5, dim=0), np.trapezoid(y, dx=0.5, axis=0), rtol=1e-12)
    xs = np.sort(arr(3, 5), axis=1)
    close(ember.trapz(t(y), t(xs)), np.trapezoid(y, xs), rtol=1e-12)
    cum = ember.cumulative_trapezoid(t(y), t(x))
    expected = np.cumsum((y[:, 1:] + y[:, :-1]) * np.diff(x) / 2, axis=1)
    close(cum, expected, rtol=1e-12)
    assert ember.trapezoid(ember.tensor([1, 2, 3])).item() == 4.0
    assert ember.trapezoid(ember.ones(2, 0)).tolist() == [0.0, 0.0]
    with pytest.raises(RuntimeError, match="There must be one `x` value for each sample point"):
        ember.trapezoid(t(y), t(arr(4)))
    gradcheck(lambda a, b: ember.trapezoid(a, b), y, x)
    gradcheck(lambda a: ember.cumulative_trapezoid(a, dx=2.0), y)


def test_vander():
    x = np.array([1.0, 2.0, -3.0, 0.5])
    close(ember.vander(noncontig(x)), np.vander(x))
    close(ember.vander(t(x), N=3, increasing=True), np.vander(x, 3, increasing=True))
    ints = ember.vander(ember.tensor([1, 2, 3]), N=0)
    assert ints.shape == (3, 0) and ints.dtype == ember.int64
    assert ember.vander(ember.tensor([True, False])).tolist() == [[1, 1], [0, 1]]
    with pytest.raises(RuntimeError, match="x must be a one-dimensional tensor."):
        ember.vander(ember.ones(2, 2))
    with pytest.raises(RuntimeError, match="N must be non-negative."):
        ember.vander(ember.ones(2), N=-1)
    gradcheck(lambda a: ember.vander(a, 4), x)


def test_unravel_index_and_isin():
    idx = np.array([5, 13, -1, 0])
    for got, exp in zip(ember.unravel_index(ember.tensor(idx), (3, 5)), np.unravel_index(idx % 15, (3, 5))):
        assert got.tolist() == exp.tolist()
    assert ember.unravel_index(ember.tensor(1), ()) == ()
    with pytest.raises(TypeError, match="expected 'indices' to be integer dtype"):
        ember.unravel_index(ember.tensor(1.0), (3,))
    with pytest.raises(ValueError, match="'shape' cannot have negative values"):
        ember.unravel_index(ember.tensor(1), (3, -4))
    # As torch: indices wrap modulo the size (no bounds check).
    assert [c.item() for c in ember.unravel_index(ember.tensor(-16), (3, 5))] == [2, 4]
    e, pool = RNG.integers(0, 10, (4, 5)), RNG.integers(0, 10, 6)
    assert ember.isin(ember.tensor(e).t(), ember.tensor(pool)).tolist() == np.isin(e.T, pool).tolist()
    inverted = ember.isin(ember.tensor(e), ember.tensor(pool), invert=True)
    assert inverted.tolist() == np.isin(e, pool, invert=True).tolist()
    assert ember.isin(ember.tensor([1, 2, 3]), 2).tolist() == [False, True, False]
    assert ember.isin(3, ember.tensor([1, 2, 3])).item() is True
    assert ember.isin(ember.tensor([1.0, float("nan")]), ember.tensor([1, 2])).tolist() == [True, False]
    assert ember.isin(ember.tensor([1.0]), ember.tensor([])).tolist() == [False]


def test_chain_matmul_addr_renorm():
    m = [arr(2, 3), arr(3, 4), arr(4, 2)]
    with pytest.warns(UserWarning, match="chain_matmul is deprecated"):
        close(ember.chain_matmul(*[noncontig(a) for a in m]), m[0] @ m[1] @ m[2], rtol=1e-12)
    inp, v1, v2 = arr(3, 4), arr(3), arr(4)
    close(ember.addr(noncontig(inp), t(v1), noncontig(v2), beta=0.5, alpha=2), 0.5 * inp + 2 * np.outer(v1, v2))
    nan = t(np.full((3, 4), np.nan))
    close(ember.addr(nan, t(v1), t(v2), beta=0), np.outer(v1, v2))
    ints = ember.addr(ember.ones(2, 2, dtype=ember.int64), ember.ones(2, dtype=ember.int64),
                      ember.ones(2, dtype=ember.int64), beta=2, alpha=3)
    assert ints.tolist() == [[5, 5], [5, 5]] and ints.dtype == ember.int64
    with pytest.raises(RuntimeError, match="argument alpha must not be a floating point number"):
        ember.addr(ember.ones(2, 2, dtype=ember.int64), ember.ones(2, dtype=ember.int64),
                   ember.ones(2, dtype=ember.int64), alpha=0.5)
    y = t(inp.copy())
    y.addr_(t(v1), t(v2))
    close(y, inp + np.outer(v1, v2))
    gradcheck(lambda a, b, c: ember.addr(a, b, c, beta=0.5, alpha=2), inp, v1, v2)

    x = arr(3, 4) * 3
    norms = np.linalg.norm(x, 2, axis=1, keepdims=True)
    expected = np.where(norms > 1.5, x * 1.5 / (norms + 1e-7), x)
    close(ember.renorm(noncontig(x), 2, 0, 1.5), expected, rtol=1e-12)
    z = t(x.copy())
    z.renorm_(2, 0, 1.5)
    close(z, expected, rtol=1e-12)
    with pytest.raises(RuntimeError, match="renorm: non-positive-norm not supported"):
        ember.renorm(t(x), 0, 0, 1)
    with pytest.raises(RuntimeError, match="renorm: expected maxnorm to be >= 0 but got -1"):
        ember.renorm(t(x), 1, 0, -1)
    gradcheck(lambda a: ember.renorm(a, 2, 1, 1.0), x)


@pytest.mark.filterwarnings("ignore:All-NaN slice")  # NumPy's, for the reference's all-NaN row
@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_quantile(interpolation):
    a = arr(4, 7)
    q = np.array([0.0, 0.25, 0.5, 0.9, 1.0])
    close(ember.quantile(noncontig(a), t(q), dim=1, interpolation=interpolation),
          np.quantile(a, q, axis=1, method=interpolation), rtol=1e-12)
    close(t(a).quantile(0.3, dim=0, keepdim=True, interpolation=interpolation),
          np.quantile(a, 0.3, axis=0, keepdims=True, method=interpolation), rtol=1e-12)
    close(ember.quantile(t(a), 0.6, interpolation=interpolation), np.quantile(a, 0.6, method=interpolation),
          rtol=1e-12)
    b = a.copy()
    b[0, 2] = b[2, :] = np.nan
    close(ember.nanquantile(t(b), t(q), dim=1, interpolation=interpolation),
          np.nanquantile(b, q, axis=1, method=interpolation), rtol=1e-12)
    got = ember.quantile(t(b), 0.5, dim=1).numpy()
    assert np.isnan(got[0]) and np.isnan(got[2]) and not np.isnan(got[1])
    if interpolation == "linear":
        gradcheck(lambda x: ember.quantile(x, ember.tensor([0.2, 0.7], dtype=ember.float64), dim=1), a)


def test_quantile_errors():
    x = ember.tensor([1.0, 2.0])
    for call, message in [(lambda: ember.quantile(ember.tensor([1, 2]), 0.5), "input tensor must be either float"),
                          (lambda: ember.quantile(x, 1.5), r"q must be in the range \[0, 1\] but got 1.5"),
                          (lambda: ember.quantile(x, ember.tensor([[0.5]])), "q must be a scalar or 1D tensor"),
                          (lambda: ember.quantile(ember.tensor([]), 0.5), "input tensor must be non-empty"),
                          (lambda: ember.quantile(x, ember.tensor(0.5, dtype=ember.float64)), "same dtype"),
                          (lambda: ember.quantile(x, 0.5, interpolation="cubic"), "but got cubic")]:
        with pytest.raises(RuntimeError, match=message):
            call()


def _np_window(name, n, periodic, **kw):
    if n == 1:
        return np.ones(1)
    m = n + 1 if periodic else n
    k = np.arange(m)
    values = {"hann": lambda: 0.5 - 0.5 * np.cos(2 * np.pi * k / (m - 1)),
              "hamming": lambda: np.hamming(m), "blackman": lambda: np.blackman(m), "bartlett": lambda: np.bartlett(m),
              "kaiser": lambda: np.kaiser(m, kw.get("beta", 12.0))}[name]()
    return values[:n]


@pytest.mark.parametrize("name", ["hann", "hamming", "blackman", "bartlett", "kaiser"])
@pytest.mark.parametrize("periodic", [True, False])
def test_windows(name, periodic):
    fn = getattr(ember, f"{name}_window")
    for n in (1, 2, 5, 16):
        w = fn(n, periodic, dtype=ember.float64)
        close(w, _np_window(name, n, periodic), atol=1e-12)
        assert fn(n, periodic).dtype == ember.float32
    assert fn(0).shape == (0,)
    if torch is not None:
        close(fn(9, periodic), getattr(torch, f"{name}_window")(9, periodic).numpy(), atol=1e-6)
    with pytest.raises(RuntimeError, match=f"{name}_window expects floating point dtypes"):
        fn(4, dtype=ember.int64)
    with pytest.raises(RuntimeError, match=f"{name}_window requires non-negative window_length"):
        fn(-1)
    close(ember.kaiser_window(7, False, beta=5.0, dtype=ember.float64), np.kaiser(7, 5.0), atol=1e-12)


def test_factories():
    assert ember.logspace(0, 2, 3, dtype=ember.int64).tolist() == [1, 10, 100]
    close(ember.logspace(0, 2, 5, base=2), np.logspace(0, 2, 5, base=2), rtol=1e-6)
    with pytest.warns(UserWarning, match="torch.range is deprecated"):
        r = ember.range(0, 1, 0.3)
    close(r, [0.0, 0.3, 0.6, 0.9], rtol=1e-6)
    assert r.dtype == ember.float32
    with pytest.warns(UserWarning), pytest.raises(RuntimeError, match="upper bound and lower bound inconsistent"):
        ember.range(0, -1)
    assert ember.scalar_tensor(3).dtype == ember.float32 and ember.scalar_tensor(True).item() == 1.0
    s = ember.empty_strided((2, 3), (1, 2), dtype=ember.int64)
    assert s.stride() == (1, 2) and s.dtype == ember.int64 and s._base is None
    assert ember.empty_permuted((2, 3, 4), (0, 2, 1)).stride() == (12, 1, 3)
    with pytest.raises(RuntimeError, match="len\\(size\\) = 3 is not equal to len\\(physical_layout\\) = 2"):
        ember.empty_permuted((2, 3, 4), (0, 2))
    assert ember.ones(2).new_empty_strided((2, 2), (1, 2)).stride() == (1, 2)
    buf = bytearray(np.arange(4, dtype=np.int16).tobytes())
    fb = ember.frombuffer(buf, dtype=ember.int16, count=2, offset=2)
    assert fb.tolist() == [1, 2]
    buf[2] = 9  # shares the buffer's memory
    assert fb[0].item() == 9
    with pytest.raises(ValueError, match="must be a multiple of element size"):
        ember.frombuffer(b"abc", dtype=ember.int16)
    with pytest.raises(ValueError, match="both buffer length \\(0\\) and count \\(-1\\) must not be 0"):
        ember.frombuffer(bytearray(0), dtype=ember.int16)
    a = np.arange(3)
    shared = ember.asarray(a)
    a[0] = 7
    assert shared.dtype == ember.int64 and shared[0].item() == 7
    assert ember.asarray(a, copy=True).data_ptr() != shared.data_ptr()
    x = ember.ones(2)
    assert ember.asarray(x) is x or ember.asarray(x).data_ptr() == x.data_ptr()
    assert ember.asarray(x, dtype=ember.int64).tolist() == [1, 1]
    assert ember.asarray([1, 2.0]).dtype == ember.float32


def test_legacy_linalg():
    a = arr(4, 3)
    U, S, V = ember.svd(noncontig(a))
    assert U.shape == (4, 3) and V.shape == (3, 3)
    close(U @ ember.diag(S) @ V.t(), a, atol=1e-12)
    U, S, V = ember.svd(t(a), some=False)
    assert U.shape == (4, 4) and V.shape == (3, 3)
    U, S, V = t(a).svd(compute_uv=False)
    assert U.abs().sum().item() == 0 and V.shape == (3, 3)
    close(S, np.linalg.svd(a, compute_uv=False), rtol=1e-12)
    with pytest.warns(UserWarning, match="torch.qr is deprecated"):
        Q, R = ember.qr(t(a), some=False)
    assert Q.shape == (4, 4) and R.shape == (4, 3)
    close(Q @ R, a, atol=1e-12)
    spd = a.T @ a + 3 * np.eye(3)
    L = np.linalg.cholesky(spd)
    B = arr(3, 2)
    close(ember.cholesky_solve(noncontig(B), t(L)), np.linalg.solve(spd, B), rtol=1e-10)
    close(ember.cholesky_solve(t(B), t(L.T.copy()), upper=True), np.linalg.solve(spd, B), rtol=1e-10)
    close(ember.cholesky_inverse(t(L)), np.linalg.inv(spd), rtol=1e-10)
    with pytest.warns(UserWarning, match="triangular_solve is deprecated"):
        sol, coef = ember.triangular_solve(t(B), t(spd), upper=False)
    close(sol, np.linalg.solve(np.tril(spd), B), rtol=1e-10)
    close(coef, spd)
    with pytest.warns(UserWarning):
        sol = ember.triangular_solve(t(B), t(spd), upper=True, transpose=True, unitriangular=True).solution
    unit = np.triu(spd, 1) + np.eye(3)
    close(sol, np.linalg.solve(unit.T, B), rtol=1e-10)
    gradcheck(lambda b, l: ember.cholesky_solve(b, l), B, L)
    m = arr(3, 3)
    import scipy.linalg
    close(ember.matrix_exp(noncontig(m)), scipy.linalg.expm(m), rtol=1e-12)
    close(t(m * 10).matrix_exp(), scipy.linalg.expm(m * 10), rtol=1e-10)
    close(ember.matrix_exp(t(np.stack([m, -m]))), np.stack([scipy.linalg.expm(m), scipy.linalg.expm(-m)]), rtol=1e-12)
    gradcheck(ember.matrix_exp, m)
    for name in ("solve", "lstsq", "eig", "symeig"):
        with pytest.raises(RuntimeError, match="This function was deprecated since version 1.9 and is now removed"):
            getattr(ember, name)(t(spd), t(B))


def test_runtime_flags_and_printoptions():
    assert not ember.are_deterministic_algorithms_enabled()
    ember.use_deterministic_algorithms(True, warn_only=True)
    try:
        assert ember.are_deterministic_algorithms_enabled() and ember.is_deterministic_algorithms_warn_only_enabled()
        assert ember.get_deterministic_debug_mode() == 1
        ember.set_deterministic_debug_mode("error")
        assert ember.get_deterministic_debug_mode() == 2
        with pytest.raises(RuntimeError, match="invalid value of debug_mode"):
            ember.set_deterministic_debug_mode("x")
        with pytest.raises(TypeError, match="must be bool, not int"):
            ember.use_deterministic_algorithms(1)
    finally:
        ember.use_deterministic_algorithms(False)
    assert ember.get_num_interop_threads() >= 1
    with pytest.raises(RuntimeError, match="expects a positive integer"):
        ember.set_num_interop_threads(0)
    assert ember.set_flush_denormal(False) is False
    s = ember.seed()
    assert ember.initial_seed() == s
    assert ember.can_cast(ember.int64, ember.uint8) and not ember.can_cast(ember.float32, ember.int64)
    assert ember.can_cast(ember.bool, ember.float16) and not ember.can_cast(ember.int32, ember.bool)
    try:
        ember.set_printoptions(profile="short")
        assert repr(ember.tensor([1.23456])) == "tensor([1.23])"
        ember.set_printoptions(precision=6)
        assert repr(ember.tensor([1.23456])) == "tensor([1.234560])"
        ember.set_printoptions(sci_mode=True)
        assert repr(ember.tensor([1.5])) == "tensor([1.500000e+00])"
    finally:
        ember.set_printoptions(profile="default")
    assert repr(ember.tensor([1.5])) == "tensor([1.5000])"


@needs_torch
def test_against_torch():
    a = arr(3, 5)
    pairs = [(lambda m, x: m.cov(x, correction=0), [a]), (lambda m, x: m.corrcoef(x), [a]),
             (lambda m, x: m.quantile(x, 0.3, dim=1, interpolation="nearest"), [a]),
             (lambda m, x, y: m.inner(x, y), [a, arr(4, 5)]), (lambda m, x: m.vander(x[0], 3), [a]),
             (lambda m, x: m.trapezoid(x, dx=0.3, dim=0), [a]), (lambda m, x: m.cumulative_trapezoid(x), [a]),
             (lambda m, x: m.renorm(x, 1, 1, 0.5), [a]), (lambda m, x: m.diagflat(x, -1), [a]),
             (lambda m, x, y: m.addr(x, y[0], y[1], beta=2), [a[:, :3].copy(), arr(2, 3)]),
             (lambda m, x: m.matrix_exp(x[:, :3]), [a])]
    for fn, arrays in pairs:
        mine = fn(ember, *[ember.tensor(x) for x in arrays])
        ref = fn(torch, *[torch.tensor(x) for x in arrays])
        np.testing.assert_allclose(mine.numpy(), ref.numpy(), rtol=1e-10, atol=1e-12)
    for w in ("hann", "hamming", "blackman", "bartlett", "kaiser"):
        np.testing.assert_allclose(getattr(ember, f"{w}_window")(10, dtype=ember.float64).numpy(),
                                   getattr(torch, f"{w}_window")(10, dtype=torch.float64).numpy(), atol=1e-12)
    e = ember.tensor(a, requires_grad=True)
    r = torch.tensor(a, requires_grad=True)
    weights = arr(3, 5)  # the full derivative, through the norm, as torch's renorm_backward
    (ember.renorm(e, 2, 0, 1.0) * ember.tensor(weights)).sum().backward()
    (torch.renorm(r, 2, 0, 1.0) * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(e.grad.numpy(), r.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_orgqr_ormqr():
    a = arr(5, 3)
    h, tau = np.linalg.qr(a, mode="raw")  # LAPACK's geqrf output (h transposed)
    q_reduced = np.linalg.qr(a)[0]
    geqrf_a = ember.tensor(h.T.copy())
    q = ember.orgqr(geqrf_a, ember.tensor(tau))
    np.testing.assert_allclose(np.abs(q.numpy()), np.abs(q_reduced), atol=1e-12)  # same Q up to column signs
    np.testing.assert_allclose(q.numpy().T @ q.numpy(), np.eye(3), atol=1e-12)
    c = arr(5, 2)
    full_q = ember.ormqr(geqrf_a, ember.tensor(tau), ember.eye(5, dtype=ember.float64)).numpy()
    np.testing.assert_allclose(full_q[:, :3], q.numpy(), atol=1e-12)
    np.testing.assert_allclose(ember.ormqr(geqrf_a, ember.tensor(tau), ember.tensor(c), transpose=True).numpy(),
                               full_q.T @ c, atol=1e-12)
    np.testing.assert_allclose(ember.ormqr(geqrf_a, ember.tensor(tau), ember.tensor(c.T.copy()), left=False).numpy(),
                               c.T @ full_q, atol=1e-12)
    gradcheck(lambda x, t: ember.orgqr(x, t), h.T.copy(), tau)
    if torch is not None:
        ta, ttau = torch.geqrf(torch.tensor(a))
        np.testing.assert_allclose(ember.orgqr(ember.tensor(ta.numpy()), ember.tensor(ttau.numpy())).numpy(),
                                   torch.orgqr(ta, ttau).numpy(), atol=1e-12)


def test_aliases_and_copy_forms():
    a = np.arange(24.0).reshape(2, 3, 4)
    x = ember.tensor(a)
    np.testing.assert_array_equal(ember.concat([x, x], 1).numpy(), np.concatenate([a, a], 1))
    np.testing.assert_array_equal(ember.concatenate([x, x], axis=2).numpy(), np.concatenate([a, a], 2))
    np.testing.assert_array_equal(ember.row_stack([x[0], x[1]]).numpy(), np.vstack([a[0], a[1]]))
    np.testing.assert_array_equal(x.moveaxis(0, -1).numpy(), np.moveaxis(a, 0, -1))
    np.testing.assert_array_equal(ember.adjoint(x).numpy(), np.swapaxes(a, -1, -2))
    with pytest.raises(RuntimeError, match="only supported on matrices or batches of matrices. Got 1-D tensor."):
        ember.ones(3).adjoint()
    parts = x.split_with_sizes([1, 3], 2)
    assert [p.shape for p in parts] == [(2, 3, 1), (2, 3, 3)]
    assert [p.shape for p in ember.unsafe_chunk(x, 3, 1)] == [(2, 1, 4)] * 3
    assert len(ember.unsafe_split(x, 2, 2)) == 2 and len(x.unsafe_split_with_sizes([2, 1], 1)) == 2
    assert not ember.detach(ember.ones(2, requires_grad=True)).requires_grad
    copies = {"t_copy": (x[0], ()), "transpose_copy": (x, (0, 2)), "permute_copy": (x, ([2, 0, 1],)),
              "diagonal_copy": (x, (0, 1, 2)), "view_copy": (x, ((4, 6),)), "expand_copy": (x[:1], ((3, 3, 4),)),
              "select_copy": (x, (1, 2)), "narrow_copy": (x, (2, 1, 2)), "unsqueeze_copy": (x, (1,)),
              "squeeze_copy": (x[:1], ()), "as_strided_copy": (x, ((2, 2), (1, 4))), "alias_copy": (x, ()),
              "slice_copy": (x, (2, 0, 4, 2)), "unfold_copy": (x, (2, 2, 1))}
    for name, (source, args) in copies.items():
        got = getattr(ember, name)(source, *args)
        view = {"t_copy": lambda s: s.t(), "transpose_copy": lambda s: s.transpose(0, 2),
                "permute_copy": lambda s: s.permute(2, 0, 1), "diagonal_copy": lambda s: s.diagonal(0, 1, 2),
                "view_copy": lambda s: s.view(4, 6), "expand_copy": lambda s: s.expand(3, 3, 4),
                "select_copy": lambda s: s.select(1, 2), "narrow_copy": lambda s: s.narrow(2, 1, 2),
                "unsqueeze_copy": lambda s: s.unsqueeze(1), "squeeze_copy": lambda s: s.squeeze(),
                "as_strided_copy": lambda s: s.as_strided((2, 2), (1, 4)), "alias_copy": lambda s: s,
                "slice_copy": lambda s: s[:, :, 0:4:2], "unfold_copy": lambda s: s.unfold(2, 2, 1)}[name](source)
        assert got.is_contiguous() and got.data_ptr() != source.data_ptr(), name
        np.testing.assert_array_equal(got.numpy(), view.numpy())
    assert [p.is_contiguous() for p in ember.unbind_copy(x, 2)] == [True] * 4
    np.testing.assert_array_equal(x.narrow_copy(1, 1, 2).numpy(), a[:, 1:3])
    gradcheck(lambda s: ember.t_copy(s), arr(2, 3))
