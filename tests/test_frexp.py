"""ember.frexp / Tensor.frexp (issue 12): mantissa and int32 exponent against NumPy (zeros, infinities, nan,
subnormals, every floating dtype, non-contiguous), the out= tuple and its dtype checks, PyTorch's errors, and the
gradient grad / 2**exponent (gradcheck, and torch's when installed)."""
import numpy as np
import pytest

import ember
from ember.autograd import gradcheck

try:
    import torch
except ImportError:  # the torch comparisons are skipped without it
    torch = None

SPECIALS = [0.0, -0.0, 1.0, -3.5, 1e-40, 6e-39, 1e30, -7.25e-5, np.inf, -np.inf, np.nan, 0.75]


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_frexp_matches_numpy(dtype, threads):
    values = np.concatenate([SPECIALS, np.random.default_rng(3).standard_normal(5000) * 1e3])
    x = ember.tensor(values, dtype=getattr(ember, dtype))
    m, e = ember.frexp(x)
    assert m.dtype == x.dtype and e.dtype == ember.int32 and tuple(e.shape) == tuple(x.shape)
    exact = x.float().numpy() if dtype in ("float16", "bfloat16") else x.numpy()
    want_m, want_e = np.frexp(exact)
    np.testing.assert_array_equal(m.float().numpy() if m.dtype != ember.float64 else m.numpy(),
                                  want_m.astype(np.float64 if dtype == "float64" else np.float32))
    np.testing.assert_array_equal(e.numpy(), np.where(np.isfinite(exact), want_e, 0))
    assert ember.tensor(values[:9], dtype=getattr(ember, dtype)).frexp().exponent.dtype == ember.int32


def test_frexp_noncontiguous_and_shapes():
    a = np.random.default_rng(1).standard_normal((6, 5)) * 100
    x = ember.tensor(a).t()
    r = x.frexp()
    assert type(r).__name__ == "frexp" and tuple(r.mantissa.shape) == (5, 6)
    np.testing.assert_array_equal(r.mantissa.numpy(), np.frexp(a.T)[0])
    np.testing.assert_array_equal(r.exponent.numpy(), np.frexp(a.T)[1])
    scalar = ember.frexp(ember.tensor(8.0))
    assert scalar.mantissa.shape == () and float(scalar.mantissa) == 0.5 and int(scalar.exponent) == 4


def test_frexp_out_and_errors():
    x = ember.tensor([1.0, 6.0, -0.25])
    m, e = ember.empty(0), ember.empty(0, dtype=ember.int32)
    r = ember.frexp(x, out=(m, e))
    assert type(r).__name__ == "frexp_out" and r.mantissa is m and r.exponent is e
    assert m.tolist() == [0.5, 0.75, -0.5] and e.tolist() == [1, 3, -1]
    with pytest.raises(RuntimeError, match="^torch.frexp\\(\\) expects mantissa to have dtype float but got double$"):
        ember.frexp(x, out=(ember.empty(0, dtype=ember.float64), e))
    with pytest.raises(RuntimeError, match="^torch.frexp\\(\\) expects exponent to have int dtype but got long int$"):
        ember.frexp(x, out=(m, ember.empty(0, dtype=ember.int64)))
    with pytest.raises(TypeError, match="argument 'out' must be tuple of Tensors, not Tensor"):
        ember.frexp(x, out=m)
    with pytest.raises(RuntimeError, match="^torch.frexp\\(\\) only supports floating-point dtypes$"):
        ember.frexp(ember.arange(3))
    with pytest.raises(RuntimeError, match="^torch.frexp\\(\\) only supports floating-point dtypes$"):
        ember.arange(3).frexp()
    with pytest.raises(RuntimeError, match="functions with out=... arguments don't support automatic differentiation"):
        ember.frexp(x.clone().requires_grad_(), out=(m, e))


def test_frexp_gradient():
    x = ember.tensor([0.3, -5.0, 1e3, 2.5], dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda t: ember.frexp(t).mantissa, (x,))
    m, e = ember.frexp(x)
    assert type(m.grad_fn).__name__ == "FrexpBackward0" and not e.requires_grad
    m.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), 1 / 2.0 ** e.numpy())
    if torch is not None:
        tx = torch.tensor(x.detach().numpy(), requires_grad=True)
        torch.frexp(tx).mantissa.sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())
        assert repr(ember.frexp(ember.tensor([1.0, 6.0]))).replace("ember.", "torch.") == repr(
            torch.frexp(torch.tensor([1.0, 6.0])))


JVP_CHECKED = {"frexp.Tensor", "_frexp"}  # for tests/test_forward_ad.py OWN_CHECKS
_X = [0.3, -5.0, 1e3, 2.5, -0.7]
HIGHER_ORDER_CASES = {  # for tests/test_higher_order.py: the mantissa's gradient times x, so the second is not 0
    "frexp.Tensor": [(lambda t: ember.frexp(t).mantissa * t, lambda: (ember.tensor(_X, dtype=ember.float64,
                                                                                  requires_grad=True),), {})],
    "_frexp": [(lambda t: ember._frexp(t)[0] * t, lambda: (ember.tensor(_X, dtype=ember.float64,
                                                                       requires_grad=True),), {})],
}


def test_frexp_forward_ad():
    x = ember.tensor([0.3, -5.0, 1e3, 2.5, -0.7], dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda t: ember.frexp(t).mantissa, (x,), check_forward_ad=True)
    assert gradcheck(lambda t: ember._frexp(t)[0], (x,), check_forward_ad=True)
