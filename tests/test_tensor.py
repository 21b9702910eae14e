"""The Tensor object as PyTorch users see it: repr, metadata, dtype/device
objects, copy_/fill_/zero_/to/clone/contiguous, seeding, every Python operator
(incl. reflected and in-place) and conversions to Python values.
Expected reprs were taken once from PyTorch 2.13 (with torch. -> ember.)."""
import math

import numpy as np
import pytest

import ember

# ---------------------------------------------------------------- repr

REPRS = [
    (lambda: ember.tensor([1.0, 2.0, 3.0]), "tensor([1., 2., 3.])"),
    (lambda: ember.tensor([1, 2, 3]), "tensor([1, 2, 3])"),
    (lambda: ember.tensor(1.5), "tensor(1.5000)"),
    (lambda: ember.tensor([[1, 2], [3, 4]]), "tensor([[1, 2],\n        [3, 4]])"),
    (lambda: ember.tensor([0.1, 0.2]), "tensor([0.1000, 0.2000])"),
    (lambda: ember.tensor([1.0, 2.0], dtype=ember.float64), "tensor([1., 2.], dtype=ember.float64)"),
    (lambda: ember.tensor([1.0, 2.0], requires_grad=True), "tensor([1., 2.], requires_grad=True)"),
    (lambda: ember.tensor([1.0, 2.0], requires_grad=True) + 1, "tensor([2., 3.], grad_fn=<AddBackward0>)"),
    (lambda: ember.tensor([1.0, 2.0], requires_grad=True).sum(), "tensor(3., grad_fn=<SumBackward0>)"),
    (lambda: ember.tensor([1.0], dtype=ember.float64, requires_grad=True),
     "tensor([1.], dtype=ember.float64, requires_grad=True)"),
    (lambda: ember.tensor([]), "tensor([])"),
    (lambda: ember.tensor([], dtype=ember.int64), "tensor([], dtype=ember.int64)"),
    (lambda: ember.zeros(0, 3), "tensor([], size=(0, 3))"),
    (lambda: ember.zeros(2, 0, dtype=ember.int32), "tensor([], size=(2, 0), dtype=ember.int32)"),
    (lambda: ember.zeros(2, 0, 3, dtype=ember.float64), "tensor([], size=(2, 0, 3), dtype=ember.float64)"),
    (lambda: ember.tensor([True, False]), "tensor([ True, False])"),
    (lambda: ember.tensor(True), "tensor(True)"),
    (lambda: ember.tensor(3), "tensor(3)"),
    (lambda: ember.tensor(-7), "tensor(-7)"),
    (lambda: ember.tensor(0.0), "tensor(0.)"),
    (lambda: ember.tensor(-2.0), "tensor(-2.)"),
    (lambda: ember.tensor([0.0, 0.0]), "tensor([0., 0.])"),
    (lambda: ember.tensor([1, 2], dtype=ember.int32), "tensor([1, 2], dtype=ember.int32)"),
    (lambda: ember.tensor([1, 2], dtype=ember.uint8), "tensor([1, 2], dtype=ember.uint8)"),
    (lambda: ember.tensor([1.5, 2], dtype=ember.float16), "tensor([1.5000, 2.0000], dtype=ember.float16)"),
    (lambda: ember.tensor([1.5, 2], dtype=ember.bfloat16), "tensor([1.5000, 2.0000], dtype=ember.bfloat16)"),
    (lambda: ember.tensor(2.5, dtype=ember.float16), "tensor(2.5000, dtype=ember.float16)"),
    (lambda: ember.tensor(1.5, dtype=ember.float64), "tensor(1.5000, dtype=ember.float64)"),
    (lambda: ember.tensor([-1.0, 2.5]), "tensor([-1.0000,  2.5000])"),
    (lambda: ember.tensor([-1, 20, 300]), "tensor([ -1,  20, 300])"),
    (lambda: ember.tensor([123456789, 1]), "tensor([123456789,         1])"),
    (lambda: ember.tensor([1.25, 100.5, -3.0]), "tensor([  1.2500, 100.5000,  -3.0000])"),
    (lambda: ember.tensor([1.23456789]), "tensor([1.2346])"),
    (lambda: ember.tensor([0.001, 0.01]), "tensor([0.0010, 0.0100])"),
    (lambda: ember.tensor([1e-5, 1.0]), "tensor([1.0000e-05, 1.0000e+00])"),
    (lambda: ember.tensor([1e10, 1.0]), "tensor([1.0000e+10, 1.0000e+00])"),
    (lambda: ember.tensor([1e9, 1.0]), "tensor([1.0000e+09, 1.0000e+00])"),
    (lambda: ember.tensor([1.0, 2000.0]), "tensor([1.0000e+00, 2.0000e+03])"),
    (lambda: ember.tensor([float("inf"), float("nan"), 1.0]), "tensor([inf, nan, 1.])"),
    (lambda: ember.tensor([float("inf"), -float("inf")]), "tensor([inf, -inf])"),
    (lambda: ember.tensor([[1.0], [2.0]]), "tensor([[1.],\n        [2.]])"),
    (lambda: ember.arange(8).reshape(2, 2, 2),
     "tensor([[[0, 1],\n         [2, 3]],\n\n        [[4, 5],\n         [6, 7]]])"),
    (lambda: ember.arange(8.0).reshape(2, 2, 2),
     "tensor([[[0., 1.],\n         [2., 3.]],\n\n        [[4., 5.],\n         [6., 7.]]])"),
    (lambda: ember.arange(30.0),
     "tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13.,\n"
     "        14., 15., 16., 17., 18., 19., 20., 21., 22., 23., 24., 25., 26., 27.,\n"
     "        28., 29.])"),
    (lambda: ember.arange(30),
     "tensor([ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, 15, 16, 17,\n"
     "        18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29])"),
    (lambda: ember.arange(2000), "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])"),
    (lambda: ember.arange(2000.0).reshape(40, 50),
     "tensor([[0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 4.7000e+01, 4.8000e+01,\n"
     "         4.9000e+01],\n"
     "        [5.0000e+01, 5.1000e+01, 5.2000e+01,  ..., 9.7000e+01, 9.8000e+01,\n"
     "         9.9000e+01],\n"
     "        [1.0000e+02, 1.0100e+02, 1.0200e+02,  ..., 1.4700e+02, 1.4800e+02,\n"
     "         1.4900e+02],\n"
     "        ...,\n"
     "        [1.8500e+03, 1.8510e+03, 1.8520e+03,  ..., 1.8970e+03, 1.8980e+03,\n"
     "         1.8990e+03],\n"
     "        [1.9000e+03, 1.9010e+03, 1.9020e+03,  ..., 1.9470e+03, 1.9480e+03,\n"
     "         1.9490e+03],\n"
     "        [1.9500e+03, 1.9510e+03, 1.9520e+03,  ..., 1.9970e+03, 1.9980e+03,\n"
     "         1.9990e+03]])"),
    (lambda: ember.arange(60, dtype=ember.uint8).reshape(2, 30) % 2,
     "tensor([[0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1,\n"
     "         0, 1, 0, 1, 0, 1],\n"
     "        [0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1,\n"
     "         0, 1, 0, 1, 0, 1]], dtype=ember.uint8)"),
    (lambda: ember.arange(20.0, dtype=ember.float64).reshape(2, 10) - 10,
     "tensor([[-10.,  -9.,  -8.,  -7.,  -6.,  -5.,  -4.,  -3.,  -2.,  -1.],\n"
     "        [  0.,   1.,   2.,   3.,   4.,   5.,   6.,   7.,   8.,   9.]],\n"
     "       dtype=ember.float64)"),
    (lambda: ember.tensor([float("inf"), 1.5, 2.0, -float("inf"), -3.0], dtype=ember.float16, requires_grad=True),
     "tensor([    inf,  1.5000,  2.0000,    -inf, -3.0000], dtype=ember.float16,\n"
     "       requires_grad=True)"),
]


@pytest.mark.parametrize("make,expected", REPRS, ids=[r[1][:40] for r in REPRS])
def test_repr(make, expected):
    t = make()
    assert repr(t) == expected
    assert str(t) == expected


def test_repr_non_default_dtype_follows_default():
    prev = ember.get_default_dtype()
    try:
        ember.set_default_dtype(ember.float64)
        assert repr(ember.tensor([1.0, 2.0])) == "tensor([1., 2.])"
        assert repr(ember.tensor([1.0], dtype=ember.float32)) == "tensor([1.], dtype=ember.float32)"
    finally:
        ember.set_default_dtype(prev)


def test_repr_does_not_change_tensor():
    t = ember.arange(5000.0)
    before = t.data_ptr()
    repr(t)
    assert t.data_ptr() == before and t.numel() == 5000


# ---------------------------------------------------------------- metadata

def test_shape_and_size():
    t = ember.arange(6.0).reshape(2, 3)
    assert t.shape == (2, 3)
    assert t.size() == (2, 3)
    assert isinstance(t.shape, tuple)
    assert type(t.shape).__name__ == "Size"
    assert t.shape == ember.Size([2, 3])
    assert t.size(1) == 3 and t.size(-1) == 3 and t.size(0) == 2 and t.shape[0] == 2
    assert repr(t.shape) == "ember.Size([2, 3])"
    assert ember.tensor(1.0).shape == ()
    with pytest.raises(IndexError, match="Dimension out of range"):
        t.size(2)


def test_metadata():
    t = ember.arange(6.0).reshape(2, 3)
    assert t.dtype == ember.float32
    assert t.device == ember.device("cpu")
    assert t.device.type == "cpu"
    assert str(t.device) == "cpu"
    assert t.ndim == 2 and t.dim() == 2
    assert t.numel() == 6 and ember.numel(t) == 6
    assert len(t) == 2
    assert t.T.shape == (3, 2)
    assert t.T.tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
    assert t.T.data_ptr() == t.data_ptr()
    assert t.is_contiguous() and not t.T.is_contiguous()
    assert t.stride() == (3, 1) and t.stride(0) == 3 and t.stride(-1) == 1
    assert t.element_size() == 4
    assert ember.ones(1, dtype=ember.float16).element_size() == 2
    assert ember.ones(2, 3, 4).T.shape == (4, 3, 2)
    assert ember.tensor(3.0).ndim == 0 and ember.tensor(3.0).numel() == 1
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d tensor"):
        len(ember.tensor(1.0))


def test_is_floating_point_and_is_tensor():
    t = ember.ones(2)
    assert t.is_floating_point() and ember.is_floating_point(t)
    assert not ember.tensor([1]).is_floating_point()
    assert ember.is_tensor(t) and not ember.is_tensor(1) and not ember.is_tensor([1.0])
    assert isinstance(t, ember.Tensor)


# ---------------------------------------------------------------- dtypes and devices

def test_dtype_aliases():
    assert ember.float is ember.float32
    assert ember.long is ember.int64
    assert ember.double is ember.float64
    assert ember.half is ember.float16
    assert ember.int is ember.int32
    assert ember.short is ember.int16
    assert isinstance(ember.bool, ember.dtype)
    assert ember.float32 == ember.float
    assert ember.float32 != ember.float64
    assert len({ember.float32, ember.float, ember.float64}) == 2


def test_dtype_properties():
    assert repr(ember.float32) == "ember.float32"
    assert str(ember.int64) == "ember.int64"
    assert ember.float16.is_floating_point and ember.bfloat16.is_floating_point
    assert not ember.int32.is_floating_point and not ember.bool.is_floating_point
    assert ember.int8.is_signed and not ember.uint8.is_signed
    assert [d.itemsize for d in (ember.bool, ember.uint8, ember.int16, ember.int32, ember.int64, ember.float16,
                                 ember.bfloat16, ember.float32, ember.float64)] == [1, 1, 2, 4, 8, 2, 2, 4, 8]


def test_device():
    d = ember.device("cpu")
    assert d.type == "cpu" and d.index is None
    assert repr(d) == "device(type='cpu')"
    assert str(d) == "cpu"
    assert d == ember.device("cpu")
    assert ember.zeros(1, device="cpu").device == d
    assert ember.zeros(1, device=d).device == d
    with pytest.raises(RuntimeError, match="device string: foo"):
        ember.device("foo")


# ---------------------------------------------------------------- copy_ / fill_ / zero_

def test_copy_broadcasts_and_converts():
    a = ember.zeros(2, 3)
    r = a.copy_(ember.tensor([1, 2, 3]))
    assert r is a
    assert a.dtype == ember.float32
    assert a.tolist() == [[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]]
    i = ember.zeros(3, dtype=ember.int32)
    i.copy_(ember.tensor([1.9, -1.9, 2.5]))
    assert i.tolist() == [1, -1, 2]
    b = ember.zeros(2, dtype=ember.bool)
    b.copy_(ember.tensor([0.0, 0.5]))
    assert b.tolist() == [False, True]
    h = ember.zeros(2, dtype=ember.bfloat16)
    h.copy_(ember.tensor([1.5, 3.0], dtype=ember.float64))
    assert h.tolist() == [1.5, 3.0]
    v = ember.zeros(3, 3)
    v.t()[0].copy_(ember.tensor([1.0, 2.0, 3.0]))  # into a strided view
    assert v.tolist() == [[1.0, 0.0, 0.0], [2.0, 0.0, 0.0], [3.0, 0.0, 0.0]]
    s = ember.zeros(2, 2)
    s.copy_(ember.tensor(7.0))
    assert s.tolist() == [[7.0, 7.0], [7.0, 7.0]]


def test_copy_shape_mismatch():
    with pytest.raises(RuntimeError):
        ember.zeros(2, 3).copy_(ember.ones(2))


def test_fill_and_zero():
    t = ember.zeros(2, dtype=ember.int32)
    assert t.fill_(3.7) is t
    assert t.tolist() == [3, 3]
    f = ember.zeros(2)
    f.fill_(ember.tensor(2.5))
    assert f.tolist() == [2.5, 2.5]
    assert f.zero_() is f
    assert f.tolist() == [0.0, 0.0]
    b = ember.zeros(2, dtype=ember.bool).fill_(True)
    assert b.tolist() == [True, True]
    v = ember.ones(3, 4)
    v[:, ::2].zero_()
    assert v.tolist() == [[0.0, 1.0, 0.0, 1.0]] * 3


# ---------------------------------------------------------------- conversions

def test_to_dtype():
    t = ember.arange(6.0).reshape(2, 3)
    assert t.to(ember.int32).dtype == ember.int32
    assert t.to(dtype=ember.float64).dtype == ember.float64
    assert t.long().dtype == ember.int64
    assert t.double().dtype == ember.float64
    assert t.half().dtype == ember.float16
    assert t.int().dtype == ember.int32
    assert t.bool().dtype == ember.bool
    assert t.short().dtype == ember.int16
    assert t.byte().dtype == ember.uint8
    assert t.char().dtype == ember.int8
    assert t.bfloat16().dtype == ember.bfloat16
    assert t.to("cpu", ember.int64).dtype == ember.int64
    assert t.to(ember.ones(1, dtype=ember.int8)).dtype == ember.int8
    assert t.type_as(ember.tensor([1])).dtype == ember.int64
    assert ember.tensor([-1.7, 1.7, 2.5]).long().tolist() == [-1, 1, 2]
    assert ember.tensor([0.0, 0.1, -2.0]).bool().tolist() == [False, True, True]
    assert ember.tensor([True, False]).float().tolist() == [1.0, 0.0]
    x = ember.tensor([1.0, 2.0])
    y = x.to(ember.float64)
    y[0] = 9
    assert x.tolist() == [1.0, 2.0]  # a converted tensor is a copy


def test_to_same_dtype_or_device_returns_self():
    t = ember.arange(6.0)
    assert t.float() is t
    assert t.cpu() is t
    assert t.to(ember.float32) is t
    assert t.to("cpu") is t
    assert t.to(ember.device("cpu")) is t
    assert t.to(ember.float32, copy=True) is not t


def test_clone_is_independent():
    t = ember.arange(6.0).reshape(2, 3)
    c = t.clone()
    assert c.data_ptr() != t.data_ptr()
    assert c.tolist() == t.tolist() and c.dtype == t.dtype and c.shape == t.shape
    c[0, 0] = 100
    assert t[0, 0].item() == 0
    t[1, 1] = -5
    assert c[1, 1].item() == 4
    tc = t.t().clone()
    assert tc.tolist() == t.t().tolist()


def test_contiguous():
    t = ember.arange(6.0).reshape(2, 3)
    assert t.contiguous() is t
    c = t.T.contiguous()
    assert c.is_contiguous()
    assert c.stride() == (2, 1)
    assert c.tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
    assert c.data_ptr() != t.data_ptr()


def test_creation_requires_grad():
    assert ember.ones(2, requires_grad=True).requires_grad
    assert ember.tensor([1.0], requires_grad=True).requires_grad
    assert ember.zeros(2, 2, dtype=ember.float64, requires_grad=True).dtype == ember.float64
    assert ember.empty(3, requires_grad=True).requires_grad
    assert ember.full((2,), 1.0, requires_grad=True).requires_grad
    assert not ember.ones(2).requires_grad


def test_manual_seed_reproducible():
    ember.manual_seed(3)
    a, b = ember.rand(5), ember.randn(2, 3)
    ember.manual_seed(3)
    a2, b2 = ember.rand(5), ember.randn(2, 3)
    assert a.tolist() == a2.tolist() and b.tolist() == b2.tolist()
    assert ember.initial_seed() == 3
    c = ember.rand(5)
    assert c.tolist() != a.tolist()
    ember.manual_seed(4)
    assert ember.rand(5).tolist() != a.tolist()
    assert all(0 <= v < 1 for v in a.tolist())


def test_manual_seed_returns_generator():
    assert isinstance(ember.manual_seed(0), ember.Generator)


# ---------------------------------------------------------------- Python operators

def test_binary_operators():
    a = ember.tensor([6.0, -3.0, 4.5])
    b = ember.tensor([2.0, 4.0, -1.5])
    assert (a + b).tolist() == [8.0, 1.0, 3.0]
    assert (a - b).tolist() == [4.0, -7.0, 6.0]
    assert (a * b).tolist() == [12.0, -12.0, -6.75]
    assert (a / b).tolist() == [3.0, -0.75, -3.0]
    assert (a // b).tolist() == [3.0, -1.0, -3.0]
    assert (a % b).tolist() == [0.0, 1.0, -0.0]
    assert (b ** 2).tolist() == [4.0, 16.0, 2.25]
    assert (-a).tolist() == [-6.0, 3.0, -4.5]
    assert (+a).tolist() == [6.0, -3.0, 4.5]
    assert abs(a).tolist() == [6.0, 3.0, 4.5]
    m = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert (m @ ember.tensor([1.0, 1.0])).tolist() == [3.0, 7.0]
    assert (m @ m).tolist() == [[7.0, 10.0], [15.0, 22.0]]


def test_reflected_operators():
    t = ember.tensor([1.0, 2.0, 4.0])
    assert (2 + t).tolist() == [3.0, 4.0, 6.0]
    assert (2 - t).tolist() == [1.0, 0.0, -2.0]
    assert (2 * t).tolist() == [2.0, 4.0, 8.0]
    assert (2 / t).tolist() == [2.0, 1.0, 0.5]
    assert (2 ** t).tolist() == [2.0, 4.0, 16.0]
    assert (7 // t).tolist() == [7.0, 3.0, 1.0]
    assert (7 % t).tolist() == [0.0, 1.0, 3.0]
    i = ember.tensor([1, 3])
    assert (2 ** i).tolist() == [2, 8] and (2 ** i).dtype == ember.int64
    assert (2.0 ** i).tolist() == [2.0, 8.0] and (2.0 ** i).dtype == ember.float32
    assert (1.5 - i).tolist() == [0.5, -1.5]
    assert (1 / ember.tensor([2, 4])).tolist() == [0.5, 0.25]
    assert (7 // ember.tensor([2, -2])).tolist() == [3, -4]
    assert (7 % ember.tensor([5, 3])).tolist() == [2, 1]


def test_div_accepts_python_numbers():
    t = ember.tensor([3.0, -3.0])
    assert ember.div(t, 2).tolist() == [1.5, -1.5]
    assert t.div(2).tolist() == [1.5, -1.5]
    assert ember.div(t, 2, rounding_mode="floor").tolist() == [1.0, -2.0]
    assert ember.div(t, 2, rounding_mode="trunc").tolist() == [1.0, -1.0]
    u = t.clone()
    u.div_(2)
    assert u.tolist() == [1.5, -1.5]
    assert ember.div(ember.tensor([7, -7]), 2).tolist() == [3.5, -3.5]


def test_integer_operators():
    i = ember.tensor([7, -7])
    assert (i // 2).tolist() == [3, -4]
    assert (i % 3).tolist() == [1, 2]
    assert (i % -3).tolist() == [-2, -1]
    assert (ember.tensor([-7.0, 7.0]) % 3).tolist() == [2.0, 1.0]
    r = (ember.tensor([1, 0, -1]) / 0).tolist()
    assert r[0] == math.inf and math.isnan(r[1]) and r[2] == -math.inf


def test_bool_operators():
    a = ember.tensor([True, False, True])
    b = ember.tensor([True, True, False])
    assert (a & b).tolist() == [True, False, False]
    assert (a | b).tolist() == [True, True, True]
    assert (a ^ b).tolist() == [False, True, True]
    assert (~a).tolist() == [False, True, False]
    assert (a & True).tolist() == [True, False, True]
    assert (True & a).tolist() == [True, False, True]
    assert (False | a).tolist() == [True, False, True]
    assert (a & b).dtype == ember.bool


def test_integer_bitwise_operators():
    assert (ember.tensor([12]) & 10).tolist() == [8]
    assert (ember.tensor([12]) | 3).tolist() == [15]
    assert (ember.tensor([12]) ^ 10).tolist() == [6]
    assert (~ember.tensor([0, 5])).tolist() == [-1, -6]
    assert (ember.tensor([1]) << 3).tolist() == [8]
    assert (ember.tensor([16]) >> 2).tolist() == [4]
    u = ember.tensor([0b1100], dtype=ember.uint8)
    assert (u & ember.tensor([0b1010], dtype=ember.uint8)).tolist() == [8]
    assert (~u).tolist() == [243]


def test_comparison_operators():
    t = ember.tensor([1.0, 2.0, 3.0])
    assert (t > 2).tolist() == [False, False, True]
    assert (t >= 2).tolist() == [False, True, True]
    assert (t < 2).tolist() == [True, False, False]
    assert (t <= 2).tolist() == [True, True, False]
    assert (t == 2).tolist() == [False, True, False]
    assert (t != 2).tolist() == [True, False, True]
    assert (2 < t).tolist() == [False, False, True]
    assert (2 >= t).tolist() == [True, True, False]
    assert (2 == t).tolist() == [False, True, False]
    assert (t == ember.tensor([1.0, 0.0, 3.0])).tolist() == [True, False, True]
    assert (t > 2).dtype == ember.bool
    assert (t == None) is False  # noqa: E711
    assert (t != None) is True  # noqa: E711


def test_inplace_operators_keep_identity():
    a = ember.ones(2)
    alias = a
    ptr = a.data_ptr()
    a += 1
    a *= 3
    a -= 1
    a /= 2
    a **= 2
    assert a is alias and a.data_ptr() == ptr
    assert a.tolist() == [6.25, 6.25]
    i = ember.tensor([7, 8])
    alias = i
    i //= 2
    i %= 3
    assert i is alias and i.tolist() == [0, 1]
    b = ember.tensor([True, False])
    alias = b
    b &= ember.tensor([True, True])
    b |= ember.tensor([False, True])
    assert b is alias and b.tolist() == [True, True]
    v = ember.zeros(2, 2)
    row = v[0]
    row += 5  # through a view
    assert v.tolist() == [[5.0, 5.0], [0.0, 0.0]]
    t = ember.tensor([1.0, 2.0])
    u = t
    t = t + 1  # not in-place: a new tensor
    assert u.tolist() == [1.0, 2.0] and t is not u


def test_bool_inplace_xor_keeps_identity():
    b = ember.tensor([True, True])
    alias = b
    b ^= ember.tensor([True, False])
    assert b is alias and b.tolist() == [False, True]


def test_integer_inplace_bitwise_operators():
    i = ember.tensor([7, 8])
    alias = i
    i &= 3
    i |= 4
    i ^= 1
    i <<= 1
    i >>= 1
    assert i is alias and i.tolist() == [6, 5]


def test_python_conversions():
    assert bool(ember.tensor([1])) is True
    assert bool(ember.tensor(0.0)) is False
    assert float(ember.tensor([2])) == 2.0
    assert int(ember.tensor(2.9)) == 2
    assert int(ember.tensor(-2.9)) == -2
    assert int(ember.tensor([[5]])) == 5
    assert complex(ember.tensor(1.0)) == 1 + 0j
    assert ember.tensor(3).__index__() == 3
    assert [1, 2, 3, 4][ember.tensor(1)] == 2
    assert range(10)[ember.tensor(2)] == 2
    assert f"{ember.tensor(1.5):.2f}" == "1.50"
    assert f"{ember.tensor(3)}" == "3"
    if ember.tensor([1.0, 2.0]).sum() > 2:
        pass
    else:
        raise AssertionError("0-d tensor truthiness")
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with more than one value is ambiguous"):
        bool(ember.tensor([1, 2]))
    with pytest.raises(TypeError, match="only integer tensors of a single element can be converted to an index"):
        [1, 2][ember.tensor(1.0)]


def test_float_of_multi_element_tensor_raises_value_error():
    with pytest.raises(ValueError, match="only one element tensors can be converted to Python scalars"):
        float(ember.tensor([1.0, 2.0]))
    with pytest.raises(ValueError, match="only one element tensors can be converted to Python scalars"):
        int(ember.tensor([1, 2]))


def test_iteration():
    t = ember.arange(6.0).reshape(2, 3)
    rows = [r.tolist() for r in t]
    assert rows == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    items = list(ember.tensor([1, 2]))
    assert all(isinstance(x, ember.Tensor) and x.dim() == 0 for x in items)
    assert [x.item() for x in items] == [1, 2]
    assert [x.item() for x in reversed(ember.tensor([1, 2, 3]))] == [3, 2, 1]
    a, b = ember.tensor([4.0, 5.0])
    assert (a.item(), b.item()) == (4.0, 5.0)
    for r in t:
        r.zero_()  # rows are views
    assert t.sum().item() == 0
    with pytest.raises(TypeError, match="iteration over a 0-d tensor"):
        iter(ember.tensor(1))


def test_contains_and_hash():
    t = ember.arange(6.0)
    assert 2.0 in t and 9 not in t
    assert hash(t) == hash(t)
    assert len({t, t.clone()}) == 2  # hashed by identity


def test_new_methods():
    t = ember.arange(6.0)
    assert t.new_zeros(2).dtype == ember.float32 and t.new_zeros(2).tolist() == [0.0, 0.0]
    assert t.new_ones((1, 2)).shape == (1, 2)
    assert t.new_tensor([1, 2]).dtype == ember.float32
    assert t.new_full((2,), 3).tolist() == [3.0, 3.0]
    assert t.new_empty(3).shape == (3,)
    assert ember.tensor([1], dtype=ember.int16).new_zeros(2).dtype == ember.int16


def test_size_construction():
    assert ember.zeros(ember.Size([2, 3])).shape == (2, 3)
    assert ember.zeros((2, 3)).shape == (2, 3)
    assert ember.zeros([2, 3]).shape == (2, 3)
    assert ember.zeros(2, 3).shape == (2, 3)
    assert ember.Size([1, 2]) == (1, 2)
    assert ember.Size([2, 3]).numel() == 6


def test_numpy_array_priority():
    # Tensors win over NumPy arrays in mixed arithmetic.
    r = np.float64(2.0) * ember.tensor([1.0])
    assert isinstance(r, ember.Tensor)
