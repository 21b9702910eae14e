"""In-place ops on views with autograd, as PyTorch does them.

A view shares its base's version counter and remembers its root base. An in-place
op on a view of a non-leaf rebases the base's history (CopySlices); a view whose
base (or another view of it) was written in place since its grad_fn was set gets
a regenerated history (AsStridedBackward0), so its gradient is right. Views of
leaves that require grad, views made in no_grad mode and the outputs of unbind /
split / chunk refuse in-place writes with PyTorch's errors.

Gradients are checked against central finite differences always, and against
PyTorch when it is installed; so are the error messages.
"""
import random
import re
import zlib

import numpy as np
import pytest

import ember

try:
    import torch
except ImportError:  # the suite runs without PyTorch; only the comparisons need it
    torch = None

EPS = 1e-6


def _numpy(t):
    return t.detach().numpy().copy()


def _leaves(lib, arrays, requires_grad=True):
    return [lib.tensor(a, dtype=lib.float64, requires_grad=requires_grad) for a in arrays]


def _backward(lib, fn, arrays, v):
    """The gradients of sum(fn(*leaves) * v) with respect to each leaf (zeros when unused)."""
    leaves = _leaves(lib, arrays)
    out = fn(lib, *leaves)
    out.backward(lib.tensor(v, dtype=lib.float64))
    return [_numpy(l.grad) if l.grad is not None else np.zeros(np.shape(a)) for l, a in zip(leaves, arrays)]


def _finite_differences(fn, arrays, v):
    def objective(values):
        with ember.no_grad():
            out = fn(ember, *_leaves(ember, values, requires_grad=False))
        return float(np.sum(_numpy(out) * v))

    grads = []
    for k, a in enumerate(arrays):
        g = np.zeros(np.shape(a))
        for j in range(g.size):
            plus = [np.array(b, dtype=np.float64) for b in arrays]
            minus = [np.array(b, dtype=np.float64) for b in arrays]
            plus[k].flat[j] += EPS
            minus[k].flat[j] -= EPS
            g.flat[j] = (objective(plus) - objective(minus)) / (2 * EPS)
        grads.append(g)
    return grads


def check_gradients(fn, arrays, seed=0):
    """fn(lib, *leaves) -> tensor, written once for ember and torch (their APIs agree)."""
    rng = np.random.default_rng(seed)
    with ember.no_grad():
        shape = tuple(fn(ember, *_leaves(ember, arrays, requires_grad=False)).shape)
    v = rng.standard_normal(shape)
    got = _backward(ember, fn, arrays, v)
    for g, want in zip(got, _finite_differences(fn, arrays, v)):
        np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-6)
    if torch is not None:
        for g, want in zip(got, _backward(torch, fn, arrays, v)):
            np.testing.assert_allclose(g, want, rtol=1e-10, atol=1e-12)
    return got


def _inputs(seed, *shapes):
    if isinstance(seed, str):
        seed = zlib.crc32(seed.encode())
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) for s in shapes]


# ----------------------------------------------------------------------------- the examples

def test_inplace_on_a_column_of_a_non_leaf():
    x = ember.ones(3, 4, requires_grad=True)
    y = x * 1
    y[:, 0].mul_(2)
    y.sum().backward()
    want = np.ones((3, 4))
    want[:, 0] = 2
    np.testing.assert_array_equal(x.grad.numpy(), want)
    assert y.grad_fn.name() == "torch::autograd::CopySlices"


def _view_then_base_written(lib, x):
    y = x.clone()
    v = y[1]
    y.mul_(3)
    return v * v


@pytest.mark.parametrize("shape", [(3, 4), (2, 1), (4, 3, 2), (5,), (2, 0, 3)])
def test_view_taken_before_its_base_was_written_sees_the_write(shape):
    # The silently wrong case: v's history must be regenerated from y's new one.
    x0 = np.random.default_rng(len(shape)).standard_normal(shape)
    x = ember.tensor(x0, dtype=ember.float64, requires_grad=True)
    out = _view_then_base_written(ember, x)
    assert out.grad_fn.next_functions[0][0].name() == "AsStridedBackward0"
    out.sum().backward()
    want = np.zeros(shape)
    want[1] = 18 * x0[1]
    np.testing.assert_allclose(x.grad.numpy(), want)
    if x0.size:
        check_gradients(_view_then_base_written, [x0])


def test_grad_fn_attribute_of_a_stale_view_is_regenerated():
    x = ember.ones(3, 4, requires_grad=True)
    y = x * 1
    v = y[1]
    assert v.grad_fn.name() == "SelectBackward0"
    y.mul_(2)
    fn = v.grad_fn
    assert fn.name() == "AsStridedBackward0"
    assert fn.next_functions[0][0].name() == "MulBackward0"
    assert v.grad_fn is fn  # rebuilt once per write, not on every read
    assert not v.is_leaf and v.requires_grad


# ----------------------------------------------------------------------------- every in-place op class

def _column_mul(lib, x):
    y = x * 1
    y[:, 0].mul_(2)
    return y


def _row_mul_by_grad_tensor(lib, x, w):
    y = x * 1
    y[1].mul_(w)
    return y


def _transposed_slice_add(lib, x, w):
    y = x * 1
    y.t()[1:3].add_(w[:3], alpha=0.5)
    return y


def _row_div(lib, x, w):
    y = x * 1
    y[0].div_(w + 3)
    return y * y


def _rows_copy(lib, x, w):
    y = x * 1
    y[1:].copy_(w * 2)
    return y * x


def _column_fill(lib, x):
    y = x * 1
    y[:, 1].fill_(3.0)
    return y * x


def _row_zero(lib, x):
    y = x.clone()
    y[0].zero_()
    return y * y


def _setitem_tensor(lib, x, w):
    y = x * 1
    y[1] = w * 3
    return y * y


def _setitem_advanced(lib, x, w):
    y = x * 1
    y[1:, lib.tensor([0, 2])] = w[:2]
    return y * y


def _setitem_mask(lib, x, w):
    y = x * 1
    mask = lib.tensor([[True, False, False, True], [False, True, False, False], [False, False, False, True]])
    y[mask] = w.sum()
    return y * y


def _setitem_number(lib, x):
    y = x * 1
    y[0, 1:] = 2.0
    return y * y


def _index_put_on_a_slice(lib, x, w):
    y = x * 1
    y[1:].index_put_((lib.tensor([1, 0]),), w * 1)
    y[:2].index_put_((lib.tensor([0, 0]), lib.tensor([3, 3])), w[:2], accumulate=True)
    return y * y


def _row_clamp(lib, x):
    y = x * 1
    y[1].clamp_(-0.5, 0.5)
    return y * x


def _exp_saving_its_result(lib, x):
    y = x * 1
    y[:, 1:3].exp_()
    return y


def _tanh_sigmoid_through_transposes(lib, x):
    # Each saves its result: a second write into the same base would make backward raise.
    y = x * 1
    y.t()[0].tanh_()
    z = x * 2
    z.t()[2].sigmoid_()
    return y + z


def _base_without_grad_written_with_grad(lib, x, w):
    z = lib.zeros(3, 4, dtype=lib.float64)
    z[1].copy_(w)
    z[2].add_(w * w)
    return z * x


INPLACE_THROUGH_VIEWS = {
    "mul_-column": (_column_mul, [(3, 4)]),
    "mul_-row-by-tensor": (_row_mul_by_grad_tensor, [(3, 4), (4,)]),
    "add_-transposed-slice": (_transposed_slice_add, [(3, 4), (4,)]),
    "div_-row": (_row_div, [(3, 4), (4,)]),
    "copy_-rows": (_rows_copy, [(3, 4), (4,)]),
    "fill_-column": (_column_fill, [(3, 4)]),
    "zero_-row": (_row_zero, [(3, 4)]),
    "setitem-tensor": (_setitem_tensor, [(3, 4), (4,)]),
    "setitem-advanced": (_setitem_advanced, [(3, 4), (4,)]),
    "setitem-mask": (_setitem_mask, [(3, 4), (4,)]),
    "setitem-number": (_setitem_number, [(3, 4)]),
    "index_put_-slice": (_index_put_on_a_slice, [(3, 4), (4,)]),
    "clamp_-row": (_row_clamp, [(3, 4)]),
    "exp_-saves-result": (_exp_saving_its_result, [(3, 4)]),
    "tanh_-sigmoid_-transposed": (_tanh_sigmoid_through_transposes, [(3, 4)]),
    "base-without-grad": (_base_without_grad_written_with_grad, [(3, 4), (4,)]),
}


@pytest.mark.parametrize("name", sorted(INPLACE_THROUGH_VIEWS))
def test_inplace_op_through_a_view_of_a_non_leaf(name):
    fn, shapes = INPLACE_THROUGH_VIEWS[name]
    check_gradients(fn, _inputs(name, *shapes))


def test_setitem_with_a_value_that_requires_grad():
    x = ember.ones(3, 4, requires_grad=True)
    w = ember.ones(4, requires_grad=True)
    y = x * 1
    y[1] = w * 2
    (y * y).sum().backward()
    want_x = np.full((3, 4), 2.0)
    want_x[1] = 0
    np.testing.assert_array_equal(x.grad.numpy(), want_x)  # the overwritten row gets nothing
    np.testing.assert_array_equal(w.grad.numpy(), np.full(4, 8.0))
    assert y.grad_fn.name() == "torch::autograd::CopySlices"


def test_base_without_grad_starts_requiring_grad_when_a_view_is_written():
    z = ember.zeros(2, 3)
    v = z[0]
    w = ember.ones(3, requires_grad=True)
    v.mul_(w)
    assert z.requires_grad and z.grad_fn.name() == "torch::autograd::CopySlices"
    assert v.grad_fn.name() == "AsStridedBackward0"
    other = z[1]  # taken after: an ordinary view
    assert other.grad_fn.name() == "SelectBackward0"


def test_view_of_a_base_that_later_requires_grad():
    z = ember.zeros(3, 4)
    v = z[0]
    z.copy_(ember.ones(3, 4, requires_grad=True) * 1)
    assert v.requires_grad and v.grad_fn.name() == "AsStridedBackward0"
    if torch is not None:
        t = torch.zeros(3, 4)
        tv = t[0]
        t.copy_(torch.ones(3, 4, requires_grad=True) * 1)
        assert tv.requires_grad and type(tv.grad_fn).__name__ == "AsStridedBackward0"


# ----------------------------------------------------------------------------- chains of views

def _chain_written_in_the_middle(lib, x, w):
    y = x * 1
    a = y[1:]
    b = a.t()
    c = b[2]
    c.mul_(w[:2])
    return lib.stack([a.sum(), (b * b).sum(), c.sum(), (y * y).sum()])


def _view_of_views_then_base_written(lib, x, w):
    y = x * 1
    v = y.t()[1:].unsqueeze(0)
    y.mul_(w)
    return v * 2


def _view_written_then_base_written(lib, x, w):
    y = x * 1
    v = y[1]
    v.mul_(w)
    y.mul_(2)
    return v * v + y.sum()


def _overlapping_views_written(lib, x, w):
    y = x * 1
    a = y[:2]
    b = y[1:]
    a.mul_(2)
    b.add_(w)
    return lib.stack([(a * a).sum(), (b * b).sum()])


def _expand_then_clone(lib, x):
    y = x[:, :1].expand(3, 4).clone()
    y[:, 1].mul_(3)
    return y * y


def _expanded_view_of_a_written_base(lib, x, w):
    y = x[:, :1] * 1
    e = y.expand(3, 4)
    y.mul_(2)
    return e * w


def _reshaped_and_permuted(lib, x, w):
    y = x * 1
    y.view(2, 6)[1, 2:].add_(1.5)
    y.reshape(12)[3:7].mul_(w)
    z = (y * 1).view(3, 2, 2)
    p = z.permute(2, 0, 1)
    z.narrow(0, 1, 2).squeeze(-1).unsqueeze(0)[0, 1].mul_(w[:2].view(2, 1))
    return p * p


CHAINS = {
    "written-in-the-middle": (_chain_written_in_the_middle, [(3, 4), (4,)]),
    "view-of-views-then-base": (_view_of_views_then_base_written, [(3, 4), (4,)]),
    "view-then-base": (_view_written_then_base_written, [(3, 4), (4,)]),
    "overlapping-views": (_overlapping_views_written, [(3, 4), (4,)]),
    "expand-then-clone": (_expand_then_clone, [(3, 4)]),
    "expanded-view-of-written-base": (_expanded_view_of_a_written_base, [(3, 4), (4,)]),
    "reshape-narrow-squeeze-permute": (_reshaped_and_permuted, [(3, 4), (4,)]),
}


@pytest.mark.parametrize("name", sorted(CHAINS))
def test_chains_of_views(name):
    fn, shapes = CHAINS[name]
    check_gradients(fn, _inputs(name, *shapes))


def test_views_of_views_point_at_the_root_base():
    y = ember.ones(2, 3, 4, requires_grad=True) * 1
    v = y[1].t()[2:].unsqueeze(0)
    assert v._is_view() and not y._is_view()
    assert v._base.data_ptr() == y.data_ptr() and v._base.shape == y.shape
    assert y[0]._base.grad_fn.name() == "MulBackward0"


# ----------------------------------------------------------------------------- multi-output views

@pytest.mark.parametrize("split,name,last_rows", [
    (lambda t: t.unbind(), "UnbindBackward0", 1),
    (lambda t: t.split(2), "SplitBackward0", 1),
    (lambda t: t.chunk(2), "SplitBackward0", 1),
    (lambda t: t.split([1, 2]), "SplitWithSizesBackward0", 2),
], ids=["unbind", "split", "chunk", "split-sizes"])
def test_multi_output_views_share_one_node(split, name, last_rows):
    x = ember.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], dtype=ember.float64, requires_grad=True)
    parts = split(x * 1)
    assert all(p.grad_fn.name() == name for p in parts)
    assert [p.output_nr for p in parts] == list(range(len(parts)))
    assert parts[0].grad_fn is parts[-1].grad_fn
    (parts[-1] * 3).sum().backward()  # only the last output gets a gradient
    want = np.zeros((3, 2))
    want[3 - last_rows:] = 3
    np.testing.assert_array_equal(x.grad.numpy(), want)


def _unbind_rows_used_unevenly(lib, x):
    a, b, c = (x * 1).unbind()
    return lib.stack([a * 2, c * c])


def _split_pieces_used_unevenly(lib, x):
    p, q, r = x.t().chunk(3)
    return lib.cat([r * r, p])


@pytest.mark.parametrize("fn", [_unbind_rows_used_unevenly, _split_pieces_used_unevenly])
def test_multi_output_view_gradients(fn):
    check_gradients(fn, _inputs(3, (3, 3)))


# ----------------------------------------------------------------------------- errors

LEAF_VIEW = "a view of a leaf Variable that requires grad is being used in an in-place operation."
NO_GRAD_VIEW_TAIL = (" Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your "
                     "code by moving both the view and the inplace either both inside the no_grad block (if you "
                     "don't want the inplace to be tracked) or both outside (if you want the inplace to be tracked).")
MULTI_OUTPUT_TAIL = (" This view is the output of a function that returns multiple views. Such functions do not allow "
                     "the output views to be modified inplace. You should replace the inplace operation by an "
                     "out-of-place one.")


def _raises_like_pytorch(fn, message):
    """fn(lib) raises a RuntimeError: ember's ends with PyTorch's message (ember names the op first)."""
    with pytest.raises(RuntimeError) as e:
        fn(ember)
    assert str(e.value).endswith(message), str(e.value)
    if torch is not None:
        with pytest.raises(RuntimeError, match=re.escape(message)):
            fn(torch)


def _leaf(lib):
    return lib.ones(3, 4, requires_grad=True)


@pytest.mark.parametrize("write", [
    lambda lib, x: x[0].mul_(2),
    lambda lib, x: x[:, 1].add_(lib.ones(3)),
    lambda lib, x: x.t().copy_(lib.zeros(4, 3)),
    lambda lib, x: x[1:].fill_(1.0),
    lambda lib, x: x[0].zero_(),
    lambda lib, x: x.__setitem__(0, lib.ones(4)),
    lambda lib, x: x.__setitem__((slice(None), 1), 2.0),
    lambda lib, x: x[1:].index_put_((lib.tensor([0]),), lib.ones(4)),
    lambda lib, x: x[0].floor_divide_(2),
], ids=["mul_", "add_", "copy_", "fill_", "zero_", "setitem-tensor", "setitem-number", "index_put_",
        "floor_divide_"])
def test_inplace_on_a_view_of_a_leaf_raises(write):
    _raises_like_pytorch(lambda lib: write(lib, _leaf(lib)), LEAF_VIEW)


def test_inplace_on_a_leaf_raises():
    _raises_like_pytorch(lambda lib: _leaf(lib).mul_(2),
                         "a leaf Variable that requires grad is being used in an in-place operation.")


def _no_grad_view_written(lib):
    y = _leaf(lib) * 1
    with lib.no_grad():
        v = y[0]
    v.mul_(2)


def _no_grad_view_of_a_leaf_written(lib):
    x = _leaf(lib)
    with lib.no_grad():
        v = x[0]
    v.mul_(2)


def _no_grad_view_written_with_a_grad_value(lib):
    z = lib.ones(3, 4)
    with lib.no_grad():
        v = z[0]
    v.mul_(lib.ones(4, requires_grad=True))


def _view_of_a_no_grad_view_written(lib):
    y = _leaf(lib) * 1
    with lib.no_grad():
        v = y[0]
    v[1:].mul_(2)


def _no_grad_view_read_after_its_base_was_written(lib):
    y = _leaf(lib) * 1
    with lib.no_grad():
        v = y[0]
    y.mul_(2)
    return v * 2


@pytest.mark.parametrize("fn,message", [
    (_no_grad_view_written, "A view was created in no_grad mode and is being modified inplace with grad mode "
                            "enabled." + NO_GRAD_VIEW_TAIL),
    (_no_grad_view_read_after_its_base_was_written, "A view was created in no_grad mode and its base or another "
                                                    "view of its base has been modified inplace with grad mode "
                                                    "enabled." + NO_GRAD_VIEW_TAIL),
    (_no_grad_view_of_a_leaf_written, "A view was created in no_grad mode and is being modified inplace with grad "
                                      "mode enabled." + NO_GRAD_VIEW_TAIL),
    (_no_grad_view_written_with_a_grad_value, "A view was created in no_grad mode and is being modified inplace "
                                              "with grad mode enabled." + NO_GRAD_VIEW_TAIL),
    (_view_of_a_no_grad_view_written, "Output 0 of Slice is a view of a view which was created in no_grad mode and "
                                      "is being modified inplace with grad mode enabled." + NO_GRAD_VIEW_TAIL),
], ids=["view", "base-written", "view-of-leaf", "base-without-grad", "view-of-view"])
def test_inplace_on_a_view_made_in_no_grad_mode_raises(fn, message):
    _raises_like_pytorch(fn, message)


def test_view_made_in_no_grad_mode_requires_grad_through_its_base_but_has_no_edge():
    y = _leaf(ember) * 1
    with ember.no_grad():
        v = y[0]
    assert v.requires_grad and v.grad_fn is None and v.is_leaf
    out = v * 2
    assert out.requires_grad and out.grad_fn.next_functions[0][0] is None
    with ember.no_grad():
        v.mul_(2)  # allowed: neither is tracked


MULTI_OUTPUT_SPLITS = {
    "unbind": (lambda t: t.unbind(), "Unbind"),
    "split": (lambda t: t.split(1), "Split"),
    "chunk": (lambda t: t.chunk(3), "Split"),
    "split-sizes": (lambda t: t.split([1, 2]), "SplitWithSizes"),
}


@pytest.mark.parametrize("kind", sorted(MULTI_OUTPUT_SPLITS))
def test_inplace_on_an_output_of_a_multi_output_view_raises(kind):
    split, name = MULTI_OUTPUT_SPLITS[kind]
    _raises_like_pytorch(lambda lib: split(_leaf(lib) * 1)[1].mul_(2),
                         f"Output 1 of {name} is a view and is being modified inplace." + MULTI_OUTPUT_TAIL)


def test_inplace_on_a_view_of_an_unbind_output_raises():
    _raises_like_pytorch(lambda lib: (_leaf(lib) * 1).unbind()[1][0:2].mul_(2),
                         "Output 0 of Slice is a view and is being modified inplace." + MULTI_OUTPUT_TAIL)


INDIRECT_MULTI_OUTPUT = "Output 0 of Unbind is a view and its base or another view of its base has been " \
                        "modified inplace." + MULTI_OUTPUT_TAIL


def _unbind_then_base_written(lib):
    y = _leaf(lib) * 1
    parts = y.unbind()
    y.mul_(2)
    return parts


@pytest.mark.parametrize("read", [lambda p: p.grad_fn, lambda p: p * 2, lambda p: p.is_leaf, lambda p: p.sum()],
                         ids=["grad_fn", "mul", "is_leaf", "sum"])
def test_unbind_outputs_read_after_their_base_was_written_raise(read):
    _raises_like_pytorch(lambda lib: read(_unbind_then_base_written(lib)[0]), INDIRECT_MULTI_OUTPUT)


def test_unbind_output_written_in_no_grad_mode_raises_when_read():
    def fn(lib):
        parts = (_leaf(lib) * 1).unbind()
        with lib.no_grad():
            parts[0].mul_(2)  # allowed
        return parts[0].grad_fn

    _raises_like_pytorch(fn, INDIRECT_MULTI_OUTPUT)


def test_unbind_output_read_after_base_written_keeps_its_values_and_repr():
    parts = _unbind_then_base_written(ember)
    assert parts[0].requires_grad
    np.testing.assert_array_equal(parts[0].detach().numpy(), np.full(4, 2.0))
    assert repr(parts[0]) == "tensor([2., 2., 2., 2.], grad_fn=<Invalid>)"
    if torch is not None:
        assert repr(_unbind_then_base_written(torch)[0]) == repr(parts[0])


def test_unbind_of_a_base_without_grad_written_with_a_grad_value_raises():
    def fn(lib):
        a, b, c = lib.zeros(3, 4).unbind()
        a.copy_(lib.ones(4, requires_grad=True))

    _raises_like_pytorch(fn, "A view was created in no_grad mode and is being modified inplace with grad mode "
                             "enabled." + MULTI_OUTPUT_TAIL)


def test_unbind_made_in_no_grad_mode_is_a_no_grad_view():
    def fn(lib):
        y = _leaf(lib) * 1
        with lib.no_grad():
            parts = y.unbind()
        parts[0].mul_(2)

    _raises_like_pytorch(fn, "A view was created in no_grad mode and is being modified inplace with grad mode "
                             "enabled." + NO_GRAD_VIEW_TAIL)


def test_out_argument_that_is_a_view_of_a_graph_tensor_raises():
    _raises_like_pytorch(lambda lib: lib.mul(lib.ones(4), lib.ones(4), out=(_leaf(lib) * 1)[0]),
                         "mul(): functions with out=... arguments don't support automatic differentiation, but one "
                         "of the arguments requires grad.")


def test_detach_in_place_on_a_view_raises():
    with pytest.raises(RuntimeError, match=re.escape("Can't detach views in-place. Use detach() instead.")):
        (_leaf(ember) * 1)[0].detach_()
    y = _leaf(ember) * 1
    assert y.detach_() is y and y.grad_fn is None


# ----------------------------------------------------------------------------- versions

VIEW_OPS = {
    "view": lambda t: t.view(6, 4),
    "reshape": lambda t: t.reshape(24),
    "flatten": lambda t: t.flatten(1),
    "slice": lambda t: t[:, 1:],
    "select": lambda t: t[1],
    "basic-index": lambda t: t[1:, 2],
    "ellipsis": lambda t: t[...],
    "none": lambda t: t[None],
    "narrow": lambda t: t.narrow(2, 1, 2),
    "transpose": lambda t: t.transpose(0, 2),
    "t": lambda t: t[0].t(),
    "permute": lambda t: t.permute(2, 0, 1),
    "mT": lambda t: t.mT,
    "expand": lambda t: t[:, :1].expand(2, 5, 4),
    "squeeze": lambda t: t[:, :1].squeeze(1),
    "unsqueeze": lambda t: t.unsqueeze(1),
    "unbind": lambda t: t.unbind(1)[2],
    "split": lambda t: t.split(2, 2)[1],
    "chunk": lambda t: t.chunk(2, 1)[1],
    "split-sizes": lambda t: t.split([1, 3], 2)[1],
    "as_subclass": lambda t: t.as_subclass(type(t)),
}


@pytest.mark.parametrize("name", sorted(VIEW_OPS))
@pytest.mark.parametrize("requires_grad", [False, True], ids=["plain", "graph"])
def test_views_share_the_version_counter_and_know_their_base(name, requires_grad):
    y = ember.ones(2, 3, 4, dtype=ember.float64, requires_grad=requires_grad) * 1
    v = VIEW_OPS[name](y)
    w = v[...]  # a view of the view: same counter, same root
    assert v._is_view() and v._base.data_ptr() == y.data_ptr() and v._base.shape == y.shape
    start = y._version
    assert v._version == start
    with ember.no_grad():
        y.add_(1)
    assert v._version == y._version == start + 1
    with ember.no_grad():
        y[0, 0, 0] = 5.0
    assert w._version == v._version == y._version == start + 2
    assert w._base.data_ptr() == y.data_ptr() and w._base.shape == y.shape
    if name != "expand":  # an expanded view cannot be written in place
        with ember.no_grad():
            v.mul_(1)
        assert y._version == start + 3
    if torch is not None:
        assert VIEW_OPS[name](torch.ones(2, 3, 4))._is_view()


def test_detach_shares_the_version_but_is_not_a_view():
    x = ember.ones(3, requires_grad=True)
    y = x.exp()
    d = y.detach()
    assert not d._is_view() and d._base is None and not d.requires_grad
    d.mul_(2)
    assert y._version == d._version == 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()  # ExpBackward0 saved y


def test_detach_written_in_place_leaves_the_gradient_alone():
    x = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    d = y.detach()
    d.zero_()
    (y * 3).sum().backward()  # nothing saved y: the write only shows in y's values
    np.testing.assert_array_equal(x.grad.numpy(), [6.0, 6.0, 6.0])
    np.testing.assert_array_equal(y.detach().numpy(), [0.0, 0.0, 0.0])


def test_a_gradient_kept_by_a_leaf_is_not_a_view():
    # ViewBackward0's gradient is a view of a temporary; the leaf keeps it as a plain alias.
    x = ember.ones(4, requires_grad=True)
    (x.view(2, 2) * 2).sum().backward()
    assert not x.grad._is_view() and x.grad._base is None
    x.grad.mul_(ember.ones(4, requires_grad=True))  # not a no_grad view: recorded
    assert x.grad.grad_fn.name() == "MulBackward0"


def test_saved_view_written_through_its_base_raises_at_backward():
    def fn(lib):
        y = _leaf(lib) * 1
        v = y[0]
        out = v * v  # saves v
        y.add_(1)
        out.sum().backward()

    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        fn(ember)
    if torch is not None:
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            fn(torch)


# ----------------------------------------------------------------------------- higher order

def _hessian_vector(lib, x0, w0, v0):
    x = lib.tensor(x0, dtype=lib.float64, requires_grad=True)
    w = lib.tensor(w0, dtype=lib.float64)
    y = x * 1
    y[1].mul_(x[0])
    y.t()[2].sin_()
    loss = (y * y * w).sum()
    (g,) = lib.autograd.grad(loss, x, create_graph=True)
    (g * lib.tensor(v0, dtype=lib.float64)).sum().backward()
    return _numpy(g), _numpy(x.grad)


def test_double_backward_through_copy_slices():
    x0, w0, v0 = _inputs(11, (3, 4), (3, 4), (3, 4))
    g, hv = _hessian_vector(ember, x0, w0, v0)

    def gradient(values):
        xg = ember.tensor(values, dtype=ember.float64, requires_grad=True)
        y = xg * 1
        y[1].mul_(xg[0])
        y.t()[2].sin_()
        (y * y * ember.tensor(w0, dtype=ember.float64)).sum().backward()
        return xg.grad.numpy()

    np.testing.assert_allclose(g, gradient(x0))
    want = (gradient(x0 + EPS * v0) - gradient(x0 - EPS * v0)) / (2 * EPS)  # H v, H symmetric
    np.testing.assert_allclose(hv, want, rtol=1e-5, atol=1e-6)
    if torch is not None:
        for got, ref in zip((g, hv), _hessian_vector(torch, x0, w0, v0)):
            np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-12)


# ----------------------------------------------------------------------------- randomized sequences

def _random_program(seed, steps=10):
    """A sequence of views and in-place writes on y = x * 1 (x: 4x6, w: 3), replayable on ember and torch.

    Each step is (kind, target, args): 'view' takes a view of a live tensor, 'write' writes one
    in place (scalars, fills, and values made from w), 'read' adds a linear term to the loss
    (a sum: it saves nothing a later write could invalidate). Expanded views are read only.
    """
    rng = random.Random(seed)
    shapes, writable, program = [(4, 6)], [True], []
    for _ in range(steps):
        i = rng.randrange(len(shapes))
        shape, ndim = shapes[i], len(shapes[i])
        choice = rng.random()
        if choice < 0.45:
            kinds = ["unsqueeze"] + (["select", "slice", "narrow"] if ndim else []) + \
                (["transpose", "permute"] if ndim >= 2 else []) + (["squeeze", "expand"] if 1 in shape else []) + \
                (["view"] if i == 0 else [])
            kind = rng.choice(kinds)
            d = rng.randrange(ndim) if ndim else 0
            if kind == "select" and shape[d] == 0 or kind in ("slice", "narrow") and shape[d] < 2:
                kind = "unsqueeze"
            if kind == "select":
                args, new = (d, rng.randrange(shape[d])), shape[:d] + shape[d + 1:]
            elif kind == "slice":
                start, step = rng.randrange(shape[d] - 1), rng.choice([1, 1, 2])
                stop = rng.randrange(start + 1, shape[d] + 1)
                args = (d, start, stop, step)
                new = shape[:d] + (len(range(start, stop, step)),) + shape[d + 1:]
            elif kind == "narrow":
                start = rng.randrange(shape[d] - 1)
                args = (d, start, rng.randrange(1, shape[d] - start + 1))
                new = shape[:d] + (args[2],) + shape[d + 1:]
            elif kind == "transpose":
                d1 = rng.randrange(ndim)
                args = (d, d1)
                new = list(shape)
                new[d], new[d1] = new[d1], new[d]
                new = tuple(new)
            elif kind == "permute":
                args = tuple(rng.sample(range(ndim), ndim))
                new = tuple(shape[p] for p in args)
            elif kind == "squeeze":
                args = (shape.index(1),)
                new = shape[:args[0]] + shape[args[0] + 1:]
            elif kind == "expand":
                args = tuple(3 if s == 1 else s for s in shape)
                new = args
            elif kind == "view":
                args = rng.choice([(24,), (2, 12), (4, 2, 3), (8, 3)])
                new = args
            else:
                d = rng.randrange(ndim + 1)
                args, new = (d,), shape[:d] + (1,) + shape[d:]
            program.append(("view", i, kind, args))
            shapes.append(new)
            writable.append(writable[i] and kind != "expand")
        elif choice < 0.85:
            targets = [k for k, ok in enumerate(writable) if ok and 0 not in shapes[k]]
            i = rng.choice(targets)
            # None saves the tensor it writes (sin_ and cos_ save a copy of self): later writes keep backward legal.
            kind = rng.choice(["mul_", "add_w", "mul_w", "sin_", "cos_", "fill_", "zero_", "copy_w", "setitem_w"])
            if kind == "setitem_w" and not shapes[i]:
                kind = "copy_w"
            args = (round(rng.uniform(-1.5, 1.5), 3), rng.randrange(shapes[i][0]) if shapes[i] else 0)
            program.append(("write", i, kind, args))
        else:
            program.append(("read", i, None, (round(rng.uniform(-1, 1), 3),)))
    return program, shapes


def _run_program(lib, program, shapes, x, w, weights):
    y = x * 1
    live, terms = [y], []
    for step, i, kind, args in program:
        t = live[i]
        if step == "view":
            view = {"select": lambda: t.select(*args), "slice": lambda: t[(slice(None),) * args[0] + (slice(*args[1:]),)],
                    "narrow": lambda: t.narrow(*args), "transpose": lambda: t.transpose(*args),
                    "permute": lambda: t.permute(*args), "squeeze": lambda: t.squeeze(*args),
                    "expand": lambda: t.expand(*args), "view": lambda: t.view(*args),
                    "unsqueeze": lambda: t.unsqueeze(*args)}[kind]()
            live.append(view)
        elif step == "write":
            c, index = args
            if kind == "mul_":
                t.mul_(c)
            elif kind == "add_w":
                t.add_(w.sum() * c)
            elif kind == "mul_w":
                t.mul_(w.mean() + c)
            elif kind in ("sin_", "cos_"):
                getattr(t, kind)()
            elif kind == "fill_":
                t.fill_(c)
            elif kind == "zero_":
                t.zero_()
            elif kind == "copy_w":
                t.copy_(w[0] * c)
            else:
                t[index] = w[1] * c
        else:
            terms.append(t.sum() * args[0])
    for k, t in enumerate(live):
        terms.append((t * lib.tensor(weights[k], dtype=lib.float64)).sum() + (t * t).sum() * 0.1)
    return lib.stack(terms).sum()


@pytest.mark.parametrize("seed", range(24))
def test_random_view_and_inplace_sequences(seed):
    program, shapes = _random_program(seed)
    rng = np.random.default_rng(seed)
    weights = [rng.standard_normal(s) for s in shapes]
    x0, w0 = _inputs(seed, (4, 6), (3,))
    check_gradients(lambda lib, x, w: _run_program(lib, program, shapes, x, w, weights), [x0, w0], seed)
