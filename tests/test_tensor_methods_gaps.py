"""Tensor methods and attributes PyTorch has beyond the ops (ember/_tensor_api.py, _typed_storage.py,
_scatter_composites.py): layout and flags, predicates, new, storage(), fill_diagonal_, apply_/map_,
index_put/index_reduce and the *_scatter functions, against NumPy and PyTorch when installed."""
import pickle
import warnings

import numpy as np
import pytest

import ember

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
RNG = np.random.default_rng(1)


def arr(*shape):
    return RNG.standard_normal(shape)


def gradcheck(fn, *arrays):
    inputs = [ember.tensor(a, requires_grad=True) for a in arrays]
    assert ember.autograd.gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3)


def test_layout_and_flags():
    x = ember.ones(2, 3)
    assert x.layout is ember.strided and repr(ember.strided) == "ember.strided"
    assert isinstance(ember.strided, ember.layout)
    assert pickle.loads(pickle.dumps(ember.strided)) is ember.strided
    assert x.is_cpu
    for flag in ("is_sparse", "is_sparse_csr", "is_quantized", "is_meta", "is_mkldnn", "is_nested", "is_xla", "is_mps"):
        assert getattr(x, flag) is False, flag
    assert not x.is_inference() and not x.is_conj() and not x.is_neg() and not x.is_pinned()
    assert x.conj() is x and x.resolve_conj() is x and x.resolve_neg() is x and ember.conj_physical(x) is x
    assert ember.is_complex(x) is False
    with pytest.raises(RuntimeError, match="Cannot access accelerator device when none is available."):
        x.pin_memory()


def test_python_api_does_not_shadow_tensorbase():
    # TensorApi's members are set on ember.Tensor: a name TensorBase gains (a new generated op) must leave them.
    from ember._tensor_api import TensorApi
    own = {n for n in vars(TensorApi) if not n.startswith("__")}
    assert own & set(dir(ember._C.TensorBase)) == set()
    assert all(getattr(ember.Tensor, n) is getattr(TensorApi, n) for n in own if not isinstance(vars(TensorApi)[n],
                                                                                                  property))
    assert ember.Tensor.__mro__ == (ember.Tensor, ember._C.TensorBase, object)


def test_predicates():
    assert ember.ones(2).is_signed() and ember.ones(2, dtype=ember.int8).is_signed()
    assert not ember.ones(2, dtype=ember.uint8).is_signed() and not ember.is_signed(ember.ones(2, dtype=ember.bool))
    assert ember.tensor([2]).is_nonzero() and not ember.is_nonzero(ember.tensor(0.0))
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with more than one value is ambiguous"):
        ember.ones(2).is_nonzero()
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with no values is ambiguous"):
        ember.tensor([]).is_nonzero()
    assert ember.ones(2, 3).is_same_size(ember.zeros(2, 3)) and not ember.is_same_size(ember.ones(2), ember.ones(3))
    x = ember.ones(2, 3)
    assert x.is_set_to(x) and x.is_set_to(x.view(2, 3)) and not x.is_set_to(x.t()) and not x.is_set_to(x.clone())
    with pytest.raises(TypeError, match="must be Tensor"):
        ember.is_nonzero(1)


def test_dim_order():
    assert ember.ones(2, 3).dim_order() == (0, 1)
    assert ember.ones(2, 3).t().dim_order() == (1, 0)
    assert ember.empty(2, 3, 4, 5).permute(0, 2, 3, 1).dim_order() == (0, 3, 1, 2)
    assert ember.ones(2, 3, 1, 1).dim_order() == (0, 1, 2, 3)
    if torch is not None:
        for shape, perm in [((2, 3, 4), (2, 0, 1)), ((4, 1, 3), (1, 2, 0)), ((2, 2), (1, 0))]:
            assert ember.empty(*shape).permute(*perm).dim_order() == torch.empty(*shape).permute(*perm).dim_order()


def test_legacy_new():
    x = ember.ones(2, 3, dtype=ember.float64)
    assert x.new(2, 3).shape == (2, 3) and x.new(2, 3).dtype == ember.float64
    assert x.new().shape == (0,)
    assert x.new(ember.Size([4])).shape == (4,)
    made = x.new([1, 2])
    assert made.tolist() == [1.0, 2.0] and made.dtype == ember.float64
    alias = x.new(x)
    assert alias is not x and alias.data_ptr() == x.data_ptr() and alias._base is None
    with pytest.raises(TypeError):
        x.new(ember.ones(2, dtype=ember.int64))
    over = x.new(x.untyped_storage())
    assert over.shape == (6,) and over.data_ptr() == x.data_ptr()


def test_typed_storage():
    base = ember.arange(6.0)
    x = base.reshape(2, 3)[:, 1:]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = x.storage()
    assert isinstance(s, ember.TypedStorage) and ember.is_storage(s) and ember.is_storage(x.untyped_storage())
    assert not ember.is_storage(x)
    assert len(s) == s.size() == 6 and s.dtype == ember.float32 and s.device.type == "cpu"
    assert s.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0] and s[-1] == 5.0
    assert s.element_size() == 4 and s.nbytes() == 24 and s.data_ptr() == base.data_ptr()
    assert s.untyped() is x.untyped_storage()
    s[0] = 10
    assert base[0].item() == 10.0  # the storage is the tensor's memory
    with pytest.raises(IndexError, match="index 7 out of range for storage of size 6"):
        s[7]
    assert repr(s).endswith("[ember.storage.TypedStorage(dtype=ember.float32, device=cpu) of size 6]")
    assert x.storage_type() is ember.FloatStorage
    assert ember.ones(1, dtype=ember.int64).storage_type() is ember.LongStorage
    assert ember.LongStorage([1, 2]).tolist() == [1, 2] and ember.FloatStorage(3).tolist() == [0.0] * 3
    assert s.type() == "ember.FloatStorage"


def test_fill_diagonal():
    for shape, wrap in [((5, 3), True), ((5, 3), False), ((3, 5), True), ((4, 4), False), ((7, 2), True)]:
        a = np.zeros(shape)
        np.fill_diagonal(a, 2.5, wrap=wrap)
        x = ember.zeros(*shape)
        assert x.fill_diagonal_(2.5, wrap=wrap) is x
        np.testing.assert_array_equal(x.numpy(), a)
        t = ember.zeros(shape[::-1]).t()  # a transposed (non-contiguous) target
        t.fill_diagonal_(2.5, wrap=wrap)
        np.testing.assert_array_equal(t.numpy(), a)
    cube = ember.zeros(3, 3, 3).fill_diagonal_(1)
    assert cube.sum().item() == 3 and cube[1, 1, 1].item() == 1
    with pytest.raises(RuntimeError, match="all dimensions of input must be of equal length"):
        ember.zeros(2, 3, 4).fill_diagonal_(1)
    with pytest.raises(RuntimeError, match="dimensions must larger than 1"):
        ember.zeros(3).fill_diagonal_(1)
    leaf = ember.tensor(arr(3, 3), requires_grad=True)
    y = leaf * 1
    y.fill_diagonal_(0)
    y.sum().backward()
    np.testing.assert_array_equal(leaf.grad.numpy(), 1 - np.eye(3))


def test_apply_and_map():
    x = ember.tensor([[1.0, 2.0], [3.0, 4.0]]).t()
    assert x.apply_(lambda v: v * 10) is x
    assert x.tolist() == [[10.0, 30.0], [20.0, 40.0]]
    ints = ember.ones(3, dtype=ember.int64).apply_(lambda a: a * 2.7)
    assert ints.tolist() == [2, 2, 2]
    y = ember.ones(2, 3).map_(ember.tensor([1.0, 2.0, 3.0]), lambda a, b: a + b)
    assert y.tolist() == [[2.0, 3.0, 4.0]] * 2
    z = ember.zeros(3).map2_(ember.tensor([1.0, 2.0, 3.0]), ember.tensor(2.0), lambda s, a, b: s + a * b)
    assert z.tolist() == [2.0, 4.0, 6.0]
    with pytest.raises(RuntimeError, match="Can't call apply_\\(\\) on Variable that requires grad"):
        ember.ones(2, requires_grad=True).apply_(lambda v: v)


def test_index_put_and_reduce():
    a = arr(4, 3)
    idx = (ember.tensor([0, 2, 0]),)
    vals = arr(3, 3)
    expected = a.copy()
    np.add.at(expected, [0, 2, 0], vals)
    x = ember.tensor(a)
    got = ember.index_put(x, idx, ember.tensor(vals), accumulate=True)
    np.testing.assert_allclose(got.numpy(), expected)
    np.testing.assert_array_equal(x.numpy(), a)  # out of place
    np.testing.assert_allclose(x.index_put(idx, ember.tensor(5.0)).numpy()[[0, 2]], 5.0)
    gradcheck(lambda s, v: ember.index_put(s, idx, v, True), a, vals)

    src = arr(4, 2)
    index = ember.tensor([0, 0, 2, 1])
    with warnings.catch_warnings():  # index_reduce's beta warning
        warnings.simplefilter("ignore")
        for reduce, ufunc in [("prod", np.multiply), ("amax", np.maximum), ("amin", np.minimum)]:
            base = arr(3, 2)
            exp = base.copy()
            ufunc.at(exp, [0, 0, 2, 1], src)
            np.testing.assert_allclose(ember.tensor(base).index_reduce(0, index, ember.tensor(src), reduce).numpy(),
                                       exp)
            excl = np.full_like(base, np.nan)
            for i, j in enumerate([0, 0, 2, 1]):
                excl[j] = src[i] if np.isnan(excl[j]).all() else ufunc(excl[j], src[i])
            np.testing.assert_allclose(ember.index_reduce(ember.tensor(base), 0, index, ember.tensor(src), reduce,
                                                          include_self=False).numpy(), excl)
        base = arr(3, 2)
        mean = ember.tensor(base).index_reduce(0, index, ember.tensor(src), "mean")
        np.testing.assert_allclose(mean.numpy(), np.stack([(base[0] + src[0] + src[1]) / 3, (base[1] + src[3]) / 2,
                                                           (base[2] + src[2]) / 2]))
        inplace = ember.tensor(base.T.copy()).t()
        inplace.index_reduce_(0, index, ember.tensor(src), "mean")
        np.testing.assert_allclose(inplace.numpy(), mean.numpy())
        with pytest.raises(RuntimeError, match="Expected reduce to be one of prod, mean, amax or amin but got sum"):
            ember.tensor(base).index_reduce(0, index, ember.tensor(src), "sum")
        with pytest.raises(RuntimeError, match="Number of indices \\(2\\) should be equal to source.size\\(dim\\)"):
            ember.tensor(base).index_reduce(0, ember.tensor([0, 1]), ember.tensor(src), "prod")
        gradcheck(lambda s, v: s.index_reduce(0, index, v, "mean"), base, src)


def test_scatter_functions():
    a = arr(3, 4)
    x = ember.tensor(a)
    for got, view in [(ember.select_scatter(x, ember.zeros(4, dtype=ember.float64), 0, 1), (1, slice(None))),
                      (x.slice_scatter(ember.zeros(3, 2, dtype=ember.float64), 1, 0, 4, 2),
                       (slice(None), slice(0, 4, 2))),
                      (ember.diagonal_scatter(x, ember.zeros(3, dtype=ember.float64), 1), None)]:
        exp = a.copy()
        if view is None:
            exp[[0, 1, 2], [1, 2, 3]] = 0
        else:
            exp[view] = 0
        np.testing.assert_array_equal(got.numpy(), exp)
    np.testing.assert_array_equal(x.numpy(), a)
    t = ember.zeros(3, 2).t()  # as torch: the copy keeps t's layout (strides (1, 2)), which as_strided reads
    got = ember.as_strided_scatter(t, ember.ones(2), (2,), (2,))
    assert got.tolist() == [[1.0, 1.0, 0.0], [0.0, 0.0, 0.0]]
    with pytest.raises(RuntimeError, match="expected src to have a size equal to the slice of self"):
        ember.select_scatter(x, ember.zeros(3, dtype=ember.float64), 0, 0)
    gradcheck(lambda s, v: ember.select_scatter(s, v, 1, 2), a, arr(3))
    gradcheck(lambda s, v: ember.slice_scatter(s, v, 0, 1), a, arr(2, 4))
    gradcheck(lambda s, v: ember.diagonal_scatter(s, v, -1), a, arr(2))
    gradcheck(lambda s, v: ember.as_strided_scatter(s, v, (2, 2), (1, 4), 1), a, arr(2, 2))


@needs_torch
def test_against_torch():
    a, src = arr(3, 4), arr(2, 4)
    index = [2, 0]
    t, r = ember.zeros(3, 2).t(), torch.zeros(3, 2).t()
    assert ember.as_strided_scatter(t, ember.ones(2), (2,), (2,)).tolist() == \
        torch.as_strided_scatter(r, torch.ones(2), (2,), (2,)).tolist()
    for name, args in [("select_scatter", (src[0], 0, 2)), ("slice_scatter", (src, 0, 1)),
                       ("diagonal_scatter", (src[0, :3],)), ("as_strided_scatter", (src[:, :2], (2, 2), (1, 3), 2)),
                       ("index_reduce", (0, index, src, "amax"))]:
        mine = getattr(ember, name)(ember.tensor(a), *[ember.tensor(v) if isinstance(v, (np.ndarray, list)) else v
                                                      for v in args])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = getattr(torch, name)(torch.tensor(a), *[torch.tensor(v) if isinstance(v, (np.ndarray, list)) else v
                                                         for v in args])
        np.testing.assert_allclose(mine.numpy(), ref.numpy())
    x, ref = ember.zeros(5, 3), torch.zeros(5, 3)
    np.testing.assert_array_equal(x.fill_diagonal_(3, wrap=True).numpy(), ref.fill_diagonal_(3, wrap=True).numpy())
    for dtype in ("uint8", "int8", "bool", "float16", "int64"):
        assert getattr(ember, dtype) is not None
        mine = ember.ones(1, dtype=getattr(ember, dtype)).is_signed()
        assert mine == torch.ones(1, dtype=getattr(torch, dtype)).is_signed()


@pytest.mark.parametrize("case", [
    ("squeeze_", (), "squeeze", (2, 1, 3, 1)), ("squeeze_", (1,), "squeeze", (2, 1, 3, 1)),
    ("squeeze_", ((1, 3),), "squeeze", (2, 1, 3, 1)), ("unsqueeze_", (-1,), "unsqueeze", (2, 3)),
    ("transpose_", (0, 2), "transpose", (2, 3, 4)), ("swapaxes_", (0, 1), "transpose", (2, 3)),
    ("swapdims_", (-1, 0), "transpose", (2, 3, 4)), ("as_strided_", ((2, 2), (1, 2), 1), "as_strided", (2, 3)),
])
def test_inplace_view_ops(case):
    name, args, reference, shape = case
    a = arr(*shape)
    for base in (ember.tensor(a), ember.tensor(np.ascontiguousarray(a.T)).permute(*reversed(range(len(shape))))):
        x = base.clone() if name == "as_strided_" else base
        expected = getattr(x, reference)(*args)
        want = (tuple(expected.shape), expected.stride(), expected.storage_offset(), expected.numpy().copy())
        version = x._version
        assert getattr(x, name)(*args) is x
        assert (tuple(x.shape), x.stride(), x.storage_offset()) == want[:3]
        np.testing.assert_array_equal(x.numpy(), want[3])
        assert x._version > version
    # autograd: the gradient of the out-of-place view op, through the history before the change
    leaf = ember.tensor(a, requires_grad=True)
    y = leaf * 2
    getattr(y, name)(*args)
    weights = ember.tensor(arr(*y.shape))
    (y * weights).sum().backward()
    ref_leaf = ember.tensor(a, requires_grad=True)
    (getattr(ref_leaf * 2, reference)(*args) * weights).sum().backward()
    np.testing.assert_allclose(leaf.grad.numpy(), ref_leaf.grad.numpy())
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        getattr(ember.tensor(a, requires_grad=True), name)(*args)
    if torch is not None:
        t = torch.tensor(a)
        e = ember.tensor(a)
        getattr(t, name)(*args)
        getattr(e, name)(*args)
        assert tuple(e.shape) == tuple(t.shape) and e.stride() == t.stride()
        np.testing.assert_array_equal(e.numpy(), t.numpy())


def test_inplace_view_ops_errors_and_views():
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.ones(2, 3).unsqueeze_(5)
    assert ember.ones(2, 1).squeeze_(0).shape == (2, 1)
    assert ember.ones(2, 3).expand(2, 2, 3).transpose_(0, 1).stride() == (3, 0, 1)
    base = ember.tensor(arr(2, 3), requires_grad=True)
    v = base * 1
    view = v[0]
    view.unsqueeze_(0)  # a view stays a view of its base
    assert view.shape == (1, 3) and view._base is not None
    view.mul_(3)
    v.sum().backward()
    np.testing.assert_array_equal(base.grad.numpy(), [[3, 3, 3], [1, 1, 1]])


def test_resize_and_set():
    x = ember.arange(6.0)
    storage = x.untyped_storage()
    assert x.resize_(2, 3) is x and x.shape == (2, 3) and x.stride() == (3, 1)
    assert x.tolist() == [[0, 1, 2], [3, 4, 5]]
    x.resize_(2)
    assert x.tolist() == [0.0, 1.0] and x.untyped_storage() is storage
    y = ember.arange(4.0)
    y.resize_(3, 3)  # grows the storage, keeping the values in front
    assert y.untyped_storage().nbytes() == 36 and y.reshape(-1)[:4].tolist() == [0, 1, 2, 3]
    t = ember.ones(2, 3).t()
    assert t.resize_(3, 2).stride() == (1, 3) and t.resize_(2, 3).stride() == (3, 1)  # same sizes keep strides
    r = ember.zeros(1).resize_as_(ember.ones(4, 5))
    assert r.shape == (4, 5)
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        ember.ones(2, requires_grad=True).resize_(3)
    with pytest.raises(RuntimeError, match="negative dimension"):
        ember.ones(2).resize_(-1)
    src = ember.arange(4.0)
    s = ember.ones(2)
    assert s.set_(src) is s and s.data_ptr() == src.data_ptr() and s.tolist() == [0, 1, 2, 3]
    s.set_(src.untyped_storage(), 1, (2,), (2,))
    assert s.tolist() == [1.0, 3.0] and s.storage_offset() == 1
    assert ember.ones(2).set_(src.untyped_storage()).shape == (4,)
    assert ember.ones(2).set_().shape == (0,)
    src[1] = 9  # shared memory
    assert s[0].item() == 9
    with pytest.raises(RuntimeError, match="Could not set tensor of type"):
        ember.ones(2).set_(ember.zeros(2, dtype=ember.int64))
    with pytest.raises(RuntimeError, match="out of bounds for storage of size 16"):
        ember.ones(2).set_(src.untyped_storage(), 2, (3,))
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        ember.ones(2, requires_grad=True).set_(src)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        typed = src.storage()
    assert ember.ones(1).set_(typed, 0, (2,)).tolist() == [0.0, 9.0]
    out = ember.empty(0)
    ember.logspace(0, 1, 2, out=out)
    assert out.tolist() == [1.0, 10.0]


def test_inplace_view_ops_forward_ad():
    import ember.autograd.forward_ad as fwAD
    tangent = np.arange(6.0).reshape(2, 1, 3)
    with fwAD.dual_level():
        x = fwAD.make_dual(ember.ones(2, 1, 3, dtype=ember.float64), ember.tensor(tangent))
        y = x * 1
        y.squeeze_(1)
        np.testing.assert_array_equal(fwAD.unpack_dual(y).tangent.numpy(), tangent.squeeze(1))
        z = x * 1
        z.transpose_(0, 2)
        np.testing.assert_array_equal(fwAD.unpack_dual(z).tangent.numpy(), np.swapaxes(tangent, 0, 2))
