"""Tensor API that nn code calls: unfold, as_strided, view_as/reshape_as/expand_as, sum_to_size,
H/mH, retains_grad, get_device, nbytes, itemsize, is_complex, and .grad on a retained non-leaf.
Checked against NumPy and hand-computed values, and against PyTorch when it is installed."""
import warnings

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck


def np_(t):
    return np.array(t.detach().numpy())


def arange(*shape, requires_grad=False):
    """A float64 tensor of its own (not a view) counting from 0."""
    return ember.tensor(np.arange(float(np.prod(shape))).reshape(shape), requires_grad=requires_grad)


def shares_memory(a, b):
    """True when a write through `a` shows in `b`."""
    with ember.no_grad():
        before = np_(b).copy()
        a.fill_(-7)
        return not np.array_equal(before, np_(b))


def windows_np(a, dim, size, step):
    w = np.lib.stride_tricks.sliding_window_view(a, size, axis=dim)
    index = [slice(None)] * w.ndim
    index[dim] = slice(None, None, step)
    return w[tuple(index)]


# ---------------------------------------------------------------- unfold

@pytest.mark.parametrize("shape,dim,size,step", [
    ((10,), 0, 3, 2), ((10,), 0, 10, 1), ((3, 4), 1, 2, 1), ((3, 4), 0, 2, 3), ((2, 7, 3), -2, 3, 2),
    ((5,), 0, 1, 1), ((6,), 0, 2, 2), ((6,), 0, 4, 1),
])
def test_unfold_values_and_view(shape, dim, size, step):
    x = arange(*shape)
    y = x.unfold(dim, size, step)
    np.testing.assert_array_equal(np_(y), windows_np(np_(x), dim % len(shape), size, step))
    assert y._base._cdata == x._cdata
    assert shares_memory(y, x)


def test_unfold_geometry_matches_torch():
    torch = pytest.importorskip("torch")
    for shape, args, transpose in [((10,), (0, 3, 2), False), ((3, 4), (1, 2, 1), False), ((3, 4), (1, 2, 1), True),
                                   ((), (0, 1, 1), False), ((10,), (0, 0, 1), False), ((0,), (0, 0, 1), False)]:
        e, t = ember.zeros(shape), torch.zeros(shape)
        if transpose:
            e, t = e.t(), t.t()
        ey, ty = e.unfold(*args), t.unfold(*args)
        assert tuple(ey.shape) == tuple(ty.shape) and ey.stride() == ty.stride(), (shape, args)


def test_unfold_zero_dim_and_empty_windows():
    y = ember.tensor(5.0).unfold(0, 1, 1)
    assert tuple(y.shape) == (1,) and y.stride() == (1,) and y.item() == 5.0
    z = ember.zeros(10).unfold(0, 0, 1)
    assert tuple(z.shape) == (11, 0)


@pytest.mark.parametrize("shape,args,cls,msg", [
    ((10,), (0, 11, 2), RuntimeError, "maximum size for tensor at dimension 0 is 10 but size is 11"),
    ((10,), (0, 3, 0), RuntimeError, "step is 0 but must be > 0"),
    ((10,), (0, -1, 1), RuntimeError, "size is -1 but must be >= 0"),
    ((), (0, 2, 1), RuntimeError, "maximum size for tensor at dimension 0 is 1 but size is 2"),
    ((10,), (1, 3, 1), IndexError, r"Dimension out of range \(expected to be in range of \[-1, 0\], but got 1\)"),
])
def test_unfold_errors(shape, args, cls, msg):
    with pytest.raises(cls, match=msg):
        ember.zeros(shape).unfold(*args)
    torch = pytest.importorskip("torch")
    with pytest.raises(cls, match=msg):
        torch.zeros(shape).unfold(*args)


@pytest.mark.parametrize("shape,dim,size,step", [
    ((7,), 0, 3, 1), ((7,), 0, 3, 2), ((7,), 0, 2, 3), ((3, 5), 1, 4, 1), ((4, 3), 0, 2, 1), ((), 0, 1, 1),
])
def test_unfold_gradients(shape, dim, size, step):
    x = arange(*shape, requires_grad=True)
    y = x.unfold(dim, size, step)
    assert y.grad_fn.name() == "UnfoldBackward0"
    w = arange(*y.shape) + 1
    (y * w).sum().backward()
    # Hand-computed: each input element gets the weights of every window slot showing it.
    expected = np.zeros(shape)
    if shape:
        n = y.shape[dim]
        moved = np.moveaxis(np_(w), dim, -2)  # (..., windows, size)
        exp_moved = np.moveaxis(expected, dim, -1)
        for i in range(n):
            exp_moved[..., i * step:i * step + size] += moved[..., i, :]
    else:
        expected = np_(w).reshape(())
    np.testing.assert_allclose(np_(x.grad), expected)
    assert gradcheck(lambda t: t.unfold(dim, size, step), (x.detach().requires_grad_(),))
    assert gradgradcheck(lambda t: t.unfold(dim, size, step), (x.detach().requires_grad_(),))


def test_unfold_gradient_matches_torch():
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(0).standard_normal((3, 8))
    e, t = ember.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    w = np.random.default_rng(1).standard_normal((3, 3, 4))
    (e.unfold(1, 4, 2) * ember.tensor(w)).sum().backward()
    (t.unfold(1, 4, 2) * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(np_(e.grad), t.grad.numpy())


def test_conv1d_by_unfold():
    """What nn code uses unfold for: a sliding-window product equals a direct loop."""
    rng = np.random.default_rng(2)
    x, k = rng.standard_normal((2, 9)), rng.standard_normal(3)
    out = (ember.tensor(x).unfold(1, 3, 1) * ember.tensor(k)).sum(-1)
    expected = np.stack([[x[b, i:i + 3] @ k for i in range(7)] for b in range(2)])
    np.testing.assert_allclose(np_(out), expected, rtol=1e-12)


# ---------------------------------------------------------------- as_strided

@pytest.mark.parametrize("size,stride,offset", [
    ((2, 2), (4, 1), 1), ((3, 3), (1, 1), None), ((2, 3), (0, 2), None), ((3, 2), (1, 3), 0), ((0, 2), (1, 1), 12),
    ((), (), 3),
])
def test_as_strided_values_and_view(size, stride, offset):
    x = arange(3, 4)
    y = ember.as_strided(x, size, stride, offset)
    flat = np.arange(12.0)
    ref = np.lib.stride_tricks.as_strided(flat[offset or 0:], size, [s * 8 for s in stride])
    np.testing.assert_array_equal(np_(y), ref)
    assert tuple(y.shape) == size and y.stride() == stride and y.storage_offset() == (offset or 0)
    np.testing.assert_array_equal(np_(x.as_strided(size, stride, offset)), ref)
    assert y._base._cdata == x._cdata
    if y.numel():
        assert shares_memory(y, x)


def test_as_strided_offset_defaults_to_input_and_is_absolute():
    x = ember.arange(10.0)
    v = x[3:]
    assert v.as_strided((2,), (1,)).storage_offset() == 3
    np.testing.assert_array_equal(np_(v.as_strided((2,), (1,), 1)), [1.0, 2.0])
    np.testing.assert_array_equal(np_(ember.as_strided(input=v, size=(2,), stride=(2,))), [3.0, 5.0])


@pytest.mark.parametrize("args,msg", [
    (((2,), (1, 2)), "mismatch in length of strides and shape"),
    (((2,), (-1,)), r"as_strided: Negative strides are not supported at the moment, got strides: \[-1\]"),
    (((20,), (1,)), r"setStorage: sizes \[20\], strides \[1\], storage offset 0, and itemsize 4 requiring a storage "
                    r"size of 80 are out of bounds for storage of size 40"),
    (((2,), (1,), 9), r"setStorage: sizes \[2\], strides \[1\], storage offset 9, and itemsize 4 requiring a storage "
                      r"size of 44 are out of bounds for storage of size 40"),
    (((2,), (1,), -1), "Tensor: invalid storage offset -1"),
    (((-2,), (1,)), r"Storage size calculation overflowed with sizes=\[-2\] and strides=\[1\]"),
])
def test_as_strided_errors(args, msg):
    with pytest.raises(RuntimeError, match=msg):
        ember.as_strided(ember.zeros(10), *args)
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError, match=msg):
        torch.as_strided(torch.zeros(10), *args)


def test_as_strided_zero_size_accepts_any_offset():
    assert tuple(ember.as_strided(ember.zeros(10), (0,), (1,), 11).shape) == (0,)


@pytest.mark.parametrize("size,stride,offset", [
    ((2, 2), (4, 1), 1),   # no overlap: a plain copy back
    ((3, 3), (1, 1), None),  # overlapping windows: gradients add up
    ((2, 3), (0, 2), None),  # a stride-0 dim
    ((4,), (3,), 2),
])
def test_as_strided_gradients(size, stride, offset):
    x = arange(3, 4, requires_grad=True)
    y = ember.as_strided(x, size, stride, offset)
    assert y.grad_fn.name() == "AsStridedBackward0"
    w = arange(*size) + 1
    (y * w).sum().backward()
    expected = np.zeros(12)
    positions = np.lib.stride_tricks.as_strided(np.arange(12)[offset or 0:], size, [s * 8 for s in stride])
    np.add.at(expected, positions.reshape(-1), np_(w).reshape(-1))
    np.testing.assert_allclose(np_(x.grad), expected.reshape(3, 4))
    f = lambda t: ember.as_strided(t, size, stride, offset)  # noqa: E731
    assert gradcheck(f, (x.detach().requires_grad_(),))
    assert gradgradcheck(f, (x.detach().requires_grad_(),))


def test_as_strided_of_a_view_and_of_an_expanded_input_match_torch():
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(3).standard_normal(12)
    for make in [lambda m, t: t[2:].as_strided((3, 2), (2, 1)),
                 lambda m, t: t.view(3, 4).t().as_strided((2, 2), (1, 4), 1),
                 lambda m, t: t[:1].expand(5).as_strided((3,), (0,))]:
        e, t = ember.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
        ye, yt = make(ember, e), make(torch, t)
        np.testing.assert_array_equal(np_(ye), yt.detach().numpy())
        w = np.arange(1.0, 1.0 + yt.numel()).reshape(yt.shape)
        (ye * ember.tensor(w)).sum().backward()
        (yt * torch.tensor(w)).sum().backward()
        np.testing.assert_allclose(np_(e.grad), t.grad.numpy())


def test_as_strided_forward_ad():
    import ember.autograd.forward_ad as fwAD
    x, tx = arange(6), ember.ones(6, dtype=ember.float64) * 2
    with fwAD.dual_level():
        d = fwAD.make_dual(x, tx)
        out = ember.as_strided(d, (2, 2), (1, 2), 1).unfold(1, 1, 1)
        np.testing.assert_array_equal(np_(fwAD.unpack_dual(out).tangent), np.full((2, 2, 1), 2.0))


def test_view_regenerated_after_inplace_uses_as_strided_backward():
    """The engine's regenerated views share as_strided's gradient, overlap included."""
    leaf = arange(6, requires_grad=True)
    base = leaf * 1
    view = base.as_strided((2, 3), (1, 1))  # overlapping rows
    base.mul_(2)
    assert view.grad_fn.name() == "AsStridedBackward0"
    view.sum().backward()
    np.testing.assert_allclose(np_(leaf.grad), 2 * np.array([1.0, 2, 2, 1, 0, 0]))


# ---------------------------------------------------------------- view_as, reshape_as, expand_as, sum_to_size

def test_view_reshape_expand_as():
    x = arange(2, 3)
    v = x.view_as(ember.zeros(3, 2))
    assert tuple(v.shape) == (3, 2) and v._base._cdata == x._cdata and shares_memory(v, x)
    x = arange(2, 3)
    r = x.t().reshape_as(ember.zeros(6))
    np.testing.assert_array_equal(np_(r), [0, 3, 1, 4, 2, 5])
    e = x[0:1].expand_as(ember.zeros(4, 3))
    assert tuple(e.shape) == (4, 3) and e.stride() == (0, 1)
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        x.t().view_as(ember.zeros(6))
    with pytest.raises(RuntimeError, match=r"shape '\[3, 3\]' is invalid for input of size 6"):
        x.view_as(ember.zeros(3, 3))
    with pytest.raises(RuntimeError, match=r"The expanded size of the tensor \(2\) must match the existing size \(3\)"):
        x.expand_as(ember.zeros(3, 2))
    with pytest.raises(TypeError):
        x.view_as(5)


def test_as_methods_gradients():
    x = arange(2, 3, requires_grad=True)
    (x.view_as(ember.zeros(6)) * ember.arange(6.0)).sum().backward()
    np.testing.assert_allclose(np_(x.grad), np.arange(6.0).reshape(2, 3))
    y = arange(1, 3, requires_grad=True)
    y.expand_as(ember.zeros(4, 3)).sum().backward()
    np.testing.assert_allclose(np_(y.grad), np.full((1, 3), 4.0))


@pytest.mark.parametrize("size", [(3,), (1, 3), (2, 1), (1, 1), (2, 3), ()])
def test_sum_to_size(size):
    a = np.arange(6.0).reshape(2, 3)
    x = ember.tensor(a, requires_grad=True)
    y = x.sum_to_size(*size) if size else x.sum_to_size(size)
    lead = 2 - len(size)
    ref = a.sum(axis=tuple(range(lead))) if lead else a
    ref = ref.sum(axis=tuple(d for d, n in enumerate(size) if n == 1), keepdims=True)
    np.testing.assert_allclose(np_(y), ref)
    assert tuple(y.shape) == size
    y.sum().backward()
    np.testing.assert_allclose(np_(x.grad), np.ones((2, 3)))


def test_sum_to_size_same_shape_is_self_and_errors():
    x = arange(2, 3)
    assert x.sum_to_size(2, 3).data_ptr() == x.data_ptr()
    np.testing.assert_allclose(np_(x.sum_to_size(size=(3,))), [3.0, 5.0, 7.0])
    for bad in [(2,), (4, 2, 3)]:
        msg = r"size \{\[" + ", ".join(map(str, bad)) + r"\]\} is not expandable to size \{\[2, 3\]\}\."
        with pytest.raises(RuntimeError, match=msg):
            x.sum_to_size(bad)
    with pytest.raises(TypeError):
        x.sum_to_size()


# ---------------------------------------------------------------- properties

def test_H_mH():
    x = arange(2, 3)
    np.testing.assert_array_equal(np_(x.H), np_(x).T)
    np.testing.assert_array_equal(np_(arange(2, 3, 4).mH), np_(arange(2, 3, 4)).transpose(0, 2, 1))
    with pytest.raises(RuntimeError, match=r"tensor.H is only supported on matrices \(2-D tensors\). Got 1-D tensor."):
        ember.zeros(3).H
    with pytest.raises(RuntimeError, match="Got 3-D tensor. For batches of matrices, consider using tensor.mH"):
        ember.zeros(2, 3, 4).H
    with pytest.raises(RuntimeError, match="tensor.mH is only supported on matrices or batches of matrices. Got 1-D"):
        ember.zeros(3).mH
    with pytest.warns(UserWarning, match="Tensor.H is deprecated on 0-D tensors"):
        assert ember.tensor(2.0).H.item() == 2.0


def test_sizes_device_complex():
    x = ember.zeros(2, 3)
    assert x.nbytes == 24 and x.itemsize == 4
    assert x.t().nbytes == 24 and x[:, :1].nbytes == 8 and x.expand(4, 2, 3).nbytes == 96
    assert ember.zeros(3, dtype=ember.bfloat16).itemsize == 2 and ember.zeros(3, dtype=ember.float64).nbytes == 24
    assert x.get_device() == -1
    assert x.is_complex() is False
    torch = pytest.importorskip("torch")
    t = torch.zeros(2, 3)
    assert (t.nbytes, t.itemsize, t.get_device(), t.is_complex()) == (24, 4, -1, False)


def test_retains_grad_property():
    leaf = ember.zeros(2, requires_grad=True)
    p = leaf * 2
    assert leaf.retains_grad is False and p.retains_grad is False
    p.retain_grad()
    assert p.retains_grad is True
    leaf.retain_grad()
    assert leaf.retains_grad is False  # a leaf keeps its .grad anyway
    with pytest.raises(AttributeError):
        p.retains_grad = False


def test_grad_assigned_on_retained_non_leaf_is_kept():
    leaf = ember.zeros(2, requires_grad=True)
    p = leaf * 2
    p.retain_grad()
    p.grad = ember.ones(2)
    np.testing.assert_array_equal(np_(p.grad), [1.0, 1.0])
    p.sum().backward(retain_graph=True)
    np.testing.assert_array_equal(np_(p.grad), [2.0, 2.0])  # backward accumulates into it
    p.grad = None
    assert p.grad is None
    p.sum().backward()
    np.testing.assert_array_equal(np_(p.grad), [1.0, 1.0])


def test_optimizer_accepts_retained_non_leaf():
    p = ember.zeros(2, requires_grad=True) * 2
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        ember.optim.SGD([p], lr=0.1)
    p.retain_grad()
    opt = ember.optim.SGD([p], lr=0.5)
    p.grad = ember.ones(2)
    opt.step()
    np.testing.assert_array_equal(np_(p), [-0.5, -0.5])


def test_no_warning_reading_grad_of_retained():
    p = ember.zeros(2, requires_grad=True) * 2
    p.retain_grad()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert p.grad is None


# ---------------------------------------------------------------- forward-mode derivatives

# Ops of this file whose JVPs the harness cannot sample (tests/test_forward_ad.py reads it).
JVP_CHECKED = {"_unfold_backward", "_as_strided_backward", "view_as", "reshape_as", "expand_as"}


def test_jvps_of_the_backward_helpers_and_as_methods():
    g = arange(3, 2, requires_grad=True)  # windows of unfold(0, 2, 1) on 4 elements
    assert gradcheck(lambda v: ember._unfold_backward(v, [4], 0, 2, 1), (g,), check_forward_ad=True)
    g = arange(2, 3, 2, requires_grad=True)  # non-contiguous windows of unfold(0, 2, 2) on 6x2
    assert gradcheck(lambda v: ember._unfold_backward(v.transpose(0, 1), [6, 2], 0, 2, 2), (g,),
                     check_forward_ad=True)
    g = arange(3, 3, requires_grad=True)  # as_strided((3, 3), (1, 1)) of a 3x4 input: overlapping
    assert gradcheck(lambda v: ember._as_strided_backward(v, [3, 4], [4, 1], 0, [3, 3], [1, 1], None), (g,),
                     check_forward_ad=True)
    x = arange(2, 3, requires_grad=True)
    for f in [lambda v: v.view_as(ember.zeros(3, 2)), lambda v: v.t().reshape_as(ember.zeros(6)),
              lambda v: v[:1].expand_as(ember.zeros(4, 3))]:
        assert gradcheck(f, (x,), check_forward_ad=True)


def _t64(*shape):
    return ember.tensor(np.random.default_rng(sum(shape)).uniform(-1, 1, shape)).requires_grad_(True)


# For test_higher_order: the *_as methods and the two backward helpers, gradgradchecked.
HIGHER_ORDER_CASES = {
    "view_as": [(lambda a: a.view_as(ember.zeros(2, 3)) * a.view(2, 3), lambda: (_t64(6),), {})],
    "reshape_as": [(lambda a: a.t().reshape_as(ember.zeros(6)) ** 2, lambda: (_t64(2, 3),), {})],
    "expand_as": [(lambda a: a.expand_as(ember.zeros(3, 2, 4)) * a, lambda: (_t64(2, 1),), {})],
    "_unfold_backward": [(lambda g: ember._unfold_backward(g * g, [7], 0, 3, 2), lambda: (_t64(3, 3),), {})],
    "_as_strided_backward": [(lambda g: ember._as_strided_backward(g * g, [6], [1], 0, [3, 2], [1, 2], 0),
                              lambda: (_t64(3, 2),), {})],
}
