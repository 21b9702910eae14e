"""ember.autograd.gradcheck and gradgradcheck: PyTorch's signature, results, errors and
messages. Each scenario runs on ember and, when torch is installed, on torch; both must agree
on the outcome (True, False, or the exception class)."""
import sys
import warnings

import numpy as np
import pytest

import ember
from ember.autograd.gradcheck import GradcheckError

try:
    import torch
except ImportError:                      # the comparisons skip without torch
    torch = None

LIBS = [ember] + ([torch] if torch is not None else [])


def t64(lib, values, requires_grad=True):
    return lib.tensor(values, dtype=lib.float64, requires_grad=requires_grad)


def outcome(fn):
    try:
        return fn()
    except Exception as e:              # noqa: BLE001 - the class is the outcome
        return type(e).__name__


def same_outcome(scenario, want):
    for lib in LIBS:
        got = outcome(lambda: scenario(lib))
        assert got == want, f"{lib.__name__}: {got!r}, expected {want!r}"


def _wrong_derivative(a):
    return a * a.detach()               # the value a^2, the gradient a instead of 2a


def _wrong_second_derivative(a):
    """a^2 with the right gradient 2a, whose own graph is cut: its derivative comes out 0, not 2."""
    return (a * a).detach() + (a - a.detach()) * (2 * a).detach()


SCENARIOS = [
    ("tanh-mm", lambda lib: lib.autograd.gradcheck(lambda a, b: lib.tanh(a @ b), (
        t64(lib, [[0.1, -0.3, 0.2], [0.5, 0.4, -0.6]]), t64(lib, [[1.0], [-2.0], [0.5]]))), True),
    ("fast-mode", lambda lib: lib.autograd.gradcheck(lambda a, b: lib.tanh(a @ b), (
        t64(lib, [[0.1, -0.3, 0.2], [0.5, 0.4, -0.6]]), t64(lib, [[1.0], [-2.0], [0.5]])), fast_mode=True), True),
    ("non-contiguous", lambda lib: lib.autograd.gradcheck(lambda a: a.exp() * a, (
        t64(lib, [[0.1, -0.3], [0.2, 0.5], [0.4, -0.6]]).t().detach().requires_grad_(),)), True),
    ("tuple-outputs-and-non-tensors", lambda lib: lib.autograd.gradcheck(
        lambda a, k, b: (a * k, (a * b).sum(), a.argmax()), (t64(lib, [0.5, 2.0]), 3, t64(lib, [1.5, -1.0]))), True),
    ("multi-output-op", lambda lib: lib.autograd.gradcheck(lambda a: a.max(0), (
        t64(lib, [[0.1, -0.3], [0.2, 0.5]]),)), True),
    ("a-bad-input-not-differentiated", lambda lib: lib.autograd.gradcheck(lambda a, b: a * b, (
        t64(lib, [0.5, 2.0]), t64(lib, [1.0, 3.0], requires_grad=False))), True),
    ("wrong", lambda lib: lib.autograd.gradcheck(_wrong_derivative, (t64(lib, [1.0, 2.0]),)), "GradcheckError"),
    ("wrong-fast", lambda lib: lib.autograd.gradcheck(_wrong_derivative, (t64(lib, [1.0, 2.0]),), fast_mode=True),
     "GradcheckError"),
    ("wrong-no-raise", lambda lib: lib.autograd.gradcheck(_wrong_derivative, (t64(lib, [1.0, 2.0]),),
                                                         raise_exception=False), False),
    ("wrong-within-atol", lambda lib: lib.autograd.gradcheck(_wrong_derivative, (t64(lib, [1e-3, 2e-3]),), atol=1e-2),
     True),
    ("no-input-requires-grad", lambda lib: lib.autograd.gradcheck(lambda a: a * 2, (t64(lib, [1.0], False),)),
     "ValueError"),
    ("stride-0-input", lambda lib: lib.autograd.gradcheck(lambda a: a * 2, (
        t64(lib, [1.0], False).expand(3).requires_grad_(),)), "RuntimeError"),
    ("detached-output", lambda lib: lib.autograd.gradcheck(lambda a: (a * 2).detach(), (t64(lib, [1.0]),)),
     "GradcheckError"),
    ("constant-output", lambda lib: lib.autograd.gradcheck(lambda a: a.detach() * 0 + 1, (t64(lib, [1.0]),)), True),
    ("neither-mode", lambda lib: lib.autograd.gradcheck(lambda a: a, (t64(lib, [1.0]),), check_backward_ad=False),
     "AssertionError"),
    ("batched-without-backward", lambda lib: lib.autograd.gradcheck(
        lambda a: a, (t64(lib, [1.0]),), check_batched_grad=True, check_backward_ad=False, check_forward_ad=True),
     "AssertionError"),
    ("batched-forward-without-forward", lambda lib: lib.autograd.gradcheck(
        lambda a: a, (t64(lib, [1.0]),), check_batched_forward_grad=True), "AssertionError"),
    ("gradgrad", lambda lib: lib.autograd.gradgradcheck(lambda a, b: lib.tanh(a @ b) ** 2, (
        t64(lib, [[0.1, -0.3, 0.2], [0.5, 0.4, -0.6]]), t64(lib, [[1.0], [-2.0], [0.5]]))), True),
    ("gradgrad-fast-non-contiguous", lambda lib: lib.autograd.gradgradcheck(lambda a: lib.sin(a) * a, (
        t64(lib, [[0.1, -0.3], [0.2, 0.5]]),), fast_mode=True, gen_non_contig_grad_outputs=True), True),
    ("gradgrad-given-grad-outputs", lambda lib: lib.autograd.gradgradcheck(lambda a: (a ** 3, a.sum() * a), (
        t64(lib, [0.5, -1.5]),), (t64(lib, [1.0, 2.0]), t64(lib, [0.5, -0.25], False))), True),
    ("wrong-second-derivative-passes-gradcheck",
     lambda lib: lib.autograd.gradcheck(_wrong_second_derivative, (t64(lib, [1.0, 2.0]),)), True),
    ("wrong-second-derivative", lambda lib: lib.autograd.gradgradcheck(
        _wrong_second_derivative, (t64(lib, [1.0, 2.0]),)), "GradcheckError"),
    ("wrong-second-derivative-fast", lambda lib: lib.autograd.gradgradcheck(
        _wrong_second_derivative, (t64(lib, [1.0, 2.0]),), fast_mode=True), "GradcheckError"),
    ("gradgrad-no-rev-over-rev", lambda lib: lib.autograd.gradgradcheck(
        lambda a: a, (t64(lib, [1.0]),), check_rev_over_rev=False), "AssertionError"),
    ("gradgrad-undefined-without-rev", lambda lib: lib.autograd.gradgradcheck(
        lambda a: a, (t64(lib, [1.0]),), check_rev_over_rev=False, check_fwd_over_rev=True), "AssertionError"),
    ("forward-ad", lambda lib: lib.autograd.gradcheck(lambda a, b: lib.tanh(a @ b) ** 2, (
        t64(lib, [[0.1, -0.3, 0.2], [0.5, 0.4, -0.6]]), t64(lib, [[1.0], [-2.0], [0.5]])), check_forward_ad=True), True),
    ("forward-ad-only", lambda lib: lib.autograd.gradcheck(lambda a: (lib.sin(a) * a, a.sum()), (
        t64(lib, [0.3, -1.2]),), check_forward_ad=True, check_backward_ad=False), True),
    # detach() drops the tangent as it drops the history: d(a * a)/da = 2a, the JVP gives a.
    ("forward-ad-wrong", lambda lib: lib.autograd.gradcheck(lambda a: a * a.detach(), (
        t64(lib, [1.0, 2.0]),), check_forward_ad=True, check_backward_ad=False), "GradcheckError"),
    ("forward-ad-wrong-no-raise", lambda lib: lib.autograd.gradcheck(lambda a: a * a.detach(), (
        t64(lib, [1.0, 2.0]),), check_forward_ad=True, check_backward_ad=False, raise_exception=False), False),
    ("fwd-over-rev", lambda lib: lib.autograd.gradgradcheck(lambda a: lib.sin(a) * a, (
        t64(lib, [[0.1, -0.3], [0.2, 0.5]]),), check_fwd_over_rev=True), True),
    ("fwd-over-rev-only", lambda lib: lib.autograd.gradgradcheck(lambda a, b: lib.tanh(a * b) * a, (
        t64(lib, [0.1, -0.3]), t64(lib, [0.7, 1.5])), check_fwd_over_rev=True, check_rev_over_rev=False,
        check_undefined_grad=False), True),
]


@pytest.mark.parametrize("name,scenario,want", SCENARIOS, ids=[s[0] for s in SCENARIOS])
def test_gradcheck_outcomes_match_pytorch(name, scenario, want):
    same_outcome(scenario, want)


def test_gradcheck_error_is_a_runtime_error_with_both_jacobians():
    with pytest.raises(GradcheckError) as info:
        ember.autograd.gradcheck(_wrong_derivative, (t64(ember, [1.0, 2.0]),))
    assert isinstance(info.value, RuntimeError) and ember.autograd.gradcheck.__module__ == "ember.autograd.gradcheck"
    message = str(info.value)
    assert message.startswith("Jacobian mismatch for output 0 with respect to input 0,\nnumerical:tensor([[2.")
    assert "\nanalytical:tensor([[1., 0.],\n        [0., 2.]], dtype=ember.float64)" in message
    if torch is not None:
        with pytest.raises(sys.modules["torch.autograd.gradcheck"].GradcheckError) as want:
            torch.autograd.gradcheck(_wrong_derivative, (t64(torch, [1.0, 2.0]),))
        assert message == str(want.value).replace("torch.", "ember.")


def test_fast_mode_failure_recomputes_the_slow_jacobians():
    with pytest.raises(GradcheckError, match="in fast mode") as info:
        ember.autograd.gradcheck(_wrong_derivative, (t64(ember, [1.0, 2.0]),), fast_mode=True)
    assert "The max per-element difference (slow mode) is: 2.0" in str(info.value)


def test_the_second_input_and_output_are_named_in_the_message():
    def f(a, b):
        return a * 2, b * b.detach()
    with pytest.raises(GradcheckError, match="^Jacobian mismatch for output 1 with respect to input 1,"):
        ember.autograd.gradcheck(f, (t64(ember, [1.0]), t64(ember, [3.0])))


def test_non_double_inputs_warn_as_pytorch():
    for lib in LIBS:
        with pytest.warns(UserWarning, match="Input #0 requires gradient and is not a double precision"):
            lib.autograd.gradcheck(lambda a: a * 2, (lib.tensor([1.0], requires_grad=True),), raise_exception=False)


def test_forward_mode_mismatch_message_as_pytorch():
    with pytest.raises(GradcheckError) as info:
        ember.autograd.gradcheck(lambda a: a * a.detach(), (t64(ember, [1.0, 2.0]),), check_forward_ad=True,
                                 check_backward_ad=False)
    assert str(info.value).startswith("Jacobian computed with forward mode mismatch for output 0 with respect to "
                                      "input 0,\nnumerical:tensor([[2.")
    if torch is not None:
        with pytest.raises(sys.modules["torch.autograd.gradcheck"].GradcheckError) as want:
            torch.autograd.gradcheck(lambda a: a * a.detach(), (t64(torch, [1.0, 2.0]),), check_forward_ad=True,
                                     check_backward_ad=False)
        assert str(info.value) == str(want.value).replace("torch.", "ember.")


def test_batched_forward_grad_needs_vmap():
    with pytest.raises(NotImplementedError, match="check_batched_forward_grad=True needs vmap"):
        ember.autograd.gradcheck(lambda a: a, (t64(ember, [1.0]),), check_forward_ad=True,
                                 check_batched_forward_grad=True)


def test_batched_grad_needs_vmap():
    with pytest.raises(NotImplementedError, match="check_batched_grad=True needs vmap"):
        ember.autograd.gradcheck(lambda a: a, (t64(ember, [1.0]),), check_batched_grad=True)


def test_gradcheck_leaves_inputs_and_their_graphs_alone():
    """The finite differences perturb copies: the inputs keep their values and version, so a
    graph built on them beforehand still backpropagates."""
    x = t64(ember, [0.5, -1.0, 2.0])
    y = (x * x).sum()
    version = x._version
    assert ember.autograd.gradcheck(lambda a: a.sin(), (x,))
    assert ember.autograd.gradcheck(lambda a: a.sin(), (x,), fast_mode=True)
    assert x._version == version and x.tolist() == [0.5, -1.0, 2.0] and x.grad is None
    y.backward()
    assert x.grad.tolist() == [1.0, -2.0, 4.0]


def test_gradcheck_leaves_the_global_random_stream_alone():
    ember.manual_seed(5)
    want = ember.rand(3).tolist()
    ember.manual_seed(5)
    ember.autograd.gradcheck(lambda a: a.sin(), (t64(ember, [0.5, -1.0]),), fast_mode=True)
    assert ember.rand(3).tolist() == want


def test_masked_is_accepted():
    assert ember.autograd.gradcheck(lambda a: a * 3, (t64(ember, [1.0]),), masked=True)
    assert ember.autograd.gradgradcheck(lambda a: a ** 3, (t64(ember, [1.0]),), masked=False)


def test_numerical_jacobian_is_taken_at_the_inputs_dtype_and_shape():
    """A function whose output changes shape under perturbation is reported, as PyTorch."""
    def shape_shifting(a):
        return a[: 1 + int(a.detach().sum().item() > 1.0)]
    with pytest.raises(AssertionError, match="Expected `func` to return outputs with the same shape"):
        ember.autograd.gradcheck(shape_shifting, (t64(ember, [0.5, 0.5]),))


def test_undefined_output_gradients_are_checked():
    """With check_undefined_grad, backward runs with undefined output gradients (all, then one at
    a time): the engine skips a node whose gradient is undefined, so the inputs get none."""
    x = t64(ember, [[0.1, -0.3], [0.2, 0.5]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ember.autograd.gradcheck(lambda a: (a.exp(), a.max(1)[0], a.sum()), (x,), check_undefined_grad=True)
    none = ember._C._grad([(x * 2).sum()], [None], [x], False, False, True, False)
    assert none == [None]
    with pytest.raises(RuntimeError, match="appears to not have been used"):
        ember._C._grad([(x * 2).sum()], [None], [x], False, False, False, False)


def test_random_grad_outputs_are_uniform_in_minus_one_one():
    from ember.autograd.gradcheck import _random_grad_output
    out = ember.zeros(40, 30, dtype=ember.float64)
    for noncontiguous in (False, True):
        g = _random_grad_output(out, noncontiguous)
        values = np.array(g.tolist())
        assert g.requires_grad and g.is_leaf and g.shape == out.shape and g.is_contiguous() != noncontiguous
        assert values.min() >= -1 and values.max() < 1 and values.std() > 0.5
