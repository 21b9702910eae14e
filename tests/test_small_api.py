"""Small API PyTorch scripts use beside the ops: square, finfo/iinfo, triu/tril_indices, compile,
backends.cudnn (issue 12)."""
import numpy as np
import pytest

import ember

FLOATS = ["float16", "bfloat16", "float32", "float64"]
INTS = ["uint8", "int8", "int16", "int32", "int64"]


def test_square():
    x = ember.tensor([1.5, -2.0, 3.0], requires_grad=True)
    y = x.square()
    np.testing.assert_array_equal(y.detach().numpy(), [2.25, 4.0, 9.0])
    assert y.grad_fn.name() == "PowBackward0"
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, -4.0, 6.0])
    assert ember.square(ember.tensor([True, False])).dtype == ember.int64
    assert ember.square(ember.tensor([3, -4])).tolist() == [9, 16]
    out = ember.empty(2)
    assert ember.square(ember.tensor([2.0, 3.0]), out=out) is out and out.tolist() == [4.0, 9.0]
    z = ember.tensor([[1.0, 2.0], [3.0, 4.0]]).t()
    assert z.square_() is z and z.tolist() == [[1.0, 9.0], [4.0, 16.0]]


@pytest.mark.parametrize("name", FLOATS)
def test_finfo_against_numpy_bits(name):
    f = ember.finfo(getattr(ember, name))
    mantissa = {"float16": 10, "bfloat16": 7, "float32": 23, "float64": 52}[name]
    assert f.bits == {"float16": 16, "bfloat16": 16, "float32": 32, "float64": 64}[name] and f.dtype == name
    assert f.eps == 2.0 ** -mantissa and f.min == -f.max and f.tiny == f.smallest_normal
    if name != "bfloat16":  # NumPy has no bfloat16
        ref = np.finfo(getattr(np, name))
        assert (f.eps, f.max, f.tiny, f.resolution) == (float(ref.eps), float(ref.max), float(ref.tiny),
                                                        10.0 ** -ref.precision)
    else:
        assert (f.max, f.tiny, f.resolution) == (3.3895313892515355e+38, 2.0 ** -126, 0.01)


def test_finfo_iinfo_reprs_and_errors():
    assert repr(ember.finfo(ember.float32)) == (
        "finfo(resolution=1e-06, min=-3.40282e+38, max=3.40282e+38, eps=1.19209e-07, smallest_normal=1.17549e-38, "
        "tiny=1.17549e-38, dtype=float32)")
    assert ember.finfo() == ember.finfo(ember.get_default_dtype())
    assert repr(ember.iinfo(ember.int8)) == "iinfo(min=-128, max=127, dtype=int8)"
    assert repr(ember.iinfo(ember.int32)) == "iinfo(min=-2.14748e+09, max=2.14748e+09, dtype=int32)"
    with pytest.raises(TypeError, match="requires an integer input type"):
        ember.iinfo(ember.float32)
    with pytest.raises(TypeError, match="requires a floating point input type"):
        ember.finfo(ember.int64)
    with pytest.raises(TypeError, match="bool is not supported by"):
        ember.iinfo(ember.bool)


@pytest.mark.parametrize("name", INTS)
def test_iinfo_against_numpy(name):
    i, ref = ember.iinfo(getattr(ember, name)), np.iinfo(getattr(np, name))
    assert (i.bits, i.min, i.max, i.dtype) == (ref.bits, int(ref.min), int(ref.max), name)


def test_info_as_torch():
    torch = pytest.importorskip("torch")
    for name in FLOATS:
        assert repr(ember.finfo(getattr(ember, name))) == repr(torch.finfo(getattr(torch, name)))
        f, g = ember.finfo(getattr(ember, name)), torch.finfo(getattr(torch, name))
        assert [getattr(f, a) for a in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution")] == \
            [getattr(g, a) for a in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution")]
    for name in INTS:
        assert repr(ember.iinfo(getattr(ember, name))) == repr(torch.iinfo(getattr(torch, name)))


@pytest.mark.parametrize("row, col, offset", [(3, 4, 1), (4, 3, 0), (3, 3, -1), (0, 3, 0), (3, 3, 10), (3, 3, -10),
                                              (5, 1, 2)])
def test_triangle_indices(row, col, offset):
    for fn, np_fn in ((ember.triu_indices, np.triu_indices), (ember.tril_indices, np.tril_indices)):
        got = fn(row, col, offset)
        assert got.dtype == ember.int64 and got.shape[0] == 2
        np.testing.assert_array_equal(got.numpy(), np.stack(np_fn(row, offset, col)))
        assert fn(row, col, offset, dtype=ember.int32).dtype == ember.int32
    torch = pytest.importorskip("torch")
    assert ember.triu_indices(row, col, offset).tolist() == torch.triu_indices(row, col, offset).tolist()
    assert ember.tril_indices(row, col, offset).tolist() == torch.tril_indices(row, col, offset).tolist()


def test_triangle_indices_errors():
    with pytest.raises(RuntimeError, match="row must be non-negative, got-1"):
        ember.triu_indices(-1, 3)
    with pytest.raises(RuntimeError, match="col must be non-negative, got-2"):
        ember.tril_indices(3, -2)
    with pytest.raises(NotImplementedError, match="\"triu_indices\" not implemented for 'Float'"):
        ember.triu_indices(3, 3, dtype=ember.float32)


def test_compile_returns_the_callable():
    model = ember.nn.Linear(2, 3)
    assert ember.compile(model) is model
    assert ember.compile(mode="max-autotune")(model) is model

    @ember.compile
    def double(x):
        return x * 2
    assert double(ember.tensor([1.0])).tolist() == [2.0]
    with pytest.raises(AssertionError, match="A callable function is expected"):
        ember.compile(3)


def test_cudnn_flags():
    cudnn = ember.backends.cudnn
    assert cudnn.is_available() is False and cudnn.version() is None
    assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32) == (True, False, False, True)


# ---------------------------------------------------------------- Tensor.t_
def test_t_inplace_geometry_and_version():
    x = ember.arange(6.0).reshape(2, 3)
    v = x._version
    assert x.t_() is x and x.shape == (3, 2) and x.stride() == (1, 3) and not x.is_contiguous()
    assert x._version == v + 1
    np.testing.assert_array_equal(x.numpy(), np.arange(6.0).reshape(2, 3).T)
    one = ember.arange(3.0)
    assert one.t_().shape == (3,) and ember.tensor(2.0).t_().shape == ()
    with pytest.raises(RuntimeError, match=r"t_\(\) expects a tensor with <= 2 dimensions, but self is 3D"):
        ember.zeros(2, 3, 4).t_()


def test_t_inplace_autograd():
    a = ember.arange(6.0).reshape(2, 3).requires_grad_()
    y = a * 2
    assert y.t_() is y and y.grad_fn.name() == "TBackward1" and type(y.grad_fn).__name__ == "TBackward1"
    weights = ember.arange(6.0).reshape(3, 2)
    (y * weights).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), 2 * np.arange(6.0).reshape(3, 2).T)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        a.t_()
    # what an op saved of the tensor is stale after the transpose (its version moved), as in PyTorch
    b = ember.ones(2, 3, requires_grad=True)
    e = b.exp()
    e.t_()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        e.sum().backward()


def test_t_inplace_on_a_view():
    a = ember.arange(6.0).reshape(2, 3).requires_grad_()
    y = a * 1
    z = y[0:2]
    z.t_()
    assert z._is_view() and z._base.equal(y) and z.shape == (3, 2) and y.shape == (2, 3)
    assert z.grad_fn.name() == "TBackward1"
    (z * ember.arange(6.0).reshape(3, 2)).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [[0.0, 2.0, 4.0], [1.0, 3.0, 5.0]])


def test_t_inplace_as_torch():
    torch = pytest.importorskip("torch")
    results = []
    for m in (ember, torch):
        a = m.arange(6.0).reshape(2, 3).requires_grad_()
        y = (a * 3)[:, 1:]
        y.t_()
        (y * m.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
        results.append((tuple(y.shape), y.stride(), y.grad_fn.name(), a.grad.tolist()))
    assert results[0] == results[1]
