"""linalg.vector_norm / Tensor.norm beyond the harness: PyTorch's errors, dtype=, and the
subgradients PyTorch picks where the norm is not differentiable (hand-computed values)."""
import math

import numpy as np
import pytest

import ember


def test_errors_match_pytorch():
    with pytest.raises(RuntimeError, match="linalg_vector_norm"):
        ember.linalg.vector_norm(ember.arange(3))
    with pytest.raises(RuntimeError, match="linalg_vector_norm.*Long"):  # NotImplementedError is one
        ember.linalg.vector_norm(ember.ones(3), dtype=ember.int64)
    with pytest.raises(RuntimeError, match=r"input \(Double\) should be convertible without narrowing .* \(Float\)"):
        ember.linalg.vector_norm(ember.ones(3, dtype=ember.float64), dtype=ember.float32)
    for ord in (math.inf, -math.inf, -1):
        with pytest.raises(RuntimeError, match="on an empty tensor because the operation does not have an identity"):
            ember.linalg.vector_norm(ember.zeros(0), ord)
        with pytest.raises(RuntimeError, match="on the dimension 1 because this dimension is empty"):
            ember.linalg.vector_norm(ember.zeros(3, 0), ord, dim=1)
        assert ember.linalg.vector_norm(ember.zeros(3, 0), ord, dim=0).shape == (0,)
    assert ember.linalg.vector_norm(ember.zeros(0)).item() == 0.0
    assert abs(ember.ones(2, 2).norm("nuc").item() - 2.0) < 1e-6  # the sum of singular values (2, 0)
    with pytest.raises(RuntimeError, match="Order abc not supported"):
        ember.norm(ember.ones(2, 2), "abc")


def test_dtype_and_special_values():
    x = ember.tensor([3.0, -4.0])
    assert ember.linalg.vector_norm(x, dtype=ember.float64).dtype == ember.float64
    assert ember.linalg.vector_norm(x.half(), dtype=ember.float32).dtype == ember.float32
    assert ember.linalg.vector_norm(x.half()).dtype == ember.float16
    assert ember.linalg.vector_norm(x).item() == 5.0
    assert ember.linalg.vector_norm(x, 0).item() == 2.0
    assert ember.linalg.vector_norm(ember.tensor([3.0, 0.0]), -1).item() == 0.0
    assert math.isnan(ember.linalg.vector_norm(x, math.nan).item())
    assert math.isnan(ember.linalg.vector_norm(ember.tensor([3.0, math.nan]), math.inf).item())
    assert math.isnan(ember.linalg.vector_norm(ember.tensor([3.0, math.nan]), -math.inf).item())
    # no rescaling, as PyTorch: squares past float32's range give inf
    assert ember.linalg.vector_norm(ember.tensor([1e30, 1e30])).item() == math.inf
    assert ember.norm(x, "fro").item() == 5.0 and x.norm(1).item() == 7.0 and x.norm(None).item() == 5.0
    assert ember.linalg.vector_norm(ember.ones(3, 4), dim=()).shape == ()
    assert ember.linalg.vector_norm(ember.ones(3, 4), 1, -1, True).shape == (3, 1)


def grad_of(values, ord, **kw):
    x = ember.tensor(values, dtype=ember.float64, requires_grad=True)
    ember.linalg.vector_norm(x, ord, **kw).sum().backward()
    return x.grad.numpy()


@pytest.mark.parametrize("ord,values,expected", [
    (2, [0.0, 0.0], [0.0, 0.0]),                  # zero norm: subgradient 0, not NaN
    (3, [0.0, 0.0], [0.0, 0.0]),
    (0.5, [0.0, 0.0], [0.0, 0.0]),
    (0.5, [0.0, 1.0], [0.0, 1.0]),                # |x|^(p-1) is infinite at 0: 0 there
    (1, [0.0, -2.0], [0.0, -1.0]),
    (0, [0.0, 2.0], [0.0, 0.0]),
    (math.inf, [2.0, -2.0, 1.0], [0.5, -0.5, 0.0]),  # ties share the gradient
    (-math.inf, [2.0, -1.0, 1.0], [0.0, -0.5, 0.5]),
    (-1, [1.0, 1.0], [0.25, 0.25]),
])
def test_subgradients(ord, values, expected):
    np.testing.assert_allclose(grad_of(values, ord), expected, rtol=1e-12, atol=0)


def test_gradients_over_dims_and_dtype():
    x = ember.randn(3, 4, dtype=ember.float64, requires_grad=True)
    ember.linalg.vector_norm(x, 2, dim=1).sum().backward()
    ref = x.detach().numpy() / np.linalg.norm(x.detach().numpy(), axis=1, keepdims=True)
    np.testing.assert_allclose(x.grad.numpy(), ref, rtol=1e-12)
    y = ember.randn(5, requires_grad=True)   # float32 input, float64 norm: the gradient is float32
    ember.linalg.vector_norm(y, dtype=ember.float64).backward()
    assert y.grad.dtype == ember.float32
    np.testing.assert_allclose(y.grad.numpy(), y.detach().numpy() / np.linalg.norm(y.detach().numpy()), rtol=1e-6)
