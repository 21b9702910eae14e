"""ember.func: the transforms against finite differences, against torch.func (when installed)
for values and output structures, and their errors against PyTorch's."""
import numpy as np
import pytest

import ember
from ember.func import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, vjp
from ember.func._pytree import tree_flatten, tree_map

try:
    import torch
    import torch.func as tfunc
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="needs PyTorch")
F64 = ember.float64
EPS = 1e-6


def rand(*shape, seed=0):
    return ember.tensor(np.random.default_rng(seed).standard_normal(shape), dtype=F64)


def numeric_jacobian(fn, x):
    """d fn / d x by central differences, shaped (*out.shape, *x.shape)."""
    base = x.numpy()
    cols = []
    for j in range(base.size):
        step = np.zeros(base.size)
        step[j] = EPS
        step = step.reshape(base.shape)
        plus, minus = fn(ember.tensor(base + step, dtype=F64)), fn(ember.tensor(base - step, dtype=F64))
        cols.append((plus.numpy() - minus.numpy()) / (2 * EPS))
    return np.stack(cols, -1).reshape(tuple(fn(x).shape) + base.shape)


def close(a, b, tol=1e-6):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


FUNCTIONS = {
    "sin*exp": lambda a: a.sin() * a.exp(),
    "softmax": lambda a: ember.softmax(a, -1),
    "matmul": lambda a: (a.reshape(2, 3) @ a.reshape(3, 2)).reshape(-1),
    "norm": lambda a: ember.linalg.vector_norm(a).reshape(1),
    "broadcast": lambda a: (a * a).sum(0, keepdim=True) * a[:2],
}


@pytest.mark.parametrize("name", FUNCTIONS)
def test_jacobians_match_finite_differences(name):
    fn, x = FUNCTIONS[name], rand(6)
    expected = numeric_jacobian(fn, x)
    close(jacfwd(fn)(x).numpy(), expected)
    close(jacrev(fn)(x).numpy(), expected)
    v = rand(6, seed=1)
    out, tangent = jvp(fn, (x,), (v,))
    close(out.numpy(), fn(x).numpy(), 1e-12)
    close(tangent.numpy(), expected @ v.numpy())
    w = rand(*fn(x).shape, seed=2)
    out, vjp_fn = vjp(fn, x)
    (cotangent,) = vjp_fn(w)
    close(cotangent.numpy(), w.numpy() @ expected)


def test_grad_and_hessian_match_finite_differences():
    def f(a):
        return (a.sin() * a.sum() + a ** 3).sum()
    x = rand(4)
    g = grad(f)(x)
    close(g.numpy(), numeric_jacobian(lambda a: f(a).reshape(1), x)[0])
    close(hessian(f)(x).numpy(), numeric_jacobian(lambda a: grad(f)(a), x), 1e-5)
    g2, value = grad_and_value(f)(x)
    close(g2.numpy(), g.numpy(), 0)
    assert value.item() == pytest.approx(f(x).item()) and not value.requires_grad


def test_transforms_never_write_grad_and_work_under_no_grad():
    x = rand(3).requires_grad_()
    f = lambda a: (a * a).sum()  # noqa: E731
    for run in (lambda: grad(f)(x), lambda: jacrev(f)(x), lambda: jacfwd(f)(x), lambda: hessian(f)(x),
                lambda: vjp(f, x)[1](ember.ones((), dtype=F64)), lambda: jvp(f, (x,), (x.detach(),))):
        run()
        with ember.no_grad():
            run()
    assert x.grad is None
    with ember.no_grad():
        g = grad(f)(x)
    assert not g.requires_grad and g.tolist() == (2 * x.detach()).tolist()


def test_results_outside_an_enclosing_graph_do_not_require_grad():
    x = rand(3)
    f = lambda a: (a * a).sum()  # noqa: E731
    g, value = grad_and_value(f)(x)
    out, vjp_fn = vjp(lambda a: a * 2, x)
    assert not any(t.requires_grad for t in (g, value, out, vjp_fn(x)[0], jacrev(f)(x), jacfwd(f)(x)))


def test_nested_reverse_transforms_and_outer_autograd():
    x = ember.tensor(1.5, dtype=F64)
    f = lambda a: a ** 4  # noqa: E731
    assert grad(grad(f))(x).item() == pytest.approx(12 * 1.5 ** 2)
    assert grad(grad(grad(f)))(x).item() == pytest.approx(24 * 1.5)
    # an enclosing autograd computation differentiates through grad's result
    leaf = ember.tensor(1.5, dtype=F64, requires_grad=True)
    g = grad(f)(leaf)
    assert g.requires_grad
    g.backward()
    assert leaf.grad.item() == pytest.approx(12 * 1.5 ** 2)
    # jacrev of jacfwd: reverse over forward
    y = rand(3)
    h = jacrev(jacfwd(lambda a: (a ** 3).sum()))(y)
    close(h.numpy(), np.diag(6 * y.numpy()), 1e-10)


def test_forward_transforms_do_not_nest():
    with pytest.raises(RuntimeError, match="Nested forward mode AD is not supported"):
        jacfwd(jacfwd(lambda a: a.sin()))(rand(2))


def test_argnums_pytrees_and_aux():
    x, y = rand(3), rand(2, seed=1)
    grads = grad(lambda d, b: (d["u"] * d["v"][0]).sum() * b.sum(), argnums=(0, 1))({"u": x, "v": [x * 2]}, y)
    assert set(grads[0]) == {"u", "v"} and isinstance(grads[0]["v"], list)
    close(grads[0]["u"].numpy(), (2 * x * y.sum()).numpy(), 1e-12)
    close(grads[1].numpy(), np.full(2, (2 * x * x).sum().item()), 1e-12)
    g, aux = grad(lambda a: ((a * a).sum(), {"twice": a * 2}), has_aux=True)(x)
    assert not aux["twice"].requires_grad and aux["twice"].tolist() == (x * 2).tolist()
    assert grad(lambda a, b: (a * b).sum(), argnums=-1)(x, x).tolist() == x.tolist()
    # an input nothing depends on, and an output independent of the inputs, get zeros
    assert grad(lambda a, b: b.sum(), argnums=(0, 1))(x, x)[0].tolist() == [0.0] * 3
    assert grad(lambda a: x.sum())(x).tolist() == [0.0] * 3
    out, tangent, aux = jvp(lambda a: (a.exp(), a.sum()), (x,), (x,), has_aux=True)
    close(tangent.numpy(), (x.exp() * x).numpy(), 1e-12)
    assert aux.item() == pytest.approx(x.sum().item())
    out, vjp_fn, aux = vjp(lambda a: (a * 3, a), x, has_aux=True)
    assert vjp_fn(x)[0].tolist() == (3 * x).tolist()
    jac, aux = jacfwd(lambda a: (a * 2, a.sum()), has_aux=True)(x)
    assert jac.tolist() == (2 * ember.eye(3, dtype=F64)).tolist() and aux.item() == pytest.approx(x.sum().item())


def shapes(tree):
    return tree_map(lambda t: tuple(t.shape) if hasattr(t, "shape") else t, tree)


def structure_cases(lib, fn_module):
    x = lib.tensor(np.random.default_rng(5).standard_normal(3), dtype=lib.float64)
    y = lib.tensor(np.random.default_rng(6).standard_normal(2), dtype=lib.float64)
    f = lambda a, b: {"s": a.sum() * b, "p": (a.sin() * 2, b * b)}  # noqa: E731
    scalar = lambda a, b: (a.sin() * a).sum() * (b * b).sum()  # noqa: E731
    F = fn_module
    return {
        "jacfwd": lambda: F.jacfwd(f)(x, y),
        "jacfwd argnums": lambda: F.jacfwd(f, argnums=(0, 1))(x, y),
        "jacrev argnums": lambda: F.jacrev(f, argnums=(1,))(x, y),
        "jacrev": lambda: F.jacrev(f, argnums=(0, 1))(x, y),
        "grad dict": lambda: F.grad(lambda d: (d["u"] * d["v"][0]).sum())({"u": x, "v": [x.cos()]}),
        "grad_and_value aux": lambda: F.grad_and_value(lambda a: ((a * a).sum(), a.exp()), has_aux=True)(x),
        "vjp": lambda: (lambda o_fn: (o_fn[0], o_fn[1]((x.cos(), lib.tensor(1.5, dtype=lib.float64)))))(
            F.vjp(lambda a, b: (a * b, a.sum()), x, x)),
        "jvp dict": lambda: F.jvp(lambda a, b: {"k": a * b.exp()}, (x, x), (y.sum() * x, x)),
        "hessian": lambda: F.hessian(scalar, argnums=(0, 1))(x, y),
        "hessian one": lambda: F.hessian(scalar)(x, y),
    }


@needs_torch
def test_values_and_structures_match_torch_func():
    mine, theirs = structure_cases(ember, ember.func), structure_cases(torch, tfunc)
    for name in mine:
        got, expected = mine[name](), theirs[name]()
        assert shapes(got) == shapes(expected), name
        got_leaves, got_spec = tree_flatten(got)
        exp_leaves, exp_spec = tree_flatten(expected)
        assert got_spec == exp_spec, name
        for g, e in zip(got_leaves, exp_leaves):
            close(g.numpy(), e.detach().numpy(), 1e-10)


def error_cases(lib, F):
    x = lib.ones(3, dtype=lib.float64)
    return {
        "not scalar": lambda: F.grad(lambda a: a * 2)(x),
        "argnum range": lambda: F.grad(lambda a: a.sum(), argnums=1)(x),
        "argnums empty": lambda: F.grad(lambda a: a.sum(), argnums=())(x),
        "argnums type": lambda: F.grad(lambda a: a.sum(), argnums=1.5)(x),
        "argnums unique": lambda: F.jacrev(lambda a: a, argnums=(0, 0))(x),
        "aux not a pair": lambda: F.grad(lambda a: a.sum(), has_aux=True)(x),
        "not a tensor": lambda: F.grad(lambda a: 3.0)(x),
        "input not a tensor": lambda: F.grad(lambda a: a.sum())(1.0),
        "jvp primals tuple": lambda: F.jvp(lambda a: a, [x], [x]),
        "jvp primals type": lambda: F.jvp(lambda a: a, (1.0,), (x,)),
        "jvp output": lambda: F.jvp(lambda a: 2, (x,), (x,)),
        "jvp aux": lambda: F.jvp(lambda a: (a,), (x,), (x,), has_aux=True),
        "jvp size": lambda: F.jvp(lambda a: a, (x,), (x[:2],)),
        "jvp strict": lambda: F.jvp(lambda a: a.detach() * 2, (x,), (x,), strict=True),
        "vjp output": lambda: F.vjp(lambda a: 2, x),
        "vjp aux": lambda: F.vjp(lambda a: a * 2, x, has_aux=True),
        "vjp shape": lambda: F.vjp(lambda a: a * 2, x)[1](x[:2]),
        "jacrev output": lambda: F.jacrev(lambda a: 2)(x),
        "jacfwd output": lambda: F.jacfwd(lambda a: 2)(x),
    }


@needs_torch
def test_errors_match_torch_func():
    mine, theirs = error_cases(ember, ember.func), error_cases(torch, tfunc)
    for name in mine:
        with pytest.raises(Exception) as expected:
            theirs[name]()
        with pytest.raises(Exception) as got:
            mine[name]()
        assert type(got.value) is type(expected.value), name
        assert str(got.value) == str(expected.value).replace("torch.", "ember."), name


def test_errors_without_torch():
    x = ember.ones(3, dtype=F64)
    with pytest.raises(RuntimeError, match="Expected pytree structure of cotangents"):
        vjp(lambda a: (a, a), x)[1](x)
    with pytest.raises(RuntimeError, match="Expected primals and tangents to have the same python structure"):
        jvp(lambda a: a, (x,), (x, x))
    out, tangent = jvp(lambda a: a.detach() * 2, (x,), (x,))   # not strict: zeros
    assert tangent.tolist() == [0.0] * 3
    for case in error_cases(ember, ember.func).values():
        with pytest.raises((RuntimeError, ValueError)):
            case()


def test_jacobians_of_strided_and_empty_inputs():
    x = rand(2, 3).t()                                   # not contiguous
    expected = numeric_jacobian(lambda a: a.sin() * a.sum(), x)
    close(jacfwd(lambda a: a.sin() * a.sum())(x).numpy(), expected)
    close(jacrev(lambda a: a.sin() * a.sum())(x).numpy(), expected)
    empty = ember.zeros(0, dtype=F64)
    assert tuple(jacfwd(lambda a: a * 2)(empty).shape) == (0, 0) == tuple(jacrev(lambda a: a * 2)(empty).shape)
