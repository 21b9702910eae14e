"""Views and shape ops: geometry, memory sharing, errors and gradients, against NumPy."""
import numpy as np
import pytest

import ember


def t_(a):
    return ember.from_numpy(np.array(a, order="C"))


def np_(t):
    return np.array(t.detach().numpy())


def arange_np(*shape, dtype=np.float32):
    return np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)


def same_storage(a, b):
    """True when writing through `a` is visible in `b`."""
    with ember.no_grad():
        before = np_(b).copy()
        a.fill_(-7)
        return not np.array_equal(before, np_(b))


# ---------------------------------------------------------------- view

@pytest.mark.parametrize("shape,new", [
    ((2, 3, 4), (6, 4)), ((2, 3, 4), (-1,)), ((2, 3, 4), (4, -1)), ((2, 3, 4), (2, 1, 12)),
    ((24,), (2, 3, 4)), ((), (1,)), ((1,), ()), ((0, 3), (3, 0)), ((0, 3), (-1, 3)), ((1, 1), (1,)),
])
def test_view_contiguous(shape, new):
    a = arange_np(*shape)
    x = t_(a)
    y = x.view(new)
    assert tuple(y.shape) == a.reshape(new).shape
    np.testing.assert_array_equal(np_(y), a.reshape(new))
    assert y.is_contiguous()


def test_view_varargs_and_sharing():
    x = t_(arange_np(2, 6))
    y = x.view(3, 4)
    assert tuple(y.shape) == (3, 4)
    assert same_storage(y, x)


def test_view_noncontiguous_allowed():
    # A column slice keeps rows contiguous: splitting or merging the row dim works.
    a = arange_np(4, 6)
    x = ember.narrow(t_(a), 1, 0, 4)
    assert not x.is_contiguous()
    for new in [(4, 2, 2), (2, 2, 4), (2, 2, 2, 2)]:
        y = x.view(new)
        np.testing.assert_array_equal(np_(y), a[:, :4].reshape(new))
    # A transposed tensor can split dims as long as no dim spans two chunks.
    b = arange_np(2, 3, 4)
    z = t_(b).transpose(0, 1)  # (3, 2, 4)
    np.testing.assert_array_equal(np_(z.view(3, 2, 2, 2)), b.transpose(1, 0, 2).reshape(3, 2, 2, 2))
    # Expanded dims (stride 0) can be split too.
    e = t_(np.arange(3, dtype=np.float32)).expand(4, 3)
    v = e.view(2, 2, 3)
    assert v.stride() == (0, 0, 1)
    np.testing.assert_array_equal(np_(v), np.broadcast_to(np.arange(3, dtype=np.float32), (4, 3)).reshape(2, 2, 3))


def test_view_incompatible():
    x = t_(arange_np(3, 4)).t()
    with pytest.raises(RuntimeError, match="view size is not compatible with input tensor's size and stride"):
        x.view(12)
    with pytest.raises(RuntimeError, match=r"Use \.reshape\(\.\.\.\) instead"):
        ember.narrow(t_(arange_np(4, 6)), 1, 0, 4).view(16)


def test_view_invalid_size():
    x = t_(arange_np(6))
    with pytest.raises(RuntimeError, match=r"shape '\[4, 5\]' is invalid for input of size 6"):
        x.view(4, 5)
    with pytest.raises(RuntimeError, match=r"shape '\[-1, 4\]' is invalid for input of size 6"):
        x.view(-1, 4)
    with pytest.raises(RuntimeError, match="only one dimension can be inferred"):
        x.view(-1, -1)
    with pytest.raises(RuntimeError, match="invalid shape dimension -2"):
        x.view(-2, 3)


# ---------------------------------------------------------------- reshape / flatten

def test_reshape_view_when_possible():
    x = t_(arange_np(2, 3, 4))
    y = x.reshape(4, -1)
    np.testing.assert_array_equal(np_(y), arange_np(2, 3, 4).reshape(4, -1))
    assert same_storage(y, x)


def test_reshape_copies_when_needed():
    a = arange_np(3, 4)
    x = t_(a).t()
    y = x.reshape(12)
    np.testing.assert_array_equal(np_(y), a.T.reshape(12))
    assert y.is_contiguous()
    assert not same_storage(y, x)
    np.testing.assert_array_equal(np_(ember.reshape(x, (2, -1))), a.T.reshape(2, -1))


@pytest.mark.parametrize("shape,args", [((2, 3, 4), ()), ((2, 3, 4), (1,)), ((2, 3, 4), (0, 1)),
                                        ((2, 3, 4), (-2, -1)), ((), ()), ((5,), ())])
def test_flatten(shape, args):
    a = arange_np(*shape)
    y = ember.flatten(t_(a), *args)
    start = args[0] if args else 0
    end = args[1] if len(args) > 1 else -1
    if a.ndim == 0:
        expect = a.reshape(1)
    else:
        s, e = start % a.ndim, end % a.ndim
        expect = a.reshape(a.shape[:s] + (-1,) + a.shape[e + 1:])
    np.testing.assert_array_equal(np_(y), expect)
    assert tuple(y.shape) == expect.shape


def test_flatten_errors():
    with pytest.raises(RuntimeError, match="start_dim cannot come after end_dim"):
        ember.flatten(t_(arange_np(2, 3)), 1, 0)


# ---------------------------------------------------------------- permute / transpose / t

def test_permute():
    a = arange_np(2, 3, 4)
    x = t_(a)
    for dims in [(2, 0, 1), (0, 1, 2), (-1, 0, 1), (1, 2, 0)]:
        y = x.permute(dims)
        np.testing.assert_array_equal(np_(y), np.transpose(a, [d % 3 for d in dims]))
    y = x.permute(2, 0, 1)
    assert y.stride() == (1, 12, 4)
    assert same_storage(y, x)


def test_permute_errors():
    x = t_(arange_np(2, 3, 4))
    with pytest.raises(RuntimeError, match="number of dimensions in the tensor input does not match"):
        x.permute(0, 1)
    with pytest.raises(RuntimeError, match="duplicate dims are not allowed"):
        x.permute(0, 1, 1)
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.permute(0, 1, 3)


def test_transpose_and_t():
    a = arange_np(2, 3, 4)
    x = t_(a)
    np.testing.assert_array_equal(np_(x.transpose(0, 2)), np.swapaxes(a, 0, 2))
    np.testing.assert_array_equal(np_(x.transpose(-1, 0)), np.swapaxes(a, -1, 0))
    m = arange_np(2, 3)
    y = t_(m).t()
    np.testing.assert_array_equal(np_(y), m.T)
    assert y.stride() == (1, 3)
    assert not y.is_contiguous()
    v = t_(np.arange(3, dtype=np.float32))
    np.testing.assert_array_equal(np_(v.t()), np.arange(3))
    s = t_(np.array(5.0, dtype=np.float32))
    assert s.t().dim() == 0
    assert s.transpose(0, -1).dim() == 0
    with pytest.raises(RuntimeError, match=r"t\(\) expects a tensor with <= 2 dimensions, but self is 3D"):
        x.t()
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-3, 2\], but got 3\)"):
        x.transpose(0, 3)


# ---------------------------------------------------------------- unsqueeze / squeeze

def test_unsqueeze():
    a = arange_np(2, 3)
    x = t_(a)
    for d in [0, 1, 2, -1, -3]:
        np.testing.assert_array_equal(np_(x.unsqueeze(d)), np.expand_dims(a, d))
    s = t_(np.array(1.5, dtype=np.float32))
    assert tuple(s.unsqueeze(0).shape) == (1,)
    assert x.unsqueeze(2).stride() == (3, 1, 1)
    assert x.unsqueeze(0).stride() == (6, 3, 1)
    with pytest.raises(IndexError, match=r"expected to be in range of \[-3, 2\], but got 3"):
        x.unsqueeze(3)


def test_squeeze():
    a = arange_np(1, 3, 1)
    x = t_(a)
    assert tuple(x.squeeze().shape) == (3,)
    assert tuple(x.squeeze(0).shape) == (3, 1)
    assert tuple(x.squeeze(-1).shape) == (1, 3)
    assert tuple(x.squeeze(1).shape) == (1, 3, 1)  # size 3 stays
    assert tuple(x.squeeze((0, 2)).shape) == (3,)
    assert tuple(ember.squeeze(x, [0, 1]).shape) == (3, 1)
    s = t_(np.array(2.0, dtype=np.float32))
    assert s.squeeze().dim() == 0
    assert s.squeeze(0).dim() == 0
    np.testing.assert_array_equal(np_(x.squeeze()), a.squeeze())
    with pytest.raises(IndexError):
        x.squeeze(3)


# ---------------------------------------------------------------- expand

def test_expand():
    a = np.arange(3, dtype=np.float32).reshape(3, 1)
    x = t_(a)
    y = x.expand(3, 4)
    np.testing.assert_array_equal(np_(y), np.broadcast_to(a, (3, 4)))
    assert y.stride() == (1, 0)
    y = x.expand(2, -1, 5)
    assert tuple(y.shape) == (2, 3, 5)
    assert y.stride() == (0, 1, 0)
    np.testing.assert_array_equal(np_(y), np.broadcast_to(a, (2, 3, 5)))
    v = t_(np.arange(3, dtype=np.float32))
    np.testing.assert_array_equal(np_(v.expand(2, -1)), np.broadcast_to(np.arange(3), (2, 3)))
    s = t_(np.array(4.0, dtype=np.float32))
    np.testing.assert_array_equal(np_(s.expand(2, 2)), np.full((2, 2), 4.0))
    assert same_storage(y, x)


def test_expand_errors():
    x = t_(arange_np(2, 3))
    with pytest.raises(RuntimeError, match=re_escape("The expanded size of the tensor (4) must match the existing "
                                                     "size (3) at non-singleton dimension 1.  Target sizes: [2, 4].  "
                                                     "Tensor sizes: [2, 3]")):
        x.expand(2, 4)
    with pytest.raises(RuntimeError, match="must be greater or equal to the number of dimensions"):
        x.expand(3)
    with pytest.raises(RuntimeError, match="isn't allowed in a leading, non-existing dimension"):
        x.expand(-1, 2, 3)


def re_escape(s):
    import re
    return re.escape(s)


# ---------------------------------------------------------------- select / slice / narrow

def test_select():
    a = arange_np(3, 4)
    x = t_(a)
    np.testing.assert_array_equal(np_(x.select(0, 1)), a[1])
    np.testing.assert_array_equal(np_(x.select(1, -1)), a[:, -1])
    np.testing.assert_array_equal(np_(ember.select(x, -2, -3)), a[0])
    assert x.select(0, 1).dim() == 1
    assert same_storage(x.select(1, 2), x)
    v = t_(np.arange(3, dtype=np.float32))
    assert v.select(0, 2).dim() == 0
    assert v.select(0, 2).item() == 2


def test_select_errors():
    v = t_(np.arange(3, dtype=np.float32))
    with pytest.raises(IndexError, match=re_escape("select(): index 5 out of range for tensor of size [3] at "
                                                   "dimension 0")):
        v.select(0, 5)
    with pytest.raises(IndexError, match="index -4 out of range"):
        v.select(0, -4)
    with pytest.raises(IndexError):
        t_(np.array(1.0, dtype=np.float32)).select(0, 0)


# (dim, start, end, step): negative, missing, out-of-range and crossed bounds.
SLICE_ARGS = [
    (0, 1, 5, 2), (1, -3, None, 1), (0, None, None, 1), (0, -100, 100, 1), (0, 4, 2, 1), (0, 10, None, 1),
    (1, 0, 4, 3), (0, -1, None, 1), (1, None, -1, 2), (0, 6, 7, 1), (1, -100, -2, 2), (0, 3, -100, 1),
]


def slice_index(dim, start, end, step):
    index = [slice(None)] * 2
    index[dim] = slice(start, end, step)
    return tuple(index)


@pytest.mark.parametrize("args", SLICE_ARGS)
def test_slice(args):
    a = arange_np(6, 4)
    y = ember.slice(t_(a), *args)
    np.testing.assert_array_equal(np_(y), a[slice_index(*args)])
    assert tuple(y.shape) == a[slice_index(*args)].shape


@pytest.mark.parametrize("args", SLICE_ARGS)
def test_slice_backward_clamps_as_slice(args):
    # slice and its backward share one clamping of the bounds: the gradient lands where slice read.
    x = ember.tensor(arange_np(6, 4), requires_grad=True)
    y = ember.slice(x, *args)
    w = np.arange(1, y.numel() + 1, dtype=np.float32).reshape(tuple(y.shape))
    (y * t_(w)).sum().backward()
    expect = np.zeros((6, 4), dtype=np.float32)
    expect[slice_index(*args)] = w
    np.testing.assert_array_equal(np_(x.grad), expect)


def test_slice_geometry_and_errors():
    x = t_(arange_np(6, 4))
    y = ember.slice(x, 0, 1, 5, 2)
    assert y.stride() == (8, 1)
    assert same_storage(y, x)
    with pytest.raises(RuntimeError, match="slice step must be positive"):
        ember.slice(x, 0, 0, 4, 0)
    with pytest.raises(RuntimeError, match="slice step must be positive"):
        ember.slice(x, 0, 0, 4, -1)


def test_narrow():
    a = arange_np(6, 4)
    x = t_(a)
    np.testing.assert_array_equal(np_(x.narrow(0, 1, 3)), a[1:4])
    np.testing.assert_array_equal(np_(x.narrow(1, -2, 2)), a[:, 2:4])
    np.testing.assert_array_equal(np_(x.narrow(0, 6, 0)), a[6:6])
    with pytest.raises(RuntimeError, match=re_escape("start (4) + length (3) exceeds dimension size (6).")):
        x.narrow(0, 4, 3)
    with pytest.raises(IndexError, match="start out of range"):
        x.narrow(0, 7, 0)
    with pytest.raises(RuntimeError, match="cannot be applied to a 0-dim tensor"):
        t_(np.array(1.0, dtype=np.float32)).narrow(0, 0, 1)


# ---------------------------------------------------------------- contiguous / clone

def test_contiguous_and_clone():
    a = arange_np(3, 4)
    x0 = t_(a)
    assert same_storage(x0.contiguous(), x0)
    x = t_(a)
    y = x.t().contiguous()
    assert y.is_contiguous()
    np.testing.assert_array_equal(np_(y), a.T)
    c = x.t().clone()  # keeps the memory order (PyTorch's preserve_format)
    assert c.stride() == x.t().stride() and not c.is_contiguous()
    np.testing.assert_array_equal(np_(c), a.T)
    assert not same_storage(c, x)
    for dt in [ember.int32, ember.bool, ember.float16, ember.float64]:
        z = x.to(dt)
        assert z.clone().dtype == dt


def test_matrix_transpose_properties():
    a = arange_np(2, 3, 4)
    x = t_(a)
    np.testing.assert_array_equal(np_(x.mT), np.swapaxes(a, -1, -2))
    np.testing.assert_array_equal(np_(x.mH), np.swapaxes(a, -1, -2))
    assert same_storage(x.mT, x)
    with pytest.raises(RuntimeError, match="only supported on matrices or batches of matrices. Got 1-D"):
        t_(arange_np(3)).mT


# ---------------------------------------------------------------- autograd through views

def test_view_grads():
    a = arange_np(2, 3, 4)
    x = ember.tensor(a, requires_grad=True)
    y = x.view(6, 4).permute(1, 0).unsqueeze(0).squeeze(0).t().reshape(-1)
    (y * ember.tensor(np.arange(24, dtype=np.float32))).sum().backward()
    np.testing.assert_array_equal(np_(x.grad), np.arange(24, dtype=np.float32).reshape(2, 3, 4))


def test_select_slice_grads():
    x = ember.tensor(arange_np(4, 5), requires_grad=True)
    (x.select(0, 1).sum() + ember.slice(x, 1, 1, None, 2).sum() * 2 + x.narrow(0, -1, 1).sum() * 10).backward()
    expect = np.zeros((4, 5), dtype=np.float32)
    expect[1] += 1
    expect[:, 1::2] += 2
    expect[-1] += 10
    np.testing.assert_array_equal(np_(x.grad), expect)


def test_expand_grad():
    x = ember.tensor(np.arange(3, dtype=np.float32).reshape(3, 1), requires_grad=True)
    x.expand(2, 3, 4).sum().backward()
    np.testing.assert_array_equal(np_(x.grad), np.full((3, 1), 8.0))


def test_transpose_grad():
    x = ember.tensor(arange_np(2, 3), requires_grad=True)
    w = ember.tensor(arange_np(3, 2) + 1)
    (x.t() * w).sum().backward()
    np.testing.assert_array_equal(np_(x.grad), (arange_np(3, 2) + 1).T)


def test_new_tensors_start_at_version_zero():
    x = t_(arange_np(2, 3))
    assert x.clone()._version == 0
    assert x.t().contiguous()._version == 0
    assert x.t().reshape(6)._version == 0
    assert ember.cat([x, x])._version == 0
    assert ember.stack([x, x])._version == 0
    assert x.to(ember.float64)._version == 0
    for t in [ember.zeros(2), ember.ones(2), ember.full((2,), 3.0), ember.eye(2), ember.arange(3),
              ember.rand(2), ember.randint(0, 3, (2,))]:
        assert t._version == 0
    v = x.view(6)
    v.mul_(2)  # a view shares its base's counter
    assert x._version == 1
