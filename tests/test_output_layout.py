"""A new pointwise result takes its inputs' memory order, as PyTorch's TensorIterator
gives it: `m.t().exp()` is column-major like `m.t()`, not a row-major copy."""
import itertools

import numpy as np
import pytest

import ember

try:
    import torch
except ImportError:
    torch = None


def rand(lib, *shape):
    return lib.from_numpy(np.random.default_rng(0).random(shape, dtype=np.float32))


# (name, build(lib) -> result, PyTorch's strides: checked against torch 2.13 by the test below)
CASES = [
    ("transposed unary", lambda t: rand(t, 4, 5).t().exp(), (1, 5)),
    ("transposed + number", lambda t: rand(t, 4, 5).t() + 1, (1, 5)),
    ("transposed + transposed", lambda t: rand(t, 4, 5).t() * rand(t, 4, 5).t(), (1, 5)),
    ("first input decides", lambda t: rand(t, 4, 5).t() + rand(t, 5, 4), (1, 5)),
    ("row-major first", lambda t: rand(t, 5, 4) + rand(t, 4, 5).t(), (4, 1)),
    ("broadcast input skipped", lambda t: rand(t, 5) + rand(t, 5, 4).t(), (1, 4)),
    ("permuted 3-d", lambda t: rand(t, 2, 3, 4).permute(1, 2, 0).sigmoid(), (4, 1, 12)),
    ("permuted times broadcast", lambda t: rand(t, 2, 3, 4).permute(1, 2, 0) * rand(t, 4, 1), (4, 1, 12)),
    ("expanded column", lambda t: rand(t, 4, 1).expand(4, 5).exp(), (5, 1)),
    ("channels-last", lambda t: rand(t, 2, 4, 5, 3).permute(0, 3, 1, 2).relu(), (60, 1, 15, 3)),
    ("stepped columns", lambda t: rand(t, 6, 8)[:, ::2].neg(), (4, 1)),
    ("stepped transposed", lambda t: rand(t, 8, 6).t()[:, ::2].neg(), (1, 6)),
    ("size-1 dims", lambda t: rand(t, 3, 1, 4).permute(2, 1, 0).neg(), (1, 4, 4)),
    ("empty stays contiguous", lambda t: rand(t, 0, 5).t().neg(), (1, 1)),
    ("comparison", lambda t: rand(t, 4, 5).t() > 0.5, (1, 5)),
]


@pytest.mark.parametrize("name,build,strides", CASES, ids=[c[0] for c in CASES])
def test_result_strides(name, build, strides):
    assert build(ember).stride() == strides


@pytest.mark.skipif(torch is None, reason="torch not installed")
@pytest.mark.parametrize("name,build,strides", CASES, ids=[c[0] for c in CASES])
def test_expected_strides_are_pytorchs(name, build, strides):
    assert build(torch).stride() == strides


@pytest.mark.parametrize("perm", list(itertools.permutations(range(3))))
def test_permuted_inputs_values_and_order(perm):
    base = np.random.default_rng(1).standard_normal((5, 6, 7)).astype(np.float32)
    x = ember.from_numpy(base).permute(*perm)
    y = ember.from_numpy(base * 2).permute(*perm)
    out = x.exp() + y
    expected = np.exp(base.transpose(perm)) + (base * 2).transpose(perm)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-6)
    # dense in the inputs' order: the same strides as the permuted input
    assert out.stride() == x.stride()
    if torch is not None:
        t = torch.from_numpy(base).permute(*perm)
        assert (t.exp() + t * 2).stride() == out.stride()


def test_large_transposed_unary_with_threads():
    # big enough for the parallel paths; column-major in and out
    m = np.random.default_rng(2).standard_normal((700, 900)).astype(np.float32)
    saved = ember.get_num_threads()
    try:
        for threads in (1, 2, 3):
            ember.set_num_threads(threads)
            out = ember.from_numpy(m).t().tanh()
            assert out.stride() == (1, 900)
            np.testing.assert_allclose(out.numpy(), np.tanh(m.T), rtol=1e-6, atol=1e-7)
    finally:
        ember.set_num_threads(saved)


def test_autograd_through_transposed_results():
    x = ember.from_numpy(np.random.default_rng(3).standard_normal((3, 4))).requires_grad_()
    y = (x.t().exp() * 2).sum()
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp(x.detach().numpy()), rtol=1e-12)


def test_clone_and_to_keep_memory_order_contiguous_does_not():
    x = rand(ember, 5, 6).t()
    for copy in (x.clone(), x.to(ember.float64), x.double(), x[:, ::2].clone()):
        assert copy.stride()[0] == 1, copy.stride()
    assert x[:, ::2].clone().stride() == (1, 6)  # dense in x's order (torch: (1, 6))
    y = x.contiguous()
    assert y.is_contiguous() and y.grad_fn is None
    np.testing.assert_array_equal(y.numpy(), x.numpy())
    assert x.reshape(-1).is_contiguous()  # reshape of a non-viewable tensor copies row-major
    np.testing.assert_array_equal(x.reshape(-1).numpy(), x.numpy().reshape(-1))


def test_grad_takes_its_variables_memory_order():
    # PyTorch's layout contract for .grad
    q = rand(ember, 4, 3).t().detach().requires_grad_()
    (q * 2).sum().backward()
    assert q.grad.stride() == q.stride()
    p = rand(ember, 3, 4).requires_grad_()
    (p.t() * rand(ember, 4, 3)).sum().backward()
    assert p.grad.stride() == (4, 1)
    np.testing.assert_array_equal(q.grad.numpy(), np.full((3, 4), 2, np.float32))
