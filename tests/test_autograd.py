"""Reverse-mode autograd as PyTorch behaves: backward, grad accumulation, graph
freeing, version counters, leaf rules, grad_fn structure, grad modes,
autograd.grad (incl. higher order) and gradients through views and common ops.
Expected values were worked out by hand and checked once against PyTorch 2.13."""
import warnings

import numpy as np
import pytest

import ember


def leaf(data, dtype=None):
    return ember.tensor(data, dtype=dtype, requires_grad=True)


def close(t, expected, tol=1e-5):
    np.testing.assert_allclose(np.array(t.tolist(), dtype=np.float64), np.array(expected, dtype=np.float64),
                               rtol=tol, atol=tol)


# ---------------------------------------------------------------- backward basics

def test_backward_on_scalar():
    x = leaf(2.0)
    y = x * x
    y.backward()
    assert x.grad.tolist() == 4.0
    assert x.grad.dim() == 0


def test_backward_on_reduced_scalar():
    x = leaf([1.0, 2.0, 3.0])
    (x * x).sum().backward()
    assert x.grad.tolist() == [2.0, 4.0, 6.0]
    assert tuple(x.grad.shape) == (3,)


def test_backward_with_gradient_argument():
    x = leaf([1.0, 2.0])
    (x * x).backward(ember.tensor([1.0, 10.0]))
    assert x.grad.tolist() == [2.0, 40.0]
    y = leaf([[1.0, 2.0], [3.0, 4.0]])
    (y * 3).backward(gradient=ember.tensor([[1.0, 0.0], [0.0, 2.0]]))
    assert y.grad.tolist() == [[3.0, 0.0], [0.0, 6.0]]


def test_backward_gradient_shape_mismatch():
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        (x * x).backward(ember.tensor([1.0, 10.0, 3.0]))


def test_non_scalar_without_gradient_raises():
    x = leaf([1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        (x * 2).backward()
    assert x.grad is None


def test_backward_without_grad_raises():
    x = ember.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match="does not require grad"):
        (x * x).sum().backward()


def test_grads_accumulate_with_retain_graph():
    x = leaf([1.0, 2.0])
    y = (x * x).sum()
    y.backward(retain_graph=True)
    assert x.grad.tolist() == [2.0, 4.0]
    y.backward()
    assert x.grad.tolist() == [4.0, 8.0]


def test_grads_accumulate_over_separate_graphs():
    x = leaf([1.0, 2.0])
    (x * 3).sum().backward()
    (x * 3).sum().backward()
    assert x.grad.tolist() == [6.0, 6.0]
    x.grad.zero_()
    (x * 5).sum().backward()
    assert x.grad.tolist() == [5.0, 5.0]
    x.grad = None
    (x * 7).sum().backward()
    assert x.grad.tolist() == [7.0, 7.0]


def test_grad_set_by_hand_accumulates():
    x = leaf([1.0, 2.0])
    x.grad = ember.ones(2)
    (x * 1).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


@pytest.mark.parametrize("fn", [lambda x: (x * x).sum(), lambda x: x.exp().sum(), lambda x: (x.sigmoid() * 2).sum()],
                         ids=["mul", "exp", "sigmoid"])
def test_second_backward_through_freed_graph_raises(fn):
    x = leaf([1.0, 2.0])
    y = fn(x)
    y.backward()
    with pytest.raises(RuntimeError, match="second time"):
        y.backward()


def test_autograd_grad_frees_graph_too():
    x = leaf([1.0, 2.0])
    y = (x * x).sum()
    ember.autograd.grad(y, x)
    with pytest.raises(RuntimeError, match="second time"):
        ember.autograd.grad(y, x)


# ---------------------------------------------------------------- version counter / in-place

def test_saved_output_modified_in_place_raises():
    a = leaf([1.0, 2.0])
    y = a.sigmoid()  # sigmoid saves its output
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_saved_input_modified_in_place_raises():
    a = leaf([1.0, 2.0])
    y = a * 2
    z = y * y  # mul saves y
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_exp_output_modified_in_place_raises():
    a = leaf([1.0, 2.0])
    y = a.exp()
    z = y * 2
    y.add_(1)
    with pytest.raises(RuntimeError, match="is at version 1; expected version 0"):
        z.sum().backward()


def test_in_place_not_affecting_saved_values_is_fine():
    a = leaf([1.0, 2.0])
    y = a + 1  # add saves nothing
    z = y * 3  # mul by a number saves only the number
    y.add_(10)
    z.sum().backward()
    assert a.grad.tolist() == [3.0, 3.0]


def test_version_counter():
    x = ember.zeros(2)
    assert x._version == 0
    x.add_(1)
    assert x._version == 1
    x[0] = 3
    assert x._version == 2
    v = x[1:]
    v.mul_(2)  # a view shares its base's counter
    assert x._version == 3
    assert v._version == 3


def test_in_place_on_leaf_requiring_grad_raises():
    a = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation"):
        a.add_(1)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation"):
        a.mul_(2)
    assert a.tolist() == [1.0, 2.0]


def test_in_place_on_view_of_leaf_raises_and_leaves_data_alone():
    a = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="in-place operation"):
        a[0] = 5
    with pytest.raises(RuntimeError, match="in-place operation"):
        a[1:].add_(1)
    assert a.tolist() == [1.0, 2.0]


def test_in_place_on_leaf_under_no_grad_is_allowed():
    a = leaf([1.0, 2.0])
    with ember.no_grad():
        a.add_(1)
        a[0] = 7
    assert a.tolist() == [7.0, 3.0]
    assert a.requires_grad and a.is_leaf


def test_in_place_on_non_leaf():
    x = leaf([1.0, 2.0, 3.0])
    y = x * 2
    y.mul_(3)
    assert y.grad_fn.name() == "MulBackward0"
    y.sum().backward()
    assert x.grad.tolist() == [6.0, 6.0, 6.0]


def test_in_place_chain_on_non_leaf():
    x = leaf([0.5, 1.0])
    y = x * 2
    y.add_(x)  # 3x
    y.exp_()  # exp(3x)
    y.sum().backward()
    close(x.grad, 3 * np.exp(3 * np.array([0.5, 1.0])))


def test_in_place_on_clone_uses_both():
    x = leaf([1.0, 2.0, 3.0])
    y = x.clone()
    y.mul_(x)  # x**2
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 4.0, 6.0]


def test_setitem_on_non_leaf():
    x = leaf([1.0, 2.0, 3.0])
    y = x * 2
    y[0] = 5
    y.sum().backward()
    assert x.grad.tolist() == [0.0, 2.0, 2.0]


def test_in_place_on_view_of_non_leaf():
    x = leaf([1.0, 2.0, 3.0])
    y = x * 2
    y[1:].mul_(3)
    assert y.tolist() == [2.0, 12.0, 18.0]
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 6.0, 6.0]


# ---------------------------------------------------------------- flags

def test_requires_grad_flags():
    a = ember.ones(2)
    assert a.requires_grad is False
    assert a.is_leaf
    assert a.grad_fn is None
    assert a.requires_grad_() is a
    assert a.requires_grad and a.is_leaf and a.grad_fn is None
    c = a * 2
    assert c.requires_grad and not c.is_leaf
    a.requires_grad_(False)
    assert not a.requires_grad
    assert not (a * 2).requires_grad


def test_requires_grad_on_non_leaf_cannot_be_changed():
    c = leaf([1.0]) * 2
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf variables"):
        c.requires_grad_(False)


def test_only_floating_tensors_can_require_grad():
    with pytest.raises(RuntimeError, match="only Tensors of floating point"):
        ember.ones(3, dtype=ember.int64).requires_grad_()
    with pytest.raises(RuntimeError, match="(?i)only Tensors of floating point"):
        ember.tensor([1, 2], requires_grad=True)


def test_creation_with_requires_grad():
    for t in (ember.zeros(2, requires_grad=True), ember.ones(2, 2, requires_grad=True),
              ember.randn(3, requires_grad=True), ember.full((2,), 3.0, requires_grad=True),
              ember.tensor([1.0], requires_grad=True), ember.arange(3.0, requires_grad=True)):
        assert t.requires_grad and t.is_leaf and t.grad_fn is None and t.grad is None


def test_integer_valued_results_do_not_require_grad():
    a = leaf([1.0, 2.0])
    assert not a.long().requires_grad
    assert not (a > 1).requires_grad
    assert not a.argmax().requires_grad


def test_detach():
    x = leaf([1.0, 2.0, 3.0])
    y = x * 2
    d = y.detach()
    assert not d.requires_grad and d.is_leaf and d.grad_fn is None
    assert d.data_ptr() == y.data_ptr()
    d[0] = 100.0  # shares memory
    assert y.tolist()[0] == 100.0
    z = (x * 2).detach_()
    assert not z.requires_grad and z.grad_fn is None


def test_non_leaf_grad_is_none_and_retain_grad():
    x = leaf([1.0, 2.0])
    y = x * 2
    y.retain_grad()
    (y * y).sum().backward()
    assert y.grad.tolist() == [4.0, 8.0]
    assert x.grad.tolist() == [8.0, 16.0]


def test_non_leaf_grad_is_none():
    x = leaf([1.0, 2.0])
    y = x * 2
    (y * y).sum().backward()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert y.grad is None


# ---------------------------------------------------------------- grad_fn graph

def test_grad_fn_next_functions():
    x = leaf([1.0, 2.0])
    w = leaf([3.0, 4.0])
    g = (x * w).grad_fn
    assert g.name() == "MulBackward0"
    nf = g.next_functions
    assert isinstance(nf, tuple) and len(nf) == 2
    for (node, idx), var in zip(nf, (x, w)):
        assert idx == 0
        # PyTorch spells it "torch::autograd::AccumulateGrad"
        assert node.name().endswith("AccumulateGrad")
        assert node.variable.data_ptr() == var.data_ptr()
        assert node.variable.requires_grad


def test_grad_fn_chain_and_constants():
    x = leaf([1.0, 2.0])
    c = ember.tensor([1.0, 2.0])
    g = (x * c + 1).grad_fn
    assert g.name() == "AddBackward0"
    (mul, i0), (none, i1) = g.next_functions
    assert mul.name() == "MulBackward0" and i0 == 0
    assert none is None
    (acc, _), (none2, _) = mul.next_functions
    assert acc.name().endswith("AccumulateGrad")
    assert acc.variable.data_ptr() == x.data_ptr()
    assert none2 is None


@pytest.mark.parametrize("name,expr", [
    ("AddBackward0", lambda a: a + 1),
    ("MulBackward0", lambda a: a * 2),
    ("SubBackward0", lambda a: a - a),
    ("DivBackward0", lambda a: a / 2),
    ("ExpBackward0", lambda a: a.exp()),
    ("SumBackward0", lambda a: a.sum()),
    ("MeanBackward0", lambda a: a.mean()),
    ("TBackward0", lambda a: a.t()),
    ("SelectBackward0", lambda a: a[0]),
    ("ViewBackward0", lambda a: a.view(4)),
    ("MmBackward0", lambda a: a @ a),
    ("SigmoidBackward0", lambda a: a.sigmoid()),
    ("SoftmaxBackward0", lambda a: a.softmax(0)),
    ("ExpandBackward0", lambda a: a.expand(2, 2, 2)),
    ("PowBackward0", lambda a: a ** 2),
    ("NegBackward0", lambda a: -a),
    ("ReluBackward0", lambda a: a.relu()),
    ("TransposeBackward0", lambda a: a.transpose(0, 1)),
    ("CloneBackward0", lambda a: a.clone()),
    ("IndexBackward0", lambda a: a[ember.tensor([0])]),
    ("ToCopyBackward0", lambda a: a.double()),
])
def test_grad_fn_names(name, expr):
    a = leaf([[1.0, 2.0], [3.0, 4.0]])
    assert expr(a).grad_fn.name() == name


# ---------------------------------------------------------------- broadcasting and dtypes

def test_broadcast_gradients_reduced_to_input_shape():
    x = ember.ones(3, 1, requires_grad=True)
    y = ember.ones(4, requires_grad=True)
    z = x + y
    assert tuple(z.shape) == (3, 4)
    z.sum().backward()
    assert tuple(x.grad.shape) == (3, 1)
    assert tuple(y.grad.shape) == (4,)
    assert x.grad.tolist() == [[4.0], [4.0], [4.0]]
    assert y.grad.tolist() == [3.0, 3.0, 3.0, 3.0]


def test_broadcast_mul_with_scalar_tensor():
    x = leaf([[1.0, 2.0], [3.0, 4.0]])
    s = leaf(2.0)
    (x * s).sum().backward()
    assert s.grad.dim() == 0
    assert s.grad.tolist() == 10.0
    assert x.grad.tolist() == [[2.0, 2.0], [2.0, 2.0]]


@pytest.mark.parametrize("da,db", [("float64", "float32"), ("float16", "bfloat16"), ("float32", "float16")])
def test_grad_dtypes_follow_inputs(da, db):
    a = ember.ones(3, dtype=getattr(ember, da), requires_grad=True)
    b = ember.ones(3, dtype=getattr(ember, db), requires_grad=True)
    (a * b).sum().backward()
    assert a.grad.dtype == getattr(ember, da)
    assert b.grad.dtype == getattr(ember, db)
    assert a.grad.tolist() == [1.0, 1.0, 1.0]


def test_grad_through_dtype_conversion():
    a = leaf([1.0, 2.0])
    b = a.double()
    (b * b).sum().backward()
    assert a.grad.dtype == ember.float32
    assert a.grad.tolist() == [2.0, 4.0]


# ---------------------------------------------------------------- grad mode

def test_no_grad_context():
    x = leaf([1.0])
    with ember.no_grad():
        assert not ember.is_grad_enabled()
        y = x * 2
    assert ember.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None and y.is_leaf


def test_no_grad_restores_on_exception():
    with pytest.raises(ValueError):
        with ember.no_grad():
            raise ValueError
    assert ember.is_grad_enabled()


def test_enable_grad_inside_no_grad():
    x = leaf([1.0])
    with ember.no_grad():
        with ember.enable_grad():
            assert ember.is_grad_enabled()
            y = x * 2
        assert not ember.is_grad_enabled()
    assert y.requires_grad


def test_grad_mode_decorators():
    x = leaf([1.0])

    @ember.no_grad()
    def f(a):
        assert not ember.is_grad_enabled()
        return a * 2

    @ember.enable_grad()
    def g(a):
        return a * 2

    assert not f(x).requires_grad
    assert f.__name__ == "f"
    with ember.no_grad():
        assert g(x).requires_grad
        assert not ember.is_grad_enabled()
    assert ember.is_grad_enabled()


def test_no_grad_bare_decorator():
    x = leaf([1.0])

    @ember.no_grad
    def f(a):
        return a * 2

    assert not f(x).requires_grad
    assert ember.is_grad_enabled()


def test_set_grad_enabled():
    x = leaf([1.0])
    with ember.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert ember.is_grad_enabled()
    ember.set_grad_enabled(False)
    try:
        assert not ember.is_grad_enabled()
        assert not (x * 2).requires_grad
    finally:
        ember.set_grad_enabled(True)
    assert ember.is_grad_enabled()
    with ember.set_grad_enabled(True):
        assert (x * 2).requires_grad

    @ember.set_grad_enabled(False)
    def f():
        return (x * 2).requires_grad, ember.is_grad_enabled()

    assert ember.is_grad_enabled()
    assert f() == (False, False)
    assert ember.is_grad_enabled()


# ---------------------------------------------------------------- autograd.grad

def test_autograd_grad_basic():
    a = leaf([1.0, 2.0])
    b = leaf([3.0, 4.0])
    ga, gb = ember.autograd.grad((a * b).sum(), (a, b))
    assert ga.tolist() == [3.0, 4.0]
    assert gb.tolist() == [1.0, 2.0]
    assert a.grad is None and b.grad is None


def test_autograd_grad_outputs_and_non_leaf():
    a = leaf([1.0, 2.0])
    (g,) = ember.autograd.grad(a * a, a, grad_outputs=ember.tensor([1.0, 3.0]))
    assert g.tolist() == [2.0, 12.0]
    b = a * 3
    (gb,) = ember.autograd.grad(b.sum(), b)
    assert gb.tolist() == [1.0, 1.0]


def test_autograd_grad_unused_input():
    a = leaf([1.0, 2.0])
    b = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="allow_unused=True"):
        ember.autograd.grad((a * 2).sum(), [a, b])
    ga, gb = ember.autograd.grad((a * 2).sum(), [a, b], allow_unused=True)
    assert ga.tolist() == [2.0, 2.0]
    assert gb is None


def test_second_derivative_of_cube():
    x = leaf([1.0, 2.0, -3.0])
    y = (x ** 3).sum()
    (g,) = ember.autograd.grad(y, x, create_graph=True)
    assert g.requires_grad
    close(g, [3.0, 12.0, 27.0])
    (g2,) = ember.autograd.grad(g.sum(), x)
    close(g2, [6.0, 12.0, -18.0])  # d2/dx2 x**3 = 6x
    assert x.grad is None


def test_third_derivative_scalar():
    x = leaf(2.0)
    (g,) = ember.autograd.grad(x ** 3, x, create_graph=True)
    (g2,) = ember.autograd.grad(g, x, create_graph=True)
    (g3,) = ember.autograd.grad(g2, x)
    assert (g.item(), g2.item(), g3.item()) == (12.0, 12.0, 6.0)


def test_second_derivative_of_product():
    x = leaf([0.5, 1.5])
    y = (x.exp() * x).sum()  # y' = e^x (1 + x), y'' = e^x (2 + x)
    (g,) = ember.autograd.grad(y, x, create_graph=True)
    (g2,) = ember.autograd.grad(g.sum(), x)
    v = np.array([0.5, 1.5])
    close(g, np.exp(v) * (1 + v))
    close(g2, np.exp(v) * (2 + v))


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True:UserWarning")
def test_backward_create_graph():
    x = leaf([2.0])
    (x ** 3).sum().backward(create_graph=True)
    g = x.grad
    assert g.requires_grad
    assert g.tolist() == [12.0]
    x.grad = None
    g.sum().backward()
    assert x.grad.tolist() == [12.0]


def test_autograd_backward_function():
    a = leaf([1.0, 2.0])
    b = leaf([1.0, 2.0])
    ember.autograd.backward([(a * 2).sum(), (b * 3).sum()])
    assert a.grad.tolist() == [2.0, 2.0]
    assert b.grad.tolist() == [3.0, 3.0]
    c = leaf([1.0, 2.0])
    ember.autograd.backward(c * 2, ember.tensor([1.0, 5.0]))
    assert c.grad.tolist() == [2.0, 10.0]


# ---------------------------------------------------------------- gradients through views and ops

def grid():
    return ember.arange(12.0).reshape(3, 4).requires_grad_()


def grad_of(fn, weight=None):
    a = grid()
    out = fn(a)
    (out if weight is None else out * ember.tensor(weight)).sum().backward()
    return a.grad.tolist()


def test_grad_select():
    assert grad_of(lambda a: a[1]) == [[0.0] * 4, [1.0] * 4, [0.0] * 4]
    assert grad_of(lambda a: a.select(1, 2), [1.0, 2.0, 3.0]) == \
        [[0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 2.0, 0.0], [0.0, 0.0, 3.0, 0.0]]
    assert grad_of(lambda a: a[-1, -1]) == [[0.0] * 4, [0.0] * 4, [0.0, 0.0, 0.0, 1.0]]


def test_grad_slicing():
    assert grad_of(lambda a: a[:, 1::2], [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]) == \
        [[0.0, 1.0, 0.0, 2.0], [0.0, 3.0, 0.0, 4.0], [0.0, 5.0, 0.0, 6.0]]
    assert grad_of(lambda a: a[-2:, :-1]) == [[0.0] * 4, [1.0, 1.0, 1.0, 0.0], [1.0, 1.0, 1.0, 0.0]]


def test_grad_transpose():
    assert grad_of(lambda a: a.t(), [[1.0, 2.0, 3.0]] * 4) == [[1.0] * 4, [2.0] * 4, [3.0] * 4]
    # d/da sum(a.T * a.T) = 2a
    a = grid()
    (a.transpose(0, 1) * a.transpose(0, 1)).sum().backward()
    assert a.grad.tolist() == (2 * np.arange(12.0).reshape(3, 4)).tolist()


def test_grad_view_and_reshape():
    w = [[1.0, 2, 3, 4, 5, 6], [7, 8, 9, 10, 11, 12]]
    expected = [[1.0, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]]
    assert grad_of(lambda a: a.view(2, 6), w) == expected
    assert grad_of(lambda a: a.reshape(2, 6), w) == expected
    assert grad_of(lambda a: a.flatten(), list(range(1, 13))) == expected


def test_grad_expand():
    assert grad_of(lambda a: a[:, :1].expand(3, 5)) == [[5.0, 0, 0, 0]] * 3
    assert grad_of(lambda a: a[None].expand(2, 3, 4)) == [[2.0] * 4] * 3


def test_grad_mm_and_matmul():
    a = leaf([[1.0, 2.0], [3.0, 4.0]])
    b = leaf([[5.0, 6.0], [7.0, 8.0]])
    (a @ b).sum().backward()
    assert a.grad.tolist() == [[11.0, 15.0], [11.0, 15.0]]
    assert b.grad.tolist() == [[4.0, 4.0], [6.0, 6.0]]
    a.grad = None
    b.grad = None
    ember.mm(a, b).sum().backward()
    assert a.grad.tolist() == [[11.0, 15.0], [11.0, 15.0]]
    m = leaf([[1.0, 2.0], [3.0, 4.0]])
    v = leaf([5.0, 6.0])
    ember.matmul(m, v).sum().backward()
    assert m.grad.tolist() == [[5.0, 6.0], [5.0, 6.0]]
    assert v.grad.tolist() == [4.0, 6.0]
    x = ember.ones(2, 3, 4, requires_grad=True)
    y = ember.ones(4, 5, requires_grad=True)
    ember.matmul(x, y).sum().backward()
    assert tuple(x.grad.shape) == (2, 3, 4)
    assert x.grad.tolist() == np.full((2, 3, 4), 5.0).tolist()
    assert y.grad.tolist() == np.full((4, 5), 6.0).tolist()


def test_grad_sum_mean_with_dims():
    assert grad_of(lambda a: a.sum(dim=1), [1.0, 2.0, 3.0]) == [[1.0] * 4, [2.0] * 4, [3.0] * 4]
    assert grad_of(lambda a: a.sum(1, keepdim=True), [[1.0], [2.0], [3.0]]) == [[1.0] * 4, [2.0] * 4, [3.0] * 4]
    assert grad_of(lambda a: a.sum((0, 1))) == [[1.0] * 4] * 3
    a = grid()
    (a.mean(0) * ember.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
    close(a.grad, [[1 / 3, 2 / 3, 1.0, 4 / 3]] * 3)
    a = grid()
    a.mean((0, 1)).backward()
    close(a.grad, np.full((3, 4), 1 / 12))
    a = grid()
    a.mean(dim=-1, keepdim=True).sum().backward()
    close(a.grad, np.full((3, 4), 0.25))


def test_grad_softmax():
    x = leaf([1.0, 2.0, 3.0])
    y = ember.softmax(x, 0)
    close(y, [0.090031, 0.244728, 0.665241])
    y[0].backward()
    close(x.grad, [0.081925, -0.022033, -0.059892])
    a = grid()
    (a.softmax(1) * ember.tensor([1.0, 0.0, 0.0, 0.0])).sum().backward()
    close(a.grad, [[0.031031, -0.002794, -0.007594, -0.020643]] * 3)


def test_grad_tensor_indexing():
    assert grad_of(lambda a: a[ember.tensor([0, 2, 0])]) == [[2.0] * 4, [0.0] * 4, [1.0] * 4]
    assert grad_of(lambda a: a[ember.tensor([0, 2, 0]), ember.tensor([1, 1, 3])]) == \
        [[0.0, 1.0, 0.0, 1.0], [0.0] * 4, [0.0, 1.0, 0.0, 0.0]]
    assert grad_of(lambda a: a[:, [0, 0, 3]]) == [[2.0, 0.0, 0.0, 1.0]] * 3
    assert grad_of(lambda a: a[a > 5]) == [[0.0] * 4, [0.0, 0.0, 1.0, 1.0], [1.0] * 4]


def test_grad_of_unary_and_binary():
    x = leaf([0.5, 2.0])
    y = leaf([3.0, -1.0])
    (x * y + x / y - y ** 2 + x.exp()).sum().backward()
    xv, yv = np.array([0.5, 2.0]), np.array([3.0, -1.0])
    close(x.grad, yv + 1 / yv + np.exp(xv))
    close(y.grad, xv - xv / yv ** 2 - 2 * yv)


# ---------------------------------------------------------------- out= and grad

def test_out_with_requires_grad_raises():
    a = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="out=... arguments don't support automatic differentiation"):
        ember.add(a, a, out=ember.empty(2))
    with pytest.raises(RuntimeError, match="exp"):
        ember.exp(a, out=ember.empty(2))


def test_out_under_no_grad_is_fine():
    a = leaf([1.0, 2.0])
    out = ember.empty(2)
    with ember.no_grad():
        r = ember.add(a, a, out=out)
    assert r is out
    assert out.tolist() == [2.0, 4.0]


def test_variable_is_a_new_detached_leaf_sharing_storage():
    from ember.autograd import Variable
    t = ember.ones(2)
    v = Variable(t, requires_grad=True)
    assert v is not t and v.requires_grad and v.is_leaf and not t.requires_grad
    assert v.data_ptr() == t.data_ptr()
    t.add_(1)
    assert v.tolist() == [2.0, 2.0]                 # shares storage
    x = ember.ones(2, requires_grad=True)
    z = x * 2
    w = Variable(z)
    assert w.grad_fn is None and not w.requires_grad and w.is_leaf and z.grad_fn is not None
    w2 = Variable(z, requires_grad=True)
    (w2 * 3).sum().backward()
    assert x.grad is None and w2.grad.tolist() == [3.0, 3.0]   # the graph stops at the new leaf
    assert isinstance(t, Variable)
    with pytest.raises(TypeError, match="Variable data has to be a tensor, but got int"):
        Variable(3)
