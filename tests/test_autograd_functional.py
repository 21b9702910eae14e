"""ember.autograd.functional: jacobian, hessian, vjp, jvp, hvp, vhp. Results (values and the
tensor/tuple nesting), create_graph and strict mode against torch.autograd.functional when torch
is installed, and against results worked out by hand."""
import re

import numpy as np
import pytest

import ember
import ember.autograd.functional as F

try:
    import torch
except ImportError:                      # the comparisons skip without torch
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="compares with PyTorch")


def t64(lib, values, requires_grad=False):
    return lib.tensor(values, dtype=lib.float64, requires_grad=requires_grad)


def structure(x):
    """The nesting of a result with each tensor as (shape, values, requires_grad)."""
    if isinstance(x, tuple):
        return tuple(structure(e) for e in x)
    assert not isinstance(x, list), "results nest in tuples"
    return (tuple(x.shape), np.round(np.array(x.tolist(), dtype=np.float64), 10).tolist(), x.requires_grad)


# Functions over (lib, *tensors), written once for both libraries.
def exp_reducer(lib, x):
    return x.exp().sum(dim=1)


def adder(lib, x, y):
    return 2 * x + 3 * y


def two_outputs(lib, x, y):
    return x * y, (x * x).sum() + lib.sin(y).sum()


def scalar_pow(lib, x):
    return (x ** 3).sum() + (x[0] * x[1]) ** 2


def scalar_two_inputs(lib, x, y):
    return (lib.tanh(x) * y.sum()).sum() + (y ** 2).prod()


def ignores_y(lib, x, y):
    return (x ** 2).sum()


def linear(lib, x):
    return (3 * x).sum()


X22 = [[0.5, -1.0], [2.0, 0.25]]
A2, B2 = [0.3, -0.7], [1.5, 0.4]


def inputs_for(lib, name):
    table = {
        "matrix": t64(lib, X22),
        "pair": (t64(lib, A2), t64(lib, B2)),
        "single-in-tuple": (t64(lib, A2),),
        "vector": t64(lib, A2),
    }
    return table[name]


def call(lib, api, fn, inputs, v=None, **kw):
    f = getattr(lib.autograd.functional, api)
    func = (lambda *a: fn(lib, *a))
    ins = inputs_for(lib, inputs)
    if v is None:
        return f(func, ins, **kw)
    vv = tuple(t64(lib, e) for e in v) if isinstance(v, tuple) else t64(lib, v)
    return f(func, ins, vv, **kw)


CASES = [
    ("vjp", exp_reducer, "matrix", [1.0, 2.0]),
    ("vjp", adder, "pair", [1.0, -1.0]),
    ("vjp", two_outputs, "pair", ([1.0, 2.0], 1.5)),
    ("vjp", scalar_pow, "single-in-tuple", None),
    ("jvp", exp_reducer, "matrix", [[1.0, 0.0], [0.5, -1.0]]),
    ("jvp", adder, "pair", ([1.0, 2.0], [0.5, -0.5])),
    ("jvp", two_outputs, "pair", ([1.0, 2.0], [0.5, -0.5])),
    ("jacobian", exp_reducer, "matrix", None),
    ("jacobian", adder, "pair", None),
    ("jacobian", two_outputs, "pair", None),
    ("jacobian", scalar_pow, "vector", None),
    ("jacobian", scalar_pow, "single-in-tuple", None),
    ("hessian", scalar_pow, "vector", None),
    ("hessian", scalar_pow, "single-in-tuple", None),
    ("hessian", scalar_two_inputs, "pair", None),
    ("hvp", scalar_pow, "vector", [1.0, -2.0]),
    ("hvp", scalar_two_inputs, "pair", ([1.0, -2.0], [0.5, 0.5])),
    ("vhp", scalar_pow, "vector", [1.0, -2.0]),
    ("vhp", scalar_two_inputs, "pair", ([1.0, -2.0], [0.5, 0.5])),
    ("vhp", ignores_y, "pair", ([1.0, -2.0], [0.5, 0.5])),
    ("hvp", ignores_y, "pair", ([1.0, -2.0], [0.5, 0.5])),
    ("jacobian", ignores_y, "pair", None),
]
IDS = [f"{api}-{fn.__name__}-{ins}" for api, fn, ins, _ in CASES]


def outcome(lib, *args, **kw):
    try:
        return structure(call(lib, *args, **kw))
    except RuntimeError as e:            # strict mode refuses some: the same message
        return str(e).replace("torch.", "ember.")


@needs_torch
@pytest.mark.parametrize("api,fn,inputs,v", CASES, ids=IDS)
@pytest.mark.parametrize("create_graph,strict", [(False, False), (True, False), (False, True), (True, True)])
def test_matches_torch(api, fn, inputs, v, create_graph, strict):
    got = outcome(ember, api, fn, inputs, v, create_graph=create_graph, strict=strict)
    assert got == outcome(torch, api, fn, inputs, v, create_graph=create_graph, strict=strict)
    if not strict:
        assert not isinstance(got, str)


def test_by_hand():
    x = t64(ember, A2)
    out, (gx, gy) = F.vjp(lambda a, b: 2 * a + 3 * b, (x, t64(ember, B2)), t64(ember, [1.0, -1.0]))
    assert gx.tolist() == [2.0, -2.0] and gy.tolist() == [3.0, -3.0] and not out.requires_grad
    # f = sum x^3 + (x0 x1)^2: H = diag(6 x) + [[2 x1^2, 4 x0 x1], [4 x0 x1, 2 x0^2]]
    a, b = A2
    hessian = np.array([[6 * a + 2 * b * b, 4 * a * b], [4 * a * b, 6 * b + 2 * a * a]])
    np.testing.assert_allclose(F.hessian(lambda t: scalar_pow(ember, t), x).tolist(), hessian, rtol=1e-14)
    v = np.array([1.0, -2.0])
    _, hv = F.hvp(lambda t: scalar_pow(ember, t), x, t64(ember, v.tolist()))
    _, vh = F.vhp(lambda t: scalar_pow(ember, t), x, t64(ember, v.tolist()))
    np.testing.assert_allclose(hv.tolist(), hessian @ v, rtol=1e-14)
    np.testing.assert_allclose(vh.tolist(), v @ hessian, rtol=1e-14)
    jac = F.jacobian(lambda t: exp_reducer(ember, t), t64(ember, X22))
    want = np.zeros((2, 2, 2))
    for i in range(2):
        want[i, i] = np.exp(X22[i])
    np.testing.assert_allclose(jac.tolist(), want, rtol=1e-14)
    _, jv = F.jvp(lambda t: exp_reducer(ember, t), t64(ember, X22), t64(ember, [[1.0, 0.0], [0.5, -1.0]]))
    np.testing.assert_allclose(jv.tolist(), [np.exp(0.5), 0.5 * np.exp(2.0) - np.exp(0.25)], rtol=1e-14)


def test_result_nesting():
    """Tensor in, Tensor out; a tuple (even of one) stays a tuple; Jacobians are [output][input]."""
    def f(lib, a, b):
        return a * b
    pair = (t64(ember, A2), t64(ember, B2))
    assert isinstance(F.jacobian(lambda t: t * 2, t64(ember, A2)), ember.Tensor)
    single = F.jacobian(lambda t: t * 2, (t64(ember, A2),))
    assert isinstance(single, tuple) and len(single) == 1 and single[0].shape == (2, 2)
    jac = F.jacobian(lambda a, b: (a * b, a.sum()), pair)
    assert [[tuple(j.shape) for j in row] for row in jac] == [[(2, 2), (2, 2)], [(2,), (2,)]]
    hess = F.hessian(lambda a, b: (a * b).sum(), pair)
    assert [[tuple(h.shape) for h in row] for row in hess] == [[(2, 2), (2, 2)], [(2, 2), (2, 2)]]
    out, vjp = F.vjp(lambda a, b: (a * b,), pair, (t64(ember, [1.0, 1.0]),))
    assert isinstance(out, tuple) and isinstance(vjp, tuple) and len(vjp) == 2


def test_create_graph_results_are_differentiable():
    x = t64(ember, A2, requires_grad=True)
    _, hv = F.hvp(lambda t: scalar_pow(ember, t), x, t64(ember, [1.0, 0.0]), create_graph=True)
    assert hv.requires_grad
    (g,) = ember.autograd.grad(hv.sum(), x)          # d/dx of (H e0).sum(): third derivatives
    a, b = A2
    # (H e0).sum() = 6a + 2b^2 + 4ab  ->  d/da = 6 + 4b, d/db = 4b + 4a
    np.testing.assert_allclose(g.tolist(), [6 + 4 * b, 4 * b + 4 * a], rtol=1e-14)
    jac = F.jacobian(lambda t: t ** 3, x, create_graph=True)
    assert jac.requires_grad
    out, _ = F.vjp(lambda t: t.sum(), x)
    assert not out.requires_grad and x.grad is None


def test_inputs_not_requiring_grad_give_results_without_grad():
    x = t64(ember, A2)
    _, vjp = F.vjp(lambda t: (t * t).sum(), x)
    assert not vjp.requires_grad and not x.requires_grad


@pytest.mark.parametrize("api,fn,v,message", [
    ("vjp", lambda a, b: (a * 2).sum(), None, "The output of the user-provided function is independent of input 1"),
    ("vjp", lambda a, b: (a * 2).sum().detach(), None, "Output 0 of the user-provided function does not require"),
    ("jacobian", lambda a, b: a * 2, None, "Output 0 of the user-provided function is independent of input 1"),
    ("hessian", lambda a, b: (a * b).sum(), None, "Output 0 of the user-provided function is independent of input 0"),
    ("vhp", lambda a, b: (a ** 3).sum(), ([1.0, 1.0], [1.0, 1.0]), "The output of the user-provided function is "
                                                                  "independent of input 1"),
    ("jvp", lambda a, b: a * 2, ([1.0, 1.0], [1.0, 1.0]), "The output of the user-provided function is independent "
                                                          "of input 1"),
    ("hvp", lambda a, b: (a ** 3).sum() + b.sum(), ([1.0, 1.0], [1.0, 1.0]),
     "While computing the hessian, found that the jacobian of the user-provided function with respect to input 1 is "
     "independent of the input"),
])
def test_strict_mode_errors(api, fn, v, message):
    libs = [ember] + ([torch] if torch is not None else [])
    for lib in libs:
        ins = (t64(lib, A2), t64(lib, B2))
        args = (fn, ins) if v is None else (fn, ins, tuple(t64(lib, e) for e in v))
        with pytest.raises(RuntimeError, match=message):
            getattr(lib.autograd.functional, api)(*args, strict=True)


@pytest.mark.parametrize("call,exc,message", [
    (lambda: F.vjp(lambda a: a * 2, t64(ember, A2)), RuntimeError,
     "The vector v can only be None if the user-provided function returns a single Tensor with a single element."),
    (lambda: F.jvp(lambda a: a * 2, t64(ember, A2)), RuntimeError,
     "The vector v can only be None if the input to the user-provided function is a single Tensor with a single "
     "element."),
    (lambda: F.vjp(lambda a: a * 2, t64(ember, A2), t64(ember, [1.0, 2.0, 3.0])), RuntimeError,
     "v has invalid size: should be ember.Size([2]) but got ember.Size([3])."),
    (lambda: F.jvp(lambda a, b: a * b, (t64(ember, A2), t64(ember, B2)), (t64(ember, A2),)), RuntimeError,
     "v is a tuple of invalid length: should be 2 but got 1."),
    (lambda: F.vjp(lambda a: a * 2, [t64(ember, A2)], t64(ember, A2)), TypeError,
     "The inputs given to vjp must be either a Tensor or a tuple of Tensors but the given inputs has type "
     "<class 'list'>."),
    (lambda: F.jacobian(lambda a: (a, 3), t64(ember, A2)), TypeError,
     "The outputs of the user-provided function given to jacobian must be either a Tensor or a tuple of Tensors but "
     "the value at index 1 has type <class 'int'>."),
    (lambda: F.hessian(lambda a: a * 2, t64(ember, A2)), RuntimeError,
     "The Tensor returned by the function given to hessian should contain a single element"),
    (lambda: F.hvp(lambda a: (a.sum(), a.sum()), t64(ember, A2), t64(ember, A2)), RuntimeError,
     "The function given to hvp should return a single Tensor"),
    (lambda: F.jacobian(lambda a: a, t64(ember, A2), strategy="sideways"), AssertionError,
     'Expected strategy to be either "forward-mode" or "reverse-mode".'),
])
def test_argument_errors(call, exc, message):
    with pytest.raises(exc, match="^" + re.escape(message)):
        call()


@pytest.mark.parametrize("call,option", [
    (lambda: F.jacobian(lambda a: a * 2, t64(ember, A2), vectorize=True), "vectorize=True"),
    (lambda: F.hessian(lambda a: (a * a).sum(), t64(ember, A2), vectorize=True), "vectorize=True"),
    (lambda: F.jacobian(lambda a: a * 2, t64(ember, A2), strategy="forward-mode"), 'strategy="forward-mode"'),
    (lambda: F.hessian(lambda a: (a * a).sum(), t64(ember, A2), outer_jacobian_strategy="forward-mode"),
     'outer_jacobian_strategy="forward-mode"'),
])
def test_vectorize_and_forward_mode_are_not_implemented(call, option):
    with pytest.raises(NotImplementedError, match=option):
        call()


def test_the_functional_module_is_an_attribute_of_autograd():
    assert ember.autograd.functional is F
    assert F.__all__ == ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]
